# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""parse_cpulist / format_cpulist (plugins/module_utils/_cpulist.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cpulist import (
    format_cpulist,
    parse_cpulist,
)


@pytest.mark.parametrize("text, expected", [
    ("0-3,8,10-11", [0, 1, 2, 3, 8, 10, 11]),
    ("0-15\n", list(range(16))),                       # sysfs value with its newline
    ("6,14,22,30", [6, 14, 22, 30]),                   # strided list (public/topo_13)
    ("0-31,64-95", list(range(32)) + list(range(64, 96))),
    ("5", [5]),
    ("", []),                                          # CPU-less NUMA node
    (" \n", []),
    ("3,1,2,2", [1, 2, 3]),                            # sorted, de-duplicated
    ("0-7:2/4", [0, 1, 4, 5]),                         # kernel stride form
])
def test_parse_cpulist(text, expected):
    assert parse_cpulist(text) == expected


@pytest.mark.parametrize("text", ["N/A", "0-", "3-1", "a,b", "0-3,,5", "-1", "0-7:3/2", None, 5])
def test_parse_cpulist_rejects_with_value_error_quoting_text(text):
    with pytest.raises(ValueError) as info:
        parse_cpulist(text)
    if isinstance(text, str):
        assert repr(text) in str(info.value)


@pytest.mark.parametrize("cpus, expected", [
    ([0, 1, 2, 3, 8, 10, 11], "0-3,8,10-11"),
    ([], ""),
    ([7], "7"),
    ([3, 1, 2], "1-3"),
    ([6, 14, 22, 30], "6,14,22,30"),
])
def test_format_cpulist(cpus, expected):
    assert format_cpulist(cpus) == expected


def test_round_trip():
    text = "0-55,112-167"
    assert format_cpulist(parse_cpulist(text)) == text


@pytest.mark.parametrize("bad", [[-1], ["1"], [True], [1.5]])
def test_format_cpulist_rejects(bad):
    with pytest.raises(ValueError):
        format_cpulist(bad)
