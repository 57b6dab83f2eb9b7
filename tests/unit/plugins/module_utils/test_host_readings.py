# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_host_readings on the answers of dpkg-query, apt-mark and systemctl, in the forms those tools
print them (dpkg-query -W with the module's format, `systemctl show -p ...`)."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _host_readings as r


def test_dpkg_query_installed_and_held_packages():
    out = ("libnccl2\t2.14.3-1+cuda11.7\thold ok installed\n"
           "libnccl-dev\t2.14.3-1+cuda11.7\tinstall ok installed\n"
           "cuda-toolkit-12-1\t\tunknown ok not-installed\n"
           "garbage line\n")
    installed, holds = r.parse_dpkg_query(out)
    assert installed == {"libnccl2": "2.14.3-1+cuda11.7", "libnccl-dev": "2.14.3-1+cuda11.7"}
    assert holds == {"libnccl2"}
    assert r.DPKG_QUERY_FORMAT == "${Package}\t${Version}\t${Status}\n"


def test_showhold_names():
    assert r.parse_showhold("libnccl2\n  libnccl-dev \n\n") == {"libnccl2", "libnccl-dev"}
    assert r.parse_showhold("") == set()


def test_systemctl_answers():
    assert r.first_answer("active\n", "") == "active"
    assert r.first_answer("", "Failed to connect to bus\n") == "Failed to connect to bus"
    assert r.first_answer("", "") == "unknown"
    show = "ActiveState=failed\nSubState=failed\nNRestarts=3\nResult=exit-code\nnot a pair\nX=a=b\n"
    assert r.parse_systemctl_show(show) == {"ActiveState": "failed", "SubState": "failed", "NRestarts": "3",
                                            "Result": "exit-code", "X": "a=b"}


def test_key_values_of_a_listing_line():
    line = "0000:17:00.0 vendor=0x10de class=0x030200 numa_node=0 local_cpulist=0-23 speed=16.0_GT/s_PCIe bare"
    assert r.key_values(line.split()) == {"vendor": "0x10de", "class": "0x030200", "numa_node": "0",
                                          "local_cpulist": "0-23", "speed": "16.0_GT/s_PCIe"}
    assert r.key_values(["a=", "=b", "c"]) == {"a": "", "": "b"}


def test_procfs_and_sysfs_paths():
    assert r.sysctl_path("vm.swappiness") == "/proc/sys/vm/swappiness"
    assert r.sysctl_path("net.core.rmem_max", "/tmp/p") == "/tmp/p/net/core/rmem_max"
    assert r.cpu_of("/sys/devices/system/cpu/cpu13/cpufreq/scaling_governor") == "cpu13"


def test_absent_numa_balancing_means_off():
    note = r.absent_satisfies("kernel.numa_balancing", 0)
    assert note == ("this kernel has no automatic NUMA balancing (built without CONFIG_NUMA_BALANCING): "
                    "nothing to turn off")
    assert r.absent_satisfies("kernel.numa_balancing", " 0\n") == note
    # balancing wanted on, nothing wanted, or a key whose absence says nothing (other netns, typo)
    assert r.absent_satisfies("kernel.numa_balancing", 1) is None
    assert r.absent_satisfies("kernel.numa_balancing", None) is None
    assert r.absent_satisfies("net.core.rmem_max", 0) is None
    assert r.absent_satisfies("vm.swapiness", 0) is None


def test_gpu_device_nodes_are_nvidia_minor_character_devices():
    # the entries of a real host's /dev with the driver loaded, and what is not a GPU's node
    entries = [("nvidia10", True), ("nvidia2", True), ("nvidia0", True), ("nvidiactl", True),
               ("nvidia-uvm", True), ("nvidia-uvm-tools", True), ("nvidia-caps", False),
               ("nvidia1", False), ("null", True), ("nvidia", True), ("xnvidia3", True)]
    assert r.gpu_device_nodes(entries) == (["nvidia0", "nvidia2", "nvidia10"], ["nvidia1"])
    assert r.gpu_device_nodes([]) == ([], [])
