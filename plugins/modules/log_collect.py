#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: log_collect
short_description: Copy log files the service user writes into a bundle, as root, without following its links
version_added: 0.3.0
description:
  - Copies the files that match O(paths) (absolute path globs, wildcards in the file name only)
    into O(dest), each under its own path (C(/var/log/vllm/n0-0.log) becomes
    C(<dest>/var/log/vllm/n0-0.log)), mode C(0600).
  - Made for root collecting what the vLLM service user writes (C(/var/log/vllm)); that user can
    replace a file between a listing and a copy with a symbolic link to a root-only file. So no
    link is ever followed - every directory is opened component by component with
    C(O_DIRECTORY|O_NOFOLLOW), every file with C(O_NOFOLLOW|O_NONBLOCK) - and a file is copied
    from the descriptor it was checked on, only when C(fstat) shows a regular file owned by
    O(owner) or root (a root-owned one with a single name, so no hard link to a root-only file
    passes). Everything else is listed in RV(skipped) with the reason, not copied.
  - Each directory is listed once and matched against its own patterns only (not every pattern
    in every directory). Files are copied in full up to O(max_file_bytes); of a larger one the
    last O(max_file_bytes) (the newest lines) are copied and RV(files[].truncated) is true.
  - Changes nothing outside O(dest).
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  paths:
    description:
      - Absolute path globs of the files to copy, e.g. C(/var/log/vllm/*.log). The directory
        part is literal (no wildcards, no symbolic link in it); the file name part is a shell
        glob (C(*), C(?), C([...])); a leading dot is matched only by a pattern that has one.
      - A directory that does not exist is listed in RV(skipped), not an error.
    type: list
    elements: str
    required: true
  dest:
    description:
      - Directory to copy into (created with mode C(0700) when missing; its parent must exist).
        It should be root's, e.g. a temporary directory of the play.
    type: path
    required: true
  owner:
    description:
      - The user whose files are copied besides root's (the vLLM service user,
        C(vllm_server_user)). When no such user exists on the host only root's files are copied.
    type: str
    default: vllm
  max_file_bytes:
    description: Most bytes copied per file (the file's end when it is larger).
    type: int
    default: 33554432
notes:
  - Supports check mode; it then writes nothing and reports what it would copy.
  - Reads nothing from C(/tmp) or elsewhere unless a glob of O(paths) names it; files of other
    users there are skipped by the owner check.
seealso:
  - module: gpu_fleet.vllm_serving.vllm_log_signatures
"""

EXAMPLES = r"""
- name: Copy the vLLM logs into the bundle
  gpu_fleet.vllm_serving.log_collect:
    paths:
      - /var/log/vllm/*.log
      - /var/log/vllm/nccl*
    dest: "{{ bundle_dir.path }}/logs"
    owner: "{{ vllm_server_user }}"
  register: collected

- name: Say which files were refused
  ansible.builtin.debug:
    msg: "{{ collected.skipped }}"
"""

RETURN = r"""
files:
  description: The files copied (in check mode, that would be copied), in the order of O(paths).
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The file on the host.
      type: str
    dest:
      description: Its copy under O(dest).
      type: str
    size:
      description: Its size in bytes when it was opened.
      type: int
    copied:
      description: Bytes copied (0 in check mode).
      type: int
    truncated:
      description: True when only the last O(max_file_bytes) were copied.
      type: bool
    uid:
      description: Owner uid of the file (O(owner)'s or 0).
      type: int
  sample: [{path: /var/log/vllm/n0-0.log, dest: /tmp/gpu-fleet-diag.x/logs/var/log/vllm/n0-0.log,
            size: 5120, copied: 5120, truncated: false, uid: 998}]
skipped:
  description: Matching entries (or directories of O(paths)) not copied, each with the reason.
  returned: always
  type: list
  elements: dict
  contains:
    path:
      description: The entry on the host.
      type: str
    reason:
      description: Why it was not copied, e.g. C(a symbolic link, not followed), C(a FIFO, not a
        regular file), C(owned by uid 1001, not by vllm or root), C(not found).
      type: str
  sample: [{path: /var/log/vllm/x.log, reason: "a symbolic link, not followed"}]
searched:
  description: Each directory listed once, with the patterns matched in it.
  returned: always
  type: list
  elements: dict
  sample: [{directory: /var/log/vllm, patterns: ["*.log", "nccl*"]}]
"""

import os
import pwd

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _safe_read as sr

ARGUMENT_SPEC = dict(
    paths=dict(type="list", elements="str", required=True),
    dest=dict(type="path", required=True),
    owner=dict(type="str", default="vllm"),
    max_file_bytes=dict(type="int", default=33554432),
)
WRITE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


def owners(name):
    """(allowed uids, how to name them, a warning or None) for service user ``name``."""
    try:
        uid = pwd.getpwnam(name).pw_uid
    except KeyError:
        return {0}, "root", "user %r does not exist on this host: only root's files are copied" % name
    return {uid, 0}, "%s or root" % name if uid else "root", None


def open_dest(module, dest):
    """A descriptor of O(dest), made (mode 0700) when missing; its parent must exist."""
    if not module.check_mode and not os.path.lexists(dest):
        os.mkdir(dest, 0o700)
    return sr.open_dir(dest)


def dest_dir(dest_fd, directory):
    """A descriptor of ``<dest>/<directory>`` (made component by component, mode 0700)."""
    fd = os.dup(dest_fd)
    for part in [p for p in directory.split("/") if p]:
        try:
            os.mkdir(part, 0o700, dir_fd=fd)
        except FileExistsError:
            pass
        new = os.open(part, sr.DIR_FLAGS, dir_fd=fd)
        os.close(fd)
        fd = new
    return fd


def copy_one(src_fd, st, out_fd, name, max_bytes):
    """Copy the checked descriptor into ``name`` of ``out_fd`` (mode 0600): (copied, truncated)."""
    fd = os.open(name, WRITE_FLAGS, 0o600, dir_fd=out_fd)
    try:
        os.fchmod(fd, 0o600)
        return sr.copy_tail(src_fd, st.st_size, lambda block: write_all(fd, block), max_bytes)
    finally:
        os.close(fd)


def write_all(fd, block):
    view = memoryview(block)
    while view:
        view = view[os.write(fd, view):]


class Collector(object):
    """One run: the allowed owners, O(dest)'s descriptor, what was copied and skipped."""

    def __init__(self, module, dest_fd, uids, names):
        self.module, self.dest_fd, self.uids, self.names = module, dest_fd, uids, names
        self.dest = module.params["dest"]
        self.files, self.skipped = [], []

    def skip(self, path, reason):
        self.skipped.append({"path": path, "reason": reason})

    def directory(self, directory, patterns):
        """Copy the matching files of one directory (listed once)."""
        try:
            dir_fd = sr.open_dir(directory)
        except sr.Refused as exc:
            return self.skip(directory, exc.reason)
        out_fd = None
        try:
            try:
                names = sorted(os.listdir(dir_fd))
            except OSError as exc:
                return self.skip(directory, "cannot be listed: %s" % os.strerror(exc.errno))
            for name in names:
                if sr.matches(name, patterns):
                    if out_fd is None and not self.module.check_mode:
                        out_fd = dest_dir(self.dest_fd, directory)
                    self.file(dir_fd, out_fd, directory, name)
        finally:
            os.close(dir_fd)
            if out_fd is not None:
                os.close(out_fd)
        return None

    def file(self, dir_fd, out_fd, directory, name):
        path = os.path.join(directory, name)
        try:
            fd, st = sr.open_file(name, self.uids, dir_fd=dir_fd, path=path, owner_names=self.names)
        except sr.Refused as exc:
            return self.skip(path, exc.reason)
        try:
            copied, truncated = (0, st.st_size > self.module.params["max_file_bytes"])
            if not self.module.check_mode:
                copied, truncated = copy_one(fd, st, out_fd, name, self.module.params["max_file_bytes"])
        finally:
            os.close(fd)
        self.files.append({"path": path, "dest": os.path.join(self.dest, directory.lstrip("/"), name),
                           "size": st.st_size, "copied": copied, "truncated": truncated, "uid": st.st_uid})
        return None


def run(module):
    p = module.params
    try:
        searches = sr.split_globs(p["paths"])
    except ValueError as exc:
        module.fail_json(msg="log_collect: paths: %s. Nothing was changed." % exc)
    if p["max_file_bytes"] < 1:
        module.fail_json(msg="log_collect: max_file_bytes is %d: give a positive number of bytes. Nothing was "
                             "changed." % p["max_file_bytes"])
    uids, names, warning = owners(p["owner"])
    if warning:
        module.warn(warning)
    try:
        dest_fd = open_dest(module, p["dest"]) if not module.check_mode or os.path.lexists(p["dest"]) else None
    except (OSError, sr.Refused) as exc:
        module.fail_json(msg="log_collect: dest %s cannot be used: %s; give a directory of root's whose parent "
                             "exists" % (p["dest"], exc))
    collector = Collector(module, dest_fd, uids, names)
    try:
        for directory, patterns in searches.items():
            collector.directory(directory, patterns)
    finally:
        if dest_fd is not None:
            os.close(dest_fd)
    module.exit_json(changed=bool(collector.files), files=collector.files, skipped=collector.skipped,
                     searched=[{"directory": d, "patterns": pats} for d, pats in searches.items()])


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    try:
        run(module)
    except (IOError, OSError) as exc:
        module.fail_json(msg="log_collect: copying into %s failed: %s" % (module.params["dest"], exc))


if __name__ == "__main__":
    main()
