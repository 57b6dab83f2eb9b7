#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_wait_ready
short_description: Wait until every vLLM instance answers /health and the endpoint a real completion; fail fast on a crash loop
version_added: 0.1.0
description:
  - Polls C(GET /health) of every planned vLLM instance on 127.0.0.1 until each answers 200,
    tolerating refused connections while the model loads (which takes minutes for large models).
  - Inside the same loop it watches each instance's systemd unit (C(ActiveState), C(NRestarts)),
    so a crash-looping or failed instance fails the task at once with the last lines of its log
    instead of waiting out the timeout.
  - C(/health) is liveness only (it can answer 200 while the engine serves nothing), so once all
    instances are up it sends one completion with C(max_tokens=1) for the served model through the
    load-balanced endpoint. A 401 or 403 there is a configuration error and fails at once.
  - Changes nothing.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  instances:
    description:
      - The planned instances (C(ansible_facts.vllm_layout.instances)); each needs C(name) and
        C(port).
    type: list
    elements: dict
    required: true
  model_name:
    description: Served model name used for the test completion.
    type: str
    required: true
  endpoint_url:
    description:
      - Base URL of the load-balanced endpoint (nginx). When omitted, the completion is sent to
        the first instance directly.
    type: str
  api_key:
    description: Bearer token for C(/v1/*) when the instances run with an API key.
    type: str
  unit_template:
    description: systemd unit name of an instance, C(%s) standing for the instance name.
    type: str
    default: vllm@%s.service
  log_dir:
    description:
      - Directory of the instances' log files (C(<name>.log)), whose last lines are quoted on
        failure. No component of it may be a symbolic link.
    type: path
    default: /var/log/vllm
  log_owner:
    description:
      - The user that writes the instances' log files (the vLLM service user, C(vllm_server_user)).
        The last lines are quoted only from a regular file owned by this user or root, opened
        without following a symbolic link (the user could have put one to a root-only file there).
    type: str
    default: vllm
  log_prefix:
    description: Prefix of the log file names (C(<log_prefix><name>.log)), e.g. C(degraded-) for the
      degraded layout's instances.
    type: str
    default: ""
  timeout:
    description: Seconds to wait for all instances and the completion, in total.
    type: int
    default: 900
  interval:
    description: Seconds between polls.
    type: float
    default: 1.0
  max_restarts:
    description:
      - Fail when a unit restarted more than this many times during the wait (crash loop).
    type: int
    default: 2
notes:
  - Supports check mode (it only reads).
  - Bad parameters (an empty O(instances), an instance without a name or a TCP port, a
    O(unit_template) without exactly one C(%s), a O(log_prefix) holding C(/), a non-positive
    O(interval)) fail at once with a message naming the option and the value.
"""

EXAMPLES = r"""
- name: Wait for the planned instances
  gpu_fleet.vllm_serving.vllm_wait_ready:
    instances: "{{ vllm_layout.instances }}"
    model_name: "{{ vllm_layout.model.name }}"
    endpoint_url: http://127.0.0.1:8000
    timeout: 1200
"""

RETURN = r"""
instances:
  description: Per instance, seconds until C(/health) answered 200.
  returned: success
  type: dict
  sample: {"n0-0": 12.4, "n1-0": 13.1}
completion:
  description: Status and the answering instance of the test completion.
  returned: success
  type: dict
  sample: {"status": 200, "url": "http://127.0.0.1:8000/v1/completions", "seconds": 0.05}
elapsed:
  description: Seconds the whole wait took.
  returned: always
  type: float
  sample: 14.2
"""

import json
import os
import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _readiness
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _safe_read
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._host_readings import parse_systemctl_show

ARGUMENT_SPEC = dict(
    instances=dict(type="list", elements="dict", required=True),
    model_name=dict(type="str", required=True),
    endpoint_url=dict(type="str"),
    api_key=dict(type="str", no_log=True),
    unit_template=dict(type="str", default="vllm@%s.service"),
    log_dir=dict(type="path", default="/var/log/vllm"),
    log_owner=dict(type="str", default="vllm"),
    log_prefix=dict(type="str", default=""),
    timeout=dict(type="int", default=900),
    interval=dict(type="float", default=1.0),
    max_restarts=dict(type="int", default=2),
)


def _tail(path, owner, lines=20):
    """The last ``lines`` lines of the log at ``path`` by the rule of _safe_read (no link
    followed, a regular file of ``owner`` or root), or why they are not shown."""
    uids, names = _safe_read.service_owners(owner)
    try:
        data = _safe_read.read_tail(path, uids, 8192, names).decode("utf-8", "replace")
    except _safe_read.Refused as exc:
        return "(log not read: %s)" % exc.reason
    except (IOError, OSError) as exc:
        return "(no log: %s)" % exc
    return "\n".join(data.splitlines()[-lines:])


def _unit_state(module, unit):
    rc, out, err = module.run_command(
        ["systemctl", "show", "-p", "ActiveState", "-p", "SubState", "-p", "NRestarts", "-p", "Result", unit],
        environ_update={"LC_ALL": "C"},
    )
    return parse_systemctl_show(out)


def _http(url, method="GET", body=None, headers=None, timeout=5):
    data = json.dumps(body).encode("utf-8") if body is not None else None
    hdrs = {"Content-Type": "application/json"} if body is not None else {}
    hdrs.update(headers or {})
    try:
        resp = open_url(url, method=method, data=data, headers=hdrs, timeout=timeout,
                        validate_certs=False, follow_redirects="none")
        return resp.getcode(), resp.read().decode("utf-8", "replace")
    except HTTPError as exc:
        return exc.code, exc.read().decode("utf-8", "replace") if hasattr(exc, "read") else ""
    except (URLError, OSError, ValueError) as exc:
        return None, str(exc)


class Waiter(object):
    """One wait: the deadline, each unit's restart count when it began, the instances ready."""

    def __init__(self, module):
        self.module = module
        self.params = module.params
        self.start = time.time()
        self.deadline = self.start + self.params["timeout"]
        self.baseline = dict((inst["name"], _readiness.restarts(_unit_state(module, self.unit(inst))))
                             for inst in self.params["instances"])

    def unit(self, inst):
        return self.params["unit_template"] % inst["name"]

    def elapsed(self):
        return round(time.time() - self.start, 2)

    def fail(self, msg):
        self.module.fail_json(msg=msg, elapsed=self.elapsed())

    def fail_instance(self, inst, why):
        unit = self.unit(inst)
        log = os.path.join(self.params["log_dir"], "%s%s.log" % (self.params["log_prefix"], inst["name"]))
        self.fail("%s (port %s) is not ready: %s. Last lines of %s:\n%s\nMore: journalctl -u %s"
                  % (unit, inst["port"], why, log, _tail(log, self.params["log_owner"]), unit))

    def healthy(self, inst):
        """True once GET /health answers 200; fails the task when the unit is broken for good."""
        state = _unit_state(self.module, self.unit(inst))
        why = _readiness.unit_problem(state, _readiness.restarts(state) - self.baseline[inst["name"]],
                                      self.params["max_restarts"])
        if why:
            self.fail_instance(inst, why)
        status, dummy = _http("http://127.0.0.1:%s/health" % inst["port"], timeout=3)
        return status == 200

    def wait_healthy(self):
        """{instance: seconds until healthy}, polling every instance until all are."""
        ready = {}
        pending = list(self.params["instances"])
        while pending:
            for inst in list(pending):
                if self.healthy(inst):
                    ready[inst["name"]] = self.elapsed()
                    pending.remove(inst)
            if not pending:
                break
            if time.time() > self.deadline:
                self.fail_instance(pending[0], "GET /health did not answer 200 within %ds" % self.params["timeout"])
            time.sleep(self.params["interval"])
        return ready

    def wait_completion(self):
        """The first successful one-token completion: {status, url, seconds}."""
        p = self.params
        url, body, headers = _readiness.completion_request(p["endpoint_url"], p["instances"][0]["port"],
                                                           p["model_name"], p["api_key"])
        while True:
            t0 = time.time()
            status, text = _http(url, method="POST", body=body, headers=headers, timeout=60)
            if status == 200:
                return {"status": status, "url": url, "seconds": round(time.time() - t0, 3)}
            problem = _readiness.completion_problem(url, status, text, p["model_name"])
            if problem:
                self.fail(problem)
            if time.time() > self.deadline:
                self.fail("POST %s (max_tokens=1) did not succeed within %ds; last answer: %s %s"
                          % (url, p["timeout"], status, text[:500]))
            time.sleep(p["interval"])


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    problem = _readiness.parameter_problem(module.params)
    if problem:
        module.fail_json(msg="vllm_wait_ready: %s" % problem)
    for inst in module.params["instances"]:
        inst["port"] = _readiness.port_number(inst["port"])
    waiter = Waiter(module)
    ready = waiter.wait_healthy()
    completion = waiter.wait_completion()
    module.exit_json(changed=False, instances=ready, completion=completion, elapsed=waiter.elapsed())


if __name__ == "__main__":
    main()
