# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl_facts and apt_source_audit run as Ansible runs them (subprocess, args file) against trees
planted in tmp_path. The simulated host (molecule scenario cuda_stack) runs both for real."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_path, fixture_text, run_module

KEYS = fixture_path("keys")
NV = "https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/"


def plant_venv(tmp_path, version_bytes, dist=None):
    site = tmp_path / "venv" / "lib" / "python3.12" / "site-packages"
    lib = site / "nvidia" / "nccl" / "lib"
    lib.mkdir(parents=True)
    (lib / "libnccl.so.2").write_bytes(b"\x7fELF\x00" + version_bytes + b"\x00tail")
    if dist:
        (site / dist).mkdir()
    return tmp_path / "venv", lib / "libnccl.so.2"


def test_nccl_facts_torch_bundle_and_env_files(tmp_path):
    venv, bundled = plant_venv(tmp_path, b"NCCL version 2.28.9+cuda12.9", "nvidia_nccl_cu12-2.28.9.dist-info")
    pinned = tmp_path / "libnccl.so.2.14.3"
    pinned.write_bytes(b"NCCL version 2.14.3+cuda11.7")
    link = tmp_path / "libnccl.so.2"
    link.symlink_to(pinned.name)
    envdir = tmp_path / "etc-vllm"
    envdir.mkdir()
    (envdir / "n0-0.env").write_text("CUDA_VISIBLE_DEVICES=0,1\nVLLM_NCCL_SO_PATH=%s\n" % link)
    (envdir / "n1-0.env").write_text("CUDA_VISIBLE_DEVICES=2,3\n")
    (envdir / "n1-1.env").write_text("VLLM_NCCL_SO_PATH=/nonexistent/libnccl.so.2\n")
    (envdir / "api-key.env").write_text("VLLM_API_KEY=sk-secret-in-test\n")  # vllm_server's key file: no instance
    rc, res = run_module(tmp_path, "nccl_facts", {
        "venvs": [str(venv)], "env_files": [str(envdir / "*.env")], "pinned_path": str(link)}, check_mode=True)
    assert rc == 0 and res["changed"] is False
    facts = res["ansible_facts"]["nccl"]
    torch = facts["venvs"][str(venv)]
    assert torch["path"] == str(bundled) and torch["version"] == "2.28.9" and torch["cuda"] == "12.9"
    assert torch["version_source"] == "binary"
    assert facts["pinned_path"] == str(pinned)
    inst = facts["instances"]
    assert sorted(inst) == [str(envdir / n) for n in ("n0-0.env", "n1-0.env", "n1-1.env")]
    assert "sk-secret-in-test" not in json.dumps(res)
    assert inst[str(envdir / "n0-0.env")]["uses_pinned"] is True
    assert inst[str(envdir / "n0-0.env")]["effective"]["version"] == "2.14.3"
    assert inst[str(envdir / "n1-0.env")]["nccl_so_path"] is None
    assert inst[str(envdir / "n1-0.env")]["effective"]["version"] == "2.28.9"
    assert inst[str(envdir / "n1-0.env")]["uses_pinned"] is False
    assert inst[str(envdir / "n1-1.env")]["uses_pinned"] is False
    assert "does not exist" in inst[str(envdir / "n1-1.env")]["effective"]["error"]


def test_nccl_facts_dist_info_when_the_binary_has_no_string(tmp_path):
    venv, dummy = plant_venv(tmp_path, b"stripped", "nvidia_nccl_cu12-2.20.5.dist-info")
    rc, res = run_module(tmp_path, "nccl_facts", {"venvs": [str(venv), str(tmp_path / "none")], "env_files": []},
                         check_mode=True)
    venvs = res["ansible_facts"]["nccl"]["venvs"]
    assert venvs[str(venv)]["version"] == "2.20.5" and venvs[str(venv)]["version_source"] == "dist-info"
    assert venvs[str(tmp_path / "none")] is None


def plant_apt(tmp_path):
    apt = tmp_path / "apt"
    (apt / "sources.list.d").mkdir(parents=True)
    (apt / "sources.list").write_text("deb http://deb.debian.org/debian bullseye main\n")
    (apt / "sources.list.d" / "cuda.sources").write_text(
        "Types: deb\nURIs: %s\nSuites: /\nSigned-By: /etc/apt/keyrings/gpu-fleet-cuda.asc\n" % NV)
    (apt / "sources.list.d" / "cuda-debian11-x86_64.list").write_text("deb %s /\n" % NV)
    return apt


def test_apt_source_audit_key_match_and_foreign_file(tmp_path):
    apt = plant_apt(tmp_path)
    rc, res = run_module(tmp_path, "apt_source_audit", {
        "uri": NV, "owned_file": str(apt / "sources.list.d" / "cuda.sources"),
        "key": os.path.join(KEYS, "rsa3072-with-subkey.gpg"), "apt_dir": str(apt),
        "fingerprints": ["a05c 679b 6ea4 c662 fbee be6a 1c3a 84c9 5a4b db64"]}, check_mode=True)
    assert rc == 0 and res["changed"] is False
    assert res["key_matches"] is True
    assert res["key_armored"] == fixture_text("keys/rsa3072-with-subkey.asc")
    assert res["actions"] == {str(apt / "sources.list.d" / "cuda-debian11-x86_64.list"): "remove_file"}
    assert len(res["entries"]) == 2 and len(res["foreign"]) == 1


def test_apt_source_audit_wrong_key_is_reported_not_accepted(tmp_path):
    apt = plant_apt(tmp_path)
    rc, res = run_module(tmp_path, "apt_source_audit", {
        "uri": NV, "owned_file": str(apt / "sources.list.d" / "cuda.sources"),
        "key": "file://" + os.path.join(KEYS, "gpu-sim-archive.asc"), "apt_dir": str(apt),
        "fingerprints": ["EB693B3035CD5710E231E123A4B469963BF863CC"]}, check_mode=True)
    assert rc == 0 and res["key_matches"] is False
    assert res["key_fingerprints"] == ["EA92493EF191AB79B38906DA40ADE4451D203378"]


def test_apt_source_audit_unusable_key_fails_cleanly(tmp_path):
    apt = plant_apt(tmp_path)
    bad = tmp_path / "bad.asc"
    bad.write_text("<html>404</html>")
    for key in (str(bad), str(tmp_path / "missing.asc"), "relative.asc"):
        rc, res = run_module(tmp_path, "apt_source_audit", {
            "uri": NV, "owned_file": "/x", "key": key, "apt_dir": str(apt)}, check_mode=True)
        assert rc == 1 and res["failed"] is True and key in res["msg"], res


def test_apt_source_audit_asks_apt_whether_it_can_read_the_sources(tmp_path):
    """A second definition with another Signed-By: the module names both entries, and apt itself
    (apt-get indextargets of this machine, Dir::Etc at the planted tree) says it reads no source."""
    apt = plant_apt(tmp_path)
    (apt / "sources.list.d" / "cuda-debian11-x86_64.list").write_text(
        "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] %s /\n" % NV)  # cuda-keyring's
    args = {"uri": NV, "owned_file": str(apt / "sources.list.d" / "cuda.sources"), "apt_dir": str(apt),
            "key": os.path.join(KEYS, "gpu-sim-archive.asc"), "check_apt": True}
    rc, res = run_module(tmp_path, "apt_source_audit", args, check_mode=True)
    assert rc == 0 and res["signed_by_conflict"] is True and res["apt_readable"] is False
    assert res["apt_errors"][-1] == "E: The list of sources could not be read."
    assert res["apt_errors"][0].startswith("E: Conflicting values set for option Signed-By regarding source " + NV)
    assert len(res["apt_errors"]) == 2  # apt prints each twice
    assert sorted(e["file"] for e in res["entries"]) == [
        str(apt / "sources.list.d" / "cuda-debian11-x86_64.list"), str(apt / "sources.list.d" / "cuda.sources")]
    (apt / "sources.list.d" / "cuda-debian11-x86_64.list").unlink()
    rc, res = run_module(tmp_path, "apt_source_audit", args, check_mode=True)
    assert (rc, res["signed_by_conflict"], res["apt_readable"], res["apt_errors"]) == (0, False, True, [])
