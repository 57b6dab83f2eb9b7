# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_verify run as Ansible runs it (subprocess, args file) on a planted model directory, and
the hub protocol subset model_store uses, against the hub stand-in (tests/simulator/hub_standin/)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import sys
import threading

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import (
    HUB_MODEL as HUB,
    HUB_REPO as REPO,
    HUB_REV as REV,
    ROOT,
    fixture_path,
    fixture_text,
    hub_info,
    run_module,
    stage_planted_model,
)

HUB_ROOT = fixture_path("hub")
WEIGHTS_SHA256 = "a58b64694809aad688cf8bbeb245572832c8514d85ca2e2e56710b193b718a4b"  # model-info.json


@pytest.fixture
def model(tmp_path):
    return stage_planted_model(tmp_path / "model")


def base(model, **extra):
    args = {"path": str(model), "hub_info": hub_info(), "repo_id": REPO, "revision": REV, "host": "gpu-test-01"}
    args.update(extra)
    return args


def test_record_then_nothing_to_do(model, tmp_path):
    rc, res = run_module(tmp_path, "model_verify", base(model, record=True))
    assert rc == 0 and res["changed"] is True and res["verified"] is True
    assert sorted(res["hashed"]) == ["README.md", "config.json", "model.safetensors"]
    with open(str(model / "manifest.json")) as handle:
        written = json.load(handle)
    assert written["revision"] == REV
    assert written["files"]["model.safetensors"]["checksum"] == WEIGHTS_SHA256
    assert written["config"]["num_attention_heads"] == 14  # the model's own config.json recorded
    assert written["verified"]["model.safetensors"]["size"] == 65712
    # second run: nothing hashed, nothing written
    mtime = os.stat(str(model / "manifest.json")).st_mtime_ns
    rc, res = run_module(tmp_path, "model_verify", base(model, record=True))
    assert rc == 0 and res["changed"] is False and res["hashed"] == []
    assert res["summary"]["trusted"] == 3 and res["summary"]["hashed_bytes"] == 0
    assert os.stat(str(model / "manifest.json")).st_mtime_ns == mtime
    # against its own manifest.json, no hub answer needed
    rc, res = run_module(tmp_path, "model_verify", {"path": str(model), "revision": REV})
    assert rc == 0 and res["verified"] is True and res["hashed"] == []


def test_check_mode_reports_what_would_be_fetched_and_writes_nothing(tmp_path):
    missing = tmp_path / "not-staged-yet"
    rc, res = run_module(tmp_path, "model_verify", base(missing, record=True), check_mode=True)
    assert rc == 1 and res["exists"] is False
    assert sorted(item["file"] for item in res["to_fetch"]) == ["README.md", "config.json", "model.safetensors"]
    assert res["fetch_bytes"] == 130 + 569 + 65712  # sizes from model-info.json
    assert not missing.exists()


def test_check_mode_record_writes_nothing(model, tmp_path):
    rc, res = run_module(tmp_path, "model_verify", base(model, record=True), check_mode=True)
    assert rc == 0 and res["changed"] is True
    assert not (model / "manifest.json").exists()


def test_corrupted_copy_fails_with_a_message_naming_host_file_and_values(model, tmp_path):
    with open(str(model / "model.safetensors"), "r+b") as handle:
        handle.seek(100)
        handle.write(b"\x00\x01\x02\x03")
    rc, res = run_module(tmp_path, "model_verify", base(model, record=True))
    assert rc == 1 and res["failed"] is True
    assert "gpu-test-01" in res["msg"] and "model.safetensors" in res["msg"] and WEIGHTS_SHA256 in res["msg"]
    assert "must not be used" in res["msg"]
    assert [f["id"] for f in res["findings"]] == ["model-file-corrupted"]
    assert not (model / "manifest.json").exists()


def test_report_only_does_not_fail(model, tmp_path):
    os.remove(str(model / "README.md"))
    rc, res = run_module(tmp_path, "model_verify", base(model, fail_on_findings=False))
    assert rc == 0 and res["verified"] is False and res["summary"]["fail"] == 1


def test_expected_config_mismatch_is_a_finding(model, tmp_path):
    cfg = json.loads(fixture_text(HUB + "/config.json"))
    cfg["num_key_value_heads"] = 4
    rc, res = run_module(tmp_path, "model_verify", base(model, expected_config=cfg))
    assert rc == 1
    assert [(f["id"], f["severity"]) for f in res["findings"]] == [("model-config-mismatch", "fail")]
    assert "num_key_value_heads" in res["msg"]


@pytest.mark.parametrize("args, text", [
    ({"revision": "main"}, "not a full 40-digit commit hash"),
    ({"chunk_size": 10}, "chunk_size"),
])
def test_bad_input_is_a_clear_error(model, tmp_path, args, text):
    rc, res = run_module(tmp_path, "model_verify", base(model, **args))
    assert rc == 1 and text in res["msg"] and "gpu-test-01" in res["msg"]


def _hub_with(change):
    info = hub_info()
    change(info)
    return info


def _sibling(name, **values):
    def change(info):
        sib = [s for s in info["siblings"] if s["rfilename"] == name][0]
        for key, value in values.items():
            if key == "lfs_size":
                sib["lfs"]["size"] = value
            else:
                sib[key] = value
    return change


# Wrong shapes of the hub's (or a mirror's) answer and of the options: each traced back before
# (ValueError/TypeError from int(), TypeError iterating an int).
@pytest.mark.parametrize("args, text", [
    ({"hub_info": _hub_with(_sibling("config.json", size="big"))},
     "hub_info siblings[1] (config.json): size is 'big', not a size in bytes"),
    ({"hub_info": _hub_with(_sibling("README.md", size=[130]))},
     "hub_info siblings[0] (README.md): size is [130], not a size in bytes"),
    ({"hub_info": _hub_with(_sibling("model.safetensors", lfs_size=None))},
     "hub_info siblings[2] (model.safetensors): lfs.size is None, not a size in bytes"),
    ({"hub_info": _hub_with(_sibling("model.safetensors", lfs_size="65712 bytes"))},
     "hub_info siblings[2] (model.safetensors): lfs.size is '65712 bytes', not a size in bytes"),
    ({"conversions": [{"format": "gguf", "source": "x", "files": 3}]},
     "conversions: files of the conversion to gguf is 3: give a list of {name, size, sha256}"),
    ({"conversions": [{"format": "gguf", "source": "x", "files": True}]},
     "conversions: files of the conversion to gguf is True: give a list"),
    ({"repo_id": ["Qwen", "Qwen2.5-0.5B-Instruct"]},
     "repo_id \"['Qwen', 'Qwen2.5-0.5B-Instruct']\" is not a model repository id such as Qwen/Qwen2.5-7B-Instruct"),
])
def test_wrong_shapes_are_a_clear_error_naming_option_and_value(model, tmp_path, args, text):
    rc, res = run_module(tmp_path, "model_verify", base(model, **args))
    assert rc == 1 and text in res["msg"] and "gpu-test-01" in res["msg"], res["msg"]
    assert not (model / "manifest.json").exists()


@pytest.mark.parametrize("verified, text", [
    (["config.json"], "manifest.json 'verified' is ['config.json'], not a record {file: {size, mtime_ns, checksum}}"),
    ({"config.json": "ok"}, "manifest.json 'verified' is {'config.json': 'ok'}, not a record"),
])
def test_damaged_record_in_manifest_json_is_reported_and_the_hub_answer_repairs_it(model, tmp_path, verified, text):
    rc, res = run_module(tmp_path, "model_verify", base(model, record=True))
    assert rc == 0
    with open(str(model / "manifest.json")) as handle:
        manifest = json.load(handle)
    manifest["verified"] = verified
    os.chmod(str(model / "manifest.json"), 0o644)
    (model / "manifest.json").write_text(json.dumps(manifest))
    rc, res = run_module(tmp_path, "model_verify", {"path": str(model), "host": "h1"})
    assert rc == 1 and text in res["msg"] and "h1" in res["msg"], res["msg"]
    # with the hub's answer the damaged record is not used: every file is hashed again, then recorded
    rc, res = run_module(tmp_path, "model_verify", base(model, record=True))
    assert rc == 0 and res["changed"] is True and sorted(res["hashed"]) == ["README.md", "config.json", "model.safetensors"]


def test_no_manifest_and_no_hub_answer(model, tmp_path):
    rc, res = run_module(tmp_path, "model_verify", {"path": str(model), "host": "h1"})
    assert rc == 1 and "no usable manifest.json" in res["msg"] and "h1" in res["msg"]


def test_unreadable_manifest_json_is_reported_not_a_traceback(model, tmp_path):
    (model / "manifest.json").write_text(u"{not json")
    rc, res = run_module(tmp_path, "model_verify", {"path": str(model), "host": "h1"})
    assert rc == 1 and "not valid JSON" in res["msg"]


# --- the hub protocol subset, against the hub stand-in ---------------------------------------------

@pytest.fixture
def hub(tmp_path):
    sys.path.insert(0, os.path.join(ROOT, "tests", "simulator", "hub_standin"))
    try:
        import hub_standin
    finally:
        sys.path.pop(0)
    log = str(tmp_path / "hub.log")
    server = hub_standin.make_server(HUB_ROOT, port=0, token="hf_test_token", log=log)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield "http://127.0.0.1:%d" % server.server_address[1], log
    server.shutdown()
    server.server_close()


def _get(url, token="hf_test_token"):
    try:
        from urllib.request import Request, urlopen
        from urllib.error import HTTPError
    except ImportError:  # pragma: no cover
        pytest.skip("Python 3 only")
    req = Request(url, headers={"Authorization": "Bearer %s" % token} if token else {})
    try:
        resp = urlopen(req, timeout=10)
        return resp.getcode(), dict(resp.headers), resp.read()
    except HTTPError as exc:
        return exc.code, dict(exc.headers), exc.read()


def test_hub_standin_answers_like_the_hub_and_its_answer_stages_a_verified_copy(hub, tmp_path):
    endpoint, log = hub
    code, _headers, body = _get("%s/api/models/%s/revision/%s?blobs=true" % (endpoint, REPO, REV))
    assert code == 200
    info = json.loads(body.decode())
    assert info["sha"] == REV
    dest = tmp_path / "staged"
    dest.mkdir()
    for sib in info["siblings"]:
        code, headers, data = _get("%s/%s/resolve/%s/%s" % (endpoint, REPO, REV, sib["rfilename"]))
        assert code == 200 and headers["X-Repo-Commit"] == REV
        (dest / sib["rfilename"]).write_bytes(data)
    rc, res = run_module(tmp_path, "model_verify", {"path": str(dest), "hub_info": info, "repo_id": REPO,
                                                    "revision": REV, "record": True})
    assert rc == 0 and res["verified"] is True
    with open(log) as handle:
        entries = [json.loads(line) for line in handle]
    # the LFS file went through the CDN redirect, the token never reached the log
    assert any(e["path"].startswith("/_cdn/") for e in entries)
    assert all(e["auth"] in ("ok", "absent") for e in entries)
    with open(log) as handle:
        assert "hf_test_token" not in handle.read()


def test_hub_standin_without_blobs_gives_names_only_which_the_module_refuses(hub, tmp_path, model):
    endpoint = hub[0]
    code, _headers, body = _get("%s/api/models/%s/revision/%s" % (endpoint, REPO, REV))
    info = json.loads(body.decode())
    assert code == 200 and all(set(s) == {"rfilename"} for s in info["siblings"])
    rc, res = run_module(tmp_path, "model_verify", base(model, hub_info=info))
    assert rc == 1 and "blobs=true" in res["msg"]


def test_hub_standin_refuses_missing_token_and_unknown_revision(hub):
    endpoint = hub[0]
    code, headers, _body = _get("%s/api/models/%s/revision/%s?blobs=true" % (endpoint, REPO, REV), token=None)
    assert code == 401
    code, headers, _body = _get("%s/api/models/%s/revision/%s?blobs=true" % (endpoint, REPO, "f" * 40))
    assert code == 404 and headers["X-Error-Code"] == "RevisionNotFound"
