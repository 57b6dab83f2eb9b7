# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM 0.6.3's NCCL wrapper as far as a deployment can see it (stand-in, TEST ONLY).

What vLLM 0.6.3.post1 does (vllm/distributed/device_communicators/pynccl.py:63 and
pynccl_wrapper.py:225): with a tensor x pipeline parallel group > 1, rank 0 loads the library
of VLLM_NCCL_SO_PATH (else torch's own), binds the functions its wrapper lists, and logs
``vLLM is using nccl==X`` (from ncclGetVersion, 21403 -> 2.14.3). Any failure while loading or
binding disables the communicator silently (``disabled = True``, no line): vLLM carries on with
torch's NCCL. A group of 1 creates no communicator.

The stand-in loads the library for real (ctypes) and binds the two functions the simulator's
libnccl has (ncclGetVersion, ncclGetErrorString), plus those named in
GPU_SIM_VLLM_NCCL_EXTRA_SYMBOLS (TEST ONLY: declares a later release's wrapper, e.g.
``ncclCommWindowRegister,ncclCommWindowDeregister`` of vLLM 0.11-0.29, whose NCCL floor is 2.27).
Without VLLM_NCCL_SO_PATH it looks for torch's bundled copy in its own environment
(site-packages/nvidia/nccl/lib/libnccl.so.2), which the simulator's torch stand-in does not have.
"""

import ctypes
import glob
import os
import sys

from vllm.logger import init_logger

logger = init_logger("vllm.distributed.device_communicators.pynccl")

BOUND = ("ncclGetErrorString", "ncclGetVersion")


def version_string(code):
    """vLLM's own formatting of ncclGetVersion's code (pynccl_wrapper.py): 21403 -> '2.14.3'."""
    text = str(code)
    return "%s.%s.%s" % (text[0].lstrip("0"), text[1:3].lstrip("0"), text[3:].lstrip("0"))


def library_path(env=None):
    env = os.environ if env is None else env
    if env.get("VLLM_NCCL_SO_PATH"):
        return env["VLLM_NCCL_SO_PATH"]
    found = sorted(glob.glob(os.path.join(sys.prefix, "lib", "python3*", "site-packages", "nvidia", "nccl", "lib",
                                          "libnccl.so.2")))
    return found[0] if found else None


def init_communicator(world_size, env=None):
    """The NCCL version in use (logged), or None when there is no communicator (silently)."""
    env = os.environ if env is None else env
    if world_size <= 1:
        return None
    path = library_path(env)
    extra = [name for name in env.get("GPU_SIM_VLLM_NCCL_EXTRA_SYMBOLS", "").split(",") if name]
    try:
        if path is None:
            raise OSError("no torch-bundled libnccl.so.2 in the stand-in's environment")
        lib = ctypes.CDLL(path)
        for name in BOUND + tuple(extra):
            getattr(lib, name)
        code = ctypes.c_int()
        if lib.ncclGetVersion(ctypes.byref(code)) != 0:
            raise RuntimeError("ncclGetVersion failed")
    except Exception:  # vLLM's PyNcclCommunicator: any exception disables it, without a line
        return None
    version = version_string(code.value)
    logger.info("vLLM is using nccl==%s", version)
    return version
