# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""When a vLLM instance counts as ready, or as broken for good, while vllm_wait_ready waits:
the unit's state, its restarts, and the answer of the first completion.

Private to the collection. Pure code: no Ansible imports, no I/O (the module polls systemd and
HTTP and passes the answers in).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = [
    "instance_problem",
    "restarts",
    "unit_problem",
    "completion_request",
    "completion_problem",
]


def instance_problem(inst):
    """Why a planned instance cannot be waited for (it needs ``name`` and ``port``); None when fine."""
    if "name" not in inst or "port" not in inst:
        return "every instance needs 'name' and 'port'; got %r" % (inst,)
    return None


def restarts(state):
    """``NRestarts`` of a ``systemctl show`` state as an int (0 when not shown)."""
    return int(state.get("NRestarts", "0") or 0)


def unit_problem(state, restarted, max_restarts):
    """Why waiting for this unit is pointless (failed, stopped, crash loop); None while it may
    still come up. ``restarted``: restarts since the wait began."""
    if state.get("ActiveState") == "failed":
        return "unit failed (result %s)" % state.get("Result")
    if state.get("ActiveState") == "inactive":
        return "unit is not running"
    if restarted > max_restarts:
        return "unit restarted %d times while waiting (crash loop)" % restarted
    return None


def completion_request(endpoint_url, first_port, model_name, api_key=None):
    """(url, body, headers) of the one-token completion that proves the endpoint serves."""
    base = endpoint_url or "http://127.0.0.1:%s" % first_port
    headers = {"Authorization": "Bearer %s" % api_key} if api_key else {}
    return base.rstrip("/") + "/v1/completions", {"model": model_name, "prompt": "ping", "max_tokens": 1}, headers


def completion_problem(url, status, text, model_name):
    """A completion answer that no amount of waiting fixes (a configuration error): its message;
    None for success or a slow start."""
    if status in (401, 403):
        return ("POST %s answered %s: the API key is wrong or missing (a configuration error, not a "
                "slow start). Check vllm_server_api_key on the controller and VLLM_API_KEY of the instances."
                % (url, status))
    if status == 404 and "model" in text.lower():
        return ("POST %s answered 404 for model %r: the served model name differs. Answer: %s"
                % (url, model_name, text[:500]))
    return None
