#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_drain
short_description: Wait until a vLLM instance taken out of the endpoint holds no request
version_added: 0.3.0
description:
  - One step of a switch that drops no request. The instance was taken out of the load-balanced
    endpoint (nginx reloaded without it, so that nginx's old workers finish the requests they are
    proxying and new requests go to the other instances); this module waits until the instance itself holds no
    request before it is stopped.
  - Polls C(GET http://127.0.0.1:<port>/metrics) of the instance and sums
    C(vllm:num_requests_running) and C(vllm:num_requests_waiting) over all their samples (every
    engine and model). Drained when the sum is 0 in two polls in a row, or when nothing answers on
    the port (nothing to drain).
  - A server that exports neither gauge (C(--disable-log-stats)) cannot be watched; the module then
    waits the whole O(timeout) and says so.
  - The timeout is not a failure (the host is half-way through a switch and must go on); the
    result says how many requests were still held and a warning names them. vLLM releases with
    C(--shutdown-timeout) may still finish them while they stop.
  - Changes nothing on the host.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  port:
    description: TCP port of the instance on 127.0.0.1.
    type: int
    required: true
  timeout:
    description: Seconds to wait at most.
    type: int
    default: 60
  settle:
    description:
      - Seconds to wait before the first poll, for the proxy's reload to take effect (a request
        accepted just before it may not have reached the instance yet).
    type: float
    default: 1.0
  interval:
    description: Seconds between polls.
    type: float
    default: 0.5
notes:
  - Supports check mode (it only reads; in check mode it does not wait).
  - A non-positive O(timeout) or O(interval), or a port outside 1-65535, fails at once naming the option.
seealso:
  - module: gpu_fleet.vllm_serving.vllm_instances
  - module: gpu_fleet.vllm_serving.vllm_wait_ready
"""

EXAMPLES = r"""
- name: Wait until n0-1 holds no request (it is out of the endpoint)
  gpu_fleet.vllm_serving.vllm_drain:
    port: 8002
    timeout: 120
"""

RETURN = r"""
drained:
  description: Whether the instance held no request when the module returned (true when nothing answered on the port).
  returned: success
  type: bool
  sample: true
in_flight:
  description: Requests the instance held at the last poll (running + waiting); null when its /metrics had neither gauge, or nothing answered.
  returned: success
  type: int
  sample: 0
listening:
  description: Whether the instance answered /metrics at the last poll.
  returned: success
  type: bool
  sample: true
seconds:
  description: Seconds waited.
  returned: success
  type: float
  sample: 2.6
"""

import time

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.six.moves.urllib.error import HTTPError, URLError
from ansible.module_utils.urls import open_url

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._vllm_metrics import in_flight


def _metrics(port):
    """(answered, text) of GET /metrics on the instance."""
    try:
        resp = open_url("http://127.0.0.1:%d/metrics" % port, method="GET", timeout=5, follow_redirects="none")
        return True, resp.read().decode("utf-8", "replace")
    except HTTPError:
        return True, ""
    except (URLError, OSError, ValueError):
        return False, ""


def drain(port, timeout, settle, interval, sleep=time.sleep, clock=time.monotonic):
    """Poll until drained or the timeout: dict(drained, in_flight, listening, seconds)."""
    start = clock()
    sleep(settle)
    zeros, held, answered = 0, None, False
    while True:
        answered, text = _metrics(port)
        held = in_flight(text) if answered else None
        if not answered:
            return dict(drained=True, in_flight=None, listening=False, seconds=round(clock() - start, 2))
        zeros = zeros + 1 if held == 0 else 0
        if zeros >= 2:
            return dict(drained=True, in_flight=0, listening=True, seconds=round(clock() - start, 2))
        if clock() - start >= timeout:
            return dict(drained=False, in_flight=held, listening=True, seconds=round(clock() - start, 2))
        sleep(interval)


def main():
    module = AnsibleModule(
        argument_spec=dict(port=dict(type="int", required=True), timeout=dict(type="int", default=60),
                           settle=dict(type="float", default=1.0), interval=dict(type="float", default=0.5)),
        supports_check_mode=True,
    )
    p = module.params
    for key, ok in (("port", 1 <= p["port"] <= 65535), ("timeout", p["timeout"] > 0), ("interval", p["interval"] > 0),
                    ("settle", p["settle"] >= 0)):
        if not ok:
            module.fail_json(msg="vllm_drain: %s is %r: %s" % (
                key, p[key], "a TCP port is 1-65535" if key == "port" else "must be positive"))
    if module.check_mode:
        module.exit_json(changed=False, drained=True, in_flight=None, listening=False, seconds=0.0)
    result = drain(p["port"], p["timeout"], p["settle"], p["interval"])
    if not result["drained"]:
        module.warn("the instance on port %d still held %s request(s) after %d s; stopping it aborts them%s" % (
            p["port"], "an unknown number of" if result["in_flight"] is None else result["in_flight"], p["timeout"],
            " (its /metrics has no vllm:num_requests_running: --disable-log-stats?)" if result["in_flight"] is None else ""))
    module.exit_json(changed=False, **result)


if __name__ == "__main__":
    main()
