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
vllm_server_layout, the cuda_stack_* settings, ...; the deprecated preflight_* names as fallbacks, as
in the role). What the roles applied (pins, venv, instances, paths) the module reads on the host
from their records, so this suite and playbooks/compliance.yml judge the same.
"""
import json

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._compliance import CHECKS

_CACHE = {}


def _setting(variables, name, default):
    """compliance_<name>, else the deprecated preflight_<name>, else the role's default."""
    return variables.get("compliance_" + name, variables.get("preflight_" + name, default))


# The cuda_stack settings the compliance role passes (the role's variables without their prefix).
CUDA_STACK_SETTINGS = ("cuda_version", "cuda_package_version", "nccl_version", "nccl_build", "install_nccl",
                       "nccl_install_method", "nccl_prefix")


def _args(variables):
    args = {
        "host": variables.get("inventory_hostname"),
        "mode": _setting(variables, "mode", "auto"),
        "expected_gpu_count": int(_setting(variables, "expected_gpu_count", 0)),
        "retired_pages_max": int(_setting(variables, "retired_pages_max", 0)),
        "kernel_log": _setting(variables, "kernel_log", "auto"),
        "kernel_log_path": _setting(variables, "kernel_log_path", "/var/log/kern.log"),
        "layout": variables.get("vllm_server_layout", "auto"),
        # what the roles applied is read on the host from their records; these only give the
        # expected pins before cuda_stack ran, and what the recorded ones are compared with
        "cuda_stack": dict((key, variables["cuda_stack_" + key]) for key in CUDA_STACK_SETTINGS
                           if "cuda_stack_" + key in variables),
    }
    if variables.get("gpu_fleet_facts_dir"):
        args["facts_dir"] = variables["gpu_fleet_facts_dir"]
    if _setting(variables, "packages", None):
        args["packages"] = _setting(variables, "packages", None)
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
