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
    C(enable) of the active target and C(disable) of the others."
  - An instance keeps running only when it runs, is planned in the active layout and neither its
    environment file (O(changed_env_files)) nor a file every instance reads (O(restart_all)) changed.
    Everything else that holds a GPU - stale instances, changed ones and every instance of the other
    layouts - is stopped before anything starts, so two vLLM servers never hold one GPU.
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
          - Its planned instances as M(gpu_fleet.vllm_serving.vllm_layout) returns them; C(name) and
            C(gpus) are read, other keys are ignored.
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
notes:
  - Supports check mode (reads the units and reports what it would do) and diff mode (the steps, in order).
  - systemctl runs with C(LC_ALL=C); every call is an argument list, no shell.
seealso:
  - module: gpu_fleet.vllm_serving.vllm_layout
  - module: gpu_fleet.vllm_serving.vllm_wait_ready
  - module: gpu_fleet.vllm_serving.owned_files
"""

EXAMPLES = r"""
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
units:
  description: ACTIVE state of every instance unit systemd listed before the run.
  returned: success
  type: dict
  sample: {"vllm@n0-0.service": "active", "vllm@n1-0.service": "failed"}
"""

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _instance_sync as sync

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
    """The HostState: instance units, targets, environment files (read-only, also in check mode)."""
    patterns = ["%s@*.service" % layout.unit for layout in layouts]
    listed = _systemctl(module, ["list-units", "--all", "--plain", "--no-legend", "--full"] + patterns)
    shown = _systemctl(module, ["show", "-p", "Id", "-p", "ActiveState", "-p", "UnitFileState"]
                       + [layout.target for layout in layouts])
    return sync.HostState(units=sync.parse_list_units(listed), targets=sync.parse_show(shown),
                          env_files=_env_files(module, layouts))


def _steps(plan):
    """(return key, value, systemctl arguments or None) of every step of the plan, in order."""
    return [("daemon_reloaded", plan.daemon_reload, ["daemon-reload"]),
            ("stopped", list(plan.stop), ["stop"] + list(plan.stop)),
            ("removed", list(plan.remove), None),
            ("reset_failed", list(plan.reset_failed), ["reset-failed"] + list(plan.reset_failed)),
            ("started", list(plan.start), ["start"] + list(plan.start)),
            ("enabled", list(plan.enable), ["enable"] + list(plan.enable)),
            ("disabled", list(plan.disable), ["disable"] + list(plan.disable))]


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
        ),
        supports_check_mode=True,
    )
    p = module.params
    layouts = tuple(_layout(module, layout) for layout in p["layouts"])
    request = sync.Request(layouts=layouts, active=p["active"], changed_env_files=frozenset(p["changed_env_files"]),
                           restart_all=p["restart_all"], daemon_reload=p["daemon_reload"])
    host = read_host(module, layouts)
    try:
        plan = sync.plan_sync(request, host)
    except sync.SyncError as exc:
        module.fail_json(msg="vllm_instances: %s" % exc, units=host.units)
    if module.check_mode:
        done = dict((key, value) for key, value, _args in _steps(plan))
    else:
        done = apply(module, plan)
    result = dict(changed=plan.changed, units=host.units, **done)
    if module._diff:
        result["diff"] = dict(before="", after="".join(line + "\n" for line in sync.describe(plan)),
                              before_header="systemd units", after_header="systemd units (the steps, in order)")
    module.exit_json(**result)


if __name__ == "__main__":
    main()
