#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: owned_files
short_description: Compare every file a role owns with what it would write, in one call
version_added: 0.2.0
description:
  - A role renders the files it owns on the controller (template and file lookups, C(hash('sha1')))
    and hands their checksums, owners, groups and modes to this module, which compares them with
    the host's paths in one call and names those that differ. The role then runs its per-file
    C(template), C(copy) and C(file) tasks only for those, so an unchanged host costs one round
    trip instead of one or two per file.
  - Owner, group and mode are compared as well as the content, so a file whose mode drifted is
    reported (and rewritten by the role) as the C(template) module would.
  - Changes nothing.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  files:
    description:
      - The paths the role owns, in the order it writes them; each a dict with C(path) (required,
        absolute), C(state) (C(file), the default, a regular file compared with O(checksums) when
        it has an entry there; C(directory); or C(absent), the path must not exist), C(owner),
        C(group) and C(mode) (an octal string such as C("0640")); a key left out is not compared.
      - Other keys are ignored, so a role can hand in the very list its C(template), C(copy) and
        C(file) tasks loop over.
    type: list
    elements: dict
    required: true
  checksums:
    description:
      - SHA-1 (hex) of the content the role would write, per path of O(files). A file without an
        entry is compared by type, owner, group and mode only (e.g. a log file the role only creates).
      - Kept out of the task's output (one may be the checksum of a secret file).
    type: dict
    default: {}
notes:
  - Supports check mode (it only reads).
  - Paths are followed through symbolic links, as C(template) and C(copy) write through them.
seealso:
  - module: gpu_fleet.vllm_serving.vllm_instances
"""

EXAMPLES = r"""
- name: Compare the unit file and the environment file with the host's
  gpu_fleet.vllm_serving.owned_files:
    files:
      - {path: /etc/systemd/system/vllm@.service, owner: root, group: root, mode: "0644"}
      - {path: /etc/vllm/n0-0.env, owner: root, group: vllm, mode: "0640"}
      - {path: /etc/vllm/degraded, state: directory, owner: root, group: vllm, mode: "0750"}
    checksums:
      /etc/systemd/system/vllm@.service: "{{ lookup('ansible.builtin.template', 'vllm@.service.j2') | hash('sha1') }}"
      /etc/vllm/n0-0.env: "{{ lookup('ansible.builtin.template', 'instance.env.j2') | hash('sha1') }}"
  register: owned

- name: Render only what differs
  ansible.builtin.template:
    src: vllm@.service.j2
    dest: /etc/systemd/system/vllm@.service
    mode: "0644"
  when: "'/etc/systemd/system/vllm@.service' in owned.differ"
"""

RETURN = r"""
differ:
  description: Paths of O(files) that differ from what the role writes, in the order given.
  returned: success
  type: list
  elements: str
  sample: ["/etc/vllm/n0-0.env"]
reasons:
  description: Per differing path, why.
  returned: success
  type: dict
  sample: {"/etc/vllm/n0-0.env": ["content differs", "mode 0644, must be 0640"]}
"""

import grp
import hashlib
import os
import pwd
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _owned_files


def _name(lookup, ident):
    try:
        return lookup(ident)[0]
    except KeyError:
        return str(ident)


def _sha1(path):
    digest = hashlib.sha1()
    with open(path, "rb") as handle:
        for chunk in iter(lambda: handle.read(1 << 20), b""):
            digest.update(chunk)
    return digest.hexdigest()


def read_path(path, want_checksum):
    """The host's path as a Found, or None when it does not exist."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return None
    kind = "file" if stat.S_ISREG(st.st_mode) else "directory" if stat.S_ISDIR(st.st_mode) else "other"
    checksum = _sha1(path) if want_checksum and kind == "file" else None
    return _owned_files.Found(kind=kind, owner=_name(pwd.getpwuid, st.st_uid), group=_name(grp.getgrgid, st.st_gid),
                              mode=stat.S_IMODE(st.st_mode), checksum=checksum)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            files=dict(type="list", elements="dict", required=True),
            checksums=dict(type="dict", default={}, no_log=True),
        ),
        supports_check_mode=True,
    )
    try:
        expected = [_owned_files.expected_from_dict(f, module.params["checksums"]) for f in module.params["files"]]
    except _owned_files.OwnedFileError as exc:
        module.fail_json(msg="owned_files: %s" % exc)
    found = {}
    for entry in expected:
        try:
            found[entry.path] = read_path(entry.path, entry.checksum is not None)
        except (IOError, OSError) as exc:
            module.fail_json(msg="owned_files: cannot read %s: %s" % (entry.path, exc))
    reasons = _owned_files.compare(expected, found)
    module.exit_json(changed=False, differ=list(reasons), reasons=reasons)


if __name__ == "__main__":
    main()
