# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The real 4x H200 capture in tests/fixtures/real/h200x4_nvswitch/ (every pair NV18), and the
planner on it.

Expected values were written by reading the capture files, never by running the code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout import plan_layout
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nvlink import parse_nvlink_status
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topo_matrix import parse_topo_matrix
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import build_gpu_topology

HERE = os.path.dirname(__file__)
REAL = os.path.join(HERE, "..", "..", "..", "fixtures", "real", "h200x4_nvswitch")
MODELS = os.path.join(HERE, "..", "..", "..", "fixtures", "models")
BUSES = ["0000:00:06.0", "0000:00:07.0", "0000:00:08.0", "0000:00:09.0"]


def read(name):
    with open(os.path.join(REAL, name), "r") as handle:
        return handle.read()


def sysfs():
    # pci_devices.out: the four GPUs numa_node=-1 local_cpulist=0-63; nodes.out: node0 cpulist=0-63
    return {"pci": dict((bus, {"numa_node": "-1\n", "local_cpulist": "0-63\n"}) for bus in BUSES),
            "nodes": {0: "0-63\n"}}


def facts():
    return build_gpu_topology({"qx": read("q_x.out"), "topo": read("topo_m.out"),
                               "nvlink": read("nvlink_s.out")}, sysfs())


def test_topo_m_all_pairs_nv18_and_topo_mp_all_phb():
    topo = parse_topo_matrix(read("topo_m.out"))
    assert topo["gpu_count"] == 4
    assert topo["links"] == [["X" if i == j else "NV18" for j in range(4)] for i in range(4)]
    assert [g["numa_node"] for g in topo["gpus"]] == [0, 0, 0, 0]
    assert all(g["cpu_affinity"] == list(range(64)) for g in topo["gpus"])
    pcie = parse_topo_matrix(read("topo_mp.out"), source="nvidia-smi topo -mp")
    assert pcie["links"] == [["X" if i == j else "PHB" for j in range(4)] for i in range(4)]


def test_nvlink_s_four_gpus_18_active_links_each():
    status = parse_nvlink_status(read("nvlink_s.out"))
    assert [g["index"] for g in status["gpus"]] == [0, 1, 2, 3]
    for gpu in status["gpus"]:
        assert len(gpu["nvlinks"]) == 18
        assert {(link["state"], link["speed_gbps"]) for link in gpu["nvlinks"]} == {("active", 26.562)}


def test_merged_facts_one_island_one_numa_node():
    f = facts()
    assert f["available"] is True and f["gpu_count"] == 4 and f["warnings"] == []
    assert f["nvlink_islands"] == [[0, 1, 2, 3]]
    assert f["numa_nodes"] == [{"id": 0, "cpus": list(range(64)), "gpus": [0, 1, 2, 3]}]
    assert [g["pci_bus_id"] for g in f["gpus"]] == ["00000000:00:0%d.0" % n for n in (6, 7, 8, 9)]
    assert all(g["memory_total_mib"] == 143771 for g in f["gpus"])


def _config(model):
    with open(os.path.join(MODELS, model, "config.json")) as handle:
        return json.load(handle)


def test_planner_72b_two_tp2_replicas_on_nvlink_7b_four_replicas():
    # Qwen2.5-72B (64 heads, 8 KV heads) does not fit one 140 GiB GPU at 0.90 in bf16, fits two:
    # the fewest GPUs per replica is 2, so four GPUs give two TP=2 replicas, each pair NV18.
    plan = plan_layout(facts(), _config("Qwen2.5-72B-Instruct"), "auto", host="h200x4", model_name="Qwen2.5-72B-Instruct")
    assert [(i["gpus"], i["tensor_parallel_size"], i["pipeline_parallel_size"]) for i in plan["instances"]] == [
        ([0, 1], 2, 1), ([2, 3], 2, 1)]
    assert {i["worst_link"] for i in plan["instances"]} == {"NV18"}
    plan7 = plan_layout(facts(), _config("Qwen2.5-7B-Instruct"), "auto", host="h200x4", model_name="Qwen2.5-7B-Instruct")
    assert [i["gpus"] for i in plan7["instances"]] == [[0], [1], [2], [3]]
