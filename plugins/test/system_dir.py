# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The system_dir test (documentation in system_dir.yml; the list in
plugins/module_utils/_system_dirs.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.module_utils.common.text.converters import to_text

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._system_dirs import system_dir_reason


def system_dir(path):
    """True if ``path`` is not absolute, is a system directory or lies in a system tree."""
    return system_dir_reason(to_text(path, errors="surrogate_or_strict")) is not None


class TestModule(object):
    def tests(self):
        return {"system_dir": system_dir}
