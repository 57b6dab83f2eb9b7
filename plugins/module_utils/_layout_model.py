# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O.
"""Model figures for the layout planner: what a config.json says a model needs per GPU.

Rules (vLLM 0.6.x, Qwen2 family; see docs in the module ``vllm_layout``):

* ``tensor_parallel_size`` (TP) divides ``num_attention_heads``; KV heads: ``kv % tp == 0`` when
  ``kv >= tp``, else ``tp % kv == 0`` (KV heads are replicated). vLLM checks the first rule up
  front (``Total number of attention heads (28) must be divisible by tensor parallel size (3).``)
  and the second as an assertion inside the workers (``vllm/model_executor/models/qwen2.py``).
* memory per GPU: weights/(TP*PP) + KV cache of ONE sequence of ``max_model_len`` tokens
  + 1 GiB activation/CUDA-graph reserve.

``LayoutError`` is the error of the whole planner (``_layout_search``, ``_layout``); it lives
here, at the bottom of the three.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Any, Dict, List, Optional

MIB = 1024 * 1024
GIB = 1024 * MIB
#: Fixed per-GPU reserve for activations, CUDA graphs and the CUDA context (bytes).
RESERVE_BYTES = 1 * GIB

#: Bytes per parameter for the dtypes config.json uses (``torch_dtype``, newer ``dtype``).
DTYPE_BYTES = {
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float32": 4, "fp32": 4, "float": 4,
}

_REQUIRED_CONFIG_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers",
                         "num_attention_heads", "vocab_size")
#: rope types whose factor vLLM does not multiply into the derived max length
_UNSCALED_ROPE_TYPES = ("su", "longrope", "llama3", "mrope", "default", None)


class LayoutError(Exception):
    """A layout that cannot work (or cannot be planned); the message says why and what would."""


# ----------------------------------------------------------------------------------------------
# Tensor-parallel sizes


def tensor_parallel_violation(tp: int, num_heads: int, num_kv_heads: int,
                              fig: Optional[Dict[str, Any]] = None) -> Optional[str]:
    """Return a sentence naming the broken rule for ``tp``, or None when tp is valid.

    With the model's figures ``fig`` the FP8 block rule is checked too (:func:`fp8_block_violation`)."""
    problems = []
    if num_heads % tp:
        problems.append("%d attention heads are not divisible by %d (vLLM: 'Total number of attention heads "
                        "(%d) must be divisible by tensor parallel size (%d).')" % (num_heads, tp, num_heads, tp))
    if num_kv_heads >= tp:
        if num_kv_heads % tp:
            problems.append("%d KV heads are not divisible by %d (KV rule: kv %% tp == 0 when kv >= tp)"
                            % (num_kv_heads, tp))
    elif tp % num_kv_heads:
        problems.append("%d is not a multiple of the %d KV heads (KV rule: tp %% kv == 0 when tp > kv)"
                        % (tp, num_kv_heads))
    block = fp8_block_violation(fig, tp) if fig else None
    if block:
        problems.append(block)
    return "; ".join(problems) or None


def valid_tensor_parallel_sizes(num_heads: int, num_kv_heads: int, fig: Optional[Dict[str, Any]] = None) -> List[int]:
    """All TP sizes allowed by the attention-head and KV-head rules (and the FP8 block rule with
    ``fig``), ascending."""
    return [tp for tp in range(1, num_heads + 1)
            if tensor_parallel_violation(tp, num_heads, num_kv_heads, fig) is None]


def fp8_block_violation(fig: Dict[str, Any], tp: int) -> Optional[str]:
    """The FP8 block rule of vLLM for a block-quantized model (``quantization_config.weight_block_size``
    [block_n, block_k]): each weight dimension a tensor-parallel rank holds must be a multiple of the
    block - the per-rank share of the MLP's intermediate size (column-parallel gate/up: block_n;
    row-parallel down: block_k) and of the attention heads' width; for MoE experts the per-rank share
    of ``moe_intermediate_size``, unless the release pads expert shards to whole blocks (vLLM 0.32
    on: ``fused_moe/oracle/fp8.py`` ``pad_tp_shard_to_weight_blocks``, when the global sizes are
    block-aligned). vLLM fails at load with "... is not divisible by weight quantization block_n".
    """
    block = fig.get("fp8_block")
    if not block or tp <= 1:
        return None
    block_n, block_k = block
    kv_width = kv_heads_per_gpu(fig["num_key_value_heads"], tp) * fig["head_dim"] * tp
    dims = [("num_attention_heads x head_dim", fig["num_attention_heads"] * fig["head_dim"], False),
            ("KV heads x head_dim per rank", kv_width, False)]
    if fig.get("dense_layers", fig["num_hidden_layers"]):
        dims.append(("intermediate_size", fig["intermediate_size"], False))
    moe = fig.get("moe_intermediate_size")
    if fig.get("num_experts") and moe:
        padded = fig.get("fp8_moe_tp_padding") and moe % block_n == 0 and fig["hidden_size"] % block_n == 0
        if not padded:
            dims.append(("moe_intermediate_size", moe, True))
        if fig.get("shared_expert_intermediate_size"):
            dims.append(("shared_expert_intermediate_size", fig["shared_expert_intermediate_size"], False))
    for name, size, expert in dims:
        share = size // tp
        if size % tp == 0 and share % block_n == 0 and share % block_k == 0:
            continue
        said = ("The output_size of gate's and up's weight = %d is not divisible by weight quantization block_n = %d."
                if expert else "Weight output_partition_size = %d is not divisible by weight quantization block_n = %d.")
        return ("the FP8 block-quantized weights (weight_block_size [%d, %d]) cannot be split %d ways: %s %d / %d = %s "
                "is not a multiple of the block (vLLM: '%s')"
                % (block_n, block_k, tp, name, size, tp, share if size % tp == 0 else "%.1f" % (size / float(tp)),
                   said % (share, block_n)))
    return None


def describe_tp_sizes(valid: List[int], limit: Optional[int] = None) -> str:
    """``"1, 2, 4"`` (the valid sizes up to ``limit``), or ``"none"``."""
    values = [v for v in valid if limit is None or v <= limit]
    return ", ".join(str(v) for v in values) if values else "none"


# ----------------------------------------------------------------------------------------------
# config.json


def _positive_int(cfg, key, required=True):
    value = cfg.get(key)
    if value is None:
        if required:
            raise LayoutError("config.json has no %r" % key)
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LayoutError("config.json key %r must be a positive integer, got %r" % (key, value))
    return value


def _head_dim(cfg, fig):
    head_dim = _positive_int(cfg, "head_dim", required=False)
    if head_dim is not None:
        return head_dim
    if fig["hidden_size"] % fig["num_attention_heads"]:
        raise LayoutError("config.json: hidden_size %d is not divisible by num_attention_heads %d and no head_dim is given"
                          % (fig["hidden_size"], fig["num_attention_heads"]))
    return fig["hidden_size"] // fig["num_attention_heads"]


def _dtype(cfg):
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    if dtype is None:
        raise LayoutError("config.json has no torch_dtype (or dtype); cannot size the weights")
    dtype = str(dtype).replace("torch.", "")
    if dtype not in DTYPE_BYTES:
        raise LayoutError("config.json torch_dtype %r is not one of %s" % (dtype, ", ".join(sorted(DTYPE_BYTES))))
    return dtype


def _max_position(cfg):
    max_pos = _positive_int(cfg, "max_position_embeddings", required=False)
    scaling = cfg.get("rope_scaling")
    if max_pos is not None and isinstance(scaling, dict) and scaling.get("factor"):
        kind = scaling.get("rope_type", scaling.get("type"))
        # vLLM multiplies the derived max length by the factor except for these rope types
        if kind not in _UNSCALED_ROPE_TYPES:
            max_pos = int(max_pos * float(scaling["factor"]))
    return max_pos


def model_figures(model_config: Any) -> Dict[str, Any]:
    """Normalise the figures of a config.json dict that the planner uses.

    Raises LayoutError when a needed key is missing or has a wrong type.
    ``num_key_value_heads`` defaults to ``num_attention_heads`` (transformers' documented default:
    no key = multi-head attention); ``tie_word_embeddings`` defaults to false for ``qwen2``
    (Qwen2Config) and true otherwise (PretrainedConfig); q/k/v projections carry biases for
    ``qwen2`` unless ``attention_bias`` says otherwise.
    """
    if not isinstance(model_config, dict):
        raise LayoutError("model config must be a mapping (config.json contents), got %s" % type(model_config).__name__)
    cfg = model_config
    missing = [k for k in _REQUIRED_CONFIG_KEYS if k not in cfg]
    if missing:
        raise LayoutError("config.json lacks %s (needs %s)" % (", ".join(missing), ", ".join(_REQUIRED_CONFIG_KEYS)))
    fig = dict((key, _positive_int(cfg, key)) for key in _REQUIRED_CONFIG_KEYS)
    kv = _positive_int(cfg, "num_key_value_heads", required=False)
    fig["num_key_value_heads"] = kv if kv is not None else fig["num_attention_heads"]
    fig["head_dim"] = _head_dim(cfg, fig)
    model_type = str(cfg.get("model_type") or "")
    fig["model_type"] = model_type
    tie = cfg.get("tie_word_embeddings")
    fig["tie_word_embeddings"] = bool(tie) if tie is not None else model_type != "qwen2"
    bias = cfg.get("attention_bias")
    fig["qkv_bias"] = bool(bias) if bias is not None else model_type == "qwen2"
    fig["dtype"] = _dtype(cfg)
    fig["dtype_bytes"] = DTYPE_BYTES[fig["dtype"]]
    fig["max_position_embeddings"] = _max_position(cfg)
    fig["qk_norm"] = model_type in _QK_NORM_TYPES
    fig.update(_moe_figures(cfg, fig))
    fig["fp8_block"] = _fp8_block(cfg)
    fig["parameters"] = count_parameters(fig)
    fig["weight_bytes"] = weight_bytes(fig)
    fig["weights_source"] = "parameter formula"
    return fig


#: model types whose attention normalises q and k per head (q_norm, k_norm: head_dim weights each)
_QK_NORM_TYPES = ("qwen3", "qwen3_moe")


#: expert-count keys of mixture-of-experts configs the parameter formula does not model (Mixtral,
#: DeepSeek, ...): such a model is sized only from its safetensors index
_OTHER_MOE_KEYS = ("num_local_experts", "n_routed_experts", "moe_num_experts", "num_experts_per_layer")


def _moe_figures(cfg, fig):
    """MoE figures of Qwen2-MoE / Qwen3-MoE configs: routed experts on every ``decoder_sparse_step``-th
    layer not in ``mlp_only_layers``; dense MLP layers otherwise. Empty for a dense model
    (``num_experts`` absent or 0); ``unmodelled_moe`` names the key of another MoE family."""
    other = [key for key in _OTHER_MOE_KEYS if cfg.get(key)]
    experts = cfg.get("num_experts")
    if experts in (None, 0):
        return {"num_experts": None, "dense_layers": fig["num_hidden_layers"],
                "unmodelled_moe": other[0] if other else None}
    experts = _positive_int(cfg, "num_experts")
    moe = _positive_int(cfg, "moe_intermediate_size")
    step = _positive_int(cfg, "decoder_sparse_step", required=False) or 1
    dense_only = cfg.get("mlp_only_layers") or []
    if not isinstance(dense_only, list) or any(isinstance(i, bool) or not isinstance(i, int) for i in dense_only):
        raise LayoutError("config.json key 'mlp_only_layers' must be a list of layer numbers, got %r" % (dense_only,))
    dense_only = set(dense_only)
    layers = fig["num_hidden_layers"]
    sparse = sum(1 for i in range(layers) if i not in dense_only and (i + 1) % step == 0)
    return {"num_experts": experts, "moe_intermediate_size": moe,
            "num_experts_per_tok": _positive_int(cfg, "num_experts_per_tok", required=False),
            "shared_expert_intermediate_size": _positive_int(cfg, "shared_expert_intermediate_size", required=False) or 0,
            "sparse_layers": sparse, "dense_layers": layers - sparse, "unmodelled_moe": None}


def _fp8_block(cfg):
    """(block_n, block_k) of an FP8 block-quantized checkpoint, else None."""
    quant = cfg.get("quantization_config")
    if not isinstance(quant, dict) or str(quant.get("quant_method", "")).lower() != "fp8":
        return None
    block = quant.get("weight_block_size")
    if not block:
        return None
    if (not isinstance(block, list) or len(block) != 2
            or any(isinstance(b, bool) or not isinstance(b, int) or b < 1 for b in block)):
        raise LayoutError("config.json quantization_config.weight_block_size must be two positive integers, got %r"
                          % (block,))
    return tuple(block)


# ----------------------------------------------------------------------------------------------
# Sizes


def parameter_parts(fig: Dict[str, Any]) -> Dict[str, int]:
    """Parameters of a decoder-only (Qwen2/Qwen3/Llama-shaped, dense or MoE) model by kind.

    ``linear``: the projections vLLM quantizes (q, k, v, o; gate/up/down of dense MLPs and of every
    expert); ``other``: embeddings, untied lm_head, q/k/v biases, norms (two per layer, the final one,
    q_norm/k_norm of Qwen3) and the MoE router - kept in the model's dtype by FP8 checkpoints.
    """
    hidden = fig["hidden_size"]
    q_out = fig["num_attention_heads"] * fig["head_dim"]
    kv_out = fig["num_key_value_heads"] * fig["head_dim"]
    layers = fig["num_hidden_layers"]
    embed = fig["vocab_size"] * hidden
    attention = hidden * q_out + 2 * hidden * kv_out + q_out * hidden
    dense = fig.get("dense_layers", layers)
    sparse = layers - dense
    linear = layers * attention + dense * 3 * hidden * fig["intermediate_size"]
    other = embed + (0 if fig["tie_word_embeddings"] else embed) + hidden
    other += layers * (2 * hidden + (q_out + 2 * kv_out if fig["qkv_bias"] else 0)
                       + (2 * fig["head_dim"] if fig.get("qk_norm") else 0))
    if sparse:
        shared = fig.get("shared_expert_intermediate_size") or 0
        linear += sparse * (fig["num_experts"] * 3 * hidden * fig["moe_intermediate_size"] + 3 * hidden * shared)
        other += sparse * (hidden * fig["num_experts"] + (hidden if shared else 0))
    return {"linear": linear, "other": other}


def count_parameters(fig: Dict[str, Any]) -> int:
    """Parameter count of the model (:func:`parameter_parts` summed)."""
    parts = parameter_parts(fig)
    return parts["linear"] + parts["other"]


def weight_bytes(fig: Dict[str, Any]) -> int:
    """Bytes of all weights: parameters x dtype bytes; for an FP8 block-quantized checkpoint the
    linear weights take 1 byte each plus one float32 scale per block (``weight_scale_inv``)."""
    parts = parameter_parts(fig)
    if not fig.get("fp8_block"):
        return (parts["linear"] + parts["other"]) * fig["dtype_bytes"]
    block_n, block_k = fig["fp8_block"]
    return parts["linear"] + parts["linear"] // (block_n * block_k) * 4 + parts["other"] * fig["dtype_bytes"]


def kv_heads_per_gpu(num_kv_heads: int, tp: int) -> int:
    """KV heads each TP rank holds: kv/tp, or 1 when tp > kv (vLLM replicates KV heads)."""
    return max(num_kv_heads // tp, 1)


def memory_per_gpu(fig: Dict[str, Any], tp: int, pp: int, max_model_len: int) -> Dict[str, float]:
    """Bytes one GPU needs for a TP x PP instance: dict weights, kv_cache, reserve, total."""
    weights = fig["weight_bytes"] / float(tp * pp)
    kv = (2.0 * fig["num_hidden_layers"] * kv_heads_per_gpu(fig["num_key_value_heads"], tp)
          * fig["head_dim"] * fig["dtype_bytes"] * max_model_len / pp)
    return {"weights": weights, "kv_cache": kv, "reserve": float(RESERVE_BYTES),
            "total": weights + kv + RESERVE_BYTES}


def gib(num_bytes: float) -> float:
    return num_bytes / float(GIB)


def fmt_gib(num_bytes: float) -> str:
    return "%.1f GiB" % gib(num_bytes)


def memory_sentence(model_label: str, need: Dict[str, float], tp: int, pp: int, max_model_len: int) -> str:
    """What one GPU of a TP x PP instance holds, as a sentence for explanations and errors."""
    return ("%s needs %s per GPU at tensor_parallel_size=%d, pipeline_parallel_size=%d (weights %s + KV cache "
            "for one %d-token sequence %s + %s reserve)"
            % (model_label, fmt_gib(need["total"]), tp, pp, fmt_gib(need["weights"]), max_model_len,
               fmt_gib(need["kv_cache"]), fmt_gib(need["reserve"])))
