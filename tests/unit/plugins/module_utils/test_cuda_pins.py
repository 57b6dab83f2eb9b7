# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The pin rules (plugins/module_utils/_cuda_pins.py) and the cuda_stack role's defaults, which
repeat the rules' defaults for users. Expected values are the published builds (CUDA 12.1
Update 1 = 12.1.1-1; NCCL 2.14.3 only as +cuda11.7 for CUDA 12 hosts; 2.18.3 as +cuda12.1),
written by hand. The filter: tests/unit/plugins/filter/test_cuda_pins_filter.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest
import yaml

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _cuda_pins as pins

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))


def test_defaults_pin_cuda_12_1_update_1_and_nccl_2_14_3_for_cuda_11_7():
    r = pins.resolve({})
    assert r["pins"] == {"cuda-toolkit-12-1": "12.1.1-1", "libnccl2": "2.14.3-1+cuda11.7",
                         "libnccl-dev": "2.14.3-1+cuda11.7"}
    assert r["holds"] == ["cuda-toolkit-12-1", "libnccl-dev", "libnccl2"]
    assert (r["nccl_build"], r["nccl_release"], r["nccl_cuda"]) == ("2.14.3-1+cuda11.7", "2.14.3", "11.7")
    assert r["nccl_library"] == "/usr/lib/x86_64-linux-gnu/libnccl.so.2.14.3"
    assert (r["min_driver"], r["minor_compat_driver"]) == ("530.30.02", "525.60.13")
    assert r["problems"] == []


def test_nccl_2_18_3_tarball_and_explicit_versions():
    r = pins.resolve({"nccl_version": "2.18.3", "nccl_install_method": "tarball", "nccl_prefix": "/opt/n",
                      "cuda_package_version": "12.1.0-1"})
    # a tarball NCCL is no apt pin: only the toolkit is pinned and held
    assert r["pins"] == {"cuda-toolkit-12-1": "12.1.0-1"}
    assert r["nccl_library"] == "/opt/n/2.18.3-1+cuda12.1/lib/libnccl.so.2.18.3"
    assert r["nccl_tarball_dir"] == "/opt/n/2.18.3-1+cuda12.1"
    assert pins.resolve({"nccl_build": "2.14.3-1+cuda11.0"})["pins"]["libnccl2"] == "2.14.3-1+cuda11.0"
    assert pins.resolve({"install_nccl": False})["pins"] == {"cuda-toolkit-12-1": "12.1.1-1"}
    # None and "" mean "the default", as an unset role variable does
    assert pins.resolve({"cuda_version": None, "nccl_build": ""})["nccl_build"] == "2.14.3-1+cuda11.7"


def test_problems_name_the_variable_and_the_fix():
    r = pins.resolve({"cuda_version": "11.8"})
    assert r["pins"] == {} and r["problems"] == [
        "cuda_stack_cuda_version '11.8' is not in the compatibility table; known: 12.1",
        "no NCCL build of 2.14.3 is known for CUDA 11.8; set cuda_stack_nccl_build to a full version "
        "such as 2.14.3-1+cuda11.7"]
    assert pins.resolve({"nccl_install_method": "pip"})["problems"] == [
        "cuda_stack_nccl_install_method must be one of apt, tarball, got 'pip'"]
    with pytest.raises(ValueError, match="unknown cuda_stack setting"):
        pins.resolve({"cuda": "12.1"})


def test_the_role_defaults_are_the_rules_defaults():
    with open(os.path.join(ROOT, "roles", "cuda_stack", "defaults", "main.yml")) as handle:
        defaults = yaml.safe_load(handle)
    for key in ("cuda_version", "cuda_package_version", "nccl_version", "nccl_build", "install_nccl",
                "nccl_install_method", "nccl_prefix"):
        assert defaults["cuda_stack_" + key] == pins.DEFAULTS[key], key
    assert pins.MANAGED_PACKAGES == ("cuda-toolkit-12-1", "libnccl2", "libnccl-dev")
