# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""Parser of ``nvidia-smi topo -m`` (and ``topo -mp``): the GPU x device matrix of link codes.

The format (real captures under ``tests/fixtures/real/``): a header naming the GPU, NIC and
affinity columns, one row per device with a link code per device column (``X``, ``NV<n>``,
``PIX``, ``PXB``, ``PHB``, ``NODE``, ``SYS``; drivers before ~R384 print ``SOC`` for ``SYS``),
then affinity cells whose columns changed over driver generations (``CPU Affinity`` only; then
``NUMA Affinity``; then ``GPU NUMA ID``). Tab or space separated, sometimes with ANSI underline
escapes around the header and a ``Legend:`` / ``NIC Legend:`` block after the matrix.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Any, Dict, List, Optional, Tuple

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cpulist import (
    format_cpulist,
    parse_cpulist,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._links import (
    is_link_code,
    link_class,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    TopologyParseError,
    TruncatedOutputError,
    is_known_message,
    output_lines,
    raw_lines,
)

_GPU_LABEL_RE = re.compile(r"^GPU(\d+)$")
_NIC_LABEL_RE = re.compile(r"^NIC(\d+)$")
_AFFINITY_HEADERS = ("CPU Affinity", "NUMA Affinity", "GPU NUMA ID")
_AFFINITY_HEADER_RE = re.compile(r"(CPU Affinity|NUMA Affinity|GPU NUMA ID)")
_NIC_LEGEND_RE = re.compile(r"^\s*(NIC\d+)\s*:\s*(\S+)\s*$")


# --------------------------------------------------------------------------------------------
# Header and cells
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


def _numa_node(numa_affinity, label, source, warnings):
    """The one NUMA node of a GPU's NUMA Affinity; None (with a warning) when it names several."""
    if numa_affinity is not None and len(numa_affinity) == 1:
        return numa_affinity[0]
    if numa_affinity:
        warnings.append("%s: %s has NUMA Affinity %s (several nodes); numa_node left unknown"
                        % (source, label, format_cpulist(numa_affinity)))
    return None


# --------------------------------------------------------------------------------------------
# The matrix
# --------------------------------------------------------------------------------------------

class _MatrixReader(object):
    """State of one parse: the lines, the header's columns, the rows read so far, warnings."""

    def __init__(self, text, source):
        self.source = source
        self.lines = output_lines(text)
        self.raw = raw_lines(text)
        self.nonblank = [i for i, line in enumerate(self.lines) if line.strip()]
        if not self.nonblank:
            raise TruncatedOutputError(source, "printed nothing")
        self.warnings: List[str] = []
        self.rows: Dict[str, Dict[str, Any]] = {}
        self.devices: List[str] = []
        self.affinity_cols: List[str] = []
        self.gpu_labels: List[str] = []
        self.nic_labels: List[str] = []

    def error(self, message, i, cls=TopologyParseError):
        return cls(self.source, message, i + 1, self.raw[i])

    def find_header(self) -> int:
        """Index of the header line: GPU0 (or GPU<n>) followed by column names, not link codes."""
        for i in self.nonblank:
            tokens = self.lines[i].split()
            if _GPU_LABEL_RE.match(tokens[0]) and (len(tokens) == 1 or not is_link_code(tokens[1])):
                return i
        raise self.error("no matrix header (a line starting with GPU0 followed by column names) found",
                         self.nonblank[0])

    def read_header(self, i):
        self.devices, self.affinity_cols = _split_header(self.lines[i], self.source, i + 1, self.raw[i])
        for name in self.affinity_cols:
            if name not in _AFFINITY_HEADERS:
                self.warnings.append("%s: unknown column %r kept as text" % (self.source, name))
        self.gpu_labels = [d for d in self.devices if _GPU_LABEL_RE.match(d)]
        self.nic_labels = [d for d in self.devices if not _GPU_LABEL_RE.match(d)]
        for position, label in enumerate(self.gpu_labels):
            if int(_GPU_LABEL_RE.match(label).group(1)) != position:
                self.warnings.append("%s: GPU column %d is labelled %s; index taken from the column order"
                                     % (self.source, position, label))

    def read_rows(self, header_at) -> Tuple[int, bool]:
        """Read the rows after the header; return (index where the matrix ends, ended by EOF)."""
        for i in range(header_at + 1, len(self.lines)):
            line = self.lines[i]
            stripped = line.strip()
            if not stripped:
                if self.rows:
                    return i, False
                continue
            if stripped.startswith("Legend"):
                return i, False
            if is_known_message(line):
                self.warnings.append("%s: %s" % (self.source, stripped))
                continue
            label = line.split()[0]
            if label not in self.devices:
                if all(g in self.rows for g in self.gpu_labels):
                    return i, False
                raise self.error("row label %r is not one of the header's columns %s"
                                 % (label, self.devices), i)
            if label in self.rows:
                raise self.error("row %s appears twice" % label, i)
            self.rows[label] = self.read_row(i, label, line.split()[1:])
        return len(self.lines), True

    def read_row(self, i, label, cells):
        n_dev = len(self.devices)
        error_cls = TruncatedOutputError if i == self.nonblank[-1] else TopologyParseError
        if len(cells) < n_dev:
            raise self.error("row %s has %d link cells but the header names %d devices"
                             % (label, len(cells), n_dev), i, error_cls)
        codes = cells[:n_dev]
        for code in codes:
            if not is_link_code(code):
                raise self.error("unknown link code %r in row %s (expected X, NV#, PIX, PXB, PHB, "
                                 "NODE, SYS or SOC)" % (code, label), i, error_cls)
        own = codes[self.devices.index(label)]
        if own != "X":
            raise self.error("row %s has %r, not X, in its own column: cells are misaligned"
                             % (label, own), i)
        values = self.read_affinity(i, label, cells[n_dev:]) if _GPU_LABEL_RE.match(label) else {}
        return {"codes": codes, "affinity": values, "line_no": i + 1}

    def read_affinity(self, i, label, rest):
        columns = self.affinity_cols
        if len(rest) > len(columns):
            raise self.error("row %s has %d cells after the matrix but the header names %d "
                             "affinity columns %s" % (label, len(rest), len(columns), columns), i)
        if len(rest) < len(columns):
            self.warnings.append(
                "%s: row %s has %d of %d affinity cells %s; the missing ones are unknown"
                % (self.source, label, len(rest), len(columns), columns))
        values = {}
        for position, column in enumerate(columns):
            value = rest[position] if position < len(rest) else None
            values[column] = _parse_affinity_cell(column, value, self.source, i + 1, self.raw[i])
        return values

    def check_missing_rows(self, ended_by_eof):
        missing = [d for d in self.devices if d not in self.rows]
        missing_gpus = [d for d in missing if d in self.gpu_labels]
        if missing and ended_by_eof:
            raise TruncatedOutputError(
                self.source, "output ends before the rows of %s" % ", ".join(missing))
        if missing_gpus:
            raise TopologyParseError(
                self.source, "the matrix has no row for %s" % ", ".join(missing_gpus))
        if missing:
            self.warnings.append("%s: no rows for %s; their links are taken from the GPU rows"
                                 % (self.source, ", ".join(missing)))

    def gpus_and_links(self):
        """GPU x GPU codes and one entry per GPU column, in column order."""
        gpu_cols = [self.devices.index(g) for g in self.gpu_labels]
        links, gpus = [], []
        for position, label in enumerate(self.gpu_labels):
            row = self.rows[label]
            links.append([row["codes"][c] for c in gpu_cols])
            affinity = row["affinity"]
            numa_affinity = affinity.get("NUMA Affinity")
            gpus.append({
                "index": position,
                "label": label,
                "cpu_affinity": affinity.get("CPU Affinity"),
                "numa_affinity": numa_affinity,
                "numa_node": _numa_node(numa_affinity, label, self.source, self.warnings),
                "gpu_numa_id": affinity.get("GPU NUMA ID"),
            })
        for i in range(len(links)):
            for j in range(i + 1, len(links)):
                if links[i][j] != links[j][i]:
                    self.warnings.append(
                        "%s: matrix is not symmetric: GPU%d-GPU%d is %s but GPU%d-GPU%d is %s"
                        % (self.source, i, j, links[i][j], j, i, links[j][i]))
        return gpus, links

    def nics(self, matrix_end):
        """The NIC columns, named from the ``NIC Legend`` after the matrix where there is one."""
        legend = {}
        for line in self.lines[matrix_end:]:
            match = _NIC_LEGEND_RE.match(line)
            if match:
                legend[match.group(1)] = match.group(2)
        nics = []
        for label in self.nic_labels:
            column = self.devices.index(label)
            if _NIC_LABEL_RE.match(label) and label not in legend:
                self.warnings.append("%s: no NIC Legend entry for %s; its name is unknown"
                                     % (self.source, label))
            nics.append({
                "name": legend.get(label, label),
                "label": label,
                "links": [self.rows[g]["codes"][column] for g in self.gpu_labels],
            })
        return nics


def parse_topo_matrix(text: Optional[str], source: str = "nvidia-smi topo -m") -> Dict[str, Any]:
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
    reader = _MatrixReader(text, source)
    header_at = reader.find_header()
    reader.read_header(header_at)
    matrix_end, ended_by_eof = reader.read_rows(header_at)
    reader.check_missing_rows(ended_by_eof)
    gpus, links = reader.gpus_and_links()
    nics = reader.nics(matrix_end)
    return {
        "gpu_count": len(reader.gpu_labels),
        "columns": reader.devices + reader.affinity_cols,
        "gpus": gpus,
        "links": links,
        "link_class": [[link_class(code) for code in row] for row in links],
        "nics": nics,
        "warnings": reader.warnings,
    }
