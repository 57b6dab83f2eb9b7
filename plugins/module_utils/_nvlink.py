# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""Parser of ``nvidia-smi nvlink -s`` (``--status``): each GPU's NVLinks and their speed.

The format (real captures under ``tests/fixtures/real/``): ``GPU n: <name> (UUID: ...)``
followed by ``Link n: <x> GB/s`` or ``Link n: <inactive>`` lines.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Any, Dict, Optional

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    TopologyParseError,
    is_known_message,
    output_lines,
    raw_lines,
)

# a GPU without NVLink support says so instead of listing links
_NVLINK_INFO_RE = re.compile(r"^\s*NVML: Unable to retrieve NVLink information.*$", re.IGNORECASE)
_NVLINK_GPU_RE = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*\(UUID:\s*([^)\s]+)\s*\)\s*$")
_NVLINK_LINK_RE = re.compile(r"^\s*Link\s+(\d+)\s*:\s*(.*?)\s*$")
_NVLINK_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB/s$")


def _link(match, source, line_no, raw_line):
    """One ``Link n: ...`` line as ``{"link", "state", "speed_gbps"}``."""
    value = match.group(2)
    speed = _NVLINK_SPEED_RE.match(value)
    if speed:
        return {"link": int(match.group(1)), "state": "active", "speed_gbps": float(speed.group(1))}
    if value.lower() == "<inactive>":
        return {"link": int(match.group(1)), "state": "inactive", "speed_gbps": None}
    raise TopologyParseError(
        source, "link state %r is neither '<n> GB/s' nor '<inactive>'" % value, line_no, raw_line)


def parse_nvlink_status(text: Optional[str], source: str = "nvidia-smi nvlink -s") -> Dict[str, Any]:
    """Parse ``nvidia-smi nvlink -s`` (``--status``).

    Returns ``{"gpus": [{"index": 0, "name": "...", "uuid": "GPU-...",
    "nvlinks": [{"link": 0, "state": "active", "speed_gbps": 25.0}]}], "warnings": []}``.
    ``speed_gbps`` is the figure nvidia-smi prints, in GB/s (gigabytes per second);
    ``<inactive>`` links have state ``inactive`` and speed None. Empty output (GPUs without
    NVLink, e.g. the H200 VM) gives no GPUs. Other lines raise ``TopologyParseError``.
    """
    gpus = []
    warnings = []
    current = None
    raw = raw_lines(text)
    for number, line in enumerate(output_lines(text)):
        if not line.strip():
            continue
        match = _NVLINK_GPU_RE.match(line.strip())
        if match:
            current = {"index": int(match.group(1)), "name": match.group(2),
                       "uuid": match.group(3), "nvlinks": []}
            gpus.append(current)
            continue
        match = _NVLINK_LINK_RE.match(line)
        if match:
            if current is None:
                raise TopologyParseError(source, "link line before any GPU line",
                                         number + 1, raw[number])
            current["nvlinks"].append(_link(match, source, number + 1, raw[number]))
            continue
        if _NVLINK_INFO_RE.match(line) or is_known_message(line):
            warnings.append("%s: %s" % (source, line.strip()))
            continue
        raise TopologyParseError(source, "unexpected line", number + 1, raw[number])
    return {"gpus": gpus, "warnings": warnings}
