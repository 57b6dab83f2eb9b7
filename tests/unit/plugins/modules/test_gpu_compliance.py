# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu_compliance run as Ansible runs it (subprocess, args file), given the real gpu_topology facts
of the 2x H200 host (tests/fixtures/real/h200x2_nvlink/results/gpu_topology_facts.json) and
paths planted in tmp_path. The checks themselves are tested in module_utils/test_compliance*.py;
here: the mode, parameter errors, the layout request and the order of the catalog. The
molecule scenario `preflight` runs the module on a converged simulated host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text, run_module

TOPOLOGY = json.loads(fixture_text("real/h200x2_nvlink/results/gpu_topology_facts.json"))
QWEN7B = json.loads(fixture_text("models/Qwen2.5-7B-Instruct/config.json"))
CATALOG_ORDER = ["gpu_driver", "gpu_count", "ecc_mode", "ecc_uncorrectable", "ecc_remap", "nvlink",
                 "fabric_manager", "kernel_log", "layout", "packages", "nccl_effective", "sysctl", "governor",
                 "logrotate", "cron", "units"]


def check(tmp_path, **extra):
    args = {"topology": TOPOLOGY, "host": "gpu01", "kernel_log": "none", "health_check": False,
            "expected_gpu_count": 2, "unit_file": str(tmp_path / "vllm@.service"),
            "config_dir": str(tmp_path / "etc-vllm"), "host_tuning_report": str(tmp_path / "host_tuning.fact"),
            "logrotate_config": str(tmp_path / "logrotate-vllm"), "cron_file": str(tmp_path / "cron-cleanup")}
    args.update(extra)
    return run_module(tmp_path, "gpu_compliance", args, check_mode=True)


def statuses(result, check_id):
    return [f["status"] for f in result["findings"] if f["id"] == check_id]


def test_auto_before_deployment_is_pre_deploy(tmp_path):
    rc, res = check(tmp_path, model_config=QWEN7B, model_name="Qwen/Qwen2.5-7B-Instruct")
    assert rc == 0 and res["changed"] is False
    assert res["summary"]["mode"] == "pre_deploy" and res["readings"]["mode"] == "pre_deploy"
    assert not res.get("deprecations")
    assert res["summary"]["compliant"] is True
    assert statuses(res, "layout") == ["pass"] and statuses(res, "units") == ["not_applicable"]
    # the planned instances stand in for the deployed ones
    assert [i["name"] for i in res["readings"]["instances"]] == ["n0-0", "n0-1"]


def test_auto_with_the_unit_file_is_post_deploy(tmp_path):
    (tmp_path / "vllm@.service").write_text(u"[Unit]\n")
    rc, res = check(tmp_path)
    assert rc == 0 and res["summary"]["mode"] == "post_deploy"
    # deployed, but nothing of the housekeeping role is there: both fail, the host is not compliant
    assert statuses(res, "logrotate") == ["fail"] and statuses(res, "cron") == ["fail"]
    assert res["summary"]["compliant"] is False


@pytest.mark.parametrize("mode", ["pre_deploy", "preflight"])
def test_pre_deploy_and_its_deprecated_alias_preflight(tmp_path, mode):
    (tmp_path / "vllm@.service").write_text(u"[Unit]\n")   # would be post_deploy under auto
    rc, res = check(tmp_path, mode=mode)
    assert rc == 0 and res["summary"]["mode"] == "pre_deploy" and res["readings"]["mode"] == "pre_deploy"
    assert statuses(res, "units") == ["not_applicable"] and statuses(res, "logrotate") == ["not_applicable"]
    deprecations = json.dumps(res.get("deprecations") or [])   # its form differs between ansible-core releases
    if mode == "preflight":
        assert "gpu_compliance: mode=preflight is a deprecated alias; use mode=pre_deploy" in deprecations
        assert "1.0.0" in deprecations
    else:
        assert deprecations == "[]"


def test_findings_come_in_catalog_order(tmp_path):
    rc, res = check(tmp_path, model_config=QWEN7B)
    ids = []
    for item in res["findings"]:
        if item["id"] not in ids:
            ids.append(item["id"])
    assert ids == CATALOG_ORDER


def test_unreadable_host_tuning_report_is_a_warning(tmp_path):
    (tmp_path / "host_tuning.fact").write_text(u"{not json")
    rc, res = check(tmp_path)
    assert rc == 0
    sysctl = [f for f in res["findings"] if f["id"] == "sysctl"]
    assert sysctl[0]["status"] == "warn" and "is not valid JSON" in sysctl[0]["actual"]


@pytest.mark.parametrize("extra, text", [
    ({"layout": "not json"}, "layout must be 'auto' or a list of instances, got 'not json'"),
    ({"model_path": "/nonexistent/model"}, "no config.json at /nonexistent/model on gpu01 and no model_config"),
])
def test_layout_request_errors_fail_the_layout_check(tmp_path, extra, text):
    args = dict({"model_config": QWEN7B}, **extra)
    if "model_path" in extra:
        args.pop("model_config")
    rc, res = check(tmp_path, **args)
    layout = [f for f in res["findings"] if f["id"] == "layout"]
    assert rc == 0 and layout[0]["status"] == "fail" and text in layout[0]["actual"], layout


@pytest.mark.parametrize("extra, text", [
    ({"expected_gpu_count": -1}, "expected_gpu_count must be >= 0 (0 = do not judge), got -1"),
    ({"min_driver": "new"}, "min_driver must be a driver version such as 530.30.02, got 'new'"),
    ({"packages": {"libnccl2": ""}}, "packages.libnccl2 must be an exact apt version string"),
    ({"nccl_version": "2.14"}, "nccl_version must be an NCCL version x.y.z"),
    ({"nccl_cuda": "cuda11"}, "nccl_cuda must be a CUDA version X.Y"),
    ({"mode": "later"}, "value of mode must be one of"),
])
def test_bad_parameters_fail_naming_host_and_value(tmp_path, extra, text):
    rc, res = check(tmp_path, **extra)
    assert rc == 1 and res["failed"] is True and text in res["msg"], res["msg"]
    if "mode" not in extra:
        assert res["msg"].startswith("gpu_compliance on gpu01: ")
