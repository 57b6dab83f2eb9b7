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

import re

try:
    from urllib.parse import urlsplit
except ImportError:  # pragma: no cover - Python 2
    from urlparse import urlsplit

__all__ = [
    "parameter_problem",
    "instance_problem",
    "restarts",
    "unit_problem",
    "completion_request",
    "completion_problem",
]


#: An instance name as the layout planner makes them (n0-0) and systemd takes after the '@'.
_NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.:@-]*$")


def port_number(value):
    """``value`` as a TCP port (an int, or a string of digits) 1-65535; None when it is none."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and 0 < value < 65536:
        return value
    return None


def instance_problem(inst, index=0):
    """Why a planned instance cannot be waited for (it needs ``name`` and ``port``); None when fine."""
    if not isinstance(inst, dict) or "name" not in inst or "port" not in inst:
        return "every instance needs 'name' and 'port'; got %r" % (inst,)
    if not isinstance(inst["name"], str) or not _NAME_RE.match(inst["name"]):
        return ("instances[%d].name is %r: an instance name is a string of letters, digits, '.', '_', ':', '@' "
                "and '-' (as the layout planner names them, e.g. n0-0)" % (index, inst["name"]))
    if port_number(inst["port"]) is None:
        return "instances[%d].port is %r: give the instance's TCP port, a number 1-65535" % (index, inst["port"])
    return None


def _template_problem(template):
    """Why ``unit_template`` is not a unit name with one ``%s`` for the instance; None when fine."""
    rest = template.replace("%%", "")
    if rest.count("%s") != 1 or "%" in rest.replace("%s", ""):
        return ("unit_template is %r: it needs exactly one %%s (the instance name) and no other %% directive, "
                "e.g. vllm@%%s.service" % (template,))
    return None


def _url_problem(url):
    """Why ``endpoint_url`` is not an http(s) base URL; None when it is (or is not given)."""
    if url is None:
        return None
    try:
        parts = urlsplit(url)
        sound = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError:  # a port out of range or not a number, an unclosed [ ...
        sound = False
    if not sound:
        return ("endpoint_url is %r: give the endpoint's base URL, http(s)://host[:port] "
                "(e.g. http://127.0.0.1:8000)" % (url,))
    return None


def parameter_problem(params):
    """The first thing wrong with vllm_wait_ready's parameters (option, value, fix); None when sound."""
    if not params["instances"]:
        return "instances is []: give the planned instances (ansible_facts.vllm_layout.instances)"
    for index, inst in enumerate(params["instances"]):
        problem = instance_problem(inst, index)
        if problem:
            return problem
    problem = _url_problem(params.get("endpoint_url"))
    if problem:
        return problem
    problem = _template_problem(params["unit_template"])
    if problem:
        return problem
    if "/" in params["log_prefix"] or "\x00" in params["log_prefix"]:
        return "log_prefix is %r: a file name prefix holds no '/' (e.g. degraded-)" % (params["log_prefix"],)
    for key, low, what in (("timeout", 0, ">= 0"), ("max_restarts", 0, ">= 0")):
        if params[key] < low:
            return "%s is %r: give a number %s" % (key, params[key], what)
    if not 0 < params["interval"] < float("inf"):
        return "interval is %r: give the seconds between polls, a finite number > 0" % (params["interval"],)
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
