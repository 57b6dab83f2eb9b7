# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Remove serial numbers and GPU UUIDs from a capture directory tree, in place, before it is committed.

Each distinct GPU UUID becomes GPU-00000000-0000-0000-0000-00000000000N (N in order of first
appearance, so one GPU keeps one UUID across files); serial numbers become zeros of the same
length. Nothing else changes: tabs, ANSI escapes, trailing blanks and missing final newlines are
kept byte for byte.

    python3 tests/hardware/sanitize.py DIR
"""
import os
import re
import sys

UUID = re.compile(rb"GPU-[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}")
SERIALS = [
    re.compile(rb"(Serial Number\s*: )([^\s<]+)"),
    re.compile(rb"(<serial>)([^\s<]+)(?=</serial>)"),
    re.compile(rb"(<chassis_serial_number>)([^\s<]+)(?=</chassis_serial_number>)"),
]
ZERO_UUID = "GPU-00000000-0000-0000-0000-{:012d}"


def sanitize(directory):
    names = sorted(os.path.relpath(os.path.join(root, n), directory)
                   for root, _dirs, files in os.walk(directory) for n in files)
    mapping = {}
    for name in names:  # first pass: number the UUIDs in order of the GPUs in -q -x, then anything else
        with open(os.path.join(directory, name), "rb") as fh:
            for uuid in UUID.findall(fh.read()):
                mapping.setdefault(uuid.lower(), None)
    order = []
    for name in names:  # the GPUs' own order, from the first `nvidia-smi -q -x` capture
        if os.path.basename(name) == "q_x.out":
            with open(os.path.join(directory, name), "rb") as fh:
                order = [u.lower() for u in UUID.findall(fh.read())]
            break
    for uuid in order + list(mapping):
        if mapping.get(uuid) is None:
            mapping[uuid] = ZERO_UUID.format(len([v for v in mapping.values() if v])).encode()
    changed = []
    for name in names:
        path = os.path.join(directory, name)
        with open(path, "rb") as fh:
            data = fh.read()
        new = UUID.sub(lambda m: mapping[m.group(0).lower()], data)
        for rx in SERIALS:
            new = rx.sub(lambda m: m.group(1) + (b"0" * len(m.group(2)) if m.group(2) != b"N/A" else m.group(2)), new)
        if new != data:
            with open(path, "wb") as fh:
                fh.write(new)
            changed.append(name)
    return changed, mapping


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: sanitize.py DIR")
    changed, mapping = sanitize(sys.argv[1])
    print("sanitised %d files, %d GPU UUIDs: %s" % (len(changed), len(mapping), ", ".join(changed)))


if __name__ == "__main__":
    main()
