# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The one link classifier and the one NVLink-island function (plugins/module_utils/_links.py),
as the topo -m parser / facts merge and the layout planner use them. Expected values written by
hand from the topo -m legend."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._links import (
    link_class,
    link_order,
    nvlink_islands,
    pair_class,
)


def test_link_class_mapping():
    assert [link_class(c) for c in ("X", "NV18", "PIX", "PXB", "PHB", "NODE", "SYS", "SOC")] == [
        "self", "nvlink", "pix", "pxb", "phb", "node", "sys", "sys"]
    assert link_class("FOO") is None


def test_link_class_for_the_planner_names_unknown_cells():
    # the planner ranks a missing or unreadable cell as the worst link, under the name "unknown"
    assert link_class(None) is None
    assert link_class(None, unknown="unknown") == "unknown"
    assert link_class("FOO", unknown="unknown") == "unknown"
    # hand-written facts: any case, blanks, or the class name itself
    assert [link_class(c) for c in (" nv12 ", "soc", "x", "nvlink", "node")] == [
        "nvlink", "sys", "self", "nvlink", "node"]


def test_link_order_worse_is_larger():
    assert link_order("SYS", "sys") > link_order("NODE", "node") > link_order("NV4", "nvlink")
    assert link_order("NV4", "nvlink") > link_order("NV12", "nvlink")  # fewer bonded links is worse


def test_pair_class_prefers_the_link_class_matrix_then_the_code():
    links = [["X", "NV2"], ["NV2", "X"]]
    assert pair_class(links, None, 0, 1) == "nvlink"
    assert pair_class(links, [["self", "sys"], ["sys", "self"]], 0, 1) == "sys"
    assert pair_class(links, [["self", None], [None, "self"]], 0, 1) == "nvlink"
    assert pair_class([["X"]], None, 0, 1) == "unknown"  # no cell


def test_islands_of_facts_rows():
    links = [["X", "NV4", "SYS"], ["NV4", "X", "SYS"], ["SYS", "SYS", "X"]]
    assert nvlink_islands(links) == [[0, 1], [2]]


def test_islands_of_hand_written_facts():
    # GPU indices that are not 0..n-1, short rows, and a link_class matrix that overrides codes
    links = [["X", "NV1", "NV1"], ["NV1", "X"], ["NV1"]]
    classes = [["self", "nvlink", "sys"], ["nvlink", "self"], ["sys"]]
    assert nvlink_islands(links, classes, gpus=[0, 1, 2, 3]) == [[0, 1], [2], [3]]
    # one direction is enough to join a pair
    assert nvlink_islands([["X", "NV2"], ["SYS", "X"]]) == [[0, 1]]
