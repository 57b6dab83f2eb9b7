# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_apt_policy: real `apt-cache policy` output (apt 2.2.4 and 2.6.2, tests/fixtures/apt_policy/)
for planted pins, and the decision the cuda_stack role takes from it. The expected candidates
and priorities are the ones apt printed (read off the fixtures), not computed by the code."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _apt_policy as p
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_path, fixture_text

APTS = ["debian11", "debian12"]
OURS = "/etc/apt/preferences.d/gpu-fleet-cuda-pins.pref"
N117, N110, N183 = "2.14.3-1+cuda11.7", "2.14.3-1+cuda11.0", "2.18.3-1+cuda12.1"
ALL_NCCL = [N183, N117, N110]  # the repository's order (newest first), as madison lists them


def policy(apt, scenario):
    return p.parse_policy(fixture_text("apt_policy/%s/%s.out" % (apt, scenario)))


def stanzas(scenario):
    """The scenario's preference files as the module hands them over: the ones apt reads, the
    role's own file included (check_pins must leave it out itself)."""
    base = fixture_path("apt_policy/scenarios/%s" % scenario)
    out = []
    if os.path.isfile(os.path.join(base, "preferences")):
        out += p.parse_preferences("/etc/apt/preferences", fixture_text("apt_policy/scenarios/%s/preferences" % scenario))
    parts = os.path.join(base, "preferences.d")
    for name in sorted(os.listdir(parts)):
        if p.preferences_file_read(name):
            text = fixture_text("apt_policy/scenarios/%s/preferences.d/%s" % (scenario, name))
            out += p.parse_preferences("/etc/apt/preferences.d/" + name, text)
    return out


def decide(apt, scenario, wanted):
    return dict((r["package"], r) for r in p.check_pins(policy(apt, scenario), wanted, stanzas(scenario), OURS))


def wanted(nccl, toolkit="12.1.1-1"):
    return {"cuda-toolkit-12-1": toolkit, "libnccl2": nccl, "libnccl-dev": nccl}


# --- parsing -------------------------------------------------------------------------------------

@pytest.mark.parametrize("apt", APTS)
def test_parse_installed_held_version_table(apt):
    nccl = policy(apt, "site_holds_old_build")["libnccl2"]
    assert (nccl["installed"], nccl["candidate"]) == (N117, N117)
    assert [(v["version"], v["priority"], v["installed"]) for v in nccl["versions"]] == [
        (N183, 500, False), (N117, 1001, True), (N110, 1001, False)]
    sources = nccl["versions"][1]["sources"]
    assert [(s["priority"], s["repository"]) for s in sources] == [(500, True), (100, False)]
    assert sources[0]["source"] == "file:/tmp/gpu-fleet-apt-policy/repo  Packages"
    assert sources[1]["source"] == "/tmp/gpu-fleet-apt-policy/status-site_holds_old_build"


@pytest.mark.parametrize("apt", APTS)
def test_parse_fresh_host_and_negative_priority(apt):
    fresh = policy(apt, "ours_only")
    assert sorted(fresh) == ["cuda-toolkit-12-1", "libnccl-dev", "libnccl2"]
    assert (fresh["cuda-toolkit-12-1"]["installed"], fresh["cuda-toolkit-12-1"]["candidate"]) == (None, "12.1.1-1")
    blocked = policy(apt, "site_blocks_wanted")["libnccl-dev"]
    assert blocked["versions"][0]["version"] == N183 and blocked["versions"][0]["priority"] == -1


@pytest.mark.parametrize("apt", APTS)
def test_parse_unknown_package_and_one_installed_from_elsewhere(apt):
    parsed = policy(apt, "unknown_and_installed_elsewhere")
    assert list(parsed) == ["libnccl2"]  # apt prints nothing for libnccl3
    assert parsed["libnccl2"]["installed"] == "2.28.3-1+cuda13.0"
    assert p.repository_versions(parsed["libnccl2"]) == ALL_NCCL  # not the dpkg-status-only 2.28.3


def test_parse_nothing():
    assert p.parse_policy("") == {} and p.parse_policy(None) == {}


# apt 2.2.4 and 2.6.2 read (True) or ignored (False) a pin in a file of this name (probed by hand:
# a pin in the file, then apt-cache policy's candidate).
@pytest.mark.parametrize("name, read", [
    ("nodot", True), ("b.pref", True), ("e:f", True), ("00-site-nccl", True), ("gpu-fleet-cuda-pins.pref", True),
    ("a.bak", False), ("c.list", False), ("d.pref.old", False), ("g.PREF", False), (".hidden", False),
    ("h.dpkg-dist", False), ("x~", False), ("sp ace", False), ("00-site-nccl.disabled", False), ("", False),
])
def test_preferences_file_read_as_apt_does(name, read):
    assert p.preferences_file_read(name) is read


def test_parse_preferences_stanzas():
    found = stanzas("site_higher_priority")
    site = [s for s in found if s["file"].endswith("/nccl-hold")]
    assert site == [
        {"file": "/etc/apt/preferences.d/nccl-hold", "line_number": 1, "packages": ["libnccl2"],
         "pin": "version " + N117, "priority": 1002},
        {"file": "/etc/apt/preferences.d/nccl-hold", "line_number": 6, "packages": ["libnccl-dev"],
         "pin": "version 2.14.3*", "priority": 1002}]
    commented = p.parse_preferences("f", fixture_text("apt_policy/scenarios/site_holds_old_build/preferences.d/00-site-nccl"))
    assert commented == [{"file": "f", "line_number": 2, "packages": ["libnccl2", "libnccl-dev"],
                          "pin": "version " + N117, "priority": 1001}]
    assert p.parse_preferences("f", "Package: x\nPin: version 1\nPin-Priority: high\n")[0]["priority"] is None


@pytest.mark.parametrize("packages, name, applies", [
    (["libnccl2"], "libnccl2", True), (["libnccl2"], "libnccl-dev", False), (["libnccl*"], "libnccl-dev", True),
    (["*"], "cuda-toolkit-12-1", True), (["/^libnccl/"], "libnccl2", True), (["/^nccl/"], "libnccl2", False),
    (["src:nccl"], "libnccl2", False), (["libnccl2", "libnccl-dev"], "libnccl-dev", True), (["LIBNCCL2"], "libnccl2", True),
    (["libnccl2"], "libnccl2:amd64", True),
])
def test_stanza_applies(packages, name, applies):
    assert p.stanza_applies({"packages": packages}, name) is applies


@pytest.mark.parametrize("pin, version, matches", [
    ("version " + N117, N117, True), ("version " + N117, N110, False), ("version 2.14.3*", N110, True),
    ("version 2.18*", N117, False), ("version /cuda11\\.0$/", N110, True), ("version 2.14.?-1+cuda11.[07]", N117, True),
    ("release o=gpu-fleet simulator", N117, None), ("origin developer.download.nvidia.com", N117, None),
])
def test_version_pin_matches(pin, version, matches):
    assert p.version_pin_matches({"pin": pin}, version) is matches


# --- the decision --------------------------------------------------------------------------------

@pytest.mark.parametrize("apt", APTS)
def test_only_our_pins_fresh_host(apt):
    got = decide(apt, "ours_only", wanted(N183))
    assert [(r["status"], r["ok"]) for r in got.values()] == [("ok", True)] * 3


@pytest.mark.parametrize("apt", APTS)
def test_site_pin_holds_the_old_build(apt):
    """Issue 16: the site's pin file holds the installed build at 1001; asked for another build of
    the same release, apt keeps the higher version and the install would fail."""
    got = decide(apt, "site_holds_old_build", wanted(N110))
    assert got["cuda-toolkit-12-1"]["status"] == "installed"
    for package in ("libnccl2", "libnccl-dev"):
        r = got[package]
        assert (r["status"], r["ok"], r["candidate"], r["candidate_priority"], r["wanted_priority"]) == \
            ("not_candidate", False, N117, 1001, 1001)
        assert [(h["file"], h["line_number"]) for h in r["holders"]] == [("/etc/apt/preferences.d/00-site-nccl", 2)]
        assert "apt's candidate for %s is %s (priority 1001), not %s" % (package, N117, N110) in r["message"]
        assert "/etc/apt/preferences.d/00-site-nccl:2 (Package: libnccl2 libnccl-dev; Pin: version %s; " \
               "Pin-Priority: 1001)" % N117 in r["message"]


@pytest.mark.parametrize("apt", APTS)
def test_site_pin_with_a_higher_priority(apt):
    got = decide(apt, "site_higher_priority", wanted(N183))
    assert (got["libnccl2"]["candidate"], got["libnccl2"]["candidate_priority"]) == (N117, 1002)
    assert [(h["file"], h["line_number"]) for h in got["libnccl2"]["holders"]] == [("/etc/apt/preferences.d/nccl-hold", 1)]
    assert [(h["file"], h["line_number"]) for h in got["libnccl-dev"]["holders"]] == [("/etc/apt/preferences.d/nccl-hold", 6)]


@pytest.mark.parametrize("apt", APTS)
def test_site_pin_blocks_the_wanted_release(apt):
    got = decide(apt, "site_blocks_wanted", wanted(N183))["libnccl-dev"]
    assert (got["status"], got["candidate"], got["candidate_priority"], got["wanted_priority"]) == \
        ("not_candidate", N117, 500, -1)
    assert [h["file"] for h in got["holders"]] == ["/etc/apt/preferences.d/00-no-nccl-2.18.pref"]


@pytest.mark.parametrize("apt", APTS)
def test_installed_and_pinned_needs_nothing(apt):
    got = decide(apt, "installed_pinned", wanted(N117))
    assert [(r["status"], r["ok"]) for r in got.values()] == [("installed", True)] * 3


@pytest.mark.parametrize("apt", APTS)
def test_files_apt_ignores_are_not_blamed(apt):
    got = decide(apt, "ignored_site_files", wanted(N110))
    assert got["libnccl2"]["status"] == "ok" and got["libnccl2"]["candidate"] == N110  # apt ignored them too
    assert stanzas("ignored_site_files") and all(s["file"] == OURS for s in stanzas("ignored_site_files"))


@pytest.mark.parametrize("apt", APTS)
def test_release_pin_above_1001_beats_version_pins(apt):
    got = decide(apt, "release_pin_in_preferences", wanted(N117))
    toolkit = got["cuda-toolkit-12-1"]
    assert (toolkit["status"], toolkit["candidate"], toolkit["candidate_priority"]) == ("not_candidate", "12.1.0-1", 1100)
    assert [(h["file"], h["pin"]) for h in toolkit["holders"]] == [("/etc/apt/preferences", "release o=gpu-fleet simulator")]
    assert got["libnccl2"]["candidate"] == N183


@pytest.mark.parametrize("apt", APTS)
def test_regex_pin_lowers_the_wanted_build(apt):
    got = decide(apt, "regex_pin", {"libnccl2": N110})["libnccl2"]
    assert (got["candidate"], got["candidate_priority"], got["wanted_priority"]) == (N183, 500, 50)
    assert [h["file"] for h in got["holders"]] == ["/etc/apt/preferences.d/cluster.pref"]


@pytest.mark.parametrize("apt", APTS)
def test_missing_build_and_unknown_package(apt):
    got = decide(apt, "ours_only", {"libnccl2": "2.14.3-1+cuda12.1"})["libnccl2"]
    assert (got["status"], got["ok"], got["repository_versions"]) == ("missing", False, ALL_NCCL)
    assert got["message"] == "libnccl2 2.14.3-1+cuda12.1 is not in the repository; versions there: %s." % ", ".join(ALL_NCCL)
    got = decide(apt, "unknown_and_installed_elsewhere", {"libnccl3": "1.0-1", "libnccl2": N117})
    assert got["libnccl3"]["status"] == "unknown" and got["libnccl3"]["ok"] is False
    assert got["libnccl2"]["status"] == "ok"  # 1001 beats the installed 2.28.3's 100: a downgrade apt allows


def test_not_candidate_without_a_named_holder():
    info = {"x": {"installed": None, "candidate": "2", "versions": [
        {"version": "2", "priority": 500, "installed": False, "sources": [{"priority": 500, "source": "u Packages", "repository": True}]},
        {"version": "1", "priority": 100, "installed": False, "sources": [{"priority": 500, "source": "u Packages", "repository": True}]}]}}
    got = p.check_pins(info, {"x": "1"}, [{"file": OURS, "line_number": 1, "packages": ["x"], "pin": "version 1", "priority": 1001}], OURS)[0]
    assert got["status"] == "not_candidate" and got["holders"] == []
    assert "no other pin file names x (see apt-cache policy x)" in got["message"]


@pytest.mark.parametrize("apt", APTS)
def test_apt_errors_once_each(apt):
    errors = p.apt_errors(fixture_text("apt_policy/%s/indextargets_conflict.err" % apt))
    assert len(errors) == 2 and errors[1] == "E: The list of sources could not be read."
    assert errors[0].startswith("E: Conflicting values set for option Signed-By regarding source file:")
    assert errors[0].endswith("/tmp/gpu-fleet-apt-policy/key.asc != /usr/share/keyrings/cuda-archive-keyring.gpg")
