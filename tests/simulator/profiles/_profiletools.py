# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Helpers shared by the profile builders of the simulated GPU hosts (test tooling, stdlib only).

A profile directory (tests/simulator/profiles/<name>/) holds what the simulated nvidia-smi
replays (topo_m.out, q_x.out, q.out, nvlink_s.out, smi.out, smi_L.out, smi_version.out,
query_gpu.csv, ...), numactl_H.out for the numactl bridge, a small sysfs tree under sysfs/ and
meta.json. These helpers write those pieces; make_real_profile.py and generate_a100x6.py use them.
"""

import importlib.util
import json
import os
import re
import xml.etree.ElementTree as ET

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.abspath(os.path.join(HERE, "..", "..", ".."))
REAL = os.path.join(REPO, "tests", "fixtures", "real")


def write_bytes(path, data):
    """Write bytes exactly (no newline translation); create parent directories."""
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as handle:
        handle.write(data)


def write_text(path, text):
    write_bytes(path, text.encode("utf-8"))


def write_json(path, obj):
    write_text(path, json.dumps(obj, indent=2, sort_keys=False) + "\n")


# --- sysfs ------------------------------------------------------------------------------------

def sysfs_pci_name(nvsmi_bus_id):
    """'00000000:4B:00.0' (nvidia-smi) -> '0000:4b:00.0' (sysfs)."""
    domain, bus, devfn = nvsmi_bus_id.split(":")
    return "%04x:%s:%s" % (int(domain, 16), bus.lower(), devfn.lower())


def write_sysfs(root, gpus, nodes):
    """gpus: [{'bus_id': nvidia-smi bus id, 'numa_node': int, 'local_cpulist': str, 'extra': {file: text}}]
    nodes: [{'id': int, 'cpulist': str, 'mem_total_kb': int, 'mem_free_kb': int}]

    Writes bus/pci/devices/<dddd:bb:dd.f>/{numa_node,local_cpulist,...},
    devices/system/node/node<N>/{cpulist,meminfo} and devices/system/node/online, each file with a
    final newline as the kernel prints it."""
    for gpu in gpus:
        dev = os.path.join(root, "bus", "pci", "devices", sysfs_pci_name(gpu["bus_id"]))
        write_text(os.path.join(dev, "numa_node"), "%d\n" % gpu["numa_node"])
        write_text(os.path.join(dev, "local_cpulist"), gpu["local_cpulist"] + "\n")
        for name, text in sorted(gpu.get("extra", {}).items()):
            write_text(os.path.join(dev, name), text + "\n")
    for node in nodes:
        ndir = os.path.join(root, "devices", "system", "node", "node%d" % node["id"])
        write_text(os.path.join(ndir, "cpulist"), node["cpulist"] + "\n")
        used = node["mem_total_kb"] - node["mem_free_kb"]
        # drivers/base/node.c: "Node %d MemTotal:       %8lu kB\n"
        write_text(os.path.join(ndir, "meminfo"),
                   "Node %d MemTotal:       %8d kB\n"
                   "Node %d MemFree:        %8d kB\n"
                   "Node %d MemUsed:        %8d kB\n"
                   % (node["id"], node["mem_total_kb"], node["id"], node["mem_free_kb"], node["id"], used))
    ids = sorted(n["id"] for n in nodes)
    write_text(os.path.join(root, "devices", "system", "node", "online"), format_cpulist(ids) + "\n")


def _collection_cpulist():
    """The collection's own cpulist code (pure Python, no Ansible imports), loaded by path so the
    generators and the facts module cannot disagree on the kernel's cpulist format."""
    path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "..",
                        "plugins", "module_utils", "_cpulist.py")
    spec = importlib.util.spec_from_file_location("gpu_fleet_cpulist", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# [0,1,2,5] -> '0-2,5' (the kernel's cpulist format)
format_cpulist = _collection_cpulist().format_cpulist


# --- numactl -H -------------------------------------------------------------------------------

def numactl_hardware(nodes, distances):
    """The text of `numactl -H` (numactl 2.0.x format, as in tests/fixtures/real/h200_vm/numactl_H.out:
    'node   0 ' header and '  0:  10 ' rows end with a space)."""
    ids = [n["id"] for n in nodes]
    lines = ["available: %d nodes (%s)" % (len(nodes), format_cpulist(ids))]
    for n in nodes:
        lines.append("node %d cpus: %s" % (n["id"], " ".join(str(c) for c in n["cpus"])))
        lines.append("node %d size: %d MB" % (n["id"], n["mem_total_kb"] // 1024))
        lines.append("node %d free: %d MB" % (n["id"], n["mem_free_kb"] // 1024))
    lines.append("node distances:")
    lines.append("node " + "".join("%3d " % i for i in ids))
    for i, row in zip(ids, distances):
        lines.append("%3d: " % i + "".join("%3d " % d for d in row))
    return "".join(line + "\n" for line in lines)


# --- rewriting nvidia-smi -q / -q -x templates -------------------------------------------------

# Values of the H200 capture that are generic (no GPU identity or model-specific number) and may
# stay in a generated profile. Every other leaf value must be overridden explicitly.
GENERIC_VALUES = frozenset([
    "N/A", "0", "No", "Disabled", "Enabled", "None", "Not Active", "Active", "Default", "0 us", "0 %",
    "0 MiB", "0 bank(s)", "disabled", "Yes", "NVIDIA", "4000", "P0", "3", "2",
])

_XML_LEAF = re.compile(r"^(\s*)<(\w+)((?: [^>]*)?)>(.*)</\2>(\s*)$")
_XML_OPEN = re.compile(r"^\s*<(\w+)(?: [^>]*)?>\s*$")
_XML_CLOSE = re.compile(r"^\s*</(\w+)>\s*$")


def rewrite_xml_block(lines, values, replace_blocks=None, keep=()):
    """Rewrite leaf values of an XML block given as lines (with line ends), keeping whitespace.

    values: {'pci/pci_bus_id': '00000000:17:00.0', ...} paths relative to the block's root element
    (the root itself excluded); a path may occur several times (then every occurrence is set).
    replace_blocks: {'supported_clocks': [lines]} replaces a whole element (open..close lines).
    keep: paths whose template value may stay although it is not generic.
    Raises ValueError if a non-generic template value is neither overridden nor kept, or an
    override path does not exist."""
    replace_blocks = replace_blocks or {}
    out = []
    stack = []
    used = set()
    skipping = None
    for line in lines:
        if skipping is not None:
            m = _XML_CLOSE.match(line)
            if m and m.group(1) == skipping[0] and len(stack) == skipping[1]:
                skipping = None
            elif _XML_OPEN.match(line) and not _XML_LEAF.match(line):
                pass
            continue
        m = _XML_LEAF.match(line)
        if m:
            path = "/".join(stack[1:] + [m.group(2)])
            if path in values:
                used.add(path)
                line = "%s<%s%s>%s</%s>%s" % (m.group(1), m.group(2), m.group(3), values[path], m.group(2), m.group(5))
            elif m.group(4) not in GENERIC_VALUES and path not in keep:
                raise ValueError("template value %r at %s is neither overridden nor generic" % (m.group(4), path))
            out.append(line)
            continue
        m = _XML_OPEN.match(line)
        if m:
            path = "/".join(stack[1:] + [m.group(1)])
            if path in replace_blocks:
                used.add(path)
                out.extend(replace_blocks[path])
                skipping = (m.group(1), len(stack))
                continue
            stack.append(m.group(1))
            out.append(line)
            continue
        m = _XML_CLOSE.match(line)
        if m:
            stack.pop()
            out.append(line)
            continue
        text = line.strip()
        if text and text not in GENERIC_VALUES:
            raise ValueError("template text %r inside %s is not generic" % (text, "/".join(stack)))
        out.append(line)
    missing = (set(values) | set(replace_blocks)) - used
    if missing:
        raise ValueError("override paths not found in the template: %s" % sorted(missing))
    return out


def rewrite_text_block(lines, values, keep=()):
    """Same for the text `nvidia-smi -q` format: sections by 4-space indentation, leaves
    'Label<padding>: value'. Paths are 'Section/Sub/Label' relative to the GPU block."""
    out = []
    stack = []
    used = set()
    for line in lines:
        body = line.rstrip("\n")
        if not body.strip():
            out.append(line)
            continue
        indent = (len(body) - len(body.lstrip(" "))) // 4 - 1
        if " : " in body or body.endswith(" :"):
            label, value = (body.split(" : ", 1) + [""])[:2] if " : " in body else (body[:-2], "")
            path = "/".join(stack[:indent] + [label.strip()])
            if path in values:
                used.add(path)
                body = label + " : " + values[path]
                line = body + "\n"
            elif value not in GENERIC_VALUES and path not in keep:
                raise ValueError("template value %r at %s is neither overridden nor generic" % (value, path))
            out.append(line)
        else:
            stack = stack[:indent] + [body.strip()]
            out.append(line)
    missing = set(values) - used
    if missing:
        raise ValueError("override paths not found in the -q template: %s" % sorted(missing))
    return out


# --- --query-gpu table ------------------------------------------------------------------------

def _na(value):
    return "[N/A]" if value in (None, "N/A", "") else value


def _num(value):
    """'35 C' -> '35', '16x' -> '16'."""
    if value in (None, "N/A"):
        return "[N/A]"
    return value.split()[0].rstrip("x")


def _sum_ints(values):
    total = 0
    for v in values:
        if v is None or v == "N/A":
            return "[N/A]"
        total += int(v)
    return str(total)


def derive_query_table(q_x_text, extra_per_gpu):
    """Build query_gpu.csv (the `--format=csv` output with every field the simulated nvidia-smi
    can compute) from a profile's `nvidia-smi -q -x` text, so both answers agree.
    extra_per_gpu: list of dicts with fields not in the XML (e.g. {'compute_cap': '9.0'})."""
    root = ET.fromstring(q_x_text)
    gpus = root.findall("gpu")

    def t(g, path):
        el = g.find(path)
        return None if el is None or el.text is None else el.text.strip()

    columns = [
        ("index", ""), ("name", ""), ("uuid", ""), ("serial", ""), ("pci.bus_id", ""),
        ("pci.domain", ""), ("pci.bus", ""), ("pci.device", ""), ("pci.device_id", ""),
        ("pci.sub_device_id", ""), ("driver_version", ""), ("count", ""), ("vbios_version", ""),
        ("inforom.img", ""), ("persistence_mode", ""), ("accounting.mode", ""), ("compute_mode", ""),
        ("pstate", ""), ("compute_cap", ""), ("display_active", ""),
        ("memory.total", "MiB"), ("memory.reserved", "MiB"), ("memory.used", "MiB"), ("memory.free", "MiB"),
        ("utilization.gpu", "%"), ("utilization.memory", "%"), ("fan.speed", "%"),
        ("ecc.mode.current", ""), ("ecc.mode.pending", ""),
        ("ecc.errors.corrected.volatile.total", ""), ("ecc.errors.corrected.aggregate.total", ""),
        ("ecc.errors.uncorrected.volatile.total", ""), ("ecc.errors.uncorrected.aggregate.total", ""),
        ("remapped_rows.correctable", ""), ("remapped_rows.uncorrectable", ""),
        ("remapped_rows.pending", ""), ("remapped_rows.failure", ""),
        ("pcie.link.gen.current", ""), ("pcie.link.gen.max", ""),
        ("pcie.link.width.current", ""), ("pcie.link.width.max", ""),
        ("temperature.gpu", ""), ("temperature.memory", ""),
        ("power.draw", "W"), ("power.limit", "W"), ("enforced.power.limit", "W"),
        ("power.default_limit", "W"), ("power.min_limit", "W"), ("power.max_limit", "W"),
        ("clocks.gr", "MHz"), ("clocks.sm", "MHz"), ("clocks.mem", "MHz"), ("clocks.video", "MHz"),
        ("clocks.max.gr", "MHz"), ("clocks.max.sm", "MHz"), ("clocks.max.mem", "MHz"),
        ("mig.mode.current", ""), ("mig.mode.pending", ""),
    ]
    rows = []
    for n, g in enumerate(gpus):
        extra = extra_per_gpu[n] if n < len(extra_per_gpu) else {}
        ecc = "ecc_errors/%s/%s"
        v = {
            "index": t(g, "minor_number") if t(g, "minor_number") not in (None, "N/A") else str(n),
            "name": t(g, "product_name"),
            "uuid": t(g, "uuid"),
            "serial": t(g, "serial"),
            "pci.bus_id": t(g, "pci/pci_bus_id"),
            "pci.domain": "0x" + t(g, "pci/pci_domain"),
            "pci.bus": "0x" + t(g, "pci/pci_bus"),
            "pci.device": "0x" + t(g, "pci/pci_device"),
            "pci.device_id": "0x" + t(g, "pci/pci_device_id"),
            "pci.sub_device_id": "0x" + t(g, "pci/pci_sub_system_id"),
            "driver_version": t(root, "driver_version"),
            "count": str(len(gpus)),
            "vbios_version": t(g, "vbios_version"),
            "inforom.img": t(g, "inforom_version/img_version"),
            "persistence_mode": t(g, "persistence_mode"),
            "accounting.mode": t(g, "accounting_mode"),
            "compute_mode": t(g, "compute_mode"),
            "pstate": t(g, "performance_state"),
            "compute_cap": extra.get("compute_cap"),
            "display_active": t(g, "display_active"),
            "memory.total": t(g, "fb_memory_usage/total"),
            "memory.reserved": t(g, "fb_memory_usage/reserved"),
            "memory.used": t(g, "fb_memory_usage/used"),
            "memory.free": t(g, "fb_memory_usage/free"),
            "utilization.gpu": t(g, "utilization/gpu_util"),
            "utilization.memory": t(g, "utilization/memory_util"),
            "fan.speed": t(g, "fan_speed"),
            "ecc.mode.current": t(g, "ecc_mode/current_ecc"),
            "ecc.mode.pending": t(g, "ecc_mode/pending_ecc"),
            "ecc.errors.corrected.volatile.total": _sum_ints(
                [t(g, ecc % ("volatile", "sram_correctable")), t(g, ecc % ("volatile", "dram_correctable"))]),
            "ecc.errors.corrected.aggregate.total": _sum_ints(
                [t(g, ecc % ("aggregate", "sram_correctable")), t(g, ecc % ("aggregate", "dram_correctable"))]),
            "ecc.errors.uncorrected.volatile.total": _sum_ints(
                [t(g, ecc % ("volatile", "sram_uncorrectable_parity")),
                 t(g, ecc % ("volatile", "sram_uncorrectable_secded")),
                 t(g, ecc % ("volatile", "dram_uncorrectable"))]),
            "ecc.errors.uncorrected.aggregate.total": _sum_ints(
                [t(g, ecc % ("aggregate", "sram_uncorrectable_parity")),
                 t(g, ecc % ("aggregate", "sram_uncorrectable_secded")),
                 t(g, ecc % ("aggregate", "dram_uncorrectable"))]),
            "remapped_rows.correctable": t(g, "remapped_rows/remapped_row_corr"),
            "remapped_rows.uncorrectable": t(g, "remapped_rows/remapped_row_unc"),
            "remapped_rows.pending": t(g, "remapped_rows/remapped_row_pending"),
            "remapped_rows.failure": t(g, "remapped_rows/remapped_row_failure"),
            "pcie.link.gen.current": _num(t(g, "pci/pci_gpu_link_info/pcie_gen/current_link_gen")),
            "pcie.link.gen.max": _num(t(g, "pci/pci_gpu_link_info/pcie_gen/max_link_gen")),
            "pcie.link.width.current": _num(t(g, "pci/pci_gpu_link_info/link_widths/current_link_width")),
            "pcie.link.width.max": _num(t(g, "pci/pci_gpu_link_info/link_widths/max_link_width")),
            "temperature.gpu": _num(t(g, "temperature/gpu_temp")),
            "temperature.memory": _num(t(g, "temperature/memory_temp")),
            "power.draw": t(g, "gpu_power_readings/instant_power_draw"),
            "power.limit": t(g, "gpu_power_readings/current_power_limit"),
            "enforced.power.limit": t(g, "gpu_power_readings/current_power_limit"),
            "power.default_limit": t(g, "gpu_power_readings/default_power_limit"),
            "power.min_limit": t(g, "gpu_power_readings/min_power_limit"),
            "power.max_limit": t(g, "gpu_power_readings/max_power_limit"),
            "clocks.gr": t(g, "clocks/graphics_clock"),
            "clocks.sm": t(g, "clocks/sm_clock"),
            "clocks.mem": t(g, "clocks/mem_clock"),
            "clocks.video": t(g, "clocks/video_clock"),
            "clocks.max.gr": t(g, "max_clocks/graphics_clock"),
            "clocks.max.sm": t(g, "max_clocks/sm_clock"),
            "clocks.max.mem": t(g, "max_clocks/mem_clock"),
            "mig.mode.current": t(g, "mig_mode/current_mig"),
            "mig.mode.pending": t(g, "mig_mode/pending_mig"),
        }
        v.update(extra)
        rows.append(", ".join(_na(v[name]) for name, _unit in columns))
    header = ", ".join(name if not unit else "%s [%s]" % (name, unit) for name, unit in columns)
    return header + "\n" + "".join(r + "\n" for r in rows)
