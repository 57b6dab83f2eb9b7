# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The model verifier on a planted model directory, one test per fault.

The planted model is tests/fixtures/hub/Qwen/Qwen2.5-0.5B-Instruct/<rev>/ (config.json of
the Qwen2.5-0.5B-Instruct figures, 64 KiB stand-in safetensors). Its model-info.json, the hub's
answer for that revision, was written by make_hub_fixture.sh with git hash-object and sha256sum;
the checksums and sizes asserted here are copied from that file, not computed by the code under
test.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import io
import json
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _model_manifest as mm
from ansible_collections.gpu_fleet.vllm_serving.plugins.modules.model_verify import scan
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import (
    HUB_MODEL as HUB,
    HUB_REPO as REPO,
    HUB_REV as REV,
    fixture_text,
    hub_info,
    stage_planted_model,
)

# From model-info.json (git hash-object / sha256sum / stat):
WEIGHTS_SHA256 = "a58b64694809aad688cf8bbeb245572832c8514d85ca2e2e56710b193b718a4b"
WEIGHTS_SIZE = 65712
CONFIG_BLOB = "e6f05e364be425f143be5d981ed0eaba37e1d11a"
CONFIG_SIZE = 569
HOST = "gpu-test-01"


@pytest.fixture
def model(tmp_path):
    """A staged copy of the planted model (without model-info.json, which is the hub's answer)."""
    return stage_planted_model(tmp_path / "Qwen2.5-0.5B-Instruct")


def run_verify(path, manifest=None, recorded=None, expected_revision=None):
    manifest = manifest or mm.manifest_from_hub(hub_info(), REPO, REV)
    return mm.verify(manifest, scan(str(path)), lambda n: open(os.path.join(str(path), n), "rb"),
                     host=HOST, recorded=recorded, expected_revision=expected_revision, chunk_size=4096)


def ids(findings):
    return sorted((f["id"], f["file"], f["severity"]) for f in findings)


# --- manifest from the hub's answer ---------------------------------------------------------------

def test_manifest_takes_lfs_sha256_for_weights_and_blob_id_for_small_files():
    man = mm.manifest_from_hub(hub_info(), REPO, REV)
    assert man["revision"] == REV
    assert man["files"]["model.safetensors"] == {
        "size": WEIGHTS_SIZE, "algorithm": "sha256", "checksum": WEIGHTS_SHA256, "provenance": "hub-lfs-sha256"}
    assert man["files"]["config.json"] == {
        "size": CONFIG_SIZE, "algorithm": "git-blob-sha1", "checksum": CONFIG_BLOB, "provenance": "hub-git-blob-id"}
    assert sorted(man["files"]) == ["README.md", "config.json", "model.safetensors"]


def test_manifest_refuses_an_answer_without_file_metadata():
    info = hub_info()
    info["siblings"] = [{"rfilename": s["rfilename"]} for s in info["siblings"]]  # asked without ?blobs=true
    with pytest.raises(mm.ManifestError, match=r"blobs=true"):
        mm.manifest_from_hub(info, REPO, REV)


@pytest.mark.parametrize("name", ["../etc/passwd", "/etc/passwd", "a/../../b", "manifest.json"])
def test_manifest_refuses_file_names_outside_the_directory(name):
    info = hub_info()
    info["siblings"].append({"rfilename": name, "size": 1, "blobId": "0" * 40})
    with pytest.raises(mm.ManifestError, match="outside the model directory"):
        mm.manifest_from_hub(info, REPO, REV)


def test_manifest_excludes_weights_of_another_format():
    info = hub_info()
    info["siblings"].append({"rfilename": "pytorch_model.bin", "size": 10, "blobId": "1" * 40,
                             "lfs": {"sha256": "2" * 64, "size": 10, "pointerSize": 128}})
    man = mm.manifest_from_hub(info, REPO, REV)
    assert "pytorch_model.bin" not in man["files"] and man["excluded"] == ["pytorch_model.bin"]


# --- the git blob id and the streamed sha256 --------------------------------------------------------

def test_git_blob_id_matches_git_hash_object():
    # `printf 'hello\n' | git hash-object --stdin` (a value printed by git, quoted in git's docs)
    assert mm.git_blob_id_stream(io.BytesIO(b"hello\n"), 6) == "ce013625030ba8dba906f756967f9e9ca394464a"
    # empty blob: git's well-known e69de29...
    assert mm.git_blob_id_stream(io.BytesIO(b""), 0) == "e69de29bb2d1d6434b8b29ae775ad8c2e48c5391"


def test_git_blob_id_is_none_when_the_stream_has_another_length():
    assert mm.git_blob_id_stream(io.BytesIO(b"hello\n"), 7) is None


def test_sha256_is_streamed_in_chunks():
    reads = []

    class Counting(io.BytesIO):
        def read(self, size=-1):
            reads.append(size)
            return io.BytesIO.read(self, size)

    data = fixture_text(HUB + "/model.safetensors", "rb")
    assert mm.sha256_stream(Counting(data), 4096) == WEIGHTS_SHA256
    assert set(reads) == {4096} and len(reads) == WEIGHTS_SIZE // 4096 + 2


# --- one test per fault ------------------------------------------------------------------------------

def test_clean_copy_verifies(model):
    findings, report = run_verify(model)
    assert findings == []
    assert sorted(report["hashed"]) == ["README.md", "config.json", "model.safetensors"]
    assert report["to_fetch"] == []


def test_missing_file(model):
    os.remove(str(model / "model.safetensors"))
    findings, report = run_verify(model)
    assert ids(findings) == [("model-file-missing", "model.safetensors", "fail")]
    assert findings[0]["expected"] == "%d bytes" % WEIGHTS_SIZE and findings[0]["actual"] == "missing"
    assert findings[0]["host"] == HOST
    assert report["to_fetch"] == [{"file": "model.safetensors", "size": WEIGHTS_SIZE, "reason": "missing"}]


def test_extra_non_weight_file_warns(model):
    (model / "notes.txt").write_text(u"mine\n")
    findings = run_verify(model)[0]
    assert ids(findings) == [("model-file-extra", "notes.txt", "warn")]


def test_extra_weight_file_of_the_same_format_fails(model):
    (model / "model-00002-of-00002.safetensors").write_bytes(b"\0" * 16)
    findings = run_verify(model)[0]
    assert ids(findings) == [("model-file-extra", "model-00002-of-00002.safetensors", "fail")]


def test_truncated_file_is_caught_by_size_without_hashing(model):
    with open(str(model / "model.safetensors"), "r+b") as handle:
        handle.truncate(WEIGHTS_SIZE - 1000)
    findings, report = run_verify(model)
    assert ids(findings) == [("model-file-truncated", "model.safetensors", "fail")]
    assert findings[0]["expected"] == "65712 bytes" and findings[0]["actual"] == "64712 bytes"
    assert "model.safetensors" not in report["hashed"]


def test_corrupted_weights_same_size(model):
    with open(str(model / "model.safetensors"), "r+b") as handle:
        handle.seek(30000)
        byte = handle.read(1)
        handle.seek(30000)
        handle.write(bytes(bytearray([byte[0] ^ 0xFF])))
    findings, report = run_verify(model)
    assert ids(findings) == [("model-file-corrupted", "model.safetensors", "fail")]
    assert WEIGHTS_SHA256 in findings[0]["expected"] and "hub-lfs-sha256" in findings[0]["expected"]
    assert WEIGHTS_SHA256 not in findings[0]["actual"]
    assert report["to_fetch"][0]["reason"] == "corrupted"


def test_corrupted_small_file_is_caught_by_its_git_blob_id(model):
    text = (model / "config.json").read_text()
    (model / "config.json").write_text(text.replace('"num_attention_heads": 14', '"num_attention_heads": 16'))
    assert os.path.getsize(str(model / "config.json")) == CONFIG_SIZE  # same size: only the hash can tell
    findings = run_verify(model)[0]
    assert ids(findings) == [("model-file-corrupted", "config.json", "fail")]
    assert findings[0]["expected"] == "git-blob-sha1 %s (hub-git-blob-id)" % CONFIG_BLOB


def test_wrong_revision(model):
    other = "0" * 40
    findings = run_verify(model, expected_revision=other)[0]
    assert ids(findings) == [("model-revision-mismatch", None, "fail")]
    assert findings[0]["expected"] == other and findings[0]["actual"] == REV


def test_source_answering_another_revision_and_directory_of_another_revision():
    other = "1" * 40
    findings = mm.revision_findings(REV, other, other, HOST)
    assert [(f["id"], f["file"], f["expected"], f["actual"]) for f in findings] == [
        ("model-revision-mismatch", None, REV, other),
        ("model-revision-mismatch", "manifest.json", REV, other)]


def test_unparseable_config_json():
    cfg, findings = mm.parse_config('{"num_attention_heads": 14,', HOST)
    assert cfg is None and ids(findings) == [("model-config-unparseable", "config.json", "fail")]
    assert "invalid JSON" in findings[0]["actual"]
    cfg, findings = mm.parse_config("[1, 2]", HOST)
    assert cfg is None and "not an object" in findings[0]["actual"]


def test_gguf_in_a_safetensors_model_is_a_format_failure_naming_the_file(model):
    (model / "qwen2.5-0.5b-instruct-q4_k_m.gguf").write_bytes(b"GGUF" + b"\0" * 60)
    findings = run_verify(model)[0]
    assert ids(findings) == [("model-format", "qwen2.5-0.5b-instruct-q4_k_m.gguf", "fail")]
    assert "qwen2.5-0.5b-instruct-q4_k_m.gguf" in findings[0]["actual"]


def test_bin_in_a_safetensors_model_is_a_format_failure(model):
    (model / "pytorch_model.bin").write_bytes(b"\0" * 64)
    findings = run_verify(model)[0]
    assert ids(findings) == [("model-format", "pytorch_model.bin", "fail")]


def test_allowed_conversion_with_its_checksum_list_verifies(model):
    data = b"GGUF" + b"\x01" * 60
    (model / "q4.gguf").write_bytes(data)
    # sha256 of b"GGUF" + 60 x 0x01, from `printf 'GGUF' ; head -c 60 /dev/zero | tr '\0' '\1'` | sha256sum
    sha = "7fbb6f9da47ce492ef85203742d466a46d6be72e77f8c4ee6fd9388c334e270d"
    conv = [{"format": "gguf", "source": "example/q4-build", "files": [{"name": "q4.gguf", "size": 64, "sha256": sha}]}]
    man = mm.manifest_from_hub(hub_info(), REPO, REV, conversions=conv)
    assert man["files"]["q4.gguf"]["provenance"] == "conversion"
    findings = run_verify(model, manifest=man)[0]
    assert findings == []
    # the same file with one byte changed is refused like any other corrupted file
    (model / "q4.gguf").write_bytes(data[:-1] + b"\x02")
    findings = run_verify(model, manifest=man)[0]
    assert ids(findings) == [("model-file-corrupted", "q4.gguf", "fail")]


def test_conversion_without_a_checksum_list_is_refused():
    with pytest.raises(mm.ManifestError, match="checksum list"):
        mm.manifest_from_hub(hub_info(), REPO, REV, conversions=[{"format": "gguf", "source": "x", "files": []}])
    with pytest.raises(mm.ManifestError, match="own checksum list"):
        mm.manifest_from_hub(hub_info(), REPO, REV, conversions=[
            {"format": "gguf", "files": [{"name": "q4.gguf", "size": 64}]}])


# --- idempotence: recorded size + mtime -----------------------------------------------------------------

def test_recorded_files_are_not_hashed_again_until_they_change(model):
    first = run_verify(model)[1]
    findings, second = run_verify(model, recorded=first["verified"])
    assert findings == [] and second["hashed"] == [] and sorted(second["trusted"]) == sorted(first["hashed"])
    # same size, new content, new mtime: hashed again and caught
    path = str(model / "model.safetensors")
    st = os.stat(path)
    with open(path, "r+b") as handle:
        handle.write(b"\xff\xff\xff\xff")
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 10 ** 9))
    findings, third = run_verify(model, recorded=first["verified"])
    assert third["hashed"] == ["model.safetensors"]
    assert ids(findings) == [("model-file-corrupted", "model.safetensors", "fail")]


# --- preflight: controller copy vs the hub's config.json ---------------------------------------------

def test_config_comparison_fails_on_planner_keys_and_warns_on_others():
    hub_cfg = json.loads(fixture_text(HUB + "/config.json"))
    controller = dict(hub_cfg, num_attention_heads=28, use_cache=False)
    findings = mm.compare_configs(controller, hub_cfg, HOST)
    assert [(f["id"], f["severity"], f["expected"], f["actual"]) for f in findings] == [
        ("model-config-mismatch", "fail", "num_attention_heads = 14 (hub/staged copy)",
         "num_attention_heads = 28 (controller copy)"),
        ("model-config-mismatch", "warn", "use_cache = true (hub/staged copy)", "use_cache = false (controller copy)")]
    assert mm.compare_configs(hub_cfg, dict(hub_cfg), HOST) == []


def test_summarize_counts_by_severity():
    assert mm.summarize([{"severity": "fail"}, {"severity": "warn"}, {"severity": "fail"}]) == {
        "fail": 2, "warn": 1, "info": 0}
