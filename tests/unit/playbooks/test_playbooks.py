# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Rollout keywords and composition of the playbooks, read from the YAML (the molecule scenarios
run them)."""
import os

import yaml

PLAYBOOKS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "playbooks")


def _plays(name):
    with open(os.path.join(PLAYBOOKS, name)) as handle:
        return yaml.safe_load(handle)


def test_site_serves_in_batches_of_25_percent_by_default():
    serving = [p for p in _plays("site.yml") if p.get("roles")][0]
    assert serving["hosts"] == "gpu_hosts"
    assert serving["serial"] == "{{ gpu_fleet_serial | default('25%') }}"
    assert serving["max_fail_percentage"] == "{{ gpu_fleet_max_fail_percentage | default(0) }}"
    # the readiness gate is part of vllm_server, the last serving role of the batch; only the
    # monitoring (which never restarts an instance) follows it
    roles = [r["role"] for r in serving["roles"]]
    assert roles[-2:] == ["gpu_fleet.vllm_serving.vllm_server", "gpu_fleet.vllm_serving.vllm_monitoring"]


def test_site_plans_every_host_before_any_batch_changes_one():
    first = _plays("site.yml")[0]
    assert "serial" not in first
    assert any(t.get("ansible.builtin.import_role", {}).get("tasks_from") == "plan" for t in first["tasks"])


def test_rollback_plans_then_switches_to_degraded_by_default():
    play = _plays("rollback.yml")[0]
    assert play["vars"]["vllm_server_active_layout"] == "{{ gpu_fleet_rollback_to | default('degraded') }}"
    steps = [t["ansible.builtin.import_role"].get("tasks_from", "main") for t in play["tasks"]]
    assert steps == ["main", "plan", "switch"]


def test_site_plan_play_is_the_compliance_stage_with_preflight_as_alias():
    first = _plays("site.yml")[0]
    for task in first["tasks"]:
        assert {"always", "compliance", "preflight"} <= set(task["tags"]), task["name"]


def test_stage_playbooks_are_one_play_running_their_role():
    for name, role in (("compliance.yml", "compliance"), ("nccl_baseline.yml", "nccl_baseline"),
                       ("diagnose.yml", "diagnostics")):
        plays = _plays(name)
        assert len(plays) == 1 and plays[0]["gather_facts"] is False, name
        assert [r["role"] for r in plays[0]["roles"]] == ["gpu_fleet.vllm_serving." + role], name
        assert "tasks" not in plays[0], name


def test_preflight_is_only_the_deprecated_alias_of_compliance():
    with open(os.path.join(PLAYBOOKS, "preflight.yml")) as handle:
        text = handle.read()
    assert "DEPRECATED" in text
    assert yaml.safe_load(text) == [{"name": "Compliance (deprecated alias, use playbooks/compliance.yml)",
                                     "ansible.builtin.import_playbook": "compliance.yml"}]
