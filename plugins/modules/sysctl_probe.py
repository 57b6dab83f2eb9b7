#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: sysctl_probe
short_description: Find out which sysctl keys this kernel has, and which of them accept a write
version_added: 0.1.0
description:
  - For each key, reads the live value from C(/proc/sys) and finds out whether the kernel accepts a
    write to it, by writing the key's own current value back (which changes nothing).
  - A key can be absent (typo, module not loaded, or a C(net.*) key that does not exist in this
    network namespace), read-only (C(/proc/sys) mounted read-only, as in containers) or refused
    (for example C(Invalid argument) for C(net.core.rmem_max) in a non-initial network namespace).
  - A key with an empty, C(.) or C(..) component, one that names a directory, or one that resolves
    outside C(proc_root) is reported invalid and never opened.
  - Used by the C(host_tuning) role to persist only values the kernel accepts, so that a persisted
    value the kernel rejects cannot break every later C(sysctl --system).
  - Never changes a value. In check mode it only tests write permission with C(access(2)) and
    reports C(settable) from that.
  - Given the wanted values (O(wanted)), it also says whether the host already is as wanted
    (RV(probes.satisfied)) - an absent key can be, where a kernel without the feature has no key
    for it and the wanted value turns the feature off (C(kernel.numa_balancing=0) on a kernel built
    without automatic NUMA balancing); RV(probes.note) says so.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  keys:
    description:
      - The sysctl keys to probe, in dotted form (C(vm.swappiness)).
    type: list
    elements: str
    required: true
  proc_root:
    description:
      - Directory holding the sysctl tree. Only tests change it.
    type: path
    default: /proc/sys
  persisted_file:
    description:
      - A sysctl.d(5) file to read as well (for example the role's drop-in); its keys and values are
        returned in RV(persisted), so that a caller can tell which keys a file holds without one
        round trip per key. A missing file reads as empty.
      - Syntax per sysctl.d(5) - C(key = value) lines, C(#) and C(;) comments, an optional leading
        C(-) (ignore errors) that is not part of the key, C(/) or C(.) as separators (returned with dots).
    type: path
    version_added: 0.2.0
  wanted:
    description:
      - The values the caller wants, key to value (for example the C(host_tuning) role's merged
        sysctl settings); keys not in O(keys) are ignored. Only used for RV(probes.satisfied) and
        RV(probes.note); nothing is written.
    type: dict
    version_added: 0.3.0
notes:
  - Supports check mode.
  - Key to path mapping follows sysctl(8) - dots separate directories; a key given with slashes is
    used as is.
seealso:
  - module: ansible.posix.sysctl
"""

EXAMPLES = r"""
- name: Probe the keys we want to tune
  gpu_fleet.vllm_serving.sysctl_probe:
    keys:
      - vm.swappiness
      - net.core.rmem_max
  register: probe

- name: Show keys the kernel refuses
  ansible.builtin.debug:
    msg: "{{ probe.probes | dict2items | rejectattr('value.settable') | list }}"
"""

RETURN = r"""
probes:
  description: One entry per probed key.
  returned: always
  type: dict
  sample:
    vm.swappiness:
      present: true
      value: "60"
      settable: false
      reason: "read-only: /proc/sys/vm/swappiness: [Errno 30] Read-only file system"
      satisfied: false
      note: null
  contains:
    present:
      description: Whether the key exists on this kernel (in this network namespace).
      type: bool
    value:
      description: Live value as the kernel prints it, whitespace collapsed (tabs between
        fields become single spaces); null when absent or unreadable.
      type: str
    settable:
      description: Whether the kernel accepted a write of the key's current value.
      type: bool
    reason:
      description: Why the key is not settable (quotes the error); null when settable.
      type: str
    satisfied:
      description:
        - True when the host already holds the value O(wanted) names for the key, without a write -
          the live value equals it (whitespace collapsed), or the key is absent and its absence
          means that value (RV(probes.note)). False otherwise; null when O(wanted) does not name the key.
      type: bool
      returned: when O(wanted) is set
    note:
      description: Why an absent key is as wanted (for example that the kernel has no automatic
        NUMA balancing, so there is nothing to turn off); null otherwise.
      type: str
      returned: when O(wanted) is set
persisted:
  description: Keys and values found in O(persisted_file), keys in dotted form; empty when the file
    is missing. The last line for a key wins, as with C(sysctl -p).
  returned: when O(persisted_file) is set
  type: dict
  sample:
    vm.swappiness: "10"
"""

import errno
import os

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._host_readings import absent_satisfies


def _key_parts(key):
    rel = key if "/" in key else key.replace(".", "/")
    return rel.strip("/").split("/")


def _key_path(proc_root, key):
    return os.path.join(proc_root, *_key_parts(key))


def probe_key(proc_root, key, check_mode):
    path = _key_path(proc_root, key)
    result = {"present": False, "value": None, "settable": False, "reason": None}
    # A key is a path below proc_root: empty, '.' or '..' components ('vm..swappiness',
    # 'vm/../../etc/hostname') would name another file, which the probe would then rewrite.
    root = os.path.realpath(proc_root)
    if any(part in ("", ".", "..") for part in _key_parts(key)) or \
            not os.path.realpath(path).startswith(root.rstrip(os.sep) + os.sep):
        result["reason"] = "invalid: %r is not a sysctl key (empty, '.' or '..' component, or outside %s)" % (
            key, proc_root)
        return result
    if os.path.isdir(path):
        result["reason"] = "invalid: %s is a directory (a group of sysctl keys, not a key)" % path
        return result
    if not os.path.exists(path):
        result["reason"] = "absent: %s does not exist on this kernel (or not in this network namespace)" % path
        return result
    result["present"] = True
    try:
        with open(path, "r") as handle:
            raw = handle.read()
    except (IOError, OSError) as exc:
        result["reason"] = "unreadable: %s: %s" % (path, exc)
        return result
    result["value"] = " ".join(raw.split())
    if not os.access(path, os.W_OK):
        reason = "not writable"
        try:
            st = os.statvfs(path)
            if st.f_flag & os.ST_RDONLY:
                reason = "read-only: %s: file system mounted read-only" % path
        except OSError:
            pass
        result["reason"] = reason
        return result
    if check_mode:
        result["settable"] = True
        return result
    try:
        with open(path, "w") as handle:
            handle.write(raw if raw.endswith("\n") else raw + "\n")
    except (IOError, OSError) as exc:
        kind = "read-only" if exc.errno in (errno.EROFS, errno.EACCES, errno.EPERM) else "refused"
        result["reason"] = "%s: %s: %s" % (kind, path, exc)
        return result
    result["settable"] = True
    return result


def judge(key, probe, wanted):
    """Add ``satisfied`` and ``note`` to ``probe`` for the wanted values (a dict)."""
    if key not in wanted:
        probe.update(satisfied=None, note=None)
        return probe
    absent = not probe["present"] and (probe["reason"] or "").startswith("absent")
    note = absent_satisfies(key, wanted[key]) if absent else None
    same = probe["value"] is not None and probe["value"] == " ".join(str(wanted[key]).split())
    probe.update(satisfied=bool(same or note), note=note)
    return probe


def parse_sysctl_file(text):
    """Key -> value of a sysctl.d(5) file (dotted keys; the last assignment of a key wins)."""
    found = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line[0] in "#;" or "=" not in line:
            continue
        key, value = line.split("=", 1)
        key = key.strip().lstrip("-").strip()
        if "/" in key:
            key = key.strip("/").replace("/", ".")
        if key:
            found[key] = value.strip()
    return found


def main():
    module = AnsibleModule(
        argument_spec=dict(
            keys=dict(type="list", elements="str", required=True, no_log=False),
            proc_root=dict(type="path", default="/proc/sys"),
            persisted_file=dict(type="path"),
            wanted=dict(type="dict"),
        ),
        supports_check_mode=True,
    )
    keys = {}
    for key in module.params["keys"]:
        key = key.strip()
        if not key:
            module.fail_json(msg="sysctl_probe: empty key in keys; remove it or give a key such as vm.swappiness")
        keys[key] = probe_key(module.params["proc_root"], key, module.check_mode)
        if module.params["wanted"] is not None:
            keys[key] = judge(key, keys[key], module.params["wanted"])
    result = dict(changed=False, probes=keys)
    if module.params["persisted_file"]:
        path = module.params["persisted_file"]
        try:
            with open(path, "r") as handle:
                result["persisted"] = parse_sysctl_file(handle.read())
        except (IOError, OSError) as exc:
            if exc.errno != errno.ENOENT:
                module.fail_json(msg="sysctl_probe: cannot read persisted_file %s: %s; fix its permissions "
                                     "or point persisted_file at a readable sysctl.d file" % (path, exc),
                                 rc=None, stdout="", stderr=str(exc))
            result["persisted"] = {}
    module.exit_json(**result)


if __name__ == "__main__":
    main()
