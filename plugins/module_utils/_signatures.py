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
    ("custom_allreduce_p2p", "custom all-reduce / GPU peer-to-peer access unsupported",
     re.compile(r"peer access is not supported between these two devices|"
                r"Custom allreduce is disabled because|custom_all_reduce.*(?:Cuda error|failed)", re.I),
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
]


def classify(text):
    """Signatures found in ``text``: ``[{"id", "title", "count", "first_line", "line_no", "fix"}]``."""
    found = {}
    for number, line in enumerate((text or "").splitlines(), 1):
        for sig_id, title, pattern, fix in SIGNATURES:
            if pattern.search(line):
                entry = found.get(sig_id)
                if entry is None:
                    found[sig_id] = {"id": sig_id, "title": title, "count": 1,
                                     "first_line": line.strip(), "line_no": number, "fix": fix}
                else:
                    entry["count"] += 1
    order = [sig[0] for sig in SIGNATURES]
    return sorted(found.values(), key=lambda entry: order.index(entry["id"]))
