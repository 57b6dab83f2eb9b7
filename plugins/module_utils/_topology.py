# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
# Note that this module_utils file is PRIVATE to the collection: only this collection's modules and
# module_utils import it, and its names may change at any time.
# Pure code: no Ansible imports, no I/O. Runs on Python 3.9 and later.
"""The ``gpu_topology`` facts: the three nvidia-smi outputs and sysfs merged into one dict.

``build_gpu_topology`` is a short driver: one function reads each source (``-q -x`` through
``_query_xml``, ``topo -m`` through ``_topo_matrix``, ``nvlink -s`` through ``_nvlink``; failures
through ``_smi_errors``), then the GPUs are paired across the outputs and sysfs, and the links,
NVLinks and NUMA nodes are attached. A source that makes the host unusable stops the build with
``available: false`` and a ``reason`` quoting the tool.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re
from typing import Any, Dict, List, Optional

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cpulist import parse_cpulist
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._links import (
    link_class,
    nvlink_islands,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nvlink import parse_nvlink_status
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._pci_bus import (
    bus_sort_key,
    sysfs_bus_id,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._query_xml import (
    empty_gpu_entry,
    empty_query,
    parse_query_xml,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    TopologyParseError,
    TruncatedOutputError,
    detect_smi_failure,
    find_handle_errors,
    handle_error_index,
    is_handle_error,
    is_known_message,
    output_lines,
    quote_output,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topo_matrix import parse_topo_matrix

# The argv (after the nvidia-smi path) of the three commands the facts are built from.
COMMANDS = {
    "qx": ["-q", "-x"],
    "topo": ["topo", "-m"],
    "nvlink": ["nvlink", "-s"],
    "list": ["-L"],
}
_KEYS = ("qx", "topo", "nvlink", "list")
_LIST_GPU_RE = re.compile(r"^GPU (\d+): ")


# --------------------------------------------------------------------------------------------
# Command results
# --------------------------------------------------------------------------------------------

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


class _Unavailable(Exception):
    """The host cannot serve: ``build_gpu_topology`` returns ``unavailable_topology(reason)``."""

    def __init__(self, reason, warnings=None):
        super(_Unavailable, self).__init__(reason)
        self.reason = reason
        self.warnings = warnings


_COUNT_SOURCES = ("qx", "topo", "list", "sysfs")


def unavailable_topology(reason: str, warnings: Optional[List[str]] = None) -> Dict[str, Any]:
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
        "gpu_count_sources": dict((key, None) for key in _COUNT_SOURCES),
        "warnings": list(warnings or []),
    }


def pci_bus_ids(results: Dict[str, Any]) -> List[str]:
    """The PCI bus ids (nvidia-smi spelling) the commands name: -q -x GPUs and handle errors.

    The module reads sysfs for exactly these. Unparseable -q -x output gives no ids here (the
    error is raised by ``build_gpu_topology``).
    """
    found = []
    for key in _KEYS:
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


# --------------------------------------------------------------------------------------------
# One function per source
# --------------------------------------------------------------------------------------------

def _check_host_failure(norm):
    """Stop when any output carries a host-level failure (NVML, driver, no devices)."""
    for key in _KEYS:
        result = norm[key]
        if result is None:
            continue
        message = detect_smi_failure(result.combined)
        if message:
            raise _Unavailable("%s failed (rc %s): %s" % (_command(key), result.rc, message))


def _handle_errors(norm):
    """``{bus_id: message}`` of the GPUs some output could not get a device handle for."""
    found = {}
    for key in _KEYS:
        result = norm[key]
        if result is not None:
            for bus, message in find_handle_errors(result.combined):
                found.setdefault(bus, message)
    return found


def _parse(key, result, parser):
    """Parse one output; an unreadable output of a command that failed makes the host unusable
    (TruncatedOutputError is left to the caller; an unreadable output with rc 0 is raised)."""
    try:
        return parser(result.stdout)
    except TruncatedOutputError:
        raise
    except TopologyParseError:
        if result.rc == 0:
            raise
        raise _Unavailable("%s failed (rc %s): %s" % (_command(key), result.rc,
                                                      quote_output(result.combined)))


def _exit_warning(key, result, warnings):
    if result.rc != 0:
        warnings.append("%s exited with rc %s" % (_command(key), result.rc))


def _read_qx(result, handle_errors, warnings):
    """The parsed ``-q -x``; an empty one when it stops early but handle errors name the GPUs."""
    if result is None:
        return None
    try:
        qx = _parse("qx", result, parse_query_xml)
    except TruncatedOutputError as exc:
        if not handle_errors:
            raise _Unavailable("%s (rc %s)%s" % (
                exc, result.rc,
                (": " + quote_output(result.stderr)) if result.stderr.strip() else ""))
        qx = empty_query()
    _exit_warning("qx", result, warnings)
    warnings.extend(qx["warnings"])
    for message in qx["messages"]:
        if not is_handle_error(message):
            warnings.append("%s: %s" % (_command("qx"), message))
    return qx


def _only_messages(text):
    return all(is_known_message(line) or not line.strip() for line in output_lines(text))


def _read_topo(result, qx, handle_errors, warnings):
    """The parsed ``topo -m``; None (links unknown) when it printed only messages but -q -x or
    the handle errors still name GPUs."""
    if result is None:
        return None
    if _only_messages(result.stdout) and (handle_errors or result.rc != 0):
        if qx is None or not (qx["gpus"] or handle_errors):
            raise _Unavailable("%s failed (rc %s): %s" % (
                _command("topo"), result.rc, quote_output(result.combined) or "no output"))
        warnings.append("%s printed no matrix (rc %s): %s; links are unknown"
                        % (_command("topo"), result.rc, quote_output(result.combined)))
        return None
    try:
        topo = _parse("topo", result, parse_topo_matrix)
    except TruncatedOutputError as exc:
        raise _Unavailable("%s (rc %s)" % (exc, result.rc))
    _exit_warning("topo", result, warnings)
    warnings.extend(topo["warnings"])
    return topo


def _read_nvlink(result, warnings):
    """The parsed ``nvlink -s``; None (NVLink states unknown) when absent or unreadable."""
    if result is None or not (result.stdout.strip() or result.rc != 0):
        return None
    try:
        nvlink = parse_nvlink_status(result.stdout)
    except TopologyParseError:
        if result.rc == 0:
            raise
        warnings.append("%s failed (rc %s): %s; NVLink states are unknown"
                        % (_command("nvlink"), result.rc, quote_output(result.combined)))
        return None
    warnings.extend(nvlink["warnings"])
    _exit_warning("nvlink", result, warnings)
    return nvlink


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


# --------------------------------------------------------------------------------------------
# Merging: GPUs, links, NVLinks, NUMA nodes
# --------------------------------------------------------------------------------------------

def _gpu_entries(qx, handle_errors, warnings):
    """-q -x GPU entries, marked unhealthy where a handle error names them; GPUs only a handle
    error names are added (or, without -q -x, become warnings). Returns (entries, failed_only)."""
    entries = list(qx["gpus"]) if qx is not None else []
    known = set(entry["pci_bus_id"] for entry in entries)
    failed_only = [bus for bus in handle_errors if bus not in known]
    for entry in entries:
        if entry["pci_bus_id"] in handle_errors:
            entry["healthy"] = False
            entry["reason"] = handle_errors[entry["pci_bus_id"]]
    if failed_only and qx is not None:
        entries.extend(empty_gpu_entry(bus, handle_errors[bus]) for bus in failed_only)
        entries.sort(key=lambda entry: bus_sort_key(entry["pci_bus_id"]))
    elif failed_only:
        warnings.extend(handle_errors[bus] for bus in failed_only)
    for position, entry in enumerate(entries):
        named = handle_error_index(handle_errors.get(entry["pci_bus_id"]) or "")
        if named is not None and named != position:
            warnings.append("nvidia-smi names GPU %s index %d but it is GPU %d in PCI bus order; "
                            "indices follow the bus order" % (entry["pci_bus_id"], named, position))
    return entries, failed_only


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
    named = [handle_error_index(entry["reason"] or "") for entry in entries]
    if failed_only and len(entries) == len(failed_only) and None not in named and max(named) < n_topo:
        # -q -x stopped early: only handle errors name GPUs; place each at the index it names
        warnings.append("%s describes none of the %d GPUs in %s; the GPU(s) without a device handle are "
                        "placed at the index nvidia-smi names" % (_command("qx"), n_topo, _command("topo")))
        by_index = dict(zip(named, entries))
        return [(by_index.get(i), row) for i, row in enumerate(topo_gpus)]
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


def _numa_choice(index, bus, sys_numa, row, warnings):
    """(numa_node, source): sysfs where it names a node, else topo -m's NUMA Affinity."""
    topo_numa = row["numa_node"] if row else None
    if sys_numa is not None:
        if topo_numa is not None and topo_numa != sys_numa:
            warnings.append(
                "GPU %d (%s): sysfs numa_node is %d but %s NUMA Affinity is %d; using sysfs"
                % (index, bus, sys_numa, _command("topo"), topo_numa))
        return sys_numa, "sysfs"
    if topo_numa is not None:
        return topo_numa, "topo"
    return None, None


def _gpu_fact(index, entry, row, sysfs, warnings):
    """One entry of ``gpus`` from its -q -x entry, its topo -m row and sysfs (any may be None)."""
    entry = entry or empty_gpu_entry(None, None)
    bus = entry["pci_bus_id"]
    sys_numa, raw_numa, sys_cpus = _sysfs_numbers(sysfs, bus, warnings)
    numa, numa_source = _numa_choice(index, bus, sys_numa, row, warnings)
    if sys_cpus is not None:
        cpus, cpus_source = sys_cpus, "sysfs"
    elif row and row["cpu_affinity"] is not None:
        cpus, cpus_source = row["cpu_affinity"], "topo"
    else:
        cpus, cpus_source = None, None
    return {
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
        "persistence_mode": entry["persistence_mode"],
        "fabric": entry["fabric"],
        "mig_device_count": entry["mig_device_count"],
        "mig_devices": entry["mig_devices"],
        "ecc": entry["ecc"],
        "pcie": entry["pcie"],
        "nvlinks": [],
    }


def _links_and_nics(slots, topo):
    """GPU x GPU codes in facts order (None where a GPU has no topo -m row) and the NICs."""
    count = len(slots)
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
    nics = []
    for nic in (topo["nics"] if topo else []):
        nics.append({"name": nic["name"],
                     "links": [nic["links"][row_of[i]] if i in row_of else None
                               for i in range(count)]})
    return links, nics


def _nvlink_item(gpu, by_uuid, by_index):
    candidates = by_uuid.get(gpu["uuid"]) if gpu["uuid"] else None
    if candidates and len(candidates) == 1:
        return candidates[0]
    return by_index.get(gpu["index"])


def _attach_nvlinks(gpus, nvlink, warnings):
    """Copy each GPU's ``nvlink -s`` links (matched by UUID, else index) into ``gpus``."""
    if nvlink is None or not nvlink["gpus"]:
        return
    by_uuid = {}
    for item in nvlink["gpus"]:
        by_uuid.setdefault(item["uuid"], []).append(item)
    by_index = dict((item["index"], item) for item in nvlink["gpus"])
    used = set()
    missing = []
    for gpu in gpus:
        item = _nvlink_item(gpu, by_uuid, by_index)
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
            _command("nvlink"), len(nvlink["gpus"]), len(gpus),
            ", ".join(str(index) for index in missing)))
    extra = [item["index"] for item in nvlink["gpus"] if id(item) not in used]
    if extra:
        warnings.append("%s lists GPU %s that the other outputs do not show" % (
            _command("nvlink"), ", ".join(str(index) for index in extra)))


def _numa_nodes(gpus, sysfs, warnings):
    """NUMA nodes: sysfs lists them; a node only the GPUs name gets the union of their CPUs."""
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
    return [numa_nodes[key] for key in sorted(numa_nodes)]


def _count_sources(norm, qx, topo, sysfs, failed_only, gpus, warnings):
    """How many GPUs each source shows (None: not read) and a warning when one disagrees.

    A GPU known only from a handle error is added to the nvidia-smi sources, which cannot show
    it; sysfs (NVIDIA PCI functions of class 0x0300/0x0302) counts every GPU the kernel sees.
    """
    listed = None
    if norm.get("list") is not None and norm["list"].rc == 0:
        listed = sum(1 for line in output_lines(norm["list"].stdout) if _LIST_GPU_RE.match(line))
    sysfs_gpus = (sysfs or {}).get("nvidia_gpus")
    counts = {
        "qx": len(qx["gpus"]) + len(failed_only) if qx is not None else None,
        "topo": len(topo["gpus"]) + len(failed_only) if topo is not None else None,
        "list": listed + len(failed_only) if listed is not None else None,
        "sysfs": len(sysfs_gpus) if sysfs_gpus is not None else None,
    }
    names = {"qx": _command("qx"), "topo": _command("topo"), "list": _command("list"),
             "sysfs": "sysfs NVIDIA display/3D PCI functions"}
    seen = dict((key, value) for key, value in counts.items() if value is not None)
    if len(set(seen.values())) > 1:
        warnings.append("GPU count differs between sources: %s; the facts list %d GPU(s). A GPU "
                        "the kernel sees but nvidia-smi does not show is not usable (or, in a "
                        "container given some of the host's GPUs, sysfs still shows them all)" % (
                            ", ".join("%s %d" % (names[key], seen[key]) for key in _COUNT_SOURCES
                                      if key in seen), len(gpus)))
    return counts


# --------------------------------------------------------------------------------------------
# The driver
# --------------------------------------------------------------------------------------------

def build_gpu_topology(results: Dict[str, Any], sysfs: Optional[Dict[str, Any]] = None) -> Dict[str, Any]:
    """Build the ``gpu_topology`` facts from the nvidia-smi outputs and sysfs values.

    ``results`` maps ``"qx"`` (``-q -x``), ``"topo"`` (``topo -m``), ``"nvlink"``
    (``nvlink -s``) and ``"list"`` (``-L``) to a command result: ``{"rc": int, "stdout": str, "stderr": str}``, a plain
    stdout string, or None when not run. Only ``topo`` is needed (the layout planner's tests
    pass ``{"topo": text}``).

    ``sysfs`` (optional) holds raw file contents::

        {"pci": {"0000:00:06.0": {"numa_node": "-1\\n", "local_cpulist": "0-15\\n"}},
         "nodes": {0: "0-15\\n"}, "nvidia_gpus": ["0000:00:06.0"]}

    Rules: sysfs ``numa_node`` wins where it names a node (a disagreement with ``topo -m`` is a
    warning); ``-1`` means the platform gave none and ``topo -m``'s NUMA Affinity decides.
    ``cpu_affinity`` is sysfs ``local_cpulist`` when present, else ``topo -m``'s CPU Affinity.

    Host-level failures (NVML, driver, no devices, empty/truncated output) give
    ``available: false`` with a ``reason`` quoting the tool. Output the parsers do not
    understand raises ``TopologyParseError`` naming the line.
    """
    try:
        return _build(results, sysfs)
    except _Unavailable as exc:
        return unavailable_topology(exc.reason, exc.warnings)


def _build(results, sysfs):
    norm = dict((key, _result(results.get(key))) for key in _KEYS)
    if all(value is None for value in norm.values()):
        raise _Unavailable("no nvidia-smi output was given")
    _check_host_failure(norm)
    handle_errors = _handle_errors(norm)
    warnings: List[str] = []
    qx = _read_qx(norm["qx"], handle_errors, warnings)
    topo = _read_topo(norm["topo"], qx, handle_errors, warnings)
    nvlink = _read_nvlink(norm["nvlink"], warnings)
    entries, failed_only = _gpu_entries(qx, handle_errors, warnings)
    slots = _match_slots(entries, failed_only, topo["gpus"] if topo else [], warnings)
    if not slots:
        raise _Unavailable("nvidia-smi reported no GPU", warnings)
    gpus = [_gpu_fact(index, entry, row, sysfs, warnings) for index, (entry, row) in enumerate(slots)]
    links, nics = _links_and_nics(slots, topo)
    _attach_nvlinks(gpus, nvlink, warnings)
    numa_nodes = _numa_nodes(gpus, sysfs, warnings)
    counts = _count_sources(norm, qx, topo, sysfs, failed_only, gpus, warnings)
    return _facts(qx, gpus, links, nics, numa_nodes, counts, warnings)


def _facts(qx, gpus, links, nics, numa_nodes, counts, warnings):
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
        "gpu_count": len(gpus),
        "gpus": gpus,
        "links": links,
        "link_class": [[link_class(code) for code in line] for line in links],
        "nvlink_islands": nvlink_islands(links),
        "numa_nodes": numa_nodes,
        "nics": nics,
        "gpu_count_sources": counts,
        "warnings": warnings,
    }
