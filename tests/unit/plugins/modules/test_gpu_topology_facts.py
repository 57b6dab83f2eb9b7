# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_topology_facts run through its real entry point, as a subprocess.

``python plugins/modules/gpu_topology_facts.py args.json`` with ``{"ANSIBLE_MODULE_ARGS": ...}``,
against tests/unit/simulated_nvidia_smi.py (replays real captures) and a sysfs tree planted in
tmp_path. Expected values were written by reading the fixture files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
UNIT = os.path.dirname(os.path.dirname(HERE))
REPO = os.path.dirname(os.path.dirname(UNIT))
REAL = os.path.join(REPO, "tests", "fixtures", "real")
MODULE = os.path.join(REPO, "plugins", "modules", "gpu_topology_facts.py")
SIMULATOR = os.path.join(UNIT, "simulated_nvidia_smi.py")
# .build/ac/ansible_collections/gpu_fleet/vllm_serving is a symlink to the repo
COLLECTIONS_ROOT = os.path.join(REPO, ".build", "ac")

H200 = {
    "-q -x": {"file": os.path.join(REAL, "h200_vm", "q_x.out")},
    "topo -m": {"file": os.path.join(REAL, "h200_vm", "topo_m.out")},
    "nvlink -s": {"file": os.path.join(REAL, "h200_vm", "nvlink_s.out")},
}


def write(path, text):
    directory = os.path.dirname(path)
    if not os.path.isdir(directory):
        os.makedirs(directory)
    with open(path, "w") as handle:
        handle.write(text)


def plant_h200_sysfs(root):
    """sysfs of the real H200 VM, from h200_vm/pci_gpus.out and h200_vm/nodes.out."""
    write(os.path.join(root, "bus", "pci", "devices", "0000:00:06.0", "numa_node"), "-1\n")
    write(os.path.join(root, "bus", "pci", "devices", "0000:00:06.0", "local_cpulist"), "0-15\n")
    write(os.path.join(root, "devices", "system", "node", "node0", "cpulist"), "0-15\n")
    write(os.path.join(root, "devices", "system", "node", "online"), "0\n")
    return root


class Host(object):
    """A tmp_path with a simulated nvidia-smi and a planted sysfs."""

    def __init__(self, tmp_path, commands=None, default=None):
        self.root = str(tmp_path)
        self.bin = os.path.join(self.root, "bin")
        self.smi = os.path.join(self.bin, "nvidia-smi")
        self.sysfs = os.path.join(self.root, "sys")
        self.log = os.path.join(self.root, "calls.jsonl")
        self.profile = os.path.join(self.root, "profile.json")
        write(self.profile, json.dumps({"commands": commands or {}, "default": default,
                                        "log": self.log}))
        write(self.smi, '#!/bin/sh\nexec "%s" "%s" "$@"\n' % (sys.executable, SIMULATOR))
        os.chmod(self.smi, 0o755)
        os.makedirs(self.sysfs)

    def calls(self):
        if not os.path.exists(self.log):
            return []
        with open(self.log, "r") as handle:
            return [json.loads(line) for line in handle if line.strip()]

    def run(self, args, path=None, check_mode=False):
        module_args = dict(args)
        if check_mode:
            module_args["_ansible_check_mode"] = True
        args_file = os.path.join(self.root, "args.json")
        write(args_file, json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([COLLECTIONS_ROOT] + [p for p in sys.path if p])
        env["SIMULATED_NVIDIA_SMI_PROFILE"] = self.profile
        env["PATH"] = path if path is not None else os.path.join(self.root, "empty-path")
        env.pop("LC_ALL", None)
        proc = subprocess.run([sys.executable, MODULE, args_file], env=env, cwd=self.root,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=120, check=False)
        assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
        return proc, json.loads(proc.stdout)


def test_h200_vm(tmp_path):
    host = Host(tmp_path, H200)
    plant_h200_sysfs(host.sysfs)
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    assert proc.returncode == 0, result
    assert result["changed"] is False
    assert list(result["ansible_facts"]) == ["gpu_topology"]
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["available"] is True and facts["reason"] is None
    assert facts["gpu_count"] == 1
    assert facts["driver_version"] == "580.159.04"
    assert facts["cuda_driver_version"] == "13.0"
    gpu = facts["gpus"][0]
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["memory_total_mib"] == 143771
    assert gpu["numa_node"] == 0
    assert gpu["sysfs_numa_node"] == -1
    assert gpu["cpu_affinity"] == list(range(16))
    assert gpu["cpu_affinity_source"] == "sysfs"
    assert facts["numa_nodes"] == [{"id": 0, "cpus": list(range(16)), "gpus": [0]}]
    assert facts["warnings"] == []
    calls = host.calls()
    assert [call["argv"] for call in calls] == [["-q", "-x"], ["topo", "-m"], ["nvlink", "-s"], ["-L"]]
    assert all(call["lc_all"] == "C" for call in calls)


def test_nvidia_smi_found_on_path_and_check_mode(tmp_path):
    host = Host(tmp_path, H200)
    plant_h200_sysfs(host.sysfs)
    proc, result = host.run({"sysfs_root": host.sysfs}, path=host.bin, check_mode=True)
    assert proc.returncode == 0, result
    assert result["changed"] is False
    assert result["ansible_facts"]["gpu_topology"]["gpus"][0]["name"] == "NVIDIA H200"
    assert len(host.calls()) == 4  # -q -x, topo -m, nvlink -s, -L


def test_sysfs_cpulist_differs_from_topo_and_sysfs_numa_wins(tmp_path):
    host = Host(tmp_path, H200)
    write(os.path.join(host.sysfs, "bus", "pci", "devices", "0000:00:06.0", "numa_node"), "1\n")
    write(os.path.join(host.sysfs, "bus", "pci", "devices", "0000:00:06.0", "local_cpulist"),
          "8-15\n")
    write(os.path.join(host.sysfs, "devices", "system", "node", "node0", "cpulist"), "0-7\n")
    write(os.path.join(host.sysfs, "devices", "system", "node", "node1", "cpulist"), "8-15\n")
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["gpus"][0]["numa_node"] == 1
    assert facts["gpus"][0]["cpu_affinity"] == list(range(8, 16))
    assert facts["numa_nodes"] == [{"id": 0, "cpus": list(range(8)), "gpus": []},
                                   {"id": 1, "cpus": list(range(8, 16)), "gpus": [0]}]
    assert facts["warnings"] == [
        "GPU 0 (00000000:00:06.0): sysfs numa_node is 1 but nvidia-smi topo -m NUMA Affinity "
        "is 0; using sysfs"]


def test_nvidia_smi_absent_from_path(tmp_path):
    host = Host(tmp_path, H200)
    proc, result = host.run({"sysfs_root": host.sysfs})
    assert proc.returncode == 0, result
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["available"] is False
    assert facts["reason"].startswith("nvidia-smi not found on PATH")
    assert facts["gpus"] == [] and facts["gpu_count"] == 0
    assert host.calls() == []


def test_nvidia_smi_path_that_does_not_exist(tmp_path):
    host = Host(tmp_path, H200)
    missing = os.path.join(host.root, "nope", "nvidia-smi")
    proc, result = host.run({"nvidia_smi_path": missing})
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["available"] is False
    assert facts["reason"] == "nvidia-smi not found at %s (nvidia_smi_path)" % missing


@pytest.mark.parametrize("fixture, rc, quoted", [
    ("smi_fail_04_nvml_mismatch_with_nvml_library_version_line.txt", 18,
     "Failed to initialize NVML: Driver/library version mismatch; NVML library version: 535.161"),
    ("smi_fail_06_couldnt_communicate_with_driver.txt", 9,
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
     "that the latest NVIDIA driver is installed and running."),
    ("smi_fail_07_no_devices_were_found.txt", 6, "No devices were found"),
])
def test_host_failure_is_unavailable_after_one_call(tmp_path, fixture, rc, quoted):
    host = Host(tmp_path, default={"file": os.path.join(REAL, "public", fixture), "rc": rc})
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    assert proc.returncode == 0, result
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["available"] is False
    assert facts["reason"] == "nvidia-smi -q -x failed (rc %d): %s" % (rc, quoted)
    assert len(host.calls()) == 1


def test_handle_error_on_stderr_keeps_the_other_gpus(tmp_path):
    handle_error = os.path.join(REAL, "public",
                                "smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt")
    commands = {
        "-q -x": {"file": os.path.join(
            REAL, "public",
            "qx_03_v100s_8gpu_vm_full_xml_v11_accounting_zero_ecc_empty_pagelist.txt")},
        "topo -m": {"file": os.path.join(REAL, "public",
                                         "topo_02_a6000_8gpu_nvlink_bridge_pairs.txt")},
        "nvlink -s": {"file": handle_error, "stream": "stderr", "rc": 255},
    }
    host = Host(tmp_path, commands)
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    assert proc.returncode == 0, result
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["available"] is True
    assert facts["gpu_count"] == 9
    assert [gpu["healthy"] for gpu in facts["gpus"]] == [True] * 8 + [False]
    assert facts["gpus"][8]["reason"] == (
        "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error")


def test_unparseable_output_fails_naming_the_line(tmp_path):
    commands = dict(H200)
    commands["topo -m"] = {"file": os.path.join(
        REAL, "public", "smi_fail_02_a40_8gpu_gpu4_err_gsp_timeout.txt")}
    host = Host(tmp_path, commands)
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    assert proc.returncode != 0
    assert result["failed"] is True
    assert "nvidia-smi topo -m" in result["msg"]
    assert "line 1: 'Mon Feb 27 16:08:33 2023       '" in result["msg"]
    assert result["rc"] == 0
    assert result["stdout"].startswith("Mon Feb 27 16:08:33 2023")


def test_truncated_topo_is_unavailable(tmp_path):
    cut = os.path.join(str(tmp_path), "topo_cut.txt")
    with open(os.path.join(REAL, "public", "topo_01_a100_sxm4_8nic_no_gpunumaid.txt")) as handle:
        write(cut, handle.read()[:700])
    commands = dict(H200)
    commands["topo -m"] = {"file": cut}
    host = Host(tmp_path, commands)
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    assert proc.returncode == 0, result
    facts = result["ansible_facts"]["gpu_topology"]
    assert facts["available"] is False
    assert facts["reason"].startswith("nvidia-smi topo -m:")


def _documentation():
    import ast
    with open(MODULE) as handle:
        tree = ast.parse(handle.read())
    docs = {}
    for node in tree.body:
        if isinstance(node, ast.Assign) and isinstance(node.value, ast.Constant):
            docs[node.targets[0].id] = node.value.value
    return docs


def test_documentation_is_yaml_and_documents_every_fact_key(tmp_path):
    docs = _documentation()
    doc = yaml.safe_load(docs["DOCUMENTATION"])
    for key in ("short_description", "description", "options", "author", "notes"):
        assert doc[key], key
    assert doc["author"] == ["gpu_fleet maintainers (@gpu-fleet)"]
    assert set(doc["options"]) == {"nvidia_smi_path", "sysfs_root"}
    yaml.safe_load(docs["EXAMPLES"])
    returned = yaml.safe_load(docs["RETURN"])
    documented = returned["ansible_facts"]["contains"]["gpu_topology"]["contains"]

    host = Host(tmp_path, H200)
    plant_h200_sysfs(host.sysfs)
    _proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    facts = result["ansible_facts"]["gpu_topology"]
    assert set(documented) == set(facts)
    assert set(documented["gpus"]["contains"]) == set(facts["gpus"][0])
    for name, entry in documented.items():
        assert entry.get("type") and entry.get("description"), name
    for name, entry in documented["gpus"]["contains"].items():
        assert entry.get("type") and entry.get("description"), name
    for name in ("ecc", "pcie"):
        nested = documented["gpus"]["contains"][name]["contains"]
        assert set(nested) == set(facts["gpus"][0][name]), name
        for key, entry in nested.items():
            assert entry.get("type") and entry.get("description"), (name, key)
            assert "sample" in entry, (name, key)


def test_documentation_of_mig_devices_matches_a_mig_host(tmp_path):
    documented = yaml.safe_load(_documentation()["RETURN"])[
        "ansible_facts"]["contains"]["gpu_topology"]["contains"]["gpus"]["contains"]
    mig = documented["mig_devices"]
    assert mig["type"] == "list" and mig["elements"] == "dict"
    commands = {
        "-q -x": {"file": os.path.join(
            REAL, "public",
            "qx_02_a100_sxm4_4gpu_host_mig4_xml_one_gpu_block_remapped_rows_na.txt")},
        "topo -m": {"file": os.path.join(REAL, "public",
                                         "topo_03_a30_4gpu_nv4_pairs_cross_socket.txt")},
        "nvlink -s": {"file": os.path.join(REAL, "h200_vm", "nvlink_s.out")},
    }
    host = Host(tmp_path, commands)
    proc, result = host.run({"nvidia_smi_path": host.smi, "sysfs_root": host.sysfs})
    assert proc.returncode == 0, result
    gpu = result["ansible_facts"]["gpu_topology"]["gpus"][1]  # minor_number 1 in qx_02
    # qx_02: four <mig_device>, gpu_instance_id 3..6, 19968 MiB each
    assert gpu["mig_mode"] == "Enabled"
    assert len(gpu["mig_devices"]) == gpu["mig_device_count"] == 4
    assert [device["gpu_instance_id"] for device in gpu["mig_devices"]] == [3, 4, 5, 6]
    assert gpu["mig_devices"][3]["memory_total_mib"] == 19968
    assert set(mig["contains"]) == set(gpu["mig_devices"][0])
    assert set(mig["sample"][0]) == set(gpu["mig_devices"][0])
    for key, entry in mig["contains"].items():
        assert entry.get("type") and entry.get("description") and "sample" in entry, key
    assert gpu["ecc"]["remapped_rows_pending"] is None  # <remapped_rows>N/A</remapped_rows>
    assert gpu["ecc"]["aggregate_uncorrected"] == 0
