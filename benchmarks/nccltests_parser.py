# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark (not a test): time to parse and judge each real nccl-tests capture.

The nccl_baseline module's own cost next to the benchmark it runs (seconds to minutes on real
GPUs): parse_nccl_tests + problems + summary per fixture, median of --runs.

    PYTHONPATH=<dir holding ansible_collections/gpu_fleet/vllm_serving> \
        python3 benchmarks/nccltests_parser.py [--runs 200]
"""
from __future__ import absolute_import, division, print_function

import argparse
import glob
import os
import statistics
import time

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccltests

FIXTURES = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "fixtures", "real", "public")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=200)
    opts = parser.parse_args()
    for path in sorted(glob.glob(os.path.join(FIXTURES, "nccltests_*"))):
        with open(path) as handle:
            text = handle.read()
        times = []
        for _run in range(opts.runs):
            start = time.perf_counter()
            result = _nccltests.parse_nccl_tests(text)
            _nccltests.problems(result)
            _nccltests.summary(result)
            times.append(time.perf_counter() - start)
        print("%-55s %6d B %3d rows  median %.3f ms  max %.3f ms"
              % (os.path.basename(path), len(text), len(result["rows"]),
                 statistics.median(times) * 1000, max(times) * 1000))


if __name__ == "__main__":
    main()
