# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instance_environment filter fills in an instance's name, index, GPUs and NUMA node, and
refuses unknown placeholders and other input with an Ansible error, never a traceback."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_fleet.vllm_serving.plugins.filter.instance_environment import FilterModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import unknown_placeholders

FLT = FilterModule().filters()["instance_environment"]
TP2 = {"name": "n1-0", "gpus": [4, 5], "numa_node": 1, "port": 8003}


def test_every_placeholder_is_filled_in():
    got = FLT({"A": "{name}:{index}:{gpus}:{first_gpu}:{numa_node}", "B": "plain", "C": 7}, TP2, 2)
    assert got == {"A": "n1-0:2:4,5:4:1", "B": "plain", "C": "7"}


def test_no_numa_node_and_no_gpu_give_empty_strings():
    assert FLT({"X": "[{numa_node}][{first_gpu}]"}, {"name": "c0", "gpus": [], "numa_node": None}, 0) == {"X": "[][]"}


def test_unknown_placeholders_are_named_and_refused():
    assert unknown_placeholders("{gpus}|{gpu}|{}") == ["gpu", ""]
    with pytest.raises(AnsibleFilterError, match=r"unknown placeholder \{gpu\}"):
        FLT({"X": "{gpu}"}, TP2, 0)


@pytest.mark.parametrize("values, instance", [(["A"], TP2), ({"A": "1"}, {"gpus": [0]}), ({"A": "1"}, "n0-0")])
def test_other_input_is_refused(values, instance):
    with pytest.raises(AnsibleFilterError, match="^instance_environment: "):
        FLT(values, instance, 0)
