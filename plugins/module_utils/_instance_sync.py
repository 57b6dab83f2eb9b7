# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What to stop, reset and start so that a host runs exactly the planned vLLM instances.

Private to the collection (``vllm_instances`` is its caller). Pure code: no Ansible imports, no
I/O. The caller reads the host (unit states from ``systemctl``, the environment files found) and
hands in the plan; :func:`plan_sync` answers with a :class:`SyncPlan`, which the caller applies
in its field order: daemon-reload, stop (one job, waited for), remove the stale environment
files, reset-failed, start, enable, disable.

The rule: **two vLLM servers never hold one GPU.** Everything that holds a GPU and is not kept
is stopped before anything starts, and an instance is kept only when it runs, is planned in the
active layout and its configuration did not change. Stale instances (no longer planned), changed
ones (the GPUs they hold now may be the old ones: unknown here) and every instance of the other
layout (its GPUs overlap the active one's) are therefore stopped first. What keeps running is
planned in the active layout, whose instances hold distinct GPUs (checked: a layout that plans
one GPU twice is refused), so no instance about to start shares a GPU with one left running.

Names: a layout has a ``kind`` (``full``, ``degraded``), a unit prefix (``vllm`` for
``vllm@<instance>.service``), a target (``vllm.target``) and the directory of its environment
files (``/etc/vllm/<instance>.env``).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
from typing import Dict, FrozenSet, NamedTuple, Optional, Tuple

# systemd ACTIVE states of a unit whose process may hold its GPUs.
RUNNING = frozenset(("active", "activating", "reloading"))
HOLDING = RUNNING | frozenset(("deactivating",))
FAILED = "failed"
# Files in an environment directory that are no instance's.
NOT_INSTANCES = frozenset(("api-key.env",))


class SyncError(ValueError):
    """The plan cannot be applied without two servers on one GPU (or names no active layout)."""


# --- named types -------------------------------------------------------------------------------

class Instance(NamedTuple):
    name: str
    gpus: Tuple[int, ...]
    # what its environment file sets (CUDA_VISIBLE_DEVICES); compared with the running process's
    cuda_visible_devices: str = ""
    port: int = 0


class Layout(NamedTuple):
    kind: str
    unit: str
    target: str
    env_dir: str
    instances: Tuple[Instance, ...]

    def unit_of(self, name):
        return "%s@%s.service" % (self.unit, name)

    def env_file_of(self, name):
        return posixpath.join(self.env_dir, name + ".env")


class Target(NamedTuple):
    active: str = "inactive"
    enabled: str = ""


class HostState(NamedTuple):
    """What the host has now: ACTIVE state per instance unit (``vllm@n0-0.service``: ``active``;
    units systemd does not list are inactive), the targets, and the environment files found.
    ``visible``: the CUDA_VISIBLE_DEVICES each running unit started with (the copy of its environment
    file the unit made at start, not the file, which may already be the new one); absent when unknown."""
    units: Dict[str, str]
    targets: Dict[str, Target]
    env_files: FrozenSet[str]
    visible: Optional[Dict[str, str]] = None
    # the VLLM_PORT each running unit started with (same source as visible)
    ports: Optional[Dict[str, int]] = None
    # active units whose /health did not answer 200 (loading, wedged): they hold GPUs, they do not serve
    unhealthy: Optional[FrozenSet[str]] = None


class Request(NamedTuple):
    layouts: Tuple[Layout, ...]
    active: str
    changed_env_files: FrozenSet[str] = frozenset()
    # a file every instance reads changed: template unit, API key file, logging, vLLM itself
    restart_all: bool = False
    daemon_reload: bool = False


class SyncPlan(NamedTuple):
    daemon_reload: bool
    stop: Tuple[str, ...]
    remove: Tuple[str, ...]
    reset_failed: Tuple[str, ...]
    start: Tuple[str, ...]
    enable: Tuple[str, ...]
    disable: Tuple[str, ...]

    @property
    def changed(self):
        return bool(self.daemon_reload or self.stop or self.remove or self.reset_failed or self.start
                    or self.enable or self.disable)


# --- reading the request -------------------------------------------------------------------------

def active_layout(request):
    """The layout named by ``request.active``; SyncError when there is none or it plans nothing."""
    for layout in request.layouts:
        if layout.kind == request.active:
            if not layout.instances:
                raise SyncError("the active layout %r plans no instance" % request.active)
            return layout
    raise SyncError("no layout named %r (layouts: %s)" % (
        request.active, ", ".join(l.kind for l in request.layouts) or "none"))


def planned_units(layouts):
    """{unit: (layout, instance)} of every planned instance of every layout."""
    return {layout.unit_of(i.name): (layout, i) for layout in layouts for i in layout.instances}


def env_file_unit(layouts, path):
    """The instance unit an environment file on the host belongs to, or None (not an instance's)."""
    directory, base = posixpath.split(path)
    if not base.endswith(".env") or base in NOT_INSTANCES:
        return None
    for layout in layouts:
        if posixpath.normpath(layout.env_dir) == posixpath.normpath(directory):
            return layout.unit_of(base[:-len(".env")])
    return None


def is_instance_unit(layouts, unit):
    return any(unit.startswith(layout.unit + "@") and unit.endswith(".service") for layout in layouts)


def check_layout_gpus(layout):
    """SyncError when two instances of one layout share a GPU (they would be started together)."""
    owner = {}
    for inst in layout.instances:
        for gpu in inst.gpus:
            if gpu in owner:
                raise SyncError("layout %r: GPU %s is planned for both %s and %s, and two servers never hold "
                                "one GPU: give each instance its own GPUs" % (
                                    layout.kind, gpu, layout.unit_of(owner[gpu]), layout.unit_of(inst.name)))
            owner[gpu] = inst.name


# --- the decisions -------------------------------------------------------------------------------

def changed_units(request):
    """Planned units whose configuration changed (their environment file, or a file all read)."""
    planned = planned_units(request.layouts)
    if request.restart_all:
        return frozenset(planned)
    files = {posixpath.normpath(p) for p in request.changed_env_files}
    return frozenset(unit for unit, (layout, inst) in planned.items()
                     if posixpath.normpath(layout.env_file_of(inst.name)) in files)


def stale_units(request, host):
    """Instance units on the host (environment file or a loaded unit) that no layout plans."""
    planned = planned_units(request.layouts)
    found = {env_file_unit(request.layouts, path) for path in host.env_files} - {None}
    loaded = {u for u in host.units if is_instance_unit(request.layouts, u)}
    return frozenset((found | loaded) - set(planned))


def kept_units(request, host):
    """Units that keep running untouched: running, planned in the active layout, unchanged."""
    layout = active_layout(request)
    wanted = {layout.unit_of(i.name) for i in layout.instances}
    running = {u for u, state in host.units.items() if state in RUNNING}
    return frozenset((wanted & running) - changed_units(request))


def target_steps(request, host):
    """(start the active target?, units to enable, to disable, other targets to stop)."""
    layout = active_layout(request)
    own = host.targets.get(layout.target, Target())
    enable = () if own.enabled == "enabled" else (layout.target,)
    others = [l.target for l in request.layouts if l.target != layout.target]
    disable = tuple(t for t in others if host.targets.get(t, Target()).enabled == "enabled")
    stop = tuple(t for t in others if host.targets.get(t, Target()).active in HOLDING)
    return own.active != "active", enable, disable, stop


def plan_sync(request, host):
    """The SyncPlan that brings ``host`` to ``request``: see the module docstring for the rule."""
    layout = active_layout(request)
    check_layout_gpus(layout)
    kept = kept_units(request, host)
    to_start = [layout.unit_of(i.name) for i in layout.instances if layout.unit_of(i.name) not in kept]
    start_target, enable, disable, stop_targets = target_steps(request, host)
    holding = sorted(u for u, state in host.units.items()
                     if state in HOLDING and u not in kept and is_instance_unit(request.layouts, u))
    stale = stale_units(request, host)
    remove = sorted(p for p in host.env_files if env_file_unit(request.layouts, p) in stale)
    failed = [u for u in to_start if host.units.get(u) == FAILED]
    return SyncPlan(daemon_reload=request.daemon_reload,
                    stop=tuple(holding) + stop_targets,
                    remove=tuple(remove),
                    reset_failed=tuple(failed),
                    start=tuple(to_start) + ((layout.target,) if start_target else ()),
                    enable=enable, disable=disable)


# --- the rolling order ---------------------------------------------------------------------------
#
# The same end state as plan_sync, reached one instance at a time so that the endpoint always has
# an instance serving: each step takes instances out of the endpoint, drains and stops them, then
# starts the planned instances whose GPUs are now free, gates them and puts them in. The rule stays:
# a start only claims GPUs that no unit still running holds. A unit whose GPUs are not known (not
# planned by any layout, or changed and started with other CUDA_VISIBLE_DEVICES than planned now)
# holds every GPU until it is stopped.

ALL_GPUS = None


class Step(NamedTuple):
    out: Tuple[str, ...]          # taken out of the endpoint, drained, stopped
    start: Tuple[str, ...]        # then started on the GPUs now free, gated, put in
    serving: Tuple[str, ...]      # in the endpoint while the step runs
    serving_after: Tuple[str, ...]


class RollingPlan(NamedTuple):
    zero_drop: bool
    reason: str
    steps: Tuple[Step, ...]


def _gpu_list(text):
    """The GPU indices of a CUDA_VISIBLE_DEVICES value ("0,1"), or ALL_GPUS when it is not a list of them."""
    items = [x.strip() for x in (text or "").split(",")]
    if not items or not all(x.isdigit() for x in items):
        return ALL_GPUS
    return frozenset(int(x) for x in items)


def held_gpus(request, host, unit):
    """The GPUs ``unit`` holds while it runs, or ALL_GPUS when that is not known: what it started with
    where the host says (``visible``), else its planned GPUs unless its configuration changed."""
    visible = (host.visible or {}).get(unit)
    if visible is not None:
        return _gpu_list(visible)
    planned = planned_units(request.layouts).get(unit)
    if planned is None or unit in changed_units(request):
        return ALL_GPUS
    return frozenset(planned[1].gpus)


def drifted_env_files(request, host):
    """Environment files of running planned instances that started with other GPUs than planned now
    (e.g. a run that wrote the file and failed before the restart): they must restart, like changed ones."""
    files = set()
    for unit, (layout, inst) in planned_units(request.layouts).items():
        visible = (host.visible or {}).get(unit)
        if visible is not None and host.units.get(unit) in HOLDING and visible != inst.cuda_visible_devices:
            files.add(layout.env_file_of(inst.name))
    return frozenset(files)


def _startable(pending, stopping, holders, gpus_of):
    """The pending starts (in order) whose GPUs no holder holds and that are not waiting to stop."""
    taken = set()
    unknown = any(g is ALL_GPUS for g in holders.values())
    for gpus in holders.values():
        taken |= gpus or set()
    ready = []
    for unit in pending:
        if unit in stopping or unknown or taken & gpus_of[unit]:
            continue
        ready.append(unit)
        taken |= gpus_of[unit]
    return ready


def _victim(stopping, pending, holders, gpus_of, serving):
    """The next unit to stop. Best one whose stop lets a pending start go and leaves another instance
    serving (a unit not serving, e.g. still starting, before the only one that serves); then one
    that leaves another serving (stopping a unit that does not serve drops nothing and may free
    part of a GPU set); then one that lets a start go; else the first."""
    def lets_go(unit):
        rest = {u: g for u, g in holders.items() if u != unit}
        return bool(_startable(pending, [s for s in stopping if s != unit], rest, gpus_of))

    def leaves(unit):
        return any(u != unit for u in serving)

    return sorted(stopping, key=lambda u: (not (lets_go(u) and leaves(u)), not leaves(u), not lets_go(u)))[0]


def _rolling_state(request, host):
    """(units to stop, units to start, GPUs held per unit, GPUs planned per start, serving now)."""
    layout = active_layout(request)
    check_layout_gpus(layout)
    kept = kept_units(request, host)
    start = [layout.unit_of(i.name) for i in layout.instances if layout.unit_of(i.name) not in kept]
    stop = sorted(u for u, state in host.units.items()
                  if state in HOLDING and u not in kept and is_instance_unit(request.layouts, u))
    holders = {u: held_gpus(request, host, u) for u in list(stop) + sorted(kept)}
    gpus_of = {layout.unit_of(i.name): frozenset(i.gpus) for i in layout.instances}
    sick = host.unhealthy or frozenset()
    serving = [u for u, state in sorted(host.units.items()) if state == "active" and u in holders and u not in sick]
    return stop, start, holders, gpus_of, serving


def plan_rolling(request, host):
    """The RollingPlan that brings ``host`` to ``request`` with an instance serving throughout, or
    zero_drop False and the reason when no order can (the caller then switches plainly)."""
    stopping, pending, holders, gpus_of, serving = _rolling_state(request, host)
    sick = sorted(u for u, state in host.units.items() if state == "active" and u in (host.unhealthy or ()))
    if not serving and sick:
        return RollingPlan(False, "no active instance answers /health (%s): the endpoint serves nothing now, or "
                                  "the probe failed" % ", ".join(sick), ())
    if not serving:
        return RollingPlan(True, "no instance serves yet: nothing to drop", ())
    steps = []
    while stopping or pending:
        out = []
        if not _startable(pending, stopping, holders, gpus_of):
            victim = _victim(stopping, pending, holders, gpus_of, serving)
            if not [u for u in serving if u != victim]:
                return RollingPlan(False, _no_order_reason(victim, pending, gpus_of), ())
            out = [victim]
            stopping.remove(victim)
            holders.pop(victim)
        during = [u for u in serving if u not in out]
        started = _startable(pending, stopping, holders, gpus_of)
        for unit in started:
            pending.remove(unit)
            holders[unit] = gpus_of[unit]
        serving = during + started
        steps.append(Step(tuple(out), tuple(started), tuple(during), tuple(serving)))
    return RollingPlan(True, "every step leaves an instance serving", tuple(steps))


def _no_order_reason(victim, pending, gpus_of):
    waiting = [u for u in pending if u != victim]
    needs = (" before %s can start" % ", ".join(waiting)) if waiting else ""
    return ("%s is the only instance serving and must stop%s: the endpoint answers nothing until the "
            "replacement passes its gate" % (victim, needs))


def describe_rolling(plan):
    """Lines saying what each step does (for --diff and the task's messages)."""
    lines = []
    for n, step in enumerate(plan.steps, 1):
        parts = (["out, drain, stop %s" % " ".join(step.out)] if step.out else []) + \
                (["start, gate, in %s" % " ".join(step.start)] if step.start else [])
        lines.append("step %d: %s (serving: %s)" % (n, "; ".join(parts), " ".join(step.serving) or "none"))
    return lines


# --- parsing systemctl (plain text in, named types out) -----------------------------------------

def parse_list_units(text):
    """{unit: ACTIVE} from ``systemctl list-units --all --plain --no-legend --full``
    (columns UNIT LOAD ACTIVE SUB DESCRIPTION)."""
    units = {}
    for line in (text or "").splitlines():
        cols = line.split()
        if len(cols) >= 3 and cols[0].endswith(".service"):
            units[cols[0]] = cols[2]
    return units


def parse_show(text):
    """{Id: Target} from ``systemctl show -p Id -p ActiveState -p UnitFileState <units>``
    (one block of KEY=VALUE lines per unit, blocks separated by an empty line)."""
    targets = {}
    for block in (text or "").split("\n\n"):
        props = dict(line.split("=", 1) for line in block.splitlines() if "=" in line)
        if props.get("Id"):
            targets[props["Id"]] = Target(active=props.get("ActiveState", "inactive") or "inactive",
                                          enabled=props.get("UnitFileState", ""))
    return targets


def unit_stem(unit):
    """``vllm@n0-0.service`` -> ``vllm@n0-0`` (systemd's %N: the name of the unit's RuntimeDirectory)."""
    return unit[:-len(".service")] if unit.endswith(".service") else unit


def layout_from_dict(data):
    """A Layout from the module's argument (planned instances as vllm_layout returns them)."""
    instances = tuple(Instance(name=str(i["name"]), gpus=tuple(int(g) for g in i.get("gpus") or ()),
                               cuda_visible_devices=str(i.get("cuda_visible_devices") or ""),
                               port=int(i.get("port") or 0))
                      for i in data.get("instances") or ())
    return Layout(kind=data["kind"], unit=data["unit"], target=data["target"],
                  env_dir=posixpath.normpath(data["env_dir"]), instances=instances)


def describe(plan):
    """Lines saying what the plan does, in its order (for --diff and the task's messages)."""
    steps = [
        ("daemon-reload", ("systemd",) if plan.daemon_reload else ()),
        ("stop", plan.stop), ("remove", plan.remove), ("reset-failed", plan.reset_failed),
        ("start", plan.start), ("enable", plan.enable), ("disable", plan.disable)]
    return ["%s %s" % (verb, " ".join(items)) for verb, items in steps if items]
