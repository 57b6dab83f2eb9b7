# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Which NCCL a host (and vLLM on it) really loads: pure parsers, no Ansible, no I/O.

Sources of truth, as found on a real H200 host (tests/fixtures/real/h200x2_nvlink/):
  - ``ldconfig -p``: the dynamic linker's cache, in lookup order, e.g.
    ``\\tlibnccl.so.2 (libc6,x86-64) => /lib/x86_64-linux-gnu/libnccl.so.2``;
  - the library itself: NCCL embeds ``NCCL version 2.28.3+cuda13.0`` (the string its init banner
    prints), and the system package installs ``libnccl.so.2 -> libnccl.so.2.28.3``;
  - torch's bundled copy ``<venv>/lib/python3.X/site-packages/nvidia/nccl/lib/libnccl.so.2``
    (a plain file, from the ``nvidia-nccl-cu12`` wheel, whose dist-info directory names the version);
  - vLLM's ``VLLM_NCCL_SO_PATH`` in the instances' environment files (systemd EnvironmentFile,
    read by ``_instance_env``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

NCCL_SONAME = "libnccl.so.2"

_LDCONFIG_LINE = re.compile(r"^\s+(?P<name>\S+)\s+\((?P<flags>[^)]*)\)\s+=>\s+(?P<path>\S.*?)\s*$")
# The banner strings inside libnccl: "NCCL version 2.28.3+cuda13.0" (older releases: no +cuda part)
# and "NCCL version 2.28.3 compiled with CUDA 13.0", which the real 2.28.3 and 2.28.9 libraries carry
# first (tests/fixtures/real/h200x2_nvlink/nccl_strings.out).
VERSION_STRING = re.compile(br"NCCL version (\d+\.\d+\.\d+)(?:\+cuda(\d+\.\d+)| compiled with CUDA (\d+\.\d+))?")
_FILENAME_VERSION = re.compile(r"^libnccl\.so\.(\d+\.\d+\.\d+)$")
_DIST_INFO = re.compile(r"^nvidia_nccl_cu(\d+)-(\d+\.\d+\.\d+)(?:\.post\d+)?\.dist-info$")


def parse_ldconfig_p(text):
    """Entries of ``ldconfig -p`` in cache order: dicts name, flags (list), path.

    The header line ("N libs found in cache ...") and anything that is not an entry are skipped.
    """
    entries = []
    for line in (text or "").splitlines():
        match = _LDCONFIG_LINE.match(line)
        if not match:
            continue
        flags = [f.strip() for f in match.group("flags").split(",") if f.strip()]
        entries.append({"name": match.group("name"), "flags": flags, "path": match.group("path")})
    return entries


def pick_library(entries, name=NCCL_SONAME, machine="x86_64"):
    """The entry the dynamic linker would use for ``name``: the first of the host's ABI.

    ``ldconfig -p`` lists a library once per ABI (``x86-64``, ``i386`` ...); the first entry whose
    flags name this machine's ABI wins, else the first entry with that name.
    """
    abi = {"x86_64": "x86-64", "aarch64": "AArch64", "ppc64le": "64bit"}.get(machine, machine)
    candidates = [e for e in entries if e["name"] == name]
    for entry in candidates:
        if abi in entry["flags"]:
            return entry
    return candidates[0] if candidates else None


def version_from_filename(filename):
    """``libnccl.so.2.28.3`` -> ``2.28.3``; None when the name carries no full version."""
    match = _FILENAME_VERSION.match(filename or "")
    return match.group(1) if match else None


def version_from_binary(data):
    """(version, cuda) from the ``NCCL version x.y.z[+cudaA.B]`` string in the library's bytes.

    ``data`` is bytes or any buffer ``re`` can search (an mmap). (None, None) when absent.
    """
    match = VERSION_STRING.search(data)
    if not match:
        return None, None
    cuda = match.group(2) or match.group(3)
    return match.group(1).decode("ascii"), cuda.decode("ascii") if cuda else None


def version_from_dist_info(names):
    """The ``nvidia-nccl-cuXX`` wheel's version from site-packages entries, e.g.
    ``nvidia_nccl_cu12-2.28.9.dist-info`` -> ('2.28.9', '12'); (None, None) when there is none."""
    found = []
    for name in names or []:
        match = _DIST_INFO.match(name)
        if match:
            found.append((match.group(2), match.group(1)))
    if not found:
        return None, None
    return sorted(found, key=lambda v: [int(p) for p in v[0].split(".")])[-1]


def library_record(path, realpath, binary_version, binary_cuda, dist_version=None):
    """One library as reported in the facts: the version from its own bytes first, then from the
    file the soname link points at, then from the wheel's dist-info."""
    record = {
        "path": path,
        "realpath": realpath,
        "version": None,
        "cuda": binary_cuda,
        "version_source": None,
    }
    file_version = version_from_filename((realpath or "").rsplit("/", 1)[-1])
    if binary_version:
        record["version"], record["version_source"] = binary_version, "binary"
    elif file_version:
        record["version"], record["version_source"] = file_version, "filename"
    elif dist_version:
        record["version"], record["version_source"] = dist_version, "dist-info"
    return record
