# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""Parser of ``nvidia-smi -q -x``: one entry per ``<gpu>`` (name, memory, MIG, ECC, PCIe, health).

The XML uses the element names of ``nvsmi_device_v11.dtd`` .. ``v13`` (real captures under
``tests/fixtures/real/``); lines outside the XML (handle errors, ``WARNING: ...``) are kept as
messages.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
import xml.etree.ElementTree as ET
from typing import Any, Dict, Optional

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._pci_bus import nvsmi_bus_id
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    TopologyParseError,
    TruncatedOutputError,
    is_known_message,
)

_ERROR_VALUE_RE = re.compile(r"Unknown Error|GPU is lost|ERR!|Requires? Reset", re.IGNORECASE)
_END_TAG = "</nvidia_smi_log>"


# --------------------------------------------------------------------------------------------
# Values of one <gpu>
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


def _version(root, names):
    """The first of ``names`` present, without a trailing ``[Deprecated; ...]`` note.

    Drivers 610 and later print ``KMD Version`` / ``CUDA UMD Version`` and mark ``Driver Version``
    / ``CUDA Version`` ``[Deprecated; will be removed in CUDA 14.0. ...]`` (the ``-q`` text of
    tests/fixtures/real/public/smi_kmd_21); the XML element names ``kmd_version`` and
    ``cuda_umd_version`` are assumed from those labels (no 610 ``-q -x`` capture yet).
    """
    for name in names:
        value = _text(root, name)
        if value:
            value = re.sub(r"\s*\[.*$", "", value).strip()
            if value:
                return value
    return None


def _na_none(value):
    """The value as printed, None for ``N/A`` (and absent)."""
    return None if value in (None, "N/A") else value


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
        "persistence_mode": _mode(_text(gpu, "persistence_mode")),
        "fabric": {"state": _na_none(_text(gpu, "fabric/state")),
                   "status": _na_none(_text(gpu, "fabric/status"))},
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


# --------------------------------------------------------------------------------------------
# The document
# --------------------------------------------------------------------------------------------

def empty_query() -> Dict[str, Any]:
    """The result of a ``-q -x`` run that described no GPU."""
    return {"driver_version": None, "cuda_driver_version": None, "attached_gpus": None,
            "gpus": [], "messages": [], "warnings": []}


def empty_gpu_entry(bus: Optional[str], reason: Optional[str]) -> Dict[str, Any]:
    """A GPU entry with every ``-q -x`` value unknown (a GPU only a handle error names)."""
    return {"name": None, "uuid": None, "pci_bus_id": bus, "minor_number": None,
            "memory_total_mib": None, "mig_mode": None, "mig_device_count": 0,
            "mig_devices": [], "persistence_mode": None, "fabric": {"state": None, "status": None},
            "ecc": {"mode": None, "volatile_uncorrected": None, "volatile_corrected": None,
                    "aggregate_uncorrected": None, "aggregate_corrected": None,
                    "retired_pages_single_bit": None, "retired_pages_double_bit": None,
                    "retired_pages_pending": None, "remapped_rows_correctable": None,
                    "remapped_rows_uncorrectable": None, "remapped_rows_pending": None,
                    "remapped_rows_failure": None},
            "pcie": {"link_gen_current": None, "link_gen_max": None, "link_width_current": None,
                     "link_width_max": None},
            "healthy": reason is None, "reason": reason}


def _messages_only(raw, source):
    """Output without any XML: fine when every line is a known message, else an error."""
    result = empty_query()
    for number, line in enumerate(raw.split("\n")):
        if not line.strip():
            continue
        if not is_known_message(line):
            raise TopologyParseError(source, "output is not XML", number + 1, line)
        result["messages"].append(line.strip())
    return result


def _xml_root(raw, start, end, source):
    """The parsed ``<nvidia_smi_log>`` between ``start`` and ``end``; errors name the line."""
    try:
        root = ET.fromstring(raw[start:end].encode("utf-8"))
    except ET.ParseError as exc:
        line_no, _column = getattr(exc, "position", (1, 0))
        absolute = raw.count("\n", 0, start) + line_no
        lines = raw.split("\n")
        line = lines[absolute - 1] if 0 < absolute <= len(lines) else None
        raise TopologyParseError(source, "invalid XML: %s" % exc, absolute, line)
    if root.tag != "nvidia_smi_log":
        raise TopologyParseError(source, "root element is <%s>, not <nvidia_smi_log>" % root.tag)
    return root


def parse_query_xml(text: Optional[str], source: str = "nvidia-smi -q -x") -> Dict[str, Any]:
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
        return _messages_only(raw, source)
    start = min(starts)
    end = raw.find(_END_TAG, start)
    if end < 0:
        raise TruncatedOutputError(
            source, "XML stops before %s after %d lines (output cut?)"
            % (_END_TAG, raw.count("\n") + 1))
    end += len(_END_TAG)
    root = _xml_root(raw, start, end, source)
    warnings = []
    gpus = [_xml_gpu(gpu, warnings, source) for gpu in root.findall("gpu")]
    attached_text = _text(root, "attached_gpus")
    attached = int(attached_text) if attached_text and attached_text.isdigit() else None
    if attached is not None and attached != len(gpus):
        warnings.append("%s: attached_gpus is %d but the output has %d <gpu> block(s)"
                        % (source, attached, len(gpus)))
    return {
        "driver_version": _version(root, ("kmd_version", "driver_version")),
        "cuda_driver_version": _version(root, ("cuda_umd_version", "cuda_version")),
        "attached_gpus": attached,
        "gpus": gpus,
        "messages": [line.strip() for line in (raw[:start] + "\n" + raw[end:]).split("\n")
                     if line.strip()],
        "warnings": warnings,
    }
