# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Build the simulated-host profiles that replay REAL captures (tests/fixtures/real/<capture>/).

Every nvidia-smi output is copied byte for byte (nothing generated); the only derived pieces are
 - sysfs/ : from the capture's PCI listing (pci_gpus.out or pci_devices.out: each NVIDIA display/3D
   controller's numa_node, local_cpulist and link speeds) and nodes.out (node cpulists, online);
   node meminfo's MemTotal/MemFree come from numactl_H.out ("node 0 size: 4443 MB" -> 4443*1024 kB),
   the captures hold no meminfo;
 - query_gpu.csv : the per-GPU field table for --query-gpu field lists other than the captured one,
   derived from q_x.out (the captured query_gpu.out must be reproduced from it: checked below);
 - meta.json : name, generated=false, source, and a "replay" entry for each other captured
   nvidia-smi command of commands.tsv with its exit code (e.g. `-q -d PCI` exits 2 on h200_vm).

    python3 tests/simulator/profiles/make_real_profile.py [NAME ...]          # (re)write profiles
    python3 tests/simulator/profiles/make_real_profile.py --check [NAME ...]  # fail if a committed one differs
"""

import csv
import os
import shlex
import shutil
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
# the collection's own KEY=VALUE reader (pure, no Ansible imports)
sys.path.insert(0, os.path.join(HERE, "..", "..", "..", "plugins", "module_utils"))
import _profiletools as pt  # noqa: E402
from _host_readings import key_values  # noqa: E402

PROFILES = {
    "h200_vm": {
        "capture": "h200_vm",
        "pci": "pci_gpus.out",
        "source": "tests/fixtures/real/h200_vm (captured on a real NVIDIA H200 VM: Ubuntu 24.04, driver "
                  "580.159.04, CUDA 13.0); built by tests/simulator/profiles/make_real_profile.py",
        "description": "One NVIDIA H200 (143771 MiB) in a VM without NUMA information (GPU sysfs numa_node -1, "
                       "one node, CPUs 0-15), no NVLink exposed (nvlink -s prints nothing). All nvidia-smi "
                       "outputs are the real capture, byte for byte.",
    },
    "h200x2_nvlink": {
        "capture": "h200x2_nvlink",
        "pci": "pci_devices.out",
        "source": "tests/fixtures/real/h200x2_nvlink (captured 2026-11-29 on a real 2x NVIDIA H200 VM: Ubuntu "
                  "24.04, driver 580.159.04, CUDA 13.0, by tests/hardware/run_on_device.sh); built by "
                  "tests/simulator/profiles/make_real_profile.py",
        "description": "Two NVIDIA H200 (143771 MiB each) joined by NV18 (18 NVLinks at 26.562 GB/s each), "
                       "PHB in the PCIe-only view (topo -mp); one NUMA node with CPUs 0-31; GPU sysfs "
                       "numa_node -1 (topo -m's NUMA Affinity 0 decides). All nvidia-smi outputs are the real "
                       "capture, byte for byte.",
    },
    "h200x4_nvswitch": {
        "capture": "h200x4_nvswitch",
        "pci": "pci_devices.out",
        "source": "tests/fixtures/real/h200x4_nvswitch (captured 2026-11-29 on a real 4x NVIDIA H200 VM: Ubuntu "
                  "24.04, driver 580.159.04, CUDA 13.0, by tests/hardware/run_on_device.sh); built by "
                  "tests/simulator/profiles/make_real_profile.py",
        "description": "Four NVIDIA H200 (143771 MiB each), every pair NV18 (all-to-all, NVSwitch fabric), PHB in "
                       "the PCIe-only view (topo -mp); one NUMA node with CPUs 0-63; GPU sysfs numa_node -1. All "
                       "nvidia-smi outputs are the real capture, byte for byte.",
    },
}

# files replayed by the standard commands of the simulated nvidia-smi (same names in the profile)
STANDARD = ["topo_m.out", "topo_mp.out", "q_x.out", "q.out", "nvlink_s.out", "smi.out", "smi_L.out",
            "smi_version.out", "query_gpu.out", "numactl_H.out"]
# commands.tsv entries answered by the standard command table (no replay entry needed)
STANDARD_COMMANDS = {"topo_m.out", "topo_mp.out", "q_x.out", "q.out", "nvlink_s.out", "smi.out", "smi_L.out",
                     "smi_version.out", "query_gpu.out"}

NAME = SRC = CONF = None  # set per profile by select()


def select(name):
    global NAME, SRC, CONF
    NAME, CONF = name, PROFILES[name]
    SRC = os.path.join(pt.REAL, CONF["capture"])


def read(name):
    with open(os.path.join(SRC, name), "rb") as handle:
        return handle.read()


def parse_kv(line):
    """The ``key=value`` fields of one listing line (pci_gpus.out, nodes.out)."""
    return key_values(line.split())


def build(dest):
    for name in STANDARD:
        if os.path.exists(os.path.join(SRC, name)):
            pt.write_bytes(os.path.join(dest, name), read(name))

    # commands.tsv: file <TAB> rc <TAB> command
    replay = []
    query_fields = None
    with open(os.path.join(SRC, "commands.tsv"), newline="") as handle:
        for row in csv.DictReader(handle, delimiter="\t"):
            argv = shlex.split(row["command"])
            if argv[0] != "nvidia-smi":
                continue
            if row["file"] == "query_gpu.out":
                query_fields = [a for a in argv if a.startswith("--query-gpu=")][0].split("=", 1)[1].split(",")
                query_format = [a for a in argv if a.startswith("--format=")][0].split("=", 1)[1]
                if int(row["rc"]) != 0:
                    raise SystemExit("query_gpu.out was captured with rc %s" % row["rc"])
            if row["file"] in STANDARD_COMMANDS:
                if int(row["rc"]) != 0:
                    raise SystemExit("%s was captured with rc %s; the standard table assumes 0" % (row["file"], row["rc"]))
                continue
            pt.write_bytes(os.path.join(dest, row["file"]), read(row["file"]))
            if argv[1:] == ["nvlink", "--status"]:
                key = "nvlink-s"  # same command as `nvlink -s`: a fault planted for nvlink-s hits both
            elif argv[1].startswith("--query-"):
                key = argv[1].lstrip("-").split("=")[0]
            else:
                key = "-".join(a.lstrip("-") for a in argv[1:]).lower().replace(",", "_")
            replay.append({"argv": argv[1:], "file": row["file"], "rc": int(row["rc"]), "key": key})

    # sysfs from the PCI listing / nodes.out: NVIDIA (0x10de) display/3D controllers (class 0x03....)
    gpus = []
    for line in read(CONF["pci"]).decode("utf-8").splitlines():
        path = line.split()[0]
        kv = parse_kv(line.split(" ", 1)[1].replace(" GT/s PCIe", "_GT/s_PCIe"))
        if kv.get("vendor") != "0x10de" or not kv.get("class", "").startswith("0x03"):
            continue
        pci = os.path.basename(path)
        domain, bus, devfn = pci.split(":")
        gpus.append({
            "bus_id": "%08X:%s:%s" % (int(domain, 16), bus.upper(), devfn.upper()),
            "numa_node": int(kv["numa_node"]),
            "local_cpulist": kv["local_cpulist"],
            "extra": {"vendor": kv["vendor"], "class": kv["class"],
                      "current_link_speed": kv["speed"].replace("_", " "),
                      "current_link_width": kv["width"],
                      "max_link_speed": kv["max_speed"].replace("_", " ")},
        })
    node_lines = read("nodes.out").decode("utf-8").splitlines()
    sizes = {}
    for line in read("numactl_H.out").decode("utf-8").splitlines():
        parts = line.split()
        if len(parts) == 5 and parts[0] == "node" and parts[2] in ("size:", "free:"):
            sizes[(int(parts[1]), parts[2][:-1])] = int(parts[3]) * 1024
    nodes = []
    for line in node_lines:
        if line.startswith("/sys/devices/system/node/node"):
            nid = int(line.split()[0].rsplit("node", 1)[1])
            cpulist = parse_kv(line)["cpulist"]
            nodes.append({"id": nid, "cpulist": cpulist,
                          "mem_total_kb": sizes[(nid, "size")], "mem_free_kb": sizes[(nid, "free")]})
    online = node_lines[-1].strip()
    pt.write_sysfs(os.path.join(dest, "sysfs"), gpus, nodes)
    with open(os.path.join(dest, "sysfs", "devices", "system", "node", "online")) as handle:
        if handle.read().strip() != online:
            raise SystemExit("node/online mismatch with nodes.out")

    # per-GPU table; the captured query must be reproducible from it
    caps = [{"compute_cap": row.split(", ")[-1]} for row in read("query_gpu.out").decode("utf-8").splitlines()[1:]]
    table = pt.derive_query_table(read("q_x.out").decode("utf-8"), caps)
    pt.write_text(os.path.join(dest, "query_gpu.csv"), table)
    check_query_table(table, query_fields, read("query_gpu.out").decode("utf-8"))

    pt.write_json(os.path.join(dest, "meta.json"), {
        "name": NAME,
        "generated": False,
        "source": CONF["source"],
        "description": CONF["description"],
        "derived": {
            "sysfs": "from %s and nodes.out; node meminfo from numactl_H.out sizes" % CONF["pci"],
            "query_gpu.csv": "from q_x.out (+ compute_cap from query_gpu.out); reproduces query_gpu.out",
        },
        "query_gpu_captured": {"fields": query_fields, "format": query_format, "file": "query_gpu.out"},
        "replay": replay,
    })


def check_query_table(table, fields, captured):
    lines = table.splitlines()
    header = lines[0].split(", ")
    names = [h.split(" [")[0] for h in header]
    rows = [l.split(", ") for l in lines[1:]]
    want_header = ", ".join(header[names.index(f)] for f in fields)
    want_rows = [", ".join(r[names.index(f)] for f in fields) for r in rows]
    rebuilt = want_header + "\n" + "".join(r + "\n" for r in want_rows)
    if rebuilt != captured:
        raise SystemExit("query_gpu.csv does not reproduce the captured query_gpu.out:\n%s---\n%s" % (rebuilt, captured))


def same_tree(a, b):
    for base, dirs, files in os.walk(a):
        rel = os.path.relpath(base, a)
        other = os.path.join(b, rel)
        if not os.path.isdir(other) or sorted(files) != sorted(
                f for f in os.listdir(other) if os.path.isfile(os.path.join(other, f))):
            return False
        for f in files:
            with open(os.path.join(base, f), "rb") as x, open(os.path.join(other, f), "rb") as y:
                if x.read() != y.read():
                    return False
    return True


def main(argv):
    check = "--check" in argv
    names = [a for a in argv if not a.startswith("--")] or sorted(PROFILES)
    status = 0
    for name in names:
        select(name)
        dest = os.path.join(os.path.dirname(os.path.abspath(__file__)), NAME)
        if check:
            tmp = tempfile.mkdtemp()
            try:
                build(os.path.join(tmp, NAME))
                ok = same_tree(os.path.join(tmp, NAME), dest) and same_tree(dest, os.path.join(tmp, NAME))
            finally:
                shutil.rmtree(tmp)
            print("%s: %s" % (NAME, "up to date" if ok else "DIFFERS from make_real_profile.py output"))
            status = status or (0 if ok else 1)
            continue
        if os.path.isdir(dest):
            shutil.rmtree(dest)
        build(dest)
        print("wrote %s" % dest)
    return status


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
