# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""Parser of ``dcgmi diag -r <level>``: the result table of DCGM's diagnostic.

The format (real outputs under tests/fixtures/real/public/dcgmi_diag_*, DCGM 3.3.8 and 4.2.3): a
box table of ``| <test> | <result> |`` rows in sections (``|-----  Deployment  ---...``); a row
with an empty first cell continues the test above it (``GPU0: Pass``, ``Fail - GPU: 0``) or, for
``Warning`` / ``Info`` / ``Error`` rows, the message above it, which DCGM wraps at the column
width in the middle of words.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

__all__ = ["parse_dcgmi_diag", "MIG_INCOMPATIBLE_RE"]

_SECTION_RE = re.compile(r"^[|+]-+\s+(\S.*?)\s+-+[+|]")
_RESULT_RE = re.compile(r"^(?:(GPU\d+):\s*)?(Pass|Fail|Warn|Skip|Error)\b", re.IGNORECASE)
_MESSAGE_ROWS = ("warning", "info", "error")
MIG_INCOMPATIBLE_RE = re.compile(r"MIG configuration is incompatible with the diagnostic")


def _cells(line):
    parts = line.rstrip("\n").split("|")
    if len(parts) < 3:
        return None
    name = parts[1].strip()
    # DCGM wraps a long message at a fixed width, one character short of the cell (two pad blanks
    # before the bar), in the middle of words: keep that width exactly so the pieces join back
    value = parts[2][1:-2] if len(parts) > 3 and len(parts[2]) > 3 else parts[2][1:]
    return name, value


def parse_dcgmi_diag(text):
    """Parse a ``dcgmi diag`` table.

    Returns ``{"ran": bool, "version": str|None, "results": [{"section", "test", "result",
    "detail"}], "messages": [{"kind", "test", "text"}], "mig_incompatible": [lines]}``. ``result``
    is ``Pass``/``Fail``/``Warn``/``Skip``/``Error`` as printed; ``detail`` the rest of its cell
    (``- GPU: 0``). ``ran`` is False when no result row was found.
    """
    out = {"ran": False, "version": None, "results": [], "messages": [], "mig_incompatible": []}
    section, test, message = None, None, None
    for line in (text or "").splitlines():
        if MIG_INCOMPATIBLE_RE.search(line):
            out["mig_incompatible"].append(line.strip())
            continue
        match = _SECTION_RE.match(line.strip())
        if match:
            section, message = match.group(1), None
            continue
        cells = _cells(line.strip()) if line.strip().startswith("|") else None
        if cells is None:
            continue
        name, value = cells
        if name == "Diagnostic" and value.strip() == "Result":
            continue  # the table's header row
        if name.lower() in _MESSAGE_ROWS:
            message = {"kind": name.capitalize(), "test": test, "text": value}
            out["messages"].append(message)
            continue
        if not name and message is not None and not _RESULT_RE.match(value.strip()):
            message["text"] += value
            continue
        message = None
        if name:
            test = name
        if name == "DCGM Version":
            out["version"] = value.strip()
        result = _RESULT_RE.match(value.strip())
        if result and section != "Metadata" and test:
            rest = value.strip()[result.end():].strip(" -")
            out["results"].append({"section": section, "test": test, "result": result.group(2).capitalize(),
                                   "detail": " ".join(x for x in (result.group(1), rest) if x) or None})
    for message in out["messages"]:
        message["text"] = re.sub(r"\s+", " ", message["text"]).strip()
    out["ran"] = bool(out["results"])
    return out
