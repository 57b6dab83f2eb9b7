# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Whether root may clean a directory recursively (the housekeeping cache cleanup), judged on the
host by the ``dir_safety`` module before anything changes. Private to the collection.

Three questions, in order; the first answer that refuses is the reason:

1. the path as written (``lexical_reason``): absolute, normalised, no control characters;
2. where it lies (``place_reason``): never ``/``, a system directory or tree (``_system_dirs``, the
   one list), a tree of software, configuration or home directories (``FORBIDDEN_TREES``), a home
   directory, nor the same as, a parent of or inside a protected path the role names (the model
   path, the weight store, the vLLM virtualenv);
3. what it is on the host (``component_records`` + ``component_reason``): every component from
   ``/`` down a real directory - no symbolic link, also not one a trailing slash would descend
   into - owned by root and writable by root only; the directory itself may instead be owned by
   one of the given users (the service user, who writes the cache). A sticky directory writable
   by all (``/tmp``) may lie above an entry that root owns (no one else can rename it).

A directory that does not exist yet passes the third question: there is nothing to clean, and the
cleanup script asks the same again each night (roles/housekeeping/files/gpu_fleet_cache_cleanup.py).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import collections
import os
import stat

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._system_dirs import normalize, system_dir_reason

# --- where a cleanup directory must never lie ---------------------------------------------------

# Trees whose files are programs, configuration or people's data, never a cache root cleans:
# Python packages under /usr and /opt ship *.pt files. (/etc/vllm, /usr/local/libexec/gpu-fleet
# and /opt/vllm are the collection's own, so these are not system trees for the other roles.)
FORBIDDEN_TREES = (
    ("/etc", "configuration"),
    ("/usr", "installed software"),
    ("/opt", "add-on software such as the vLLM virtualenv"),
    ("/run", "runtime state"),
    ("/home", "home directories"),
    ("/root", "root's home directory"),
)


def _within(path, tree):
    """Whether normalised ``path`` is ``tree`` or lies below it."""
    return path == tree or path.startswith(tree.rstrip("/") + "/")


def lexical_reason(path):
    """Why ``path`` as written is refused, or ``None``."""
    if not isinstance(path, str) or not path.strip():
        return "it is empty"
    if not path.startswith("/"):
        return "it is a relative path (the cleanup runs from cron, in no directory of yours)"
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        return "it holds a control character (a newline, a tab)"
    parts = path.rstrip("/").split("/")[1:]
    if any(part in ("", ".", "..") for part in parts):
        return "it is not normalised ('.', '..' or empty components can name / or a system directory)"
    return None


def _overlap(norm, protected, what):
    if norm == protected:
        return "it is %s, %s" % (protected, what)
    if _within(protected, norm):
        return "it is a parent of %s, %s" % (protected, what)
    if _within(norm, protected):
        return "it lies inside %s, %s" % (protected, what)
    return None


def place_reason(norm, protected=(), homes=()):
    """Why the normalised absolute ``norm`` must never be cleaned, or ``None``. ``protected``:
    (path, what) pairs, e.g. ("/srv/models/Qwen", "the model path (vllm_server_model.path)");
    ``homes``: (user, home directory) pairs of the host's accounts."""
    if norm == "/":
        return "it is the root directory /"
    reason = system_dir_reason(norm)
    if reason:
        return "it is a system directory or lies in one: %s" % reason
    for path, what in protected:
        target = normalize(path)
        if target and target != "/":
            reason = _overlap(norm, target, what)
            if reason:
                return reason
    for tree, what in FORBIDDEN_TREES:
        if _within(norm, tree):
            return "it lies in %s (%s)" % (tree, what)
    for user, home in homes:
        target = normalize(home)
        if target and target != "/":
            reason = _overlap(norm, target, "the home directory of user %s" % user)
            if reason:
                return reason
    return None


# --- what the path is on the host -----------------------------------------------------------------

# kind: "dir", "link", "other" or "missing" (then uid, owner, mode and target are None).
Component = collections.namedtuple("Component", "path kind uid owner mode target")


def component_paths(norm):
    """``/`` and each prefix of the normalised ``norm`` down to it: /, /var, /var/cache, ..."""
    parts = [part for part in norm.split("/") if part]
    return ["/"] + ["/" + "/".join(parts[:i + 1]) for i in range(len(parts))]


def component_records(norm, lstat=os.lstat, readlink=os.readlink, owner_name=str):
    """A Component per path of ``component_paths(norm)``, read with ``lstat`` (never following a
    link), up to the first that is missing or not a directory. Reads only."""
    records = []
    for path in component_paths(norm):
        try:
            st = lstat(path)
        except FileNotFoundError:
            records.append(Component(path, "missing", None, None, None, None))
            break
        if stat.S_ISLNK(st.st_mode):
            kind, target = "link", readlink(path)
        else:
            kind, target = ("dir" if stat.S_ISDIR(st.st_mode) else "other"), None
        records.append(Component(path, kind, st.st_uid, owner_name(st.st_uid), stat.S_IMODE(st.st_mode), target))
        if kind != "dir":
            break
    return records


def _writable_reason(record, below, leaf):
    if not record.mode & 0o022:
        return None
    if leaf:
        return ("%s is writable by its group or by others (mode %04o): they could plant files in it for "
                "root to delete" % (record.path, record.mode))
    if record.mode & stat.S_ISVTX and below is not None and (below.kind == "missing" or below.uid == 0):
        return None  # sticky (/tmp): only root may rename or remove the root-owned entry below
    return ("%s is writable by its group or by others (mode %04o): they could put a link in place of "
            "what lies below it" % (record.path, record.mode))


def component_reason(norm, records, leaf_uids=()):
    """Why root must not walk the normalised ``norm`` given its ``records`` (component_records),
    or ``None`` (also when it does not exist yet). ``leaf_uids``: who besides root may own ``norm``
    itself."""
    for index, record in enumerate(records):
        leaf = record.path == norm
        if record.kind == "missing":
            return None
        if record.kind == "link":
            return ("%s is a symbolic link (to %s): the cleanup never follows links, also not through a "
                    "trailing slash" % (record.path, record.target))
        if record.kind != "dir":
            return "%s is not a directory" % record.path
        if record.uid != 0 and not (leaf and record.uid in leaf_uids):
            return "%s is owned by %s, not root%s: that user could replace what lies below it with a link" % (
                record.path, record.owner, " or the service user" if leaf else "")
        below = records[index + 1] if index + 1 < len(records) else None
        reason = _writable_reason(record, below, leaf)
        if reason:
            return reason
    return None


def verdict(path, protected=(), homes=(), leaf_uids=(), read=component_records):
    """The judgement of one cleanup directory: a dict with ``path`` (as given), ``normalized``
    (``None`` when refused as written), ``exists`` and ``reason`` (``None``: root may clean it).
    ``read``: the reader of components (``component_records``, or one that names owners)."""
    result = {"path": path, "normalized": None, "exists": False, "reason": lexical_reason(path)}
    if result["reason"]:
        return result
    norm = normalize(path)
    result["normalized"] = norm
    result["reason"] = place_reason(norm, protected, homes)
    if result["reason"]:
        return result
    found = read(norm)
    result["exists"] = bool(found) and found[-1].path == norm and found[-1].kind != "missing"
    result["reason"] = component_reason(norm, found, leaf_uids)
    return result
