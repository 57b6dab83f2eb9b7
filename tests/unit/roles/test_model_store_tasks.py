# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Static checks of roles/model_store/tasks: the hub token never reaches a log, and nothing that
changes the host runs before every model has been validated and read."""
import os

import yaml

TASKS = os.path.join(os.path.dirname(__file__), "..", "..", "..", "roles", "model_store", "tasks")


def _tasks(name):
    with open(os.path.join(TASKS, name)) as handle:
        data = yaml.safe_load(handle) or []
    out = []
    for task in data:
        out.append(task)
        out.extend(task.get("block", []))
    return out


def test_every_task_sending_the_token_has_no_log():
    seen = 0
    for name in sorted(os.listdir(TASKS)):
        for task in _tasks(name):
            if "block" in task:
                continue
            args = {k: v for k, v in task.items() if k not in ("vars", "name", "when", "no_log")}
            if "_model_store_token" in yaml.safe_dump(args):
                seen += 1
                assert task.get("no_log"), "%s: %s sends the token without no_log" % (name, task["name"])
    assert seen == 2  # the revision API request and the downloads


def test_inspect_phase_only_reads():
    readers = {"ansible.builtin.uri", "ansible.builtin.slurp", "ansible.builtin.assert", "ansible.builtin.set_fact",
               "ansible.builtin.stat", "gpu_fleet.vllm_serving.model_verify"}
    for task in _tasks("inspect.yml"):
        if "block" in task:
            continue
        modules = set(task) & (readers | {"ansible.builtin.file", "ansible.builtin.copy", "ansible.builtin.command",
                                          "ansible.builtin.get_url", "ansible.builtin.group"})
        assert modules and modules <= readers, task["name"]
        if "gpu_fleet.vllm_serving.model_verify" in task:
            assert not task["gpu_fleet.vllm_serving.model_verify"].get("record"), task["name"]
        if "ansible.builtin.uri" in task:
            assert task["ansible.builtin.uri"].get("method", "GET") == "GET"


def test_main_validates_and_inspects_every_model_before_staging():
    names = [t["name"] for t in _tasks("main.yml")]
    assert names.index("Validate model_store_models") < names.index(
        "Read each pinned revision from its source and check the copy on the host (changes nothing)") < names.index(
        "Stage, verify and switch each model that needs it")
