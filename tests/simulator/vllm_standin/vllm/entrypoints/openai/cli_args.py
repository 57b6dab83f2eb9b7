# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Command line of ``vllm serve`` as in vLLM 0.6.3.post1 (stand-in, TEST ONLY).

Only flags that exist in vLLM 0.6.3.post1 are accepted, with its names, short forms, choices and
defaults (vllm/entrypoints/openai/cli_args.py and vllm/engine/arg_utils.py of that release); any
other flag is rejected by argparse (exit status 2), as the real parser does. The stand-in acts on
the flags listed in README.md; the others are parsed and ignored.
"""

import argparse
import sys


class FlexibleArgumentParser(argparse.ArgumentParser):
    """argparse that reads ``--foo_bar`` as ``--foo-bar`` (vllm.utils.FlexibleArgumentParser)."""

    def parse_args(self, args=None, namespace=None):
        if args is None:
            args = sys.argv[1:]
        processed = []
        for arg in args:
            if arg.startswith("--"):
                if "=" in arg:
                    key, value = arg.split("=", 1)
                    processed.append(key.replace("_", "-") + "=" + value)
                else:
                    processed.append(arg.replace("_", "-"))
            else:
                processed.append(arg)
        return super(FlexibleArgumentParser, self).parse_args(processed, namespace)


def _nullable_str(value):
    if not value or value == "None":
        return None
    return value


def _bool_flag(value):
    text = str(value).lower()
    if text in ("true", "1", "yes"):
        return True
    if text in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError("expected a boolean, got %r" % value)


def add_engine_args(parser):
    """Engine flags of vLLM 0.6.3 (vllm/engine/arg_utils.py EngineArgs.add_cli_args)."""
    parser.add_argument("--model", type=str, default="facebook/opt-125m",
                        help="Name or path of the huggingface model to use.")
    parser.add_argument("--tokenizer", type=_nullable_str, default=None)
    parser.add_argument("--skip-tokenizer-init", action="store_true")
    parser.add_argument("--revision", type=_nullable_str, default=None)
    parser.add_argument("--code-revision", type=_nullable_str, default=None)
    parser.add_argument("--tokenizer-revision", type=_nullable_str, default=None)
    parser.add_argument("--tokenizer-mode", type=str, default="auto", choices=["auto", "slow", "mistral"])
    parser.add_argument("--trust-remote-code", action="store_true")
    parser.add_argument("--download-dir", type=_nullable_str, default=None)
    parser.add_argument("--load-format", type=str, default="auto",
                        choices=["auto", "pt", "safetensors", "npcache", "dummy", "tensorizer",
                                 "sharded_state", "gguf", "bitsandbytes", "mistral"])
    parser.add_argument("--config-format", type=str, default="auto", choices=["auto", "hf", "mistral"])
    parser.add_argument("--dtype", type=str, default="auto",
                        choices=["auto", "half", "float16", "bfloat16", "float", "float32"])
    parser.add_argument("--kv-cache-dtype", type=str, default="auto",
                        choices=["auto", "fp8", "fp8_e5m2", "fp8_e4m3"])
    parser.add_argument("--quantization-param-path", type=_nullable_str, default=None)
    parser.add_argument("--max-model-len", type=int, default=None)
    parser.add_argument("--guided-decoding-backend", type=str, default="outlines")
    parser.add_argument("--distributed-executor-backend", choices=["ray", "mp"], default=None)
    parser.add_argument("--worker-use-ray", action="store_true")
    parser.add_argument("--pipeline-parallel-size", "-pp", type=int, default=1)
    parser.add_argument("--tensor-parallel-size", "-tp", type=int, default=1)
    parser.add_argument("--max-parallel-loading-workers", type=int, default=None)
    parser.add_argument("--ray-workers-use-nsight", action="store_true")
    parser.add_argument("--block-size", type=int, default=16, choices=[8, 16, 32])
    parser.add_argument("--enable-prefix-caching", action="store_true")
    parser.add_argument("--disable-sliding-window", action="store_true")
    parser.add_argument("--use-v2-block-manager", action="store_true")
    parser.add_argument("--num-lookahead-slots", type=int, default=0)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--swap-space", type=float, default=4)
    parser.add_argument("--cpu-offload-gb", type=float, default=0)
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.90)
    parser.add_argument("--num-gpu-blocks-override", type=int, default=None)
    parser.add_argument("--max-num-batched-tokens", type=int, default=None)
    parser.add_argument("--max-num-seqs", type=int, default=256)
    parser.add_argument("--max-logprobs", type=int, default=20)
    parser.add_argument("--disable-log-stats", action="store_true")
    parser.add_argument("--quantization", "-q", type=_nullable_str, default=None)
    parser.add_argument("--rope-scaling", default=None, type=str)
    parser.add_argument("--rope-theta", default=None, type=float)
    parser.add_argument("--enforce-eager", action="store_true")
    parser.add_argument("--max-context-len-to-capture", type=int, default=None)
    parser.add_argument("--max-seq-len-to-capture", type=int, default=8192)
    parser.add_argument("--disable-custom-all-reduce", action="store_true")
    parser.add_argument("--tokenizer-pool-size", type=int, default=0)
    parser.add_argument("--tokenizer-pool-type", type=str, default="ray")
    parser.add_argument("--tokenizer-pool-extra-config", type=_nullable_str, default=None)
    parser.add_argument("--limit-mm-per-prompt", type=str, default=None)
    parser.add_argument("--mm-processor-kwargs", default=None, type=str)
    parser.add_argument("--enable-lora", action="store_true")
    parser.add_argument("--max-loras", type=int, default=1)
    parser.add_argument("--max-lora-rank", type=int, default=16)
    parser.add_argument("--lora-extra-vocab-size", type=int, default=256)
    parser.add_argument("--lora-dtype", type=str, default="auto", choices=["auto", "float16", "bfloat16"])
    parser.add_argument("--long-lora-scaling-factors", type=_nullable_str, default=None)
    parser.add_argument("--max-cpu-loras", type=int, default=None)
    parser.add_argument("--fully-sharded-loras", action="store_true")
    parser.add_argument("--enable-prompt-adapter", action="store_true")
    parser.add_argument("--max-prompt-adapters", type=int, default=1)
    parser.add_argument("--max-prompt-adapter-token", type=int, default=0)
    parser.add_argument("--device", type=str, default="auto",
                        choices=["auto", "cuda", "neuron", "cpu", "openvino", "tpu", "xpu"])
    parser.add_argument("--num-scheduler-steps", type=int, default=1)
    parser.add_argument("--multi-step-stream-outputs", nargs="?", type=_bool_flag, default=True, const=True)
    parser.add_argument("--scheduler-delay-factor", type=float, default=0.0)
    parser.add_argument("--enable-chunked-prefill", nargs="?", type=_bool_flag, default=None, const=True)
    parser.add_argument("--speculative-model", type=_nullable_str, default=None)
    parser.add_argument("--num-speculative-tokens", type=int, default=None)
    parser.add_argument("--model-loader-extra-config", type=_nullable_str, default=None)
    parser.add_argument("--ignore-patterns", action="append", default=[])
    parser.add_argument("--preemption-mode", type=str, default=None)
    parser.add_argument("--served-model-name", nargs="+", type=str, default=None,
                        help="The model name(s) used in the API.")
    parser.add_argument("--qlora-adapter-name-or-path", type=str, default=None)
    parser.add_argument("--otlp-traces-endpoint", type=str, default=None)
    parser.add_argument("--collect-detailed-traces", type=str, default=None)
    parser.add_argument("--disable-async-output-proc", action="store_true")
    parser.add_argument("--override-neuron-config", type=str, default=None)
    parser.add_argument("--scheduling-policy", choices=["fcfs", "priority"], default="fcfs")
    return parser


def make_arg_parser(parser):
    """Frontend flags of vLLM 0.6.3 (vllm/entrypoints/openai/cli_args.py), then the engine flags."""
    parser.add_argument("--host", type=_nullable_str, default=None, help="host name")
    parser.add_argument("--port", type=int, default=8000, help="port number")
    parser.add_argument("--uvicorn-log-level", type=str, default="info",
                        choices=["debug", "info", "warning", "error", "critical", "trace"])
    parser.add_argument("--allow-credentials", action="store_true")
    parser.add_argument("--allowed-origins", type=str, default=["*"], action="append")
    parser.add_argument("--allowed-methods", type=str, default=["*"], action="append")
    parser.add_argument("--allowed-headers", type=str, default=["*"], action="append")
    parser.add_argument("--api-key", type=_nullable_str, default=None,
                        help="If provided, the server will require this key to be presented in the header.")
    parser.add_argument("--lora-modules", type=str, default=None, nargs="+")
    parser.add_argument("--prompt-adapters", type=str, default=None, nargs="+")
    parser.add_argument("--chat-template", type=_nullable_str, default=None)
    parser.add_argument("--response-role", type=_nullable_str, default="assistant")
    parser.add_argument("--ssl-keyfile", type=_nullable_str, default=None)
    parser.add_argument("--ssl-certfile", type=_nullable_str, default=None)
    parser.add_argument("--ssl-ca-certs", type=_nullable_str, default=None)
    parser.add_argument("--ssl-cert-reqs", type=int, default=0)
    parser.add_argument("--root-path", type=_nullable_str, default=None)
    parser.add_argument("--middleware", type=_nullable_str, action="append", default=[])
    parser.add_argument("--return-tokens-as-token-ids", action="store_true")
    parser.add_argument("--disable-frontend-multiprocessing", action="store_true")
    parser.add_argument("--enable-auto-tool-choice", action="store_true", default=False)
    parser.add_argument("--tool-call-parser", type=str, default=None)
    parser.add_argument("--tool-parser-plugin", type=str, default="")
    parser.add_argument("--disable-log-requests", action="store_true")
    parser.add_argument("--max-log-len", type=int, default=None)
    parser.add_argument("--disable-fastapi-docs", action="store_true", default=False)
    add_engine_args(parser)
    return parser


def validate_parsed_serve_args(args):
    """Checks vLLM 0.6.3 makes right after parsing (cli_args.validate_parsed_serve_args)."""
    if args.enable_auto_tool_choice and not args.tool_call_parser:
        raise TypeError("Error: --enable-auto-tool-choice requires --tool-call-parser")
