# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark (not a test): how long nccl_facts takes to find "NCCL version x.y.z+cudaA.B" in a
libnccl.so.2 (it maps the file and searches it; a real libnccl is a few hundred MB).

    PYTHONPATH=<dir holding ansible_collections/gpu_fleet/vllm_serving> \
        python3 benchmarks/nccl_version_scan.py [--runs 5] [PATH ...]

Without PATH it writes a synthetic file (--size-mb, default 300, string at --at, default the end:
the worst case) to a temporary directory and scans that. On a GPU host pass the real libraries,
e.g. /usr/lib/x86_64-linux-gnu/libnccl.so.2 and torch's .../nvidia/nccl/lib/libnccl.so.2.
"""
from __future__ import absolute_import, division, print_function

import argparse
import mmap
import os
import statistics
import tempfile
import time

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccl


def scan(path):
    with open(path, "rb") as handle:
        mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
        try:
            return _nccl.version_from_binary(mapped)
        finally:
            mapped.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("paths", nargs="*")
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--size-mb", type=int, default=300)
    parser.add_argument("--at", choices=["start", "middle", "end"], default="end")
    args = parser.parse_args()
    tmp = None
    paths = args.paths
    if not paths:
        tmp = tempfile.mkdtemp()
        path = os.path.join(tmp, "libnccl.so.2")
        size = args.size_mb * 1024 * 1024
        offset = {"start": 4096, "middle": size // 2, "end": size - 4096}[args.at]
        with open(path, "wb") as handle:
            handle.truncate(size)
            handle.seek(offset)
            handle.write(b"NCCL version 2.28.3+cuda13.0\x00")
        paths = [path]
    for path in paths:
        size = os.path.getsize(os.path.realpath(path))
        times, result = [], None
        for dummy in range(args.runs):
            start = time.perf_counter()
            result = scan(os.path.realpath(path))
            times.append(time.perf_counter() - start)
        print("%s  %.1f MB  %s  median %.1f ms (min %.1f, max %.1f) over %d runs" % (
            path, size / 1048576.0, result, statistics.median(times) * 1000, min(times) * 1000,
            max(times) * 1000, args.runs))
    if tmp:
        os.remove(paths[0])
        os.rmdir(tmp)


if __name__ == "__main__":
    main()
