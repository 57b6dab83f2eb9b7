# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vLLM layout planner: which GPUs each vLLM instance gets, and why.

Pure code: no Ansible imports, no I/O. Input is the ``gpu_topology`` facts dict (see
``gpu_topology_facts``), a model's ``config.json`` as a dict and the user's request (``'auto'``
or a list of instances); output is the ``vllm_layout`` dict, or ``LayoutError`` whose message
names the host, the rule that failed, the values and the valid alternatives.

Rules (vLLM 0.6.x, Qwen2 family; see docs in the module ``vllm_layout``):

* ``tensor_parallel_size`` (TP) divides ``num_attention_heads``; KV heads: ``kv % tp == 0`` when
  ``kv >= tp``, else ``tp % kv == 0`` (KV heads are replicated). vLLM checks the first rule up
  front (``Total number of attention heads (28) must be divisible by tensor parallel size (3).``)
  and the second as an assertion inside the workers (``vllm/model_executor/models/qwen2.py``).
* ``pipeline_parallel_size`` (PP) <= ``num_hidden_layers`` (uneven splits are allowed).
* an instance holds TP*PP GPUs; its GPU list is PP consecutive TP groups (stage order); every TP
  group lies inside one NUMA node (GPUs with unknown NUMA node do not constrain).
* GPUs exist, are healthy, are in at most one instance, are not in MIG mode unless allowed.
* memory per GPU: weights/(TP*PP) + KV cache of ONE sequence of ``max_model_len`` tokens
  + 1 GiB activation/CUDA-graph reserve <= ``memory_total_mib * gpu_memory_utilization``.
* ports unique and different from the endpoint port.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import re

MIB = 1024 * 1024
GIB = 1024 * MIB
#: Fixed per-GPU reserve for activations, CUDA graphs and the CUDA context (bytes).
RESERVE_BYTES = 1 * GIB

#: Rank of a link class: lower is better. ``unknown`` = no topo -m cell for the pair.
LINK_RANK = {"self": 0, "nvlink": 1, "pix": 2, "pxb": 3, "phb": 4, "node": 5, "sys": 6, "unknown": 7}

#: Bytes per parameter for the dtypes config.json uses (``torch_dtype``, newer ``dtype``).
DTYPE_BYTES = {
    "bfloat16": 2, "bf16": 2, "float16": 2, "fp16": 2, "half": 2,
    "float32": 4, "fp32": 4, "float": 4,
}

INSTANCE_KEYS = ("gpus", "tensor_parallel_size", "pipeline_parallel_size", "port")

#: Above this many search steps the exact search gives way to a greedy choice (noted in the
#: explanation); hosts with up to 8 GPUs stay far below it.
SEARCH_BUDGET = 200000
#: Above this many possible TP groups per NUMA node, only consecutive GPU runs are considered.
GROUP_LIMIT = 20000

_REQUIRED_CONFIG_KEYS = ("hidden_size", "intermediate_size", "num_hidden_layers",
                         "num_attention_heads", "vocab_size")


class LayoutError(Exception):
    """A layout that cannot work (or cannot be planned); the message says why and what would."""


# ----------------------------------------------------------------------------------------------
# model figures


def link_class_of(code):
    """topo -m cell -> link class (``NV12`` -> ``nvlink``, ``SOC`` -> ``sys``, ``X`` -> ``self``)."""
    if code is None:
        return "unknown"
    text = str(code).strip().upper()
    if text == "X":
        return "self"
    if re.match(r"^NV\d+$", text):
        return "nvlink"
    if text == "SOC":
        return "sys"
    low = text.lower()
    if low in LINK_RANK:
        return low
    return "unknown"


def tensor_parallel_violation(tp, num_heads, num_kv_heads):
    """Return a sentence naming the broken rule for ``tp``, or None when tp is valid."""
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
    return "; ".join(problems) or None


def valid_tensor_parallel_sizes(num_heads, num_kv_heads):
    """All TP sizes allowed by the attention-head and KV-head rules, ascending."""
    return [tp for tp in range(1, num_heads + 1) if tensor_parallel_violation(tp, num_heads, num_kv_heads) is None]


def _positive_int(cfg, key, required=True):
    value = cfg.get(key)
    if value is None:
        if required:
            raise LayoutError("config.json has no %r" % key)
        return None
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise LayoutError("config.json key %r must be a positive integer, got %r" % (key, value))
    return value


def model_figures(model_config):
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
    fig = {}
    for key in _REQUIRED_CONFIG_KEYS:
        fig[key] = _positive_int(cfg, key)
    kv = _positive_int(cfg, "num_key_value_heads", required=False)
    fig["num_key_value_heads"] = kv if kv is not None else fig["num_attention_heads"]
    head_dim = _positive_int(cfg, "head_dim", required=False)
    if head_dim is None:
        if fig["hidden_size"] % fig["num_attention_heads"]:
            raise LayoutError("config.json: hidden_size %d is not divisible by num_attention_heads %d and no head_dim is given"
                              % (fig["hidden_size"], fig["num_attention_heads"]))
        head_dim = fig["hidden_size"] // fig["num_attention_heads"]
    fig["head_dim"] = head_dim
    model_type = str(cfg.get("model_type") or "")
    fig["model_type"] = model_type
    tie = cfg.get("tie_word_embeddings")
    fig["tie_word_embeddings"] = bool(tie) if tie is not None else model_type != "qwen2"
    bias = cfg.get("attention_bias")
    fig["qkv_bias"] = bool(bias) if bias is not None else model_type == "qwen2"
    dtype = cfg.get("torch_dtype", cfg.get("dtype"))
    if dtype is None:
        raise LayoutError("config.json has no torch_dtype (or dtype); cannot size the weights")
    dtype = str(dtype).replace("torch.", "")
    if dtype not in DTYPE_BYTES:
        raise LayoutError("config.json torch_dtype %r is not one of %s" % (dtype, ", ".join(sorted(DTYPE_BYTES))))
    fig["dtype"] = dtype
    fig["dtype_bytes"] = DTYPE_BYTES[dtype]
    max_pos = _positive_int(cfg, "max_position_embeddings", required=False)
    scaling = cfg.get("rope_scaling")
    if max_pos is not None and isinstance(scaling, dict) and scaling.get("factor"):
        kind = scaling.get("rope_type", scaling.get("type"))
        # vLLM multiplies the derived max length by the factor except for these rope types
        if kind not in ("su", "longrope", "llama3", "mrope", "default", None):
            max_pos = int(max_pos * float(scaling["factor"]))
    fig["max_position_embeddings"] = max_pos
    fig["parameters"] = count_parameters(fig)
    return fig


def count_parameters(fig):
    """Parameter count of a decoder-only (Qwen2/Llama-shaped) model from its figures.

    Embeddings (+ untied lm_head) + per layer: q, k, v (with biases when ``qkv_bias``), o,
    gate/up/down MLP, two RMSNorms; + final norm.
    """
    hidden = fig["hidden_size"]
    q_out = fig["num_attention_heads"] * fig["head_dim"]
    kv_out = fig["num_key_value_heads"] * fig["head_dim"]
    bias = 1 if fig["qkv_bias"] else 0
    embed = fig["vocab_size"] * hidden
    lm_head = 0 if fig["tie_word_embeddings"] else embed
    per_layer = (hidden * q_out + bias * q_out
                 + 2 * (hidden * kv_out + bias * kv_out)
                 + q_out * hidden
                 + 3 * hidden * fig["intermediate_size"]
                 + 2 * hidden)
    return embed + lm_head + fig["num_hidden_layers"] * per_layer + hidden


def kv_heads_per_gpu(num_kv_heads, tp):
    """KV heads each TP rank holds: kv/tp, or 1 when tp > kv (vLLM replicates KV heads)."""
    return max(num_kv_heads // tp, 1)


def memory_per_gpu(fig, tp, pp, max_model_len):
    """Bytes one GPU needs for a TP x PP instance: dict weights, kv_cache, reserve, total."""
    weights = fig["parameters"] * fig["dtype_bytes"] / float(tp * pp)
    kv = (2.0 * fig["num_hidden_layers"] * kv_heads_per_gpu(fig["num_key_value_heads"], tp)
          * fig["head_dim"] * fig["dtype_bytes"] * max_model_len / pp)
    return {"weights": weights, "kv_cache": kv, "reserve": float(RESERVE_BYTES),
            "total": weights + kv + RESERVE_BYTES}


def _gib(num_bytes):
    return num_bytes / float(GIB)


# ----------------------------------------------------------------------------------------------
# topology view


def _as_int(value):
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
        return int(value)
    raise ValueError(value)


class _Topo(object):
    """Read-only view of gpu_topology facts with the lookups the planner needs."""

    def __init__(self, topology, host):
        if not isinstance(topology, dict):
            raise LayoutError("host %s: topology must be the gpu_topology facts dict, got %s"
                              % (host, type(topology).__name__))
        if not topology.get("available", False):
            raise LayoutError("host %s: GPU topology is not available (%s); fix the GPU driver/nvidia-smi "
                              "before planning vLLM instances" % (host, topology.get("reason") or "no reason given"))
        self.warnings = []
        self.gpus = {}
        for gpu in topology.get("gpus") or []:
            try:
                index = _as_int(gpu.get("index"))
            except (ValueError, AttributeError):
                raise LayoutError("host %s: topology gpu entry without an integer index: %r" % (host, gpu))
            numa = gpu.get("numa_node")
            try:
                numa = None if numa is None or _as_int(numa) < 0 else _as_int(numa)
            except ValueError:
                numa = None
            mem = gpu.get("memory_total_mib")
            try:
                mem = None if mem is None else _as_int(mem)
            except ValueError:
                mem = None
            self.gpus[index] = {
                "index": index,
                "name": gpu.get("name"),
                "healthy": gpu.get("healthy", True) is not False,
                "reason": gpu.get("reason"),
                "mig": str(gpu.get("mig_mode") or "").lower() == "enabled",
                "numa": numa,
                "cpus": sorted(set(int(c) for c in (gpu.get("cpu_affinity") or []))),
                "memory_mib": mem,
            }
        if not self.gpus:
            raise LayoutError("host %s: GPU topology lists no GPUs; nothing to place vLLM instances on" % host)
        self.node_cpus = {}
        for node in topology.get("numa_nodes") or []:
            try:
                self.node_cpus[_as_int(node.get("id"))] = sorted(set(int(c) for c in (node.get("cpus") or [])))
            except (ValueError, AttributeError, TypeError):
                continue
        self.links = topology.get("links") or []
        self.classes = topology.get("link_class") or []
        self.island_of = {}
        islands = topology.get("nvlink_islands")
        if not islands:
            islands = self._islands_from_links()
        for number, island in enumerate(islands):
            for index in island:
                self.island_of[index] = number
        missing = [i for i in sorted(self.gpus) if not self._has_cell(i)]
        if missing and len(self.gpus) > 1:
            self.warnings.append("no topo -m link data for GPU(s) %s: their links count as unknown (worst)"
                                 % ", ".join(str(i) for i in missing))

    def _has_cell(self, index):
        return index < len(self.links) and isinstance(self.links[index], (list, tuple)) and index < len(self.links[index])

    def _islands_from_links(self):
        parent = dict((i, i) for i in self.gpus)

        def find(i):
            while parent[i] != i:
                parent[i] = parent[parent[i]]
                i = parent[i]
            return i
        for a in self.gpus:
            for b in self.gpus:
                if a < b and self.link(a, b)[1] == "nvlink":
                    parent[find(b)] = find(a)
        groups = {}
        for i in sorted(self.gpus):
            groups.setdefault(find(i), []).append(i)
        return sorted(groups.values())

    def link(self, a, b):
        """(raw code, link class) for a GPU pair; ('X', 'self') when a == b."""
        if a == b:
            return "X", "self"
        code = None
        if a < len(self.links) and isinstance(self.links[a], (list, tuple)) and b < len(self.links[a]):
            code = self.links[a][b]
        cls = None
        if a < len(self.classes) and isinstance(self.classes[a], (list, tuple)) and b < len(self.classes[a]):
            cls = self.classes[a][b]
        if cls not in LINK_RANK:
            cls = link_class_of(code)
        if cls == "self":   # an 'X' off the diagonal makes no sense; do not let it look best
            cls = "unknown"
        return (str(code).strip() if code is not None else "?"), cls

    def numa_label(self, index):
        return self.gpus[index]["numa"]


def _link_order(code, cls):
    """Sort key for 'worse' links: higher rank is worse; among NV#, fewer bonded links is worse."""
    bonded = 0
    match = re.match(r"^NV(\d+)$", str(code).upper())
    if match:
        bonded = int(match.group(1))
    return (LINK_RANK[cls], -bonded)


def _worst_pair_link(topo, gpus):
    """Worst link (code, class) among all pairs of ``gpus`` ('X', 'self' for one GPU)."""
    worst = ("X", "self")
    for a, b in itertools.combinations(gpus, 2):
        code, cls = topo.link(a, b)
        if _link_order(code, cls) > _link_order(*worst):
            worst = (code, cls)
    return worst


# ----------------------------------------------------------------------------------------------
# instances


class _Instance(object):
    """One candidate vLLM instance: ordered GPUs = PP consecutive TP groups."""

    __slots__ = ("gpus", "groups", "tp", "pp", "mask", "worst_code", "worst_cls", "worst_rank",
                 "all_rank", "splits", "spans", "numa", "cpus")

    def __init__(self, topo, groups, tp, pp, bit=None):
        self.groups = tuple(tuple(g) for g in groups)
        self.gpus = tuple(i for g in self.groups for i in g)
        self.tp = tp
        self.pp = pp
        self.mask = 0
        if bit is not None:
            for i in self.gpus:
                self.mask |= bit[i]
        worst = ("X", "self")
        splits = 0
        for group in self.groups:
            code, cls = _worst_pair_link(topo, group)
            if _link_order(code, cls) > _link_order(*worst):
                worst = (code, cls)
            if len(set(topo.island_of.get(i, ("solo", i)) for i in group)) > 1:
                splits += 1
        self.worst_code, self.worst_cls = worst
        self.worst_rank = LINK_RANK[self.worst_cls]
        self.all_rank = LINK_RANK[_worst_pair_link(topo, self.gpus)[1]]
        self.splits = splits
        known = set(topo.numa_label(i) for i in self.gpus) - set([None])
        self.spans = 1 if len(known) > 1 else 0
        self.numa = known.pop() if len(known) == 1 else None
        cpus = set()
        for i in self.gpus:
            cpus.update(topo.gpus[i]["cpus"])
        if not cpus:
            for node in known:
                cpus.update(topo.node_cpus.get(node, []))
        self.cpus = sorted(cpus)


def _group_in_one_numa(topo, gpus):
    return len(set(topo.numa_label(i) for i in gpus) - set([None])) <= 1


def _merge(vec_a, vec_b):
    return tuple(sorted(vec_a + vec_b, reverse=True))


class _TooBig(Exception):
    pass


def _tp_groups(topo, usable, tp, fits):
    """All TP groups (sorted GPU tuples) inside one NUMA node whose GPUs have the memory."""
    by_node = {}
    for i in usable:
        by_node.setdefault(topo.numa_label(i), []).append(i)
    unknown = by_node.pop(None, [])
    pools = []
    if by_node:
        for node in sorted(by_node):
            pools.append(sorted(by_node[node] + unknown))
    else:
        pools.append(sorted(unknown))
    groups = set()
    limited = False
    for pool in pools:
        if len(pool) < tp:
            continue
        if _n_choose_k(len(pool), tp) > GROUP_LIMIT:
            limited = True
            combos = [tuple(pool[s:s + tp]) for s in range(0, len(pool) - tp + 1)]
        else:
            combos = itertools.combinations(pool, tp)
        for combo in combos:
            if fits(combo):
                groups.add(tuple(combo))
    return sorted(groups), limited


def _n_choose_k(n, k):
    if k < 0 or k > n:
        return 0
    result = 1
    for j in range(1, min(k, n - k) + 1):
        result = result * (n - k + j) // j
    return result


def _instance_key(inst):
    return (inst.worst_rank, inst.splits, inst.spans, inst.all_rank, inst.gpus)


def _choose_instances(topo, usable, tp, pp, groups):
    """Best set of disjoint instances of shape tp x pp.

    Order of preference: most instances; then the multiset of per-instance worst TP-group links
    (best worst link first); then fewest TP groups split across NVLink islands; then fewest
    instances spanning NUMA nodes; then the multiset of worst links over all GPU pairs.
    Returns (instances, exact) - exact False when the greedy fallback was used.
    """
    order = sorted(usable)
    bit = dict((i, 1 << n) for n, i in enumerate(order))
    group_masks = [(g, sum(bit[i] for i in g)) for g in groups]
    by_low = {}
    for g, m in group_masks:
        by_low.setdefault(g[0], []).append((g, m))
    cache_inst = {}

    def make(gs):
        key = tuple(gs)
        inst = cache_inst.get(key)
        if inst is None:
            inst = _Instance(topo, gs, tp, pp, bit)
            cache_inst[key] = inst
        return inst

    def instances_with_low(mask, low):
        firsts = [(g, m) for g, m in by_low.get(low, []) if m & mask == m]
        if pp == 1:
            for g, m in firsts:
                yield make([g])
            return
        later = sorted([(g, m) for g, m in group_masks if m & mask == m and g[0] != low], key=lambda x: x[0])

        def extend(chosen, used, start):
            if len(chosen) == pp:
                yield make([group for group, _mask in chosen])
                return
            for n in range(start, len(later)):
                g, m = later[n]
                if m & used:
                    continue
                yield from extend(chosen + [(g, m)], used | m, n + 1)
        for g, m in firsts:
            yield from extend([(g, m)], m, 0)

    steps = [0]
    memo = {}
    empty = (0, (), 0, 0, ())

    def solve(mask):
        if mask in memo:
            return memo[mask]
        if mask == 0:
            return empty, []
        low_bit = mask & -mask
        low = order[low_bit.bit_length() - 1]
        best_key, best = None, None
        for inst in instances_with_low(mask, low):
            steps[0] += 1
            if steps[0] > SEARCH_BUDGET:
                raise _TooBig()
            rest_key, rest = solve(mask & ~inst.mask)
            key = (rest_key[0] - 1, _merge((inst.worst_rank,), rest_key[1]), rest_key[2] + inst.splits,
                   rest_key[3] + inst.spans, _merge((inst.all_rank,), rest_key[4]))
            if best_key is None or key < best_key:
                best_key, best = key, [inst] + rest
        # leaving the lowest GPU unused must be strictly better: ties go to lower GPU indices
        skip_key, skip = solve(mask & ~low_bit)
        if best_key is None or skip_key < best_key:
            best_key, best = skip_key, skip
        memo[mask] = (best_key, best)
        return memo[mask]

    full = sum(bit.values())
    try:
        return solve(full)[1], True
    except _TooBig:
        pass
    # greedy fallback: best TP groups first, then chain them into PP stages per NUMA node
    chosen, used = [], 0
    ranked = sorted([_Instance(topo, [g], tp, 1, bit) for g, _mask in group_masks], key=_instance_key)
    for inst in ranked:
        if inst.mask & used:
            continue
        used |= inst.mask
        chosen.append(inst.groups[0])
    if pp == 1:
        return [make([g]) for g in chosen], False
    chosen.sort(key=lambda g: (topo.numa_label(g[0]) is None, topo.numa_label(g[0]), g))
    result = []
    for start in range(0, len(chosen) - pp + 1, pp):
        result.append(make(sorted(chosen[start:start + pp])))
    return result, False


# ----------------------------------------------------------------------------------------------
# request parsing and checks


def _describe_tp_sizes(valid, limit=None):
    values = [v for v in valid if limit is None or v <= limit]
    return ", ".join(str(v) for v in values) if values else "none"


def _parse_instance(number, raw, errors):
    """Validate one requested instance dict; returns dict or None (errors appended)."""
    where = "instance %d" % number
    if not isinstance(raw, dict):
        errors.append("%s: must be a mapping with gpus, tensor_parallel_size, pipeline_parallel_size, port; got %r"
                      % (where, raw))
        return None
    unknown = sorted(set(raw) - set(INSTANCE_KEYS))
    if unknown:
        errors.append("%s: unknown key(s) %s; allowed keys: %s" % (where, ", ".join(unknown), ", ".join(INSTANCE_KEYS)))
        return None
    gpus = raw.get("gpus")
    if isinstance(gpus, (int, str)) and not isinstance(gpus, bool):
        gpus = [gpus]
    try:
        gpus = [_as_int(g) for g in gpus]
        if not gpus:
            raise ValueError()
    except (TypeError, ValueError):
        errors.append("%s: gpus must be a non-empty list of GPU indices, got %r" % (where, raw.get("gpus")))
        return None
    where = "instance %d (gpus %s)" % (number, gpus)
    out = {"gpus": gpus, "where": where}
    try:
        pp = _as_int(raw.get("pipeline_parallel_size", 1))
        if pp < 1:
            raise ValueError()
    except (TypeError, ValueError):
        errors.append("%s: pipeline_parallel_size must be a positive integer, got %r"
                      % (where, raw.get("pipeline_parallel_size")))
        return None
    if raw.get("tensor_parallel_size") is None:
        if len(gpus) % pp:
            errors.append("%s: %d GPUs cannot form %d pipeline stages; give tensor_parallel_size"
                          % (where, len(gpus), pp))
            return None
        tp = len(gpus) // pp
    else:
        try:
            tp = _as_int(raw.get("tensor_parallel_size"))
            if tp < 1:
                raise ValueError()
        except (TypeError, ValueError):
            errors.append("%s: tensor_parallel_size must be a positive integer, got %r"
                          % (where, raw.get("tensor_parallel_size")))
            return None
    out["tp"], out["pp"] = tp, pp
    port = raw.get("port")
    if port is not None:
        try:
            port = _as_int(port)
            if not 1 <= port <= 65535:
                raise ValueError()
        except (TypeError, ValueError):
            errors.append("%s: port must be an integer 1-65535, got %r" % (where, raw.get("port")))
            return None
    out["port"] = port
    return out


def _fmt_gib(num_bytes):
    return "%.1f GiB" % _gib(num_bytes)


def _memory_sentence(model_label, need, tp, pp, max_model_len):
    return ("%s needs %s per GPU at tensor_parallel_size=%d, pipeline_parallel_size=%d (weights %s + KV cache "
            "for one %d-token sequence %s + %s reserve)"
            % (model_label, _fmt_gib(need["total"]), tp, pp, _fmt_gib(need["weights"]), max_model_len,
               _fmt_gib(need["kv_cache"]), _fmt_gib(need["reserve"])))


def _fmt_gpus(gpus):
    return "[%s]" % ", ".join(str(g) for g in gpus)


# ----------------------------------------------------------------------------------------------
# entry point


def plan_layout(topology, model_config, request, *, host, model_name, model_path=None, base_port=8001,
                endpoint_port=8000, gpu_memory_utilization=0.9, max_model_len=None, allow_mig=False,
                config_source="host", max_gpus=None):
    """Plan vLLM instances for one host; returns the ``vllm_layout`` dict.

    ``topology`` is the ``gpu_topology`` facts dict, ``model_config`` the model's config.json as a
    dict, ``request`` ``'auto'`` or a list of ``{gpus, tensor_parallel_size,
    pipeline_parallel_size, port}`` dicts. ``max_gpus`` (auto only) limits the plan to at most that
    many GPUs (the degraded layout: the best plan over every subset of that size). Raises LayoutError
    (message names host, rule, values, valid alternatives).
    """
    host = host or "localhost"
    topo = _Topo(topology, host)
    try:
        fig = model_figures(model_config)
    except LayoutError as exc:
        raise LayoutError("host %s: model %s: %s" % (host, model_name, exc))
    label = str(model_name).rstrip("/").rsplit("/", 1)[-1] or str(model_name)

    try:
        util = float(gpu_memory_utilization)
    except (TypeError, ValueError):
        util = -1.0
    if not 0.0 < util <= 1.0:
        raise LayoutError("host %s: gpu_memory_utilization must be in (0, 1], got %r" % (host, gpu_memory_utilization))
    for name, value in (("base_port", base_port), ("endpoint_port", endpoint_port)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise LayoutError("host %s: %s must be an integer 1-65535, got %r" % (host, name, value))
    limit = fig["max_position_embeddings"]
    if max_model_len is None:
        if limit is None:
            raise LayoutError("host %s: model %s: config.json has no max_position_embeddings; set max_model_len"
                              % (host, label))
        max_model_len = limit
    else:
        try:
            max_model_len = _as_int(max_model_len)
            if max_model_len < 1:
                raise ValueError()
        except (TypeError, ValueError):
            raise LayoutError("host %s: max_model_len must be a positive integer, got %r" % (host, max_model_len))
        if limit is not None and max_model_len > limit:
            raise LayoutError("host %s: max_model_len %d exceeds the model's maximum of %d tokens "
                              "(max_position_embeddings of %s); use max_model_len <= %d"
                              % (host, max_model_len, limit, label, limit))

    heads, kv = fig["num_attention_heads"], fig["num_key_value_heads"]
    valid_tp = valid_tensor_parallel_sizes(heads, kv)
    ctx = {"topo": topo, "fig": fig, "label": label, "util": util, "max_model_len": max_model_len,
           "allow_mig": allow_mig, "host": host, "valid_tp": valid_tp}
    if max_gpus is not None:
        if isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or max_gpus < 1:
            raise LayoutError("host %s: max_gpus must be a positive integer, got %r" % (host, max_gpus))
        ctx["max_gpus"] = max_gpus

    def budget_bytes(gpus):
        mems = [topo.gpus[i]["memory_mib"] for i in gpus]
        if any(m is None for m in mems):
            return None
        return min(mems) * MIB * util

    ctx["budget_bytes"] = budget_bytes

    if isinstance(request, str) and request.strip().lower() == "auto":
        instances, explanation = _plan_auto(ctx)
        request_out = "auto"
    elif isinstance(request, (list, tuple)):
        instances, explanation = _plan_explicit(ctx, request)
        request_out = list(request)
    else:
        raise LayoutError("host %s: layout must be 'auto' or a list of instances "
                          "({gpus: [...], tensor_parallel_size: N, pipeline_parallel_size: M, port: P}), got %r"
                          % (host, request))

    instances.sort(key=lambda item: item[0].gpus[0])
    out_instances = []
    per_numa = {}
    used_ports = {}
    port_errors = []
    for ordinal, (inst, port) in enumerate(instances):
        counter = per_numa.get(inst.numa, 0)
        per_numa[inst.numa] = counter + 1
        name = "n%s-%d" % ("x" if inst.numa is None else inst.numa, counter)
        explicit_port = port is not None
        if port is None:
            port = base_port + ordinal
        if port == endpoint_port:
            port_errors.append("instance %s (gpus %s): port %d equals endpoint_port %d (the load balancer's port)"
                               % (name, _fmt_gpus(inst.gpus), port, endpoint_port))
        if port in used_ports:
            port_errors.append("instance %s (gpus %s): port %d already used by instance %s%s; every instance needs "
                               "its own port" % (name, _fmt_gpus(inst.gpus), port, used_ports[port],
                                                 "" if explicit_port else " (default base_port + ordinal)"))
        used_ports.setdefault(port, name)
        need = memory_per_gpu(fig, inst.tp, inst.pp, max_model_len)
        out_instances.append({
            "name": name,
            "gpus": list(inst.gpus),
            "cuda_visible_devices": ",".join(str(i) for i in inst.gpus),
            "numa_node": inst.numa,
            "cpus": list(inst.cpus),
            "tensor_parallel_size": inst.tp,
            "pipeline_parallel_size": inst.pp,
            "port": port,
            # one GPU per TP group: no link inside it (null; link_class 'self'), not topo -m's 'X'
            "worst_link": None if inst.worst_cls == "self" else inst.worst_code,
            "link_class": inst.worst_cls,
            "memory_per_gpu_gib": round(_gib(need["total"]), 2),
        })
    if port_errors:
        free = [p for p in range(base_port, base_port + 2 * len(out_instances) + 2)
                if p not in used_ports and p != endpoint_port][:len(out_instances)]
        raise LayoutError("host %s: layout rejected: %s; free ports near base_port %d: %s"
                          % (host, "; ".join(port_errors), base_port, ", ".join(str(p) for p in free)))

    used = set(g for inst in out_instances for g in inst["gpus"])
    unused = [i for i in sorted(topo.gpus) if i not in used]
    weights = fig["parameters"] * fig["dtype_bytes"]
    kv_seq = memory_per_gpu(fig, 1, 1, max_model_len)["kv_cache"]
    notes = list(topo.warnings)
    for i in unused:
        reason = _unusable_reason(topo, i, allow_mig)
        if reason:
            notes.append("GPU %d unused: %s" % (i, reason))
    if notes:
        explanation = explanation + " Notes: " + "; ".join(notes) + "."
    return {
        "host": host,
        "model": {
            "name": model_name,
            "path": model_path,
            "config_source": config_source,
            "num_attention_heads": heads,
            "num_key_value_heads": kv,
            "num_hidden_layers": fig["num_hidden_layers"],
            "hidden_size": fig["hidden_size"],
            "params_billion": round(fig["parameters"] / 1e9, 2),
            "dtype": fig["dtype"],
            "weights_gib": round(_gib(weights), 2),
            "max_model_len": max_model_len,
            "kv_cache_gib_per_sequence": round(_gib(kv_seq), 2),
        },
        "request": request_out,
        "valid_tensor_parallel_sizes": valid_tp,
        "instances": out_instances,
        "gpus_unused": unused,
        "endpoint_port": endpoint_port,
        "explanation": explanation,
    }


def _unusable_reason(topo, index, allow_mig):
    gpu = topo.gpus[index]
    if not gpu["healthy"]:
        return "unhealthy (%s)" % (gpu["reason"] or "no reason given")
    if gpu["mig"] and not allow_mig:
        return "MIG mode enabled (set allow_mig to use it, or disable MIG)"
    return None


def _fits_check(need_bytes, budget_bytes):
    """Predicate: do ``gpus`` each have ``need_bytes`` within the memory budget?"""
    def fits(gpus):
        return need_bytes <= budget_bytes(gpus)
    return fits


def _plan_auto(ctx):
    topo, fig, label, util = ctx["topo"], ctx["fig"], ctx["label"], ctx["util"]
    host, max_len, valid_tp = ctx["host"], ctx["max_model_len"], ctx["valid_tp"]
    usable = [i for i in sorted(topo.gpus) if _unusable_reason(topo, i, ctx["allow_mig"]) is None]
    if not usable:
        reasons = ["GPU %d: %s" % (i, _unusable_reason(topo, i, ctx["allow_mig"])) for i in sorted(topo.gpus)]
        raise LayoutError("host %s: no usable GPU for %s: %s" % (host, label, "; ".join(reasons)))
    no_mem = [i for i in usable if topo.gpus[i]["memory_mib"] is None]
    if no_mem:
        raise LayoutError("host %s: memory_total_mib unknown for GPU(s) %s; cannot check that %s fits"
                          % (host, ", ".join(str(i) for i in no_mem), label))
    max_gpus = ctx.get("max_gpus")
    if not max_gpus or len(usable) <= max_gpus:
        return _plan_auto_on(ctx, usable)
    # At most max_gpus GPUs (the degraded layout): the best plan over every subset of that size,
    # by the same order auto uses (fewest GPUs per replica, most replicas, best worst links),
    # then fewest NVLink-island splits and NUMA spans, then the lowest GPU indices.
    best = None
    errors = []
    for subset in itertools.combinations(usable, max_gpus):
        try:
            chosen, text = _plan_auto_on(ctx, list(subset))
        except LayoutError as exc:
            errors.append(str(exc))
            continue
        insts = [inst for inst, _port in chosen]
        first = insts[0]
        key = (first.pp > 1, first.tp * first.pp, first.pp, -len(insts),
               tuple(sorted((_link_order(i.worst_code, i.worst_cls) for i in insts), reverse=True)),
               sum(i.splits for i in insts), sum(i.spans for i in insts), tuple(sorted(i.gpus for i in insts)))
        if best is None or key < best[0]:
            best = (key, chosen, text, subset)
    if best is None:
        raise LayoutError("host %s: no layout of %s fits on at most %d of the %d usable GPUs: %s"
                          % (host, label, max_gpus, len(usable), errors[0] if errors else "no candidate"))
    _key, chosen, text, subset = best
    return chosen, ("Best layout on at most %d of the %d usable GPUs (chosen subset %s): %s"
                    % (max_gpus, len(usable), _fmt_gpus(subset), text))


def _plan_auto_on(ctx, usable):
    topo, fig, label, util = ctx["topo"], ctx["fig"], ctx["label"], ctx["util"]
    host, max_len, valid_tp = ctx["host"], ctx["max_model_len"], ctx["valid_tp"]
    n = len(usable)
    shapes = [(tp, pp) for tp in valid_tp if tp <= n
              for pp in range(1, min(fig["num_hidden_layers"], n) + 1) if tp * pp <= n]
    shapes.sort(key=lambda s: (s[1] > 1, s[0] * s[1], s[1]))
    node_sizes = {}
    for i in usable:
        node_sizes[topo.numa_label(i)] = node_sizes.get(topo.numa_label(i), 0) + 1
    node_text = ", ".join("%s: %d" % ("NUMA %s" % k if k is not None else "unknown NUMA", v)
                          for k, v in sorted(node_sizes.items(), key=lambda kv_: (kv_[0] is None, kv_[0])))
    biggest = max(topo.gpus[i]["memory_mib"] for i in usable)
    tried = []
    for tp, pp in shapes:
        need = memory_per_gpu(fig, tp, pp, max_len)
        fits = _fits_check(need["total"], ctx["budget_bytes"])
        if need["total"] > biggest * MIB * util:
            tried.append("TP=%d PP=%d needs %s per GPU > %s (%.1f GiB x %.2f)"
                         % (tp, pp, _fmt_gib(need["total"]), _fmt_gib(biggest * MIB * util), biggest / 1024.0, util))
            continue
        groups, limited = _tp_groups(topo, usable, tp, fits)
        if len(groups) == 0:
            tried.append("TP=%d PP=%d: no %d usable GPUs with %s free inside one NUMA node (%s)"
                         % (tp, pp, tp, _fmt_gib(need["total"]), node_text))
            continue
        chosen, exact = _choose_instances(topo, usable, tp, pp, groups)
        if not chosen:
            tried.append("TP=%d PP=%d: not enough disjoint in-NUMA TP groups for %d stages" % (tp, pp, pp))
            continue
        mem_sentence = _memory_sentence(label, need, tp, pp, max_len)
        budgets = sorted(set(topo.gpus[i]["memory_mib"] for g in chosen for i in g.gpus))
        cap = ", ".join("%.0f GiB" % (m / 1024.0) for m in budgets)
        shape = "TP=%d" % tp if pp == 1 else "TP=%d x PP=%d" % (tp, pp)
        text = ("%s; fits on %d GPU%s (%s at %.2f): %d replica%s of %s on GPUs %s."
                % (mem_sentence, tp * pp, "" if tp * pp == 1 else "s", cap, util, len(chosen),
                   "" if len(chosen) == 1 else "s", shape,
                   ", ".join(_fmt_gpus(g.gpus) + (" (%s)" % g.worst_code if tp > 1 else "") for g in chosen)))
        if tried:
            text += " Tried first: " + "; ".join(tried) + "."
        invalid = [t for t in range(2, n + 1) if t not in valid_tp]
        if invalid and tp * pp > 1:
            text += (" tensor_parallel_size %s excluded: %d attention heads / %d KV heads allow only %s."
                     % (", ".join(str(t) for t in invalid), fig["num_attention_heads"], fig["num_key_value_heads"],
                        _describe_tp_sizes(valid_tp, n)))
        if pp > 1 and any(g.spans for g in chosen):
            text += " Pipeline stages cross NUMA nodes (TP groups stay inside one)."
        if limited:
            text += " Many GPUs per NUMA node: only consecutive GPU runs were considered as TP groups."
        if not exact:
            text += " Search too large for an exact optimum: TP groups were chosen greedily by link class."
        pcie = [g for g in chosen for grp in g.groups if len(grp) > 2
                and any(topo.link(a, b)[1] != "nvlink" for a, b in itertools.combinations(grp, 2))]
        if pcie:
            text += " vLLM disables its custom all-reduce for TP groups of more than two GPUs not all joined by NVLink."
        return [(inst, None) for inst in chosen], text
    invalid = [t for t in range(2, n + 1) if t not in valid_tp]
    raise LayoutError("host %s: no layout fits %s on %d usable GPU(s) (%s) at gpu_memory_utilization %.2f with "
                      "max_model_len %d; tried: %s%s. Options: more/larger GPUs, a smaller max_model_len, or a "
                      "quantized model."
                      % (host, label, n, node_text, util, max_len, "; ".join(tried) or "nothing (no valid shape)",
                         (" (tensor_parallel_size %s invalid for %d attention heads / %d KV heads)"
                          % (", ".join(str(t) for t in invalid), fig["num_attention_heads"],
                             fig["num_key_value_heads"])) if invalid else ""))


def _plan_explicit(ctx, request):
    topo, fig, label, util = ctx["topo"], ctx["fig"], ctx["label"], ctx["util"]
    host, max_len, valid_tp = ctx["host"], ctx["max_model_len"], ctx["valid_tp"]
    heads, kv, layers = fig["num_attention_heads"], fig["num_key_value_heads"], fig["num_hidden_layers"]
    errors = []
    if not request:
        raise LayoutError("host %s: layout is an empty list; give at least one instance or use 'auto'" % host)
    usable = [i for i in sorted(topo.gpus) if _unusable_reason(topo, i, ctx["allow_mig"]) is None]
    parsed = []
    for number, raw in enumerate(request):
        item = _parse_instance(number, raw, errors)
        if item is not None:
            parsed.append(item)
    owner = {}
    result = []
    notes = []
    for item in parsed:
        where, gpus, tp, pp = item["where"], item["gpus"], item["tp"], item["pp"]
        bad = False
        why = tensor_parallel_violation(tp, heads, kv)
        if why:
            errors.append("%s: tensor_parallel_size %d is invalid for %s: %s; valid tensor_parallel_size values "
                          "for %s (%d attention heads, %d KV heads): %s (with the %d usable GPUs here: %s)"
                          % (where, tp, label, why, label, heads, kv, _describe_tp_sizes(valid_tp), len(usable),
                             _describe_tp_sizes(valid_tp, len(usable))))
            bad = True
        if pp > layers:
            errors.append("%s: pipeline_parallel_size %d exceeds the %d hidden layers of %s; use 1..%d"
                          % (where, pp, layers, label, layers))
            bad = True
        if len(gpus) != tp * pp:
            errors.append("%s: %d GPU(s) given but tensor_parallel_size %d x pipeline_parallel_size %d = %d; "
                          "list exactly %d GPUs or change the sizes" % (where, len(gpus), tp, pp, tp * pp, tp * pp))
            bad = True
        dup = sorted(set(g for g in gpus if gpus.count(g) > 1))
        if dup:
            errors.append("%s: GPU(s) %s listed twice in one instance" % (where, ", ".join(str(g) for g in dup)))
            bad = True
        for g in gpus:
            if g not in topo.gpus:
                errors.append("%s: GPU %d does not exist on this host (GPUs: %s)"
                              % (where, g, ", ".join(str(i) for i in sorted(topo.gpus))))
                bad = True
                continue
            reason = _unusable_reason(topo, g, ctx["allow_mig"])
            if reason:
                errors.append("%s: GPU %d is %s; usable GPUs: %s" % (where, g, reason, _fmt_gpus(usable)))
                bad = True
            if g in owner and owner[g] is not item:
                errors.append("%s: GPU %d is already in %s; a GPU can serve only one instance"
                              % (where, g, owner[g]["where"]))
                bad = True
            owner.setdefault(g, item)
        if bad:
            continue
        groups = [gpus[s * tp:(s + 1) * tp] for s in range(pp)]
        for stage, group in enumerate(groups):
            if not _group_in_one_numa(topo, group):
                nodes = ", ".join("GPU %d: NUMA %s" % (g, topo.numa_label(g)) for g in group)
                errors.append("%s: TP group %s%s spans NUMA nodes (%s); a TP group must stay inside one NUMA node "
                              "(pipeline stages may cross)"
                              % (where, _fmt_gpus(group), " (stage %d)" % stage if pp > 1 else "", nodes))
                bad = True
        need = memory_per_gpu(fig, tp, pp, max_len)
        budget = ctx["budget_bytes"](gpus)
        if budget is None:
            errors.append("%s: memory_total_mib unknown for some of its GPUs; cannot check that %s fits" % (where, label))
            bad = True
        elif need["total"] > budget:
            smallest = min(topo.gpus[g]["memory_mib"] for g in gpus)
            fitting = []
            for t in valid_tp:
                for p in range(1, min(layers, len(usable)) + 1):
                    if t * p <= len(usable) and memory_per_gpu(fig, t, p, max_len)["total"] <= budget:
                        fitting.append((t * p, p, t))
            fitting.sort()
            alt = ", ".join("TP=%d PP=%d" % (t, p) for _count, p, t in fitting[:4]) or "none on this host"
            errors.append("%s: %s, more than %s (%.1f GiB x %.2f gpu_memory_utilization); sizes that fit: %s"
                          % (where, _memory_sentence(label, need, tp, pp, max_len), _fmt_gib(budget),
                             smallest / 1024.0, util, alt))
            bad = True
        if bad:
            continue
        inst = _Instance(topo, groups, tp, pp)
        if inst.splits:
            notes.append("%s: a TP group is not inside one NVLink island (worst link %s)"
                         % (item["where"], inst.worst_code))
        for group in groups:
            if len(group) > 2 and any(topo.link(a, b)[1] != "nvlink" for a, b in itertools.combinations(group, 2)):
                notes.append("%s: vLLM disables its custom all-reduce for a TP group of more than two GPUs not all "
                             "joined by NVLink" % item["where"])
                break
        result.append((inst, item["port"]))
    if errors:
        raise LayoutError("host %s: layout rejected: %s" % (host, "; ".join(errors)))
    text = ("Explicit layout of %d instance%s accepted for %s: %s."
            % (len(result), "" if len(result) == 1 else "s", label,
               "; ".join("GPUs %s TP=%d PP=%d, %s per GPU, worst link %s"
                         % (_fmt_gpus(inst.gpus), inst.tp, inst.pp,
                            _fmt_gib(memory_per_gpu(fig, inst.tp, inst.pp, max_len)["total"]),
                            "none (one GPU per TP group)" if inst.worst_cls == "self" else inst.worst_code)
                         for inst, _port in sorted(result, key=lambda r: r[0].gpus[0]))))
    if notes:
        text += " Warnings: " + "; ".join(notes) + "."
    return result, text
