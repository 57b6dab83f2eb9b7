# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Known failure signatures in vLLM (and NCCL) logs, each with its fix.

Pure code: ``classify(text)`` returns one entry per signature found, with the count, the first
matching line (1-based) and the fix. Patterns come from real logs (tests/fixtures/real/public/
vllm_*) and the error texts of vLLM 0.6.x, PyTorch and NCCL.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = ["SIGNATURES", "classify"]

# (id, title, regex, fix)
SIGNATURES = [
    ("tp_heads_indivisible", "tensor-parallel size does not divide the attention heads",
     re.compile(r"Total number of attention heads \((\d+)\) must be divisible by tensor parallel size \((\d+)\)"),
     "Choose a tensor_parallel_size that divides num_attention_heads (and fits the KV-head rule): "
     "for Qwen2.5-7B (28 heads, 4 KV heads) TP 1, 2 or 4; use pipeline parallelism or more "
     "instances for the other GPUs. The layout planner (vllm_layout) refuses such layouts up front."),
    # Not "Custom allreduce is disabled because ...": that WARNING precedes a healthy start (vLLM
    # falls back to NCCL; tests/fixtures/real/public/vllm_ok_*).
    ("custom_allreduce_p2p", "custom all-reduce / GPU peer-to-peer access unsupported",
     re.compile(r"peer access is not supported between these two devices|"
                r"custom_all_reduce.*(?:Cuda error|failed)", re.I),
     "The GPUs of the TP group have no P2P path (PCIe across sockets, IOMMU/ACS, VM): keep the "
     "group inside one NVLink island or NUMA node, or pass --disable-custom-all-reduce "
     "(vllm_server_extra_args)."),
    ("nccl_timeout", "NCCL collective timed out / NCCL error",
     re.compile(r"Watchdog caught collective operation timeout|NCCL (?:timeout|communicator was aborted)|"
                r"ncclSystemError|ncclInternalError|ncclUnhandledCudaError|NCCL error", re.I),
     "A rank stalled or a link failed: check nvidia-smi nvlink -s and the kernel log for Xid, "
     "run with NCCL_DEBUG=INFO (vllm_server_environment), check /dev/shm size and that all ranks "
     "see the same NCCL build (VLLM_NCCL_SO_PATH)."),
    ("cuda_oom", "CUDA out of memory",
     re.compile(r"CUDA out of memory|torch\.OutOfMemoryError|OutOfMemoryError: CUDA|"
                r"No available memory for the cache blocks", re.I),
     "Lower vllm_server_gpu_memory_utilization or vllm_server_max_model_len, use a larger TP, "
     "or stop other processes on the GPU (nvidia-smi --query-compute-apps)."),
    ("fp8_block_indivisible", "a weight dimension per tensor-parallel rank is not a multiple of the FP8 quantization block",
     re.compile(r"is not divisible by weight quantization block_[nk] = \d+"),
     "Block-quantized FP8 checkpoints (weight_block_size, e.g. [128, 128]) need every sharded weight "
     "dimension per tensor-parallel rank to be a multiple of the block: for a MoE "
     "moe_intermediate_size / TP (and dense intermediate_size / TP) divisible by 128. Use a smaller "
     "tensor_parallel_size (with pipeline parallelism or more instances), expert parallelism, or "
     "the BF16 checkpoint."),
    ("cuda_system_not_initialized", "CUDA error 802: system not yet initialized (NVSwitch fabric not ready)",
     re.compile(r"Error 802: system not yet initialized|cudaGetDeviceCount returned 802|"
                r"CUDA error: system not yet initialized"),
     "On NVSwitch systems (HGX/DGX) CUDA cannot start until NVIDIA Fabric Manager has trained the "
     "fabric: install nvidia-fabricmanager at exactly the driver's version, `systemctl enable --now "
     "nvidia-fabricmanager`, and wait until `nvidia-smi -q` shows Fabric State Completed for every "
     "GPU (the compliance check fabric_manager)."),
]

# A log that ends in a crash none of the signatures names is reported, never "none found".
_CRASH_RE = re.compile(r"Traceback \(most recent call last\)|^\s*(?:\S+\s+)*?[A-Za-z_.]*(?:Error|Exception): |"
                       r"died unexpectedly|Worker failed|failed to start|Engine core initialization failed|"
                       r"exited with exit code|Fatal Python error|Segmentation fault|core dumped|"
                       r"Failed with result 'oom-kill'|code=killed, status=9/KILL|code=dumped")
# vLLM's own INFO/WARNING/DEBUG lines are not crashes, whatever words they quote
_QUIET_LEVEL_RE = re.compile(r"^\s*(?:\([^)]*\)\s*)?(?:INFO|WARNING|DEBUG)\b")
# A line after the last crash line that shows the server serving: the crash was handled.
_HEALTHY_RE = re.compile(r"Application startup complete|Uvicorn running on|Avg prompt throughput|"
                         r"Processed prompts|\"(?:GET|POST) [^\"]*HTTP/1\.[01]\" \d{3}")
_TAIL = 10


def _unclassified_fatal(lines):
    """The entry for a log that ends in a crash (a traceback, an exception line, a dead worker
    with no serving line after it), else None."""
    last = None
    for number, line in enumerate(lines):
        if _CRASH_RE.search(line) and not _QUIET_LEVEL_RE.match(line):
            last = number
        elif last is not None and _HEALTHY_RE.search(line):
            last = None
    if last is None:
        return None
    tail = [line.rstrip() for line in lines if line.strip()][-_TAIL:]
    return {"id": "unclassified_fatal", "title": "the log ends in a crash no known signature explains",
            "count": 1, "first_line": lines[last].strip(), "line_no": last + 1, "last_lines": tail,
            "fix": "Read the last lines (last_lines) and the traceback above them; run the instance by "
                   "hand with the same environment file to reproduce, and report the message if it is "
                   "a new failure kind."}


def classify(text):
    """Signatures found in ``text``: ``[{"id", "title", "count", "first_line", "line_no", "fix"}]``.

    When none is found but the log ends in a crash (``Traceback``, an ``...Error:`` line, a worker
    that died, with no serving line after it), one ``unclassified_fatal`` entry is returned with the
    last crash line and ``last_lines`` (the log's last 10 non-empty lines).
    """
    found = {}
    lines = (text or "").splitlines()
    for number, line in enumerate(lines, 1):
        for sig_id, title, pattern, fix in SIGNATURES:
            if pattern.search(line):
                entry = found.get(sig_id)
                if entry is None:
                    found[sig_id] = {"id": sig_id, "title": title, "count": 1,
                                     "first_line": line.strip(), "line_no": number, "fix": fix}
                else:
                    entry["count"] += 1
    order = [sig[0] for sig in SIGNATURES]
    result = sorted(found.values(), key=lambda entry: order.index(entry["id"]))
    if not result:
        fatal = _unclassified_fatal(lines)
        if fatal:
            result.append(fatal)
    return result
