# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Generate the simulated-host profile `a100x6_2numa` (GENERATED, not captured).

The host: 6x NVIDIA A100 80GB PCIe (81920 MiB), driver 535.104.05 / CUDA 12.2, two sockets.
  GPUs 0-2 on NUMA node 0 (CPUs 0-31), bus 17, 31, 4B
  GPUs 3-5 on NUMA node 1 (CPUs 32-63), bus 98, B1, CA
  NVLink bridges 0-1, 2-3, 4-5 (NV12: 12 third-generation links at 25 GB/s each) -- so the 2-3
  bridge crosses the sockets; every other pair is NODE within a socket and SYS across.

The formats are the REAL ones, learned from captures (the file named for each output):
  topo -m      tests/fixtures/real/h200_vm/topo_m.out (tab separated, the header wrapped in the
               ANSI underline ESC[4m..ESC[0m, ` X ` on the diagonal, `CPU Affinity`, `NUMA
               Affinity`, `GPU NUMA ID` = N/A after a double tab, legend copied byte for byte)
  -q -x, -q    h200_vm/q_x.out and h200_vm/q.out used as templates: identical element / line
               structure (the 580 driver's, nvsmi_device_v13.dtd -- a real 535 driver prints the v12
               schema, see public/qx_02; kept identical on purpose so one parser path serves both
               profiles), every H200-specific value replaced (a value of the template that is not
               generic and not replaced makes this script fail), ECC counters 0, MIG Disabled,
               PCIe gen 4 x16. A100 numbers (80 GB: 131072 MiB BAR1, 869 MiB reserved, 640 remap
               banks) from public/qx_02 and public/ecc_02.
  nvlink -s    public/nvlink_03 (A100: `\\t Link N: 25 GB/s`, 12 links per GPU; every GPU here is
               bridged, so no `<inactive>` links)
  nvidia-smi   the 535 table layout (87-column frame, 22-column middle cells, blank line of spaces
               before the process box) as printed by 535.104.05, e.g. in public notebooks
  -L, --version, numactl -H   as h200_vm/smi_L.out, smi_version.out, numactl_H.out

    python3 tests/simulator/profiles/generate_a100x6.py          # (re)write the profile
    python3 tests/simulator/profiles/generate_a100x6.py --check  # fail if the committed one differs
"""

import os
import shutil
import sys
import tempfile
import uuid

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import _profiletools as pt  # noqa: E402

NAME = "a100x6_2numa"
H200 = os.path.join(pt.REAL, "h200_vm")

DRIVER = "535.104.05"
NVML = "535.104"
CUDA = "12.2"
TIMESTAMP = "Sun Nov 29 15:00:00 2026"
PRODUCT = "NVIDIA A100 80GB PCIe"
MEM_TOTAL = 81920
MEM_RESERVED = 869
MEM_USED = 0
BAR1 = 131072
BUSES = ["17", "31", "4B", "98", "B1", "CA"]
GPU_NODE = [0, 0, 0, 1, 1, 1]
NODES = [
    {"id": 0, "cpus": list(range(0, 32)), "mem_total_kb": 263759784, "mem_free_kb": 259338212},
    {"id": 1, "cpus": list(range(32, 64)), "mem_total_kb": 264211456, "mem_free_kb": 260987904},
]
DISTANCES = [[10, 21], [21, 10]]
NVLINK_PAIRS = [(0, 1), (2, 3), (4, 5)]
NV_LINKS = 12
NV_SPEED = "25 GB/s"
TEMPS = [31, 33, 32, 34, 30, 33]
POWER_AVG = ["44.27", "46.90", "45.12", "43.88", "47.31", "45.66"]
POWER_NOW = ["44.51", "46.72", "45.30", "43.95", "47.08", "45.49"]
MAX_GRAPHICS = 1410
MEM_CLOCK = 1512


def gpu_uuid(i):
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_URL, "gpu-fleet-sim/%s/gpu%d" % (NAME, i)))


def bus_id(i):
    return "00000000:%s:00.0" % BUSES[i]


def cpulist(node):
    return pt.format_cpulist(NODES[node]["cpus"])


def peer(i):
    for a, b in NVLINK_PAIRS:
        if i == a:
            return b
        if i == b:
            return a
    return None


def link_code(i, j):
    if i == j:
        return " X "
    if peer(i) == j:
        return "NV%d" % NV_LINKS
    return "NODE" if GPU_NODE[i] == GPU_NODE[j] else "SYS"


# --- topo -m ----------------------------------------------------------------------------------

def topo_m():
    legend = open(os.path.join(H200, "topo_m.out"), "rb").read().decode("utf-8")
    legend = legend[legend.index("\nLegend:"):]  # "\nLegend:\n\n  X    = Self ..." byte for byte
    n = len(BUSES)
    head = "\t\x1b[4m" + "\t".join(["GPU%d" % i for i in range(n)] + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]) + "\x1b[0m\n"
    rows = ""
    for i in range(n):
        cells = [link_code(i, j) for j in range(n)]
        rows += "GPU%d\t%s\t%s\t%d\t\tN/A\n" % (i, "\t".join(cells), cpulist(GPU_NODE[i]), GPU_NODE[i])
    return head + rows + legend


# --- nvlink -s --------------------------------------------------------------------------------

def nvlink_s():
    out = ""
    for i in range(len(BUSES)):
        out += "GPU %d: %s (UUID: %s)\n" % (i, PRODUCT, gpu_uuid(i))
        for link in range(NV_LINKS):
            out += "\t Link %d: %s\n" % (link, NV_SPEED if peer(i) is not None else "<inactive>")
    return out


# --- -L, --version ----------------------------------------------------------------------------

def smi_l():
    return "".join("GPU %d: %s (UUID: %s)\n" % (i, PRODUCT, gpu_uuid(i)) for i in range(len(BUSES)))


def smi_version():
    return ("NVIDIA-SMI version  : %s\nNVML version        : %s\nDRIVER version      : %s\nCUDA Version        : %s\n"
            % (DRIVER, NVML, DRIVER, CUDA))


# --- plain nvidia-smi (535 layout) ------------------------------------------------------------

def smi_table():
    sep = "+-----------------------------------------+----------------------+----------------------+"
    lines = [
        TIMESTAMP + "       ",
        "+---------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI %s             Driver Version: %s   CUDA Version: %s     |" % (DRIVER, DRIVER, CUDA),
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|=========================================+======================+======================|",
    ]
    for i in range(len(BUSES)):
        power = "%dW / %3dW" % (int(round(float(POWER_AVG[i]))), 300)
        lines.append("|%4d  %-31s%-3s | %s %3s | %20s |" % (i, PRODUCT, "On", bus_id(i), "Off", "0"))
        lines.append("| %3s  %3dC    %-2s%24s |%10s / %8s |%8s %12s |"
                     % ("N/A", TEMPS[i], "P0", power, "%dMiB" % MEM_USED, "%dMiB" % MEM_TOTAL, "0%", "Default"))
        lines.append("|                                         |                      | %20s |" % "Disabled")
        lines.append(sep)
    lines += [
        " " * 89,
        "+---------------------------------------------------------------------------------------+",
        "| Processes:                                                                            |",
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                             Usage      |",
        "|=======================================================================================|",
        "|  No running processes found                                                           |",
        "+---------------------------------------------------------------------------------------+",
    ]
    for line in lines[1:]:
        if len(line) != 89:
            raise ValueError("table line of %d columns: %r" % (len(line), line))
    return "".join(line + "\n" for line in lines)


# --- -q -x and -q from the H200 templates -----------------------------------------------------

def per_gpu(i):
    """Values of GPU i, by meaning; mapped to XML and text paths below."""
    b = BUSES[i]
    return {
        "bus_id": bus_id(i),
        "bus": b,
        "uuid": gpu_uuid(i),
        "serial": "1322821%06d" % (20417 + 131 * i),
        "pdi": "0x%016x" % (0x5a1c0e3e00000000 + 0x1000193 * (i + 1)),
        "board_id": "0x%x" % (int(b, 16) << 8),
        "minor": str(i),
        "temp": "%d C" % TEMPS[i],
        "mem_temp": "%d C" % (TEMPS[i] + 11),
        "power_avg": POWER_AVG[i] + " W",
        "power_now": POWER_NOW[i] + " W",
        "tx": "%d KB/s" % (212 + 17 * i),
        "rx": "%d KB/s" % (96 + 11 * i),
    }


def mhz(value):
    return "%d MHz" % value


def xml_values(g):
    return {
        "product_name": PRODUCT,
        "product_architecture": "Ampere",
        "display_mode": "Disabled",
        "display_attached": "No",
        "serial": g["serial"],
        "uuid": g["uuid"],
        "pdi": g["pdi"],
        "minor_number": g["minor"],
        "vbios_version": "92.00.68.00.01",
        "board_id": g["board_id"],
        "board_part_number": "692-2G500-0230-000",
        "gpu_part_number": "20B5-895-A1",
        "platformInfo/module_id": "1",
        "inforom_version/img_version": "G500.0230.00.05",
        "inforom_version/oem_object": "2.0",
        "inforom_version/ecc_object": "6.16",
        "gpu_virtualization_mode/virtualization_mode": "None",
        "gsp_firmware_version": DRIVER,
        "pci/pci_bus": g["bus"],
        "pci/pci_device": "00",
        "pci/pci_domain": "0000",
        "pci/pci_device_id": "20B510DE",
        "pci/pci_bus_id": g["bus_id"],
        "pci/pci_sub_system_id": "153310DE",
        "pci/pci_gpu_link_info/pcie_gen/max_link_gen": "4",
        "pci/pci_gpu_link_info/pcie_gen/current_link_gen": "4",
        "pci/pci_gpu_link_info/pcie_gen/device_current_link_gen": "4",
        "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen": "4",
        "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen": "4",
        "pci/pci_gpu_link_info/link_widths/max_link_width": "16x",
        "pci/pci_gpu_link_info/link_widths/current_link_width": "16x",
        "pci/replay_counter": "0",
        "pci/tx_util": g["tx"],
        "pci/rx_util": g["rx"],
        "fb_memory_usage/total": "%d MiB" % MEM_TOTAL,
        "fb_memory_usage/reserved": "%d MiB" % MEM_RESERVED,
        "fb_memory_usage/used": "%d MiB" % MEM_USED,
        "fb_memory_usage/free": "%d MiB" % (MEM_TOTAL - MEM_RESERVED - MEM_USED),
        "bar1_memory_usage/total": "%d MiB" % BAR1,
        "bar1_memory_usage/used": "1 MiB",
        "bar1_memory_usage/free": "%d MiB" % (BAR1 - 1),
        "remapped_rows/row_remapper_histogram/row_remapper_histogram_max": "640 bank(s)",
        "temperature/gpu_temp": g["temp"],
        "temperature/gpu_temp_tlimit": "N/A",
        "temperature/gpu_temp_max_tlimit_threshold": "N/A",
        "temperature/gpu_temp_slow_tlimit_threshold": "N/A",
        "temperature/gpu_temp_max_gpu_tlimit_threshold": "N/A",
        "temperature/memory_temp": g["mem_temp"],
        "temperature/gpu_temp_max_mem_tlimit_threshold": "N/A",
        "gpu_power_readings/average_power_draw": g["power_avg"],
        "gpu_power_readings/instant_power_draw": g["power_now"],
        "gpu_power_readings/current_power_limit": "300.00 W",
        "gpu_power_readings/requested_power_limit": "300.00 W",
        "gpu_power_readings/default_power_limit": "300.00 W",
        "gpu_power_readings/min_power_limit": "150.00 W",
        "gpu_power_readings/max_power_limit": "300.00 W",
        "gpu_memory_power_readings/average_power_draw": "N/A",
        "clocks/graphics_clock": mhz(210),
        "clocks/sm_clock": mhz(210),
        "clocks/mem_clock": mhz(MEM_CLOCK),
        "clocks/video_clock": mhz(795),
        "applications_clocks/graphics_clock": mhz(MAX_GRAPHICS),
        "applications_clocks/mem_clock": mhz(MEM_CLOCK),
        "default_applications_clocks/graphics_clock": mhz(MAX_GRAPHICS),
        "default_applications_clocks/mem_clock": mhz(MEM_CLOCK),
        "max_clocks/graphics_clock": mhz(MAX_GRAPHICS),
        "max_clocks/sm_clock": mhz(MAX_GRAPHICS),
        "max_clocks/mem_clock": mhz(MEM_CLOCK),
        "max_clocks/video_clock": mhz(1290),
        "max_customer_boost_clocks/graphics_clock": mhz(MAX_GRAPHICS),
    }


def supported_clocks_block(indent):
    t = indent
    lines = [t + "<supported_clocks>\n", t + "\t<supported_mem_clock>\n", t + "\t\t<value>%d MHz</value>\n" % MEM_CLOCK]
    for clk in range(MAX_GRAPHICS, 209, -15):
        lines.append(t + "\t\t<supported_graphics_clock>%d MHz</supported_graphics_clock>\n" % clk)
    lines += [t + "\t</supported_mem_clock>\n", t + "</supported_clocks>\n"]
    return lines


def text_values(g):
    x = xml_values(g)
    # text -q label path -> XML path of the same value (the H200 capture pairs them)
    pairs = {
        "Product Name": "product_name", "Product Architecture": "product_architecture",
        "Display Mode": "display_mode", "Display Attached": "display_attached",
        "Serial Number": "serial", "GPU UUID": "uuid", "GPU PDI": "pdi", "Minor Number": "minor_number",
        "VBIOS Version": "vbios_version", "Board ID": "board_id", "Board Part Number": "board_part_number",
        "GPU Part Number": "gpu_part_number", "Platform Info/Module Id": "platformInfo/module_id",
        "Inforom Version/Image Version": "inforom_version/img_version",
        "Inforom Version/OEM Object": "inforom_version/oem_object",
        "Inforom Version/ECC Object": "inforom_version/ecc_object",
        "GPU Virtualization Mode/Virtualization Mode": "gpu_virtualization_mode/virtualization_mode",
        "GSP Firmware Version": "gsp_firmware_version",
        "PCI/Bus Id": "pci/pci_bus_id",
        "PCI/GPU Link Info/PCIe Generation/Max": "pci/pci_gpu_link_info/pcie_gen/max_link_gen",
        "PCI/GPU Link Info/PCIe Generation/Current": "pci/pci_gpu_link_info/pcie_gen/current_link_gen",
        "PCI/GPU Link Info/PCIe Generation/Device Current": "pci/pci_gpu_link_info/pcie_gen/device_current_link_gen",
        "PCI/GPU Link Info/PCIe Generation/Device Max": "pci/pci_gpu_link_info/pcie_gen/max_device_link_gen",
        "PCI/GPU Link Info/PCIe Generation/Host Max": "pci/pci_gpu_link_info/pcie_gen/max_host_link_gen",
        "PCI/GPU Link Info/Link Width/Max": "pci/pci_gpu_link_info/link_widths/max_link_width",
        "PCI/GPU Link Info/Link Width/Current": "pci/pci_gpu_link_info/link_widths/current_link_width",
        "PCI/Replays Since Reset": "pci/replay_counter",
        "PCI/Tx Throughput": "pci/tx_util", "PCI/Rx Throughput": "pci/rx_util",
        "FB Memory Usage/Total": "fb_memory_usage/total", "FB Memory Usage/Reserved": "fb_memory_usage/reserved",
        "FB Memory Usage/Used": "fb_memory_usage/used", "FB Memory Usage/Free": "fb_memory_usage/free",
        "BAR1 Memory Usage/Total": "bar1_memory_usage/total", "BAR1 Memory Usage/Used": "bar1_memory_usage/used",
        "BAR1 Memory Usage/Free": "bar1_memory_usage/free",
        "Remapped Rows/Bank Remap Availability Histogram/Max":
            "remapped_rows/row_remapper_histogram/row_remapper_histogram_max",
        "Temperature/GPU Current Temp": "temperature/gpu_temp",
        "Temperature/GPU T.Limit Temp": "temperature/gpu_temp_tlimit",
        "Temperature/GPU Shutdown T.Limit Temp": "temperature/gpu_temp_max_tlimit_threshold",
        "Temperature/GPU Slowdown T.Limit Temp": "temperature/gpu_temp_slow_tlimit_threshold",
        "Temperature/GPU Max Operating T.Limit Temp": "temperature/gpu_temp_max_gpu_tlimit_threshold",
        "Temperature/Memory Current Temp": "temperature/memory_temp",
        "Temperature/Memory Max Operating T.Limit Temp": "temperature/gpu_temp_max_mem_tlimit_threshold",
        "GPU Power Readings/Average Power Draw": "gpu_power_readings/average_power_draw",
        "GPU Power Readings/Instantaneous Power Draw": "gpu_power_readings/instant_power_draw",
        "GPU Power Readings/Current Power Limit": "gpu_power_readings/current_power_limit",
        "GPU Power Readings/Requested Power Limit": "gpu_power_readings/requested_power_limit",
        "GPU Power Readings/Default Power Limit": "gpu_power_readings/default_power_limit",
        "GPU Power Readings/Min Power Limit": "gpu_power_readings/min_power_limit",
        "GPU Power Readings/Max Power Limit": "gpu_power_readings/max_power_limit",
        "GPU Memory Power Readings/Average Power Draw": "gpu_memory_power_readings/average_power_draw",
        "Clocks/Graphics": "clocks/graphics_clock", "Clocks/SM": "clocks/sm_clock",
        "Clocks/Memory": "clocks/mem_clock", "Clocks/Video": "clocks/video_clock",
        "Applications Clocks/Graphics": "applications_clocks/graphics_clock",
        "Applications Clocks/Memory": "applications_clocks/mem_clock",
        "Default Applications Clocks/Graphics": "default_applications_clocks/graphics_clock",
        "Default Applications Clocks/Memory": "default_applications_clocks/mem_clock",
        "Max Clocks/Graphics": "max_clocks/graphics_clock", "Max Clocks/SM": "max_clocks/sm_clock",
        "Max Clocks/Memory": "max_clocks/mem_clock", "Max Clocks/Video": "max_clocks/video_clock",
        "Max Customer Boost Clocks/Graphics": "max_customer_boost_clocks/graphics_clock",
    }
    out = dict((label, x[xpath]) for label, xpath in pairs.items())
    # the text form prints some values differently from the XML
    out.update({
        "PCI/Bus": "0x" + g["bus"], "PCI/Device": "0x00", "PCI/Domain": "0x0000",
        "PCI/Device Id": "0x20B510DE", "PCI/Sub System Id": "0x153310DE",
    })
    out.update({"PCI/Base Classcode": "0x3", "PCI/Sub Classcode": "0x2"})
    return out


def split_xml(text):
    lines = text.splitlines(True)
    first = next(n for n, l in enumerate(lines) if l.lstrip().startswith("<gpu "))
    last = max(n for n, l in enumerate(lines) if l.strip() == "</gpu>")
    return lines[:first], lines[first:last + 1], lines[last + 1:]


def q_x():
    template = open(os.path.join(H200, "q_x.out"), "rb").read().decode("utf-8")
    head, block, tail = split_xml(template)
    head = "".join(head)
    for old, new in (("<timestamp>Sun Nov 29 14:42:26 2026</timestamp>", "<timestamp>%s</timestamp>" % TIMESTAMP),
                     ("<driver_version>580.159.04</driver_version>", "<driver_version>%s</driver_version>" % DRIVER),
                     ("<cuda_version>13.0</cuda_version>", "<cuda_version>%s</cuda_version>" % CUDA),
                     ("<attached_gpus>1</attached_gpus>", "<attached_gpus>%d</attached_gpus>" % len(BUSES))):
        if old not in head:
            raise ValueError("XML template head lacks %r" % old)
        head = head.replace(old, new)
    # tail is "\n</nvidia_smi_log>\n": one blank line after each </gpu> (as qx_03 shows for 8 GPUs)
    if "".join(tail) != "\n</nvidia_smi_log>\n":
        raise ValueError("unexpected XML tail %r" % "".join(tail))
    indent = block[0][: len(block[0]) - len(block[0].lstrip())] + "\t"
    body = ""
    for i in range(len(BUSES)):
        g = per_gpu(i)
        lines = list(block)
        lines[0] = lines[0].replace('id="00000000:00:06.0"', 'id="%s"' % g["bus_id"])
        lines = pt.rewrite_xml_block(lines, xml_values(g),
                                     replace_blocks={"supported_clocks": supported_clocks_block(indent)})
        body += "".join(lines) + "\n"
    return head + body + "</nvidia_smi_log>\n"


def q_text():
    template = open(os.path.join(H200, "q.out"), "rb").read().decode("utf-8")
    lines = template.splitlines(True)
    first = next(n for n, l in enumerate(lines) if l.startswith("GPU 0000"))
    head = "".join(lines[:first])
    block = lines[first + 1:]
    if block[-1] != "\n":
        raise ValueError("the -q template should end with a blank line")
    block = block[:-1]
    for old, new in (("Sun Nov 29 14:42:26 2026", TIMESTAMP), (": 580.159.04\n", ": %s\n" % DRIVER),
                     (": 13.0\n", ": %s\n" % CUDA), (": 1\n", ": %d\n" % len(BUSES))):
        if head.count(old) != 1:
            raise ValueError("-q template head: %r found %d times" % (old, head.count(old)))
        head = head.replace(old, new)
    body = ""
    for i in range(len(BUSES)):
        g = per_gpu(i)
        body += "GPU %s\n" % g["bus_id"] + "".join(pt.rewrite_text_block(block, text_values(g))) + "\n"
    return head + body


# --- everything -------------------------------------------------------------------------------

FORBIDDEN = ["H200", "Hopper", "580.159", "143771", "00:06.0", "96.00.A5", "2335", "233510DE", "18BF10DE",
             "G520", "700.00 W", "3201 MHz", "1980 MHz", "Pass-Through", "13.0", "3072 bank"]


def build(dest):
    files = {
        "topo_m.out": topo_m(),
        "q_x.out": q_x(),
        "q.out": q_text(),
        "nvlink_s.out": nvlink_s(),
        "smi.out": smi_table(),
        "smi_L.out": smi_l(),
        "smi_version.out": smi_version(),
        "numactl_H.out": pt.numactl_hardware(NODES, DISTANCES),
    }
    files["query_gpu.csv"] = pt.derive_query_table(files["q_x.out"], [{"compute_cap": "8.0"}] * len(BUSES))
    for name, text in files.items():
        for bad in FORBIDDEN:
            if bad in text:
                raise ValueError("%s still holds the H200 value %r" % (name, bad))
        pt.write_text(os.path.join(dest, name), text)
    gpus = [{"bus_id": bus_id(i), "numa_node": GPU_NODE[i], "local_cpulist": cpulist(GPU_NODE[i]),
             "extra": {"vendor": "0x10de", "device": "0x20b5", "class": "0x030200",
                       "current_link_speed": "16.0 GT/s PCIe", "current_link_width": "16",
                       "max_link_speed": "16.0 GT/s PCIe", "max_link_width": "16"}}
            for i in range(len(BUSES))]
    nodes = [dict(n, cpulist=pt.format_cpulist(n["cpus"])) for n in NODES]
    pt.write_sysfs(os.path.join(dest, "sysfs"), gpus, nodes)
    pt.write_json(os.path.join(dest, "meta.json"), {
        "name": NAME,
        "generated": True,
        "source": "tests/simulator/profiles/generate_a100x6.py (formats learned from tests/fixtures/real: "
                  "h200_vm/ and public/nvlink_03, qx_02, ecc_02); NOT a capture",
        "description": "6x NVIDIA A100 80GB PCIe (81920 MiB), driver %s, CUDA %s; NVLink bridges 0-1, 2-3, 4-5 "
                       "(NV12); GPUs 0-2 on NUMA node 0 (CPUs 0-31), 3-5 on NUMA node 1 (CPUs 32-63), so the "
                       "2-3 bridge crosses the sockets; other pairs NODE within a socket, SYS across." % (DRIVER, CUDA),
        "gpus": [{"index": i, "pci_bus_id": bus_id(i), "uuid": gpu_uuid(i), "numa_node": GPU_NODE[i],
                  "nvlink_peer": peer(i)} for i in range(len(BUSES))],
        "notes": "-q -x / -q reuse the element and line structure of the real 580-driver capture "
                 "(nvsmi_device_v13.dtd) although the driver version is 535.",
    })


def main(argv):
    here = os.path.dirname(os.path.abspath(__file__))
    dest = os.path.join(here, NAME)
    if "--check" in argv:
        import make_real_profile
        tmp = tempfile.mkdtemp()
        try:
            build(os.path.join(tmp, NAME))
            ok = make_real_profile.same_tree(os.path.join(tmp, NAME), dest) and make_real_profile.same_tree(dest, os.path.join(tmp, NAME))
        finally:
            shutil.rmtree(tmp)
        print("%s: %s" % (NAME, "up to date" if ok else "DIFFERS from generate_a100x6.py output"))
        return 0 if ok else 1
    if os.path.isdir(dest):
        shutil.rmtree(dest)
    build(dest)
    print("wrote %s" % dest)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
