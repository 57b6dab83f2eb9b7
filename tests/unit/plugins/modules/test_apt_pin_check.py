# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""apt_pin_check run as Ansible runs it, against this machine's real apt-cache: a private apt
state in tmp_path (a flat file: repository with two libnccl2 versions, empty dpkg status) and a
planted /etc/apt tree with a site pin file. The simulated host (molecule scenario cuda_stack)
runs it through the role."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shutil
import subprocess

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module

OLD, NEW = "2.14.3-1+cuda11.7", "2.18.3-1+cuda12.1"
STANZA = "Package: libnccl2\nVersion: %s\nArchitecture: all\nFilename: ./libnccl2_%s_all.deb\nSize: 1\nDescription: stand-in\n"
OURS = "Package: libnccl2\nPin: version %s\nPin-Priority: 1001\n"

pytestmark = pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt (Debian/Ubuntu)")


@pytest.fixture
def apt_state(tmp_path):
    """apt_options for a private state whose only repository offers both builds."""
    repo, q = tmp_path / "repo", tmp_path / "q"
    repo.mkdir()
    for sub in ("lists/partial", "cache/archives/partial", "none"):
        (q / sub).mkdir(parents=True)
    (repo / "Packages").write_text("\n".join(STANZA % (v, v) for v in (NEW, OLD)))
    (q / "sources.list").write_text("deb [trusted=yes] file://%s/ /\n" % repo)
    (q / "status").write_text("")
    options = ["Dir::Etc::SourceList=%s/sources.list" % q, "Dir::Etc::SourceParts=%s/none" % q,
               "Dir::State::Lists=%s/lists" % q, "Dir::Cache=%s/cache" % q, "Dir::State::status=%s/status" % q,
               "APT::Sandbox::User=root", "Debug::NoLocking=1"]
    argv = ["apt-get"] + sum([["-o", o] for o in options], []) + ["-q", "update"]
    subprocess.run(argv, check=True, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"})
    return options


def plant(tmp_path, site=None, ours=None):
    apt = tmp_path / "etc-apt"
    (apt / "preferences.d").mkdir(parents=True)
    if site:
        (apt / "preferences.d" / "00-site-nccl").write_text(site)
    if ours:
        (apt / "preferences.d" / "gpu-fleet-cuda-pins.pref").write_text(ours)
    return apt


def check(tmp_path, apt, options, wanted):
    return run_module(tmp_path, "apt_pin_check", {
        "packages": {"libnccl2": wanted}, "pins_file": str(apt / "preferences.d" / "gpu-fleet-cuda-pins.pref"),
        "pins_content": OURS % wanted, "apt_dir": str(apt), "apt_options": options}, check_mode=True)


def test_site_pin_with_higher_priority_is_named_and_the_host_keeps_its_files(tmp_path, apt_state):
    site = "Package: libnccl2\nPin: version %s\nPin-Priority: 1002\n" % OLD
    apt = plant(tmp_path, site=site, ours=OURS % OLD)
    rc, res = check(tmp_path, apt, apt_state, NEW)
    assert rc == 0 and res["changed"] is False
    result = res["results"][0]
    assert (result["status"], result["candidate"], result["candidate_priority"], result["wanted_priority"]) == \
        ("not_candidate", OLD, 1002, 1001)
    assert [h["file"] for h in result["holders"]] == [str(apt / "preferences.d" / "00-site-nccl")]
    assert res["problems"] == [result]
    assert res["preference_files"] == [str(apt / "preferences.d" / "00-site-nccl")]
    # the private copy held the new pins; the host's own file still holds the old ones
    assert (apt / "preferences.d" / "gpu-fleet-cuda-pins.pref").read_text() == OURS % OLD


def test_our_old_pin_is_replaced_in_the_copy(tmp_path, apt_state):
    """Only our own file pins the old build: with the file we would write, apt takes the new one."""
    apt = plant(tmp_path, ours="Package: libnccl2\nPin: version %s\nPin-Priority: 1002\n" % OLD)
    rc, res = check(tmp_path, apt, apt_state, NEW)
    assert rc == 0 and res["problems"] == []
    assert (res["results"][0]["status"], res["results"][0]["candidate"]) == ("ok", NEW)


def test_missing_build_and_a_pins_file_elsewhere(tmp_path, apt_state):
    apt = plant(tmp_path)
    rc, res = check(tmp_path, apt, apt_state, "2.14.3-1+cuda12.1")
    assert rc == 0 and res["results"][0]["status"] == "missing"
    assert res["results"][0]["repository_versions"] == [NEW, OLD]
    rc, res = run_module(tmp_path, "apt_pin_check", {"packages": {"x": "1"}, "pins_file": "/tmp/x.pref",
                                                     "pins_content": "", "apt_dir": str(apt)}, check_mode=True)
    assert rc == 1 and "is not in %s/preferences.d" % apt in res["msg"]
