# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
"""vLLM layout planner: which GPUs each vLLM instance gets, and why (the request handling).

Pure code: no Ansible imports, no I/O. Input is the ``gpu_topology`` facts dict (see
``gpu_topology_facts``), a model's ``config.json`` as a dict and the user's request (``'auto'``
or a list of instances); output is the ``vllm_layout`` dict, or ``LayoutError`` whose message
names the host, the rule that failed, the values and the valid alternatives.

The planner is three files: ``_layout_model`` (model figures: parameters, memory per GPU, valid
TP sizes), ``_layout_search`` (the topology view and the exact search over instances) and this
one (checking the request, ``auto`` and explicit plans, naming instances and ports).

Rules (vLLM 0.6.x, Qwen2 family; see docs in the module ``vllm_layout``):

* TP / KV-head rules and memory per GPU: see ``_layout_model``.
* ``pipeline_parallel_size`` (PP) <= ``num_hidden_layers`` (uneven splits are allowed).
* an instance holds TP*PP GPUs; its GPU list is PP consecutive TP groups (stage order); every TP
  group lies inside one NUMA node (GPUs with unknown NUMA node do not constrain).
* GPUs exist, are healthy, are in at most one instance, are not in MIG mode unless allowed.
* memory per GPU <= ``memory_total_mib * gpu_memory_utilization``.
* ports unique and different from the endpoint port.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import (
    MIB,
    LayoutError,
    describe_tp_sizes,
    fmt_gib,
    gib,
    memory_per_gpu,
    memory_sentence,
    model_figures,
    tensor_parallel_violation,
    valid_tensor_parallel_sizes,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_search import (
    Instance,
    TopologyView,
    as_int,
    choose_instances,
    group_in_one_numa,
    tp_groups,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._links import link_order

INSTANCE_KEYS = ("gpus", "tensor_parallel_size", "pipeline_parallel_size", "port")


class PlanContext(NamedTuple):
    """Everything one plan needs, checked: the host's GPUs, the model and the request's limits."""

    host: str
    topo: TopologyView
    fig: Dict[str, Any]      #: model figures (``_layout_model.model_figures``)
    label: str               #: the model's short name, for messages
    util: float              #: gpu_memory_utilization
    max_model_len: int
    allow_mig: bool
    valid_tp: List[int]
    max_gpus: Optional[int]  #: auto only: plan on at most this many GPUs (the degraded layout)

    def budget_bytes(self, gpus: Sequence[int]) -> Optional[float]:
        """Bytes each of ``gpus`` may use (the smallest GPU's share); None if a size is unknown."""
        mems = [self.topo.gpus[i]["memory_mib"] for i in gpus]
        if any(m is None for m in mems):
            return None
        return min(mems) * MIB * self.util

    def usable(self) -> List[int]:
        return [i for i in sorted(self.topo.gpus) if self.topo.unusable_reason(i, self.allow_mig) is None]


def _fmt_gpus(gpus):
    return "[%s]" % ", ".join(str(g) for g in gpus)


# ----------------------------------------------------------------------------------------------
# Requested instances


class _Rejected(Exception):
    """One requested instance is malformed; the message names it, the key and the value."""


def _int_field(raw, key, where, what, default=None, high=None):
    """``raw[key]`` as an int >= 1 (and <= ``high``); _Rejected naming ``what`` otherwise."""
    try:
        value = as_int(raw.get(key, default))
        if value < 1 or (high is not None and value > high):
            raise ValueError()
    except (TypeError, ValueError):
        raise _Rejected("%s: %s must be %s, got %r" % (where, key, what, raw.get(key)))
    return value


def _instance_fields(number, raw):
    where = "instance %d" % number
    if not isinstance(raw, dict):
        raise _Rejected("%s: must be a mapping with gpus, tensor_parallel_size, pipeline_parallel_size, port; "
                        "got %r" % (where, raw))
    unknown = sorted(set(raw) - set(INSTANCE_KEYS))
    if unknown:
        raise _Rejected("%s: unknown key(s) %s; allowed keys: %s"
                        % (where, ", ".join(unknown), ", ".join(INSTANCE_KEYS)))
    gpus = raw.get("gpus")
    if isinstance(gpus, (int, str)) and not isinstance(gpus, bool):
        gpus = [gpus]
    try:
        gpus = [as_int(g) for g in gpus]
        if not gpus:
            raise ValueError()
    except (TypeError, ValueError):
        raise _Rejected("%s: gpus must be a non-empty list of GPU indices, got %r" % (where, raw.get("gpus")))
    where = "instance %d (gpus %s)" % (number, gpus)
    pp = _int_field(raw, "pipeline_parallel_size", where, "a positive integer", default=1)
    if raw.get("tensor_parallel_size") is None:
        if len(gpus) % pp:
            raise _Rejected("%s: %d GPUs cannot form %d pipeline stages; give tensor_parallel_size"
                            % (where, len(gpus), pp))
        tp = len(gpus) // pp
    else:
        tp = _int_field(raw, "tensor_parallel_size", where, "a positive integer")
    port = raw.get("port")
    if port is not None:
        port = _int_field(raw, "port", where, "an integer 1-65535", high=65535)
    return {"gpus": gpus, "where": where, "tp": tp, "pp": pp, "port": port}


def _parse_instance(number, raw, errors):
    """Validate one requested instance dict; returns dict or None (errors appended)."""
    try:
        return _instance_fields(number, raw)
    except _Rejected as exc:
        errors.append(str(exc))
        return None


# ----------------------------------------------------------------------------------------------
# Explicit layouts


def _shape_errors(ctx, item, usable, errors):
    """Append what is wrong with an instance's TP, PP and GPU count; True when anything is."""
    where, gpus, tp, pp = item["where"], item["gpus"], item["tp"], item["pp"]
    heads, kv, layers = ctx.fig["num_attention_heads"], ctx.fig["num_key_value_heads"], ctx.fig["num_hidden_layers"]
    found = []
    why = tensor_parallel_violation(tp, heads, kv, ctx.fig)
    if why:
        found.append("%s: tensor_parallel_size %d is invalid for %s: %s; valid tensor_parallel_size values "
                     "for %s (%d attention heads, %d KV heads): %s (with the %d usable GPUs here: %s)"
                     % (where, tp, ctx.label, why, ctx.label, heads, kv, describe_tp_sizes(ctx.valid_tp),
                        len(usable), describe_tp_sizes(ctx.valid_tp, len(usable))))
    if pp > layers:
        found.append("%s: pipeline_parallel_size %d exceeds the %d hidden layers of %s; use 1..%d"
                     % (where, pp, layers, ctx.label, layers))
    if len(gpus) != tp * pp:
        found.append("%s: %d GPU(s) given but tensor_parallel_size %d x pipeline_parallel_size %d = %d; "
                     "list exactly %d GPUs or change the sizes" % (where, len(gpus), tp, pp, tp * pp, tp * pp))
    dup = sorted(set(g for g in gpus if gpus.count(g) > 1))
    if dup:
        found.append("%s: GPU(s) %s listed twice in one instance" % (where, ", ".join(str(g) for g in dup)))
    errors.extend(found)
    return bool(found)


def _gpu_errors(ctx, item, owner, usable, errors):
    """Append which of an instance's GPUs do not exist, cannot serve or serve another instance."""
    topo, where = ctx.topo, item["where"]
    bad = False
    for g in item["gpus"]:
        if g not in topo.gpus:
            errors.append("%s: GPU %d does not exist on this host (GPUs: %s)"
                          % (where, g, ", ".join(str(i) for i in sorted(topo.gpus))))
            bad = True
            continue
        reason = topo.unusable_reason(g, ctx.allow_mig)
        if reason:
            errors.append("%s: GPU %d is %s; usable GPUs: %s" % (where, g, reason, _fmt_gpus(usable)))
            bad = True
        if g in owner and owner[g] is not item:
            errors.append("%s: GPU %d is already in %s; a GPU can serve only one instance"
                          % (where, g, owner[g]["where"]))
            bad = True
        owner.setdefault(g, item)
    return bad


def _numa_errors(ctx, item, groups, errors):
    bad = False
    for stage, group in enumerate(groups):
        if not group_in_one_numa(ctx.topo, group):
            nodes = ", ".join("GPU %d: NUMA %s" % (g, ctx.topo.numa_label(g)) for g in group)
            errors.append("%s: TP group %s%s spans NUMA nodes (%s); a TP group must stay inside one NUMA node "
                          "(pipeline stages may cross)"
                          % (item["where"], _fmt_gpus(group), " (stage %d)" % stage if item["pp"] > 1 else "", nodes))
            bad = True
    return bad


def _memory_errors(ctx, item, usable, errors):
    """Append why an instance does not fit its GPUs' memory, with the sizes that would."""
    where, gpus, tp, pp = item["where"], item["gpus"], item["tp"], item["pp"]
    need = memory_per_gpu(ctx.fig, tp, pp, ctx.max_model_len)
    budget = ctx.budget_bytes(gpus)
    if budget is None:
        errors.append("%s: memory_total_mib unknown for some of its GPUs; cannot check that %s fits" % (where, ctx.label))
        return True
    if need["total"] <= budget:
        return False
    smallest = min(ctx.topo.gpus[g]["memory_mib"] for g in gpus)
    fitting = []
    for t in ctx.valid_tp:
        for p in range(1, min(ctx.fig["num_hidden_layers"], len(usable)) + 1):
            if t * p <= len(usable) and memory_per_gpu(ctx.fig, t, p, ctx.max_model_len)["total"] <= budget:
                fitting.append((t * p, p, t))
    fitting.sort()
    alt = ", ".join("TP=%d PP=%d" % (t, p) for _count, p, t in fitting[:4]) or "none on this host"
    errors.append("%s: %s, more than %s (%.1f GiB x %.2f gpu_memory_utilization); sizes that fit: %s"
                  % (where, memory_sentence(ctx.label, need, tp, pp, ctx.max_model_len), fmt_gib(budget),
                     smallest / 1024.0, ctx.util, alt))
    return True


def _checked_instance(ctx, item, owner, usable, errors):
    """The Instance of one requested item, or None when it breaks a rule (errors appended)."""
    bad = _shape_errors(ctx, item, usable, errors)
    bad = _gpu_errors(ctx, item, owner, usable, errors) or bad
    if bad:
        return None
    tp, pp = item["tp"], item["pp"]
    groups = [item["gpus"][s * tp:(s + 1) * tp] for s in range(pp)]
    bad = _numa_errors(ctx, item, groups, errors)
    bad = _memory_errors(ctx, item, usable, errors) or bad
    return None if bad else Instance(ctx.topo, groups, tp, pp)


def _instance_warnings(topo, where, inst):
    notes = []
    if inst.splits:
        notes.append("%s: a TP group is not inside one NVLink island (worst link %s)" % (where, inst.worst_code))
    if any(topo.no_custom_allreduce(group) for group in inst.groups):
        notes.append("%s: vLLM disables its custom all-reduce for a TP group of more than two GPUs not all "
                     "joined by NVLink" % where)
    return notes


def _plan_explicit(ctx, request):
    errors = []
    if not request:
        raise LayoutError("host %s: layout is an empty list; give at least one instance or use 'auto'" % ctx.host)
    usable = ctx.usable()
    parsed = [item for item in (_parse_instance(n, raw, errors) for n, raw in enumerate(request)) if item is not None]
    owner, result, notes = {}, [], []
    for item in parsed:
        inst = _checked_instance(ctx, item, owner, usable, errors)
        if inst is not None:
            notes.extend(_instance_warnings(ctx.topo, item["where"], inst))
            result.append((inst, item["port"]))
    if errors:
        raise LayoutError("host %s: layout rejected: %s" % (ctx.host, "; ".join(errors)))
    text = ("Explicit layout of %d instance%s accepted for %s: %s."
            % (len(result), "" if len(result) == 1 else "s", ctx.label,
               "; ".join("GPUs %s TP=%d PP=%d, %s per GPU, worst link %s"
                         % (_fmt_gpus(inst.gpus), inst.tp, inst.pp,
                            fmt_gib(memory_per_gpu(ctx.fig, inst.tp, inst.pp, ctx.max_model_len)["total"]),
                            "none (one GPU per TP group)" if inst.worst_cls == "self" else inst.worst_code)
                         for inst, _port in sorted(result, key=lambda r: r[0].gpus[0]))))
    if notes:
        text += " Warnings: " + "; ".join(notes) + "."
    return result, text


# ----------------------------------------------------------------------------------------------
# auto


class SubsetRank(NamedTuple):
    """Order of the best plans of GPU subsets (the degraded layout); smaller is better."""

    pipeline: bool               #: a plan without pipeline stages first
    gpus_per_replica: int
    pp: int
    minus_replicas: int
    worst_links: Tuple[Tuple[int, int], ...]  #: per-replica worst link order, worst first
    splits: int                  #: TP groups split across NVLink islands
    spans: int                   #: replicas spanning NUMA nodes
    gpus: Tuple[Tuple[int, ...], ...]  #: the replicas' GPUs: lowest indices win ties

    @classmethod
    def of(cls, insts):
        first = insts[0]
        return cls(first.pp > 1, first.tp * first.pp, first.pp, -len(insts),
                   tuple(sorted((link_order(i.worst_code, i.worst_cls) for i in insts), reverse=True)),
                   sum(i.splits for i in insts), sum(i.spans for i in insts), tuple(sorted(i.gpus for i in insts)))


def _plan_auto(ctx):
    topo, host, label = ctx.topo, ctx.host, ctx.label
    usable = ctx.usable()
    if not usable:
        reasons = ["GPU %d: %s" % (i, topo.unusable_reason(i, ctx.allow_mig)) for i in sorted(topo.gpus)]
        raise LayoutError("host %s: no usable GPU for %s: %s" % (host, label, "; ".join(reasons)))
    no_mem = [i for i in usable if topo.gpus[i]["memory_mib"] is None]
    if no_mem:
        raise LayoutError("host %s: memory_total_mib unknown for GPU(s) %s; cannot check that %s fits"
                          % (host, ", ".join(str(i) for i in no_mem), label))
    max_gpus = ctx.max_gpus
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
        rank = SubsetRank.of([inst for inst, _port in chosen])
        if best is None or rank < best[0]:
            best = (rank, chosen, text, subset)
    if best is None:
        raise LayoutError("host %s: no layout of %s fits on at most %d of the %d usable GPUs: %s"
                          % (host, label, max_gpus, len(usable), errors[0] if errors else "no candidate"))
    _rank, chosen, text, subset = best
    return chosen, ("Best layout on at most %d of the %d usable GPUs (chosen subset %s): %s"
                    % (max_gpus, len(usable), _fmt_gpus(subset), text))


def _node_text(topo, usable):
    node_sizes = {}
    for i in usable:
        node_sizes[topo.numa_label(i)] = node_sizes.get(topo.numa_label(i), 0) + 1
    return ", ".join("%s: %d" % ("NUMA %s" % k if k is not None else "unknown NUMA", v)
                     for k, v in sorted(node_sizes.items(), key=lambda kv_: (kv_[0] is None, kv_[0])))


def _invalid_tp(ctx, n):
    return [t for t in range(2, n + 1) if t not in ctx.valid_tp]


def _auto_shapes(ctx, n):
    """(tp, pp) shapes that fit ``n`` GPUs, in the order auto tries them."""
    shapes = [(tp, pp) for tp in ctx.valid_tp if tp <= n
              for pp in range(1, min(ctx.fig["num_hidden_layers"], n) + 1) if tp * pp <= n]
    shapes.sort(key=lambda s: (s[1] > 1, s[0] * s[1], s[1]))
    return shapes


def _try_shape(ctx, usable, tp, pp, node_text, tried):
    """(instances, need, limited, exact) of the best plan of one shape, or None (``tried`` says why)."""
    need = memory_per_gpu(ctx.fig, tp, pp, ctx.max_model_len)
    biggest = max(ctx.topo.gpus[i]["memory_mib"] for i in usable)
    if need["total"] > biggest * MIB * ctx.util:
        tried.append("TP=%d PP=%d needs %s per GPU > %s (%.1f GiB x %.2f)"
                     % (tp, pp, fmt_gib(need["total"]), fmt_gib(biggest * MIB * ctx.util), biggest / 1024.0, ctx.util))
        return None
    groups, limited = tp_groups(ctx.topo, usable, tp, lambda gpus: need["total"] <= ctx.budget_bytes(gpus))
    if len(groups) == 0:
        tried.append("TP=%d PP=%d: no %d usable GPUs with %s free inside one NUMA node (%s)"
                     % (tp, pp, tp, fmt_gib(need["total"]), node_text))
        return None
    chosen, exact = choose_instances(ctx.topo, usable, tp, pp, groups)
    if not chosen:
        tried.append("TP=%d PP=%d: not enough disjoint in-NUMA TP groups for %d stages" % (tp, pp, pp))
        return None
    return chosen, need, limited, exact


def _auto_text(ctx, n, tp, pp, found, tried):
    chosen, need, limited, exact = found
    budgets = sorted(set(ctx.topo.gpus[i]["memory_mib"] for g in chosen for i in g.gpus))
    cap = ", ".join("%.0f GiB" % (m / 1024.0) for m in budgets)
    shape = "TP=%d" % tp if pp == 1 else "TP=%d x PP=%d" % (tp, pp)
    text = ("%s; fits on %d GPU%s (%s at %.2f): %d replica%s of %s on GPUs %s."
            % (memory_sentence(ctx.label, need, tp, pp, ctx.max_model_len), tp * pp, "" if tp * pp == 1 else "s",
               cap, ctx.util, len(chosen), "" if len(chosen) == 1 else "s", shape,
               ", ".join(_fmt_gpus(g.gpus) + (" (%s)" % g.worst_code if tp > 1 else "") for g in chosen)))
    if tried:
        text += " Tried first: " + "; ".join(tried) + "."
    invalid = _invalid_tp(ctx, n)
    if invalid and tp * pp > 1:
        text += (" tensor_parallel_size %s excluded: %d attention heads / %d KV heads allow only %s."
                 % (", ".join(str(t) for t in invalid), ctx.fig["num_attention_heads"], ctx.fig["num_key_value_heads"],
                    describe_tp_sizes(ctx.valid_tp, n)))
    if pp > 1 and any(g.spans for g in chosen):
        text += " Pipeline stages cross NUMA nodes (TP groups stay inside one)."
    if limited:
        text += " Many GPUs per NUMA node: only consecutive GPU runs were considered as TP groups."
    if not exact:
        text += " Search too large for an exact optimum: TP groups were chosen greedily by link class."
    if any(ctx.topo.no_custom_allreduce(grp) for g in chosen for grp in g.groups):
        text += " vLLM disables its custom all-reduce for TP groups of more than two GPUs not all joined by NVLink."
    return text


def _plan_auto_on(ctx, usable):
    n = len(usable)
    node_text = _node_text(ctx.topo, usable)
    tried = []
    for tp, pp in _auto_shapes(ctx, n):
        found = _try_shape(ctx, usable, tp, pp, node_text, tried)
        if found is not None:
            return [(inst, None) for inst in found[0]], _auto_text(ctx, n, tp, pp, found, tried)
    invalid = _invalid_tp(ctx, n)
    raise LayoutError("host %s: no layout fits %s on %d usable GPU(s) (%s) at gpu_memory_utilization %.2f with "
                      "max_model_len %d; tried: %s%s. Options: more/larger GPUs, a smaller max_model_len, or a "
                      "quantized model."
                      % (ctx.host, ctx.label, n, node_text, ctx.util, ctx.max_model_len,
                         "; ".join(tried) or "nothing (no valid shape)",
                         (" (tensor_parallel_size %s invalid for %d attention heads / %d KV heads)"
                          % (", ".join(str(t) for t in invalid), ctx.fig["num_attention_heads"],
                             ctx.fig["num_key_value_heads"])) if invalid else ""))


# ----------------------------------------------------------------------------------------------
# entry point


def _check_port_options(host, base_port, endpoint_port):
    for name, value in (("base_port", base_port), ("endpoint_port", endpoint_port)):
        if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= 65535:
            raise LayoutError("host %s: %s must be an integer 1-65535, got %r" % (host, name, value))


def _utilization(host, gpu_memory_utilization):
    try:
        util = float(gpu_memory_utilization)
    except (TypeError, ValueError):
        util = -1.0
    if not 0.0 < util <= 1.0:
        raise LayoutError("host %s: gpu_memory_utilization must be in (0, 1], got %r" % (host, gpu_memory_utilization))
    return util


def _max_model_len(host, fig, label, max_model_len):
    """The requested max_model_len, checked against the model's limit; the limit when not given."""
    limit = fig["max_position_embeddings"]
    if max_model_len is None:
        if limit is None:
            raise LayoutError("host %s: model %s: config.json has no max_position_embeddings; set max_model_len"
                              % (host, label))
        return limit
    try:
        value = as_int(max_model_len)
        if value < 1:
            raise ValueError()
    except (TypeError, ValueError):
        raise LayoutError("host %s: max_model_len must be a positive integer, got %r" % (host, max_model_len))
    if limit is not None and value > limit:
        raise LayoutError("host %s: max_model_len %d exceeds the model's maximum of %d tokens "
                          "(max_position_embeddings of %s); use max_model_len <= %d"
                          % (host, value, limit, label, limit))
    return value


def _plan_context(topology, model_config, host, model_name, options):
    """Check the inputs in the order their errors are reported; the PlanContext of one plan."""
    topo = TopologyView(topology, host)
    try:
        fig = model_figures(model_config)
    except LayoutError as exc:
        raise LayoutError("host %s: model %s: %s" % (host, model_name, exc))
    fig["fp8_moe_tp_padding"] = bool(options.get("fp8_moe_tp_padding"))
    weights = options.get("weights")
    if weights:
        fig["weight_bytes"], fig["weights_source"] = int(weights["bytes"]), weights["source"]
    elif fig.get("unmodelled_moe"):
        raise LayoutError("host %s: model %s: config.json has %r, a mixture-of-experts layout the parameter formula "
                          "does not model (only Qwen's num_experts / moe_intermediate_size): its size would be far too "
                          "small. Fix: give the model's model.safetensors.index.json (vllm_server_model.index) so the "
                          "plan sizes the weights from its total_size" % (host, model_name, fig["unmodelled_moe"]))
    label = str(model_name).rstrip("/").rsplit("/", 1)[-1] or str(model_name)
    util = _utilization(host, options["gpu_memory_utilization"])
    _check_port_options(host, options["base_port"], options["endpoint_port"])
    max_len = _max_model_len(host, fig, label, options["max_model_len"])
    valid_tp = valid_tensor_parallel_sizes(fig["num_attention_heads"], fig["num_key_value_heads"], fig)
    max_gpus = options["max_gpus"]
    if max_gpus is not None and (isinstance(max_gpus, bool) or not isinstance(max_gpus, int) or max_gpus < 1):
        raise LayoutError("host %s: max_gpus must be a positive integer, got %r" % (host, max_gpus))
    return PlanContext(host=host, topo=topo, fig=fig, label=label, util=util, max_model_len=max_len,
                       allow_mig=options["allow_mig"], valid_tp=valid_tp, max_gpus=max_gpus)


def _plan_request(ctx, request):
    """(instances [(Instance, port|None)], explanation, request as reported) of an auto or explicit request."""
    if isinstance(request, str) and request.strip().lower() == "auto":
        instances, explanation = _plan_auto(ctx)
        return instances, explanation, "auto"
    if isinstance(request, (list, tuple)):
        instances, explanation = _plan_explicit(ctx, request)
        return instances, explanation, list(request)
    raise LayoutError("host %s: layout must be 'auto' or a list of instances "
                      "({gpus: [...], tensor_parallel_size: N, pipeline_parallel_size: M, port: P}), got %r"
                      % (ctx.host, request))


def _instance_out(ctx, inst, name, port):
    need = memory_per_gpu(ctx.fig, inst.tp, inst.pp, ctx.max_model_len)
    return {
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
        "memory_per_gpu_gib": round(gib(need["total"]), 2),
    }


def _named_instances(ctx, instances, base_port, endpoint_port):
    """Name the instances ``n<numa>-<k>`` in GPU order, give each its port, reject port clashes."""
    instances = sorted(instances, key=lambda item: item[0].gpus[0])
    out, per_numa, used_ports, port_errors = [], {}, {}, []
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
        out.append(_instance_out(ctx, inst, name, port))
    if port_errors:
        free = [p for p in range(base_port, base_port + 2 * len(out) + 2)
                if p not in used_ports and p != endpoint_port][:len(out)]
        raise LayoutError("host %s: layout rejected: %s; free ports near base_port %d: %s"
                          % (ctx.host, "; ".join(port_errors), base_port, ", ".join(str(p) for p in free)))
    return out


def _model_out(ctx, model_name, model_path, config_source):
    fig = ctx.fig
    weights = fig["weight_bytes"]
    kv_seq = memory_per_gpu(fig, 1, 1, ctx.max_model_len)["kv_cache"]
    return {
        "name": model_name,
        "path": model_path,
        "config_source": config_source,
        "num_attention_heads": fig["num_attention_heads"],
        "num_key_value_heads": fig["num_key_value_heads"],
        "num_hidden_layers": fig["num_hidden_layers"],
        "hidden_size": fig["hidden_size"],
        "params_billion": round(fig["parameters"] / 1e9, 2),
        "dtype": fig["dtype"],
        "weights_gib": round(gib(weights), 2),
        "weights_source": fig["weights_source"],
        "num_experts": fig.get("num_experts"),
        "fp8_weight_block_size": list(fig["fp8_block"]) if fig.get("fp8_block") else None,
        "max_model_len": ctx.max_model_len,
        "kv_cache_gib_per_sequence": round(gib(kv_seq), 2),
    }


def plan_layout(topology: Any, model_config: Any, request: Any, *, host: Optional[str], model_name: str,
                model_path: Optional[str] = None, base_port: int = 8001, endpoint_port: int = 8000,
                gpu_memory_utilization: float = 0.9, max_model_len: Optional[int] = None, allow_mig: bool = False,
                config_source: str = "host", max_gpus: Optional[int] = None,
                weights: Optional[Dict[str, Any]] = None, fp8_moe_tp_padding: bool = False) -> Dict[str, Any]:
    """Plan vLLM instances for one host; returns the ``vllm_layout`` dict.

    ``topology`` is the ``gpu_topology`` facts dict, ``model_config`` the model's config.json as a
    dict, ``request`` ``'auto'`` or a list of ``{gpus, tensor_parallel_size,
    pipeline_parallel_size, port}`` dicts. ``max_gpus`` (auto only) limits the plan to at most that
    many GPUs (the degraded layout: the best plan over every subset of that size). ``weights``
    (``{"bytes": N, "source": "..."}``, e.g. a safetensors index's total size) replaces the parameter
    formula's weight size; ``fp8_moe_tp_padding`` is the release's (``_vllm_releases``). Raises LayoutError
    (message names host, rule, values, valid alternatives).
    """
    host = host or "localhost"
    ctx = _plan_context(topology, model_config, host, model_name, {
        "gpu_memory_utilization": gpu_memory_utilization, "base_port": base_port, "endpoint_port": endpoint_port,
        "max_model_len": max_model_len, "allow_mig": allow_mig, "max_gpus": max_gpus,
        "weights": weights, "fp8_moe_tp_padding": fp8_moe_tp_padding})
    instances, explanation, request_out = _plan_request(ctx, request)
    out_instances = _named_instances(ctx, instances, base_port, endpoint_port)
    used = set(g for inst in out_instances for g in inst["gpus"])
    unused = [i for i in sorted(ctx.topo.gpus) if i not in used]
    notes = list(ctx.topo.warnings)
    for i in unused:
        reason = ctx.topo.unusable_reason(i, allow_mig)
        if reason:
            notes.append("GPU %d unused: %s" % (i, reason))
    if notes:
        explanation = explanation + " Notes: " + "; ".join(notes) + "."
    return {
        "host": host,
        "model": _model_out(ctx, model_name, model_path, config_source),
        "request": request_out,
        "valid_tensor_parallel_sizes": ctx.valid_tp,
        "instances": out_instances,
        "gpus_unused": unused,
        "endpoint_port": endpoint_port,
        "explanation": explanation,
    }
