# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_instance_sync.plan_rolling: the rolling order of a switch or restart, and the zero_drop decision.

Two sets of layouts: the vllm_real scenario's (full = TP=1 on GPU 0 and GPU 1, degraded = TP=1 on
GPU 0) and the vllm_server scenario's on the a100x6_2numa host (test_instance_sync.py). The expected
steps of the small cases were worked out by hand; every plan is also replayed on a model of the host
that knows the GPUs each unit really holds (for a changed instance, the old ones): no start may
claim a GPU a running unit holds, the endpoint must have an instance in every step when zero_drop
is true, and the host must end with exactly the planned instances of the active layout.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import itertools

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _instance_sync as sync
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import parse_env_text

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.plugins.module_utils.test_instance_sync import (
    DEGRADED, DEGRADED_RUNNING, DEGRADED_TARGETS, FULL, FULL_RUNNING, HELD_FULL, PLANNED)


def inst(name, gpus):
    return sync.Instance(name, tuple(gpus), ",".join(str(g) for g in gpus))


R_FULL = sync.Layout("full", "vllm", "vllm.target", "/etc/vllm", (inst("n0-0", [0]), inst("n0-1", [1])))
R_DEGRADED = sync.Layout("degraded", "vllm-degraded", "vllm-degraded.target", "/etc/vllm/degraded",
                         (inst("n0-0", [0]),))
R_HELD = {"vllm@n0-0.service": (0,), "vllm@n0-1.service": (1,), "vllm-degraded@n0-0.service": (0,)}
TARGETS = {"vllm.target": sync.Target("active", "enabled"),
           "vllm-degraded.target": sync.Target("inactive", "disabled")}


def rolling(units, active="full", layouts=(R_FULL, R_DEGRADED), visible=None, **kwargs):
    request = sync.Request(layouts=tuple(layouts), active=active, **kwargs)
    state = sync.HostState(units=dict(units), targets=dict(TARGETS), env_files=frozenset(), visible=visible)
    return sync.plan_rolling(request, state)


def replay(plan, units, held, planned):
    """Run the steps on a model of the host; returns the problems found (empty: the plan is good)."""
    holders = {u: set(held[u]) for u, state in units.items() if state in sync.HOLDING}
    serving = {u for u, state in units.items() if state == "active"}
    problems = []
    for n, step in enumerate(plan.steps, 1):
        for unit in step.out:
            holders.pop(unit, None)
            serving.discard(unit)
        if not serving:
            problems.append("step %d: nothing serving" % n)
        if set(step.serving) != serving:
            problems.append("step %d: plan says serving %s, host has %s" % (n, step.serving, sorted(serving)))
        for unit in step.start:
            problems += ["step %d: %s starts on GPU %s held by %s" % (n, unit, g, other)
                         for other, gpus in holders.items() for g in sorted(gpus & set(planned[unit]))]
            holders[unit] = set(planned[unit])
            serving.add(unit)
    return problems, holders


def units_of(layout):
    return {layout.unit_of(i.name) for i in layout.instances}


# --- the vllm_real layouts, expected steps by hand ------------------------------------------------

def test_rollback_full_to_degraded_replaces_n0_0_first_then_stops_n0_1():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    plan = rolling(units, active="degraded")
    assert plan.zero_drop is True
    assert [(s.out, s.start) for s in plan.steps] == [
        (("vllm@n0-0.service",), ("vllm-degraded@n0-0.service",)),
        (("vllm@n0-1.service",), ())]
    assert plan.steps[0].serving == ("vllm@n0-1.service",)
    assert plan.steps[1].serving == ("vllm-degraded@n0-0.service",)
    problems, holders = replay(plan, units, R_HELD, R_HELD)
    assert problems == [] and set(holders) == {"vllm-degraded@n0-0.service"}


def test_back_to_full_starts_on_the_free_gpu_before_stopping_the_degraded_instance():
    units = {"vllm-degraded@n0-0.service": "active", "vllm@n0-0.service": "inactive"}
    plan = rolling(units, active="full")
    assert plan.zero_drop is True
    assert [(s.out, s.start) for s in plan.steps] == [
        ((), ("vllm@n0-1.service",)),
        (("vllm-degraded@n0-0.service",), ("vllm@n0-0.service",))]
    problems, holders = replay(plan, units, R_HELD, R_HELD)
    assert problems == [] and set(holders) == units_of(R_FULL)


def test_restart_of_one_instance_keeps_the_other_serving():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    plan = rolling(units, changed_env_files=frozenset(["/etc/vllm/n0-0.env"]),
                   visible={"vllm@n0-0.service": "0", "vllm@n0-1.service": "1"})
    assert plan.zero_drop is True
    assert [(s.out, s.start, s.serving) for s in plan.steps] == [
        (("vllm@n0-0.service",), ("vllm@n0-0.service",), ("vllm@n0-1.service",))]


def test_restart_all_goes_one_instance_at_a_time():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    plan = rolling(units, restart_all=True, visible={"vllm@n0-0.service": "0", "vllm@n0-1.service": "1"})
    assert [(s.out, s.start) for s in plan.steps] == [
        (("vllm@n0-0.service",), ("vllm@n0-0.service",)),
        (("vllm@n0-1.service",), ("vllm@n0-1.service",))]
    assert replay(plan, units, R_HELD, R_HELD)[0] == []


def test_restart_of_the_only_instance_cannot_be_zero_drop():
    units = {"vllm-degraded@n0-0.service": "active"}
    plan = rolling(units, active="degraded", restart_all=True, visible={"vllm-degraded@n0-0.service": "0"})
    assert plan.zero_drop is False and plan.steps == ()
    assert "vllm-degraded@n0-0.service is the only instance serving" in plan.reason


def test_an_instance_still_starting_is_stopped_before_the_only_one_serving():
    """Stopping vllm@n0-0 first (the first that frees a GPU) would leave nothing serving; stopping
    vllm@n0-1, which is still starting, frees GPU 1 for a replacement that serves before n0-0 goes."""
    degraded = sync.Layout("degraded", "vllm-degraded", "vllm-degraded.target", "/etc/vllm/degraded",
                           (inst("n0-0", [0]), inst("n0-1", [1])))
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "activating"}
    plan = rolling(units, active="degraded", layouts=(R_FULL, degraded))
    assert plan.zero_drop is True, plan.reason
    assert [(s.out, s.start) for s in plan.steps] == [
        (("vllm@n0-1.service",), ("vllm-degraded@n0-1.service",)),
        (("vllm@n0-0.service",), ("vllm-degraded@n0-0.service",))]
    held = dict(R_HELD, **{"vllm-degraded@n0-1.service": (1,)})
    problems, holders = replay(plan, units, held, held)
    assert problems == [] and set(holders) == units_of(degraded)


def test_stops_that_drop_nothing_come_before_the_only_serving_instance():
    """degraded a[0] serves alone, b[1] and c[2] are still starting; full plans x[0] and y[1,2]. No
    single stop lets y start, but stopping b and c drops nothing: y starts, then a goes for x."""
    full = sync.Layout("full", "vllm", "vllm.target", "/etc/vllm", (inst("x", [0]), inst("y", [1, 2])))
    degraded = sync.Layout("degraded", "vllm-degraded", "vllm-degraded.target", "/etc/vllm/degraded",
                           (inst("a", [0]), inst("b", [1]), inst("c", [2])))
    units = {"vllm-degraded@a.service": "active", "vllm-degraded@b.service": "activating",
             "vllm-degraded@c.service": "activating"}
    plan = rolling(units, active="full", layouts=(full, degraded))
    assert plan.zero_drop is True, plan.reason
    assert [(s.out, s.start) for s in plan.steps] == [
        (("vllm-degraded@b.service",), ()),
        (("vllm-degraded@c.service",), ("vllm@y.service",)),
        (("vllm-degraded@a.service",), ("vllm@x.service",))]
    held = {"vllm-degraded@a.service": (0,), "vllm-degraded@b.service": (1,), "vllm-degraded@c.service": (2,),
            "vllm@x.service": (0,), "vllm@y.service": (1, 2)}
    problems, holders = replay(plan, units, held, held)
    assert problems == [] and set(holders) == units_of(full)


def _with_sick(units, sick, **kwargs):
    request = sync.Request(layouts=(R_FULL, R_DEGRADED), active="full", **kwargs)
    state = sync.HostState(units=dict(units), targets=dict(TARGETS), env_files=frozenset(),
                           visible={"vllm@n0-0.service": "0", "vllm@n0-1.service": "1"}, unhealthy=frozenset(sick))
    return sync.plan_rolling(request, state)


def test_an_active_instance_that_fails_its_health_probe_does_not_serve():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    restart = dict(changed_env_files=frozenset(["/etc/vllm/n0-0.env"]))
    assert _with_sick(units, [], **restart).zero_drop is True
    plan = _with_sick(units, ["vllm@n0-1.service"], **restart)
    assert plan.zero_drop is False and plan.steps == ()
    assert plan.reason.startswith("vllm@n0-0.service is the only instance serving"), plan.reason


def test_no_active_instance_answering_is_said_not_taken_for_a_fresh_host():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    plan = _with_sick(units, ["vllm@n0-0.service", "vllm@n0-1.service"], restart_all=True)
    assert plan.zero_drop is False and plan.steps == ()
    assert plan.reason.startswith("no active instance answers /health (vllm@n0-0.service, vllm@n0-1.service)")


def test_fully_overlapping_gpu_sets_cannot_be_zero_drop():
    full = sync.Layout("full", "vllm", "vllm.target", "/etc/vllm", (inst("n0-0", [0, 1]),))
    units = {"vllm@n0-0.service": "active"}
    plan = rolling(units, active="degraded", layouts=(full, R_DEGRADED))
    assert plan.zero_drop is False
    assert plan.reason.startswith("vllm@n0-0.service is the only instance serving and must stop before "
                                  "vllm-degraded@n0-0.service can start")


def test_changed_instance_started_on_other_gpus_holds_every_gpu_until_stopped():
    # n0-1 was started with CUDA_VISIBLE_DEVICES=0 (the file said so then); now planned on GPU 1:
    # nothing may start while it runs, so it goes first, and n0-0 restarts while it is gone.
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    plan = rolling(units, restart_all=True, visible={"vllm@n0-0.service": "0", "vllm@n0-1.service": "0"})
    assert plan.zero_drop is True
    assert [(s.out, s.start) for s in plan.steps] == [
        (("vllm@n0-1.service",), ("vllm@n0-1.service",)),
        (("vllm@n0-0.service",), ("vllm@n0-0.service",))]


def test_changed_instance_whose_process_cannot_be_read_holds_every_gpu():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    request = sync.Request(layouts=(R_FULL, R_DEGRADED), active="full", restart_all=True)
    state = sync.HostState(units=units, targets=TARGETS, env_files=frozenset(), visible={})
    assert sync.held_gpus(request, state, "vllm@n0-0.service") is sync.ALL_GPUS
    assert sync.held_gpus(request, state._replace(visible={"vllm@n0-0.service": "0"}),
                          "vllm@n0-0.service") == frozenset([0])


def test_stale_instance_holds_every_gpu_and_is_stopped_while_the_layout_serves():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active", "vllm@n9-0.service": "active"}
    plan = rolling(units)
    assert [(s.out, s.start) for s in plan.steps] == [(("vllm@n9-0.service",), ())]
    held = dict(R_HELD, **{"vllm@n9-0.service": (0, 1)})
    assert replay(plan, units, held, R_HELD)[0] == []


def test_fresh_host_and_converged_host():
    fresh = rolling({})
    assert fresh.zero_drop is True and fresh.steps == () and "no instance serves yet" in fresh.reason
    converged = rolling({"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"})
    assert converged.zero_drop is True and converged.steps == ()


def test_failed_instance_is_started_with_the_rest_serving():
    units = {"vllm@n0-0.service": "failed", "vllm@n0-1.service": "active"}
    plan = rolling(units)
    assert [(s.out, s.start, s.serving) for s in plan.steps] == [
        ((), ("vllm@n0-0.service",), ("vllm@n0-1.service",))]


def test_describe_rolling():
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    assert sync.describe_rolling(rolling(units, active="degraded")) == [
        "step 1: out, drain, stop vllm@n0-0.service; start, gate, in vllm-degraded@n0-0.service "
        "(serving: vllm@n0-1.service)",
        "step 2: out, drain, stop vllm@n0-1.service (serving: vllm-degraded@n0-0.service)"]


# --- the a100x6 layouts: every switch and restart, checked by the replay ---------------------------

VISIBLE = {u: ",".join(str(g) for g in gpus) for u, gpus in PLANNED.items()}


def with_visible(layout):
    return layout._replace(instances=tuple(inst(i.name, i.gpus) for i in layout.instances))


A_FULL, A_DEGRADED = with_visible(FULL), with_visible(DEGRADED)


@pytest.mark.parametrize("active,running", [("degraded", FULL_RUNNING), ("full", DEGRADED_RUNNING)])
def test_a100_switches_are_zero_drop_and_never_share_a_gpu(active, running):
    request = sync.Request(layouts=(A_FULL, A_DEGRADED), active=active)
    state = sync.HostState(units=dict(running), targets=DEGRADED_TARGETS, env_files=frozenset(), visible=VISIBLE)
    plan = sync.plan_rolling(request, state)
    assert plan.zero_drop is True
    problems, holders = replay(plan, running, PLANNED, PLANNED)
    assert problems == []
    assert set(holders) == units_of(FULL if active == "full" else DEGRADED)


@pytest.mark.parametrize("changed", [c for n in (1, 2, 4) for c in itertools.combinations(sorted(HELD_FULL), n)])
def test_a100_restarts_of_any_instances_are_zero_drop(changed):
    files = frozenset("/etc/vllm/%s.env" % u[len("vllm@"):-len(".service")] for u in changed)
    request = sync.Request(layouts=(A_FULL, A_DEGRADED), active="full", changed_env_files=files)
    state = sync.HostState(units=dict(FULL_RUNNING), targets=DEGRADED_TARGETS, env_files=frozenset(),
                           visible=VISIBLE)
    plan = sync.plan_rolling(request, state)
    assert plan.zero_drop is True
    assert sorted(u for s in plan.steps for u in s.out) == sorted(changed)
    assert sorted(u for s in plan.steps for u in s.start) == sorted(changed)
    problems, holders = replay(plan, FULL_RUNNING, HELD_FULL, PLANNED)
    assert problems == [] and set(holders) == set(HELD_FULL)


def test_a100_restart_of_every_instance_with_unknown_gpus_cannot_be_zero_drop():
    # no copy of what the units started with (units from before the copy existed): each changed
    # instance holds every GPU and the last one serving would have to stop first
    request = sync.Request(layouts=(FULL, DEGRADED), active="full", restart_all=True)
    state = sync.HostState(units=dict(FULL_RUNNING), targets=DEGRADED_TARGETS, env_files=frozenset(),
                           visible={})
    plan = sync.plan_rolling(request, state)
    assert plan.zero_drop is False and "is the only instance serving" in plan.reason


def test_replay_catches_a_start_on_a_held_gpu():
    bad = sync.RollingPlan(True, "", (sync.Step((), ("vllm-degraded@n0-0.service",),
                                                tuple(sorted(FULL_RUNNING)), ()),))
    problems, _holders = replay(bad, FULL_RUNNING, PLANNED, PLANNED)
    assert problems == ["step 1: vllm-degraded@n0-0.service starts on GPU 0 held by vllm@n0-0.service"]


def test_instance_running_with_other_gpus_than_planned_is_drifted_and_holds_them():
    # a run wrote n0-1.env (GPU 2 -> 1) and failed before restarting it; the file no longer differs
    units = {"vllm@n0-0.service": "active", "vllm@n0-1.service": "active"}
    request = sync.Request(layouts=(R_FULL, R_DEGRADED), active="full")
    state = sync.HostState(units=units, targets=TARGETS, env_files=frozenset(),
                           visible={"vllm@n0-0.service": "0", "vllm@n0-1.service": "2"})
    assert sync.drifted_env_files(request, state) == frozenset(["/etc/vllm/n0-1.env"])
    assert sync.held_gpus(request, state, "vllm@n0-1.service") == frozenset([2])
    plan = sync.plan_rolling(request._replace(changed_env_files=sync.drifted_env_files(request, state)), state)
    assert [(s.out, s.start) for s in plan.steps] == [(("vllm@n0-1.service",), ("vllm@n0-1.service",))]
    assert sync.held_gpus(request, state._replace(visible={"vllm@n0-1.service": "GPU-1f2e"}),
                          "vllm@n0-1.service") is sync.ALL_GPUS


def test_unit_stem_and_the_started_copy_read_by_the_shared_env_parser():
    assert sync.unit_stem("vllm-degraded@n0-0.service") == "vllm-degraded@n0-0"
    text = "# GPUs 4,5\nCUDA_VISIBLE_DEVICES=4,5\nCUDA_VISIBLE_DEVICES_X=9\nVLLM_PORT=8001\n"
    assert parse_env_text(text).get("CUDA_VISIBLE_DEVICES") == "4,5"
    assert parse_env_text("VLLM_PORT=1\n").get("CUDA_VISIBLE_DEVICES") is None
