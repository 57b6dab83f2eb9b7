# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""System directories: the one list of directories no role may chmod, chown, move, empty or remove
recursively (state, config, log, model and cleanup directories), and the trees nothing of ours
may live under. Pure functions; used by the ``system_dir`` test plugin (role validation) and by
modules that resolve paths on the host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

# Directories whose own mode, owner or contents belong to the OS or to other software.
SYSTEM_DIRS = frozenset([
    "/", "/bin", "/boot", "/dev", "/etc", "/home", "/lib", "/lib32", "/lib64", "/libx32", "/media",
    "/mnt", "/opt", "/proc", "/root", "/run", "/sbin", "/srv", "/sys", "/tmp", "/usr", "/var",
    "/usr/bin", "/usr/lib", "/usr/lib64", "/usr/libexec", "/usr/local", "/usr/local/bin", "/usr/local/lib",
    "/usr/sbin", "/usr/share", "/usr/include", "/usr/src",
    "/var/lib", "/var/log", "/var/cache", "/var/tmp", "/var/spool", "/var/run", "/var/mail", "/var/opt",
    "/var/backups", "/var/local", "/var/lib/containers", "/var/lib/docker", "/var/lib/apt", "/var/lib/dpkg",
    "/var/lib/systemd", "/var/lib/containerd", "/etc/systemd", "/etc/systemd/system", "/etc/apt", "/etc/ssh", "/etc/nginx",
    "/run/systemd",
])

# Trees whose every descendant is the kernel's, the boot loader's or the package manager's.
SYSTEM_TREES = ("/proc", "/sys", "/dev", "/boot", "/usr/bin", "/usr/sbin", "/usr/lib", "/bin", "/sbin",
                "/lib", "/lib32", "/lib64", "/libx32", "/var/lib/dpkg", "/var/lib/apt", "/var/lib/systemd",
                "/var/lib/containers", "/var/lib/docker", "/var/lib/containerd")


def normalize(path):
    """The absolute path without ``.``, ``..``, repeated or trailing slashes; ``None`` if
    ``path`` is not an absolute path string."""
    if not isinstance(path, str) or not path.startswith("/") or "\0" in path:
        return None
    return "/" + posixpath.normpath(path).lstrip("/")


def system_dir_reason(path):
    """Why ``path`` must not be a directory a role manages recursively, or ``None`` if it may be."""
    norm = normalize(path)
    if norm is None:
        return "it is not an absolute path"
    if norm in SYSTEM_DIRS:
        return "%s is a system directory" % norm
    for tree in SYSTEM_TREES:
        if norm.startswith(tree + "/"):
            return "%s lies under %s, which belongs to the OS" % (norm, tree)
    return None
