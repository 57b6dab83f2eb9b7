#!/usr/bin/python3
# -*- coding: utf-8 -*-
# Managed by gpu_fleet.vllm_serving.housekeeping (roles/housekeeping/files/gpu_fleet_cache_cleanup.py).
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Delete stale model-cache files: the nightly job of the housekeeping role.

Run by root from cron (/etc/cron.d/gpu-fleet-cache-cleanup) as
``/usr/bin/python3 -I /usr/local/sbin/gpu-fleet-cache-cleanup --quiet``. Everything it acts on is
data in a root-owned JSON file (default /etc/gpu-fleet/cache-cleanup.json)::

    {"dirs": ["/var/cache/qwen_image_cache"], "pattern": "*.pt", "max_age_days": 7, "owners": ["vllm"]}

and nothing of it ever passes through a shell. The role refused unsafe values before writing it;
paths can change after that, so each run asks again, on open directory handles (no name is looked
up twice):

- every component of a directory, from / down, is opened with O_NOFOLLOW: a symbolic link
  anywhere (also the last component, which a trailing slash would descend into) refuses the
  directory; so does a component that is not owned by root or is writable by its group or others
  (a sticky directory such as /tmp may hold a root-owned entry); the directory itself may instead
  be owned by a user of ``owners`` (the service user who writes the cache);
- a directory that does not exist is skipped (nothing to clean);
- the walk (os.fwalk) never follows a symbolic link and never enters another file system; only
  regular files whose name matches ``pattern`` (fnmatch, case-sensitive) and whose mtime is more
  than ``max_age_days`` x 24 hours ago are removed, by name relative to their directory's handle.

Every deletion and refusal goes to syslog (facility cron, tag gpu-fleet-cache-cleanup); deletions
also to stdout (not with --quiet), refusals to stderr. Exit status: 0 done, 1 a directory was
refused or could not be cleaned, 2 the configuration is refused (nothing deleted).
"""

import argparse
import errno
import fnmatch
import json
import os
import pwd
import re
import stat
import sys
import syslog
import time

CONFIG = "/etc/gpu-fleet/cache-cleanup.json"
TAG = "gpu-fleet-cache-cleanup"
# The same rule as roles/housekeeping/tasks/validate.yml: a file-name glob, no quotes, slashes,
# spaces or control characters, and at least one character that is not a wildcard.
PATTERN = re.compile(r"[A-Za-z0-9._+@%,=~!*?\[\]-]+\Z")
DIR_FLAGS = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0)


class Refused(Exception):
    """A directory (or the configuration) that must not be used, with the reason."""


# --- configuration ----------------------------------------------------------------------------------

def pattern_reason(pattern):
    """Why ``pattern`` is not a safe file-name glob, or None."""
    if not isinstance(pattern, str) or not PATTERN.match(pattern):
        return "pattern %s must be a file-name glob such as *.pt (letters, digits, . _ - + and the " \
               "wildcards * ? [...]; no quotes, slashes, spaces or newlines)" % json.dumps(pattern)
    if not pattern.replace("*", "").replace("?", ""):
        return "pattern %s holds only wildcards: it would match every file" % json.dumps(pattern)
    return None


def dir_reason(path):
    """Why ``path`` (as configured) is refused before looking at the host, or None."""
    if not isinstance(path, str) or not path.startswith("/") or any(ord(c) < 32 or ord(c) == 127 for c in path):
        return "%s is not an absolute path without control characters" % json.dumps(path)
    parts = path.rstrip("/").split("/")[1:]
    if not parts:
        return "/ is the root directory"
    if any(part in ("", ".", "..") for part in parts):
        return "%s is not normalised ('.', '..' or empty components)" % path
    return None


def check_config(data):
    """The configuration as {dirs, pattern, max_age_days, owners}; raises Refused."""
    if not isinstance(data, dict):
        raise Refused("the configuration must be a JSON object")
    dirs, pattern, age, owners = (data.get(k) for k in ("dirs", "pattern", "max_age_days", "owners"))
    if not isinstance(dirs, list) or not dirs:
        raise Refused("dirs must be a non-empty list of absolute directories")
    reason = pattern_reason(pattern)
    if reason:
        raise Refused(reason)
    if not isinstance(age, int) or isinstance(age, bool) or age < 1:
        raise Refused("max_age_days %s must be a whole number of days, at least 1" % json.dumps(age))
    if owners is None:
        owners = []
    if not isinstance(owners, list) or not all(isinstance(o, str) for o in owners):
        raise Refused("owners must be a list of user names")
    return {"dirs": dirs, "pattern": pattern, "max_age_days": age, "owners": owners}


def read_config(path, trust_owner=True):
    """The checked configuration of the file ``path``: a regular file (not a link), owned by root
    and writable by root only unless ``trust_owner`` is false (Ansible's validate: step)."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | getattr(os, "O_CLOEXEC", 0))
    except OSError as exc:
        raise Refused("cannot open the configuration %s: %s" % (path, exc.strerror))
    with os.fdopen(fd, "rb") as handle:
        st = os.fstat(handle.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Refused("the configuration %s is not a regular file" % path)
        if trust_owner and (st.st_uid != 0 or st.st_mode & 0o022):
            raise Refused("the configuration %s must be owned by root and writable by root only (uid %d, mode %04o)"
                          % (path, st.st_uid, stat.S_IMODE(st.st_mode)))
        try:
            data = json.loads(handle.read().decode("utf-8"))
        except (ValueError, UnicodeDecodeError) as exc:
            raise Refused("the configuration %s is not JSON: %s" % (path, exc))
    return check_config(data)


def owner_uids(names):
    uids = set()
    for name in names:
        try:
            uids.add(pwd.getpwnam(name).pw_uid)
        except KeyError:
            pass  # no such user (yet): only root may own the directory
    return uids


# --- opening a directory, component by component ---------------------------------------------------

def _judge(path, st, parent, leaf, leaf_uids):
    """Refuse ``path`` (fstat ``st``) as a component, given its parent's (path, fstat) or None."""
    if parent is not None:
        parent_path, parent_st = parent
        if parent_st.st_mode & 0o022 and not (parent_st.st_mode & stat.S_ISVTX and st.st_uid == 0):
            raise Refused("%s is writable by its group or by others (mode %04o): they could put a link in "
                          "place of what lies below it" % (parent_path, stat.S_IMODE(parent_st.st_mode)))
    if st.st_uid != 0 and not (leaf and st.st_uid in leaf_uids):
        raise Refused("%s is owned by uid %d, not root%s: that user could replace what lies below it with a link"
                      % (path, st.st_uid, " or the service user" if leaf else ""))
    if leaf and st.st_mode & 0o022:
        raise Refused("%s is writable by its group or by others (mode %04o): they could plant files in it for "
                      "root to delete" % (path, stat.S_IMODE(st.st_mode)))


def _open_child(fd, path, name):
    """An O_NOFOLLOW handle of directory ``name`` below handle ``fd``; None when it is missing."""
    try:
        return os.open(name, DIR_FLAGS, dir_fd=fd)
    except FileNotFoundError:
        return None
    except OSError as exc:
        if exc.errno not in (errno.ELOOP, errno.ENOTDIR):
            raise Refused("cannot open %s: %s" % (path, exc.strerror))
    st = os.stat(name, dir_fd=fd, follow_symlinks=False)
    if stat.S_ISLNK(st.st_mode):
        raise Refused("%s is a symbolic link (to %s): the cleanup never follows links, also not through a "
                      "trailing slash" % (path, os.readlink(name, dir_fd=fd)))
    raise Refused("%s is not a directory" % path)


def open_checked(directory, leaf_uids):
    """A handle of ``directory`` reached from / without links through safe components; None when
    it does not exist. Raises Refused."""
    parts = [p for p in directory.split("/") if p]
    fd = os.open("/", DIR_FLAGS)
    path, parent = "/", None
    try:
        _judge(path, os.fstat(fd), None, False, leaf_uids)
        for index, name in enumerate(parts):
            child_path = "/" + "/".join(parts[:index + 1])
            child = _open_child(fd, child_path, name)
            if child is None:
                os.close(fd)
                return None
            parent = (path, os.fstat(fd))
            os.close(fd)
            fd, path = child, child_path
            _judge(path, os.fstat(fd), parent, index == len(parts) - 1, leaf_uids)
    except BaseException:
        os.close(fd)
        raise
    return fd


# --- the walk -------------------------------------------------------------------------------------

def _stale(name, dir_fd, pattern, device, cutoff):
    """Whether entry ``name`` of ``dir_fd`` is a regular file to delete (not followed if a link)."""
    if not fnmatch.fnmatchcase(name, pattern):
        return False
    try:
        st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    return stat.S_ISREG(st.st_mode) and st.st_dev == device and st.st_mtime < cutoff


def clean(top_fd, directory, pattern, cutoff, log, dry_run=False):
    """Delete the stale files below the handle ``top_fd``; returns how many (would be) deleted."""
    device = os.fstat(top_fd).st_dev
    deleted = 0
    for dirpath, dirnames, filenames, dir_fd in os.fwalk(".", dir_fd=top_fd, follow_symlinks=False):
        here = os.path.normpath(os.path.join(directory, dirpath))
        keep = []
        for name in dirnames:
            try:
                st = os.stat(name, dir_fd=dir_fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if stat.S_ISDIR(st.st_mode) and st.st_dev == device:
                keep.append(name)  # links to directories and other file systems are not entered
        dirnames[:] = keep
        for name in filenames:
            if not _stale(name, dir_fd, pattern, device, cutoff):
                continue
            if not dry_run:
                try:
                    os.unlink(name, dir_fd=dir_fd)
                except FileNotFoundError:
                    continue
            deleted += 1
            log.info("%s %s" % ("would delete" if dry_run else "deleted", os.path.join(here, name)))
    return deleted


# --- main -----------------------------------------------------------------------------------------

class Log(object):
    def __init__(self, quiet):
        self.quiet = quiet
        syslog.openlog(TAG, 0, syslog.LOG_CRON)

    def info(self, message):
        syslog.syslog(syslog.LOG_INFO, message)
        if not self.quiet:
            print(message)

    def refused(self, message):
        syslog.syslog(syslog.LOG_WARNING, message)
        print("%s: %s" % (TAG, message), file=sys.stderr)


def run(config, log, dry_run=False, now=None):
    """Clean every configured directory; returns the exit status (0, or 1 if one was refused)."""
    status = 0
    cutoff = (time.time() if now is None else now) - config["max_age_days"] * 86400
    leaf_uids = owner_uids(config["owners"])
    for entry in config["dirs"]:
        reason = dir_reason(entry)
        directory = entry.rstrip("/") if not reason else entry
        try:
            if reason:
                raise Refused(reason)
            fd = open_checked(directory, leaf_uids)
            if fd is None:
                log.info("%s does not exist: nothing to clean" % directory)
                continue
            try:
                count = clean(fd, directory, config["pattern"], cutoff, log, dry_run)
            finally:
                os.close(fd)
            log.info("%s: %d file(s) %s" % (directory, count, "would be deleted" if dry_run else "deleted"))
        except Refused as exc:
            log.refused("refused %s: %s; nothing below it was deleted" % (json.dumps(entry), exc))
            status = 1
        except OSError as exc:
            log.refused("cannot clean %s: %s" % (directory, exc))
            status = 1
    return status


def main(argv=None):
    parser = argparse.ArgumentParser(description="Delete stale model-cache files (housekeeping role).")
    parser.add_argument("--config", default=CONFIG, help="the JSON configuration (default %(default)s)")
    parser.add_argument("--dry-run", action="store_true", help="list what would be deleted, delete nothing")
    parser.add_argument("--quiet", action="store_true", help="deletions to syslog only (refusals still to stderr)")
    parser.add_argument("--check-config", metavar="FILE", help="only check FILE's content (Ansible's validate)")
    args = parser.parse_args(argv)
    log = Log(args.quiet)
    try:
        if args.check_config:
            read_config(args.check_config, trust_owner=False)
            return 0
        config = read_config(args.config)
    except Refused as exc:
        log.refused("%s; nothing was deleted" % exc)
        return 2
    return run(config, log, args.dry_run)


if __name__ == "__main__":
    sys.exit(main())
