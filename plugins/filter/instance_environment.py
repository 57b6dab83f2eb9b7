# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The instance_environment filter: vllm_server_instance_environment for one planned instance
(documentation in instance_environment.yml; the rules in plugins/module_utils/_instance_env.py)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible.errors import AnsibleFilterError

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import expand_instance_value


def instance_environment(values, instance, index):
    if not isinstance(values, dict):
        raise AnsibleFilterError("instance_environment: expects a dict of variables, got %r" % (values,))
    if not isinstance(instance, dict) or "name" not in instance:
        raise AnsibleFilterError("instance_environment: expects a planned instance (name, gpus, ...), got %r"
                                 % (instance,))
    try:
        return dict((str(key), expand_instance_value(value, instance, int(index))) for key, value in values.items())
    except (TypeError, ValueError) as exc:
        raise AnsibleFilterError("instance_environment: %s" % exc)


class FilterModule(object):
    def filters(self):
        return {"instance_environment": instance_environment}
