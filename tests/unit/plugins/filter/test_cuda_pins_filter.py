# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cuda_pins filter (plugins/filter/cuda_pins.py) applies the pin rules and refuses other input
with an Ansible error, never a traceback. The rules themselves:
tests/unit/plugins/module_utils/test_cuda_pins.py."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_fleet.vllm_serving.plugins.filter.cuda_pins import FilterModule


def test_filter_applies_the_rules_and_refuses_other_input():
    flt = FilterModule().filters()["cuda_pins"]
    assert flt({"nccl_version": "2.18.3"})["pins"]["libnccl2"] == "2.18.3-1+cuda12.1"
    for bad in ("12.1", {"cuda": "12.1"}):
        with pytest.raises(AnsibleFilterError, match="^cuda_pins: "):
            flt(bad)
