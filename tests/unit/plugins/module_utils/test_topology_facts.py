# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""build_gpu_topology: merging -q -x, topo -m, nvlink -s and sysfs into the gpu_topology facts.

Expected values were written by reading the fixture files, never by running the code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ast
import glob
import os
import re

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import TopologyParseError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import (
    build_gpu_topology,
    pci_bus_ids,
)

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "..", "..", "..", "fixtures", "real")
REPO = os.path.join(HERE, "..", "..", "..", "..")
QX_02 = "public/qx_02_a100_sxm4_4gpu_host_mig4_xml_one_gpu_block_remapped_rows_na.txt"
QX_03 = "public/qx_03_v100s_8gpu_vm_full_xml_v11_accounting_zero_ecc_empty_pagelist.txt"
NVLINK_ERR = "public/nvlink_err_01_v100_sxm2_ndv2_7gpu_blocks_6_inactive_links_no_eol.txt"
TOPO_02 = "public/topo_02_a6000_8gpu_nvlink_bridge_pairs.txt"
TOPO_05 = "public/topo_05_dgx1_v100_hybrid_cube_mesh_tabs.txt"
HANDLE_ERROR = "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error"

CONTRACT_KEYS = {"available", "reason", "driver_version", "cuda_driver_version", "gpu_count",
                 "gpus", "links", "link_class", "nvlink_islands", "numa_nodes", "nics",
                 "gpu_count_sources", "warnings"}
GPU_CONTRACT_KEYS = {"index", "name", "uuid", "pci_bus_id", "memory_total_mib", "numa_node",
                     "cpu_affinity", "healthy", "reason", "mig_mode", "nvlinks"}


def read(name):
    with open(os.path.join(REAL, name), "r") as handle:
        return handle.read()


def h200_sysfs():
    # from h200_vm/pci_gpus.out and h200_vm/nodes.out
    return {"pci": {"0000:00:06.0": {"numa_node": "-1\n", "local_cpulist": "0-15\n"}},
            "nodes": {0: "0-15\n"}}


def test_h200_vm_full():
    facts = build_gpu_topology({"qx": read("h200_vm/q_x.out"), "topo": read("h200_vm/topo_m.out"),
                                "nvlink": read("h200_vm/nvlink_s.out")}, h200_sysfs())
    assert set(facts) == CONTRACT_KEYS
    assert facts["available"] is True and facts["reason"] is None
    assert facts["driver_version"] == "580.159.04"
    assert facts["cuda_driver_version"] == "13.0"
    assert facts["gpu_count"] == 1
    gpu = facts["gpus"][0]
    assert GPU_CONTRACT_KEYS <= set(gpu)
    assert gpu["index"] == 0
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["pci_bus_id"] == "00000000:00:06.0"
    assert gpu["memory_total_mib"] == 143771
    assert gpu["numa_node"] == 0                 # sysfs says -1, topo -m NUMA Affinity says 0
    assert gpu["numa_node_source"] == "topo"
    assert gpu["sysfs_numa_node"] == -1
    assert gpu["cpu_affinity"] == list(range(16))
    assert gpu["cpu_affinity_source"] == "sysfs"
    assert gpu["healthy"] is True and gpu["mig_mode"] == "Disabled" and gpu["nvlinks"] == []
    assert facts["links"] == [["X"]] and facts["link_class"] == [["self"]]
    assert facts["nvlink_islands"] == [[0]]
    assert facts["numa_nodes"] == [{"id": 0, "cpus": list(range(16)), "gpus": [0]}]
    assert facts["nics"] == [] and facts["warnings"] == []
    assert pci_bus_ids({"qx": read("h200_vm/q_x.out")}) == ["00000000:00:06.0"]


TOPO_FILES = sorted(glob.glob(os.path.join(REAL, "public", "topo_*.txt"))) + [
    os.path.join(REAL, "h200_vm", "topo_m.out")]


@pytest.mark.parametrize("path", TOPO_FILES, ids=[os.path.basename(p) for p in TOPO_FILES])
def test_topo_text_alone_gives_complete_facts(path):
    """The layout planner builds facts from topo -m text alone."""
    with open(path, "r") as handle:
        text = handle.read()
    facts = build_gpu_topology({"topo": text})
    assert set(facts) == CONTRACT_KEYS
    assert facts["available"] is True
    count = facts["gpu_count"]
    header = [line for line in text.split("\n") if "CPU Affinity" in line][0]
    assert count == len(re.findall(r"GPU\d+", header))
    assert len(facts["links"]) == count and all(len(row) == count for row in facts["links"])
    assert all(facts["links"][i][i] == "X" for i in range(count))
    assert sorted(sum(facts["nvlink_islands"], [])) == list(range(count))
    for gpu in facts["gpus"]:
        assert GPU_CONTRACT_KEYS <= set(gpu)
        assert gpu["name"] is None and gpu["healthy"] is True
    placed = sorted(sum((node["gpus"] for node in facts["numa_nodes"]), []))
    assert placed == [gpu["index"] for gpu in facts["gpus"] if gpu["numa_node"] is not None]


def test_topo_10_numa_nodes_derived_from_gpu_affinity_without_sysfs():
    facts = build_gpu_topology({"topo": read("public/topo_10_5gpu_pcie_gpu0_alone_on_numa1.txt")})
    assert facts["numa_nodes"] == [
        {"id": 0, "cpus": list(range(0, 8)) + list(range(16, 24)), "gpus": [1, 2, 3, 4]},
        {"id": 1, "cpus": list(range(8, 16)) + list(range(24, 32)), "gpus": [0]},
    ]


def test_nvlink_lists_7_of_8_gpus_and_inactive_links_warn():
    facts = build_gpu_topology({"topo": read(TOPO_05), "nvlink": read(NVLINK_ERR)})
    assert facts["available"] is True
    assert facts["gpu_count"] == 8
    assert facts["gpus"][7]["nvlinks"] == []
    assert len(facts["gpus"][3]["nvlinks"]) == 6
    assert "nvidia-smi nvlink -s lists 7 of 8 GPUs; no NVLink data for GPU 7" in facts["warnings"]
    assert "GPU 3: 2 of 6 NVLinks inactive (link 3, 5)" in facts["warnings"]
    assert "GPU 5: 2 of 6 NVLinks inactive (link 0, 4)" in facts["warnings"]
    assert len([w for w in facts["warnings"] if "NVLinks inactive" in w]) == 4


def test_qx_and_topo_matched_by_index_and_sysfs_wins_over_topo_with_warning():
    # eight GPUs in both (different machines: this exercises matching, not a real host)
    sysfs = {"pci": {"0000:00:0d.0": {"numa_node": "1\n", "local_cpulist": "64-127\n"},
                     "0000:00:0e.0": {"numa_node": "0\n", "local_cpulist": "0-63\n"}},
             "nodes": {0: "0-63\n", 1: "64-127\n"}}
    facts = build_gpu_topology({"qx": read(QX_03), "topo": read(TOPO_02)}, sysfs)
    assert facts["gpu_count"] == 8
    gpu0, gpu1, gpu2 = facts["gpus"][0], facts["gpus"][1], facts["gpus"][2]
    assert gpu0["pci_bus_id"] == "00000000:00:0D.0" and gpu0["name"] == "Tesla V100S-PCIE-32GB"
    assert gpu0["numa_node"] == 1 and gpu0["numa_node_source"] == "sysfs"   # topo says 0
    assert gpu0["cpu_affinity"] == list(range(64, 128))
    assert any("GPU 0 (00000000:00:0D.0): sysfs numa_node is 1 but nvidia-smi topo -m NUMA "
               "Affinity is 0; using sysfs" == w for w in facts["warnings"])
    assert gpu1["numa_node"] == 0 and gpu1["numa_node_source"] == "sysfs"
    assert gpu2["numa_node"] == 0 and gpu2["numa_node_source"] == "topo"
    assert any("sysfs has no PCI device 0000:00:0f.0" in w for w in facts["warnings"])
    assert facts["links"][0][1] == "NV4"
    assert facts["numa_nodes"][0]["id"] == 0 and 0 not in facts["numa_nodes"][0]["gpus"]
    assert 0 in facts["numa_nodes"][1]["gpus"]


def test_handle_error_marks_one_gpu_unhealthy_and_keeps_the_others():
    results = {"qx": {"rc": 255, "stdout": read(QX_03), "stderr": HANDLE_ERROR + "\n"},
               "topo": read(TOPO_02)}
    facts = build_gpu_topology(results)
    assert facts["available"] is True
    assert facts["gpu_count"] == 9
    failed = facts["gpus"][8]   # 00:09:00.0 sorts after 00:00:14.0
    assert failed["pci_bus_id"] == "00000000:09:00.0"
    assert failed["healthy"] is False and failed["reason"] == HANDLE_ERROR
    assert facts["links"][8] == [None] * 8 + ["X"]
    assert facts["nvlink_islands"][-1] == [8]
    assert all(gpu["healthy"] for gpu in facts["gpus"][:8])
    assert facts["links"][0][1] == "NV4"
    assert "00000000:09:00.0" in pci_bus_ids(results)


def test_only_gpu_without_handle_is_unavailable_but_listed():
    text = read("public/smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt")
    facts = build_gpu_topology({"qx": {"rc": 255, "stdout": text, "stderr": ""},
                                "topo": {"rc": 255, "stdout": text, "stderr": ""}})
    assert facts["available"] is False
    assert HANDLE_ERROR in facts["reason"]
    assert facts["gpu_count"] == 1
    assert facts["gpus"][0]["healthy"] is False
    assert facts["gpus"][0]["pci_bus_id"] == "00000000:09:00.0"


def test_partial_qx_matched_by_minor_number():
    # qx_02 has attached_gpus 4 and one <gpu> block with minor_number 1; topo_03 has 4 GPUs
    facts = build_gpu_topology({"qx": read(QX_02),
                                "topo": read("public/topo_03_a30_4gpu_nv4_pairs_cross_socket.txt")})
    assert facts["gpu_count"] == 4
    assert facts["gpus"][1]["name"] == "NVIDIA A100-SXM4-80GB"
    assert facts["gpus"][1]["mig_mode"] == "Enabled"
    assert facts["gpus"][0]["name"] is None
    assert "nvidia-smi -q -x: attached_gpus is 4 but the output has 1 <gpu> block(s)" in facts["warnings"]
    assert any("matched by minor_number" in w for w in facts["warnings"])


@pytest.mark.parametrize("name, rc, quoted", [
    ("public/smi_fail_04_nvml_mismatch_with_nvml_library_version_line.txt", 18,
     "Failed to initialize NVML: Driver/library version mismatch"),
    ("public/smi_fail_06_couldnt_communicate_with_driver.txt", 9,
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver."),
    ("public/smi_fail_07_no_devices_were_found.txt", 6, "No devices were found"),
])
def test_host_failures_are_unavailable_with_the_tools_words(name, rc, quoted):
    result = {"rc": rc, "stdout": read(name), "stderr": ""}
    facts = build_gpu_topology({"qx": result, "topo": result, "nvlink": result})
    assert set(facts) == CONTRACT_KEYS
    assert facts["available"] is False
    assert quoted in facts["reason"]
    assert "rc %d" % rc in facts["reason"]
    assert facts["gpu_count"] == 0 and facts["gpus"] == [] and facts["links"] == []


def test_host_failure_on_stderr_is_found_too():
    result = {"rc": 18, "stdout": "", "stderr": read(
        "public/smi_fail_04_nvml_mismatch_with_nvml_library_version_line.txt")}
    facts = build_gpu_topology({"qx": result})
    assert facts["available"] is False
    assert "NVML library version: 535.161" in facts["reason"]


def test_empty_qx_is_unavailable():
    facts = build_gpu_topology({"qx": {"rc": 0, "stdout": "", "stderr": ""},
                                "topo": read("h200_vm/topo_m.out")})
    assert facts["available"] is False
    assert "nvidia-smi -q -x: printed nothing" in facts["reason"]


def test_truncated_qx_is_unavailable():
    text = read("h200_vm/q_x.out")
    facts = build_gpu_topology({"qx": text[:5000], "topo": read("h200_vm/topo_m.out")})
    assert facts["available"] is False
    assert "nvidia-smi -q -x" in facts["reason"] and "cut" in facts["reason"]


def test_truncated_topo_is_unavailable():
    text = read(TOPO_02)
    facts = build_gpu_topology({"topo": "\n".join(text.split("\n")[:4])})
    assert facts["available"] is False
    assert "output ends before the rows of GPU3" in facts["reason"]


def test_unparseable_topo_with_rc_0_raises_naming_the_line():
    with pytest.raises(TopologyParseError) as info:
        build_gpu_topology({"topo": read("public/smi_fail_13_v100_sxm2_8gpu_table_then_inforom_corrupted_warning.txt")})
    assert info.value.line_no == 1


def test_unparseable_topo_with_rc_nonzero_is_unavailable_quoting_it():
    facts = build_gpu_topology({"topo": {"rc": 2, "stdout": "Invalid combination of input arguments.\n",
                                         "stderr": ""}})
    assert facts["available"] is False
    assert "Invalid combination of input arguments." in facts["reason"]


def test_nothing_given():
    facts = build_gpu_topology({})
    assert facts["available"] is False and facts["reason"]


@pytest.mark.parametrize("relative", [
    "plugins/module_utils/_topology.py",
    "plugins/module_utils/_smi_errors.py",
    "plugins/module_utils/_pci_bus.py",
    "plugins/module_utils/_links.py",
    "plugins/module_utils/_topo_matrix.py",
    "plugins/module_utils/_query_xml.py",
    "plugins/module_utils/_nvlink.py",
    "plugins/module_utils/_topology_gather.py",
    "plugins/module_utils/_cpulist.py",
    "plugins/modules/gpu_topology_facts.py",
])
def test_code_for_managed_hosts_parses_as_python_3_9(relative):
    with open(os.path.join(REPO, relative), "r") as handle:
        source = handle.read()
    ast.parse(source, feature_version=(3, 9))
    assert "SPDX-License-Identifier: GPL-3.0-or-later" in source
    assert "# -*- coding: utf-8 -*-" in source
