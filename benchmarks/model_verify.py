# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""How long model_verify's checks take: `sha256sum` of a weight shard vs the verifier's
streamed hash (first verification), and the re-verification of a recorded copy (size+mtime
unchanged, nothing hashed). Prints figures; asserts nothing.

  PYTHONPATH=.build/ac python3 benchmarks/model_verify.py [--size-mib 1024] [--runs 3] [--dir /tmp]

The shard is random bytes written to --dir (use a directory on the disk the models live on).
"""

from __future__ import absolute_import, division, print_function

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _model_manifest as mm
from ansible_collections.gpu_fleet.vllm_serving.plugins.modules.model_verify import scan


def timed(func, runs):
    out = []
    for _run in range(runs):
        start = time.perf_counter()
        value = func()
        out.append(time.perf_counter() - start)
    return value, out


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n", maxsplit=1)[0])
    parser.add_argument("--size-mib", type=int, default=1024)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--dir", default=tempfile.gettempdir())
    args = parser.parse_args()
    work = tempfile.mkdtemp(prefix="model-verify-bench.", dir=args.dir)
    shard = os.path.join(work, "model-00001-of-00001.safetensors")
    with open(shard, "wb") as handle:
        for _mib in range(args.size_mib):
            handle.write(os.urandom(1024 * 1024))
    size = os.path.getsize(shard)
    try:
        def coreutils_sha256():
            return subprocess.check_output(["sha256sum", shard]).split()[0].decode()

        expected, raw = timed(coreutils_sha256, args.runs)
        manifest = {"repo_id": "bench/bench", "revision": "0" * 40, "format": "safetensors",
                    "files": {os.path.basename(shard): {"size": size, "algorithm": "sha256", "checksum": expected,
                                                        "provenance": "hub-lfs-sha256"}}}

        def first():
            return mm.verify(manifest, scan(work), lambda n: open(os.path.join(work, n), "rb"))

        (findings, report), hashed = timed(first, args.runs)
        assert findings == [], findings
        (findings, again), trusted = timed(
            lambda: mm.verify(manifest, scan(work), lambda n: open(os.path.join(work, n), "rb"),
                              recorded=report["verified"]), args.runs)
        assert findings == [] and again["hashed"] == []
    finally:
        os.remove(shard)
        os.rmdir(work)
    mib = size / 1048576.0
    print("shard: %d MiB, %d runs, Python %s" % (mib, args.runs, sys.version.split()[0]))
    for label, vals in (("sha256sum (coreutils)", raw), ("model_verify, first verification", hashed),
                        ("model_verify, recorded copy", trusted)):
        med = statistics.median(vals)
        rate = ("%.0f MiB/s" % (mib / med)) if med > 0.001 else "-"
        print("%-34s median %9.3f s (min %.3f, max %.3f)  %s" % (label, med, min(vals), max(vals), rate))


if __name__ == "__main__":
    main()
