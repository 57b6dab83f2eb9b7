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
short_description: Wait until vLLM instances are healthy and the endpoint answers a completion
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
    description: Directory of the instances' log files (C(<name>.log)), quoted on failure.
    type: path
    default: /var/log/vllm
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


def _tail(path, lines=20):
    try:
        with open(path, "rb") as handle:
            handle.seek(0, os.SEEK_END)
            size = handle.tell()
            handle.seek(max(0, size - 8192))
            data = handle.read().decode("utf-8", "replace")
    except (IOError, OSError) as exc:
        return "(no log: %s)" % exc
    return "\n".join(data.splitlines()[-lines:])


def _unit_state(module, unit):
    rc, out, err = module.run_command(
        ["systemctl", "show", "-p", "ActiveState", "-p", "SubState", "-p", "NRestarts", "-p", "Result", unit],
        environ_update={"LC_ALL": "C"},
    )
    state = {}
    for line in out.splitlines():
        if "=" in line:
            key, value = line.split("=", 1)
            state[key] = value
    return state


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


def main():
    module = AnsibleModule(
        argument_spec=dict(
            instances=dict(type="list", elements="dict", required=True),
            model_name=dict(type="str", required=True),
            endpoint_url=dict(type="str"),
            api_key=dict(type="str", no_log=True),
            unit_template=dict(type="str", default="vllm@%s.service"),
            log_dir=dict(type="path", default="/var/log/vllm"),
            log_prefix=dict(type="str", default=""),
            timeout=dict(type="int", default=900),
            interval=dict(type="float", default=1.0),
            max_restarts=dict(type="int", default=2),
        ),
        supports_check_mode=True,
    )
    params = module.params
    instances = params["instances"]
    for inst in instances:
        if "name" not in inst or "port" not in inst:
            module.fail_json(msg="vllm_wait_ready: every instance needs 'name' and 'port'; got %r" % (inst,))
    start = time.time()
    deadline = start + params["timeout"]
    ready = {}
    baseline = {}
    for inst in instances:
        unit = params["unit_template"] % inst["name"]
        baseline[inst["name"]] = int(_unit_state(module, unit).get("NRestarts", "0") or 0)

    def fail_instance(inst, why):
        unit = params["unit_template"] % inst["name"]
        log = os.path.join(params["log_dir"], "%s%s.log" % (params["log_prefix"], inst["name"]))
        module.fail_json(
            msg="%s (port %s) is not ready: %s. Last lines of %s:\n%s\nMore: journalctl -u %s"
            % (unit, inst["port"], why, log, _tail(log), unit),
            elapsed=round(time.time() - start, 2),
        )

    pending = list(instances)
    while pending:
        for inst in list(pending):
            unit = params["unit_template"] % inst["name"]
            state = _unit_state(module, unit)
            restarts = int(state.get("NRestarts", "0") or 0) - baseline[inst["name"]]
            if state.get("ActiveState") == "failed":
                fail_instance(inst, "unit failed (result %s)" % state.get("Result"))
            if state.get("ActiveState") == "inactive":
                fail_instance(inst, "unit is not running")
            if restarts > params["max_restarts"]:
                fail_instance(inst, "unit restarted %d times while waiting (crash loop)" % restarts)
            status, _body = _http("http://127.0.0.1:%s/health" % inst["port"], timeout=3)
            if status == 200:
                ready[inst["name"]] = round(time.time() - start, 2)
                pending.remove(inst)
        if not pending:
            break
        if time.time() > deadline:
            fail_instance(pending[0], "GET /health did not answer 200 within %ds" % params["timeout"])
        time.sleep(params["interval"])

    base = params["endpoint_url"] or "http://127.0.0.1:%s" % instances[0]["port"]
    url = base.rstrip("/") + "/v1/completions"
    headers = {}
    if params["api_key"]:
        headers["Authorization"] = "Bearer %s" % params["api_key"]
    body = {"model": params["model_name"], "prompt": "ping", "max_tokens": 1}
    while True:
        t0 = time.time()
        status, text = _http(url, method="POST", body=body, headers=headers, timeout=60)
        if status == 200:
            break
        if status in (401, 403):
            module.fail_json(
                msg="POST %s answered %s: the API key is wrong or missing (a configuration error, not a "
                "slow start). Check vllm_server_api_key on the controller and VLLM_API_KEY of the instances."
                % (url, status),
                elapsed=round(time.time() - start, 2),
            )
        if status == 404 and "model" in text.lower():
            module.fail_json(
                msg="POST %s answered 404 for model %r: the served model name differs. Answer: %s"
                % (url, params["model_name"], text[:500]),
                elapsed=round(time.time() - start, 2),
            )
        if time.time() > deadline:
            module.fail_json(
                msg="POST %s (max_tokens=1) did not succeed within %ds; last answer: %s %s"
                % (url, params["timeout"], status, text[:500]),
                elapsed=round(time.time() - start, 2),
            )
        time.sleep(params["interval"])
    module.exit_json(
        changed=False,
        instances=ready,
        completion={"status": status, "url": url, "seconds": round(time.time() - t0, 3)},
        elapsed=round(time.time() - start, 2),
    )


if __name__ == "__main__":
    main()
