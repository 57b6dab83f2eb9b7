# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O.
"""The layout planner's exact search: which disjoint GPU sets make the best vLLM instances.

Input is a ``TopologyView`` of the ``gpu_topology`` facts; an instance holds TP*PP GPUs, its GPU
list is PP consecutive TP groups (stage order), and every TP group lies inside one NUMA node
(GPUs with unknown NUMA node do not constrain). ``choose_instances`` searches every set of
disjoint instances of one shape, memoised on the bitmask of GPUs still free, and falls back to a
greedy choice above ``SEARCH_BUDGET`` steps.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools
import re
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence, Tuple

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import LayoutError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._links import (
    LINK_RANK,
    link_order,
    matrix_cell,
    nvlink_islands,
    pair_class,
)

#: Above this many search steps the exact search gives way to a greedy choice (noted in the
#: explanation); hosts with up to 8 GPUs stay far below it.
SEARCH_BUDGET = 200000
#: Above this many possible TP groups per NUMA node, only consecutive GPU runs are considered.
GROUP_LIMIT = 20000


def as_int(value: Any) -> int:
    """An int, or a string of one (``" 3 "``); ValueError for anything else (bools included)."""
    if isinstance(value, bool):
        raise ValueError(value)
    if isinstance(value, int):
        return value
    if isinstance(value, str) and re.match(r"^\s*-?\d+\s*$", value):
        return int(value)
    raise ValueError(value)


# ----------------------------------------------------------------------------------------------
# Topology view


def _optional_int(value, negative_is_none=False):
    try:
        if value is None or (negative_is_none and as_int(value) < 0):
            return None
        return as_int(value)
    except ValueError:
        return None


class TopologyView(object):
    """Read-only view of gpu_topology facts with the lookups the planner needs."""

    def __init__(self, topology: Any, host: str):
        if not isinstance(topology, dict):
            raise LayoutError("host %s: topology must be the gpu_topology facts dict, got %s"
                              % (host, type(topology).__name__))
        if not topology.get("available", False):
            raise LayoutError("host %s: GPU topology is not available (%s); fix the GPU driver/nvidia-smi "
                              "before planning vLLM instances" % (host, topology.get("reason") or "no reason given"))
        self.warnings: List[str] = []
        self.gpus: Dict[int, Dict[str, Any]] = {}
        for gpu in topology.get("gpus") or []:
            self._add_gpu(gpu, host)
        if not self.gpus:
            raise LayoutError("host %s: GPU topology lists no GPUs; nothing to place vLLM instances on" % host)
        self.node_cpus: Dict[int, List[int]] = {}
        for node in topology.get("numa_nodes") or []:
            try:
                self.node_cpus[as_int(node.get("id"))] = sorted(set(int(c) for c in (node.get("cpus") or [])))
            except (ValueError, AttributeError, TypeError):
                continue
        self.links = topology.get("links") or []
        self.classes = topology.get("link_class") or []
        self.island_of: Dict[int, int] = {}
        islands = topology.get("nvlink_islands") or nvlink_islands(self.links, self.classes, sorted(self.gpus))
        for number, island in enumerate(islands):
            for index in island:
                self.island_of[index] = number
        missing = [i for i in sorted(self.gpus) if not self._has_cell(i)]
        if missing and len(self.gpus) > 1:
            self.warnings.append("no topo -m link data for GPU(s) %s: their links count as unknown (worst)"
                                 % ", ".join(str(i) for i in missing))

    def _add_gpu(self, gpu, host):
        try:
            index = as_int(gpu.get("index"))
        except (ValueError, AttributeError):
            raise LayoutError("host %s: topology gpu entry without an integer index: %r" % (host, gpu))
        self.gpus[index] = {
            "index": index,
            "name": gpu.get("name"),
            "healthy": gpu.get("healthy", True) is not False,
            "reason": gpu.get("reason"),
            "mig": str(gpu.get("mig_mode") or "").lower() == "enabled",
            "numa": _optional_int(gpu.get("numa_node"), negative_is_none=True),
            "cpus": sorted(set(int(c) for c in (gpu.get("cpu_affinity") or []))),
            "memory_mib": _optional_int(gpu.get("memory_total_mib")),
        }

    def _has_cell(self, index):
        return index < len(self.links) and isinstance(self.links[index], (list, tuple)) and index < len(self.links[index])

    def link(self, a: int, b: int) -> Tuple[str, str]:
        """(raw code, link class) for a GPU pair; ('X', 'self') when a == b."""
        if a == b:
            return "X", "self"
        code = matrix_cell(self.links, a, b)
        cls = pair_class(self.links, self.classes, a, b)
        if cls == "self":   # an 'X' off the diagonal makes no sense; do not let it look best
            cls = "unknown"
        return (str(code).strip() if code is not None else "?"), cls

    def numa_label(self, index: int) -> Optional[int]:
        return self.gpus[index]["numa"]

    def unusable_reason(self, index: int, allow_mig: bool) -> Optional[str]:
        """Why GPU ``index`` cannot serve (unhealthy, MIG), or None when it can."""
        gpu = self.gpus[index]
        if not gpu["healthy"]:
            return "unhealthy (%s)" % (gpu["reason"] or "no reason given")
        if gpu["mig"] and not allow_mig:
            return "MIG mode enabled (set allow_mig to use it, or disable MIG)"
        return None

    def no_custom_allreduce(self, group: Sequence[int]) -> bool:
        """vLLM disables its custom all-reduce for a TP group of > 2 GPUs not all joined by NVLink."""
        return len(group) > 2 and any(self.link(a, b)[1] != "nvlink" for a, b in itertools.combinations(group, 2))


def worst_pair_link(topo: TopologyView, gpus: Sequence[int]) -> Tuple[str, str]:
    """Worst link (code, class) among all pairs of ``gpus`` ('X', 'self' for one GPU)."""
    worst = ("X", "self")
    for a, b in itertools.combinations(gpus, 2):
        code, cls = topo.link(a, b)
        if link_order(code, cls) > link_order(*worst):
            worst = (code, cls)
    return worst


def group_in_one_numa(topo: TopologyView, gpus: Sequence[int]) -> bool:
    return len(set(topo.numa_label(i) for i in gpus) - set([None])) <= 1


# ----------------------------------------------------------------------------------------------
# Instances


class Instance(object):
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
            code, cls = worst_pair_link(topo, group)
            if link_order(code, cls) > link_order(*worst):
                worst = (code, cls)
            if len(set(topo.island_of.get(i, ("solo", i)) for i in group)) > 1:
                splits += 1
        self.worst_code, self.worst_cls = worst
        self.worst_rank = LINK_RANK[self.worst_cls]
        self.all_rank = LINK_RANK[worst_pair_link(topo, self.gpus)[1]]
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


def tp_groups(topo: TopologyView, usable: Sequence[int], tp: int,
              fits: Callable[[Sequence[int]], bool]) -> Tuple[List[Tuple[int, ...]], bool]:
    """All TP groups (sorted GPU tuples) inside one NUMA node whose GPUs have the memory.

    Returns (groups, limited): limited is True when a NUMA node had too many GPUs for every
    combination and only consecutive GPU runs were considered.
    """
    by_node: Dict[Optional[int], List[int]] = {}
    for i in usable:
        by_node.setdefault(topo.numa_label(i), []).append(i)
    unknown = by_node.pop(None, [])
    pools = [sorted(by_node[node] + unknown) for node in sorted(by_node)] if by_node else [sorted(unknown)]
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


# ----------------------------------------------------------------------------------------------
# The search


def _merge(vec_a, vec_b):
    return tuple(sorted(vec_a + vec_b, reverse=True))


class SolutionKey(NamedTuple):
    """How good a set of instances is; smaller is better (compared field by field)."""

    minus_instances: int        #: minus the number of instances: more instances first
    worst_ranks: Tuple[int, ...]  #: per-instance worst TP-group link rank, worst first
    splits: int                 #: TP groups split across NVLink islands
    spans: int                  #: instances spanning NUMA nodes
    all_ranks: Tuple[int, ...]  #: per-instance worst link over all its GPU pairs, worst first

    def plus(self, inst: Instance) -> "SolutionKey":
        """The key of this solution with ``inst`` added."""
        return SolutionKey(self.minus_instances - 1, _merge((inst.worst_rank,), self.worst_ranks),
                           self.splits + inst.splits, self.spans + inst.spans,
                           _merge((inst.all_rank,), self.all_ranks))


_EMPTY = SolutionKey(0, (), 0, 0, ())


def _greedy_rank(inst):
    """Order of single TP groups for the greedy fallback: best links first, then lowest GPUs."""
    return (inst.worst_rank, inst.splits, inst.spans, inst.all_rank, inst.gpus)


class _TooBig(Exception):
    pass


class _Search(object):
    """Exact search over disjoint instances of one shape, memoised on the mask of free GPUs."""

    def __init__(self, topo, usable, tp, pp, groups):
        self.topo, self.tp, self.pp = topo, tp, pp
        self.order = sorted(usable)
        self.bit = dict((i, 1 << n) for n, i in enumerate(self.order))
        self.group_masks = [(g, sum(self.bit[i] for i in g)) for g in groups]
        self.by_low: Dict[int, List[Tuple[Tuple[int, ...], int]]] = {}
        for g, m in self.group_masks:
            self.by_low.setdefault(g[0], []).append((g, m))
        self.cache: Dict[Tuple, Instance] = {}
        self.memo: Dict[int, Tuple[SolutionKey, List[Instance]]] = {}
        self.steps = 0

    def make(self, gs):
        key = tuple(gs)
        inst = self.cache.get(key)
        if inst is None:
            inst = Instance(self.topo, gs, self.tp, self.pp, self.bit)
            self.cache[key] = inst
        return inst

    def instances_with_low(self, mask, low):
        """Every instance inside ``mask`` whose first TP group starts at GPU ``low``."""
        firsts = [(g, m) for g, m in self.by_low.get(low, []) if m & mask == m]
        if self.pp == 1:
            for g, _m in firsts:
                yield self.make([g])
            return
        later = sorted([(g, m) for g, m in self.group_masks if m & mask == m and g[0] != low], key=lambda x: x[0])
        for g, m in firsts:
            yield from self._stages(later, [(g, m)], m, 0)

    def _stages(self, later, chosen, used, start):
        if len(chosen) == self.pp:
            yield self.make([group for group, _mask in chosen])
            return
        for n in range(start, len(later)):
            g, m = later[n]
            if m & used:
                continue
            yield from self._stages(later, chosen + [(g, m)], used | m, n + 1)

    def solve(self, mask):
        """(key, instances) of the best solution on the GPUs of ``mask``."""
        if mask in self.memo:
            return self.memo[mask]
        if mask == 0:
            return _EMPTY, []
        low_bit = mask & -mask
        low = self.order[low_bit.bit_length() - 1]
        best_key, best = None, None
        for inst in self.instances_with_low(mask, low):
            self.steps += 1
            if self.steps > SEARCH_BUDGET:
                raise _TooBig()
            rest_key, rest = self.solve(mask & ~inst.mask)
            key = rest_key.plus(inst)
            if best_key is None or key < best_key:
                best_key, best = key, [inst] + rest
        # leaving the lowest GPU unused must be strictly better: ties go to lower GPU indices
        skip_key, skip = self.solve(mask & ~low_bit)
        if best_key is None or skip_key < best_key:
            best_key, best = skip_key, skip
        self.memo[mask] = (best_key, best)
        return self.memo[mask]

    def greedy(self):
        """Best TP groups first, then chained into PP stages per NUMA node."""
        chosen, used = [], 0
        ranked = sorted([Instance(self.topo, [g], self.tp, 1, self.bit) for g, _mask in self.group_masks],
                        key=_greedy_rank)
        for inst in ranked:
            if inst.mask & used:
                continue
            used |= inst.mask
            chosen.append(inst.groups[0])
        if self.pp == 1:
            return [self.make([g]) for g in chosen]
        numa = self.topo.numa_label
        chosen.sort(key=lambda g: (numa(g[0]) is None, numa(g[0]), g))
        return [self.make(sorted(chosen[start:start + self.pp]))
                for start in range(0, len(chosen) - self.pp + 1, self.pp)]


def choose_instances(topo: TopologyView, usable: Sequence[int], tp: int, pp: int,
                     groups: Sequence[Tuple[int, ...]]) -> Tuple[List[Instance], bool]:
    """Best set of disjoint instances of shape tp x pp.

    Order of preference (``SolutionKey``): most instances; then the multiset of per-instance worst
    TP-group links (best worst link first); then fewest TP groups split across NVLink islands;
    then fewest instances spanning NUMA nodes; then the multiset of worst links over all GPU
    pairs. Returns (instances, exact) - exact False when the greedy fallback was used.
    """
    search = _Search(topo, usable, tp, pp, groups)
    try:
        return search.solve(sum(search.bit.values()))[1], True
    except _TooBig:
        return search.greedy(), False
