# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Raw host state after model_store: converge (mirror directory + hub stand-in), idempotence, a
refused corrupted revision and a --check run (side_effect.yml).

Read with plain tools (readlink, sha256sum, stat, systemctl), not with the collection's code.
Expected values come from tests/fixtures/hub/.../model-info.json (written with git and
sha256sum by make_hub_fixture.sh)."""
import json

REPO = "Qwen/Qwen2.5-0.5B-Instruct"
GOOD = "10cf7f3be1c93173acb0cd9c812df93e9f58955f"
BAD = "bad0bad0bad0bad0bad0bad0bad0bad0bad0bad0"
WEIGHTS_SHA256 = "a58b64694809aad688cf8bbeb245572832c8514d85ca2e2e56710b193b718a4b"
CONFIG_BLOB = "e6f05e364be425f143be5d981ed0eaba37e1d11a"
SIZES = {"README.md": 130, "config.json": 569, "model.safetensors": 65712}
MIRROR_PATH = "/srv/models/Qwen2.5-0.5B-Instruct"
HUB_PATH = "/srv/models/hub/Qwen2.5-0.5B-Instruct"
STORE = "/srv/models/.model_store/Qwen2.5-0.5B-Instruct"
HUB_STORE = "/srv/models/hub/.model_store/Qwen2.5-0.5B-Instruct"


def _run(host, cmd):
    out = host.run(cmd)
    assert out.rc == 0, out.stderr
    return out.stdout.strip()


def test_model_path_links_to_the_verified_copy(host):
    for path, store in ((MIRROR_PATH, STORE), (HUB_PATH, HUB_STORE)):
        assert host.file(path).is_symlink
        assert _run(host, "readlink %s" % path) == "%s/%s" % (store, GOOD)


def test_staged_files_match_the_published_checksums(host):
    for store in (STORE, HUB_STORE):
        copy = "%s/%s" % (store, GOOD)
        assert _run(host, "sha256sum %s/model.safetensors" % copy).split()[0] == WEIGHTS_SHA256
        assert _run(host, "git hash-object %s/config.json 2>/dev/null || "
                          "python3 -c \"import hashlib,sys; d=open(sys.argv[1],'rb').read(); "
                          "print(hashlib.sha1(b'blob %%d\\0' %% len(d) + d).hexdigest())\" %s/config.json"
                    % (copy, copy)) == CONFIG_BLOB
        found = dict(line.split(" ", 1)[::-1] for line in
                     _run(host, "cd %s && find . -type f -printf '%%s %%P\\n'" % copy).splitlines())
        assert sorted(found) == sorted(list(SIZES) + ["manifest.json"])
        assert {name: int(found[name]) for name in SIZES} == SIZES


def test_weights_are_read_only_to_the_service_group(host):
    copy = "%s/%s" % (STORE, GOOD)
    gid = _run(host, "getent group vllm | cut -d: -f3")
    out = _run(host, "cd %s && stat -c '%%n %%U:%%G:%%a' . * " % copy)
    modes = dict(line.split(" ", 1) for line in out.splitlines())
    assert modes == dict([(".", "root:vllm:550")] + [(n, "root:vllm:440") for n in list(SIZES) + ["manifest.json"]])
    as_group = "setpriv --reuid=65534 --regid=%s --clear-groups" % gid
    assert host.run("%s cat %s/model.safetensors >/dev/null" % (as_group, copy)).rc == 0
    assert host.run("%s sh -c 'echo x >> %s/model.safetensors'" % (as_group, copy)).rc != 0
    assert host.run("setpriv --reuid=65534 --regid=65534 --clear-groups cat %s/config.json" % copy).rc != 0


def test_manifest_records_revision_checksum_sources_and_config(host):
    manifest = json.loads(host.file("%s/%s/manifest.json" % (STORE, GOOD)).content_string)
    assert manifest["repo_id"] == REPO and manifest["revision"] == GOOD
    assert manifest["files"]["model.safetensors"]["checksum"] == WEIGHTS_SHA256
    assert manifest["files"]["model.safetensors"]["provenance"] == "hub-lfs-sha256"
    assert manifest["files"]["config.json"]["checksum"] == CONFIG_BLOB
    assert manifest["files"]["config.json"]["provenance"] == "hub-git-blob-id"
    assert manifest["config"]["num_attention_heads"] == 14 and manifest["config"]["num_key_value_heads"] == 2
    assert sorted(manifest["verified"]) == sorted(SIZES)


def test_directory_found_at_the_model_path_was_moved_aside_not_deleted(host):
    aside = _run(host, "ls -d %s/.replaced-*" % STORE).split()
    assert len(aside) == 1
    assert host.file("%s/config.json" % aside[0]).exists


def _jsonl(host, path):
    return [json.loads(line) for line in host.file(path).content_string.splitlines()]


def test_hub_protocol_used_with_token_blob_metadata_and_cdn_redirect(host):
    entries = _jsonl(host, "/var/log/hub-standin.jsonl")
    api = [e for e in entries if e["path"] == "/api/models/%s/revision/%s" % (REPO, GOOD)]
    assert api and all(e["query"] == "blobs=true" and e["auth"] == "ok" and e["status"] == 200 for e in api)
    resolves = [e for e in entries if "/resolve/" in e["path"]]
    assert sorted(e["path"].rsplit("/", 1)[1] for e in resolves) == sorted(SIZES)  # fetched once each
    assert all(e["auth"] == "ok" and "authorization" in e["headers"] for e in resolves)
    assert [e["status"] for e in resolves if e["path"].endswith("model.safetensors")] == [302]
    assert not [e for e in entries if e["path"].startswith("/_cdn/")]  # the redirect went to the CDN host


def test_the_cdn_host_got_the_weights_request_without_the_token(host):
    """The hub (127.0.0.1) redirected the LFS file to the CDN stand-in (127.0.0.2): another host,
    which must never see Authorization - what uri/get_url would have sent it."""
    cdn = _jsonl(host, "/var/log/cdn-standin.jsonl")
    weights = "/_cdn/%s/%s/model.safetensors" % (REPO, GOOD)
    assert [(e["path"], e["status"]) for e in cdn] == [(weights, 200)]
    assert cdn[0]["auth"] == "absent" and "authorization" not in cdn[0]["headers"]
    assert "host" in cdn[0]["headers"]  # the stand-in does record the headers it got
    for log in ("/var/log/hub-standin.jsonl", "/var/log/cdn-standin.jsonl"):
        assert "hf_i10_molecule_token" not in host.file(log).content_string


def test_the_stand_ins_serve_only_https_with_the_test_ca(host):
    for address, port in (("127.0.0.1", 8765), ("127.0.0.2", 8766)):
        plain = "import urllib.request as u; u.urlopen('http://%s:%d/', timeout=5)" % (address, port)
        assert host.run("python3 -c \"%s\"" % plain).rc != 0
        tls = ("import ssl, socket; c = ssl.create_default_context(cafile='/etc/hub-standin/tls/ca.crt'); "
               "s = c.wrap_socket(socket.create_connection(('%s', %d)), server_hostname='%s'); print(s.version())"
               % (address, port, address))
        probe = host.run("python3 -c \"%s\"" % tls)
        assert probe.rc == 0 and probe.stdout.strip().startswith("TLS"), probe.stderr


def test_corrupted_revision_was_refused_and_never_used(host):
    refusal = json.loads(host.file("/root/i10-refusal.json").content_string)
    bad = [(f["id"], f["file"]) for f in refusal["findings"] if f["severity"] == "fail"]
    assert bad == [("model-file-corrupted", "model.safetensors")]
    assert WEIGHTS_SHA256 in refusal["msg"] and "i10-model-store" in refusal["msg"]
    assert not host.file("%s/%s" % (STORE, BAD)).exists
    assert host.file("%s/.staging-%s/model.safetensors" % (STORE, BAD)).exists  # kept for inspection
    assert _run(host, "readlink %s" % MIRROR_PATH) == "%s/%s" % (STORE, GOOD)
    assert _run(host, "sha256sum %s/model.safetensors" % MIRROR_PATH).split()[0] == WEIGHTS_SHA256


def test_running_consumer_was_never_restarted(host):
    before = host.file("/root/i10-consumer-invocation").content_string.strip()
    assert before
    assert _run(host, "systemctl show -p InvocationID --value model-consumer.service") == before
    assert _run(host, "systemctl show -p NRestarts --value model-consumer.service") == "0"
    assert host.service("model-consumer.service").is_running


def test_check_mode_reported_what_would_be_fetched_and_changed_nothing(host):
    report = json.loads(host.file("/root/i10-check.json").content_string)
    assert len(report) == 1 and report[0]["state"] == "would-stage"
    assert sorted(f["file"] for f in report[0]["fetch"]) == sorted(SIZES)
    assert report[0]["fetch_bytes"] == sum(SIZES.values())
    assert not host.file("/srv/models/check").exists
    output = host.file("/root/i10-check-output.txt").content_string
    assert "would fetch 3 file(s), %d bytes" % sum(SIZES.values()) in " ".join(output.split())
