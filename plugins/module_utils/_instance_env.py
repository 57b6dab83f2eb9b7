# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instance environment file: ``<config dir>/<instance>.env`` as the vllm_server role
renders it (roles/vllm_server/templates/instance.env.j2) and systemd reads it (EnvironmentFile=),
and the per-instance values of ``vllm_server_instance_environment`` written into it
(:func:`expand_instance_value`, through the ``instance_environment`` filter).

The one reader of that format in the collection: ``nccl_facts`` (each instance's
VLLM_NCCL_SO_PATH) and the molecule suites use it (``gpu_compliance`` reads the instances from
vllm_server's record instead). The stand-alone monitoring collector
(roles/vllm_monitoring/files/gpu_fleet_monitor.py) runs without the collection and keeps its own
copy; tests/unit/plugins/module_utils/test_instance_env.py runs both on the rendered template.

Private to the collection. Pure code: no Ansible imports, no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = [
    "parse_env_text",
    "instance_record",
    "instances_from_env",
    "PLACEHOLDERS",
    "unknown_placeholders",
    "expand_instance_value",
]

# What a value of vllm_server_instance_environment may refer to, per instance.
PLACEHOLDERS = ("name", "index", "gpus", "first_gpu", "numa_node")
_PLACEHOLDER = re.compile(r"\{([^{}]*)\}")

_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


def parse_env_text(text):
    """KEY=VALUE pairs of a systemd EnvironmentFile -> dict: comment (``#``, ``;``) and blank
    lines skipped, an ``export`` prefix and one pair of enclosing quotes removed, lines without a
    valid variable name ignored."""
    env = {}
    for raw in (text or "").splitlines():
        line = raw.strip()
        if not line or line[0] in "#;":
            continue
        if line.startswith("export "):
            line = line[len("export "):].lstrip()
        key, sep, value = line.partition("=")
        key = key.strip()
        if not sep or not _ENV_KEY.match(key):
            continue
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        env[key] = value
    return env


def instance_record(name, text):
    """The instance one environment file describes: ``{"name", "gpus": [int], "port": int or
    None (no numeric VLLM_PORT), "tensor_parallel_size", "pipeline_parallel_size"}`` (sizes 1
    when unset)."""
    env = parse_env_text(text)
    port = env.get("VLLM_PORT", "")
    return {
        "name": name,
        "gpus": [int(g) for g in re.findall(r"\d+", env.get("CUDA_VISIBLE_DEVICES", ""))],
        "tensor_parallel_size": int(env.get("VLLM_TENSOR_PARALLEL_SIZE") or 1),
        "pipeline_parallel_size": int(env.get("VLLM_PIPELINE_PARALLEL_SIZE") or 1),
        "port": int(port) if port.isdigit() else None,
    }


def instances_from_env(files):
    """Deployed instances from ``{instance name: env file text}``, sorted by name."""
    return [instance_record(name, text) for name, text in sorted((files or {}).items())]


def unknown_placeholders(value):
    """The ``{...}`` placeholders of ``value`` that are not in PLACEHOLDERS, in order."""
    return [name for name in _PLACEHOLDER.findall(str(value)) if name not in PLACEHOLDERS]


def expand_instance_value(value, instance, index):
    """``value`` with its placeholders replaced for one planned instance: ``{name}`` (n0-1),
    ``{index}`` (its position in its layout, from 0), ``{gpus}`` (0,1), ``{first_gpu}`` and
    ``{numa_node}`` (empty when the plan has none). ValueError on an unknown placeholder."""
    unknown = unknown_placeholders(value)
    if unknown:
        raise ValueError("unknown placeholder {%s} in %r (known: %s)" % (
            unknown[0], value, ", ".join("{%s}" % p for p in PLACEHOLDERS)))
    gpus = [str(g) for g in instance.get("gpus") or ()]
    numa = instance.get("numa_node")
    values = {"name": str(instance["name"]), "index": str(index), "gpus": ",".join(gpus),
              "first_gpu": gpus[0] if gpus else "", "numa_node": "" if numa is None else str(numa)}
    return _PLACEHOLDER.sub(lambda m: values[m.group(1)], str(value))
