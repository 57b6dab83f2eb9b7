# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instance environment file: the collection's one reader (module_utils/_instance_env) and the
monitoring collector's own copy (roles/vllm_monitoring/files/gpu_fleet_monitor.py) on the files
the real template (roles/vllm_server/templates/instance.env.j2) renders through Ansible, with the
role's defaults and the instances of a plan. The expected values are written here by hand.
(Here, not under plugins/module_utils/: ansible-test runs those without the controller, and
rendering the template needs ansible-playbook. The reader's own cases are in
tests/unit/plugins/module_utils/test_instance_env.py.)"""
import importlib.util
import json
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _instance_env as ie
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import ROOT, run_playbook

COLLECTOR = os.path.join(ROOT, "roles", "vllm_monitoring", "files", "gpu_fleet_monitor.py")
NCCL_SO = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
MODEL = "Qwen/Qwen2.5-7B-Instruct"
PER_INSTANCE = {"VLLM_CPU_OMP_THREADS_BIND": "{gpus}", "GPU_FLEET_SLOT": "{name}/{index}/{first_gpu}/{numa_node}"}


def _inst(name, gpus, port, tp, numa_node, link_class="nvlink", worst_link="NV12"):
    return {"name": name, "gpus": gpus, "cuda_visible_devices": ",".join(str(g) for g in gpus), "port": port,
            "tensor_parallel_size": tp, "pipeline_parallel_size": 1, "numa_node": numa_node,
            "worst_link": worst_link, "link_class": link_class}


# file name: (instance as the plan has it, layout kind, log prefix, VLLM_NCCL_SO_PATH, extra environment)
# ("tp2" also gets per-instance environment: PER_INSTANCE, as instance 3 of its layout)
CASES = {
    "tp1": (_inst("n0-2", [2], 8003, 1, 0, "single", None), "full", "", "", {}),
    "tp2": (_inst("n0-0", [0, 1], 8001, 2, 0), "full", "", "", {}),
    "nccl": (_inst("n1-0", [4, 5], 8002, 2, 1), "full", "", NCCL_SO, {}),
    "extra": (_inst("n0-0", [3], 8101, 1, None, "single", None), "degraded", "degraded-", NCCL_SO,
              {"NCCL_DEBUG": "WARN", "PYTHONWARNINGS": "ignore::DeprecationWarning", "HF_HUB_ETAG_TIMEOUT": "a=b"}),
}


def _load_collector():
    spec = importlib.util.spec_from_file_location("gpu_fleet_monitor_env_test", COLLECTOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def rendered(tmp_path_factory):
    """{case: text of the rendered file}: one play templating instance.env.j2 once per case."""
    tmp = tmp_path_factory.mktemp("instance_env")
    cases = [{"file": str(tmp / ("%s.env" % key)), "inst": inst, "kind": kind, "prefix": prefix, "nccl": nccl,
              "environment": extra, "per_instance": PER_INSTANCE if key == "tp2" else {}} for key, (inst, kind, prefix, nccl, extra) in sorted(CASES.items())]
    play = [{
        "hosts": "localhost", "connection": "local", "gather_facts": False,
        "vars_files": [os.path.join(ROOT, "roles", "common", "defaults", "main.yml"),
                       os.path.join(ROOT, "roles", "vllm_server", "defaults", "main.yml")],
        "vars": {"vllm_layout": {"model": {"name": MODEL, "path": "/srv/models/Qwen2.5-7B-Instruct"}},
                 "cases": cases},
        "tasks": [{
            "name": "Render the instance environment file",
            "ansible.builtin.template": {"src": os.path.join(ROOT, "roles", "vllm_server", "templates", "instance.env.j2"),
                                         "dest": "{{ item.file }}", "mode": "0640"},
            "loop": "{{ cases }}",
            "vars": {"_vllm_server_instance": "{{ item.inst }}", "_vllm_server_kind": "{{ item.kind }}",
                     "_vllm_server_log_prefix": "{{ item.prefix }}", "_vllm_server_nccl_so": "{{ item.nccl }}",
                     "vllm_server_environment": "{{ item.environment }}",
                     "vllm_server_instance_environment": "{{ item.per_instance }}",
                     "_vllm_server_instance_index": 3},
        }],
    }]
    (tmp / "play.yml").write_text(json.dumps(play))
    proc = run_playbook(tmp, tmp / "play.yml", "-i", "localhost,")
    assert proc.returncode == 0, proc.stdout
    return {key: (tmp / ("%s.env" % key)).read_text() for key in CASES}


def test_both_readers_read_the_same_pairs(rendered):
    mon = _load_collector()
    for key, text in rendered.items():
        assert ie.parse_env_text(text) == mon.parse_env_file(text), key


@pytest.mark.parametrize("key, name, gpus, port, tp", [
    ("tp1", "n0-2", [2], 8003, 1),
    ("tp2", "n0-0", [0, 1], 8001, 2),
    ("nccl", "n1-0", [4, 5], 8002, 2),
    ("extra", "n0-0", [3], 8101, 1),
])
def test_both_readers_give_the_instance(rendered, key, name, gpus, port, tp):
    mon = _load_collector()
    assert ie.instance_record(name, rendered[key]) == {
        "name": name, "gpus": gpus, "port": port, "tensor_parallel_size": tp, "pipeline_parallel_size": 1}
    assert mon.instance_from_env(name, rendered[key]) == {
        "name": name, "port": port, "gpus": ",".join(str(g) for g in gpus), "model": MODEL}


def test_rendered_values(rendered):
    env = {key: ie.parse_env_text(text) for key, text in rendered.items()}
    assert env["tp2"]["CUDA_VISIBLE_DEVICES"] == "0,1" and env["tp2"]["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["tp2"]["VLLM_NUMACTL_ARGS"] == "--cpunodebind=0 --membind=0"
    assert env["nccl"]["VLLM_NUMACTL_ARGS"] == "--cpunodebind=1 --membind=1"
    assert env["extra"]["VLLM_NUMACTL_ARGS"] == "--localalloc"
    assert "VLLM_NCCL_SO_PATH" not in env["tp1"] and "VLLM_NCCL_SO_PATH" not in env["tp2"]
    assert env["nccl"]["VLLM_NCCL_SO_PATH"] == env["extra"]["VLLM_NCCL_SO_PATH"] == NCCL_SO
    assert (env["extra"]["NCCL_DEBUG"], env["extra"]["PYTHONWARNINGS"], env["extra"]["HF_HUB_ETAG_TIMEOUT"]) == (
        "WARN", "ignore::DeprecationWarning", "a=b")
    assert env["tp1"]["GPU_FLEET_VLLM_LOG_FILE"] == "/var/log/vllm/n0-2.log"
    assert env["extra"]["GPU_FLEET_VLLM_LOG_FILE"] == "/var/log/vllm/degraded-n0-0.log"
    assert env["tp1"]["VLLM_LOGGING_CONFIG_PATH"] == "/etc/vllm/logging.json"
    assert env["tp1"]["VLLM_EXTRA_ARGS"] == "" and env["tp1"]["VLLM_SERVED_MODEL_NAME"] == MODEL
    assert env["tp1"]["HOME"] == "/var/lib/vllm" and env["tp1"]["HF_HUB_OFFLINE"] == "1"


def test_per_instance_values_are_filled_in(rendered):
    env = {key: ie.parse_env_text(text) for key, text in rendered.items()}
    assert env["tp2"]["VLLM_CPU_OMP_THREADS_BIND"] == "0,1"
    assert env["tp2"]["GPU_FLEET_SLOT"] == "n0-0/3/0/0"
    assert "GPU_FLEET_SLOT" not in env["tp1"]
