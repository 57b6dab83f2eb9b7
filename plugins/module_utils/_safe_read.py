# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Root reading files that the service user controls, without following its links.

Private to the collection (callers: ``log_collect``, ``vllm_wait_ready``). No Ansible imports.
Unlike the parsers this file does I/O - the rule *is* which system calls are made - but no
other I/O than opening, stat-ing and reading the file descriptors it is given or opens.

The rule (docs: "root never follows links the service user controls"):

* Every directory on the way is opened component by component, each with
  ``O_DIRECTORY | O_NOFOLLOW`` relative to the previous one (``openat``), so no component is a
  symbolic link: a link anywhere in the path is refused, not followed.
* A file is opened with ``O_NOFOLLOW | O_NONBLOCK | O_NOCTTY`` relative to its directory's
  descriptor (a symbolic link fails with ``ELOOP``, a FIFO does not block the open), then
  ``fstat``-ed: it must be a regular file owned by one of the allowed owners (the service user
  or root), and a root-owned one must have a single name (a hard link the service user made to
  a root-only file would otherwise pass the owner check).
* It is read from that descriptor only, never by name again, so nothing swapped in between the
  check and the read is read.

:func:`file_problem` is the pure verdict on a stat result; the rest applies it.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import errno
import fnmatch
import os
import stat
from collections import OrderedDict

__all__ = [
    "Refused",
    "file_problem",
    "split_globs",
    "matches",
    "open_dir",
    "open_file",
    "open_path",
    "read_tail",
    "service_owners",
    "copy_tail",
]

_CLOEXEC = getattr(os, "O_CLOEXEC", 0)
FILE_FLAGS = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY | _CLOEXEC
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | _CLOEXEC
CHUNK = 1024 * 1024
_WILDCARDS = "*?["

_KINDS = (
    (stat.S_ISLNK, "a symbolic link"),
    (stat.S_ISDIR, "a directory"),
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


class Refused(Exception):
    """``path`` is not read; ``reason`` says why ("a symbolic link, not followed"), naming the
    component of the path at fault when it is not ``path`` itself (``where``)."""

    def __init__(self, path, phrase, where=None):
        self.path, self.phrase, self.where = path, phrase, where
        self.reason = phrase if where in (None, path) else "%s is %s" % (where, phrase)
        super(Refused, self).__init__("%s: %s" % (path, self.reason))


# --- the verdict (pure) -------------------------------------------------------------------------

def kind(mode):
    """What a non-regular ``st_mode`` is, as a phrase ("a FIFO"); "a regular file" for one."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "a regular file" if stat.S_ISREG(mode) else "not a regular file"


def file_problem(st, owners, owner_names=None):
    """Why a file of stat result ``st`` must not be read; None when it may.

    ``owners``: the allowed owner uids (the service user's and 0). ``owner_names``: how to name
    them in the reason (default: the uids)."""
    if not stat.S_ISREG(st.st_mode):
        return "%s, not a regular file%s" % (kind(st.st_mode), ", not followed" if stat.S_ISLNK(st.st_mode) else "")
    if st.st_uid not in owners:
        return "owned by uid %d, not by %s" % (st.st_uid, owner_names or " or ".join(str(u) for u in sorted(owners)))
    if st.st_uid == 0 and st.st_nlink > 1:
        return "a root-owned file with %d hard links (another name of it may be a root-only file)" % st.st_nlink
    return None


def split_globs(globs):
    """``{directory: [patterns]}`` of absolute path globs (wildcards in the last component only),
    in first-seen order, each directory once and each of its patterns once: one search per
    directory and pattern, never every pattern in every directory. ValueError names a bad glob."""
    out = OrderedDict()
    for glob in globs:
        if not isinstance(glob, str) or not glob.startswith("/") or glob.endswith("/"):
            raise ValueError("%r is not an absolute path glob such as /var/log/vllm/*.log" % (glob,))
        directory, pattern = os.path.split(glob)
        if any(c in directory for c in _WILDCARDS):
            raise ValueError("%r has a wildcard in its directory part; only the file name may hold one" % glob)
        if "\x00" in glob or pattern in (".", ".."):
            raise ValueError("%r is not a file name glob" % glob)
        directory = os.path.normpath(directory)
        patterns = out.setdefault(directory, [])
        if pattern not in patterns:
            patterns.append(pattern)
    return out


def matches(name, patterns):
    """True when ``name`` matches one of ``patterns`` as a shell glob would: case-sensitively,
    and a leading dot only by a pattern with one."""
    if name.startswith(".") and not any(p.startswith(".") for p in patterns):
        return False
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


# --- opening without following links ------------------------------------------------------------

def _reason(exc):
    if exc.errno == errno.ELOOP:
        return "a symbolic link, not followed"
    if exc.errno == errno.ENOTDIR:
        return "a component of the path is not a directory"
    if exc.errno == errno.ENOENT:
        return "not found"
    if exc.errno == errno.ENXIO:
        return "a socket, not a regular file"
    return os.strerror(exc.errno) if exc.errno else str(exc)


def _dir_reason(exc, part, dir_fd):
    """Why directory component ``part`` did not open: with O_DIRECTORY a link gives ENOTDIR,
    so look at what it is (lstat, for the message only)."""
    if exc.errno == errno.ENOTDIR:
        try:
            mode = os.lstat(part, dir_fd=dir_fd).st_mode
        except OSError:
            return "not a directory"
        if stat.S_ISLNK(mode):
            return "a symbolic link, not followed"
        return "%s, not a directory" % kind(mode)
    return _reason(exc)


def open_dir(path):
    """A descriptor of directory ``path`` (absolute), opened component by component without
    following a link; Refused names the component that is a link, missing or no directory."""
    if not path.startswith("/"):
        raise Refused(path, "not an absolute path")
    fd = os.open("/", DIR_FLAGS)
    walked = ""
    try:
        for part in [p for p in path.split("/") if p and p != "."]:
            if part == "..":
                raise Refused(path, "'..' in the path")
            walked += "/" + part
            try:
                new = os.open(part, DIR_FLAGS, dir_fd=fd)
            except OSError as exc:
                raise Refused(path, _dir_reason(exc, part, fd), None if walked == path.rstrip("/") else walked)
            os.close(fd)
            fd = new
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_file(name, owners, dir_fd=None, path=None, owner_names=None):
    """``(fd, stat)`` of file ``name`` in ``dir_fd``, opened without following a link or blocking
    on a FIFO and accepted by :func:`file_problem`; else Refused (``path``: the name to report)."""
    path = path or name
    try:
        fd = os.open(name, FILE_FLAGS, dir_fd=dir_fd)
    except OSError as exc:
        raise Refused(path, _reason(exc))
    try:
        st = os.fstat(fd)
        problem = file_problem(st, owners, owner_names)
        if problem:
            raise Refused(path, problem)
    except BaseException:
        os.close(fd)
        raise
    return fd, st


def open_path(path, owners, owner_names=None):
    """``(fd, stat)`` of the file at absolute ``path`` by the rule (directories and file)."""
    directory, name = os.path.split(path)
    if not name:
        raise Refused(path, "not a file name")
    try:
        dir_fd = open_dir(directory or "/")
    except Refused as exc:
        raise Refused(path, exc.phrase, exc.where or directory)
    try:
        return open_file(name, owners, dir_fd=dir_fd, path=path, owner_names=owner_names)
    finally:
        os.close(dir_fd)


# --- reading from the descriptor ----------------------------------------------------------------

def copy_tail(src_fd, size, write, max_bytes):
    """Copy the last ``max_bytes`` of the ``size`` bytes of ``src_fd`` to ``write(bytes)``;
    returns ``(bytes copied, truncated)``. Reads at most ``max_bytes`` even if the file grows."""
    start = max(0, size - max_bytes)
    os.lseek(src_fd, start, os.SEEK_SET)
    left = min(size, max_bytes)
    copied = 0
    while left > 0:
        block = os.read(src_fd, min(CHUNK, left))
        if not block:
            break
        write(block)
        copied += len(block)
        left -= len(block)
    return copied, start > 0


def service_owners(user):
    """(uids, names) a file of the service ``user`` may be owned by: the user's and root's, or
    root's alone (with why) when the user does not exist."""
    import pwd
    try:
        return {pwd.getpwnam(user).pw_uid, 0}, "%s or root" % user
    except KeyError:
        return {0}, "root (user %r does not exist)" % user


def read_tail(path, owners, max_bytes=8192, owner_names=None):
    """The last ``max_bytes`` of the file at ``path`` (bytes), read by the rule; Refused else."""
    fd, st = open_path(path, owners, owner_names)
    try:
        chunks = []
        copy_tail(fd, st.st_size, chunks.append, max_bytes)
        return b"".join(chunks)
    finally:
        os.close(fd)
