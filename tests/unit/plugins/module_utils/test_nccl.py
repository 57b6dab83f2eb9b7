# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_nccl parsers over the real captures of the H200 hosts (tests/fixtures/real/*/nccl_libs.out,
torch_nccl.out). Expected values were read from the files (cat -A), not produced by the code."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccl
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text


@pytest.mark.parametrize("host", ["h200x2_nvlink", "h200_vm"])
def test_ldconfig_lines_of_the_real_hosts(host):
    # nccl_libs.out = `ldconfig -p | grep -i nccl; find / -name 'libnccl*.so*'` (commands.tsv):
    # the two ldconfig lines come first, the find paths (no "=>") must be ignored.
    entries = _nccl.parse_ldconfig_p(fixture_text("real/" + host + "/nccl_libs.out"))
    assert entries == [
        {"name": "libnccl.so.2", "flags": ["libc6", "x86-64"], "path": "/lib/x86_64-linux-gnu/libnccl.so.2"},
        {"name": "libnccl.so", "flags": ["libc6", "x86-64"], "path": "/lib/x86_64-linux-gnu/libnccl.so"},
    ]
    assert _nccl.pick_library(entries)["path"] == "/lib/x86_64-linux-gnu/libnccl.so.2"


def test_real_soname_target_gives_the_system_version():
    # the find part of the capture shows the file the soname link points at
    paths = [line for line in fixture_text("real/h200x2_nvlink/nccl_libs.out").splitlines() if line.startswith("/")]
    versions = [_nccl.version_from_filename(os.path.basename(p)) for p in paths]
    assert versions == [None, None, "2.28.3", None]


def test_header_line_and_other_abis():
    text = ("3 libs found in cache `/etc/ld.so.cache'\n"
            "\tlibnccl.so.2 (libc6) => /usr/lib/i386-linux-gnu/libnccl.so.2\n"
            "\tlibnccl.so.2 (libc6,x86-64, OS ABI: Linux 3.2.0) => /opt/nccl/current/lib/libnccl.so.2\n"
            "\tlibnccl.so.2 (libc6,x86-64) => /usr/lib/x86_64-linux-gnu/libnccl.so.2\n")
    entries = _nccl.parse_ldconfig_p(text)
    assert len(entries) == 3
    assert entries[1]["flags"] == ["libc6", "x86-64", "OS ABI: Linux 3.2.0"]
    assert _nccl.pick_library(entries)["path"] == "/opt/nccl/current/lib/libnccl.so.2"
    assert _nccl.pick_library(entries, name="libfoo.so.1") is None
    assert _nccl.pick_library([entries[0]])["path"] == "/usr/lib/i386-linux-gnu/libnccl.so.2"


@pytest.mark.parametrize("blob, expected", [
    # the form domain-facts.md quotes from `strings libnccl.so.2` on the real H200
    (b"\x00\x7fELF...\x00NCCL version 2.28.3+cuda13.0\x00...", ("2.28.3", "13.0")),
    (b"junk NCCL version 2.14.3+cuda11.7\n", ("2.14.3", "11.7")),
    (b"NCCL version 2.4.8\x00", ("2.4.8", None)),
    (b"NCCL version %s\x00 no version here", (None, None)),
    (b"", (None, None)),
])
def test_version_from_binary(blob, expected):
    assert _nccl.version_from_binary(blob) == expected


def test_dist_info_version():
    names = ["torch", "nvidia", "nvidia_nccl_cu12-2.28.9.dist-info", "nvidia_cublas_cu12-12.9.1.4.dist-info"]
    assert _nccl.version_from_dist_info(names) == ("2.28.9", "12")
    assert _nccl.version_from_dist_info(["nvidia_nccl_cu12-2.20.5.post1.dist-info"]) == ("2.20.5", "12")
    assert _nccl.version_from_dist_info(["torch-2.4.0.dist-info"]) == (None, None)


def test_library_record_prefers_the_binary_string():
    rec = _nccl.library_record("/lib/x/libnccl.so.2", "/usr/lib/x/libnccl.so.2.28.3", "2.28.3", "13.0")
    assert rec["version"] == "2.28.3" and rec["version_source"] == "binary" and rec["cuda"] == "13.0"
    rec = _nccl.library_record("/lib/x/libnccl.so.2", "/usr/lib/x/libnccl.so.2.28.3", None, None)
    assert rec["version"] == "2.28.3" and rec["version_source"] == "filename"
    rec = _nccl.library_record("/v/nvidia/nccl/lib/libnccl.so.2", "/v/nvidia/nccl/lib/libnccl.so.2", None, None, "2.28.9")
    assert rec["version"] == "2.28.9" and rec["version_source"] == "dist-info"
    rec = _nccl.library_record("/x/libnccl.so.2", "/x/libnccl.so.2", None, None)
    assert rec["version"] is None and rec["version_source"] is None


def _strings_at_offsets(capture_lines):
    """Rebuild a library's byte layout from `grep -a -b -o 'NCCL version ...'` lines: each string at
    its real offset, NUL bytes between (what a .rodata section looks like)."""
    hits = [(int(off), text.encode("ascii")) for off, text in (line.split(":", 1) for line in capture_lines)]
    size = max(off + len(text) for off, text in hits) + 1
    data = bytearray(size)
    for off, text in hits:
        data[off:off + len(text)] = text
    return bytes(data)


@pytest.mark.parametrize("library, expected", [
    ("/usr/lib/x86_64-linux-gnu/libnccl.so.2", ("2.28.3", "13.0")),
    ("/opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2", ("2.28.9", "13.0")),
])
def test_real_h200_libraries_version_strings_in_their_order(library, expected):
    # nccl_strings.out: the real libraries' 'NCCL version' strings with their byte offsets; the system
    # 2.28.3 carries "NCCL version 2.28.3 compiled with CUDA 13.0" BEFORE "NCCL version 2.28.3+cuda13.0"
    lines = fixture_text("real/h200x2_nvlink/nccl_strings.out").splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("== %s " % library))
    block = []
    for line in lines[start + 1:]:
        if line.startswith("==") or not line[:1].isdigit():
            break
        block.append(line)
    assert _nccl.version_from_binary(_strings_at_offsets(block)) == expected


# --- the one reader of a library file (_nccl_gather.read_library: nccl_facts, compliance, the plan) --

def test_read_library_does_not_open_a_fifo(tmp_path):
    import os
    from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nccl_gather import read_library
    fifo = tmp_path / "libnccl.so.2"
    os.mkfifo(str(fifo))
    record = read_library(str(fifo))
    assert (record["version"], record["problem"]) == (None, "is not a regular file")
    assert record["error"] == "%s: is not a regular file" % fifo


def test_read_library_of_a_missing_file_says_so(tmp_path):
    from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nccl_gather import read_library
    record = read_library(str(tmp_path / "libnccl.so.2.14.3"))
    assert record["problem"].startswith("does not exist on the host")
