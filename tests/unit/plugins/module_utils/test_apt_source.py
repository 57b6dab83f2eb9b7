# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_apt_source: OpenPGP fingerprints of keys made by GnuPG (expected fingerprints are the ones gpg
printed, tests/fixtures/keys/README.md) and apt source parsing."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import shutil
import subprocess

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _apt_source as a
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text

RSA = ["EBDC517A67B3CD2A7D021B11276FF65845981B52", "A05C679B6EA4C662FBEEBE6A1C3A84C95A4BDB64"]
SIM = ["EA92493EF191AB79B38906DA40ADE4451D203378"]


def key(name):
    return fixture_text("keys/" + name, "rb")


@pytest.mark.parametrize("name, expected", [
    ("rsa3072-with-subkey.asc", RSA),
    ("rsa3072-with-subkey.gpg", RSA),
    ("gpu-sim-archive.asc", SIM),
])
def test_fingerprints_equal_gpgs(name, expected):
    assert a.fingerprints(key(name)) == expected


def test_armor_reproduces_gpgs_armoured_export():
    text = key("gpu-sim-archive.asc").decode()
    assert a.armor(a.public_packets(text)) == text
    assert a.armor(a.public_packets(key("rsa3072-with-subkey.gpg"))) == key("rsa3072-with-subkey.asc").decode()


@pytest.mark.parametrize("data, message", [
    (b"", "no OpenPGP public key"),
    (b"hello", "not an OpenPGP packet header"),
    (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n", "no complete"),
    (b"-----BEGIN PGP PUBLIC KEY BLOCK-----\n\n!!!!\n-----END PGP PUBLIC KEY BLOCK-----\n", "not valid base64"),
])
def test_bad_key_data_is_refused(data, message):
    with pytest.raises(a.OpenPGPKeyError, match=message):
        a.fingerprints(data)


def test_truncated_key_is_refused():
    with pytest.raises(a.OpenPGPKeyError, match="truncated"):
        a.fingerprints(key("rsa3072-with-subkey.gpg")[:-10])


def test_normalize_fingerprint_and_uri():
    assert a.normalize_fingerprint("eb69 3b30 35cd 5710 e231  e123 a4b4 6996 3bf8 63cc") == \
        "EB693B3035CD5710E231E123A4B469963BF863CC"
    base = "https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/"
    assert a.normalize_uri(base) == a.normalize_uri("http://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64")
    assert a.normalize_uri(base) != a.normalize_uri(base.replace("debian11", "ubuntu2204"))
    assert a.normalize_uri("file:///srv/gpu-sim/cuda-repo/debian11/x86_64/") == "file:///srv/gpu-sim/cuda-repo/debian11/x86_64"


NV = "https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/"


def test_one_line_and_deb822_parsing():
    one = a.parse_one_line("/etc/apt/sources.list", (
        "deb http://deb.debian.org/debian bullseye main\n"
        "# deb %s /\n"
        "deb [arch=amd64 signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] %s /\n" % (NV, NV)))
    assert [e["uris"] for e in one] == [["http://deb.debian.org/debian"], [NV]]
    assert one[1]["signed_by"] == "/usr/share/keyrings/cuda-archive-keyring.gpg" and one[1]["line_number"] == 3
    stanzas = a.parse_deb822("/etc/apt/sources.list.d/x.sources", (
        "# comment\nTypes: deb\nURIs: %s\nSuites: /\nSigned-By: /etc/apt/keyrings/a.asc\n\n"
        "Types: deb deb-src\nURIs: http://deb.debian.org/debian\nSuites: bullseye\nComponents: main\nEnabled: no\n" % NV))
    assert stanzas[0]["uris"] == [NV] and stanzas[0]["signed_by"] == "/etc/apt/keyrings/a.asc"
    assert stanzas[1]["types"] == ["deb", "deb-src"] and stanzas[1]["enabled"] is False


def test_foreign_entries_and_actions():
    owned = "/etc/apt/sources.list.d/cuda.sources"
    entries = (a.parse_deb822(owned, "Types: deb\nURIs: %s\nSuites: /\nSigned-By: /etc/apt/keyrings/gpu-fleet-cuda.asc\n" % NV)
               + a.parse_one_line("/etc/apt/sources.list.d/cuda-debian11-x86_64.list", "deb %s /\n" % NV)
               + a.parse_one_line("/etc/apt/sources.list", "deb http://deb.debian.org/debian bullseye main\n"
                                  "deb %s /\n" % NV.replace("https", "http"))
               + a.parse_deb822("/etc/apt/sources.list.d/mixed.sources",
                                "Types: deb\nURIs: %s\nSuites: /\n\nTypes: deb\nURIs: http://x/\nSuites: y\n" % NV)
               + a.parse_one_line("/etc/apt/sources.list.d/other.list", "deb http://x/ y main\n"))
    foreign, actions = a.foreign_entries(entries, NV, owned)
    assert actions == {
        "/etc/apt/sources.list.d/cuda-debian11-x86_64.list": "remove_file",
        "/etc/apt/sources.list": "remove_lines",
        "/etc/apt/sources.list.d/mixed.sources": "refuse",
    }
    assert len(foreign) == 3 and owned not in [e["file"] for e in foreign]


CUDA = "https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/"
OWNED = "Types: deb\nURIs: %s\nSuites: /\nSigned-By: /etc/apt/keyrings/gpu-fleet-cuda.asc\n" % CUDA


KEYRING_LIST = "deb [signed-by=/usr/share/keyrings/cuda-archive-keyring.gpg] %s /\n" % CUDA  # cuda-keyring's


# (file, text) in apt's reading order -> whether apt refuses to read the sources; the expected
# values were read off apt 2.6.2 (and test_apt_agrees asks this machine's apt again).
SIGNED_BY_CASES = [
    ([("/etc/apt/sources.list.d/cuda-debian11-x86_64.list", KEYRING_LIST), ("/etc/apt/sources.list.d/cuda.sources", OWNED)], True),
    ([("/etc/apt/sources.list.d/cuda.sources", OWNED), ("/etc/apt/sources.list.d/z.list", "deb %s /\n" % CUDA)], True),
    ([("/etc/apt/sources.list", "deb %s /\n" % CUDA), ("/etc/apt/sources.list.d/cuda.sources", OWNED)], False),
    ([("/etc/apt/sources.list", "deb %s /\n" % CUDA), ("/etc/apt/sources.list.d/a.list", KEYRING_LIST),
      ("/etc/apt/sources.list.d/cuda.sources", OWNED)], True),
    ([("/etc/apt/sources.list.d/a.list", "deb [signed-by=/etc/apt/keyrings/gpu-fleet-cuda.asc] %s /\n" % CUDA.rstrip("/")),
      ("/etc/apt/sources.list.d/cuda.sources", OWNED)], False),
    ([("/etc/apt/sources.list.d/a.list", "# " + KEYRING_LIST), ("/etc/apt/sources.list.d/cuda.sources", OWNED)], False),
    ([("/etc/apt/sources.list", "deb [signed-by=/o.gpg] http://deb.debian.org/debian bullseye main\n"),
      ("/etc/apt/sources.list.d/cuda.sources", OWNED)], False),
]


@pytest.mark.parametrize("files, conflict", SIGNED_BY_CASES)
def test_signed_by_conflict_as_apt_decides(files, conflict):
    entries = sum([a.parse_sources(path, text) for path, text in files], [])
    assert a.signed_by_conflict(entries) is conflict


def test_signed_by_conflict_ignores_disabled_stanzas():
    disabled = OWNED.replace("gpu-fleet-cuda.asc", "other.asc") + "Enabled: no\n"
    entries = a.parse_sources("/a.sources", OWNED) + a.parse_sources("/b.sources", disabled)
    assert a.signed_by_conflict(entries) is False


@pytest.mark.skipif(shutil.which("apt-get") is None, reason="needs apt (Debian/Ubuntu)")
@pytest.mark.parametrize("files, conflict", SIGNED_BY_CASES)
def test_apt_agrees(tmp_path, files, conflict):
    """The same files under a private Dir::Etc: apt-get indextargets fails exactly on the conflicts."""
    (tmp_path / "sources.list.d").mkdir()
    (tmp_path / "sources.list").write_text("")
    for path, text in files:
        (tmp_path / path[len("/etc/apt/"):]).write_text(text)
    proc = subprocess.run(["apt-get", "-o", "Dir::Etc=%s" % tmp_path, "indextargets"], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, env={"LC_ALL": "C", "PATH": "/usr/bin:/bin"},
                          check=False)
    assert (proc.returncode != 0) is conflict, proc.stderr
    assert ("Conflicting values set for option Signed-By" in proc.stderr) is conflict
