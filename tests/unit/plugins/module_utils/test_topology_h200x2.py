# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The real 2x H200 (NV18) capture in tests/fixtures/real/h200x2_nvlink/: topo -m, topo -mp,
nvlink -s, -q -x and the merged facts.

Expected values were written by reading the capture files, never by running the code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nvlink import parse_nvlink_status
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._query_xml import parse_query_xml
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topo_matrix import parse_topo_matrix
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import build_gpu_topology

REAL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "real", "h200x2_nvlink")


def read(name):
    with open(os.path.join(REAL, name), "r") as handle:
        return handle.read()


def sysfs():
    # from pci_devices.out (both GPUs numa_node=-1 local_cpulist=0-31) and nodes.out (node0 0-31)
    return {"pci": {"0000:00:06.0": {"numa_node": "-1\n", "local_cpulist": "0-31\n"},
                    "0000:00:07.0": {"numa_node": "-1\n", "local_cpulist": "0-31\n"}},
            "nodes": {0: "0-31\n"}}


def test_topo_m_nv18_pair_numa_affinity_0_gpu_numa_id_na():
    text = read("topo_m.out")
    assert "\x1b[4m" in text and "0\t\tN/A" in text  # ANSI header and the empty cell really are there
    topo = parse_topo_matrix(text)
    assert topo["gpu_count"] == 2
    assert topo["columns"] == ["GPU0", "GPU1", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert topo["links"] == [["X", "NV18"], ["NV18", "X"]]
    assert topo["link_class"] == [["self", "nvlink"], ["nvlink", "self"]]
    for gpu in topo["gpus"]:
        assert gpu["cpu_affinity"] == list(range(32))
        assert gpu["numa_node"] == 0
        assert gpu["gpu_numa_id"] is None
    assert topo["nics"] == [] and topo["warnings"] == []


def test_topo_mp_real_pcie_only_view_says_phb():
    # `topo -mp` hides NVLink: the same pair reads PHB (through the host bridge), and the legend has
    # no NV# line.
    text = read("topo_mp.out")
    assert "NV#" not in text
    topo = parse_topo_matrix(text, source="nvidia-smi topo -mp")
    assert topo["gpu_count"] == 2
    assert topo["links"] == [["X", "PHB"], ["PHB", "X"]]
    assert topo["link_class"] == [["self", "phb"], ["phb", "self"]]
    assert [g["numa_node"] for g in topo["gpus"]] == [0, 0]


def test_nvlink_s_18_links_each_at_26_562():
    status = parse_nvlink_status(read("nvlink_s.out"))
    assert [gpu["index"] for gpu in status["gpus"]] == [0, 1]
    assert [gpu["uuid"] for gpu in status["gpus"]] == ["GPU-00000000-0000-0000-0000-000000000000",
                                                       "GPU-00000000-0000-0000-0000-000000000001"]
    for gpu in status["gpus"]:
        links = gpu["nvlinks"]
        assert [link["link"] for link in links] == list(range(18))
        assert {link["state"] for link in links} == {"active"}
        assert {link["speed_gbps"] for link in links} == {26.562}


def test_qx_two_h200_ecc_enabled_zero_counts_pcie_gen5_x16():
    qx = parse_query_xml(read("q_x.out"))
    assert qx["driver_version"] == "580.159.04" and qx["cuda_driver_version"] == "13.0"
    assert qx["attached_gpus"] == 2
    assert [g["pci_bus_id"] for g in qx["gpus"]] == ["00000000:00:06.0", "00000000:00:07.0"]
    assert [g["uuid"] for g in qx["gpus"]] == ["GPU-00000000-0000-0000-0000-000000000000",
                                               "GPU-00000000-0000-0000-0000-000000000001"]
    for gpu in qx["gpus"]:
        assert gpu["name"] == "NVIDIA H200" and gpu["memory_total_mib"] == 143771
        assert gpu["healthy"] is True
        assert gpu["ecc"]["mode"] == "Enabled"
        assert gpu["ecc"]["volatile_uncorrected"] == 0 and gpu["ecc"]["aggregate_uncorrected"] == 0
        assert gpu["ecc"]["remapped_rows_pending"] is False
        assert gpu["pcie"] == {"link_gen_current": 5, "link_gen_max": 5,
                               "link_width_current": 16, "link_width_max": 16}
        assert gpu["mig_mode"] == "Disabled"


def test_merged_facts_one_nvlink_island_numa_from_topo_since_sysfs_says_minus_one():
    facts = build_gpu_topology({"qx": read("q_x.out"), "topo": read("topo_m.out"),
                                "nvlink": read("nvlink_s.out")}, sysfs())
    assert facts["available"] is True and facts["gpu_count"] == 2
    assert facts["nvlink_islands"] == [[0, 1]]
    assert facts["numa_nodes"] == [{"id": 0, "cpus": list(range(32)), "gpus": [0, 1]}]
    for gpu in facts["gpus"]:
        assert gpu["sysfs_numa_node"] == -1
        assert gpu["numa_node"] == 0 and gpu["numa_node_source"] == "topo"
        assert len(gpu["nvlinks"]) == 18
    assert facts["warnings"] == []
