# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The cuda_pins filter: the CUDA/NCCL pins of a set of cuda_stack settings (documentation in
cuda_pins.yml; the rules in plugins/module_utils/_cuda_pins.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError
from ansible.module_utils.common.collections import is_string

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cuda_pins import resolve


def cuda_pins(settings):
    if not isinstance(settings, dict) or any(not is_string(key) for key in settings):
        raise AnsibleFilterError("cuda_pins: expects a dict of cuda_stack settings, got %r" % (settings,))
    try:
        return resolve(dict(settings))
    except ValueError as exc:
        raise AnsibleFilterError("cuda_pins: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"cuda_pins": cuda_pins}
