# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Unit tests of the layout planner (plugins/module_utils/_layout.py, _layout_model.py, _layout_search.py).

Topologies are built by hand from the profile descriptions; model figures come from
tests/fixtures/models/*/config.json (generated from qwen2.5-family.tsv). Expected numbers are
worked out here by hand or by this file's own code (the brute force below shares nothing with
the planner), never pasted from the planner's output.
"""

from __future__ import absolute_import, division, print_function

import json
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout import plan_layout
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import (
    LayoutError,
    count_parameters,
    memory_per_gpu,
    model_figures,
    tensor_parallel_violation,
    valid_tensor_parallel_sizes,
)

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODELS = os.path.join(ROOT, "tests", "fixtures", "models")
MODEL_NAMES = ["Qwen2.5-0.5B-Instruct", "Qwen2.5-1.5B-Instruct", "Qwen2.5-3B-Instruct", "Qwen2.5-7B-Instruct",
               "Qwen2.5-14B-Instruct", "Qwen2.5-32B-Instruct", "Qwen2.5-72B-Instruct"]
GIB = 1024 ** 3


def cfg(model):
    with open(os.path.join(MODELS, model, "config.json")) as handle:
        return json.load(handle)


# ---------------------------------------------------------------------------------------------
# hand-built topologies (gpu_topology facts schema)

A100_NUMA = (0, 0, 0, 1, 1, 1)
A100_NV = frozenset([(0, 1), (2, 3), (4, 5)])
CPUS = {0: list(range(0, 32)), 1: list(range(32, 64))}


def a100_code(a, b, numa=A100_NUMA, nv=A100_NV):
    """a100x6_2numa: NV12 pairs 0-1, 2-3, 4-5 (2-3 crosses sockets); NODE within a socket, SYS across."""
    if a == b:
        return "X"
    if (min(a, b), max(a, b)) in nv:
        return "NV12"
    return "NODE" if numa[a] == numa[b] else "SYS"


CLASS = {"X": "self", "NV12": "nvlink", "NODE": "node", "SYS": "sys", "PIX": "pix", "PHB": "phb", "PXB": "pxb"}


def a100x6(mem=81920, unhealthy=(), mig=(), numa=None, nv=A100_NV):
    numa_of = list(A100_NUMA) if numa is None else numa
    gpus = []
    for i in range(6):
        node = numa_of[i]
        gpus.append({
            "index": i, "name": "NVIDIA A100 80GB PCIe" if mem == 81920 else "NVIDIA A100-PCIE-40GB",
            "uuid": "GPU-0000000%d-0000-0000-0000-000000000000" % i,
            "pci_bus_id": "00000000:%02X:00.0" % (0x17 + i), "memory_total_mib": mem,
            "numa_node": node, "cpu_affinity": CPUS[A100_NUMA[i]],
            "healthy": i not in unhealthy, "reason": "Xid 79 (fallen off the bus)" if i in unhealthy else None,
            "mig_mode": "Enabled" if i in mig else "Disabled",
            "nvlinks": [{"link": n, "state": "active", "speed_gbps": 25.0} for n in range(12)],
        })
    links = [[a100_code(a, b, nv=nv) for b in range(6)] for a in range(6)]
    return {
        "available": True, "reason": None, "driver_version": "535.104.05", "cuda_driver_version": "12.2",
        "gpu_count": 6, "gpus": gpus, "links": links,
        "link_class": [[CLASS[c] for c in row] for row in links],
        "nvlink_islands": sorted([list(p) for p in nv]),
        "numa_nodes": [{"id": 0, "cpus": CPUS[0], "gpus": [0, 1, 2]}, {"id": 1, "cpus": CPUS[1], "gpus": [3, 4, 5]}],
        "nics": [], "warnings": [],
    }


def h200():
    """The real H200 VM (tests/fixtures/real/h200_vm): one NVIDIA H200, 143771 MiB (query_gpu.out),
    topo -m: CPU affinity 0-15, NUMA affinity 0, GPU NUMA ID N/A."""
    return {
        "available": True, "reason": None, "driver_version": "580.159.04", "cuda_driver_version": "13.0",
        "gpu_count": 1,
        "gpus": [{"index": 0, "name": "NVIDIA H200", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
                  "pci_bus_id": "00000000:00:06.0", "memory_total_mib": 143771, "numa_node": 0,
                  "cpu_affinity": list(range(16)), "healthy": True, "reason": None, "mig_mode": "Disabled",
                  "nvlinks": []}],
        "links": [["X"]], "link_class": [["self"]], "nvlink_islands": [[0]],
        "numa_nodes": [{"id": 0, "cpus": list(range(16)), "gpus": [0]}], "nics": [], "warnings": [],
    }


def pcie5(mem=24576):
    """tests/fixtures/real/public/topo_10 by hand: 5 PCIe GPUs, GPU0 alone on NUMA 1 (CPUs 8-15,24-31, SYS to
    all), GPUs 1-4 on NUMA 0 (CPUs 0-7,16-23), PHB pairs 1-2 and 3-4, NODE between the pairs. No NVLink.
    Memory: 24 GiB consumer cards (RTX 3090 class; the capture has no memory figure)."""
    phb = {(1, 2), (3, 4)}

    def code(a, b):
        if a == b:
            return "X"
        if 0 in (a, b):
            return "SYS"
        return "PHB" if (min(a, b), max(a, b)) in phb else "NODE"
    cpus1 = list(range(8, 16)) + list(range(24, 32))
    cpus0 = list(range(0, 8)) + list(range(16, 24))
    links = [[code(a, b) for b in range(5)] for a in range(5)]
    return {
        "available": True, "reason": None, "driver_version": None, "cuda_driver_version": None, "gpu_count": 5,
        "gpus": [{"index": i, "name": "NVIDIA GeForce RTX 3090", "uuid": "GPU-%d" % i, "pci_bus_id": None,
                  "memory_total_mib": mem, "numa_node": 1 if i == 0 else 0, "cpu_affinity": cpus1 if i == 0 else cpus0,
                  "healthy": True, "reason": None, "mig_mode": None, "nvlinks": []} for i in range(5)],
        "links": links, "link_class": [[CLASS[c] for c in row] for row in links],
        "nvlink_islands": [[0], [1], [2], [3], [4]],
        "numa_nodes": [{"id": 0, "cpus": cpus0, "gpus": [1, 2, 3, 4]}, {"id": 1, "cpus": cpus1, "gpus": [0]}],
        "nics": [], "warnings": [],
    }


def plan(topology, model, request, **kw):
    kw.setdefault("host", "gpu-sim-a100x6")
    return plan_layout(topology, cfg(model) if isinstance(model, str) else model, request,
                       model_name="Qwen/" + model if isinstance(model, str) else "test/model", **kw)


def errmsg(topology, model, request, **kw):
    with pytest.raises(LayoutError) as info:
        plan(topology, model, request, **kw)
    return str(info.value)


# ---------------------------------------------------------------------------------------------
# model figures


def test_qwen25_7b_parameter_count_by_hand():
    # embeddings + untied lm_head: 2 x 152064 x 3584; per layer (28): q 3584x3584 + bias 3584,
    # k and v 3584x512 + bias 512 each (4 KV heads x 128), o 3584x3584, MLP 3 x 3584 x 18944,
    # 2 norms x 3584; final norm 3584.
    per_layer = 3584 * 3584 + 3584 + 2 * (3584 * 512 + 512) + 3584 * 3584 + 3 * 3584 * 18944 + 2 * 3584
    expected = 2 * 152064 * 3584 + 28 * per_layer + 3584
    assert expected == 7615616512  # Qwen2.5-7B's published parameter count
    assert count_parameters(model_figures(cfg("Qwen2.5-7B-Instruct"))) == expected


def test_tied_embeddings_counted_once():
    fig = model_figures(cfg("Qwen2.5-0.5B-Instruct"))
    untied = dict(fig, tie_word_embeddings=False)
    assert count_parameters(untied) - count_parameters(fig) == 151936 * 896


def test_memory_per_gpu_7b_tp1_by_hand():
    need = memory_per_gpu(model_figures(cfg("Qwen2.5-7B-Instruct")), 1, 1, 32768)
    assert need["weights"] == 7615616512 * 2
    # KV: 2 (K and V) x 28 layers x 4 KV heads x 128 head_dim x 2 bytes x 32768 tokens
    assert need["kv_cache"] == 2 * 28 * 4 * 128 * 2 * 32768
    assert need["reserve"] == GIB
    assert 15.2e9 < need["weights"] < 15.3e9  # "Qwen2.5-7B ~15.2 GB"


def test_memory_72b_tp2_exceeds_a100_80gb_and_tp4_fits():
    fig = model_figures(cfg("Qwen2.5-72B-Instruct"))
    budget = 81920 * 1024 * 1024 * 0.9
    tp2 = memory_per_gpu(fig, 2, 1, 32768)
    assert 72.0e9 < tp2["weights"] < 73.5e9  # "TP=2 gives 72.7 GB/GPU"
    assert tp2["total"] > budget
    assert memory_per_gpu(fig, 4, 1, 32768)["total"] < budget


def test_kv_heads_replicated_when_tp_exceeds_kv():
    fig = model_figures(cfg("Qwen2.5-1.5B-Instruct"))  # 2 KV heads
    # TP=4 > 2 KV heads: each rank keeps one (replicated) KV head, not half a head
    assert memory_per_gpu(fig, 4, 1, 1000)["kv_cache"] == 2 * 28 * 1 * 128 * 2 * 1000
    assert memory_per_gpu(fig, 2, 1, 1000)["kv_cache"] == 2 * 28 * 1 * 128 * 2 * 1000
    assert memory_per_gpu(fig, 1, 1, 1000)["kv_cache"] == 2 * 28 * 2 * 128 * 2 * 1000


@pytest.mark.parametrize("missing", ["num_attention_heads", "hidden_size", "num_hidden_layers", "vocab_size",
                                     "intermediate_size", "torch_dtype"])
def test_config_lacking_a_key_is_refused(missing):
    broken = cfg("Qwen2.5-7B-Instruct")
    del broken[missing]
    msg = errmsg(a100x6(), broken, "auto")
    assert "gpu-sim-a100x6" in msg and missing in msg


def test_config_with_wrong_type_is_refused():
    broken = dict(cfg("Qwen2.5-7B-Instruct"), num_attention_heads="28")
    assert "num_attention_heads" in errmsg(a100x6(), broken, "auto")


def test_config_without_kv_heads_means_multi_head_attention():
    mha = cfg("Qwen2.5-7B-Instruct")
    del mha["num_key_value_heads"]
    assert model_figures(mha)["num_key_value_heads"] == 28


# ---------------------------------------------------------------------------------------------
# tensor_parallel_size rules


def test_valid_tp_sizes_qwen25_7b():
    # 28 heads: divisors 1, 2, 4, 7, 14, 28; 4 KV heads: 7 and 14 are > 4 and not multiples of 4
    assert valid_tensor_parallel_sizes(28, 4) == [1, 2, 4, 28]
    assert tensor_parallel_violation(3, 28, 4) is not None
    assert tensor_parallel_violation(6, 28, 4) is not None
    assert tensor_parallel_violation(7, 28, 4) is not None   # heads fine, KV rule broken
    assert "KV" in tensor_parallel_violation(7, 28, 4)
    assert "attention heads" not in tensor_parallel_violation(7, 28, 4)


def test_valid_tp_sizes_qwen25_15b():
    # 12 heads: 1, 2, 3, 4, 6, 12; 2 KV heads: 3 > 2 and 3 % 2 != 0 -> invalid
    assert valid_tensor_parallel_sizes(12, 2) == [1, 2, 4, 6, 12]


def test_tp3_7b_on_six_gpus_exact_failure():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct",
                 [{"gpus": [0, 1, 2], "tensor_parallel_size": 3, "pipeline_parallel_size": 1}])
    assert msg.startswith("host gpu-sim-a100x6: layout rejected: instance 0 (gpus [0, 1, 2]): "
                          "tensor_parallel_size 3 is invalid for Qwen2.5-7B-Instruct: ")
    assert "Total number of attention heads (28) must be divisible by tensor parallel size (3)." in msg
    assert "28 attention heads" in msg and "4 KV heads" in msg
    assert "valid tensor_parallel_size values for Qwen2.5-7B-Instruct (28 attention heads, 4 KV heads): " \
           "1, 2, 4, 28 (with the 6 usable GPUs here: 1, 2, 4)" in msg


def test_tp6_7b_fails_and_tp2_passes():
    assert "tensor_parallel_size 6 is invalid" in errmsg(
        a100x6(numa=[None] * 6), "Qwen2.5-7B-Instruct", [{"gpus": [0, 1, 2, 3, 4, 5], "tensor_parallel_size": 6}])
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0, 1], "tensor_parallel_size": 2}])
    assert out["instances"][0]["tensor_parallel_size"] == 2


def test_kv_rule_fails_15b_tp3_passes_tp4_and_tp6():
    msg = errmsg(a100x6(numa=[None] * 6), "Qwen2.5-1.5B-Instruct", [{"gpus": [0, 1, 2], "tensor_parallel_size": 3}])
    assert "3 is not a multiple of the 2 KV heads" in msg
    assert "attention heads are not divisible" not in msg
    assert "1, 2, 4, 6, 12" in msg
    ok = plan(a100x6(numa=[None] * 6), "Qwen2.5-1.5B-Instruct",
              [{"gpus": [0, 1, 2, 3], "tensor_parallel_size": 4}])
    assert ok["instances"][0]["tensor_parallel_size"] == 4
    # unknown NUMA = all GPUs one node, so TP=6 over both sockets is allowed
    ok6 = plan(a100x6(numa=[None] * 6), "Qwen2.5-1.5B-Instruct", [{"gpus": [0, 1, 2, 3, 4, 5]}])
    assert ok6["instances"][0]["tensor_parallel_size"] == 6
    assert ok6["instances"][0]["name"] == "nx-0"
    assert ok6["instances"][0]["numa_node"] is None


# ---------------------------------------------------------------------------------------------
# pipeline, GPU count, existence, health, MIG, sharing


TINY = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 256,
        "intermediate_size": 512, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
        "vocab_size": 1000, "tie_word_embeddings": True, "max_position_embeddings": 2048,
        "torch_dtype": "bfloat16"}


def test_pp_more_than_layers_fails_pp_equal_layers_passes():
    msg = errmsg(a100x6(), TINY, [{"gpus": [0, 1, 2], "tensor_parallel_size": 1, "pipeline_parallel_size": 3}])
    assert "pipeline_parallel_size 3 exceeds the 2 hidden layers" in msg and "use 1..2" in msg
    out = plan(a100x6(), TINY, [{"gpus": [0, 1], "tensor_parallel_size": 1, "pipeline_parallel_size": 2}])
    assert out["instances"][0]["pipeline_parallel_size"] == 2


def test_pp_need_not_divide_layers():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct",
               [{"gpus": [0, 1, 2], "tensor_parallel_size": 1, "pipeline_parallel_size": 3}])  # 28 layers / 3
    assert out["instances"][0]["pipeline_parallel_size"] == 3


def test_gpu_count_must_equal_tp_times_pp():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct",
                 [{"gpus": [0, 1, 4, 5], "tensor_parallel_size": 2, "pipeline_parallel_size": 1}])
    assert "4 GPU(s) given but tensor_parallel_size 2 x pipeline_parallel_size 1 = 2" in msg
    out = plan(a100x6(), "Qwen2.5-7B-Instruct",
               [{"gpus": [0, 1, 4, 5], "tensor_parallel_size": 2, "pipeline_parallel_size": 2}])
    assert out["instances"][0]["gpus"] == [0, 1, 4, 5]


def test_gpu_must_exist():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [7], "tensor_parallel_size": 1}])
    assert "GPU 7 does not exist on this host (GPUs: 0, 1, 2, 3, 4, 5)" in msg
    assert plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [5]}])["instances"][0]["gpus"] == [5]


def test_unhealthy_gpu_refused_and_skipped_by_auto():
    msg = errmsg(a100x6(unhealthy=(1,)), "Qwen2.5-7B-Instruct", [{"gpus": [0, 1], "tensor_parallel_size": 2}])
    assert "GPU 1 is unhealthy (Xid 79 (fallen off the bus))" in msg and "usable GPUs: [0, 2, 3, 4, 5]" in msg
    out = plan(a100x6(unhealthy=(1,)), "Qwen2.5-7B-Instruct", "auto")
    assert [i["gpus"] for i in out["instances"]] == [[0], [2], [3], [4], [5]]
    assert out["gpus_unused"] == [1]
    assert "GPU 1 unused: unhealthy" in out["explanation"]


def test_gpu_in_two_instances_refused():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0, 1]}, {"gpus": [1]}])
    assert "GPU 1 is already in instance 0 (gpus [0, 1])" in msg
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0, 1]}, {"gpus": [2]}])
    assert len(out["instances"]) == 2


def test_duplicate_gpu_inside_one_instance_refused():
    assert "listed twice" in errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0, 0]}])


def test_mig_gpu_refused_unless_allowed():
    msg = errmsg(a100x6(mig=(2,)), "Qwen2.5-7B-Instruct", [{"gpus": [2]}])
    assert "GPU 2 is MIG mode enabled" in msg and "allow_mig" in msg
    assert plan(a100x6(mig=(2,)), "Qwen2.5-7B-Instruct", [{"gpus": [2]}], allow_mig=True)["instances"][0]["gpus"] == [2]
    auto = plan(a100x6(mig=(2,)), "Qwen2.5-7B-Instruct", "auto")
    assert 2 not in [g for i in auto["instances"] for g in i["gpus"]]
    assert auto["gpus_unused"] == [2]


def test_unknown_instance_key_refused():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0], "tp": 1}])
    assert "unknown key(s) tp" in msg


def test_empty_or_bad_request_refused():
    assert "empty list" in errmsg(a100x6(), "Qwen2.5-7B-Instruct", [])
    assert "must be 'auto' or a list" in errmsg(a100x6(), "Qwen2.5-7B-Instruct", "manual")
    assert "gpus must be a non-empty list" in errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": []}])


def test_errors_are_collected_not_only_the_first():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0, 1, 2], "tensor_parallel_size": 3}, {"gpus": [9]}])
    assert "tensor_parallel_size 3 is invalid" in msg and "GPU 9 does not exist" in msg


# ---------------------------------------------------------------------------------------------
# NUMA and links


def test_tp_group_across_numa_refused_even_over_nvlink():
    # GPUs 2-3 are an NV12 pair, but 2 is on NUMA 0 and 3 on NUMA 1
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [2, 3], "tensor_parallel_size": 2}])
    assert "TP group [2, 3] spans NUMA nodes (GPU 2: NUMA 0, GPU 3: NUMA 1)" in msg
    ok = plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [4, 5], "tensor_parallel_size": 2}])
    inst = ok["instances"][0]
    assert (inst["name"], inst["numa_node"], inst["worst_link"], inst["link_class"]) == ("n1-0", 1, "NV12", "nvlink")
    assert inst["cpus"] == list(range(32, 64))


def test_pipeline_stages_may_cross_numa():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct",
               [{"gpus": [2, 3], "tensor_parallel_size": 1, "pipeline_parallel_size": 2}])
    inst = out["instances"][0]
    assert inst["numa_node"] is None and inst["name"] == "nx-0"
    # TP groups of one GPU each: no link inside them (null, class 'self'), not topo -m's 'X'
    assert (inst["worst_link"], inst["link_class"]) == (None, "self")
    assert inst["cpus"] == list(range(0, 64))


def test_pp_instance_each_tp_group_checked():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct",
                 [{"gpus": [0, 1, 2, 3], "tensor_parallel_size": 2, "pipeline_parallel_size": 2}])
    assert "TP group [2, 3] (stage 1) spans NUMA nodes" in msg


def test_explicit_pcie_tp_group_reports_worst_link():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0, 2], "tensor_parallel_size": 2}])
    assert out["instances"][0]["worst_link"] == "NODE"
    assert out["instances"][0]["link_class"] == "node"
    assert "not inside one NVLink island" in out["explanation"]


# ---------------------------------------------------------------------------------------------
# memory


def test_72b_tp2_does_not_fit_a100_80gb():
    msg = errmsg(a100x6(), "Qwen2.5-72B-Instruct", [{"gpus": [0, 1], "tensor_parallel_size": 2}])
    assert "needs 73.7 GiB per GPU" in msg  # 135.4/2 weights + 10.0/2 KV + 1 reserve
    assert "more than 72.0 GiB (80.0 GiB x 0.90 gpu_memory_utilization)" in msg
    assert "sizes that fit: TP=1 PP=3" in msg


def test_72b_tp2_pp2_fits_a100_80gb():
    out = plan(a100x6(), "Qwen2.5-72B-Instruct",
               [{"gpus": [0, 1, 4, 5], "tensor_parallel_size": 2, "pipeline_parallel_size": 2}])
    assert out["instances"][0]["worst_link"] == "NV12"


def test_shorter_max_model_len_makes_72b_tp2_fit():
    # 8192 tokens: KV 2*80*8*128*2*8192 = 2.5 GiB, /2 per GPU; 67.7 + 1.25 + 1 < 72
    out = plan(a100x6(), "Qwen2.5-72B-Instruct", [{"gpus": [0, 1]}], max_model_len=8192)
    assert out["model"]["max_model_len"] == 8192


def test_max_model_len_above_model_limit_refused():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", "auto", max_model_len=65536)
    assert "max_model_len 65536 exceeds the model's maximum of 32768" in msg


def test_lower_gpu_memory_utilization_changes_fit():
    # 32B at TP=1 needs 61.0 + 8.0 + 1 = 70.0 GiB: fits 80 GiB x 0.9 = 72, not x 0.85 = 68
    assert plan(a100x6(), "Qwen2.5-32B-Instruct", "auto")["instances"][0]["tensor_parallel_size"] == 1
    out = plan(a100x6(), "Qwen2.5-32B-Instruct", "auto", gpu_memory_utilization=0.85)
    assert {i["tensor_parallel_size"] for i in out["instances"]} == {2}
    assert "bad" in errmsg(a100x6(), "Qwen2.5-32B-Instruct", "auto", gpu_memory_utilization=1.5).replace(
        "gpu_memory_utilization must be in (0, 1]", "bad")


# ---------------------------------------------------------------------------------------------
# ports


def test_default_ports_and_names():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", "auto")
    assert [(i["name"], i["port"]) for i in out["instances"]] == [
        ("n0-0", 8001), ("n0-1", 8002), ("n0-2", 8003), ("n1-0", 8004), ("n1-1", 8005), ("n1-2", 8006)]
    assert out["endpoint_port"] == 8000


def test_port_equal_to_endpoint_refused():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0], "port": 8000}])
    assert "port 8000 equals endpoint_port 8000" in msg
    assert plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0], "port": 9000}])["instances"][0]["port"] == 9000


def test_duplicate_ports_refused():
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [0], "port": 9000}, {"gpus": [1], "port": 9000}])
    assert "port 9000 already used by instance n0-0" in msg


def test_explicit_port_colliding_with_default_refused():
    # instances ordered by first GPU: [0] gets default 8001, [1] asks for 8001
    msg = errmsg(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [1], "port": 8001}, {"gpus": [0]}])
    assert "port 8001" in msg and "free ports near base_port 8001" in msg


def test_base_port_equal_endpoint_refused():
    assert "equals endpoint_port" in errmsg(a100x6(), "Qwen2.5-7B-Instruct", "auto", base_port=8000)


def test_instances_ordered_by_first_gpu_whatever_the_request_order():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", [{"gpus": [4, 5]}, {"gpus": [0, 1]}, {"gpus": [3]}])
    assert [(i["name"], i["gpus"], i["port"]) for i in out["instances"]] == [
        ("n0-0", [0, 1], 8001), ("n1-0", [3], 8002), ("n1-1", [4, 5], 8003)]
    assert out["gpus_unused"] == [2]


# ---------------------------------------------------------------------------------------------
# topology problems


def test_unavailable_topology_refused_with_reason():
    topo = {"available": False, "reason": "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA "
                                          "driver.", "gpus": [], "gpu_count": 0}
    msg = errmsg(topo, "Qwen2.5-7B-Instruct", "auto")
    assert "host gpu-sim-a100x6: GPU topology is not available (NVIDIA-SMI has failed" in msg


def test_all_gpus_unusable_in_auto():
    msg = errmsg(a100x6(unhealthy=(0, 1, 2, 3, 4, 5)), "Qwen2.5-7B-Instruct", "auto")
    assert "no usable GPU" in msg and "GPU 5: unhealthy" in msg


def test_missing_link_matrix_counts_as_unknown():
    topo = a100x6()
    topo["links"], topo["link_class"] = [], []
    out = plan(topo, "Qwen2.5-7B-Instruct", [{"gpus": [0, 1]}])
    assert out["instances"][0]["link_class"] == "unknown"
    assert "no topo -m link data" in out["explanation"]


def test_numa_minus_one_is_unknown():
    topo = h200()
    topo["gpus"][0]["numa_node"] = -1   # sysfs numa_node reads -1 in the H200 VM
    out = plan(topo, "Qwen2.5-7B-Instruct", "auto", host="h200-vm")
    assert out["instances"][0]["name"] == "nx-0" and out["instances"][0]["numa_node"] is None


# ---------------------------------------------------------------------------------------------
# auto: explanation and the single H200


def test_auto_7b_on_a100x6_explanation():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", "auto")
    assert out["request"] == "auto"
    assert out["valid_tensor_parallel_sizes"] == [1, 2, 4, 28]
    assert out["model"]["params_billion"] == 7.62
    assert out["model"]["weights_gib"] == round(7615616512 * 2 / GIB, 2)
    assert out["explanation"].startswith("Qwen2.5-7B-Instruct needs 16.9 GiB per GPU")
    assert "6 replicas of TP=1" in out["explanation"]
    assert out["gpus_unused"] == []
    assert [i["cuda_visible_devices"] for i in out["instances"]] == ["0", "1", "2", "3", "4", "5"]


@pytest.mark.parametrize("model", MODEL_NAMES[:-1])
def test_single_h200_serves_up_to_32b_on_one_gpu(model):
    out = plan(h200(), model, "auto", host="h200-vm")
    assert [(i["gpus"], i["tensor_parallel_size"], i["pipeline_parallel_size"]) for i in out["instances"]] == \
        [([0], 1, 1)]
    assert out["instances"][0]["cpus"] == list(range(16))


def test_single_h200_cannot_hold_72b():
    msg = errmsg(h200(), "Qwen2.5-72B-Instruct", "auto", host="h200-vm")
    # 143771 MiB x 0.9 = 126.4 GiB < 135.4 GiB weights alone
    assert msg.startswith("host h200-vm: no layout fits Qwen2.5-72B-Instruct on 1 usable GPU(s)")
    assert "tried: TP=1 PP=1 needs 146.4 GiB per GPU > 126.4 GiB (140.4 GiB x 0.90)" in msg


def test_auto_72b_on_a100x6_lists_what_was_tried():
    out = plan(a100x6(), "Qwen2.5-72B-Instruct", "auto")
    text = out["explanation"]
    assert "TP=2 PP=1 needs 73.7 GiB per GPU > 72.0 GiB" in text
    assert "TP=4 PP=1: no 4 usable GPUs" in text and "NUMA 0: 3, NUMA 1: 3" in text
    assert [(i["gpus"], i["tensor_parallel_size"], i["pipeline_parallel_size"]) for i in out["instances"]] == \
        [([0, 1, 2], 1, 3), ([3, 4, 5], 1, 3)]


def test_auto_prefers_nvlink_pairs():
    # A100 40 GB: 32B needs TP=2 (TP=1: 70.0 GiB > 36 GiB); one pair per NUMA node, the NV12 ones
    out = plan(a100x6(mem=40960), "Qwen2.5-32B-Instruct", "auto")
    assert [(i["name"], i["gpus"], i["worst_link"]) for i in out["instances"]] == [
        ("n0-0", [0, 1], "NV12"), ("n1-0", [4, 5], "NV12")]
    assert out["gpus_unused"] == [2, 3]


# ---------------------------------------------------------------------------------------------
# brute force: an independent optimum to compare auto against

T_RANK = {"X": 0, "PIX": 2, "PXB": 3, "PHB": 4, "NODE": 5, "SYS": 6, "SOC": 6}


def t_rank(code):
    return 1 if code.startswith("NV") else T_RANK[code]


def t_weights_bytes(c):
    """Qwen2 parameter bytes, written out component by component (independent of the planner)."""
    h, layers, heads, kv = c["hidden_size"], c["num_hidden_layers"], c["num_attention_heads"], c["num_key_value_heads"]
    d = h // heads
    emb = c["vocab_size"] * h
    head = 0 if c["tie_word_embeddings"] else c["vocab_size"] * h
    attn = (h * heads * d + heads * d) + (h * kv * d + kv * d) * 2 + heads * d * h
    mlp = h * c["intermediate_size"] * 2 + c["intermediate_size"] * h
    norms = h + h
    return (emb + head + layers * (attn + mlp + norms) + h) * {"bfloat16": 2, "float16": 2, "float32": 4}[c["torch_dtype"]]


def t_need(c, tp, pp, length):
    kv = c["num_key_value_heads"]
    kv_rank = kv // tp if kv >= tp else 1
    d = c["hidden_size"] // c["num_attention_heads"]
    kv_bytes = 2 * c["num_hidden_layers"] * kv_rank * d * 2 * length / pp
    return t_weights_bytes(c) / (tp * pp) + kv_bytes + GIB


def t_tp_ok(tp, c):
    heads, kv = c["num_attention_heads"], c["num_key_value_heads"]
    if heads % tp != 0:
        return False
    return kv % tp == 0 if kv >= tp else tp % kv == 0


def set_partitions(items):
    if not items:
        yield []
        return
    first, rest = items[0], items[1:]
    for part in set_partitions(rest):
        yield [[first]] + part
        for n in range(len(part)):
            yield part[:n] + [[first] + part[n]] + part[n + 1:]


def splits_into_groups(block, size):
    """All ways to cut a set of GPUs into unordered groups of `size`."""
    if not block:
        yield []
        return
    first = block[0]
    others = block[1:]
    import itertools
    for mates in itertools.combinations(others, size - 1):
        group = [first] + list(mates)
        left = [g for g in others if g not in mates]
        for rest in splits_into_groups(left, size):
            yield [group] + rest


def t_block_worst(topo, block, tp):
    """Best achievable worst-link rank for a block cut into TP groups inside one NUMA node; None if none."""
    numa = {g["index"]: g["numa_node"] for g in topo["gpus"]}
    best = None
    for groups in splits_into_groups(sorted(block), tp):
        if any(len({numa[i] for i in grp} - {None}) > 1 for grp in groups):
            continue
        worst = max([0] + [t_rank(topo["links"][a][b]) for grp in groups for a in grp for b in grp if a != b])
        best = worst if best is None else min(best, worst)
    return best


def brute_force(topo, c, util=0.9, allow_mig=False, only=None):
    """(pp>1, gpus per replica, pp, -replicas, sorted worst-link ranks) minimum over all layouts, or None.

    Every set partition of the usable GPUs is a candidate; its blocks of the shape's size that obey
    the rules are the replicas. Shapes are visited in the order of the key's first three fields, so
    the first shape with any valid layout holds the optimum.
    """
    usable = [g["index"] for g in topo["gpus"] if g["healthy"] and (allow_mig or g["mig_mode"] != "Enabled")
              and (only is None or g["index"] in only)]
    mem = {g["index"]: g["memory_total_mib"] for g in topo["gpus"]}
    length = c["max_position_embeddings"]
    partitions = list(set_partitions(usable))
    shapes = [(tp, pp) for tp in range(1, len(usable) + 1) if t_tp_ok(tp, c)
              for pp in range(1, len(usable) // tp + 1) if pp <= c["num_hidden_layers"]]
    shapes.sort(key=lambda s: (s[1] > 1, s[0] * s[1], s[1]))
    for tp, pp in shapes:
        size = tp * pp
        need = t_need(c, tp, pp, length)
        block_worst = {}
        best = None
        for part in partitions:
            ranks = []
            for block in part:
                if len(block) != size or need > min(mem[i] for i in block) * 1024 * 1024 * util:
                    continue
                key = tuple(sorted(block))
                if key not in block_worst:
                    block_worst[key] = t_block_worst(topo, block, tp)
                if block_worst[key] is not None:
                    ranks.append(block_worst[key])
            if not ranks:
                continue
            key = (pp > 1, size, pp, -len(ranks), tuple(sorted(ranks, reverse=True)))
            if best is None or key < best:
                best = key
        if best is not None:
            return best
    return None


def planner_key(topo, out):
    insts = out["instances"]
    tp, pp = insts[0]["tensor_parallel_size"], insts[0]["pipeline_parallel_size"]
    assert all((i["tensor_parallel_size"], i["pipeline_parallel_size"]) == (tp, pp) for i in insts)
    ranks = []
    for i in insts:
        groups = [i["gpus"][s * tp:(s + 1) * tp] for s in range(pp)]
        ranks.append(max([0] + [t_rank(topo["links"][a][b]) for grp in groups for a in grp for b in grp if a != b]))
    return (pp > 1, tp * pp, pp, -len(insts), tuple(sorted(ranks, reverse=True)))


def check_rules(topo, c, out, util=0.9, allow_mig=False):
    """The planner's instances obey every rule, checked with this file's own code."""
    gpus = {g["index"]: g for g in topo["gpus"]}
    seen = set()
    ports = set()
    for i in out["instances"]:
        tp, pp = i["tensor_parallel_size"], i["pipeline_parallel_size"]
        assert t_tp_ok(tp, c) and pp <= c["num_hidden_layers"] and len(i["gpus"]) == tp * pp
        for g in i["gpus"]:
            assert g in gpus and gpus[g]["healthy"] and (allow_mig or gpus[g]["mig_mode"] != "Enabled")
            assert g not in seen
            seen.add(g)
        for s in range(pp):
            grp = i["gpus"][s * tp:(s + 1) * tp]
            assert len({gpus[g]["numa_node"] for g in grp} - {None}) <= 1
        assert t_need(c, tp, pp, c["max_position_embeddings"]) <= \
            min(gpus[g]["memory_total_mib"] for g in i["gpus"]) * 1024 * 1024 * util
        assert i["port"] not in ports and i["port"] != out["endpoint_port"]
        ports.add(i["port"])
        assert i["cuda_visible_devices"] == ",".join(str(g) for g in i["gpus"])
    assert sorted(out["gpus_unused"]) == sorted(set(gpus) - seen)
    firsts = [i["gpus"][0] for i in out["instances"]]
    assert firsts == sorted(firsts)


PROFILES = {
    "a100x6_2numa": a100x6,
    "a100x6_40gb": lambda: a100x6(mem=40960),
    "a100x6_gpu1_unhealthy": lambda: a100x6(unhealthy=(1,)),
    "a100x6_40gb_gpu4_mig": lambda: a100x6(mem=40960, mig=(4,)),
    "h200_single": h200,
    "a100x6_40gb_nv_0-2_1-5_3-4": lambda: a100x6(mem=40960, nv={(0, 2), (1, 5), (3, 4)}),
    "pcie5_gpu0_alone_24gb": pcie5,
    "pcie5_gpu0_alone_16gb": lambda: pcie5(mem=16384),
}


@pytest.mark.parametrize("model", MODEL_NAMES)
@pytest.mark.parametrize("profile", sorted(PROFILES))
def test_auto_matches_brute_force_optimum(profile, model):
    topo = PROFILES[profile]()
    c = cfg(model)
    best = brute_force(topo, c)
    if best is None:
        with pytest.raises(LayoutError) as info:
            plan_layout(topo, c, "auto", host=profile, model_name=model)
        assert str(info.value).startswith("host %s: no layout fits %s" % (profile, model))
        return
    out = plan_layout(topo, c, "auto", host=profile, model_name=model)
    check_rules(topo, c, out)
    assert planner_key(topo, out) == best


def test_auto_finds_nvlink_pairs_that_are_not_neighbours():
    # same box with NV12 pairs 0-2, 1-5 (across sockets) and 3-4: the in-NUMA pairs are (0,2) and (3,4)
    out = plan(a100x6(mem=40960, nv={(0, 2), (1, 5), (3, 4)}), "Qwen2.5-32B-Instruct", "auto")
    assert [(i["gpus"], i["worst_link"]) for i in out["instances"]] == [([0, 2], "NV12"), ([3, 4], "NV12")]
    assert out["gpus_unused"] == [1, 5]


def test_auto_prefers_phb_pairs_over_node_on_pcie_box():
    # 14B on 24 GiB: TP=1 needs 34.5 GiB > 21.6; TP=2 needs 13.8 + 3.0 + 1 = 17.8 GiB. GPU0 is alone on
    # NUMA 1, so both pairs come from GPUs 1-4: the PHB pairs (1,2) and (3,4), not (1,3)/(2,4) over NODE.
    out = plan(pcie5(), "Qwen2.5-14B-Instruct", "auto", host="pcie5")
    assert [(i["name"], i["gpus"], i["worst_link"], i["link_class"]) for i in out["instances"]] == [
        ("n0-0", [1, 2], "PHB", "phb"), ("n0-1", [3, 4], "PHB", "phb")]
    assert out["gpus_unused"] == [0]
    assert out["instances"][0]["cpus"] == list(range(0, 8)) + list(range(16, 24))


def test_brute_force_itself_sees_the_expected_a100_answers():
    """Guard the guard: the brute force agrees with answers worked out by hand."""
    # 7B on 80 GB: 6 single-GPU replicas
    assert brute_force(a100x6(), cfg("Qwen2.5-7B-Instruct")) == (False, 1, 1, -6, (0,) * 6)
    # 32B on 40 GB: TP=2, one pair per NUMA node, both NVLink (rank 1)
    assert brute_force(a100x6(mem=40960), cfg("Qwen2.5-32B-Instruct")) == (False, 2, 1, -2, (1, 1))
    # 72B on 80 GB: TP=4 cannot stay in a 3-GPU NUMA node; TP=1 x PP=3 (49.5 GiB/GPU), twice
    assert brute_force(a100x6(), cfg("Qwen2.5-72B-Instruct")) == (True, 3, 3, -2, (0, 0))
    # 14B on the PCIe box: two PHB pairs (rank 4)
    assert brute_force(pcie5(), cfg("Qwen2.5-14B-Instruct")) == (False, 2, 1, -2, (4, 4))
    # 72B on one H200: nothing
    assert brute_force(h200(), cfg("Qwen2.5-72B-Instruct")) is None


# ---------------------------------------------------------------------------------------------
# real topologies: facts built by _topology.build_gpu_topology from the captured topo -m files

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import (  # noqa: E402
    build_gpu_topology,
)

REAL = os.path.join(ROOT, "tests", "fixtures", "real")
# topo -m carries no memory size: nominal size of each capture's card (GiB x 1024), except the
# H200 whose 143771 MiB is read from h200_vm/query_gpu.out.
REAL_TOPOLOGIES = {
    "public/topo_01_a100_sxm4_8nic_no_gpunumaid.txt": 81920,        # A100-SXM4 80GB
    "public/topo_02_a6000_8gpu_nvlink_bridge_pairs.txt": 49152,     # RTX A6000 48GB
    "public/topo_03_a30_4gpu_nv4_pairs_cross_socket.txt": 24576,    # A30 24GB
    "public/topo_04_a6000_3gpu_one_nvlink_pair.txt": 49152,         # RTX A6000 48GB
    "public/topo_05_dgx1_v100_hybrid_cube_mesh_tabs.txt": 32768,    # V100-SXM2 32GB
    "public/topo_06_k80_4gpu_mlx4_oldest_soc_legend.txt": 12288,    # K80 (12GB per GPU)
    "public/topo_07_a100_2gpu_slurm_alloc_mlx5_headers_tabs.txt": 40960,  # A100 PCIe 40GB
    "public/topo_09_tesla_p4_single_gpu_numa_affinity_na_tabs.txt": 8192,  # Tesla P4 8GB
    "public/topo_10_5gpu_pcie_gpu0_alone_on_numa1.txt": 24576,      # RTX 3090 24GB
    "public/topo_13_h100_4gpu_nv6_numa_3175_strided_cpus.txt": 81920,  # H100 80GB
    "public/topo_15_8x4090_pcie_all_sys_tabs.txt": 24576,           # RTX 4090 24GB
    "h200_vm/topo_m.out": 143771,                                   # H200 (query_gpu.out)
    "h200x2_nvlink/topo_m.out": 143771,                             # 2x H200 NV18 (query_gpu.out)
}


def real_topology(name):
    with open(os.path.join(REAL, name)) as handle:
        topo = build_gpu_topology({"topo": handle.read()})
    assert topo["available"], topo["reason"]
    for gpu in topo["gpus"]:
        gpu["memory_total_mib"] = REAL_TOPOLOGIES[name]
        # the facts builder leaves health/MIG to -q -x; topo -m alone says nothing against them
        gpu.setdefault("healthy", True)
        gpu.setdefault("mig_mode", None)
    return topo


def test_real_topology_without_memory_is_refused():
    with open(os.path.join(REAL, "public", "topo_03_a30_4gpu_nv4_pairs_cross_socket.txt")) as handle:
        topo = build_gpu_topology({"topo": handle.read()})
    msg = errmsg(topo, "Qwen2.5-7B-Instruct", "auto", host="a30x4")
    assert "memory_total_mib unknown for GPU(s) 0, 1, 2, 3" in msg


@pytest.mark.parametrize("model", MODEL_NAMES)
@pytest.mark.parametrize("name", sorted(REAL_TOPOLOGIES))
def test_auto_on_real_topologies_matches_brute_force(name, model):
    topo = real_topology(name)
    c = cfg(model)
    best = brute_force(topo, c)
    if best is None:
        with pytest.raises(LayoutError) as info:
            plan_layout(topo, c, "auto", host="real", model_name=model)
        assert str(info.value).startswith("host real: no layout fits %s" % model)
        return
    out = plan_layout(topo, c, "auto", host="real", model_name=model)
    check_rules(topo, c, out)
    assert planner_key(topo, out) == best


def test_real_a30_14b_uses_the_nvlink_pairs():
    # topo_03: NV4 pairs 0-1 (NUMA 0) and 2-3 (NUMA 1), SYS between; 14B needs TP=2 on 24 GiB
    # (TP=1: 34.5 GiB > 21.6 GiB), so one replica per NVLink pair.
    out = plan(real_topology("public/topo_03_a30_4gpu_nv4_pairs_cross_socket.txt"), "Qwen2.5-14B-Instruct",
               "auto", host="a30x4")
    assert [(i["name"], i["gpus"], i["worst_link"], i["cpus"][:2]) for i in out["instances"]] == [
        ("n0-0", [0, 1], "NV4", [0, 1]), ("n1-0", [2, 3], "NV4", [24, 25])]


def test_real_a6000_pairs_72b_on_8_gpus():
    # topo_02: 8x A6000 48 GiB, NV4 pairs, GPUs 0-3 NUMA 0, 4-7 NUMA 1. 72B: TP=4 needs
    # 33.9 + 2.5 + 1 = 37.4 GiB <= 43.2 GiB; TP=2 needs 73.7 > 43.2. So one TP=4 per NUMA node.
    out = plan(real_topology("public/topo_02_a6000_8gpu_nvlink_bridge_pairs.txt"), "Qwen2.5-72B-Instruct",
               "auto", host="a6000x8")
    assert [(i["gpus"], i["tensor_parallel_size"], i["numa_node"]) for i in out["instances"]] == [
        ([0, 1, 2, 3], 4, 0), ([4, 5, 6, 7], 4, 1)]
    assert "custom all-reduce" in out["explanation"]


def test_real_h200_capture_plans_7b():
    out = plan(real_topology("h200_vm/topo_m.out"), "Qwen2.5-7B-Instruct", "auto", host="h200-vm")
    assert [(i["name"], i["gpus"], i["cpus"]) for i in out["instances"]] == [("n0-0", [0], list(range(16)))]


def test_real_h100_numa_per_gpu_forces_pipeline_for_72b():
    # topo_13: 4x H100 all NV6, but every GPU on its own NUMA node (3, 1, 7, 5): no TP group of two
    # GPUs stays inside one node, so 72B (TP=1 PP=2: 73.7 GiB > 72.0) runs as TP=1 x PP=3 on the
    # lowest three GPUs, stages crossing NUMA nodes.
    out = plan(real_topology("public/topo_13_h100_4gpu_nv6_numa_3175_strided_cpus.txt"), "Qwen2.5-72B-Instruct",
               "auto", host="h100x4")
    assert [(i["name"], i["gpus"], i["tensor_parallel_size"], i["pipeline_parallel_size"], i["numa_node"])
            for i in out["instances"]] == [("nx-0", [0, 1, 2], 1, 3, None)]
    assert "Pipeline stages cross NUMA nodes" in out["explanation"]


def test_large_host_falls_back_to_greedy_and_says_so():
    # 16 GPUs with unknown NUMA, NVLink pairs: the exact search is too big for TP=4 groups.
    n = 16
    topo = {"available": True,
            "gpus": [{"index": i, "memory_total_mib": 24576, "numa_node": None, "cpu_affinity": [i],
                      "healthy": True, "mig_mode": None} for i in range(n)],
            "links": [["X" if a == b else ("NV4" if a // 2 == b // 2 else "SYS") for b in range(n)] for a in range(n)]}
    out = plan(topo, "Qwen2.5-32B-Instruct", "auto", host="big")  # TP=4: 18.3 GiB <= 21.6
    check_rules(topo, cfg("Qwen2.5-32B-Instruct"), out)
    assert len(out["instances"]) == 4
    assert "chosen greedily" in out["explanation"]


def test_real_h200x2_72b_takes_the_nv18_pair():
    # h200x2_nvlink: two H200 (143771 MiB, query_gpu.out) joined by NV18, both NUMA 0. 72B at TP=1:
    # 135.4 GiB weights + 10.0 GiB KV (80 layers x 8 KV heads x 128 x 2 x 2 B x 32768) + 1 > 126.4 GiB;
    # TP=2: 67.7 + 5.0 + 1 = 73.7 GiB fits: one replica over the NVLink pair.
    out = plan(real_topology("h200x2_nvlink/topo_m.out"), "Qwen2.5-72B-Instruct", "auto", host="h200x2")
    assert [(i["name"], i["gpus"], i["tensor_parallel_size"], i["worst_link"], i["link_class"])
            for i in out["instances"]] == [("n0-0", [0, 1], 2, "NV18", "nvlink")]


def test_real_h200x2_7b_two_single_gpu_replicas_report_no_link():
    out = plan(real_topology("h200x2_nvlink/topo_m.out"), "Qwen2.5-7B-Instruct", "auto", host="h200x2")
    assert [(i["gpus"], i["worst_link"], i["link_class"]) for i in out["instances"]] == [
        ([0], None, "self"), ([1], None, "self")]
    assert " (X)" not in out["explanation"]


# ---------------------------------------------------------------------------------------------
# degraded layout: the best plan on at most N GPUs


def brute_force_at_most(topo, c, max_gpus):
    """Best brute-force key over every subset of max_gpus usable GPUs (or all, when fewer)."""
    import itertools
    usable = [g["index"] for g in topo["gpus"] if g["healthy"] and g["mig_mode"] != "Enabled"]
    keys = [brute_force(topo, c, only=set(sub)) for sub in itertools.combinations(usable, min(max_gpus, len(usable)))]
    keys = [k for k in keys if k is not None]
    return min(keys) if keys else None


DEGRADED_CASES = [("a100x6_2numa", m) for m in MODEL_NAMES] + [
    ("a100x6_40gb", "Qwen2.5-32B-Instruct"), ("pcie5_gpu0_alone_24gb", "Qwen2.5-14B-Instruct"),
    ("a100x6_gpu1_unhealthy", "Qwen2.5-7B-Instruct")]


@pytest.mark.parametrize("profile,model", DEGRADED_CASES)
def test_degraded_auto_matches_brute_force_on_at_most_four_gpus(profile, model):
    topo = PROFILES[profile]()
    c = cfg(model)
    best = brute_force_at_most(topo, c, 4)
    if best is None:
        with pytest.raises(LayoutError):
            plan_layout(topo, c, "auto", host=profile, model_name=model, max_gpus=4)
        return
    out = plan_layout(topo, c, "auto", host=profile, model_name=model, max_gpus=4)
    check_rules(topo, c, out)
    assert sum(len(i["gpus"]) for i in out["instances"]) <= 4
    assert planner_key(topo, out) == best


def test_degraded_7b_on_a100x6_is_four_single_gpus_lowest_first():
    out = plan(a100x6(), "Qwen2.5-7B-Instruct", "auto", max_gpus=4)
    assert [i["gpus"] for i in out["instances"]] == [[0], [1], [2], [3]]
    assert out["gpus_unused"] == [4, 5]
    assert out["explanation"].startswith("Best layout on at most 4 of the 6 usable GPUs")


def test_degraded_32b_on_a100x6_40gb_keeps_both_nvlink_pairs():
    out = plan(a100x6(mem=40960), "Qwen2.5-32B-Instruct", "auto", max_gpus=4)
    assert [(i["gpus"], i["worst_link"]) for i in out["instances"]] == [([0, 1], "NV12"), ([4, 5], "NV12")]


def test_degraded_72b_needs_more_than_two_gpus():
    # 72B on 80 GB A100s needs 3 GPUs per replica (TP=1 x PP=3, see the brute-force guard): with at most
    # 2 GPUs nothing fits, and the message says so.
    msg = errmsg(a100x6(), "Qwen2.5-72B-Instruct", "auto", max_gpus=2)
    assert "no layout of Qwen2.5-72B-Instruct fits on at most 2 of the 6 usable GPUs" in msg


def test_max_gpus_must_be_positive():
    assert "max_gpus must be a positive integer, got 0" in errmsg(a100x6(), "Qwen2.5-7B-Instruct", "auto", max_gpus=0)
