# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cron_field test (documentation in cron_field.yml)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible.module_utils.common.text.converters import to_text

# One element of a list: *, N or N-M, optionally followed by /STEP (crontab(5)).
_ELEMENT = re.compile(r"(\*|([0-9]+)(?:-([0-9]+))?)(?:/([0-9]+))?\Z")


def _element_ok(element, maximum, minimum):
    match = _ELEMENT.match(element)
    if not match:
        return False
    low, high, step = match.group(2), match.group(3), match.group(4)
    if low is not None and not minimum <= int(low) <= maximum:
        return False
    if high is not None and not int(low) <= int(high) <= maximum:
        return False
    # a step follows * or a range, never a single number (cron refuses 5/10)
    return step is None or (int(step) >= 1 and (low is None or high is not None))


def cron_field(value, maximum, minimum=0):
    """True if ``value`` (a string or an integer) is one crontab time field whose numbers lie in
    ``minimum``..``maximum``: ``*``, ``N``, ``N-M``, ``*/S``, ``N-M/S`` and comma lists of these."""
    if isinstance(value, bool) or not isinstance(value, (int, str, type(u""))):
        return False
    text = to_text(value)
    return all(_element_ok(element, int(maximum), int(minimum)) for element in text.split(","))


class TestModule(object):
    def tests(self):
        return {"cron_field": cron_field}
