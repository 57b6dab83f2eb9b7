# -*- coding: utf-8 -*-
# Copyright: (c) 2026, gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the stand-in checks before it "serves" (TEST ONLY, not the real vLLM engine).

The checks, their order and their messages follow vLLM 0.6.3.post1:
``EngineArgs.create_engine_config`` (ModelConfig, CacheConfig, ``verify_with_parallel_config``),
then the multiprocessing GPU executor's device count asserts, then the KV-head assert that fires
inside the workers (``QKVParallelLinear``). Failures are raised as the same exception types, so
the process dies with a traceback and exit status 1, as the real one does.
"""

import json
import os
import subprocess
import time

from vllm.logger import init_logger

logger = init_logger("vllm.engine_standin")

_HF_OFFLINE_HINT = ("Checkout your internet connection or see how to run the library in offline "
                    "mode at 'https://huggingface.co/docs/transformers/installation#offline-mode'.")


def load_model_config(model):
    """Read MODEL/config.json (the stand-in never downloads anything)."""
    path = os.path.join(model, "config.json")
    if not os.path.isfile(path):
        # transformers' message when neither the hub nor a local directory has the file
        raise OSError(
            "We couldn't connect to 'https://huggingface.co' to load this file, couldn't find it "
            "in the cached files and it looks like %s is not the path to a directory containing a "
            "file named config.json.\n%s" % (model, _HF_OFFLINE_HINT))
    with open(path, "r") as handle:
        config = json.load(handle)
    if not isinstance(config, dict):
        raise ValueError("%s is not a JSON object" % path)
    return config


def derived_max_model_len(config):
    """The max_model_len vLLM derives from config.json (first key found wins)."""
    for key in ("max_position_embeddings", "n_positions", "max_seq_len", "seq_length",
                "model_max_length", "max_sequence_length", "max_seq_length", "seq_len"):
        if isinstance(config.get(key), int):
            return key, config[key]
    return None, 2048


def estimate_params(config):
    """Parameter count of a decoder-only transformer from config.json (Qwen2/Llama layout)."""
    hidden = int(config.get("hidden_size", 0))
    layers = int(config.get("num_hidden_layers", 0))
    heads = int(config.get("num_attention_heads", 1)) or 1
    kv_heads = int(config.get("num_key_value_heads", heads)) or heads
    inter = int(config.get("intermediate_size", 4 * hidden))
    vocab = int(config.get("vocab_size", 0))
    head_dim = int(config.get("head_dim", hidden // heads if heads else 0))
    attn = 2 * hidden * heads * head_dim + 2 * hidden * kv_heads * head_dim
    mlp = 3 * hidden * inter
    embed = vocab * hidden * (1 if config.get("tie_word_embeddings") else 2)
    return layers * (attn + mlp) + embed


def parse_smi_list(text):
    """GPUs from ``nvidia-smi -L``: [{"index": 0, "name": ..., "uuid": ...}] (MIG lines skipped)."""
    gpus = []
    for line in text.splitlines():
        if not line.startswith("GPU "):
            continue
        head, _colon, rest = line.partition(":")
        try:
            index = int(head.split()[1])
        except (IndexError, ValueError):
            continue
        name = rest.strip()
        uuid = ""
        marker = "(UUID: "
        if marker in name:
            name, _marker, tail = name.partition(marker)
            uuid = tail.rstrip(")").strip()
            name = name.strip()
        gpus.append({"index": index, "name": name, "uuid": uuid})
    return gpus


def filter_visible(gpus, cuda_visible_devices):
    """Apply CUDA_VISIBLE_DEVICES the way the CUDA runtime does.

    Unset -> every GPU. Entries are indices or (prefixes of) ``GPU-`` UUIDs; enumeration stops at
    the first entry that matches no GPU (so "" or "-1" hides all GPUs); a GPU listed twice is
    invalid too.
    """
    if cuda_visible_devices is None:
        return list(gpus)
    visible = []
    for entry in cuda_visible_devices.split(","):
        entry = entry.strip()
        match = None
        if entry.isdigit():
            for gpu in gpus:
                if gpu["index"] == int(entry):
                    match = gpu
        elif entry.startswith("GPU-") or entry.startswith("MIG-"):
            found = [gpu for gpu in gpus if gpu["uuid"].startswith(entry)]
            if len(found) == 1:
                match = found[0]
        if match is None or match in visible:
            break
        visible.append(match)
    return visible


def discover_gpus(env=None):
    """GPUs this process may use: ``nvidia-smi -L`` filtered by CUDA_VISIBLE_DEVICES."""
    env = os.environ if env is None else env
    try:
        proc = subprocess.run(["nvidia-smi", "-L"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              universal_newlines=True, timeout=30, check=False)
    except OSError as exc:
        logger.warning("gpu-sim: cannot run nvidia-smi -L (%s): no GPU visible", exc)
        return [], []
    if proc.returncode != 0:
        logger.warning("gpu-sim: nvidia-smi -L exited %d: %s", proc.returncode, proc.stdout.strip())
        return [], []
    gpus = parse_smi_list(proc.stdout)
    return gpus, filter_visible(gpus, env.get("CUDA_VISIBLE_DEVICES"))


def check_config(args, config, env=None):
    """Config-time checks of vLLM 0.6.3 (EngineArgs.create_engine_config), in its order."""
    env = os.environ if env is None else env
    key, derived = derived_max_model_len(config)
    max_model_len = derived
    if args.max_model_len is not None:
        if args.max_model_len > derived and env.get("VLLM_ALLOW_LONG_MAX_MODEL_LEN") != "1":
            raise ValueError(
                "User-specified max_model_len (%d) is greater than the derived max_model_len "
                "(%s=%s or model_max_length=None in model's config.json). This may lead to "
                "incorrect model outputs or CUDA errors. To allow overriding this maximum, set the "
                "env var VLLM_ALLOW_LONG_MAX_MODEL_LEN=1" % (args.max_model_len, key, derived))
        max_model_len = args.max_model_len
    if args.gpu_memory_utilization > 1.0:
        raise ValueError("GPU memory utilization must be less than 1.0. Got %s."
                         % args.gpu_memory_utilization)
    heads = int(config.get("num_attention_heads", 1))
    tp = args.tensor_parallel_size
    if heads % tp != 0:
        raise ValueError("Total number of attention heads (%d) must be divisible by tensor "
                         "parallel size (%d)." % (heads, tp))
    return max_model_len


def check_devices(args, visible):
    """Executor-time checks: enough visible GPUs for TP and TP x PP (multiproc_gpu_executor)."""
    tp = args.tensor_parallel_size
    world_size = tp * args.pipeline_parallel_size
    count = len(visible)
    if count == 0:
        raise RuntimeError("No CUDA GPUs are available")
    if world_size > 1:
        # vLLM's own comment: "Use confusing message for more common TP-only case."
        # (explicit raises: the checks must hold under ``python -O`` too)
        if tp > count:
            raise AssertionError("please set tensor_parallel_size (%d) to less than max local "
                                 "gpu count (%d)" % (tp, count))
        if world_size > count:
            raise AssertionError("please ensure that world_size (%d) is less than than max "
                                 "local gpu count (%d)" % (world_size, count))


def check_kv_heads(args, config):
    """The late KV-head check of QKVParallelLinear: a bare AssertionError, as in vLLM."""
    tp = args.tensor_parallel_size
    kv_heads = int(config.get("num_key_value_heads", config.get("num_attention_heads", 1)))
    if tp >= kv_heads:
        if tp % kv_heads != 0:
            raise AssertionError()
    elif kv_heads % tp != 0:
        raise AssertionError()


# --- GPU claim ledger (simulator addition; real vLLM has none) ----------------------------------
# A real vLLM process holds its GPUs' memory from model load to exit; two servers on one GPU
# fight over it (OOM or a hang). The stand-in records its claims so that tests can prove a
# deployment never has two servers on one GPU at the same time:
#   $GPU_SIM_CLAIMS_DIR (default /dev/shm/gpu-sim-claims: writable under ProtectSystem=strict, like
#   the CUDA IPC files in /dev/shm)/gpu<N>   holds the pid of the process that claimed GPU N;
#   .../claims.jsonl   one JSON line per event: claim, conflict (the GPU's holder is still alive),
#                      release (clean exit).
CLAIMS_DIR = "/dev/shm/gpu-sim-claims"


def _claims_dir(env=None):
    env = os.environ if env is None else env
    path = env.get("GPU_SIM_CLAIMS_DIR") or CLAIMS_DIR
    try:
        if not os.path.isdir(path):
            os.makedirs(path)
            os.chmod(path, 0o1777)
    except OSError:
        pass
    return path


def _pid_alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _ledger(path, record):
    try:
        with open(os.path.join(path, "claims.jsonl"), "a") as handle:
            handle.write(json.dumps(record, sort_keys=True) + "\n")
    except OSError as exc:
        logger.warning("gpu-sim: cannot write the GPU claim ledger in %s: %s", path, exc)


def claim_gpus(visible, port, env=None):
    """Record that this process now holds ``visible`` GPUs; note any GPU still held by a live process."""
    path = _claims_dir(env)
    pid = os.getpid()
    indices = [g["index"] for g in visible]
    for index in indices:
        holder_file = os.path.join(path, "gpu%d" % index)
        holder = None
        try:
            with open(holder_file) as handle:
                holder = int(handle.read().strip() or 0)
        except (OSError, ValueError):
            holder = None
        if holder and holder != pid and _pid_alive(holder):
            logger.warning("gpu-sim: GPU %d is still held by live process %d: two servers on one GPU", index, holder)
            _ledger(path, {"time": time.time(), "event": "conflict", "pid": pid, "port": port, "gpu": index,
                           "holder": holder})
        try:
            tmp = "%s.%d" % (holder_file, pid)
            with open(tmp, "w") as handle:
                handle.write("%d\n" % pid)
            os.chmod(tmp, 0o666)
            os.rename(tmp, holder_file)
        except OSError as exc:
            logger.warning("gpu-sim: cannot record the claim of GPU %d: %s", index, exc)
    _ledger(path, {"time": time.time(), "event": "claim", "pid": pid, "port": port, "gpus": indices})
    return indices


def release_gpus(indices, port, env=None):
    """Drop this process's claims (clean exit)."""
    path = _claims_dir(env)
    pid = os.getpid()
    for index in indices:
        holder_file = os.path.join(path, "gpu%d" % index)
        try:
            with open(holder_file) as handle:
                if int(handle.read().strip() or 0) == pid:
                    os.remove(holder_file)
        except (OSError, ValueError):
            pass
    _ledger(path, {"time": time.time(), "event": "release", "pid": pid, "port": port, "gpus": list(indices)})
