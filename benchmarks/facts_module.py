# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark (not a test): gpu_topology_facts' own run time against the raw nvidia-smi calls it makes.

Both are measured in this process, so Ansible's start-up and transport are not counted:

* raw:    the nvidia-smi invocations the module makes (-q -x, topo -m, nvlink -s, -L), LC_ALL=C;
* module: the module's main() through its real entry point (argument parsing, the same three
          calls, parsing, sysfs reads, JSON output).

Target (issue 3): module median <= max(1.2 x raw median, raw median + 150 ms).

    PYTHONPATH=<dir holding ansible_collections/gpu_fleet/vllm_serving> \
        python3 benchmarks/facts_module.py [--runs 20] [--nvidia-smi PATH] [--sysfs-root /sys]
"""
from __future__ import absolute_import, division, print_function

import argparse
import io
import json
import os
import shutil
import statistics
import subprocess
import sys
import time


def _raw_once(smi, commands):
    env = dict(os.environ, LC_ALL="C")
    for key in ("qx", "topo", "nvlink", "list"):
        subprocess.run([smi] + commands[key], env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, check=False)


def _module_once(module_main, basic, args):
    basic._ANSIBLE_ARGS = json.dumps({"ANSIBLE_MODULE_ARGS": args}).encode("utf-8")
    if hasattr(basic, "_ANSIBLE_PROFILE"):  # ansible-core >= 2.19: how the arguments are encoded
        basic._ANSIBLE_PROFILE = "legacy"
    out = io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        module_main()
    except SystemExit:
        pass
    finally:
        sys.stdout = saved
    return json.loads(out.getvalue())


def _stats(values):
    return {"min_ms": round(min(values) * 1000, 1), "median_ms": round(statistics.median(values) * 1000, 1),
            "max_ms": round(max(values) * 1000, 1)}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--nvidia-smi", default=shutil.which("nvidia-smi"))
    parser.add_argument("--sysfs-root", default="/sys")
    opts = parser.parse_args()
    if not opts.nvidia_smi:
        parser.error("nvidia-smi not found on PATH; give --nvidia-smi")

    from ansible.module_utils import basic
    from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import COMMANDS
    from ansible_collections.gpu_fleet.vllm_serving.plugins.modules import gpu_topology_facts

    args = {"nvidia_smi_path": opts.nvidia_smi, "sysfs_root": opts.sysfs_root}
    first = _module_once(gpu_topology_facts.main, basic, args)  # warm-up; also shows the result
    facts = first.get("ansible_facts", {}).get("gpu_topology", {})
    raw, mod = [], []
    for _run in range(opts.runs):
        t0 = time.perf_counter()
        _raw_once(opts.nvidia_smi, COMMANDS)
        raw.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        _module_once(gpu_topology_facts.main, basic, args)
        mod.append(time.perf_counter() - t0)
    raw_med, mod_med = statistics.median(raw), statistics.median(mod)
    limit = max(1.2 * raw_med, raw_med + 0.150)
    report = {
        "runs": opts.runs,
        "nvidia_smi": opts.nvidia_smi,
        "gpus": facts.get("gpu_count"),
        "available": facts.get("available"),
        "driver_version": facts.get("driver_version"),
        "raw_nvidia_smi_calls": _stats(raw),
        "module_in_process": _stats(mod),
        "ratio_module_to_raw": round(mod_med / raw_med, 3) if raw_med else None,
        "overhead_ms": round((mod_med - raw_med) * 1000, 1),
        "target_ms": round(limit * 1000, 1),
        "within_target": mod_med <= limit,
        "python": sys.version.split()[0],
    }
    print(json.dumps(report, indent=2))


if __name__ == "__main__":
    main()
