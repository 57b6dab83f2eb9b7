# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The GPU-health faults the simulated hosts can plant (tests/simulator/bin/gpu-sim-fault), read
back through the simulated nvidia-smi by the collection's own facts and compliance code, on the
controller (no container). The molecule scenario compliance plants the same faults on a host.

Expected values come from the a100x6_2numa specification (tests/simulator/README.md: GPU 2 is
bus 4B) and the real lines the faults replay (smi_fail_09, smi_handle_20, xid_20, xid_21).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as c
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import build_gpu_topology
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology_gather import (
    read_sysfs,
    run_nvidia_smi,
)

SIM = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "simulator"))
FAULT = os.path.join(SIM, "bin", "gpu-sim-fault")
NVSMI = os.path.join(SIM, "bin", "nvidia-smi")
BUSES = ["00000000:17:00.0", "00000000:31:00.0", "00000000:4B:00.0",
         "00000000:98:00.0", "00000000:B1:00.0", "00000000:CA:00.0"]


@pytest.fixture
def host(tmp_path):
    profile = tmp_path / "profile"
    shutil.copytree(os.path.join(SIM, "profiles", "a100x6_2numa"), str(profile))
    env = dict(os.environ, GPU_SIM_PROFILE=str(profile), GPU_SIM_LOG_DIR=str(tmp_path / "log"),
               GPU_SIM_KERNEL_LOG=str(tmp_path / "kern.log"), GPU_SIM_DEV=str(tmp_path / "dev"))
    (tmp_path / "kern.log").write_text("Dec  3 11:00:00 gpu-sim kernel: Linux version 5.10\n")

    class Host(object):
        kernel_log = tmp_path / "kern.log"

        def fault(self, *argv):
            subprocess.check_call([sys.executable, FAULT] + list(argv), env=env)

        def facts(self):
            def run(argv):
                proc = subprocess.run([sys.executable] + argv, env=env, stdout=subprocess.PIPE,
                                      stderr=subprocess.PIPE, universal_newlines=True, check=False)
                return proc.returncode, proc.stdout, proc.stderr
            results = run_nvidia_smi(run, NVSMI)
            sysfs_root = str(profile / "sysfs")
            from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import pci_bus_ids
            return build_gpu_topology(results, read_sysfs(sysfs_root, pci_bus_ids(results)))
    return Host()


def test_healthy_host_counts_agree(host):
    facts = host.facts()
    assert facts["gpu_count_sources"] == {"qx": 6, "topo": 6, "list": 6, "sysfs": 6}
    assert [f["status"] for f in c.check_gpu_count("sim", facts, 6)] == ["pass"]


@pytest.mark.parametrize("spelling, line", [
    ("plain", "Unable to determine the device handle for GPU 0000:4b:00.0: Unknown Error"),
    ("indexed", "Unable to determine the device handle for GPU2: 0000:4B:00.0: Unknown Error"),
])
def test_dead_gpu_in_either_spelling_keeps_its_index(host, spelling, line):
    host.fault("gpu-dead", "2", spelling)
    facts = host.facts()
    assert [g["pci_bus_id"] for g in facts["gpus"]] == BUSES
    assert [g["healthy"] for g in facts["gpus"]] == [True, True, False, True, True, True]
    assert facts["gpus"][2]["reason"] == line
    assert facts["gpu_count_sources"] == {"qx": 6, "topo": 6, "list": 6, "sysfs": 6}
    fails = [f for f in c.check_gpu_count("sim", facts, 6) if f["status"] == "fail"]
    assert [(f["subject"], f["actual"]) for f in fails] == [("GPU 2", line), ("host", "6 GPU(s), 5 healthy")]


def test_silently_missing_gpu_is_a_count_finding(host):
    host.fault("gpu-missing", "5")
    facts = host.facts()
    assert facts["gpu_count_sources"] == {"qx": 5, "topo": 5, "list": 5, "sysfs": 6}
    fails = [f["actual"] for f in c.check_gpu_count("sim", facts, 6) if f["status"] == "fail"]
    assert fails == ["nvidia-smi -q -x 5, nvidia-smi topo -m 5, nvidia-smi -L 5, "
                     "sysfs (NVIDIA display/3D PCI functions) 6", "5 GPU(s), 5 healthy"]


@pytest.mark.parametrize("kind, expected", [
    ("nvlink5", "Xid 149 (NVLINK_NETIR_ERROR) on GPU 0000:4b:00"),
    ("caused-by", "Xid 45 (ROBUST_CHANNEL_PREEMPTIVE_REMOVAL) on GPU 0000:4b:00"),
])
def test_nvlink_xid_planted_and_cleared(host, kind, expected):
    host.fault("xid", "2", kind)
    events = c.parse_kernel_log(host.kernel_log.read_text())
    found = c.check_kernel_log("sim", events, "file")
    assert [f["status"] for f in found] == ["fail"]
    assert found[0]["actual"].startswith(expected)
    host.fault("clear")
    assert c.parse_kernel_log(host.kernel_log.read_text()) == []
    assert "Linux version" in host.kernel_log.read_text()
