# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Remove serial numbers, GPU UUIDs and GPU PDIs from a capture directory tree, in place, before it is committed.

Each distinct GPU UUID becomes GPU-00000000-0000-0000-0000-00000000000N and each distinct GPU PDI
(the per-device identifier of drivers 570+: `GPU PDI : 0x...` in `nvidia-smi -q`, `<pdi>` or
`<gpu_pdi>` in `-q -x`) becomes 0x000000000000000N, N in the GPUs' order in the first `q_x.out`
(then in order of first appearance), so one GPU keeps one value across files; serial numbers
become zeros of the same length. `N/A` stays. Nothing else changes: tabs, ANSI escapes, trailing
blanks and missing final newlines are kept byte for byte.

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
# GPU PDI: group 2 is the value (0x and hex digits)
PDIS = [
    re.compile(rb"(GPU PDI\s*: )(0x[0-9a-fA-F]+)"),
    re.compile(rb"(<(?:gpu_)?pdi>)(0x[0-9a-fA-F]+)(?=</(?:gpu_)?pdi>)"),
]
ZERO_UUID = "GPU-00000000-0000-0000-0000-{:012d}"


def _number(found, order, fmt):
    """{value: placeholder}: the values in ``order`` first (the GPUs' order), then the others as
    found; ``fmt(n, value)`` makes the n-th placeholder."""
    mapping = {}
    for value in order + found:
        if value not in mapping:
            mapping[value] = fmt(len(mapping), value)
    return mapping


def _pdi_placeholder(n, value):
    digits = max(len(value) - 2, 1)
    return b"0x" + ("%0*x" % (digits, n)).encode()


def _values(data, patterns):
    return [m.group(2).lower() for rx in patterns for m in rx.finditer(data)]


def _in_gpu_order(directory, names, read):
    """UUIDs and PDIs of the first `nvidia-smi -q -x` capture (q_x.out), in the GPUs' order."""
    for name in names:
        if os.path.basename(name) == "q_x.out":
            data = read(name)
            pdis = sorted(((m.start(), m.group(2).lower()) for rx in PDIS for m in rx.finditer(data)))
            return [u.lower() for u in UUID.findall(data)], [v for _pos, v in pdis]
    return [], []


def sanitize(directory):
    names = sorted(os.path.relpath(os.path.join(root, n), directory)
                   for root, _dirs, files in os.walk(directory) for n in files)

    def read(name):
        with open(os.path.join(directory, name), "rb") as fh:
            return fh.read()

    uuids, pdis = [], []
    for name in names:
        data = read(name)
        uuids += [u.lower() for u in UUID.findall(data)]
        pdis += _values(data, PDIS)
    uuid_order, pdi_order = _in_gpu_order(directory, names, read)
    mapping = _number(uuids, uuid_order, lambda n, _v: ZERO_UUID.format(n).encode())
    pdi_map = _number(pdis, pdi_order, _pdi_placeholder)
    changed = []
    for name in names:
        data = read(name)
        new = UUID.sub(lambda m: mapping[m.group(0).lower()], data)
        for rx in SERIALS:
            new = rx.sub(lambda m: m.group(1) + (b"0" * len(m.group(2)) if m.group(2) != b"N/A" else m.group(2)), new)
        for rx in PDIS:
            new = rx.sub(lambda m: m.group(1) + pdi_map[m.group(2).lower()], new)
        if new != data:
            with open(os.path.join(directory, name), "wb") as fh:
                fh.write(new)
            changed.append(name)
    return changed, mapping, pdi_map


def main():
    if len(sys.argv) != 2 or not os.path.isdir(sys.argv[1]):
        sys.exit("usage: sanitize.py DIR")
    changed, mapping, pdi_map = sanitize(sys.argv[1])
    print("sanitised %d files, %d GPU UUIDs, %d GPU PDIs: %s"
          % (len(changed), len(mapping), len(pdi_map), ", ".join(changed)))


if __name__ == "__main__":
    main()
