# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The roles' records as gpu_compliance reads them (plugins/module_utils/_compliance_records.py).
The records are written by hand in the form of roles/*/tasks/record.yml."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance_records as r
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cuda_pins import resolve

H = "gpu01"
VLLM = {"config_dir": "/etc/vllm", "venv": "/opt/vllm/venv", "active_layout": "degraded", "layouts": [
    {"layout": "full", "unit": "vllm", "target": "vllm.target", "env_dir": "/etc/vllm",
     "instances": [{"name": "n0-0", "gpus": [0, 1], "port": 8001, "numa_node": 0, "tensor_parallel_size": 2,
                    "pipeline_parallel_size": 1}]},
    {"layout": "degraded", "unit": "vllm-degraded", "target": "vllm-degraded.target", "env_dir": "/etc/vllm/degraded",
     "instances": [{"name": "n0-0", "gpus": [0], "port": 8101, "numa_node": 0, "tensor_parallel_size": 1,
                    "pipeline_parallel_size": 1},
                   {"name": "n1-0", "gpus": [3], "port": 8102, "numa_node": 1}]}]}


def test_parse_records_absent_valid_and_broken():
    records, found = r.parse_records({"cuda_stack": json.dumps({"pins": {}}), "vllm_server": None,
                                      "host_tuning": "{x", "housekeeping": '"a string"'}, "/f", H)
    assert records == {"cuda_stack": {"pins": {}}, "vllm_server": None, "host_tuning": None, "housekeeping": None}
    assert [(f["id"], f["status"], f["actual"]) for f in found] == [
        ("sysctl", "warn", "/f/gpu_fleet_host_tuning.fact is not valid JSON"),
        ("logrotate", "warn", "/f/gpu_fleet_housekeeping.fact is not valid JSON")]
    assert "site.yml --tags host_tuning" in found[0]["remediation"]


def test_the_active_layout_and_its_instances():
    assert r.active_layout(VLLM)["unit"] == "vllm-degraded"
    assert r.recorded_instances(VLLM) == [
        {"name": "n0-0", "gpus": [0], "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "port": 8101,
         "numa_node": 0},
        {"name": "n1-0", "gpus": [3], "tensor_parallel_size": 1, "pipeline_parallel_size": 1, "port": 8102,
         "numa_node": 1}]
    assert r.instance_env_files(VLLM) == ["/etc/vllm/degraded/n0-0.env", "/etc/vllm/degraded/n1-0.env"]
    assert r.active_layout(dict(VLLM, active_layout="other")) is None and r.recorded_instances(None) == []


def test_expected_pins_from_the_record_else_the_rules():
    requested = resolve({"nccl_version": "2.18.3"})
    bare = r.expected_pins(requested, None)
    assert (bare["source"], bare["recorded"], bare["nccl_release"], bare["nccl_cuda"]) == ("pin rules", False, "2.18.3", "12.1")
    assert bare["wanted"]["libnccl2"] == "2.18.3-1+cuda12.1" and bare["min_driver"] == "530.30.02"
    record = {"pins": {"libnccl2": "2.14.3-1+cuda11.7"}, "nccl_release": "2.14.3", "nccl_cuda": "11.7",
              "install_nccl": True, "min_driver": "530.30.02"}
    got = r.expected_pins(requested, record)
    assert (got["source"], got["wanted"], got["nccl_release"]) == ("record", {"libnccl2": "2.14.3-1+cuda11.7"}, "2.14.3")
    assert got["requested_pins"]["libnccl2"] == "2.18.3-1+cuda12.1"
    # the holds cuda_stack recorded are its own; before it ran it holds nothing
    assert bare["own_holds"] == [] and got["own_holds"] == []
    assert r.expected_pins(requested, dict(record, holds=["libnccl2"]))["own_holds"] == ["libnccl2"]
    explicit = r.expected_pins(requested, record, {"libfoo": "1.0"})
    assert explicit["wanted"] == {"libfoo": "1.0"} and explicit["explicit"] is True
