# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_instance_sync: what to stop, reset and start, and the rule that two servers never hold one GPU.

The layouts are the molecule vllm_server scenario's on the a100x6_2numa host: full = TP=2 on the
NVLink pairs 0-1 and 4-5, TP=1 on GPUs 2 and 3; degraded = four TP=1 instances on GPUs 0-3; the
automatic full layout before the change = six TP=1 instances on GPUs 0-5. Every expected plan was
worked out by hand from the rule (stop whatever holds a GPU and is not kept, then start); the
replay below checks the rule independently with the GPUs each unit holds on the host *before* the
run (for a changed instance, its old GPUs), which the code under test never sees.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _instance_sync as sync

FULL = sync.Layout("full", "vllm", "vllm.target", "/etc/vllm", (
    sync.Instance("n0-0", (0, 1)), sync.Instance("n0-1", (2,)),
    sync.Instance("n1-0", (3,)), sync.Instance("n1-1", (4, 5))))
DEGRADED = sync.Layout("degraded", "vllm-degraded", "vllm-degraded.target", "/etc/vllm/degraded", (
    sync.Instance("n0-0", (0,)), sync.Instance("n0-1", (1,)),
    sync.Instance("n0-2", (2,)), sync.Instance("n1-0", (3,))))
ENV_FILES = frozenset([
    "/etc/vllm/api-key.env",
    "/etc/vllm/n0-0.env", "/etc/vllm/n0-1.env", "/etc/vllm/n1-0.env", "/etc/vllm/n1-1.env",
    "/etc/vllm/degraded/n0-0.env", "/etc/vllm/degraded/n0-1.env",
    "/etc/vllm/degraded/n0-2.env", "/etc/vllm/degraded/n1-0.env"])
# GPUs held on the host by each unit when it runs with the files of the layouts above
HELD_FULL = {"vllm@n0-0.service": (0, 1), "vllm@n0-1.service": (2,),
             "vllm@n1-0.service": (3,), "vllm@n1-1.service": (4, 5)}
HELD_DEGRADED = {"vllm-degraded@n0-0.service": (0,), "vllm-degraded@n0-1.service": (1,),
                 "vllm-degraded@n0-2.service": (2,), "vllm-degraded@n1-0.service": (3,)}
FULL_TARGETS = {"vllm.target": sync.Target("active", "enabled"),
                "vllm-degraded.target": sync.Target("inactive", "disabled")}
DEGRADED_TARGETS = {"vllm.target": sync.Target("inactive", "disabled"),
                    "vllm-degraded.target": sync.Target("active", "enabled")}


def request(active="full", layouts=(FULL, DEGRADED), **kwargs):
    return sync.Request(layouts=tuple(layouts), active=active, **kwargs)


def host(units, targets=None, env_files=ENV_FILES):
    return sync.HostState(units=dict(units), targets=dict(FULL_TARGETS if targets is None else targets),
                          env_files=frozenset(env_files))


def replay(plan, states, held, planned):
    """Apply the plan to a model of the host: the stop job completes, then every start claims the
    planned GPUs of its unit. Returns every (unit starting, GPU, unit still holding it)."""
    holders = {u: set(held[u]) for u, state in states.items() if state in ("active", "activating")}
    for unit in plan.stop:
        holders.pop(unit, None)
    clashes = []
    for unit in plan.start:
        if unit.endswith(".target"):
            continue
        for other, gpus in holders.items():
            clashes += [(unit, g, other) for g in sorted(gpus & set(planned[unit]))]
        holders[unit] = set(planned[unit])
    return clashes


PLANNED = dict(HELD_FULL, **HELD_DEGRADED)
FULL_RUNNING = {u: "active" for u in HELD_FULL}
DEGRADED_RUNNING = {u: "active" for u in HELD_DEGRADED}


# --- the switch between layouts -------------------------------------------------------------------

def test_switch_full_to_degraded_stops_every_full_instance_first():
    state = host(FULL_RUNNING)
    plan = sync.plan_sync(request("degraded"), state)
    assert plan == sync.SyncPlan(
        daemon_reload=False,
        stop=("vllm@n0-0.service", "vllm@n0-1.service", "vllm@n1-0.service", "vllm@n1-1.service", "vllm.target"),
        remove=(),
        reset_failed=(),
        start=("vllm-degraded@n0-0.service", "vllm-degraded@n0-1.service", "vllm-degraded@n0-2.service",
               "vllm-degraded@n1-0.service", "vllm-degraded.target"),
        enable=("vllm-degraded.target",),
        disable=("vllm.target",))
    assert replay(plan, state.units, PLANNED, PLANNED) == []


def test_switch_back_to_full_stops_every_degraded_instance_first():
    # after a switch the full units stay loaded (inactive) and listed by list-units --all
    units = dict(DEGRADED_RUNNING, **{u: "inactive" for u in HELD_FULL})
    state = host(units, DEGRADED_TARGETS)
    plan = sync.plan_sync(request("full"), state)
    assert plan == sync.SyncPlan(
        daemon_reload=False,
        stop=("vllm-degraded@n0-0.service", "vllm-degraded@n0-1.service", "vllm-degraded@n0-2.service",
              "vllm-degraded@n1-0.service", "vllm-degraded.target"),
        remove=(),
        reset_failed=(),
        start=("vllm@n0-0.service", "vllm@n0-1.service", "vllm@n1-0.service", "vllm@n1-1.service", "vllm.target"),
        enable=("vllm.target",),
        disable=("vllm-degraded.target",))
    assert replay(plan, state.units, PLANNED, PLANNED) == []


def test_replay_catches_a_start_before_the_stop():
    """The replay can fail: the switch without its stops puts degraded n0-0 on GPU 0 of full n0-0."""
    state = host(FULL_RUNNING)
    plan = sync.plan_sync(request("degraded"), state)._replace(stop=())
    assert ("vllm-degraded@n0-0.service", 0, "vllm@n0-0.service") in replay(plan, state.units, PLANNED, PLANNED)


# --- changes within the active layout -------------------------------------------------------------

def test_changed_env_file_of_a_running_instance_restarts_only_that_instance():
    plan = sync.plan_sync(request(changed_env_files=frozenset(["/etc/vllm/n0-1.env"])), host(FULL_RUNNING))
    assert plan == sync.SyncPlan(False, ("vllm@n0-1.service",), (), (), ("vllm@n0-1.service",), (), ())


def test_changed_env_file_of_the_other_layout_starts_nothing():
    plan = sync.plan_sync(request(changed_env_files=frozenset(["/etc/vllm/degraded/n0-1.env"])),
                          host(FULL_RUNNING))
    assert plan.changed is False


def test_layout_change_stops_changed_and_stale_instances_before_any_start():
    """auto (six TP=1 on GPUs 0-5, ports 8001-8006) -> the explicit layout: n0-0 (GPU 0 -> 0,1),
    n0-1 (1 -> 2), n1-0 (port 8004 -> 8003) and n1-1 (GPU 4 -> 4,5) changed; n0-2 and n1-2 are
    no longer planned. The degraded layout is the same before and after."""
    old = {"vllm@n0-0.service": (0,), "vllm@n0-1.service": (1,), "vllm@n0-2.service": (2,),
           "vllm@n1-0.service": (3,), "vllm@n1-1.service": (4,), "vllm@n1-2.service": (5,)}
    env = ENV_FILES | {"/etc/vllm/n0-2.env", "/etc/vllm/n1-2.env"}
    changed = frozenset("/etc/vllm/%s.env" % n for n in ("n0-0", "n0-1", "n1-0", "n1-1"))
    state = host({u: "active" for u in old}, env_files=env)
    plan = sync.plan_sync(request(changed_env_files=changed), state)
    assert plan == sync.SyncPlan(
        daemon_reload=False,
        stop=("vllm@n0-0.service", "vllm@n0-1.service", "vllm@n0-2.service",
              "vllm@n1-0.service", "vllm@n1-1.service", "vllm@n1-2.service"),
        remove=("/etc/vllm/n0-2.env", "/etc/vllm/n1-2.env"),
        reset_failed=(),
        start=("vllm@n0-0.service", "vllm@n0-1.service", "vllm@n1-0.service", "vllm@n1-1.service"),
        enable=(), disable=())
    assert replay(plan, state.units, old, PLANNED) == []


def test_file_every_instance_reads_changed_restarts_the_active_layout_after_daemon_reload():
    plan = sync.plan_sync(request(restart_all=True, daemon_reload=True), host(FULL_RUNNING))
    units = ("vllm@n0-0.service", "vllm@n0-1.service", "vllm@n1-0.service", "vllm@n1-1.service")
    assert plan == sync.SyncPlan(True, units, (), (), units, (), ())


# --- failed, stale, converged -------------------------------------------------------------------

def test_failed_instance_in_its_start_limit_is_reset_before_start():
    units = dict(FULL_RUNNING, **{"vllm@n1-0.service": "failed"})
    plan = sync.plan_sync(request(), host(units))
    # a failed unit holds no GPU: nothing to stop; the others keep running
    assert plan == sync.SyncPlan(False, (), (), ("vllm@n1-0.service",), ("vllm@n1-0.service",), (), ())


def test_failed_and_changed_instance_is_reset_and_started_not_stopped():
    units = dict(FULL_RUNNING, **{"vllm@n1-1.service": "failed"})
    plan = sync.plan_sync(request(changed_env_files=frozenset(["/etc/vllm/n1-1.env"])), host(units))
    assert plan == sync.SyncPlan(False, (), (), ("vllm@n1-1.service",), ("vllm@n1-1.service",), (), ())


def test_stale_instances_are_stopped_and_their_env_files_removed():
    """The plan dropped n1-2 (GPU 5) and the degraded n1-1; vllm@n1-2 still runs, the degraded
    one does not. api-key.env lies beside the instances' files and is none of theirs."""
    full = FULL._replace(instances=FULL.instances[:3] + (sync.Instance("n1-1", (4,)),))
    units = dict(FULL_RUNNING, **{"vllm@n1-2.service": "active"})
    env = ENV_FILES | {"/etc/vllm/n1-2.env", "/etc/vllm/degraded/n1-1.env"}
    plan = sync.plan_sync(request(layouts=(full, DEGRADED)), host(units, env_files=env))
    assert plan == sync.SyncPlan(False, ("vllm@n1-2.service",),
                                 ("/etc/vllm/degraded/n1-1.env", "/etc/vllm/n1-2.env"), (), (), (), ())


def test_running_unit_without_env_file_and_not_planned_is_stopped():
    units = dict(FULL_RUNNING, **{"vllm@old.service": "activating"})
    plan = sync.plan_sync(request(), host(units))
    assert (plan.stop, plan.remove, plan.start) == (("vllm@old.service",), (), ())


def test_converged_host_needs_nothing():
    plan = sync.plan_sync(request(), host(FULL_RUNNING))
    assert plan == sync.SyncPlan(False, (), (), (), (), (), ())
    assert plan.changed is False
    assert sync.describe(plan) == []


def test_converged_degraded_host_needs_nothing():
    units = dict(DEGRADED_RUNNING, **{u: "inactive" for u in HELD_FULL})
    assert sync.plan_sync(request("degraded"), host(units, DEGRADED_TARGETS)).changed is False


def test_fresh_host_starts_the_active_layout_and_enables_its_target():
    plan = sync.plan_sync(request(), host({}, {}, env_files=()))
    assert plan == sync.SyncPlan(
        False, (), (), (),
        ("vllm@n0-0.service", "vllm@n0-1.service", "vllm@n1-0.service", "vllm@n1-1.service", "vllm.target"),
        ("vllm.target",), ())
    assert sync.describe(plan) == [
        "start vllm@n0-0.service vllm@n0-1.service vllm@n1-0.service vllm@n1-1.service vllm.target",
        "enable vllm.target"]


def test_deactivating_instance_is_waited_for_then_started():
    units = dict(FULL_RUNNING, **{"vllm@n0-1.service": "deactivating"})
    plan = sync.plan_sync(request(), host(units))
    assert (plan.stop, plan.start) == (("vllm@n0-1.service",), ("vllm@n0-1.service",))


# --- refusals -----------------------------------------------------------------------------------

def test_layout_that_plans_one_gpu_twice_is_refused():
    bad = FULL._replace(instances=(sync.Instance("a", (0, 1)), sync.Instance("b", (1, 2))))
    with pytest.raises(sync.SyncError) as err:
        sync.plan_sync(request(layouts=(bad, DEGRADED)), host({}))
    assert str(err.value) == ("layout 'full': GPU 1 is planned for both vllm@a.service and vllm@b.service, "
                              "and two servers never hold one GPU: give each instance its own GPUs")


def test_active_layout_must_exist_and_plan_instances():
    with pytest.raises(sync.SyncError, match="no layout named 'spare' \\(layouts: full, degraded\\)"):
        sync.plan_sync(request("spare"), host({}))
    empty = DEGRADED._replace(instances=())
    with pytest.raises(sync.SyncError, match="the active layout 'degraded' plans no instance"):
        sync.plan_sync(request("degraded", layouts=(FULL, empty)), host({}))


# --- systemctl output --------------------------------------------------------------------------

def test_parse_list_units():
    # systemctl list-units --all --plain --no-legend --full 'vllm@*.service' 'vllm-degraded@*.service'
    text = ("vllm-degraded@n0-0.service loaded inactive dead   vLLM server instance n0-0 (degraded layout) "
            "(gpu_fleet.vllm_serving)\n"
            "vllm@n0-0.service          loaded active   running vLLM server instance n0-0 (gpu_fleet.vllm_serving)\n"
            "vllm@n1-0.service          loaded failed   failed  vLLM server instance n1-0 (gpu_fleet.vllm_serving)\n"
            "vllm@gone.service          not-found inactive dead vllm@gone.service\n")
    assert sync.parse_list_units(text) == {"vllm-degraded@n0-0.service": "inactive", "vllm@n0-0.service": "active",
                                           "vllm@n1-0.service": "failed", "vllm@gone.service": "inactive"}
    assert sync.parse_list_units("") == {}


def test_parse_show_of_the_targets():
    text = ("Id=vllm.target\nActiveState=active\nUnitFileState=enabled\n\n"
            "Id=vllm-degraded.target\nActiveState=inactive\nUnitFileState=disabled\n")
    assert sync.parse_show(text) == {"vllm.target": sync.Target("active", "enabled"),
                                     "vllm-degraded.target": sync.Target("inactive", "disabled")}
    # a unit systemd does not know: LoadState=not-found, no unit file state
    assert sync.parse_show("Id=vllm.target\nActiveState=inactive\nUnitFileState=\n") == {
        "vllm.target": sync.Target("inactive", "")}


def test_layout_from_the_planner_dict():
    data = {"kind": "full", "unit": "vllm", "target": "vllm.target", "env_dir": "/etc/vllm/",
            "instances": [{"name": "n0-0", "gpus": [0, 1], "port": 8001, "tensor_parallel_size": 2}]}
    assert sync.layout_from_dict(data) == sync.Layout("full", "vllm", "vllm.target", "/etc/vllm",
                                                      (sync.Instance("n0-0", (0, 1), "", 8001),))
