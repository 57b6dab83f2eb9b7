# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Parsers for ``nvidia-smi`` topology output and the ``gpu_topology`` facts builder.

Pure code: no Ansible imports, no I/O. Every parser takes the text a command printed and returns
plain dicts/lists, so the same code serves the ``gpu_topology_facts`` module, the layout planner's
tests and anything else that has a capture in hand. Runs on Python 3.9 and later.

Sources of the formats (all kept as real captures under ``tests/fixtures/real/``):

* ``nvidia-smi topo -m`` / ``topo -mp``: a GPU x device matrix of link codes (``X``, ``NV<n>``,
  ``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``; drivers before ~R384 print ``SOC`` for ``SYS``),
  followed by affinity columns that changed over driver generations (``CPU Affinity`` only; then
  ``NUMA Affinity``; then ``GPU NUMA ID``), tab or space separated, sometimes with ANSI underline
  escapes around the header and a ``Legend:`` / ``NIC Legend:`` block after the matrix.
* ``nvidia-smi -q -x``: XML with ``nvsmi_device_v11.dtd`` .. ``v13`` element names.
* ``nvidia-smi nvlink -s``: ``GPU n: <name> (UUID: ...)`` followed by ``Link n: <x> GB/s`` or
  ``Link n: <inactive>`` lines.

Public names other code may import are listed in ``__all__``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import xml.etree.ElementTree as ET

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cpulist import (
    parse_cpulist,
    format_cpulist,
)

__all__ = [
    "TopologyParseError",
    "TruncatedOutputError",
    "COMMANDS",
    "LINK_CLASSES",
    "link_class",
    "strip_ansi",
    "nvsmi_bus_id",
    "sysfs_bus_id",
    "detect_smi_failure",
    "find_handle_errors",
    "parse_topo_matrix",
    "parse_query_xml",
    "parse_nvlink_status",
    "nvlink_islands",
    "pci_bus_ids",
    "build_gpu_topology",
    "unavailable_topology",
    "parse_cpulist",
    "format_cpulist",
]

# The argv (after the nvidia-smi path) of the three commands the facts are built from.
COMMANDS = {
    "qx": ["-q", "-x"],
    "topo": ["topo", "-m"],
    "nvlink": ["nvlink", "-s"],
}

# topo -m code -> link_class. NV<n> is handled by pattern. SOC is the pre-R384 name of SYS.
LINK_CLASSES = {
    "X": "self",
    "PIX": "pix",
    "PXB": "pxb",
    "PHB": "phb",
    "NODE": "node",
    "SYS": "sys",
    "SOC": "sys",
}
_NV_RE = re.compile(r"^NV(\d+)$")
_ANSI_RE = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_GPU_LABEL_RE = re.compile(r"^GPU(\d+)$")
_NIC_LABEL_RE = re.compile(r"^NIC(\d+)$")
_AFFINITY_HEADERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_AFFINITY_HEADER_RE = re.compile(r"(CPU Affinity|NUMA Affinity|GPU NUMA ID)")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")
_BUS_ID_RE = re.compile(
    r"^(?:([0-9A-Fa-f]{1,8}):)?([0-9A-Fa-f]{1,2}):([0-9A-Fa-f]{1,2})\.([0-7])$")
_HANDLE_ERROR_RE = re.compile(
    r"Unable to determine the device handle for GPU\s*"
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
_ERROR_VALUE_RE = re.compile(r"Unknown Error|GPU is lost|ERR!|Requires? Reset", re.IGNORECASE)
_NVLINK_GPU_RE = re.compile(r"^GPU\s+(\d+):\s*(.*?)\s*\(UUID:\s*([^)\s]+)\s*\)\s*$")
_NVLINK_LINK_RE = re.compile(r"^\s*Link\s+(\d+)\s*:\s*(.*?)\s*$")
_NVLINK_SPEED_RE = re.compile(r"^(\d+(?:\.\d+)?)\s*GB/s$")
_NVLINK_INFO_RE = re.compile(r"^\s*NVML: Unable to retrieve NVLink information.*$", re.IGNORECASE)


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


def strip_ansi(text):
    """Remove ANSI escape sequences (the real H200 ``topo -m`` header is wrapped in ESC[4m)."""
    return _ANSI_RE.sub("", text)


def link_class(code):
    """Map a ``topo -m`` cell to its class: self|nvlink|pix|pxb|phb|node|sys; None if unknown."""
    if code is None:
        return None
    if _NV_RE.match(code):
        return "nvlink"
    return LINK_CLASSES.get(code)


def _bus_parts(bus_id):
    match = _BUS_ID_RE.match((bus_id or "").strip())
    if not match:
        raise ValueError("not a PCI bus id (DDDDDDDD:BB:DD.F): %r" % (bus_id,))
    domain = int(match.group(1), 16) if match.group(1) else 0
    return domain, int(match.group(2), 16), int(match.group(3), 16), int(match.group(4))


def nvsmi_bus_id(bus_id):
    """``0000:4b:00.0`` or ``00000000:4B:00.0`` -> ``00000000:4B:00.0`` (nvidia-smi's spelling)."""
    return "%08X:%02X:%02X.%d" % _bus_parts(bus_id)


def sysfs_bus_id(bus_id):
    """``00000000:4B:00.0`` -> ``0000:4b:00.0`` (the name under /sys/bus/pci/devices)."""
    return "%04x:%02x:%02x.%d" % _bus_parts(bus_id)


def _lines(text):
    return strip_ansi(text or "").replace("\r\n", "\n").replace("\r", "\n").split("\n")


def detect_smi_failure(text):
    """Return the tool's own message when nvidia-smi failed for the whole host, else None.

    Recognises ``Failed to initialize NVML: ...`` (with a following ``NVML library version``
    line), ``NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver...``,
    ``No devices were found`` and a few relatives. A per-GPU ``Unable to determine the device
    handle ...`` is not a host failure (see ``find_handle_errors``).
    """
    lines = [line.strip() for line in _lines(text) if line.strip()]
    for number, line in enumerate(lines):
        for pattern in _HOST_FAILURE_RES:
            if pattern.search(line):
                quoted = [line]
                # keep a directly following detail line such as "NVML library version: 535.161"
                if number + 1 < len(lines) and lines[number + 1].startswith("NVML library version"):
                    quoted.append(lines[number + 1])
                return "; ".join(quoted)
    return None


def find_handle_errors(text):
    """Return ``[(bus_id, message)]`` for ``Unable to determine the device handle for GPU ...``.

    ``bus_id`` is normalised to nvidia-smi's spelling (``00000000:09:00.0``); ``message`` is the
    whole line as printed. Spellings seen: ``for GPU 0000:09:00.0: Unknown Error`` and
    ``for GPU0000:65:00.0: Unknown Error``.
    """
    found = []
    for line in _lines(text):
        match = _HANDLE_ERROR_RE.search(line)
        if match:
            try:
                bus = nvsmi_bus_id(match.group(1))
            except ValueError:
                continue
            found.append((bus, line.strip()))
    return found


def _is_link_code(token):
    return token in LINK_CLASSES or bool(_NV_RE.match(token))


def _is_known_message(line):
    return bool(_HANDLE_ERROR_RE.search(line) or _WARNING_LINE_RE.match(line))


# --------------------------------------------------------------------------------------------
# nvidia-smi topo -m
# --------------------------------------------------------------------------------------------

def _split_header(header, source, line_no, raw_line):
    """Return (device_columns, affinity_columns) of a topo -m header line (ANSI removed)."""
    match = _AFFINITY_HEADER_RE.search(header)
    device_part = header[:match.start()] if match else header
    tail = header[match.start():] if match else ""
    devices = device_part.split()
    affinity = []
    for piece in _AFFINITY_HEADER_RE.split(tail):
        if piece in _AFFINITY_HEADERS:
            affinity.append(piece)
            continue
        for name in re.split(r"\t+| {2,}", piece):
            if name.strip():
                affinity.append(name.strip())
    if len(set(devices)) != len(devices):
        raise TopologyParseError(source, "header repeats a column name", line_no, raw_line)
    if not devices or not _GPU_LABEL_RE.match(devices[0]):
        raise TopologyParseError(source, "header does not start with GPU0", line_no, raw_line)
    return devices, affinity


def _parse_affinity_cell(column, value, source, line_no, raw_line):
    """Turn one affinity cell into a Python value; N/A and empty become None."""
    if value is None or value in ("", "N/A"):
        return None
    if column == "GPU NUMA ID":
        if not re.match(r"^\d+$", value):
            raise TopologyParseError(
                source, "GPU NUMA ID %r is neither a number nor N/A" % value, line_no, raw_line)
        return int(value)
    if column in ("CPU Affinity", "NUMA Affinity"):
        try:
            return parse_cpulist(value)
        except ValueError as exc:
            raise TopologyParseError(source, "%s cell: %s" % (column, exc), line_no, raw_line)
    return value


def parse_topo_matrix(text, source="nvidia-smi topo -m"):
    """Parse ``nvidia-smi topo -m`` (or ``topo -mp``) output by header name.

    Returns a dict::

        {"gpu_count": 2,
         "columns": ["GPU0", "GPU1", "mlx5_0", "CPU Affinity", "NUMA Affinity"],
         "gpus": [{"index": 0, "label": "GPU0", "cpu_affinity": [0, ...] | None,
                   "numa_affinity": [0] | None, "numa_node": 0 | None,
                   "gpu_numa_id": int | None}, ...],
         "links": [["X", "SYS"], ["SYS", "X"]],            # GPU x GPU raw codes
         "link_class": [["self", "sys"], ["sys", "self"]],
         "nics": [{"name": "mlx5_0", "label": "mlx5_0", "links": ["NODE", "SYS"]}],
         "warnings": [...]}

    Raises ``TruncatedOutputError`` for empty or cut output and ``TopologyParseError`` (naming
    the line) for anything else it cannot read.
    """
    lines = _lines(text)
    raw_lines = (text or "").replace("\r\n", "\n").split("\n")
    nonblank = [i for i, line in enumerate(lines) if line.strip()]
    if not nonblank:
        raise TruncatedOutputError(source, "printed nothing")
    last_nonblank = nonblank[-1]
    warnings = []

    header_at = None
    for i in nonblank:
        tokens = lines[i].split()
        if _GPU_LABEL_RE.match(tokens[0]) and (len(tokens) == 1 or not _is_link_code(tokens[1])):
            header_at = i
            break
    if header_at is None:
        first = nonblank[0]
        raise TopologyParseError(
            source, "no matrix header (a line starting with GPU0 followed by column names) found",
            first + 1, raw_lines[first])

    devices, affinity_cols = _split_header(lines[header_at], source, header_at + 1,
                                           raw_lines[header_at])
    for name in affinity_cols:
        if name not in _AFFINITY_HEADERS:
            warnings.append("%s: unknown column %r kept as text" % (source, name))
    gpu_labels = [d for d in devices if _GPU_LABEL_RE.match(d)]
    nic_labels = [d for d in devices if not _GPU_LABEL_RE.match(d)]
    for position, label in enumerate(gpu_labels):
        if int(_GPU_LABEL_RE.match(label).group(1)) != position:
            warnings.append("%s: GPU column %d is labelled %s; index taken from the column order"
                            % (source, position, label))
    n_dev = len(devices)
    rows = {}
    matrix_end = len(lines)
    ended_by_eof = True
    for i in range(header_at + 1, len(lines)):
        line = lines[i]
        stripped = line.strip()
        if not stripped:
            if rows:
                matrix_end = i
                ended_by_eof = False
                break
            continue
        if stripped.startswith("Legend"):
            matrix_end = i
            ended_by_eof = False
            break
        if _is_known_message(line):
            warnings.append("%s: %s" % (source, stripped))
            continue
        tokens = line.split()
        label = tokens[0]
        if label not in devices:
            if all(g in rows for g in gpu_labels):
                matrix_end = i
                ended_by_eof = False
                break
            raise TopologyParseError(
                source, "row label %r is not one of the header's columns %s" % (label, devices),
                i + 1, raw_lines[i])
        if label in rows:
            raise TopologyParseError(source, "row %s appears twice" % label, i + 1, raw_lines[i])
        cells = tokens[1:]
        error_cls = TruncatedOutputError if i == last_nonblank else TopologyParseError
        if len(cells) < n_dev:
            raise error_cls(
                source, "row %s has %d link cells but the header names %d devices"
                % (label, len(cells), n_dev), i + 1, raw_lines[i])
        codes = cells[:n_dev]
        for code in codes:
            if not _is_link_code(code):
                raise error_cls(
                    source, "unknown link code %r in row %s (expected X, NV#, PIX, PXB, PHB, "
                    "NODE, SYS or SOC)" % (code, label), i + 1, raw_lines[i])
        if codes[devices.index(label)] != "X":
            raise TopologyParseError(
                source, "row %s has %r, not X, in its own column: cells are misaligned"
                % (label, codes[devices.index(label)]), i + 1, raw_lines[i])
        rest = cells[n_dev:]
        if _GPU_LABEL_RE.match(label):
            if len(rest) > len(affinity_cols):
                raise TopologyParseError(
                    source, "row %s has %d cells after the matrix but the header names %d "
                    "affinity columns %s" % (label, len(rest), len(affinity_cols), affinity_cols),
                    i + 1, raw_lines[i])
            if len(rest) < len(affinity_cols):
                warnings.append(
                    "%s: row %s has %d of %d affinity cells %s; the missing ones are unknown"
                    % (source, label, len(rest), len(affinity_cols), affinity_cols))
            values = {}
            for position, column in enumerate(affinity_cols):
                value = rest[position] if position < len(rest) else None
                values[column] = _parse_affinity_cell(column, value, source, i + 1, raw_lines[i])
        else:
            values = {}
        rows[label] = {"codes": codes, "affinity": values, "line_no": i + 1}

    missing = [d for d in devices if d not in rows]
    missing_gpus = [d for d in missing if d in gpu_labels]
    if missing and ended_by_eof:
        raise TruncatedOutputError(
            source, "output ends before the rows of %s" % ", ".join(missing))
    if missing_gpus:
        raise TopologyParseError(
            source, "the matrix has no row for %s" % ", ".join(missing_gpus))
    if missing:
        warnings.append("%s: no rows for %s; their links are taken from the GPU rows"
                        % (source, ", ".join(missing)))

    legend = {}
    for line in lines[matrix_end:]:
        match = _NIC_LEGEND_RE.match(line)
        if match:
            legend[match.group(1)] = match.group(2)

    gpu_cols = [devices.index(g) for g in gpu_labels]
    links = []
    gpus = []
    for position, label in enumerate(gpu_labels):
        row = rows[label]
        links.append([row["codes"][c] for c in gpu_cols])
        affinity = row["affinity"]
        numa_affinity = affinity.get("NUMA Affinity")
        numa_node = None
        if numa_affinity is not None and len(numa_affinity) == 1:
            numa_node = numa_affinity[0]
        elif numa_affinity:
            warnings.append("%s: %s has NUMA Affinity %s (several nodes); numa_node left unknown"
                            % (source, label, format_cpulist(numa_affinity)))
        gpus.append({
            "index": position,
            "label": label,
            "cpu_affinity": affinity.get("CPU Affinity"),
            "numa_affinity": numa_affinity,
            "numa_node": numa_node,
            "gpu_numa_id": affinity.get("GPU NUMA ID"),
        })
    for i in range(len(links)):
        for j in range(i + 1, len(links)):
            if links[i][j] != links[j][i]:
                warnings.append("%s: matrix is not symmetric: GPU%d-GPU%d is %s but GPU%d-GPU%d is %s"
                                % (source, i, j, links[i][j], j, i, links[j][i]))
    nics = []
    for label in nic_labels:
        column = devices.index(label)
        name = legend.get(label, label)
        if _NIC_LABEL_RE.match(label) and label not in legend:
            warnings.append("%s: no NIC Legend entry for %s; its name is unknown" % (source, label))
        nics.append({
            "name": name,
            "label": label,
            "links": [rows[g]["codes"][column] for g in gpu_labels],
        })
    return {
        "gpu_count": len(gpu_labels),
        "columns": devices + affinity_cols,
        "gpus": gpus,
        "links": links,
        "link_class": [[link_class(code) for code in row] for row in links],
        "nics": nics,
        "warnings": warnings,
    }


# --------------------------------------------------------------------------------------------
# nvidia-smi -q -x
# --------------------------------------------------------------------------------------------

def _text(element, path):
    if element is None:
        return None
    found = element.find(path)
    if found is None or found.text is None:
        return None
    value = found.text.strip()
    return value if value else None


def _int_with_unit(value):
    """``"143771 MiB"`` -> 143771, ``"16x"`` -> 16, ``"N/A"``/None -> None."""
    if value is None:
        return None
    match = re.match(r"^(\d+)\s*[A-Za-z%]*$", value.strip())
    return int(match.group(1)) if match else None


def _mode(value):
    """Enabled/Disabled as printed; N/A, None and anything else -> None."""
    if value in ("Enabled", "Disabled"):
        return value
    return None


def _yes_no(value):
    if value == "Yes":
        return True
    if value == "No":
        return False
    return None


def _ecc_sum(gpu, kind, uncorrectable):
    """Sum of the ``kind`` (``volatile``/``aggregate``) ECC counters of one class; None if N/A.

    ``uncorrectable`` False sums the corrected (correctable, single bit) errors, True the
    uncorrected ones. DTD v11 and older print ``single_bit/total`` and ``double_bit/total``
    (their per-unit counters are parts of that total and are not added again); v12 and later
    print flat ``sram_*`` / ``dram_*`` counters (``sram_correctable``, ``sram_uncorrectable`` or
    ``sram_uncorrectable_parity`` + ``sram_uncorrectable_secded``, ``dram_correctable``,
    ``dram_uncorrectable``), which are added up. Non-counters such as
    ``sram_threshold_exceeded`` are ignored. ``N/A`` counters do not count; when every counter
    is ``N/A`` (or the block is missing or collapsed to text) the result is None.
    """
    block = gpu.find("ecc_errors/" + kind)
    if block is None:
        return None
    v11_total = block.find(("double_bit" if uncorrectable else "single_bit") + "/total")
    if v11_total is not None:
        candidates = [v11_total]
    elif uncorrectable:
        candidates = [child for child in block if "uncorrectable" in child.tag]
    else:
        candidates = [child for child in block
                      if "correctable" in child.tag and "uncorrectable" not in child.tag]
    total = None
    for child in candidates:
        value = _int_with_unit(child.text)
        if value is not None:
            total = (total or 0) + value
    return total


def _volatile_uncorrected(gpu):
    """Sum of the volatile uncorrectable ECC counters, across DTD generations; None if N/A."""
    return _ecc_sum(gpu, "volatile", True)


def _xml_ecc(gpu):
    """The ``ecc`` dict of one ``<gpu>``: mode, ECC counters, retired pages, remapped rows."""
    return {
        "mode": _mode(_text(gpu, "ecc_mode/current_ecc")),
        "volatile_uncorrected": _volatile_uncorrected(gpu),
        "volatile_corrected": _ecc_sum(gpu, "volatile", False),
        "aggregate_uncorrected": _ecc_sum(gpu, "aggregate", True),
        "aggregate_corrected": _ecc_sum(gpu, "aggregate", False),
        "retired_pages_single_bit": _int_with_unit(
            _text(gpu, "retired_pages/multiple_single_bit_retirement/retired_count")),
        "retired_pages_double_bit": _int_with_unit(
            _text(gpu, "retired_pages/double_bit_retirement/retired_count")),
        "retired_pages_pending": _yes_no(_text(gpu, "retired_pages/pending_retirement")),
        "remapped_rows_correctable": _int_with_unit(
            _text(gpu, "remapped_rows/remapped_row_corr")),
        "remapped_rows_uncorrectable": _int_with_unit(
            _text(gpu, "remapped_rows/remapped_row_unc")),
        "remapped_rows_pending": _yes_no(_text(gpu, "remapped_rows/remapped_row_pending")),
        "remapped_rows_failure": _yes_no(_text(gpu, "remapped_rows/remapped_row_failure")),
    }


def _xml_mig_devices(gpu):
    """``<mig_devices>/<mig_device>`` entries in document order (empty for ``None``/absent)."""
    devices = []
    for device in gpu.findall("mig_devices/mig_device"):
        uncorrected = None
        for child in device.findall("ecc_error_count/volatile_count/*"):
            if "uncorrectable" in child.tag:
                value = _int_with_unit(child.text)
                if value is not None:
                    uncorrected = (uncorrected or 0) + value
        devices.append({
            "index": _int_with_unit(_text(device, "index")),
            "gpu_instance_id": _int_with_unit(_text(device, "gpu_instance_id")),
            "compute_instance_id": _int_with_unit(_text(device, "compute_instance_id")),
            "multiprocessor_count": _int_with_unit(
                _text(device, "device_attributes/shared/multiprocessor_count")),
            "memory_total_mib": _int_with_unit(_text(device, "fb_memory_usage/total")),
            "volatile_uncorrected": uncorrected,
        })
    return devices


_HEALTH_FIELDS = ("product_name", "uuid", "fb_memory_usage/total", "fan_speed", "performance_state",
                  "temperature/gpu_temp", "power_readings/power_draw", "gpu_power_readings/power_draw",
                  "ecc_mode/current_ecc")


def _xml_gpu(gpu, warnings, source):
    bus = gpu.get("id") or _text(gpu, "pci/pci_bus_id")
    try:
        bus = nvsmi_bus_id(bus) if bus else None
    except ValueError:
        warnings.append("%s: <gpu id=%r> is not a PCI bus id" % (source, bus))
        bus = None
    minor = _text(gpu, "minor_number")
    entry = {
        "name": _text(gpu, "product_name"),
        "uuid": _text(gpu, "uuid"),
        "pci_bus_id": bus,
        "minor_number": int(minor) if minor and minor.isdigit() else None,
        "memory_total_mib": _int_with_unit(_text(gpu, "fb_memory_usage/total")),
        "mig_mode": _mode(_text(gpu, "mig_mode/current_mig")),
        "mig_device_count": len(gpu.findall("mig_devices/mig_device")),
        "mig_devices": _xml_mig_devices(gpu),
        "ecc": _xml_ecc(gpu),
        "pcie": {
            "link_gen_current": _int_with_unit(
                _text(gpu, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
            "link_gen_max": _int_with_unit(
                _text(gpu, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
            "link_width_current": _int_with_unit(
                _text(gpu, "pci/pci_gpu_link_info/link_widths/current_link_width")),
            "link_width_max": _int_with_unit(
                _text(gpu, "pci/pci_gpu_link_info/link_widths/max_link_width")),
        },
        "healthy": True,
        "reason": None,
    }
    # A GPU whose driver calls fail prints ERR!/Unknown Error in these fields while the other GPUs
    # answer (NVIDIA/open-gpu-kernel-modules#446: name, fan, temperature, performance state, power,
    # ECC all ERR! for one A40 of eight). Every failing field is named in the reason.
    failing = []
    for field in _HEALTH_FIELDS:
        value = _text(gpu, field)
        if value and _ERROR_VALUE_RE.search(value):
            failing.append("%s %r" % (field, value))
    if failing:
        entry["healthy"] = False
        entry["reason"] = "%s reports %s for GPU %s" % (source, ", ".join(failing), bus)
    return entry


def parse_query_xml(text, source="nvidia-smi -q -x"):
    """Parse ``nvidia-smi -q -x`` output.

    Returns ``{"driver_version", "cuda_driver_version", "attached_gpus", "gpus": [...],
    "messages": [lines outside the XML], "warnings": [...]}``; each GPU entry has ``name``,
    ``uuid``, ``pci_bus_id`` (nvidia-smi spelling), ``minor_number``, ``memory_total_mib``,
    ``mig_mode``, ``mig_device_count``, ``mig_devices`` [{index, gpu_instance_id,
    compute_instance_id, multiprocessor_count, memory_total_mib, volatile_uncorrected}],
    ``ecc`` {mode, volatile_uncorrected, volatile_corrected, aggregate_uncorrected,
    aggregate_corrected, retired_pages_single_bit, retired_pages_double_bit,
    retired_pages_pending, remapped_rows_correctable, remapped_rows_uncorrectable,
    remapped_rows_pending, remapped_rows_failure}, ``pcie`` {link_gen_current, link_gen_max,
    link_width_current, link_width_max}, ``healthy`` and ``reason``; GPUs in document order
    (NVML index order). Every value nvidia-smi prints as ``N/A`` (or a block collapsed to
    ``N/A``, such as ``<remapped_rows>N/A</remapped_rows>``) is None.

    Lines outside the XML (``Unable to determine the device handle ...``, ``WARNING: ...``) are
    returned in ``messages``. Output with no XML at all is fine when every line is such a
    message (``gpus`` is then empty); otherwise ``TopologyParseError`` names the first line.
    Empty output or XML without its closing tag raises ``TruncatedOutputError``.
    """
    raw = (text or "").replace("\r\n", "\n")
    if not raw.strip():
        raise TruncatedOutputError(source, "printed nothing")
    starts = [pos for pos in (raw.find("<?xml"), raw.find("<nvidia_smi_log")) if pos >= 0]
    if not starts:
        lines = raw.split("\n")
        messages = []
        for number, line in enumerate(lines):
            if not line.strip():
                continue
            if not _is_known_message(line):
                raise TopologyParseError(source, "output is not XML", number + 1, line)
            messages.append(line.strip())
        return {"driver_version": None, "cuda_driver_version": None, "attached_gpus": None,
                "gpus": [], "messages": messages, "warnings": []}
    start = min(starts)
    end_tag = "</nvidia_smi_log>"
    end = raw.find(end_tag, start)
    first_line = raw.count("\n", 0, start)
    if end < 0:
        raise TruncatedOutputError(
            source, "XML stops before %s after %d lines (output cut?)"
            % (end_tag, raw.count("\n") + 1))
    end += len(end_tag)
    messages = [line.strip() for line in (raw[:start] + "\n" + raw[end:]).split("\n")
                if line.strip()]
    try:
        root = ET.fromstring(raw[start:end].encode("utf-8"))
    except ET.ParseError as exc:
        line_no, _column = getattr(exc, "position", (1, 0))
        absolute = first_line + line_no
        lines = raw.split("\n")
        line = lines[absolute - 1] if 0 < absolute <= len(lines) else None
        raise TopologyParseError(source, "invalid XML: %s" % exc, absolute, line)
    if root.tag != "nvidia_smi_log":
        raise TopologyParseError(source, "root element is <%s>, not <nvidia_smi_log>" % root.tag)
    warnings = []
    gpus = [_xml_gpu(gpu, warnings, source) for gpu in root.findall("gpu")]
    attached_text = _text(root, "attached_gpus")
    attached = int(attached_text) if attached_text and attached_text.isdigit() else None
    if attached is not None and attached != len(gpus):
        warnings.append("%s: attached_gpus is %d but the output has %d <gpu> block(s)"
                        % (source, attached, len(gpus)))
    return {
        "driver_version": _text(root, "driver_version"),
        "cuda_driver_version": _text(root, "cuda_version"),
        "attached_gpus": attached,
        "gpus": gpus,
        "messages": messages,
        "warnings": warnings,
    }


# --------------------------------------------------------------------------------------------
# nvidia-smi nvlink -s
# --------------------------------------------------------------------------------------------

def parse_nvlink_status(text, source="nvidia-smi nvlink -s"):
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
    lines = _lines(text)
    raw_lines = (text or "").replace("\r\n", "\n").split("\n")
    for number, line in enumerate(lines):
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
                                         number + 1, raw_lines[number])
            value = match.group(2)
            speed = _NVLINK_SPEED_RE.match(value)
            if speed:
                link = {"link": int(match.group(1)), "state": "active",
                        "speed_gbps": float(speed.group(1))}
            elif value.lower() == "<inactive>":
                link = {"link": int(match.group(1)), "state": "inactive", "speed_gbps": None}
            else:
                raise TopologyParseError(
                    source, "link state %r is neither '<n> GB/s' nor '<inactive>'" % value,
                    number + 1, raw_lines[number])
            current["nvlinks"].append(link)
            continue
        if _NVLINK_INFO_RE.match(line) or _is_known_message(line):
            warnings.append("%s: %s" % (source, line.strip()))
            continue
        raise TopologyParseError(source, "unexpected line", number + 1, raw_lines[number])
    return {"gpus": gpus, "warnings": warnings}


# --------------------------------------------------------------------------------------------
# Facts
# --------------------------------------------------------------------------------------------

def nvlink_islands(links):
    """Connected components of the GPU graph whose edges are NV# cells; sorted, singletons kept."""
    count = len(links)
    parent = list(range(count))

    def find(node):
        while parent[node] != node:
            parent[node] = parent[parent[node]]
            node = parent[node]
        return node

    for i in range(count):
        for j in range(count):
            if i != j and link_class(links[i][j]) == "nvlink":
                root_i, root_j = find(i), find(j)
                if root_i != root_j:
                    parent[max(root_i, root_j)] = min(root_i, root_j)
    groups = {}
    for node in range(count):
        groups.setdefault(find(node), []).append(node)
    return sorted(sorted(group) for group in groups.values())


def unavailable_topology(reason, warnings=None):
    """The ``gpu_topology`` facts of a host that cannot serve (no tool, no driver, no GPU)."""
    return {
        "available": False,
        "reason": reason,
        "driver_version": None,
        "cuda_driver_version": None,
        "gpu_count": 0,
        "gpus": [],
        "links": [],
        "link_class": [],
        "nvlink_islands": [],
        "numa_nodes": [],
        "nics": [],
        "warnings": list(warnings or []),
    }


class _Result(object):
    def __init__(self, rc, stdout, stderr):
        self.rc = rc
        self.stdout = stdout or ""
        self.stderr = stderr or ""

    @property
    def combined(self):
        return self.stdout + "\n" + self.stderr


def _result(value):
    if value is None:
        return None
    if isinstance(value, str):
        return _Result(0, value, "")
    if isinstance(value, dict):
        return _Result(value.get("rc", 0), value.get("stdout", ""), value.get("stderr", ""))
    rc, stdout, stderr = value
    return _Result(rc, stdout, stderr)


def _command(key):
    return "nvidia-smi " + " ".join(COMMANDS[key])


def _quote(text, limit=300):
    flat = "; ".join(line.strip() for line in _lines(text) if line.strip())
    return flat if len(flat) <= limit else flat[:limit] + "..."


def pci_bus_ids(results):
    """The PCI bus ids (nvidia-smi spelling) the commands name: -q -x GPUs and handle errors.

    The module reads sysfs for exactly these. Unparseable -q -x output gives no ids here (the
    error is raised by ``build_gpu_topology``).
    """
    found = []
    for key in ("qx", "topo", "nvlink"):
        result = _result(results.get(key))
        if result is not None:
            for bus, _message in find_handle_errors(result.combined):
                if bus not in found:
                    found.append(bus)
    qx = _result(results.get("qx"))
    if qx is not None:
        try:
            for gpu in parse_query_xml(qx.stdout)["gpus"]:
                if gpu["pci_bus_id"] and gpu["pci_bus_id"] not in found:
                    found.append(gpu["pci_bus_id"])
        except TopologyParseError:
            pass
    return found


def _bus_key(bus):
    try:
        return _bus_parts(bus)
    except ValueError:
        return (1 << 32, 0, 0, 0)


def _empty_qx_gpu(bus, reason):
    return {"name": None, "uuid": None, "pci_bus_id": bus, "minor_number": None,
            "memory_total_mib": None, "mig_mode": None, "mig_device_count": 0,
            "mig_devices": [],
            "ecc": {"mode": None, "volatile_uncorrected": None, "volatile_corrected": None,
                    "aggregate_uncorrected": None, "aggregate_corrected": None,
                    "retired_pages_single_bit": None, "retired_pages_double_bit": None,
                    "retired_pages_pending": None, "remapped_rows_correctable": None,
                    "remapped_rows_uncorrectable": None, "remapped_rows_pending": None,
                    "remapped_rows_failure": None},
            "pcie": {"link_gen_current": None, "link_gen_max": None, "link_width_current": None,
                     "link_width_max": None},
            "healthy": reason is None, "reason": reason}


def _match_slots(entries, failed_only, topo_gpus, warnings):
    """Pair -q -x entries with topo -m rows; return [(entry|None, topo_row|None)] by index."""
    n_topo = len(topo_gpus)
    if not topo_gpus:
        return [(entry, None) for entry in entries]
    if not entries:
        return [(None, row) for row in topo_gpus]
    if n_topo == len(entries):
        return list(zip(entries, topo_gpus))
    if failed_only and n_topo == len(entries) - len(failed_only):
        rows = iter(topo_gpus)
        warnings.append("%s shows %d GPUs: the %d GPU(s) without a device handle are not in it"
                        % (_command("topo"), n_topo, len(failed_only)))
        return [(entry, None if entry["pci_bus_id"] in failed_only else next(rows))
                for entry in entries]
    minors = [entry["minor_number"] for entry in entries]
    if (len(entries) < n_topo and None not in minors and len(set(minors)) == len(minors)
            and max(minors) < n_topo):
        by_minor = dict((entry["minor_number"], entry) for entry in entries)
        warnings.append("%s describes %d of the %d GPUs in %s; matched by minor_number, the "
                        "others have no name, uuid, bus id or memory"
                        % (_command("qx"), len(entries), n_topo, _command("topo")))
        return [(by_minor.get(i), row) for i, row in enumerate(topo_gpus)]
    warnings.append("%s shows %d GPUs but %s shows %d; matched by position"
                    % (_command("topo"), n_topo, _command("qx"), len(entries)))
    slots = []
    for i in range(max(n_topo, len(entries))):
        slots.append((entries[i] if i < len(entries) else None,
                      topo_gpus[i] if i < n_topo else None))
    return slots


def _sysfs_numbers(sysfs, bus, warnings):
    """Return (numa_node|None, numa_raw, local_cpulist|None) read from the planted sysfs dict."""
    if not sysfs or not bus:
        return None, None, None
    try:
        name = sysfs_bus_id(bus)
    except ValueError:
        return None, None, None
    device = (sysfs.get("pci") or {}).get(name)
    if device is None:
        warnings.append("sysfs has no PCI device %s (bus/pci/devices/%s)" % (name, name))
        return None, None, None
    numa = None
    raw_numa = device.get("numa_node")
    if raw_numa is not None and raw_numa.strip():
        try:
            numa = int(raw_numa.strip())
        except ValueError:
            warnings.append("sysfs %s/numa_node reads %r, not a number" % (name, raw_numa.strip()))
    cpus = None
    raw_cpus = device.get("local_cpulist")
    if raw_cpus is not None and raw_cpus.strip():
        try:
            cpus = parse_cpulist(raw_cpus)
        except ValueError as exc:
            warnings.append("sysfs %s/local_cpulist: %s" % (name, exc))
    return (numa if numa is not None and numa >= 0 else None), numa, cpus


def build_gpu_topology(results, sysfs=None):
    """Build the ``gpu_topology`` facts from the three nvidia-smi outputs and sysfs values.

    ``results`` maps ``"qx"`` (``-q -x``), ``"topo"`` (``topo -m``) and ``"nvlink"``
    (``nvlink -s``) to a command result: ``{"rc": int, "stdout": str, "stderr": str}``, a plain
    stdout string, or None when not run. Only ``topo`` is needed (the layout planner's tests
    pass ``{"topo": text}``).

    ``sysfs`` (optional) holds raw file contents::

        {"pci": {"0000:00:06.0": {"numa_node": "-1\\n", "local_cpulist": "0-15\\n"}},
         "nodes": {0: "0-15\\n"}}

    Rules: sysfs ``numa_node`` wins where it names a node (a disagreement with ``topo -m`` is a
    warning); ``-1`` means the platform gave none and ``topo -m``'s NUMA Affinity decides.
    ``cpu_affinity`` is sysfs ``local_cpulist`` when present, else ``topo -m``'s CPU Affinity.

    Host-level failures (NVML, driver, no devices, empty/truncated output) give
    ``available: false`` with a ``reason`` quoting the tool. Output the parsers do not
    understand raises ``TopologyParseError`` naming the line.
    """
    warnings = []
    norm = dict((key, _result(results.get(key))) for key in ("qx", "topo", "nvlink"))
    if all(value is None for value in norm.values()):
        return unavailable_topology("no nvidia-smi output was given")

    for key in ("qx", "topo", "nvlink"):
        result = norm[key]
        if result is None:
            continue
        message = detect_smi_failure(result.combined)
        if message:
            return unavailable_topology(
                "%s failed (rc %s): %s" % (_command(key), result.rc, message))

    handle_errors = {}
    for key in ("qx", "topo", "nvlink"):
        result = norm[key]
        if result is not None:
            for bus, message in find_handle_errors(result.combined):
                handle_errors.setdefault(bus, message)

    def only_messages(text):
        return all(_is_known_message(line) or not line.strip() for line in _lines(text))

    # -q -x
    qx = None
    result = norm["qx"]
    if result is not None:
        try:
            qx = parse_query_xml(result.stdout)
        except TruncatedOutputError as exc:
            if not handle_errors:
                return unavailable_topology("%s (rc %s)%s" % (
                    exc, result.rc,
                    (": " + _quote(result.stderr)) if result.stderr.strip() else ""))
            qx = {"driver_version": None, "cuda_driver_version": None, "gpus": [],
                  "attached_gpus": None, "messages": [], "warnings": []}
        except TopologyParseError:
            if result.rc == 0:
                raise
            return unavailable_topology("%s failed (rc %s): %s" % (
                _command("qx"), result.rc, _quote(result.combined)))
        if result.rc != 0:
            warnings.append("%s exited with rc %s" % (_command("qx"), result.rc))
        warnings.extend(qx["warnings"])
        for message in qx["messages"]:
            if not _HANDLE_ERROR_RE.search(message):
                warnings.append("%s: %s" % (_command("qx"), message))

    # topo -m
    topo = None
    result = norm["topo"]
    if result is not None:
        if only_messages(result.stdout) and (handle_errors or result.rc != 0):
            if qx is None or not (qx["gpus"] or handle_errors):
                return unavailable_topology("%s failed (rc %s): %s" % (
                    _command("topo"), result.rc, _quote(result.combined) or "no output"))
            warnings.append("%s printed no matrix (rc %s): %s; links are unknown"
                            % (_command("topo"), result.rc, _quote(result.combined)))
        else:
            try:
                topo = parse_topo_matrix(result.stdout)
            except TruncatedOutputError as exc:
                return unavailable_topology("%s (rc %s)" % (exc, result.rc))
            except TopologyParseError:
                if result.rc == 0:
                    raise
                return unavailable_topology("%s failed (rc %s): %s" % (
                    _command("topo"), result.rc, _quote(result.combined)))
            if result.rc != 0:
                warnings.append("%s exited with rc %s" % (_command("topo"), result.rc))
            warnings.extend(topo["warnings"])

    # nvlink -s
    nvlink = None
    result = norm["nvlink"]
    if result is not None and (result.stdout.strip() or result.rc != 0):
        try:
            nvlink = parse_nvlink_status(result.stdout)
            warnings.extend(nvlink["warnings"])
            if result.rc != 0:
                warnings.append("%s exited with rc %s" % (_command("nvlink"), result.rc))
        except TopologyParseError:
            if result.rc == 0:
                raise
            nvlink = None
            warnings.append("%s failed (rc %s): %s; NVLink states are unknown"
                            % (_command("nvlink"), result.rc, _quote(result.combined)))

    # GPU list
    entries = list(qx["gpus"]) if qx is not None else []
    known = set(entry["pci_bus_id"] for entry in entries)
    failed_only = [bus for bus in handle_errors if bus not in known]
    for entry in entries:
        if entry["pci_bus_id"] in handle_errors:
            entry["healthy"] = False
            entry["reason"] = handle_errors[entry["pci_bus_id"]]
    if failed_only and qx is not None:
        entries.extend(_empty_qx_gpu(bus, handle_errors[bus]) for bus in failed_only)
        entries.sort(key=lambda entry: _bus_key(entry["pci_bus_id"]))
    elif failed_only:
        warnings.extend(handle_errors[bus] for bus in failed_only)
    slots = _match_slots(entries, failed_only, topo["gpus"] if topo else [], warnings)
    if not slots:
        return unavailable_topology("nvidia-smi reported no GPU", warnings)

    gpus = []
    for index, (entry, row) in enumerate(slots):
        entry = entry or _empty_qx_gpu(None, None)
        bus = entry["pci_bus_id"]
        sys_numa, raw_numa, sys_cpus = _sysfs_numbers(sysfs, bus, warnings)
        topo_numa = row["numa_node"] if row else None
        if sys_numa is not None:
            numa, numa_source = sys_numa, "sysfs"
            if topo_numa is not None and topo_numa != sys_numa:
                warnings.append(
                    "GPU %d (%s): sysfs numa_node is %d but %s NUMA Affinity is %d; using sysfs"
                    % (index, bus, sys_numa, _command("topo"), topo_numa))
        elif topo_numa is not None:
            numa, numa_source = topo_numa, "topo"
        else:
            numa, numa_source = None, None
        if sys_cpus is not None:
            cpus, cpus_source = sys_cpus, "sysfs"
        elif row and row["cpu_affinity"] is not None:
            cpus, cpus_source = row["cpu_affinity"], "topo"
        else:
            cpus, cpus_source = None, None
        gpus.append({
            "index": index,
            "name": entry["name"],
            "uuid": entry["uuid"],
            "pci_bus_id": bus,
            "minor_number": entry["minor_number"],
            "memory_total_mib": entry["memory_total_mib"],
            "numa_node": numa,
            "numa_node_source": numa_source,
            "sysfs_numa_node": raw_numa,
            "cpu_affinity": cpus,
            "cpu_affinity_source": cpus_source,
            "gpu_numa_id": row["gpu_numa_id"] if row else None,
            "healthy": entry["healthy"],
            "reason": entry["reason"],
            "mig_mode": entry["mig_mode"],
            "mig_device_count": entry["mig_device_count"],
            "mig_devices": entry["mig_devices"],
            "ecc": entry["ecc"],
            "pcie": entry["pcie"],
            "nvlinks": [],
        })
    count = len(gpus)

    # links
    row_of = dict((index, slot[1]["index"]) for index, slot in enumerate(slots) if slot[1])
    links = []
    for i in range(count):
        line = []
        for j in range(count):
            if i in row_of and j in row_of:
                line.append(topo["links"][row_of[i]][row_of[j]])
            else:
                line.append("X" if i == j else None)
        links.append(line)
    classes = [[link_class(code) for code in line] for line in links]
    nics = []
    if topo:
        for nic in topo["nics"]:
            nics.append({"name": nic["name"],
                         "links": [nic["links"][row_of[i]] if i in row_of else None
                                   for i in range(count)]})

    # nvlink -s
    if nvlink is not None and nvlink["gpus"]:
        by_uuid = {}
        for item in nvlink["gpus"]:
            by_uuid.setdefault(item["uuid"], []).append(item)
        by_index = dict((item["index"], item) for item in nvlink["gpus"])
        used = set()
        missing = []
        for gpu in gpus:
            candidates = by_uuid.get(gpu["uuid"]) if gpu["uuid"] else None
            item = candidates[0] if candidates and len(candidates) == 1 else by_index.get(
                gpu["index"])
            if item is None:
                missing.append(gpu["index"])
                continue
            if gpu["uuid"] and item["uuid"] != gpu["uuid"]:
                warnings.append("%s: GPU %d has UUID %s there but %s in %s"
                                % (_command("nvlink"), gpu["index"], item["uuid"], gpu["uuid"],
                                   _command("qx")))
            used.add(id(item))
            gpu["nvlinks"] = [dict(link) for link in item["nvlinks"]]
            inactive = [link["link"] for link in item["nvlinks"] if link["state"] == "inactive"]
            if inactive:
                warnings.append("GPU %d: %d of %d NVLinks inactive (link %s)" % (
                    gpu["index"], len(inactive), len(item["nvlinks"]),
                    ", ".join(str(link) for link in inactive)))
        if missing:
            warnings.append("%s lists %d of %d GPUs; no NVLink data for GPU %s" % (
                _command("nvlink"), len(nvlink["gpus"]), count,
                ", ".join(str(index) for index in missing)))
        extra = [item["index"] for item in nvlink["gpus"] if id(item) not in used]
        if extra:
            warnings.append("%s lists GPU %s that the other outputs do not show" % (
                _command("nvlink"), ", ".join(str(index) for index in extra)))

    # NUMA nodes: sysfs lists them; a node only the GPUs name gets the union of their CPUs
    numa_nodes = {}
    node_texts = (sysfs or {}).get("nodes") or {}
    for node_id, raw in node_texts.items():
        try:
            numa_nodes[int(node_id)] = {"id": int(node_id), "cpus": parse_cpulist(raw or ""),
                                        "gpus": []}
        except ValueError as exc:
            warnings.append("sysfs node%s/cpulist: %s" % (node_id, exc))
    derived = set()
    for gpu in gpus:
        node = gpu["numa_node"]
        if node is None:
            continue
        if node not in numa_nodes:
            if node_texts:
                warnings.append("GPU %d is on NUMA node %d, which sysfs does not list"
                                % (gpu["index"], node))
            numa_nodes[node] = {"id": node, "cpus": [], "gpus": []}
            derived.add(node)
        if node in derived:
            numa_nodes[node]["cpus"] = sorted(set(numa_nodes[node]["cpus"])
                                              | set(gpu["cpu_affinity"] or []))
        numa_nodes[node]["gpus"].append(gpu["index"])

    healthy = [gpu for gpu in gpus if gpu["healthy"]]
    reason = None
    if not healthy:
        reason = "no healthy GPU: " + "; ".join(
            gpu["reason"] or ("GPU %d" % gpu["index"]) for gpu in gpus)
    return {
        "available": bool(healthy),
        "reason": reason,
        "driver_version": qx["driver_version"] if qx else None,
        "cuda_driver_version": qx["cuda_driver_version"] if qx else None,
        "gpu_count": count,
        "gpus": gpus,
        "links": links,
        "link_class": classes,
        "nvlink_islands": nvlink_islands(links),
        "numa_nodes": [numa_nodes[key] for key in sorted(numa_nodes)],
        "nics": nics,
        "warnings": warnings,
    }
