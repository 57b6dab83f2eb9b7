#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_instances
short_description: Run exactly the planned vLLM instances of the active layout, never two on one GPU
version_added: 0.2.0
description:
  - Reads the state of the vLLM instance units and of the layouts' targets (C(systemctl list-units),
    C(systemctl show)) and the environment files in each layout's directory, then stops, resets and
    starts units so that the host runs exactly the planned instances of the active layout.
  - "Order: C(daemon-reload) (when O(daemon_reload)), one C(systemctl stop) of everything that holds a GPU
    and is not kept (waited for), removal of the environment files of instances no layout plans,
    C(systemctl reset-failed) of the failed units about to start (a unit in its start limit refuses
    every start otherwise), one C(systemctl start) of the instances and the active target, then
    C(disable) of the other targets and C(enable) of the active one (O(strategy=plain); with O(strategy=rolling) the
    stops and starts go one instance at a time, see there)."
  - An instance keeps running only when it runs, is planned in the active layout, started with the GPUs planned
    now (O(started_dir)) and neither its environment file (O(changed_env_files)) nor a file every instance reads
    (O(restart_all)) changed. With O(strategy=plain) everything else that holds a GPU - stale instances, changed
    ones and every instance of the other layouts - is stopped before anything starts, so two vLLM servers never
    hold one GPU.
  - The decisions are made by the pure C(_instance_sync) module_utils; this module only reads and applies.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  layouts:
    description: Every layout installed on the host (the active one and the others, e.g. the degraded rollback layout).
    type: list
    elements: dict
    required: true
    suboptions:
      kind:
        description: Name of the layout, e.g. C(full) or C(degraded); O(active) names one.
        type: str
        required: true
      unit:
        description: Unit prefix of its instances, C(vllm) for C(vllm@<instance>.service).
        type: str
        required: true
      target:
        description: Target grouping its instances, e.g. C(vllm.target).
        type: str
        required: true
      env_dir:
        description: Directory of its instances' environment files (C(<env_dir>/<instance>.env)).
        type: path
        required: true
      instances:
        description:
          - Its planned instances as M(gpu_fleet.vllm_serving.vllm_layout) returns them; C(name), C(gpus),
            C(cuda_visible_devices) and C(port) are read, other keys are ignored.
        type: list
        elements: dict
        default: []
  active:
    description: C(kind) of the layout that serves.
    type: str
    required: true
  changed_env_files:
    description: Environment files written (or found different) in this run; their instances restart.
    type: list
    elements: path
    default: []
  restart_all:
    description: A file every instance reads changed (template unit, API key file, logging, vLLM itself) - restart them all.
    type: bool
    default: false
  daemon_reload:
    description: A unit or target file changed - C(systemctl daemon-reload) first.
    type: bool
    default: false
  restart:
    description:
      - Instances of the active layout (names, e.g. C(n0-0)) to restart although nothing of theirs changed
        (C(playbooks/restart.yml)). A name the active layout does not plan fails the task before anything changes.
    type: list
    elements: str
    default: []
  started_dir:
    description:
      - Directory where each running instance unit keeps the copy of its environment file it started with
        (C(<started_dir>/<unit without .service>/started.env), written by the unit's C(ExecStartPre) in its
        C(RuntimeDirectory)); read with O(strategy=rolling) to learn the GPUs each running instance holds.
    type: path
    default: /run/gpu-fleet-vllm
  health_timeout:
    description:
      - With O(strategy=rolling), seconds to wait for the C(/health) answer of each running (systemd C(active))
        instance on C(127.0.0.1) at the port it started with (three tries, a second apart). Only an instance that
        answers 200 counts as serving; one still loading its model (systemd reports C(active) as soon as the server
        process starts), wedged, or whose port is not known holds its GPUs but does not serve, so it never keeps the
        endpoint answering alone. When active instances exist and none answers, RV(zero_drop) is false with that
        reason (the run warns and switches plainly).
      - C(0) skips the probe (every C(active) instance counts as serving).
    type: float
    default: 3
  strategy:
    description:
      - C(plain) applies the whole plan in one call (see the order above).
      - C(rolling) looks for an order in which the endpoint always has an instance serving (RV(zero_drop)) - out of
        the endpoint, drain, stop, then start on the GPUs now free, gate, back in, per instance, never two servers on
        one GPU. When there is one, this call only does C(daemon-reload), the removals and the C(reset-failed) and
        returns the order in RV(steps) for the caller to run (the role's C(rolling_step.yml)); a second call with
        C(strategy=plain) and nothing changed then starts, stops, enables and disables the targets. When there is
        none (one instance serving alone, fully overlapping GPU sets) it warns with the reason and applies the plan
        plainly. When nothing serves yet there is nothing to drop and the plan is applied plainly too.
      - The GPUs a running instance holds are the C(CUDA_VISIBLE_DEVICES) of the environment it started with
        (O(started_dir); not C(/proc/<pid>/environ), which vLLM's process titles overwrite). For a changed instance started
        with other devices than planned now, or one without that copy, they are not known and it holds every GPU until it
        is stopped.
    type: str
    choices: [plain, rolling]
    default: plain
notes:
  - Supports check mode (reads the units and reports what it would do) and diff mode (the steps, in order).
  - systemctl runs with C(LC_ALL=C); every call is an argument list, no shell.
seealso:
  - module: gpu_fleet.vllm_serving.vllm_layout
  - module: gpu_fleet.vllm_serving.vllm_wait_ready
  - module: gpu_fleet.vllm_serving.owned_files
"""

EXAMPLES = r"""
- name: Switch to the degraded layout one instance at a time (the caller runs the steps)
  gpu_fleet.vllm_serving.vllm_instances:
    layouts:
      - {kind: full, unit: vllm, target: vllm.target, env_dir: /etc/vllm, instances: "{{ vllm_layout.instances }}"}
      - {kind: degraded, unit: vllm-degraded, target: vllm-degraded.target, env_dir: /etc/vllm/degraded,
         instances: "{{ vllm_layout.degraded.instances }}"}
    active: degraded
    strategy: rolling
  register: sync

- name: Serve the degraded layout (stops the full one first)
  gpu_fleet.vllm_serving.vllm_instances:
    layouts:
      - {kind: full, unit: vllm, target: vllm.target, env_dir: /etc/vllm, instances: "{{ vllm_layout.instances }}"}
      - kind: degraded
        unit: vllm-degraded
        target: vllm-degraded.target
        env_dir: /etc/vllm/degraded
        instances: "{{ vllm_layout.degraded.instances }}"
    active: degraded

- name: Restart the instance whose environment file changed
  gpu_fleet.vllm_serving.vllm_instances:
    layouts:
      - {kind: full, unit: vllm, target: vllm.target, env_dir: /etc/vllm, instances: "{{ vllm_layout.instances }}"}
    active: full
    changed_env_files: [/etc/vllm/n0-1.env]
"""

RETURN = r"""
daemon_reloaded:
  description: Whether C(systemctl daemon-reload) ran (would run, in check mode).
  returned: success
  type: bool
  sample: false
stopped:
  description: Units stopped (in one job, before anything started).
  returned: success
  type: list
  elements: str
  sample: ["vllm@n0-0.service", "vllm@n0-1.service", "vllm.target"]
removed:
  description: Environment files of instances no layout plans, removed.
  returned: success
  type: list
  elements: str
  sample: ["/etc/vllm/n1-2.env"]
reset_failed:
  description: Failed units whose failed state (and start-limit count) was reset before their start.
  returned: success
  type: list
  elements: str
  sample: ["vllm@n1-0.service"]
started:
  description: Units started, the active target last.
  returned: success
  type: list
  elements: str
  sample: ["vllm-degraded@n0-0.service", "vllm-degraded.target"]
enabled:
  description: Targets enabled.
  returned: success
  type: list
  elements: str
  sample: ["vllm-degraded.target"]
disabled:
  description: Targets disabled.
  returned: success
  type: list
  elements: str
  sample: ["vllm.target"]
zero_drop:
  description: Whether the rolling order keeps an instance serving throughout (O(strategy=rolling) only).
  returned: when O(strategy=rolling)
  type: bool
  sample: true
zero_drop_reason:
  description: Why (or why not) the run can drop no request.
  returned: when O(strategy=rolling)
  type: str
  sample: "vllm-degraded@n0-0.service is the only instance serving and must stop: the endpoint answers nothing until the replacement passes its gate"
steps:
  description:
    - The rolling order, for the caller to run (empty when the plan was applied plainly). Per step the units taken out,
      drained and stopped (C(out), their C(out_ports)), then the units started and gated (C(start), with C(start_names)
      and C(start_ports)), the ports in the endpoint while the step runs (C(serving_ports)) and after it
      (C(serving_after_ports)).
  returned: when O(strategy=rolling)
  type: list
  elements: dict
  sample: [{"out": ["vllm@n0-0.service"], "out_ports": [8000], "start": ["vllm-degraded@n0-0.service"],
            "start_names": ["n0-0"], "start_ports": [8100], "serving_ports": [8001], "serving_after_ports": [8001, 8100]}]
units:
  description: ACTIVE state of every instance unit systemd listed before the run.
  returned: success
  type: dict
  sample: {"vllm@n0-0.service": "active", "vllm@n1-0.service": "failed"}
"""

import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _instance_sync as sync
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import parse_env_text

ENV = {"LC_ALL": "C"}


def _systemctl(module, args, done=None):
    """Run systemctl with an argument list; fail with rc/stdout/stderr (and what was done)."""
    cmd = [module.get_bin_path("systemctl", required=True)] + list(args)
    rc, out, err = module.run_command(cmd, environ_update=ENV)
    if rc != 0:
        why = (err or out).strip() or "no output"
        module.fail_json(msg="%s failed (rc %d): %s" % (" ".join(["systemctl"] + list(args)), rc, why),
                         rc=rc, stdout=out, stderr=err, cmd=cmd, **(done or {}))
    return out


def _env_files(module, layouts):
    found = set()
    for layout in layouts:
        try:
            names = os.listdir(layout.env_dir)
        except FileNotFoundError:
            continue
        except OSError as exc:
            module.fail_json(msg="cannot list %s (env_dir of layout %r): %s" % (layout.env_dir, layout.kind, exc))
        found |= {os.path.join(layout.env_dir, n) for n in names if n.endswith(".env")}
    return frozenset(found)


def read_host(module, layouts):
    """The HostState: instance units, targets, environment files and what the running instances started
    with (read-only, also in check mode)."""
    patterns = ["%s@*.service" % layout.unit for layout in layouts]
    listed = _systemctl(module, ["list-units", "--all", "--plain", "--no-legend", "--full"] + patterns)
    shown = _systemctl(module, ["show", "-p", "Id", "-p", "ActiveState", "-p", "UnitFileState"]
                       + [layout.target for layout in layouts])
    units = sync.parse_list_units(listed)
    visible, ports = _started(module, [u for u, state in units.items() if state in sync.HOLDING])
    return sync.HostState(units=units, targets=sync.parse_show(shown), env_files=_env_files(module, layouts),
                          visible=visible, ports=ports)


def _started(module, units):
    """({unit: CUDA_VISIBLE_DEVICES}, {unit: VLLM_PORT}) each running unit started with, from the copy of its
    environment file the unit makes at start (ExecStartPre, in its RuntimeDirectory), where there is one."""
    visible, ports = {}, {}
    for unit in units:
        path = os.path.join(module.params["started_dir"], sync.unit_stem(unit), "started.env")
        try:
            with open(path) as handle:
                text = handle.read()
        except (OSError, UnicodeDecodeError):
            continue
        env = parse_env_text(text)
        value, port = env.get("CUDA_VISIBLE_DEVICES"), env.get("VLLM_PORT")
        if value is not None:
            visible[unit] = value
        if port is not None and port.isdigit():
            ports[unit] = int(port)
    return visible, ports


def _healthy(module, port):
    """Whether 127.0.0.1:port answers GET /health with 200 (three tries, a second apart)."""
    for attempt in range(3):
        if attempt:
            time.sleep(1)
        try:
            answer = open_url("http://127.0.0.1:%d/health" % port, timeout=module.params["health_timeout"],
                              use_proxy=False, validate_certs=False)
            if answer.getcode() == 200:
                return True
        except Exception:  # pylint: disable=broad-except
            pass  # refused (still loading: bound, not listening), reset, timed out, HTTP error
    return False


def _unhealthy(module, host, planned):
    """The active instance units that do not answer /health with 200 on the port they started with (one
    whose port is not known - not planned, no started copy - counts as not serving)."""
    found = set()
    for unit, state in sorted(host.units.items()):
        if state != "active":
            continue
        port = _port(unit, planned, host, ()) if (unit in planned or unit in (host.ports or {})) else 0
        if not port or not _healthy(module, port):
            found.add(unit)
    return frozenset(found)


def _steps(plan):
    """(return key, value, systemctl arguments or None) of every step of the plan, in order."""
    return [("daemon_reloaded", plan.daemon_reload, ["daemon-reload"]),
            ("stopped", list(plan.stop), ["stop"] + list(plan.stop)),
            ("removed", list(plan.remove), None),
            ("reset_failed", list(plan.reset_failed), ["reset-failed"] + list(plan.reset_failed)),
            ("started", list(plan.start), ["start"] + list(plan.start)),
            # the other target first: an interrupted run never leaves both enabled for the next boot
            ("disabled", list(plan.disable), ["disable"] + list(plan.disable)),
            ("enabled", list(plan.enable), ["enable"] + list(plan.enable))]


def _remove(module, paths, done):
    for path in paths:
        try:
            os.remove(path)
        except FileNotFoundError:
            pass
        except OSError as exc:
            module.fail_json(msg="cannot remove %s: %s" % (path, exc), **done)


def apply(module, plan):
    """Run the plan's steps in order (one systemctl call per step); what was done, by return key.
    A failing step fails the task with what the steps before it did."""
    done = dict((key, False if key == "daemon_reloaded" else []) for key, _value, _args in _steps(plan))
    for key, value, args in _steps(plan):
        if not value:
            continue
        if args is None:
            _remove(module, value, done)
        else:
            _systemctl(module, args, done)
        done[key] = value
    return done


def _step_dicts(steps, planned, host):
    """The rolling plan's steps with the ports and names the caller's tasks need: a unit started by the plan
    listens on its planned port, one running since before on the port it started with."""
    started = set()
    out = []
    for step in steps:
        def ports(units, fresh):
            return sorted(p for p in (_port(u, planned, host, fresh) for u in units) if p)
        during = ports(step.serving, started)
        away = ports(step.out, started)
        started |= set(step.start)
        out.append(dict(out=list(step.out), out_ports=away, start=list(step.start),
                        start_names=[planned[u][1].name for u in step.start], start_ports=ports(step.start, started),
                        serving_ports=during, serving_after_ports=ports(step.serving_after, started)))
    return out


def _port(unit, planned, host, fresh):
    if unit not in fresh and unit in (host.ports or {}):
        return host.ports[unit]
    return planned[unit][1].port if unit in planned else 0


def rolling(module, request, host):
    """strategy=rolling: the result when an order exists (steps for the caller), else None (plain)."""
    try:
        order = sync.plan_rolling(request, host)
    except sync.SyncError as exc:
        module.fail_json(msg="vllm_instances: %s" % exc, units=host.units)
    info = dict(zero_drop=order.zero_drop, zero_drop_reason=order.reason)
    if not order.zero_drop:
        module.warn("vllm_instances: no rolling order keeps an instance serving (%s); switching plainly: requests "
                    "in flight on the stopped instances fail" % order.reason)
    if not order.steps:
        return info
    plan = sync.plan_sync(request, host)
    first = sync.SyncPlan(daemon_reload=plan.daemon_reload, stop=(), remove=plan.remove,
                          reset_failed=plan.reset_failed, start=(), enable=(), disable=())
    done = dict((key, value) for key, value, _args in _steps(first)) if module.check_mode else apply(module, first)
    planned = sync.planned_units(request.layouts)
    info.update(done, steps=_step_dicts(order.steps, planned, host), changed=True, units=host.units)
    if module._diff:
        info["diff"] = dict(before="", after="".join(line + "\n" for line in sync.describe_rolling(order)),
                            before_header="systemd units", after_header="systemd units (the rolling steps)")
    return info


def _restart_files(module, layouts, active, names):
    """The environment files of the instances named in O(restart); fails on a name not planned."""
    layout = next((l for l in layouts if l.kind == active), None)
    known = [i.name for i in layout.instances] if layout else []
    unknown = [n for n in names if n not in known]
    if unknown:
        module.fail_json(msg="vllm_instances: restart names %s, which the active layout %r does not plan "
                         "(its instances: %s); nothing was changed"
                         % (", ".join(unknown), active, ", ".join(known) or "none"))
    return frozenset(layout.env_file_of(n) for n in names) if layout else frozenset()


def _layout(module, data):
    try:
        return sync.layout_from_dict(data)
    except (KeyError, TypeError, ValueError) as exc:
        module.fail_json(msg="vllm_instances: layout %r: every instance needs a 'name' and a list of integer 'gpus' "
                         "(as vllm_layout plans them); got %r (%s: %s)"
                         % (data["kind"], data["instances"], type(exc).__name__, exc))


def main():
    module = AnsibleModule(
        argument_spec=dict(
            layouts=dict(type="list", elements="dict", required=True, options=dict(
                kind=dict(type="str", required=True),
                unit=dict(type="str", required=True),
                target=dict(type="str", required=True),
                env_dir=dict(type="path", required=True),
                instances=dict(type="list", elements="dict", default=[]),
            )),
            active=dict(type="str", required=True),
            changed_env_files=dict(type="list", elements="path", default=[]),
            restart_all=dict(type="bool", default=False),
            daemon_reload=dict(type="bool", default=False),
            restart=dict(type="list", elements="str", default=[]),
            strategy=dict(type="str", choices=["plain", "rolling"], default="plain"),
            started_dir=dict(type="path", default="/run/gpu-fleet-vllm"),
            health_timeout=dict(type="float", default=3.0),
        ),
        supports_check_mode=True,
    )
    p = module.params
    layouts = tuple(_layout(module, layout) for layout in p["layouts"])
    changed_files = frozenset(p["changed_env_files"]) | _restart_files(module, layouts, p["active"], p["restart"])
    request = sync.Request(layouts=layouts, active=p["active"], changed_env_files=changed_files,
                           restart_all=p["restart_all"], daemon_reload=p["daemon_reload"])
    host = read_host(module, layouts)
    # an instance running with other GPUs than planned restarts, like one whose file changed
    request = request._replace(changed_env_files=request.changed_env_files | sync.drifted_env_files(request, host))
    if p["strategy"] == "rolling" and p["health_timeout"] > 0:
        host = host._replace(unhealthy=_unhealthy(module, host, sync.planned_units(request.layouts)))
    info = rolling(module, request, host) if p["strategy"] == "rolling" else {}
    if info.get("steps"):
        module.exit_json(**info)
    try:
        plan = sync.plan_sync(request, host)
    except sync.SyncError as exc:
        module.fail_json(msg="vllm_instances: %s" % exc, units=host.units)
    if module.check_mode:
        done = dict((key, value) for key, value, _args in _steps(plan))
    else:
        done = apply(module, plan)
    result = dict(info, changed=plan.changed, units=host.units, steps=[], **done) if info else \
        dict(changed=plan.changed, units=host.units, **done)
    if module._diff:
        result["diff"] = dict(before="", after="".join(line + "\n" for line in sync.describe(plan)),
                              before_header="systemd units", after_header="systemd units (the steps, in order)")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
