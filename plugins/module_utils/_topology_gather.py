# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading what build_gpu_topology needs from a host: the nvidia-smi calls and the sysfs files.

Shared by gpu_topology_facts and gpu_compliance (which gathers the topology itself when it is not
given one), so both read the same outputs the same way. No Ansible imports: ``run`` is the
caller's ``module.run_command``-like function ``run(argv) -> (rc, stdout, stderr)``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._pci_bus import sysfs_bus_id
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import detect_smi_failure
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import COMMANDS


def read_text(path):
    """The file's text, or None when it cannot be read."""
    try:
        with open(path, "r") as handle:
            return handle.read()
    except (IOError, OSError, UnicodeDecodeError):
        return None


def run_nvidia_smi(run, smi):
    """Run the (at most four) nvidia-smi calls, in order ``qx``, ``topo``, ``nvlink``, ``list``.

    Returns ``{key: {"rc", "stdout", "stderr"}}``; stops after the first call whose output is a
    host-level failure (NVML, driver, no devices), which every later call would repeat.
    """
    results = {}
    for key in ("qx", "topo", "nvlink", "list"):
        rc, out, err = run([smi] + COMMANDS[key])
        results[key] = {"rc": rc, "stdout": out, "stderr": err}
        if detect_smi_failure(out + "\n" + err):
            break
    return results


def read_sysfs(sysfs_root, bus_ids):
    """Read the sysfs values build_gpu_topology needs (raw text; parsing is done there)."""
    pci = {}
    for bus in bus_ids:
        try:
            name = sysfs_bus_id(bus)
        except ValueError:
            continue
        device = os.path.join(sysfs_root, "bus", "pci", "devices", name)
        if not os.path.isdir(device):
            continue
        pci[name] = {
            "numa_node": read_text(os.path.join(device, "numa_node")),
            "local_cpulist": read_text(os.path.join(device, "local_cpulist")),
        }
    nodes = {}
    for path in glob.glob(os.path.join(sysfs_root, "devices", "system", "node", "node*")):
        suffix = os.path.basename(path)[len("node"):]
        if suffix.isdigit():
            text = read_text(os.path.join(path, "cpulist"))
            if text is not None:
                nodes[int(suffix)] = text
    return {"pci": pci, "nodes": nodes, "nvidia_gpus": nvidia_gpus(sysfs_root)}


def nvidia_gpus(sysfs_root):
    """Sysfs names of the NVIDIA PCI functions of class display VGA (0x0300) or 3D (0x0302): the
    GPUs the kernel sees, whatever nvidia-smi shows (NVSwitches are 0x0680, audio 0x0403); a GPU
    bound to another driver (vfio-pci for passthrough, nouveau) is not this host's to serve with. None
    when the tree shows no NVIDIA function at all: then sysfs says nothing (a tree without the
    vendor/class files, a restricted /sys), while a driver that answers proves a GPU is there."""
    found = []
    for device in sorted(glob.glob(os.path.join(sysfs_root, "bus", "pci", "devices", "*"))):
        vendor = (read_text(os.path.join(device, "vendor")) or "").strip().lower()
        klass = (read_text(os.path.join(device, "class")) or "").strip().lower()
        try:
            driver = os.path.basename(os.readlink(os.path.join(device, "driver")))
        except OSError:
            driver = None  # unbound, or a tree without driver links: the kernel still sees the GPU
        if vendor == "0x10de" and klass[:6] in ("0x0300", "0x0302") and driver in (None, "nvidia"):
            found.append(os.path.basename(device))
    return found or None
