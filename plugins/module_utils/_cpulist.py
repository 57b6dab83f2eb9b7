# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Linux CPU list strings ("0-3,8,10-11") to and from lists of CPU numbers.

The format is the kernel's "cpulist" (Documentation/admin-guide/cgroup-v1/cpusets.rst,
``lib/bitmap.c`` ``bitmap_parselist``), as printed by ``/sys/devices/system/node/node*/cpulist``,
``/sys/bus/pci/devices/*/local_cpulist`` and the ``CPU Affinity`` column of
``nvidia-smi topo -m``. The kernel's ``a-b:used/group`` stride form is accepted too.

Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_RANGE_RE = re.compile(r"^(\d+)(?:-(\d+)(?::(\d+)/(\d+))?)?$")


def parse_cpulist(text):
    """Return the sorted, de-duplicated CPU numbers of a cpulist string.

    ``parse_cpulist("0-3,8,10-11") == [0, 1, 2, 3, 8, 10, 11]``.
    An empty (or whitespace-only) string is an empty list: a CPU-less NUMA node prints an
    empty ``cpulist``. Anything else that is not a cpulist raises ``ValueError`` quoting the text.
    """
    if text is None:
        raise ValueError("cpulist is missing (None)")
    if not isinstance(text, str):
        raise ValueError("cpulist must be a string, got %r" % (text,))
    stripped = text.strip()
    if not stripped:
        return []
    cpus = set()
    for part in stripped.split(","):
        item = part.strip()
        match = _RANGE_RE.match(item)
        if not match:
            raise ValueError(
                "invalid cpulist %r: item %r is not N, N-M or N-M:used/group" % (text, item))
        first = int(match.group(1))
        last = int(match.group(2)) if match.group(2) is not None else first
        if last < first:
            raise ValueError("invalid cpulist %r: range %r ends before it starts" % (text, item))
        if match.group(3) is not None:
            used = int(match.group(3))
            group = int(match.group(4))
            if group == 0 or used == 0 or used > group:
                raise ValueError(
                    "invalid cpulist %r: stride %r needs 0 < used <= group" % (text, item))
            for cpu in range(first, last + 1):
                if (cpu - first) % group < used:
                    cpus.add(cpu)
        else:
            cpus.update(range(first, last + 1))
    return sorted(cpus)


def format_cpulist(cpus):
    """Return the shortest cpulist string for an iterable of CPU numbers.

    ``format_cpulist([0, 1, 2, 3, 8, 10, 11]) == "0-3,8,10-11"``; ``format_cpulist([]) == ""``.
    Raises ``ValueError`` for negative or non-integer entries.
    """
    values = set()
    for cpu in cpus:
        if isinstance(cpu, bool) or not isinstance(cpu, int) or cpu < 0:
            raise ValueError("CPU numbers must be non-negative integers, got %r" % (cpu,))
        values.add(cpu)
    ordered = sorted(values)
    parts = []
    index = 0
    while index < len(ordered):
        start = ordered[index]
        end = start
        while index + 1 < len(ordered) and ordered[index + 1] == end + 1:
            index += 1
            end = ordered[index]
        parts.append(str(start) if start == end else "%d-%d" % (start, end))
        index += 1
    return ",".join(parts)
