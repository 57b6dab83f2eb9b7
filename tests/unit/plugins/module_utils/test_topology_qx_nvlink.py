# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""parse_query_xml (nvidia-smi -q -x), parse_nvlink_status (nvlink -s), failure detection.

Expected values were written by reading each fixture file, never by running the parser.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nvlink import parse_nvlink_status
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._pci_bus import (
    nvsmi_bus_id,
    sysfs_bus_id,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._query_xml import parse_query_xml
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    TopologyParseError,
    TruncatedOutputError,
    detect_smi_failure,
    find_handle_errors,
)

REAL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "real")
QX_02 = "public/qx_02_a100_sxm4_4gpu_host_mig4_xml_one_gpu_block_remapped_rows_na.txt"
QX_03 = "public/qx_03_v100s_8gpu_vm_full_xml_v11_accounting_zero_ecc_empty_pagelist.txt"
NVLINK_ERR = "public/nvlink_err_01_v100_sxm2_ndv2_7gpu_blocks_6_inactive_links_no_eol.txt"


def read(name):
    with open(os.path.join(REAL, name), "r") as handle:
        return handle.read()


# ---- -q -x ---------------------------------------------------------------------------------

def test_qx_h200_vm():
    qx = parse_query_xml(read("h200_vm/q_x.out"))
    assert qx["driver_version"] == "580.159.04"
    assert qx["cuda_driver_version"] == "13.0"
    assert qx["attached_gpus"] == 1
    assert len(qx["gpus"]) == 1
    gpu = qx["gpus"][0]
    assert gpu["name"] == "NVIDIA H200"
    assert gpu["uuid"] == "GPU-00000000-0000-0000-0000-000000000000"
    assert gpu["pci_bus_id"] == "00000000:00:06.0"
    assert gpu["minor_number"] == 0
    assert gpu["memory_total_mib"] == 143771
    assert gpu["mig_mode"] == "Disabled" and gpu["mig_device_count"] == 0
    assert gpu["mig_devices"] == []  # <mig_devices>None</mig_devices>
    # q_x.out lines 167-224: v13 sram_/dram_ counters all 0, retired_pages all N/A,
    # remapped_rows 0/0 with pending No and failure No
    assert gpu["ecc"] == {"mode": "Enabled", "volatile_uncorrected": 0,
                          "remapped_rows_pending": False, "retired_pages_pending": None,
                          "volatile_corrected": 0, "aggregate_uncorrected": 0,
                          "aggregate_corrected": 0, "retired_pages_single_bit": None,
                          "retired_pages_double_bit": None, "remapped_rows_correctable": 0,
                          "remapped_rows_uncorrectable": 0, "remapped_rows_failure": False}
    assert gpu["pcie"] == {"link_gen_current": 5, "link_gen_max": 5,
                           "link_width_current": 16, "link_width_max": 16}
    assert gpu["healthy"] is True and gpu["reason"] is None
    assert qx["warnings"] == [] and qx["messages"] == []


def test_qx_02_attached_4_one_block_mig_enabled():
    qx = parse_query_xml(read(QX_02))
    assert qx["driver_version"] == "535.54.03"
    assert qx["cuda_driver_version"] == "12.2"
    assert qx["attached_gpus"] == 4
    assert len(qx["gpus"]) == 1
    assert qx["warnings"] == ["nvidia-smi -q -x: attached_gpus is 4 but the output has 1 <gpu> block(s)"]
    gpu = qx["gpus"][0]
    assert gpu["name"] == "NVIDIA A100-SXM4-80GB"
    assert gpu["pci_bus_id"] == "00000000:01:00.0"
    assert gpu["minor_number"] == 1
    assert gpu["memory_total_mib"] == 81920
    assert gpu["mig_mode"] == "Enabled"
    assert gpu["mig_device_count"] == 4
    assert gpu["ecc"]["mode"] == "Enabled"
    assert gpu["ecc"]["volatile_uncorrected"] == 0
    assert gpu["ecc"]["remapped_rows_pending"] is None  # <remapped_rows>N/A</remapped_rows>
    assert gpu["pcie"]["link_gen_current"] == 4 and gpu["pcie"]["link_width_current"] == 16


def test_qx_03_eight_v100s_v11_dtd_no_final_newline():
    text = read(QX_03)
    assert not text.endswith("\n")
    qx = parse_query_xml(text)
    assert qx["driver_version"] == "460.73.01"
    assert qx["cuda_driver_version"] == "11.2"
    assert qx["attached_gpus"] == 8
    assert [gpu["pci_bus_id"] for gpu in qx["gpus"]] == [
        "00000000:00:0D.0", "00000000:00:0E.0", "00000000:00:0F.0", "00000000:00:10.0",
        "00000000:00:11.0", "00000000:00:12.0", "00000000:00:13.0", "00000000:00:14.0"]
    assert [gpu["minor_number"] for gpu in qx["gpus"]] == list(range(8))
    assert all(gpu["name"] == "Tesla V100S-PCIE-32GB" for gpu in qx["gpus"])
    assert all(gpu["memory_total_mib"] == 32510 for gpu in qx["gpus"])
    assert all(gpu["mig_mode"] is None for gpu in qx["gpus"])  # <current_mig>N/A
    assert all(gpu["ecc"]["volatile_uncorrected"] == 0 for gpu in qx["gpus"])  # double_bit total
    assert qx["gpus"][0]["pcie"]["link_gen_max"] == 3
    assert qx["warnings"] == []


def test_qx_truncated_xml():
    text = read("h200_vm/q_x.out")
    with pytest.raises(TruncatedOutputError):
        parse_query_xml(text[:len(text) // 2])


def test_qx_empty_output():
    with pytest.raises(TruncatedOutputError):
        parse_query_xml("")


def test_qx_text_output_is_not_xml_and_names_line_1():
    with pytest.raises(TopologyParseError) as info:
        parse_query_xml(read("public/ecc_01_v100_pcie_q_full_zero_ecc_retired_pages.txt"))
    assert info.value.line_no == 1
    assert "NVSMI LOG" in str(info.value)


def test_qx_broken_xml_names_the_line():
    text = read("h200_vm/q_x.out").replace("<product_name>NVIDIA H200</product_name>",
                                           "<product_name>NVIDIA H200</product_nam>")
    with pytest.raises(TopologyParseError) as info:
        parse_query_xml(text)
    assert not isinstance(info.value, TruncatedOutputError)
    assert info.value.line_no == 9  # <product_name> is line 9 of q_x.out
    assert "product_nam>" in info.value.line


def test_qx_handle_error_only_output():
    qx = parse_query_xml(read("public/smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt"))
    assert qx["gpus"] == []
    assert qx["messages"] == [
        "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error"]


def test_qx_warning_after_xml_is_kept_as_message():
    text = read(QX_03) + "\nWARNING: infoROM is corrupted at gpu 0008:00:00.0\n"
    qx = parse_query_xml(text)
    assert len(qx["gpus"]) == 8
    assert qx["messages"] == ["WARNING: infoROM is corrupted at gpu 0008:00:00.0"]


# ---- nvlink -s -----------------------------------------------------------------------------

def test_nvlink_01_a6000_bridge_pairs_four_links_each():
    status = parse_nvlink_status(read("public/nvlink_01_a6000_8gpu_bridge_pairs_status.txt"))
    assert [gpu["index"] for gpu in status["gpus"]] == list(range(8))
    assert status["gpus"][0]["name"] == "NVIDIA RTX A6000"
    assert status["gpus"][7]["uuid"] == "GPU-00000000-0000-0000-0000-000000000007"
    for gpu in status["gpus"]:
        assert gpu["nvlinks"] == [{"link": n, "state": "active", "speed_gbps": 14.062}
                                  for n in range(4)]


def test_nvlink_03_a100_integer_speed_tab_indent_poster_truncated():
    status = parse_nvlink_status(read("public/nvlink_03_a100_sxm4_12links_integer_gbps_tabs.txt"))
    assert [len(gpu["nvlinks"]) for gpu in status["gpus"]] == [12, 12, 1]
    assert status["gpus"][1]["nvlinks"][11] == {"link": 11, "state": "active", "speed_gbps": 25.0}
    assert status["gpus"][0]["name"] == "NVIDIA A100-SXM4-80GB"


def test_nvlink_err_01_seven_blocks_six_inactive_links():
    status = parse_nvlink_status(read(NVLINK_ERR))
    assert [gpu["index"] for gpu in status["gpus"]] == list(range(7))
    inactive = dict((gpu["index"], [link["link"] for link in gpu["nvlinks"]
                                    if link["state"] == "inactive"]) for gpu in status["gpus"])
    assert inactive == {0: [], 1: [], 2: [], 3: [3, 5], 4: [1], 5: [0, 4], 6: [1]}
    assert status["gpus"][3]["nvlinks"][3] == {"link": 3, "state": "inactive", "speed_gbps": None}
    assert status["gpus"][6]["nvlinks"][5] == {"link": 5, "state": "active", "speed_gbps": 25.781}


def test_nvlink_h200_prints_nothing():
    assert read("h200_vm/nvlink_s.out") == ""
    assert parse_nvlink_status(read("h200_vm/nvlink_s.out")) == {"gpus": [], "warnings": []}


def test_nvlink_unknown_line_names_it():
    text = read("public/nvlink_01_a6000_8gpu_bridge_pairs_status.txt").replace(
        "Link 2: 14.062 GB/s", "Link 2: 14.062 Gb/s", 1)
    with pytest.raises(TopologyParseError) as info:
        parse_nvlink_status(text)
    assert info.value.line_no == 4


# ---- failures and bus ids ------------------------------------------------------------------

@pytest.mark.parametrize("name, expected", [
    ("public/smi_fail_04_nvml_mismatch_with_nvml_library_version_line.txt",
     "Failed to initialize NVML: Driver/library version mismatch; NVML library version: 535.161"),
    ("public/smi_fail_06_couldnt_communicate_with_driver.txt",
     "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
     "that the latest NVIDIA driver is installed and running."),
    ("public/smi_fail_07_no_devices_were_found.txt", "No devices were found"),
])
def test_detect_host_failures(name, expected):
    assert detect_smi_failure(read(name)) == expected


@pytest.mark.parametrize("name", [
    "public/smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt",
    "h200_vm/q_x.out",
    "h200_vm/topo_m.out",
    "public/smi_fail_02_a40_8gpu_gpu4_err_gsp_timeout.txt",
])
def test_not_host_failures(name):
    assert detect_smi_failure(read(name)) is None


def test_handle_error_spellings():
    assert find_handle_errors(read(
        "public/smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt")) == [
        ("00000000:09:00.0",
         "Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error")]
    # the spelling without a space, quoted in NVIDIA/nvidia-container-toolkit#69
    assert find_handle_errors(
        "Unable to determine the device handle for GPU0000:65:00.0: Unknown Error\n") == [
        ("00000000:65:00.0", "Unable to determine the device handle for GPU0000:65:00.0: Unknown Error")]


@pytest.mark.parametrize("given, smi, sysfs", [
    ("00000000:4B:00.0", "00000000:4B:00.0", "0000:4b:00.0"),
    ("0000:4b:00.0", "00000000:4B:00.0", "0000:4b:00.0"),
    ("00000000:00:06.0", "00000000:00:06.0", "0000:00:06.0"),
    ("0008:00:00.0", "00000008:00:00.0", "0008:00:00.0"),   # Azure NDv2 domain, 4 digits
    ("00000001:00:00.0", "00000001:00:00.0", "0001:00:00.0"),
])
def test_bus_id_spellings(given, smi, sysfs):
    assert nvsmi_bus_id(given) == smi
    assert sysfs_bus_id(given) == sysfs


def test_bad_bus_id():
    with pytest.raises(ValueError):
        sysfs_bus_id("GPU0")
