# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""When nvidia-smi fails: the parse errors, host-level failures and per-GPU handle errors.

Every parser of nvidia-smi output (``_topo_matrix``, ``_query_xml``, ``_nvlink``) raises the
errors defined here and skips the messages recognised here; the facts merge (``_topology``) turns
a host-level failure into ``available: false``. The lines are read through ``output_lines`` so
that each parser sees the same text (ANSI escapes removed, any line ending).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import List, Optional, Tuple

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._pci_bus import nvsmi_bus_id

_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
# Every spelling seen (tests/fixtures/real/public/smi_handle_*, smi_fail_09): "for GPU 0000:09:00.0: Unknown
# Error", "for GPU0000:07:00.0: ..." (no blank), "for GPU1: 0000:34:00.0: ..." (the index, driver 610),
# "for gpu 0000:01:00.0: Not Found" (lower case, open modules 515), 8-digit domains, "GPU is lost."
_HANDLE_ERROR_RE = re.compile(
    r"Unable to determine the device handle for GPU\s*(?:(\d{1,3})\s*:\s+)?"
    r"((?:[0-9A-Fa-f]{1,8}:)?[0-9A-Fa-f]{1,2}:[0-9A-Fa-f]{1,2}\.[0-7])\s*:\s*(.*\S)",
    re.IGNORECASE)
# Host-level failures: nvidia-smi could not talk to NVML / the driver, or saw no device at all.
_HOST_FAILURE_RES = (
    re.compile(r"Failed to initialize NVML\b.*"),
    re.compile(r"NVIDIA-SMI has failed because.*"),
    re.compile(r"No devices were found.*"),
    re.compile(r"Unable to load the NVIDIA Management Library.*", re.IGNORECASE),
    re.compile(r"GPU access blocked by the operating system.*"),
    re.compile(r"Insufficient Permissions.*"),
)
_WARNING_LINE_RE = re.compile(r"^\s*WARNING:\s*(.*\S)")


# --------------------------------------------------------------------------------------------
# Errors
# --------------------------------------------------------------------------------------------

class TopologyParseError(ValueError):
    """Output a parser does not understand.

    ``source`` is the command (``nvidia-smi topo -m`` ...), ``line_no`` the 1-based line number
    (None when not tied to one line) and ``line`` that line's text, so the message names it.
    """

    def __init__(self, source, message, line_no=None, line=None):
        self.source = source
        self.detail = message
        self.line_no = line_no
        self.line = line
        text = "%s: %s" % (source, message)
        if line_no is not None:
            text += " (line %d: %r)" % (line_no, line)
        super(TopologyParseError, self).__init__(text)


class TruncatedOutputError(TopologyParseError):
    """Output that stops early (empty, or cut in the middle of the matrix / XML)."""


# --------------------------------------------------------------------------------------------
# Text as every parser reads it
# --------------------------------------------------------------------------------------------

def strip_ansi(text: str) -> str:
    """Remove ANSI escape sequences (the real H200 ``topo -m`` header is wrapped in ESC[4m)."""
    return _ANSI_RE.sub("", text)


def output_lines(text: Optional[str]) -> List[str]:
    """The lines of a command's output, ANSI escapes removed, for any line ending."""
    return strip_ansi(text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def raw_lines(text: Optional[str]) -> List[str]:
    """The lines as printed (escapes kept), for quoting a line in an error message."""
    return (text or "").replace("\r\n", "\n").split("\n")


def quote_output(text: Optional[str], limit: int = 300) -> str:
    """A command's output on one line (``; `` between lines), cut after ``limit`` characters."""
    flat = "; ".join(line.strip() for line in output_lines(text) if line.strip())
    return flat if len(flat) <= limit else flat[:limit] + "..."


# --------------------------------------------------------------------------------------------
# Failure messages
# --------------------------------------------------------------------------------------------

def is_handle_error(line: str) -> bool:
    """Is this an ``Unable to determine the device handle for GPU ...`` line?"""
    return bool(_HANDLE_ERROR_RE.search(line))


def is_known_message(line: str) -> bool:
    """A message nvidia-smi prints between its output lines: a handle error or ``WARNING: ...``."""
    return bool(_HANDLE_ERROR_RE.search(line) or _WARNING_LINE_RE.match(line))


def detect_smi_failure(text: Optional[str]) -> Optional[str]:
    """Return the tool's own message when nvidia-smi failed for the whole host, else None.

    Recognises ``Failed to initialize NVML: ...`` (with a following ``NVML library version``
    line), ``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver...``,
    ``No devices were found`` and a few relatives. A per-GPU ``Unable to determine the device
    handle ...`` is not a host failure (see ``find_handle_errors``).
    """
    lines = [line.strip() for line in output_lines(text) if line.strip()]
    for number, line in enumerate(lines):
        for pattern in _HOST_FAILURE_RES:
            if pattern.search(line):
                quoted = [line]
                # keep a directly following detail line such as "NVML library version: 535.161"
                if number + 1 < len(lines) and lines[number + 1].startswith("NVML library version"):
                    quoted.append(lines[number + 1])
                return "; ".join(quoted)
    return None


def find_handle_errors(text: Optional[str]) -> List[Tuple[str, str]]:
    """Return ``[(bus_id, message)]`` for ``Unable to determine the device handle for GPU ...``.

    ``bus_id`` is normalised to nvidia-smi's spelling (``00000000:09:00.0``); ``message`` is the
    whole line as printed. Spellings seen: ``for GPU 0000:09:00.0: Unknown Error``,
    ``for GPU0000:65:00.0: Unknown Error``, ``for GPU1: 0000:34:00.0: Unknown Error`` (the index
    is read by ``handle_error_index``), ``for gpu 0000:01:00.0: Not Found``.
    """
    found = []
    for line in output_lines(text):
        match = _HANDLE_ERROR_RE.search(line)
        if match:
            try:
                bus = nvsmi_bus_id(match.group(2))
            except ValueError:
                continue
            found.append((bus, line.strip()))
    return found


def handle_error_index(message: str) -> Optional[int]:
    """The GPU index a handle error names before the bus id (``for GPU1: 0000:34:00.0``), else None."""
    match = _HANDLE_ERROR_RE.search(message or "")
    return int(match.group(1)) if match and match.group(1) is not None else None
