# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Current Qwen models in the planner: the real config.json of Qwen3-8B, Qwen3-30B-A3B and
Qwen3-235B-A22B (MoE) and of an FP8 block-quantized Qwen3 (tests/fixtures/real/hf_configs). Expected
values: the weights' total_size of each model.safetensors.index.json as quoted in public sources
(tests/fixtures/real/hf_configs/PROVENANCE.md), vLLM's FP8 block rule, and the a100x6_2numa host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout import plan_layout
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import (
    LayoutError, model_figures, valid_tensor_parallel_sizes)

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
CONFIGS = os.path.join(ROOT, "tests", "fixtures", "real", "hf_configs")
with open(os.path.join(ROOT, "tests", "unit", "validation", "topology_a100x6_2numa.json")) as _handle:
    A100X6 = json.load(_handle)   # 6 x A100 80GB, two NUMA nodes, NVLink pairs 0-1, 2-3, 4-5


def config(name):
    with open(os.path.join(CONFIGS, name, "config.json")) as handle:
        return json.load(handle)


def plan(name, request="auto", **options):
    return plan_layout(A100X6, config(name), request, host="gpu-sim-a100x6", model_name="Qwen/" + name, **options)


@pytest.mark.parametrize("name, total_size", [
    ("Qwen3-8B", 16381470720),          # dense, q_norm/k_norm, no q/k/v bias
    ("Qwen3-30B-A3B", 61064245248),     # 128 experts of moe_intermediate_size 768 on 48 layers
    ("Qwen3-235B-A22B", 470187269120),  # 128 experts of 1536 on 94 layers
])
def test_parameter_formula_gives_the_safetensors_total(name, total_size):
    fig = model_figures(config(name))
    assert fig["weight_bytes"] == total_size and fig["weights_source"] == "parameter formula"


def test_moe_figures():
    fig = model_figures(config("Qwen3-30B-A3B"))
    assert (fig["num_experts"], fig["num_experts_per_tok"], fig["moe_intermediate_size"]) == (128, 8, 768)
    assert (fig["sparse_layers"], fig["dense_layers"]) == (48, 0)


def test_fp8_weights_are_one_byte_plus_block_scales():
    fp8, bf16 = model_figures(config("Qwen3-30B-A3B-FP8")), model_figures(config("Qwen3-30B-A3B"))
    assert fp8["fp8_block"] == (128, 128) and fp8["parameters"] == bf16["parameters"]
    assert 0.5 < fp8["weight_bytes"] / float(bf16["weight_bytes"]) < 0.52


def test_fp8_block_rule_without_padding_allows_tp_1_and_2_only():
    # moe_intermediate_size 768 / 4 = 192: not a multiple of 128 (the known TP=4 failure of this model)
    fig = model_figures(config("Qwen3-30B-A3B-FP8"))
    assert valid_tensor_parallel_sizes(32, 4, fig) == [1, 2]


def test_fp8_block_rule_with_the_padding_of_vllm_0_32():
    fig = dict(model_figures(config("Qwen3-30B-A3B-FP8")), fp8_moe_tp_padding=True)
    assert valid_tensor_parallel_sizes(32, 4, fig) == [1, 2, 4, 8, 16, 32]


def test_fp8_tp4_refused_at_plan_time_with_the_valid_sizes():
    with pytest.raises(LayoutError) as exc:
        plan("Qwen3-30B-A3B-FP8", [{"gpus": [0, 1, 2, 3], "tensor_parallel_size": 4}])
    text = str(exc.value)
    assert "tensor_parallel_size 4 is invalid for Qwen3-30B-A3B-FP8" in text
    assert "moe_intermediate_size 768 / 4 = 192 is not a multiple of the block" in text
    assert "is not divisible by weight quantization block_n = 128" in text
    assert "valid tensor_parallel_size values for Qwen3-30B-A3B-FP8 (32 attention heads, 4 KV heads): 1, 2" in text


def test_fp8_tp4_is_no_block_problem_where_the_release_pads():
    # only the host's NUMA split (3 GPUs per node) stands against TP=4 then
    with pytest.raises(LayoutError) as exc:
        plan("Qwen3-30B-A3B-FP8", [{"gpus": [0, 1, 2, 3], "tensor_parallel_size": 4}], fp8_moe_tp_padding=True)
    assert "spans NUMA nodes" in str(exc.value) and "block" not in str(exc.value)


def test_30b_a3b_fits_one_a100_per_replica():
    out = plan("Qwen3-30B-A3B")
    assert [i["tensor_parallel_size"] for i in out["instances"]] == [1] * 6
    assert out["model"]["num_experts"] == 128 and out["model"]["weights_gib"] == 56.87


def test_235b_a22b_does_not_fit_six_a100():
    with pytest.raises(LayoutError) as exc:
        plan("Qwen3-235B-A22B")
    assert "no layout fits Qwen3-235B-A22B on 6 usable GPU(s)" in str(exc.value)


def test_weights_from_the_index_replace_the_formula():
    out = plan("Qwen3-8B", weights={"bytes": 16381470720 + 2 * 1024 ** 3, "source": "controller index"})
    assert (out["model"]["weights_gib"], out["model"]["weights_source"]) == (17.26, "controller index")


def test_fp8_block_rule_checks_the_kv_width_per_rank():
    # head_dim 64 with 2 KV heads: at TP=2 each rank holds a 64-wide k and v, not a multiple of 128
    cfg = dict(config("Qwen3-8B"), head_dim=64, num_key_value_heads=2,
               quantization_config={"quant_method": "fp8", "weight_block_size": [128, 128]})
    fig = model_figures(cfg)
    assert 2 not in valid_tensor_parallel_sizes(fig["num_attention_heads"], 2, fig)


def test_num_experts_zero_is_a_dense_model():
    fig = model_figures(dict(config("Qwen3-8B"), num_experts=0))
    assert fig["num_experts"] is None and fig["weight_bytes"] == 16381470720
