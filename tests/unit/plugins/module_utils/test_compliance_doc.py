# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/compliance.md lists every check of the catalog, once, and no check that does not exist."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._compliance import CHECKS

DOC = os.path.join(os.path.dirname(__file__), "..", "..", "..", "..", "docs", "compliance.md")


def test_every_check_has_one_row():
    with open(DOC) as handle:
        rows = re.findall(r"^\| `([a-z_]+)` \|", handle.read(), re.M)
    assert sorted(rows) == sorted(CHECKS)
    assert len(rows) == len(set(rows))
