# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the roles recorded on a host, as the compliance checks read it.

Private to the collection. Pure code: no Ansible imports, no I/O. Each role that changes a host
records what it applied in a local fact, ``<facts_dir>/gpu_fleet_<role>.fact`` (JSON; the
directory is ``gpu_fleet_facts_dir``, default ``/etc/ansible/facts.d``):

* ``cuda_stack``: pins, holds, NCCL build and library (from the pin rules, ``_cuda_pins``);
* ``vllm_server``: config directory, venv, unit template, the layouts with their instances and
  which one is active;
* ``housekeeping``: the logrotate and cron paths (empty: that part is turned off);
* ``host_tuning``: the sysctl values applied and those not applicable, the governor.

``gpu_compliance`` reads these records instead of path options and instead of deriving another
role's variables again, so the playbook and the testinfra suite cannot disagree. Where a role has
recorded nothing (a bare host, before a rollout) its checks report ``not_applied`` (a warning,
``_compliance.not_applied``), with the expected values of the pin rules; they never pass.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import posixpath

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._compliance import finding

__all__ = ["RECORDS", "record_path", "parse_records", "active_layout", "recorded_instances", "expected_pins",
           "instance_env_files"]

RECORDS = {
    "cuda_stack": "gpu_fleet_cuda_stack.fact",
    "vllm_server": "gpu_fleet_vllm_server.fact",
    "housekeeping": "gpu_fleet_housekeeping.fact",
    "host_tuning": "gpu_fleet_host_tuning.fact",
}
# The check that says so when a role's record cannot be read.
_CHECK_OF = {"cuda_stack": "packages", "vllm_server": "units", "housekeeping": "logrotate",
             "host_tuning": "sysctl"}


def record_path(facts_dir, role):
    return posixpath.join(facts_dir, RECORDS[role])


def parse_records(texts, facts_dir, host):
    """``texts`` {role: file text or None (absent)} -> ``(records, findings)``: {role: dict or
    None}; a record that is not a JSON object counts as absent, with a warning."""
    records, findings = {}, []
    for role in sorted(RECORDS):
        text = (texts or {}).get(role)
        records[role] = None
        if text is None:
            continue
        try:
            value = json.loads(text)
        except ValueError:
            value = None
        if isinstance(value, dict):
            records[role] = value
            continue
        findings.append(finding(_CHECK_OF[role], "warn", host, "JSON record",
                                "%s is not valid JSON" % record_path(facts_dir, role),
                                "Re-run site.yml --tags %s to rewrite it." % role))
    return records, findings


def active_layout(record):
    """The recorded layout that serves (``active_layout``), or None."""
    layouts = (record or {}).get("layouts") or []
    wanted = (record or {}).get("active_layout") or "full"
    for layout in layouts:
        if layout.get("layout") == wanted:
            return layout
    return None


def recorded_instances(record):
    """The instances of the active layout, as the checks use them (name, gpus, sizes, port)."""
    layout = active_layout(record) or {}
    out = []
    for inst in layout.get("instances") or []:
        out.append({
            "name": inst.get("name"),
            "gpus": [int(g) for g in inst.get("gpus") or []],
            "tensor_parallel_size": int(inst.get("tensor_parallel_size") or 1),
            "pipeline_parallel_size": int(inst.get("pipeline_parallel_size") or 1),
            "port": inst.get("port"),
            "numa_node": inst.get("numa_node"),
        })
    return out


def expected_pins(requested, record, explicit=None):
    """What the pin checks compare with. ``requested``: the pin rules applied to the inventory's
    cuda_stack settings (``_cuda_pins.resolve``); ``record``: cuda_stack's record or None;
    ``explicit``: {package: version} given instead of the pins (compliance_packages)."""
    source = record or requested
    return {
        "source": "record" if record else "pin rules",
        "recorded": record is not None,
        "wanted": dict(explicit) if explicit else dict(source.get("pins") or {}),
        "explicit": bool(explicit),
        "requested_pins": dict(requested.get("pins") or {}),
        "own_holds": list((record or {}).get("holds") or []),
        "min_driver": source.get("min_driver") or requested.get("min_driver") or "",
        "install_nccl": bool(source.get("install_nccl", True)),
        "nccl_release": source.get("nccl_release") or "",
        "nccl_cuda": source.get("nccl_cuda") or "",
        "cuda_version": source.get("cuda_version") or requested.get("cuda_version") or "",
    }


def instance_env_files(record):
    """The environment files of the active layout's instances (``<env_dir>/<name>.env``)."""
    layout = active_layout(record) or {}
    env_dir = layout.get("env_dir") or (record or {}).get("config_dir") or "/etc/vllm"
    return [posixpath.join(env_dir, "%s.env" % inst.get("name")) for inst in layout.get("instances") or []]
