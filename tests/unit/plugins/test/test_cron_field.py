# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cron_field test plugin: crontab(5) time fields, and nothing that could extend the line."""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.test import cron_field as plugin

cron_field = plugin.TestModule().tests()["cron_field"]

GOOD = ["0", "3", "23", 3, 0, "*", "*/6", "0-12", "0-12/3", "1,13", "1,3-5,*/8", "00"]
BAD = ["24", 24, -1, "-1", "", " 3", "3 ", "3\n", "3\n* * * * root sh", "3 * * * * root sh", "a", "3;4",
       "5-2", "5/10", "*/0", "1,", ",1", "*-3", "3.0", 3.0, True, None, ["3"], "\u0663"]


@pytest.mark.parametrize("value", GOOD, ids=repr)
def test_good_hours(value):
    assert cron_field(value, 23) is True


@pytest.mark.parametrize("value", BAD, ids=repr)
def test_bad_hours(value):
    assert cron_field(value, 23) is False


def test_minutes_range():
    assert cron_field("59", 59) and cron_field("*/15", 59) and not cron_field("60", 59) and not cron_field("0-60", 59)
