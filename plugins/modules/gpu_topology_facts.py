#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_topology_facts
short_description: Gather NVIDIA GPU, NVLink, PCIe and NUMA topology as facts
version_added: 0.1.0
description:
  - Runs C(nvidia-smi -q -x), C(nvidia-smi topo -m), C(nvidia-smi nvlink -s) and C(nvidia-smi -L) (at
    most these four calls, with C(LC_ALL=C)) and reads the GPUs' NUMA node and local CPU list from sysfs,
    then returns one fact, C(ansible_facts.gpu_topology).
  - GPU index is the order of the GPU rows of C(topo -m) and of the C(<gpu>) blocks of C(-q -x)
    (both are NVML index order); the sources are matched by index, by PCI bus id (sysfs) and by
    UUID (C(nvlink -s)).
  - C(topo -m) is read by column name, so every header generation works - C(CPU Affinity) only,
    with C(NUMA Affinity), with C(GPU NUMA ID) - tab or space separated, with ANSI escapes, NIC
    columns named C(NIC#) (resolved through the C(NIC Legend)) or C(mlx5_*)/C(mlx4_*), and the old
    C(SOC) code (class C(sys)). Output of C(topo -mp) parses the same way.
  - NUMA node of a GPU is C(<sysfs_root>/bus/pci/devices/<dddd:bb:dd.f>/numa_node) when that names a
    node; C(-1) there means the platform gave none (typical in VMs), and then C(topo -m)'s
    C(NUMA Affinity) decides. When both name a node and disagree, sysfs wins and a warning says so.
    C(cpu_affinity) is sysfs C(local_cpulist) when present, else C(topo -m)'s C(CPU Affinity).
  - "A host that cannot serve still returns facts, with C(available=false) and a C(reason) that
    quotes the tool - nvidia-smi missing, C(Failed to initialize NVML: Driver/library version
    mismatch), C(NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver),
    C(No devices were found), empty or truncated output."
  - "A C(Unable to determine the device handle for GPU ...) error marks only that GPU
    C(healthy=false), with the tool's words as its C(reason), keeps it at its index (PCI bus order)
    and keeps the others. Every spelling seen in public reports is read, on stdout or stderr of any
    call - C(for GPU 0000:09:00.0), C(for GPU0000:07:00.0), C(for GPU1: 0000:34:00.0) (driver 610),
    C(for gpu 0000:01:00.0: Not Found), 4- or 8-digit PCI domains."
  - The GPU count of every source - C(-q -x), C(topo -m), C(nvidia-smi -L) and the NVIDIA display/3D
    PCI functions in sysfs - is returned in C(gpu_count_sources); when they disagree a warning says
    so (a GPU known only from a handle error counts for the nvidia-smi sources).
  - C(driver_version) and C(cuda_driver_version) read C(KMD Version) / C(CUDA UMD Version) where the
    driver prints them (610 and later) and drop the C([Deprecated; ...]) note of the old labels.
  - Output that none of the known formats explains fails the task with a message naming the command,
    the line number and the line, rather than returning wrong facts.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  nvidia_smi_path:
    description:
      - Path of the C(nvidia-smi) binary.
      - When not set, C(nvidia-smi) is looked up on C(PATH) (and the usual sbin directories).
    type: path
  sysfs_root:
    description:
      - Root of the sysfs tree to read PCI device and NUMA node information from.
      - Tests and simulated GPU hosts point it at a planted tree.
    type: path
    default: /sys
extends_documentation_fragment:
  - ansible.builtin.action_common_attributes
  - ansible.builtin.action_common_attributes.facts
attributes:
  check_mode:
    support: full
  diff_mode:
    support: none
  facts:
    support: full
  platform:
    platforms: posix
notes:
  - Supports check mode; the module only reads.
  - Command formats were learned from real captures kept in the collection's
    C(tests/fixtures/real/) - one NVIDIA H200 VM (driver 580.159.04) and outputs posted in public
    bug reports and vendor articles (C(-q -x) from drivers 460.73.01 and 535.54.03, C(topo -m) from
    K80-era to H100-era drivers).
  - C(nvidia-smi) can hang on a wedged GPU; use the task keyword C(timeout) to bound the task.
  - NVLink speeds are the figures C(nvidia-smi nvlink -s) prints, in GB/s (gigabytes per second, per
    link and direction), although the key is named C(speed_gbps).
  - Link codes are explained by the legend C(nvidia-smi topo -m) prints - C(X) self, C(NV<n>) a bonded
    set of n NVLinks, C(PIX) at most one PCIe bridge, C(PXB) several PCIe bridges, C(PHB) a PCIe host
    bridge, C(NODE) PCIe host bridges within a NUMA node, C(SYS) (old C(SOC)) the SMP interconnect
    between NUMA nodes.
seealso:
  - name: nvidia-smi documentation
    description: NVIDIA System Management Interface manual.
    link: https://docs.nvidia.com/deploy/nvidia-smi/index.html
  - name: sysfs PCI numa_node and local_cpulist
    description: Linux ABI documentation of /sys/bus/pci/devices attributes.
    link: https://www.kernel.org/doc/Documentation/ABI/testing/sysfs-bus-pci
"""

EXAMPLES = r"""
- name: Gather GPU topology
  gpu_fleet.vllm_serving.gpu_topology_facts:

- name: Stop on hosts that cannot serve
  ansible.builtin.assert:
    that: ansible_facts.gpu_topology.available
    fail_msg: "{{ inventory_hostname }}: {{ ansible_facts.gpu_topology.reason }}"

- name: Show NVLink islands and the NUMA node of each GPU
  ansible.builtin.debug:
    msg: >-
      islands={{ ansible_facts.gpu_topology.nvlink_islands }}
      numa={{ ansible_facts.gpu_topology.gpus | map(attribute='numa_node') | list }}

- name: Read a simulated host's planted sysfs and nvidia-smi
  gpu_fleet.vllm_serving.gpu_topology_facts:
    nvidia_smi_path: /usr/bin/nvidia-smi
    sysfs_root: /etc/gpu-sim/sysfs
"""

RETURN = r"""
ansible_facts:
  description: Facts to add to ansible_facts.
  returned: always
  type: complex
  contains:
    gpu_topology:
      description: GPUs, their links, NUMA placement and NICs of this host.
      returned: always
      type: dict
      contains:
        available:
          description: True when at least one healthy GPU was found. False when nvidia-smi is missing,
            NVML or the driver failed, no device was found, output was empty or truncated, or every
            GPU is unhealthy.
          type: bool
          returned: always
          sample: true
        reason:
          description: Why C(available) is false, quoting the tool's message; null when available.
          type: str
          returned: always
          sample: "nvidia-smi -q -x failed (rc 18): Failed to initialize NVML: Driver/library version mismatch"
        driver_version:
          description: NVIDIA driver version from C(-q -x) C(<driver_version>); null when unknown.
          type: str
          returned: always
          sample: "580.159.04"
        cuda_driver_version:
          description: Highest CUDA version the driver supports, from C(-q -x) C(<cuda_version>); null
            when unknown (drivers before CUDA 10 do not print it).
          type: str
          returned: always
          sample: "13.0"
        gpu_count:
          description: Number of GPUs (entries in C(gpus)), healthy or not.
          type: int
          returned: always
          sample: 1
        gpus:
          description: One entry per GPU, ordered by C(index).
          type: list
          elements: dict
          returned: always
          contains:
            index:
              description: nvidia-smi / NVML index (0-based), the number C(CUDA_VISIBLE_DEVICES) uses
                with C(CUDA_DEVICE_ORDER=PCI_BUS_ID).
              type: int
              sample: 0
            name:
              description: Product name from C(-q -x); null when unknown.
              type: str
              sample: "NVIDIA H200"
            uuid:
              description: GPU UUID from C(-q -x); null when unknown.
              type: str
              sample: "GPU-00000000-0000-0000-0000-000000000000"
            pci_bus_id:
              description: PCI bus id as nvidia-smi prints it (8 hex digit domain, upper case); null
                when unknown.
              type: str
              sample: "00000000:00:06.0"
            minor_number:
              description: Device minor number (C(/dev/nvidia<minor>)); null when unknown.
              type: int
              sample: 0
            memory_total_mib:
              description: Total framebuffer memory in MiB (C(fb_memory_usage/total)); null when
                unknown.
              type: int
              sample: 143771
            numa_node:
              description: NUMA node the GPU is attached to (sysfs, else C(topo -m) NUMA Affinity);
                null when neither knows.
              type: int
              sample: 0
            numa_node_source:
              description: Where C(numa_node) came from - C(sysfs), C(topo) or null.
              type: str
              sample: topo
            sysfs_numa_node:
              description: Raw sysfs C(numa_node) value (C(-1) means the platform gave none); null
                when not read.
              type: int
              sample: -1
            cpu_affinity:
              description: CPU numbers local to the GPU (sysfs C(local_cpulist), else C(topo -m) CPU
                Affinity); null when unknown.
              type: list
              elements: int
              sample: [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15]
            cpu_affinity_source:
              description: Where C(cpu_affinity) came from - C(sysfs), C(topo) or null.
              type: str
              sample: sysfs
            gpu_numa_id:
              description: The GPU memory's own NUMA node (C(topo -m) C(GPU NUMA ID), set on
                coherent CPU-GPU systems); null when N/A or not printed.
              type: int
              sample: null
            healthy:
              description: False when nvidia-smi could not get a handle for this GPU or reports an
                error value for it.
              type: bool
              sample: true
            reason:
              description: Why the GPU is unhealthy, quoting nvidia-smi; null when healthy.
              type: str
              sample: "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error"
            mig_mode:
              description: Current MIG mode - C(Enabled), C(Disabled), or null when not supported.
              type: str
              sample: Disabled
            persistence_mode:
              description: Persistence mode from C(-q -x) - C(Enabled), C(Disabled), or null (N/A, unknown).
              type: str
              sample: Enabled
            fabric:
              description:
                - The GPU's NVLink fabric as C(-q -x) reports it (NVSwitch systems, Hopper and later) -
                  C(state) (C(Completed), C(In Progress), C(Not Started), ...) and C(status) (C(Success), ...).
                - Both null where nvidia-smi prints C(N/A) (no fabric, e.g. one GPU in a VM).
              type: dict
              sample: {"state": "Completed", "status": "Success"}
            mig_device_count:
              description: Number of MIG devices (instances) listed for the GPU; always the
                length of C(mig_devices).
              type: int
              sample: 0
            mig_devices:
              description: MIG devices of the GPU from C(-q -x) C(<mig_devices>/<mig_device>), in
                the order nvidia-smi lists them; empty when MIG is disabled or not supported
                (C(<mig_devices>None</mig_devices>)) or the GPU is unknown. Each value is null
                when nvidia-smi prints C(N/A) or leaves it out.
              type: list
              elements: dict
              sample: [{"index": 0, "gpu_instance_id": 3, "compute_instance_id": 0,
                        "multiprocessor_count": 14, "memory_total_mib": 19968,
                        "volatile_uncorrected": 0}]
              contains:
                index:
                  description: MIG device index within the GPU (C(<index>)), the C(MIG n) number
                    of C(nvidia-smi -L).
                  type: int
                  sample: 0
                gpu_instance_id:
                  description: GPU instance id (C(<gpu_instance_id>), the GI of
                    C(nvidia-smi mig -lgi)).
                  type: int
                  sample: 3
                compute_instance_id:
                  description: Compute instance id within the GPU instance
                    (C(<compute_instance_id>), the CI of C(nvidia-smi mig -lci)).
                  type: int
                  sample: 0
                multiprocessor_count:
                  description: Streaming multiprocessors (SMs) of the MIG device
                    (C(device_attributes/shared/multiprocessor_count)).
                  type: int
                  sample: 14
                memory_total_mib:
                  description: Framebuffer memory of the MIG device in MiB
                    (C(fb_memory_usage/total)).
                  type: int
                  sample: 19968
                volatile_uncorrected:
                  description: Uncorrectable ECC errors of the MIG device since the driver loaded
                    (sum of C(ecc_error_count/volatile_count/*uncorrectable*)); a count of
                    errors; null when N/A.
                  type: int
                  sample: 0
            ecc:
              description: ECC state and error history from C(-q -x). Every key is null when
                nvidia-smi prints C(N/A) for it or leaves it out (for example on GPUs without the
                feature, or when the whole block reads C(<remapped_rows>N/A</remapped_rows>)).
                Counters are numbers of errors (or pages, or rows); C(volatile) counters restart
                at zero when the driver reloads, C(aggregate) ones persist in the InfoROM over
                the GPU's lifetime.
              type: dict
              contains:
                mode:
                  description: Current ECC mode - C(Enabled), C(Disabled) or null.
                  type: str
                  sample: Enabled
                volatile_uncorrected:
                  description: Count of uncorrectable ECC errors since the driver loaded (sum of
                    the volatile uncorrectable counters, or double bit total on old drivers);
                    null when N/A.
                  type: int
                  sample: 0
                volatile_corrected:
                  description: Count of corrected (single bit) ECC errors since the driver
                    loaded, the sum of the volatile C(sram_correctable) and C(dram_correctable)
                    counters, or C(single_bit/total) on drivers printing DTD v11 and older;
                    null when N/A.
                  type: int
                  sample: 0
                aggregate_uncorrected:
                  description: Count of uncorrectable ECC errors over the GPU's lifetime, the sum of
                    the aggregate C(*uncorrectable*) counters (C(sram_uncorrectable) or
                    C(sram_uncorrectable_parity) + C(sram_uncorrectable_secded), and
                    C(dram_uncorrectable)), or C(double_bit/total) on DTD v11 and older; null
                    when N/A.
                  type: int
                  sample: 0
                aggregate_corrected:
                  description: Count of corrected (single bit) ECC errors over the GPU's
                    lifetime, the sum of the aggregate C(sram_correctable) and
                    C(dram_correctable) counters, or C(single_bit/total) on DTD v11 and older;
                    null when N/A.
                  type: int
                  sample: 0
                retired_pages_single_bit:
                  description: Number of framebuffer pages retired after multiple single bit
                    (corrected) errors (C(retired_pages/multiple_single_bit_retirement/retired_count));
                    null when N/A (GPUs with row remapping, such as A100 and later, print N/A).
                  type: int
                  sample: 0
                retired_pages_double_bit:
                  description: Number of framebuffer pages retired after a double bit
                    (uncorrectable) error (C(retired_pages/double_bit_retirement/retired_count));
                    null when N/A.
                  type: int
                  sample: 0
                retired_pages_pending:
                  description: True when a page retirement is pending; null when N/A.
                  type: bool
                  sample: null
                remapped_rows_correctable:
                  description: Number of memory rows remapped because of correctable errors
                    (C(remapped_rows/remapped_row_corr)); null when N/A (GPUs before A100, or
                    the block is N/A).
                  type: int
                  sample: 0
                remapped_rows_uncorrectable:
                  description: Number of memory rows remapped because of uncorrectable errors
                    (C(remapped_rows/remapped_row_unc)); null when N/A.
                  type: int
                  sample: 0
                remapped_rows_pending:
                  description: True when a row remap is pending (GPU reset needed); null when N/A.
                  type: bool
                  sample: false
                remapped_rows_failure:
                  description: True when a row remapping failed (C(remapped_rows/remapped_row_failure);
                    the GPU needs service); null when N/A.
                  type: bool
                  sample: false
            pcie:
              description: PCIe link of the GPU from C(-q -x).
              type: dict
              contains:
                link_gen_current:
                  description: Current PCIe generation; null when unknown.
                  type: int
                  sample: 5
                link_gen_max:
                  description: Maximum PCIe generation; null when unknown.
                  type: int
                  sample: 5
                link_width_current:
                  description: Current link width in lanes; null when unknown.
                  type: int
                  sample: 16
                link_width_max:
                  description: Maximum link width in lanes; null when unknown.
                  type: int
                  sample: 16
            nvlinks:
              description: NVLinks of the GPU from C(nvlink -s); empty when the GPU has none or
                they are not exposed.
              type: list
              elements: dict
              sample: [{"link": 0, "state": "active", "speed_gbps": 25.0}]
              contains:
                link:
                  description: Link number.
                  type: int
                state:
                  description: C(active) or C(inactive).
                  type: str
                speed_gbps:
                  description: Link speed in GB/s (gigabytes per second) as nvidia-smi prints it;
                    null for inactive links.
                  type: float
        links:
          description: GPU x GPU matrix of raw C(topo -m) codes (C(X) on the diagonal, C(NV#),
            C(PIX), C(PXB), C(PHB), C(NODE), C(SYS), C(SOC)); null where unknown.
          type: list
          elements: list
          returned: always
          sample: [["X", "NV12"], ["NV12", "X"]]
        link_class:
          description: C(links) mapped to classes C(self), C(nvlink), C(pix), C(pxb), C(phb),
            C(node), C(sys) (C(SOC) becomes C(sys)); null where unknown.
          type: list
          elements: list
          returned: always
          sample: [["self", "nvlink"], ["nvlink", "self"]]
        nvlink_islands:
          description: Groups of GPU indexes connected through NV# links (connected components);
            every GPU is in exactly one island, singletons included; sorted.
          type: list
          elements: list
          returned: always
          sample: [[0, 1], [2, 3], [4, 5]]
        numa_nodes:
          description: NUMA nodes from sysfs C(devices/system/node/node*/cpulist), plus any node only
            the GPUs name (its CPUs then the union of those GPUs' cpu_affinity); sorted by id.
          type: list
          elements: dict
          returned: always
          sample: [{"id": 0, "cpus": [0, 1, 2, 3], "gpus": [0]}]
          contains:
            id:
              description: NUMA node number.
              type: int
            cpus:
              description: CPU numbers of the node (empty for memory-only nodes).
              type: list
              elements: int
            gpus:
              description: Indexes of the GPUs on this node.
              type: list
              elements: int
        nics:
          description: Network devices in C(topo -m) and their link code to each GPU (by index).
          type: list
          elements: dict
          returned: always
          sample: [{"name": "mlx5_0", "links": ["PXB", "NODE"]}]
          contains:
            name:
              description: Device name (from the C(NIC Legend), or the column header such as
                C(mlx5_0)); the C(NIC#) label when no legend names it.
              type: str
            links:
              description: C(topo -m) code from each GPU to this NIC, by GPU index.
              type: list
              elements: str
        gpu_count_sources:
          description:
            - How many GPUs each source shows - C(qx) (C(-q -x) GPU blocks), C(topo) (C(topo -m) rows),
              C(list) (C(nvidia-smi -L)), C(sysfs) (NVIDIA PCI functions of class 0x0300/0x0302); null for a
              source that was not read. A GPU known only from a handle error is counted for the nvidia-smi
              sources. The compliance check C(gpu_count) fails when they differ.
          type: dict
          returned: always
          sample: {"qx": 1, "topo": 1, "list": 1, "sysfs": 1}
        warnings:
          description: Things worth a look that did not stop the facts (disagreeing sources,
            inactive NVLinks, GPUs missing from an output, rc != 0 with usable output).
          type: list
          elements: str
          returned: always
          sample: ["GPU 3: 2 of 6 NVLinks inactive (link 3, 5)"]
"""

import os
import socket

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import TopologyParseError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import (
    COMMANDS,
    build_gpu_topology,
    pci_bus_ids,
    unavailable_topology,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology_gather import (
    read_sysfs,
    run_nvidia_smi,
)


# The parser of each command's output, named when an output is not understood.
_PARSER_FILES = {"qx": "_query_xml.py", "topo": "_topo_matrix.py", "nvlink": "_nvlink.py"}


def _unusable_smi(module, smi):
    """(nvidia-smi path, None), or (None, unavailable facts saying why there is none to run)."""
    if smi:
        if not os.path.exists(smi):
            return None, unavailable_topology("nvidia-smi not found at %s (nvidia_smi_path)" % smi)
        if os.path.isdir(smi) or not os.access(smi, os.X_OK):
            return None, unavailable_topology("%s is not an executable file (nvidia_smi_path)" % smi)
        return smi, None
    smi = module.get_bin_path("nvidia-smi")
    if not smi:
        return None, unavailable_topology(
            "nvidia-smi not found on PATH (%s); install the NVIDIA driver utilities or set "
            "nvidia_smi_path" % os.environ.get("PATH", ""))
    return smi, None


def _fail_unreadable(module, host, smi, exc, results, last):
    """fail_json for output the parsers do not understand, with that command's output."""
    keys = [k for k, v in COMMANDS.items() if "nvidia-smi " + " ".join(v) == exc.source]
    result = results.get(keys[0], last) if keys else last
    parser = _PARSER_FILES[keys[0]] if keys else "_topo_matrix.py, _query_xml.py or _nvlink.py"
    module.fail_json(
        msg="gpu_topology_facts on %s: cannot read the output of %s: %s. Check that "
            "nvidia_smi_path is NVIDIA's nvidia-smi; if it is, this is a format the parser does "
            "not know yet: add the output (returned here) to tests/fixtures/real/ and extend "
            "plugins/module_utils/%s." % (host, smi, exc, parser),
        rc=result.get("rc"), stdout=result.get("stdout", ""), stderr=result.get("stderr", ""))


def _gather(module, smi, sysfs_root):
    """Run nvidia-smi, read sysfs and build the facts; any failure ends in fail_json."""
    host = socket.gethostname()
    results, last = {}, {}
    try:
        results = run_nvidia_smi(lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}), smi)
        last = results[list(results)[-1]]
        return build_gpu_topology(results, read_sysfs(sysfs_root, pci_bus_ids(results)))
    except TopologyParseError as exc:
        _fail_unreadable(module, host, smi, exc, results, last)
    except Exception as exc:  # never a traceback: report what failed and where
        module.fail_json(
            msg="gpu_topology_facts on %s: unexpected %s while building facts from %s: %s (this is a "
                "bug in gpu_fleet.vllm_serving; please report it with the outputs returned here)"
                % (host, type(exc).__name__, smi, exc),
            rc=last.get("rc"), stdout=last.get("stdout", ""), stderr=last.get("stderr", ""),
            outputs=results)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            nvidia_smi_path=dict(type="path"),
            sysfs_root=dict(type="path", default="/sys"),
        ),
        supports_check_mode=True,
    )
    smi, facts = _unusable_smi(module, module.params["nvidia_smi_path"])
    if facts is None:
        facts = _gather(module, smi, module.params["sysfs_root"])
    module.exit_json(changed=False, ansible_facts={"gpu_topology": facts})


if __name__ == "__main__":
    main()
