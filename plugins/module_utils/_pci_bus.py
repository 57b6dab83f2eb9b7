# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""PCI bus ids in the two spellings a GPU host uses: nvidia-smi's and sysfs's.

``nvidia-smi`` prints ``00000000:4B:00.0`` (8-digit domain, upper case); ``/sys/bus/pci/devices``
names the same device ``0000:4b:00.0``. Every parser and the facts merge compare bus ids in
nvidia-smi's spelling and read sysfs in its own.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Optional, Tuple

_BUS_ID_RE = re.compile(
    r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])$")


def bus_parts(bus_id: Optional[str]) -> Tuple[int, int, int, int]:
    """``(domain, bus, device, function)`` of a bus id; ValueError when it is not one."""
    match = _BUS_ID_RE.match((bus_id or "").strip())
    if not match:
        raise ValueError("not a PCI bus id (DDDDDDDD:BB:DD.F): %r" % (bus_id,))
    domain = int(match.group(1), 16) if match.group(1) else 0
    return domain, int(match.group(2), 16), int(match.group(3), 16), int(match.group(4))


def bus_sort_key(bus_id: Optional[str]) -> Tuple[int, int, int, int]:
    """Sort key in PCI order; a missing or malformed id sorts after every real one."""
    try:
        return bus_parts(bus_id)
    except ValueError:
        return (1 << 32, 0, 0, 0)


def nvsmi_bus_id(bus_id: str) -> str:
    """``0000:4b:00.0`` or ``00000000:4B:00.0`` -> ``00000000:4B:00.0`` (nvidia-smi's spelling)."""
    return "%08X:%02X:%02X.%d" % bus_parts(bus_id)


def sysfs_bus_id(bus_id: str) -> str:
    """``00000000:4B:00.0`` -> ``0000:4b:00.0`` (the name under /sys/bus/pci/devices)."""
    return "%04x:%02x:%02x.%d" % bus_parts(bus_id)
