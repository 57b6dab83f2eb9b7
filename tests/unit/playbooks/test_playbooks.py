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


def _plan_play():
    """site.yml's first play on the GPU hosts (play 0 checks the inventory on the controller)."""
    plays = _plays("site.yml")
    assert plays[0]["hosts"] == "localhost" and plays[1]["hosts"] == "gpu_hosts"
    return plays[1]


def test_site_refuses_an_inventory_without_gpu_hosts_first():
    first = _plays("site.yml")[0]
    assert first["gather_facts"] is False
    assert [t["name"] for t in first["tasks"]] == ["Refuse an inventory without GPU hosts"]
    assert "groups['gpu_hosts']" in first["tasks"][0]["ansible.builtin.assert"]["that"]


def test_site_plans_every_host_before_any_batch_changes_one():
    first = _plan_play()
    assert "serial" not in first
    assert any(t.get("ansible.builtin.import_role", {}).get("tasks_from") == "plan" for t in first["tasks"])


def test_site_validates_every_changing_role_in_the_first_play():
    imports = [t["ansible.builtin.import_role"] for t in _plan_play()["tasks"] if "ansible.builtin.import_role" in t]
    entries = dict((i["name"].split(".")[-1], i.get("tasks_from")) for i in imports if i.get("tasks_from") in ("validate", "plan"))
    assert entries == {"host_tuning": "validate", "housekeeping": "validate", "cuda_stack": "validate",
                       "model_store": "validate", "vllm_monitoring": "validate", "vllm_server": "plan"}
    assert {"name": "gpu_fleet.vllm_serving.common", "tasks_from": "spec_types"} in imports


def test_rollback_plans_then_switches_to_degraded_by_default():
    play = _plays("rollback.yml")[0]
    assert play["vars"]["vllm_server_active_layout"] == "{{ gpu_fleet_rollback_to | default('degraded') }}"
    steps = [t["ansible.builtin.import_role"].get("tasks_from", "main") for t in play["tasks"] if "ansible.builtin.import_role" in t]
    assert steps == ["main", "plan", "switch"]
    assert "gpu_fleet_rollback_to" in play["tasks"][0]["ansible.builtin.assert"]["that"]


def test_site_plan_play_is_the_compliance_stage_with_preflight_as_alias():
    first = _plan_play()
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
