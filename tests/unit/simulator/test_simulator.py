# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Controller-side tests of the simulated GPU hosts' pieces (no container needed):
the simulated nvidia-smi, the numactl bridge and the two profiles.

    .venv/bin/pytest tests/unit/simulator -q

Expected values come from reading the real fixtures (tests/fixtures/real/h200_vm) or from the
a100x6_2numa specification (tests/simulator/README.md), never from running the code under test.
"""

import ast
import json
import os
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET

import pytest

SIM = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "simulator"))
REPO = os.path.abspath(os.path.join(SIM, "..", ".."))
REAL = os.path.join(REPO, "tests", "fixtures", "real", "h200_vm")
PROFILES = os.path.join(SIM, "profiles")
NVSMI = os.path.join(SIM, "bin", "nvidia-smi")
NUMACTL = os.path.join(SIM, "bin", "numactl")

H200_FILES = ["topo_m.out", "q_x.out", "q.out", "nvlink_s.out", "smi.out", "smi_L.out", "smi_version.out",
              "query_gpu.out", "numactl_H.out"]


def read(path):
    with open(path, "rb") as handle:
        return handle.read()


def run(script, args, profile, log_dir=None, env=None):
    e = dict(os.environ)
    e["GPU_SIM_PROFILE"] = profile
    e["GPU_SIM_LOG_DIR"] = log_dir or "/nonexistent-gpu-sim-log"
    e.update(env or {})
    return subprocess.run([sys.executable, script] + args, env=e, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          check=False)


@pytest.fixture
def h200():
    return os.path.join(PROFILES, "h200_vm")


@pytest.fixture
def a100():
    return os.path.join(PROFILES, "a100x6_2numa")


# --- profiles ---------------------------------------------------------------------------------

@pytest.mark.parametrize("name", H200_FILES)
def test_h200_profile_is_the_real_capture(name):
    assert read(os.path.join(PROFILES, "h200_vm", name)) == read(os.path.join(REAL, name))


@pytest.mark.parametrize("script", ["make_real_profile.py", "generate_a100x6.py"])
def test_committed_profiles_match_their_builders(script):
    res = subprocess.run([sys.executable, os.path.join(PROFILES, script), "--check"],
                         stdout=subprocess.PIPE, stderr=subprocess.STDOUT, check=False)
    assert res.returncode == 0, res.stdout.decode()


def test_h200_sysfs_from_the_capture(h200):
    # pci_gpus.out: 0000:00:06.0 numa_node=-1 local_cpulist=0-15; nodes.out: node0 cpulist=0-15, online 0
    dev = os.path.join(h200, "sysfs", "bus", "pci", "devices", "0000:00:06.0")
    assert read(os.path.join(dev, "numa_node")) == b"-1\n"
    assert read(os.path.join(dev, "local_cpulist")) == b"0-15\n"
    node = os.path.join(h200, "sysfs", "devices", "system", "node")
    assert read(os.path.join(node, "node0", "cpulist")) == b"0-15\n"
    assert read(os.path.join(node, "online")) == b"0\n"
    # numactl_H.out: node 0 size 4443 MB
    assert read(os.path.join(node, "node0", "meminfo")).startswith(b"Node 0 MemTotal:        %d kB\n" % (4443 * 1024))
    meta = json.loads(read(os.path.join(h200, "meta.json")))
    assert meta["name"] == "h200_vm" and meta["generated"] is False


A100_BUS = ["17", "31", "4B", "98", "B1", "CA"]
A100_NODE = [0, 0, 0, 1, 1, 1]
A100_PEER = {0: 1, 1: 0, 2: 3, 3: 2, 4: 5, 5: 4}


def test_a100_meta_and_sysfs(a100):
    meta = json.loads(read(os.path.join(a100, "meta.json")))
    assert meta["name"] == "a100x6_2numa" and meta["generated"] is True
    for i, bus in enumerate(A100_BUS):
        dev = os.path.join(a100, "sysfs", "bus", "pci", "devices", "0000:%s:00.0" % bus.lower())
        assert read(os.path.join(dev, "numa_node")) == b"%d\n" % A100_NODE[i]
        assert read(os.path.join(dev, "local_cpulist")) == (b"0-31\n" if A100_NODE[i] == 0 else b"32-63\n")
    node = os.path.join(a100, "sysfs", "devices", "system", "node")
    assert read(os.path.join(node, "node0", "cpulist")) == b"0-31\n"
    assert read(os.path.join(node, "node1", "cpulist")) == b"32-63\n"
    assert read(os.path.join(node, "online")) == b"0-1\n"
    assert read(os.path.join(node, "node1", "meminfo")).startswith(b"Node 1 MemTotal: ")


def test_a100_topo_m_format(a100, h200):
    text = read(os.path.join(a100, "topo_m.out")).decode()
    lines = text.split("\n")
    names = ["GPU%d" % i for i in range(6)]
    assert lines[0] == "\t\x1b[4m" + "\t".join(names + ["CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]) + "\x1b[0m"
    for i in range(6):
        cells = lines[1 + i].split("\t")
        assert cells[0] == "GPU%d" % i
        for j in range(6):
            if i == j:
                want = " X "
            elif A100_PEER[i] == j:
                want = "NV12"
            elif A100_NODE[i] == A100_NODE[j]:
                want = "NODE"
            else:
                want = "SYS"
            assert cells[1 + j] == want, (i, j)
        # CPU affinity, NUMA affinity, then the double tab before GPU NUMA ID (as the H200 row)
        assert cells[7:] == ["0-31" if A100_NODE[i] == 0 else "32-63", str(A100_NODE[i]), "", "N/A"]
    legend = read(os.path.join(h200, "topo_m.out")).decode()
    assert text[text.index("\nLegend:"):] == legend[legend.index("\nLegend:"):]


def test_a100_nvlink_s_format(a100):
    lines = read(os.path.join(a100, "nvlink_s.out")).decode().split("\n")
    assert lines[-1] == ""
    blocks = [l for l in lines if l.startswith("GPU ")]
    assert len(blocks) == 6 and all("NVIDIA A100 80GB PCIe (UUID: GPU-" in b for b in blocks)
    links = [l for l in lines if l.startswith("\t Link ")]
    assert len(links) == 6 * 12
    assert links[0] == "\t Link 0: 25 GB/s" and links[11] == "\t Link 11: 25 GB/s"


def test_a100_q_x(a100):
    root = ET.fromstring(read(os.path.join(a100, "q_x.out")))
    assert root.findtext("driver_version") == "535.104.05"
    assert root.findtext("cuda_version") == "12.2"
    assert root.findtext("attached_gpus") == "6"
    gpus = root.findall("gpu")
    assert [g.get("id") for g in gpus] == ["00000000:%s:00.0" % b for b in A100_BUS]
    for n, g in enumerate(gpus):
        assert g.findtext("product_name") == "NVIDIA A100 80GB PCIe"
        assert g.findtext("minor_number") == str(n)
        assert g.findtext("fb_memory_usage/total") == "81920 MiB"
        assert g.findtext("mig_mode/current_mig") == "Disabled"
        assert g.findtext("pci/pci_gpu_link_info/pcie_gen/current_link_gen") == "4"
        assert g.findtext("pci/pci_gpu_link_info/link_widths/current_link_width") == "16x"
        counters = [el for el in g.find("ecc_errors").iter() if len(el) == 0 and "correctable" in el.tag]
        assert len(counters) == 10 and all(el.text == "0" for el in counters)
    # same element structure as the real H200 capture
    h200 = ET.fromstring(read(os.path.join(REAL, "q_x.out"))).find("gpu")

    def tags(gpu):
        return [el.tag for el in gpu.iter() if el.tag not in ("supported_mem_clock", "value",
                                                              "supported_graphics_clock")]

    assert tags(gpus[0]) == tags(h200)


def test_a100_smi_table_columns(a100):
    lines = read(os.path.join(a100, "smi.out")).decode().split("\n")
    assert lines[-1] == "" and lines[0].endswith("2026       ")
    frame = lines[1:-1]
    assert all(len(l) == 89 for l in frame)
    header_bars = [i for i, c in enumerate(frame[3]) if c == "|"]
    gpu_rows = [l for l in frame if "NVIDIA A100 80GB PCIe" in l or l.startswith("| N/A")]
    assert len(gpu_rows) == 12
    for row in gpu_rows:
        assert [i for i, c in enumerate(row) if c == "|"] == header_bars, row
    assert any(l.startswith("|   3  NVIDIA A100 80GB PCIe          On  | 00000000:98:00.0 Off |") for l in frame)


def test_profile_scripts_run_on_python39():
    for path in (NVSMI, NUMACTL, os.path.join(PROFILES, "_profiletools.py")):
        ast.parse(read(path).decode(), path, feature_version=(3, 9))


# --- simulated nvidia-smi ---------------------------------------------------------------------

@pytest.mark.parametrize("args,name", [
    (["topo", "-m"], "topo_m.out"), (["-q", "-x"], "q_x.out"), (["-x", "-q"], "q_x.out"), (["-q"], "q.out"),
    (["nvlink", "-s"], "nvlink_s.out"), (["nvlink", "--status"], "nvlink_s.out"), ([], "smi.out"),
    (["-L"], "smi_L.out"), (["--version"], "smi_version.out"),
])
def test_nvsmi_replays_the_h200_capture(h200, args, name):
    res = run(NVSMI, args, h200)
    assert res.returncode == 0 and res.stderr == b""
    assert res.stdout == read(os.path.join(REAL, name))


def test_nvsmi_replays_captured_exit_code(h200):
    # commands.tsv: `nvidia-smi -q -d PCI` exited 2
    res = run(NVSMI, ["-q", "-d", "PCI"], h200)
    assert res.returncode == 2 and res.stdout == read(os.path.join(REAL, "q_pcie.out"))


def test_nvsmi_query_gpu_captured_list_replays(h200):
    fields = ("index,name,uuid,pci.bus_id,driver_version,memory.total,memory.used,ecc.mode.current,"
              "ecc.errors.corrected.volatile.total,ecc.errors.uncorrected.volatile.total,"
              "ecc.errors.uncorrected.aggregate.total,pcie.link.gen.current,pcie.link.width.current,"
              "persistence_mode,compute_cap")
    res = run(NVSMI, ["--query-gpu=" + fields, "--format=csv"], h200)
    assert res.returncode == 0 and res.stdout == read(os.path.join(REAL, "query_gpu.out"))


def test_nvsmi_query_gpu_computed(h200, a100):
    # h200 q_x.out: product_name NVIDIA H200, fb total 143771 MiB, bus 00000000:00:06.0
    res = run(NVSMI, ["--query-gpu=name,memory.total,gpu_bus_id", "--format=csv,noheader,nounits"], h200)
    assert res.returncode == 0 and res.stdout == b"NVIDIA H200, 143771, 00000000:00:06.0\n"
    res = run(NVSMI, ["--query-gpu", "index,memory.total", "--format", "csv"], h200)
    assert res.stdout == b"index, memory.total [MiB]\n0, 143771 MiB\n"
    res = run(NVSMI, ["--query-gpu=index,pci.bus_id,memory.total", "--format=csv,noheader"], a100)
    assert res.stdout.decode().splitlines() == [
        "%d, 00000000:%s:00.0, 81920 MiB" % (i, b) for i, b in enumerate(A100_BUS)]
    res = run(NVSMI, ["--query-gpu=index", "--format=csv,noheader", "-i", "3"], a100)
    assert res.stdout == b"3\n"


@pytest.mark.parametrize("args,rc,out", [
    (["--bogus"], 2, b"ERROR: Option --bogus is not recognized. Please run 'nvidia-smi -h' for help.\n\n"),
    (["--query-gpu=index,cuda_version", "--format=csv"], 2, b'Field "cuda_version" is not a valid field to query.\n\n'),
    (["--query-gpu=index"], 2, b'"--format=" switch is missing. Please run \'nvidia-smi -h\' for help.\n\n'),
    (["-i"], 2, b"ERROR: Option -i is missing its value. Please run 'nvidia-smi -h' for help.\n\n"),
])
def test_nvsmi_usage_errors(a100, args, rc, out):
    res = run(NVSMI, args, a100)
    assert res.returncode == rc and res.stdout == out


def test_nvsmi_missing_capture_is_said_not_faked(h200):
    res = run(NVSMI, ["topo", "-mp"], h200)
    assert res.returncode != 0 and res.stdout == b"" and b"not simulated" in res.stderr


def test_nvsmi_faults(tmp_path, a100):
    prof = str(tmp_path / "p")
    shutil.copytree(a100, prof)
    os.mkdir(os.path.join(prof, "faults"))
    # public/smi_fail_04: NVML mismatch, exit status 18
    with open(os.path.join(prof, "faults", "all.out"), "w") as handle:
        handle.write("Failed to initialize NVML: Driver/library version mismatch\n")
    with open(os.path.join(prof, "faults", "all.rc"), "w") as handle:
        handle.write("18\n")
    with open(os.path.join(prof, "faults", "nvlink-s.rc"), "w") as handle:
        handle.write("3\n")
    for args in (["topo", "-m"], ["-q", "-x"], ["-L"]):
        res = run(NVSMI, args, prof)
        assert res.returncode == 18
        assert res.stdout == b"Failed to initialize NVML: Driver/library version mismatch\n"
    res = run(NVSMI, ["nvlink", "-s"], prof)  # key-specific fault wins: normal output, rc 3
    assert res.returncode == 3 and res.stdout == read(os.path.join(a100, "nvlink_s.out"))


def test_nvsmi_logs_calls(tmp_path, a100):
    run(NVSMI, ["topo", "-m"], a100, log_dir=str(tmp_path))
    run(NVSMI, ["-q", "-x"], a100, log_dir=str(tmp_path))
    records = [json.loads(l) for l in (tmp_path / "nvidia-smi.jsonl").read_text().splitlines()]
    assert [r["argv"] for r in records] == [["nvidia-smi", "topo", "-m"], ["nvidia-smi", "-q", "-x"]]
    assert [r["rc"] for r in records] == [0, 0]


# --- numactl bridge ---------------------------------------------------------------------------

def test_numactl_hardware_replays_profile(h200, a100):
    res = run(NUMACTL, ["-H"], h200)
    assert res.returncode == 0 and res.stdout == read(os.path.join(REAL, "numactl_H.out"))
    res = run(NUMACTL, ["--hardware"], a100)
    assert res.stdout.startswith(b"available: 2 nodes (0-1)\nnode 0 cpus: 0 1 2 ")


def test_numactl_binds_nothing_but_validates_and_logs(tmp_path, a100):
    res = run(NUMACTL, ["--cpunodebind=1", "--membind=1", sys.executable, "-c", "print('ran')"], a100,
              log_dir=str(tmp_path))
    assert res.returncode == 0 and res.stdout == b"ran\n"
    res = run(NUMACTL, ["-N", "2", "-m", "2", "true"], a100, log_dir=str(tmp_path))
    assert res.returncode == 1 and b"<2> is invalid" in res.stderr
    res = run(NUMACTL, ["--physcpubind=64", "true"], a100, log_dir=str(tmp_path))
    assert res.returncode == 1 and b"cpu argument 64 is out of range" in res.stderr
    res = run(NUMACTL, ["--physcpubind=32-63", "true"], a100, log_dir=str(tmp_path))
    assert res.returncode == 0
    records = [json.loads(l) for l in (tmp_path / "numactl.jsonl").read_text().splitlines()]
    assert records[0]["action"] == "exec"
    assert records[0]["binding"] == {"cpunodebind": [1], "membind": [1]}
    assert records[0]["argv"][:3] == ["numactl", "--cpunodebind=1", "--membind=1"]
    assert [r["action"] for r in records[1:]] == ["invalid", "invalid", "exec"]


def test_numactl_node1_invalid_on_single_node_profile(h200):
    res = run(NUMACTL, ["--cpunodebind=1", "true"], h200)
    assert res.returncode == 1 and b"libnuma: Warning: node argument 1 is out of range" in res.stderr


# --- h200x2_nvlink: the real 2x H200 NV18 capture -------------------------------------------------

H200X2_REAL = os.path.join(REPO, "tests", "fixtures", "real", "h200x2_nvlink")


@pytest.mark.parametrize("args, name", [
    (["topo", "-m"], "topo_m.out"),
    (["topo", "-mp"], "topo_mp.out"),
    (["nvlink", "-s"], "nvlink_s.out"),
    (["nvlink", "--status"], "nvlink_status.out"),
    (["-q", "-x"], "q_x.out"),
    ([], "smi.out"),
])
def test_nvsmi_replays_the_h200x2_capture(args, name):
    res = run(NVSMI, args, os.path.join(PROFILES, "h200x2_nvlink"))
    assert res.returncode == 0, res.stderr
    assert res.stdout == read(os.path.join(H200X2_REAL, name))


def test_h200x2_sysfs_from_the_capture():
    # pci_devices.out: GPUs 0000:00:06.0 and 0000:00:07.0, numa_node=-1, local_cpulist=0-31; the virtio
    # NIC 0000:00:03.0 is not a GPU and is left out; nodes.out: node0 cpulist=0-31
    devices = os.path.join(PROFILES, "h200x2_nvlink", "sysfs", "bus", "pci", "devices")
    assert sorted(os.listdir(devices)) == ["0000:00:06.0", "0000:00:07.0"]
    for dev in os.listdir(devices):
        assert read(os.path.join(devices, dev, "numa_node")) == b"-1\n"
        assert read(os.path.join(devices, dev, "local_cpulist")) == b"0-31\n"
    node = os.path.join(PROFILES, "h200x2_nvlink", "sysfs", "devices", "system", "node")
    assert read(os.path.join(node, "node0", "cpulist")) == b"0-31\n"
    # numactl_H.out: node 0 size 4699 MB
    assert read(os.path.join(node, "node0", "meminfo")).startswith(b"Node 0 MemTotal:        %d kB\n" % (4699 * 1024))


@pytest.mark.parametrize("args, name", [(["topo", "-m"], "topo_m.out"), (["topo", "-mp"], "topo_mp.out"),
                                        (["nvlink", "-s"], "nvlink_s.out"), (["-q", "-x"], "q_x.out")])
def test_nvsmi_replays_the_h200x4_capture(args, name):
    res = run(NVSMI, args, os.path.join(PROFILES, "h200x4_nvswitch"))
    assert res.returncode == 0, res.stderr
    assert res.stdout == read(os.path.join(REPO, "tests", "fixtures", "real", "h200x4_nvswitch", name))
