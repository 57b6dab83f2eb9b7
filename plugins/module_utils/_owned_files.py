# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Does a host hold exactly the files a role would write? Pure comparison, no Ansible, no I/O.

Private to the collection (``owned_files`` is its caller). A role renders every file it owns on
the controller and hands in, per path, what it would write: the SHA-1 of the content (files
with content), owner, group and mode, or that the path must be a directory or absent. The caller
stats the host's paths (:class:`Found`); :func:`compare` names every path that differs and why,
so the role runs its per-file ``template``/``copy``/``file`` tasks only for those.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Dict, List, NamedTuple, Optional

STATES = ("file", "directory", "absent")


class OwnedFileError(ValueError):
    """An expected entry that cannot be compared (bad state or mode)."""


class Expected(NamedTuple):
    path: str
    state: str = "file"
    checksum: Optional[str] = None
    owner: Optional[str] = None
    group: Optional[str] = None
    mode: Optional[int] = None


class Found(NamedTuple):
    """The host's path: kind ``file``, ``directory`` or ``other``; mode as an int (0o640)."""
    kind: str
    owner: str
    group: str
    mode: int
    checksum: Optional[str] = None


def parse_mode(value):
    """0o640 from "0640", "640" or the int 0o640 (YAML ``mode: 0640``); None stays None."""
    if value is None or value == "":
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    text = str(value).strip()
    if not text.isdigit() or any(c in "89" for c in text):
        raise OwnedFileError("mode %r is not an octal number such as '0640'" % (value,))
    return int(text, 8)


def expected_from_dict(data, checksums=None):
    """An Expected from one ``files`` entry and the ``checksums`` map ({path: sha1})."""
    path = data.get("path")
    if not path or not str(path).startswith("/"):
        raise OwnedFileError("an entry has no absolute path: %r" % (data,))
    state = data.get("state") or "file"
    if state not in STATES:
        raise OwnedFileError("%s: state %r is none of %s" % (path, state, ", ".join(STATES)))

    def text(key):
        return str(data[key]) if data.get(key) not in (None, "") else None
    return Expected(path=str(path), state=state, checksum=(checksums or {}).get(path) or None,
                    owner=text("owner"), group=text("group"), mode=parse_mode(data.get("mode")))


def differences(expected, found):
    """Why the host's path (None: missing) is not what the role writes; [] when it is."""
    if expected.state == "absent":
        return [] if found is None else ["present, must be absent"]
    if found is None:
        return ["missing"]
    if found.kind != expected.state:
        return ["is a %s, must be a %s" % (found.kind, expected.state)]
    reasons = []
    if expected.checksum is not None and found.checksum != expected.checksum:
        reasons.append("content differs")
    for what, want, have in (("owner", expected.owner, found.owner), ("group", expected.group, found.group)):
        if want is not None and want != have:
            reasons.append("%s %s, must be %s" % (what, have, want))
    if expected.mode is not None and expected.mode != found.mode:
        reasons.append("mode %04o, must be %04o" % (found.mode, expected.mode))
    return reasons


def compare(expected, found):
    """{path: reasons} for every Expected (in order) whose path in ``found`` ({path: Found or
    None}) differs."""
    result: Dict[str, List[str]] = {}
    for entry in expected:
        reasons = differences(entry, found.get(entry.path))
        if reasons:
            result[entry.path] = reasons
    return result
