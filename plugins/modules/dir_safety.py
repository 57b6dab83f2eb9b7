#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: dir_safety
short_description: Judge on the host whether root may clean directories recursively
version_added: 0.2.0
description:
  - For each path of O(paths), says whether root may delete files below it (the housekeeping cache
    cleanup), and if not, why. Reads only; changes nothing.
  - Refused as written - empty, relative, not normalised (C(.), C(..), empty components), control
    characters.
  - Refused by place - C(/), the system directories and trees of the collection's one list
    (C(plugins/module_utils/_system_dirs.py)), anything under C(/etc), C(/usr), C(/opt), C(/run),
    C(/home) or C(/root), the home directory of any account of the host (its parents and anything
    inside it), and the same as, a parent of or anything inside a path of O(protected), also as
    that path resolves on the host.
  - Refused by what is on the host - any component from C(/) down that is a symbolic link (also
    the last one, which a trailing slash would descend into), not a directory, not owned by root,
    or writable by its group or others (a sticky directory such as C(/tmp) may hold a root-owned
    entry); the directory itself may instead be owned by a user of O(owners).
  - A directory that does not exist is accepted (RV(dirs[].exists=false)) - nothing to clean.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  paths:
    description: The directories to judge, as the role was given them (any value; a non-string is refused as empty).
    type: list
    elements: raw
    required: true
  owners:
    description: Users who may own a directory of O(paths) itself besides root (the service user who writes the cache).
    type: list
    elements: str
    default: []
  protected:
    description:
      - Paths no directory of O(paths) may be, hold or lie in. Each key is what the messages call
        the paths, such as C(the vLLM virtualenv (vllm_server_venv)); each value a path or a list of
        paths. Empty and relative paths are left out. A path that exists on the host is also
        protected as it resolves there (the model path links into the weight store).
    type: dict
    default: {}
notes:
  - Supports check mode (it only reads).
  - The cleanup script asks the questions of the third kind again every time it runs, on open
    directory handles; this module tells the operator before anything changes.
seealso:
  - module: gpu_fleet.vllm_serving.owned_files
"""

EXAMPLES = r"""
- name: Judge the cleanup directories on the host
  gpu_fleet.vllm_serving.dir_safety:
    paths: "{{ housekeeping_cache_dirs }}"
    owners: [vllm]
    protected:
      the model path (vllm_server_model.path): /srv/models/Qwen2.5-7B-Instruct
      the vLLM virtualenv (vllm_server_venv): [/opt/vllm/venv]
  register: judged

- name: Refuse the unsafe ones
  ansible.builtin.assert:
    that: item.reason is none
    fail_msg: "{{ item.path }}: {{ item.reason }}"
  loop: "{{ judged.dirs }}"
"""

RETURN = r"""
dirs:
  description: One entry per path of O(paths), in order.
  returned: success
  type: list
  elements: dict
  contains:
    path:
      description: The path as given.
      type: raw
    normalized:
      description: The path without trailing slashes; null when it was refused as written.
      type: str
    exists:
      description: Whether the directory exists on the host.
      type: bool
    reason:
      description: Why root must not clean it; null when it may.
      type: str
  sample:
    - {path: /var/cache/qwen_image_cache, normalized: /var/cache/qwen_image_cache, exists: true, reason: null}
    - {path: /var/cache/link/, normalized: /var/cache/link, exists: false,
       reason: "/var/cache/link is a symbolic link (to /usr): the cleanup never follows links, also not through a trailing slash"}
"""

import functools
import os
import pwd

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _dir_safety


def _owner_name(uid):
    try:
        return "%s (uid %d)" % (pwd.getpwuid(uid).pw_name, uid)
    except KeyError:
        return "uid %d" % uid


def _uids(names):
    uids = []
    for name in names:
        try:
            uids.append(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass  # not created yet: only root may own the directory
    return uids


def _protected(entries):
    """(path, what) pairs of the option ``protected``, plus each existing path as it resolves on
    the host."""
    pairs = []
    for what, paths in sorted(entries.items()):
        for path in paths if isinstance(paths, list) else [paths]:
            if not isinstance(path, str) or not path.startswith("/"):
                continue
            pairs.append((path, what))
            if os.path.lexists(path):
                real = os.path.realpath(path)
                if _dir_safety.normalize(real) != _dir_safety.normalize(path):
                    pairs.append((real, "%s as it resolves on this host" % what))
    return pairs


def main():
    module = AnsibleModule(
        argument_spec=dict(
            paths=dict(type="list", elements="raw", required=True),
            owners=dict(type="list", elements="str", default=[]),
            protected=dict(type="dict", default={}),
        ),
        supports_check_mode=True,
    )
    homes = [(entry.pw_name, entry.pw_dir) for entry in pwd.getpwall()]
    read = functools.partial(_dir_safety.component_records, owner_name=_owner_name)
    protected = _protected(module.params["protected"])
    leaf_uids = _uids(module.params["owners"])
    try:
        dirs = [_dir_safety.verdict(path, protected, homes, leaf_uids, read) for path in module.params["paths"]]
    except OSError as exc:
        module.fail_json(msg="dir_safety: cannot read %s: %s" % (exc.filename, exc.strerror))
    module.exit_json(changed=False, dirs=dirs)


if __name__ == "__main__":
    main()
