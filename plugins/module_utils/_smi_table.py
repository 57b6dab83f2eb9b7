# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parser for the plain ``nvidia-smi`` table (no arguments).

The table is what operators paste and what ``diagnose.yml`` collects; it is also the only view in
which a GPU whose driver calls time out shows up as a row of ``ERR!`` while the other rows stay
numeric (NVIDIA/open-gpu-kernel-modules#446). The parser reads each GPU block by its ``|`` cells,
whatever the column widths of the driver generation (525-era 31/22/22 or 580-era 41/24/22), with
two or three lines per GPU, and keeps lines printed after the table (``WARNING: infoROM is
corrupted at gpu ...``) as warnings.

Pure functions only: no Ansible imports, no I/O.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

_HEADER_RE = re.compile(r"Driver Version:\s*(?P<driver>\S+)(?:\s+CUDA Version:\s*(?P<cuda>\S+))?")
_GPU_FIRST_RE = re.compile(r"^\s*(?P<index>\d+)\s+(?P<name>.*?)\s+(?P<persistence>On|Off|ERR!|N/A)\s*$")
_BUS_RE = re.compile(r"^\s*(?P<bus>[0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s+(?P<disp>\S+)\s*$")
_MEM_RE = re.compile(r"^\s*(?P<used>\d+|ERR!|N/A)MiB\s*/\s*(?P<total>\d+|ERR!|N/A)MiB\s*$")
_ERR = "ERR!"


class SmiTableError(ValueError):
    """The text is not an ``nvidia-smi`` table; ``line_no``/``line`` name where reading stopped."""

    def __init__(self, message, line_no=None, line=None):
        self.line_no = line_no
        self.line = line
        where = "" if line_no is None else " (line %d: %r)" % (line_no, line)
        super(SmiTableError, self).__init__(message + where)


def _cells(line):
    """Cells between ``|`` of a table row (the outer empty pieces dropped)."""
    parts = line.rstrip("\n").split("|")
    return parts[1:-1] if len(parts) >= 3 else []


def _int_or_none(value):
    value = value.strip()
    return int(value) if value.isdigit() else None


def _block_gpu(block, source):
    """One GPU from its 2 or 3 table lines: [(line_no, cells), ...]."""
    (first_no, first), rest = block[0], block[1:]
    if len(first) < 3:
        raise SmiTableError("%s: GPU row without three cells" % source, first_no, "|".join(first))
    match = _GPU_FIRST_RE.match(first[0])
    if not match:
        raise SmiTableError("%s: cannot read the GPU index, name and persistence mode" % source,
                            first_no, "|".join(first))
    errors = []
    gpu = {
        "index": int(match.group("index")),
        "name": match.group("name").strip(),
        "persistence_mode": match.group("persistence"),
        "pci_bus_id": None,
        "display_active": None,
        "ecc_volatile_uncorrected": None,
        "ecc_cell": first[2].strip(),
        "memory_used_mib": None,
        "memory_total_mib": None,
        "compute_mode": None,
        "mig_mode": None,
    }
    if gpu["name"] == _ERR:
        errors.append("name")
    if gpu["persistence_mode"] == _ERR:
        errors.append("persistence_mode")
    bus = _BUS_RE.match(first[1])
    if bus:
        gpu["pci_bus_id"] = bus.group("bus").upper()
        gpu["display_active"] = bus.group("disp")
    elif _ERR in first[1]:
        errors.append("pci_bus_id")
    else:
        raise SmiTableError("%s: cannot read the bus id of GPU %d" % (source, gpu["index"]), first_no, "|".join(first))
    gpu["ecc_volatile_uncorrected"] = _int_or_none(gpu["ecc_cell"])
    if gpu["ecc_cell"] == _ERR:
        errors.append("ecc")
    if rest:
        second_no, second = rest[0]
        if len(second) >= 3:
            for field, token in zip(("fan", "temperature", "performance_state", "power"),
                                    second[0].split()):
                if token == _ERR:
                    errors.append(field)
            mem = _MEM_RE.match(second[1])
            if mem:
                gpu["memory_used_mib"] = _int_or_none(mem.group("used"))
                gpu["memory_total_mib"] = _int_or_none(mem.group("total"))
                if _ERR in (mem.group("used"), mem.group("total")):
                    errors.append("memory")
            elif _ERR in second[1]:
                errors.append("memory")
            util = second[2].split()
            if util:
                gpu["compute_mode"] = util[-1] if len(util) > 1 else None
                if util[0] == _ERR:
                    errors.append("utilization")
                if gpu["compute_mode"] == _ERR:
                    errors.append("compute_mode")
    if len(rest) > 1 and len(rest[1][1]) >= 3:
        gpu["mig_mode"] = rest[1][1][2].strip() or None
        if gpu["mig_mode"] == _ERR:
            errors.append("mig_mode")
    gpu["error_fields"] = errors
    gpu["healthy"] = not errors
    gpu["reason"] = ("nvidia-smi shows ERR! for GPU %d (%s): %s" % (
        gpu["index"], gpu["pci_bus_id"] or "bus id unknown", ", ".join(errors))) if errors else None
    return gpu


def parse_smi_table(text, source="nvidia-smi"):
    """Parse the plain ``nvidia-smi`` table.

    Returns ``{"driver_version", "cuda_version", "gpus": [...], "processes": [...],
    "mig_devices_shown": int, "warnings": [...]}``. Each GPU has ``index``, ``name``,
    ``persistence_mode``, ``pci_bus_id`` (upper case, as printed), ``display_active``,
    ``ecc_volatile_uncorrected`` (int, or None where the cell is ``N/A``/``On``/``ERR!``),
    ``ecc_cell`` (the cell as printed), ``memory_used_mib``, ``memory_total_mib``,
    ``compute_mode``, ``mig_mode``, ``error_fields`` (fields printed as ``ERR!``), ``healthy`` and
    ``reason``. Raises SmiTableError naming the line when the text holds no GPU table.
    """
    lines = text.splitlines()
    result = {"driver_version": None, "cuda_version": None, "gpus": [], "processes": [],
              "mig_devices_shown": 0, "warnings": []}
    section = None  # None -> "gpus" -> "mig" -> "processes"
    block = []
    seen_table = False

    def flush():
        if block:
            result["gpus"].append(_block_gpu(list(block), source))
            del block[:]

    for no, line in enumerate(lines, 1):
        stripped = line.strip()
        if not stripped:
            continue
        header = _HEADER_RE.search(line)
        if header and result["driver_version"] is None:
            result["driver_version"] = header.group("driver")
            result["cuda_version"] = header.group("cuda")
            seen_table = True
            continue
        if stripped.startswith("|=") and section is None:
            section = "gpus"
            continue
        if stripped.startswith("|="):
            continue
        if "MIG devices:" in line:
            flush()
            section = "mig"
            continue
        if "Processes:" in line:
            flush()
            section = "processes"
            continue
        if stripped.startswith("+") or stripped.startswith("|-"):
            if section == "gpus":
                flush()
            continue
        if not stripped.startswith("|"):
            if seen_table and section is not None:
                result["warnings"].append(stripped)
            continue
        cells = _cells(line)
        if section == "gpus":
            if len(cells) >= 3 and _GPU_FIRST_RE.match(cells[0]) and block:
                flush()
            block.append((no, cells))
        elif section == "mig":
            fields = cells[0].split() if cells else []
            if len(fields) == 4 and all(f.isdigit() for f in fields):
                result["mig_devices_shown"] += 1
        elif section == "processes":
            fields = stripped.strip("|").split()
            if len(fields) >= 7 and fields[0].isdigit() and fields[3].isdigit():
                result["processes"].append({
                    "gpu": int(fields[0]), "pid": int(fields[3]), "type": fields[4],
                    "name": " ".join(fields[5:-1]), "memory": fields[-1]})
    flush()
    if not seen_table or section is None:
        first = next(((n, l) for n, l in enumerate(lines, 1) if l.strip()), (None, None))
        raise SmiTableError("%s: no GPU table found (no 'Driver Version:' header and '|===' rule)" % source,
                            first[0], first[1])
    return result
