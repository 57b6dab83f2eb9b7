# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Static checks of roles/model_store/tasks: the hub token travels only as model_fetch's no_log
option (never a header of uri/get_url), and nothing that changes the host runs before every model
has been validated and read."""
import os
import re

import yaml

TOP = os.path.join(os.path.dirname(__file__), "..", "..", "..")
TASKS = os.path.join(TOP, "roles", "model_store", "tasks")
MODULE = os.path.join(TOP, "plugins", "modules", "model_fetch.py")
TOKEN_VAR = re.compile(r"\b_model_store_token\b")


def _tasks(name):
    with open(os.path.join(TASKS, name)) as handle:
        data = yaml.safe_load(handle) or []
    out = []
    for task in data:
        out.append(task)
        out.extend(task.get("block", []))
    return out


def test_the_token_goes_only_through_model_fetch_whose_option_is_no_log():
    """uri and get_url send every header to every host a redirect names (the hub's CDN): the token
    must travel as model_fetch's token option, which drops it on a redirect to another host."""
    seen = 0
    for name in sorted(os.listdir(TASKS)):
        for task in _tasks(name):
            if "block" in task:
                continue
            assert "ansible.builtin.uri" not in task and "ansible.builtin.get_url" not in task, task["name"]
            args = {k: v for k, v in task.items() if k not in ("vars", "name", "when", "no_log")}
            if TOKEN_VAR.search(yaml.safe_dump(args)):
                seen += 1
                fetch = task.get("gpu_fleet.vllm_serving.model_fetch")
                assert fetch is not None, "%s: %s sends the token without model_fetch" % (name, task["name"])
                assert [k for k, v in fetch.items() if TOKEN_VAR.search(str(v))] == ["token"], task["name"]
    assert seen == 2  # the revision API request and the downloads
    with open(MODULE) as handle:
        assert 'token=dict(type="str", no_log=True)' in handle.read()


def test_inspect_phase_only_reads():
    readers = {"gpu_fleet.vllm_serving.model_fetch", "ansible.builtin.slurp", "ansible.builtin.assert", "ansible.builtin.set_fact",
               "ansible.builtin.stat", "gpu_fleet.vllm_serving.model_verify"}
    for task in _tasks("inspect.yml"):
        if "block" in task:
            continue
        modules = set(task) & (readers | {"ansible.builtin.file", "ansible.builtin.copy", "ansible.builtin.command",
                                          "ansible.builtin.get_url", "ansible.builtin.group"})
        assert modules and modules <= readers, task["name"]
        if "gpu_fleet.vllm_serving.model_verify" in task:
            assert not task["gpu_fleet.vllm_serving.model_verify"].get("record"), task["name"]
        if "gpu_fleet.vllm_serving.model_fetch" in task:  # a GET returning the answer, no file written
            assert "dest" not in task["gpu_fleet.vllm_serving.model_fetch"], task["name"]


def test_main_validates_and_inspects_every_model_before_staging():
    names = [t["name"] for t in _tasks("main.yml")]
    assert names.index("Validate model_store_models") < names.index(
        "Read each pinned revision from its source and check the copy on the host (changes nothing)") < names.index(
        "Stage, verify and switch each model that needs it")
