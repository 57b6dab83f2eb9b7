# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The compliance catalog as a pytest-testinfra suite for a real inventory.

    PYTHONPATH=.build/ac ANSIBLE_COLLECTIONS_PATH=.build/ac .venv/bin/pytest tests/compliance \\
        --hosts=ansible://gpu_hosts --ansible-inventory=inventories/example/gpu_hosts

One test per host and check id. The checks are not re-implemented here: each host runs the
gpu_compliance module once (read-only, check mode) and each test asserts that no finding of its
check has severity fail. Module arguments come from the host's inventory variables, with the same
names the compliance role reads (compliance_expected_gpu_count, compliance_packages, vllm_server_model,
vllm_server_layout, cuda_stack_nccl_version, vllm_server_venv, ...; the deprecated preflight_* names
as fallbacks, as in the role).
"""
import json
import re

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._compliance import CHECKS

_CACHE = {}


def _setting(variables, name, default):
    """compliance_<name>, else the deprecated preflight_<name>, else the role's default."""
    return variables.get("compliance_" + name, variables.get("preflight_" + name, default))


def _args(variables):
    args = {
        "host": variables.get("inventory_hostname"),
        "mode": _setting(variables, "mode", "auto"),
        "expected_gpu_count": int(_setting(variables, "expected_gpu_count", 0)),
        "retired_pages_max": int(_setting(variables, "retired_pages_max", 0)),
        "kernel_log": _setting(variables, "kernel_log", "auto"),
        "kernel_log_path": _setting(variables, "kernel_log_path", "/var/log/kern.log"),
        "layout": variables.get("vllm_server_layout", "auto"),
    }
    if _setting(variables, "packages", None):
        args["packages"] = _setting(variables, "packages", None)
    if variables.get("cuda_stack_nccl_version"):   # the pin each vLLM instance must load
        args["nccl_version"] = variables["cuda_stack_nccl_version"]
        build = re.search(r"\+cuda(\d+\.\d+)$", variables.get("cuda_stack_nccl_build") or "")
        if build:
            args["nccl_cuda"] = build.group(1)
    if variables.get("vllm_server_venv"):
        args["vllm_venv"] = variables["vllm_server_venv"]
    if variables.get("gpu_preflight_nvidia_smi_path"):
        args["nvidia_smi_path"] = variables["gpu_preflight_nvidia_smi_path"]
    model = variables.get("vllm_server_model") or {}
    for key, arg in (("name", "model_name"), ("path", "model_path")):
        if model.get(key):
            args[arg] = model[key]
    return args


@pytest.fixture
def compliance(host):
    key = host.backend.get_hostname()
    if key not in _CACHE:
        args = _args(host.ansible.get_variables())
        _CACHE[key] = host.ansible("gpu_fleet.vllm_serving.gpu_compliance", json.dumps(args), check=True)
    result = _CACHE[key]
    assert "findings" in result, "gpu_compliance did not run on %s: %s" % (key, result.get("msg", result))
    return result


@pytest.mark.parametrize("check_id", sorted(CHECKS))
def test_check(compliance, check_id):
    failed = ["%s: expected %s, got %s. Fix: %s" % (f["subject"], f["expected"], f["actual"], f["remediation"])
              for f in compliance["findings"] if f["id"] == check_id and f["severity"] == "fail"]
    assert not failed, "\n".join(failed)
