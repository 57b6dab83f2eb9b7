# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""What one Xid event means for a host: NVIDIA's catalog row and the severity we derive from it.

The catalog (``_xid_catalog``) is copied as published; the severity is ours and follows one rule,
on the catalog's "Resolution Bucket (Immediate Action)" of the event's *root cause* (the Xid the
driver names in ``caused by previous Xid N``, drivers 570.123.01 and later; else the event itself):

- ``RESTART_APP`` and ``WORKFLOW_XID_45`` (Xid 45 alone: the driver cleaned up after the
  application): ``warn``, the application's problem, the GPU stays usable.
- ``IGNORE``: ``info``, listed but not a finding of its own (the ECC/remap checks read what Xid 63
  and 92 are about from the counters).
- ``XID_154`` (the driver changed the GPU's recovery action): ``info`` when it changed to
  ``0x0 (None)``, else ``fail`` (reset, reboot or drain required).
- ``WORKFLOW_NVLINK5_ERR`` (Xids 144-150): the driver's own word in the message decides,
  ``Nonfatal`` ``warn``, otherwise ``fail``.
- every other bucket (``RESET_GPU``, ``RESTART_BM``, ``RESTART_VM``, ``CONTACT_SUPPORT``,
  ``CHECK_MECHANICALS``, ``CHECK_UVM``, ``UPDATE_SWFW``, ``WORKFLOW_XID_48``,
  ``WORKFLOW_NVLINK_ERR``), a blank bucket and an Xid the catalog does not list: ``fail``, the GPU
  is not fit to serve until it has been looked at.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._xid_catalog import (
    CATALOG_DATE,
    CATALOG_SOURCE,
    COLUMNS,
    ROWS,
)

__all__ = ["catalog", "catalog_entry", "root_cause", "classify", "CATALOG_SOURCE", "CATALOG_DATE"]

_BY_CODE = dict((row[0], dict(zip(COLUMNS, row))) for row in ROWS)
_CAUSED_BY_RE = re.compile(r"\bcaused by previous Xid (\d+)\s*$")
_RECOVERY_NONE_RE = re.compile(r"recovery action changed from .* to 0x0 \(None\)", re.IGNORECASE)
_NONFATAL_RE = re.compile(r"\bNonfatal\b")
_APPLICATION = frozenset(["RESTART_APP", "WORKFLOW_XID_45"])


def catalog():
    """Every catalog row as a dict keyed by ``COLUMNS``, in code order."""
    return [dict(_BY_CODE[code]) for code in sorted(_BY_CODE)]


def catalog_entry(code):
    """The catalog row of Xid ``code`` (a dict keyed by ``COLUMNS``), or None when not listed."""
    entry = _BY_CODE.get(code)
    return dict(entry) if entry else None


def root_cause(message):
    """The Xid named by a trailing ``caused by previous Xid N`` in the event's text, else None."""
    match = _CAUSED_BY_RE.search(message or "")
    return int(match.group(1)) if match else None


def _severity(code, entry, message):
    """(severity, rule) of one Xid from its catalog entry and its own message."""
    if entry is None:
        return "fail", "Xid %d is not in NVIDIA's catalog (%s): treated as a hardware fault" % (code, CATALOG_DATE)
    bucket = entry["immediate_action"]
    if not bucket:
        return "fail", "the catalog gives Xid %d no immediate action: treated as a hardware fault" % code
    if bucket in _APPLICATION:
        return "warn", "immediate action %s: the application's fault" % bucket
    if bucket == "IGNORE":
        return "info", "immediate action IGNORE"
    if bucket == "XID_154":
        if _RECOVERY_NONE_RE.search(message or ""):
            return "info", "recovery action back to None"
        return "fail", "the driver asks for a recovery action (Xid 154)"
    if bucket == "WORKFLOW_NVLINK5_ERR" and _NONFATAL_RE.search(message or ""):
        return "warn", "immediate action %s, the driver says Nonfatal" % bucket
    return "fail", "immediate action %s" % bucket


def classify(code, message="", root_message=""):
    """What Xid ``code`` with its text ``message`` means.

    Returns ``{"xid", "mnemonic", "description", "immediate_action", "investigatory_action",
    "root_xid", "root_mnemonic", "severity", "rule"}``; ``severity`` is ``fail``, ``warn`` or
    ``info`` by the rule of this module's docstring, applied to ``root_xid`` when the message
    names one (its own catalog values are still returned for ``xid``); ``root_message`` is the text
    of that root event where the log holds it (its ``Nonfatal``/recovery words count).
    """
    entry = catalog_entry(code)
    root = root_cause(message)
    if root is not None and root != code:
        root_entry = catalog_entry(root)
        severity, rule = _severity(root, root_entry, root_message or "")
        rule = "caused by previous Xid %d (%s): %s" % (
            root, root_entry["mnemonic"] if root_entry else "not in the catalog", rule)
    else:
        root_entry = None
        severity, rule = _severity(code, entry, message)
    entry = entry or {}
    return {
        "xid": code,
        "mnemonic": entry.get("mnemonic"),
        "description": entry.get("description"),
        "immediate_action": entry.get("immediate_action"),
        "investigatory_action": entry.get("investigatory_action"),
        "root_xid": root,
        "root_mnemonic": root_entry["mnemonic"] if root_entry else None,
        "severity": severity,
        "rule": rule,
    }
