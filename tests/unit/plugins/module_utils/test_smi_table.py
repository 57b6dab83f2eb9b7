# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""parse_smi_table on every real plain-table capture, and the failure texts that hold no table.

Expected values were written by reading the fixture files, never by running the code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_table import (
    SmiTableError,
    parse_smi_table,
)
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text


def test_a40_gpu4_row_of_err_is_unhealthy_and_the_other_seven_are_kept():
    table = parse_smi_table(fixture_text("real/public/smi_fail_02_a40_8gpu_gpu4_err_gsp_timeout.txt"))
    assert table["driver_version"] == "525.60.13" and table["cuda_version"] == "12.0"
    assert [g["index"] for g in table["gpus"]] == list(range(8))
    bad = table["gpus"][4]
    assert bad["healthy"] is False
    assert bad["name"] == "ERR!" and bad["pci_bus_id"] == "00000000:83:00.0"
    assert bad["persistence_mode"] == "On"
    assert bad["memory_used_mib"] == 0 and bad["memory_total_mib"] == 46068  # still numeric in the capture
    assert bad["ecc_volatile_uncorrected"] is None and bad["ecc_cell"] == "ERR!"
    assert set(bad["error_fields"]) == {"name", "fan", "temperature", "performance_state", "power", "ecc",
                                        "utilization", "mig_mode"}
    assert "GPU 4" in bad["reason"] and "00000000:83:00.0" in bad["reason"]
    for gpu in table["gpus"][:4] + table["gpus"][5:]:
        assert gpu["healthy"] is True and gpu["name"] == "NVIDIA A40" and gpu["reason"] is None
        assert gpu["memory_total_mib"] == 46068 and gpu["mig_mode"] == "N/A"
    assert table["gpus"][2]["memory_used_mib"] == 821
    assert table["processes"] == [{"gpu": 2, "pid": 2111354, "type": "C",
                                   "name": "...eratornet/venv/bin/python", "memory": "818MiB"}]


def test_v100_table_then_inforom_warning_after_the_table():
    table = parse_smi_table(fixture_text("real/public/smi_fail_13_v100_sxm2_8gpu_table_then_inforom_corrupted_warning.txt"))
    assert table["driver_version"] == "460.32.03"
    assert [g["pci_bus_id"] for g in table["gpus"]] == ["0000000%d:00:00.0" % n for n in range(1, 9)]
    assert all(g["healthy"] for g in table["gpus"])
    assert table["warnings"] == ["WARNING: infoROM is corrupted at gpu 0008:00:00.0"]


def test_mig_host_ecc_cell_on_and_one_mig_device_shown():
    table = parse_smi_table(fixture_text("real/public/smi_mig_01_a100_8gpu_mig_enabled_on_7_one_instance_on_gpu7.txt"))
    assert [g["mig_mode"] for g in table["gpus"]] == ["Disabled"] + ["Enabled"] * 7
    assert table["gpus"][0]["ecc_volatile_uncorrected"] == 0
    assert [g["ecc_cell"] for g in table["gpus"][1:]] == ["On"] * 7
    assert all(g["ecc_volatile_uncorrected"] is None for g in table["gpus"][1:])
    assert table["mig_devices_shown"] == 1 and table["processes"] == []


@pytest.mark.parametrize("capture, buses", [
    ("h200_vm/smi.out", ["00000000:00:06.0"]),
    ("h200x2_nvlink/smi.out", ["00000000:00:06.0", "00000000:00:07.0"]),
])
def test_real_h200_tables_580_column_widths(capture, buses):
    table = parse_smi_table(fixture_text("real/" + capture))
    assert table["driver_version"] == "580.159.04" and table["cuda_version"] == "13.0"
    assert [g["pci_bus_id"] for g in table["gpus"]] == buses
    for gpu in table["gpus"]:
        assert gpu["name"] == "NVIDIA H200" and gpu["memory_total_mib"] == 143771
        assert gpu["mig_mode"] == "Disabled" and gpu["healthy"] is True and gpu["ecc_volatile_uncorrected"] == 0


@pytest.mark.parametrize("name", [
    "public/smi_fail_04_nvml_mismatch_with_nvml_library_version_line.txt",
    "public/smi_fail_06_couldnt_communicate_with_driver.txt",
    "public/smi_fail_07_no_devices_were_found.txt",
    "public/smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt",
])
def test_failure_texts_hold_no_table_and_the_error_quotes_line_1(name):
    text = fixture_text("real/" + name)
    with pytest.raises(SmiTableError) as err:
        parse_smi_table(text)
    assert err.value.line_no == 1 and err.value.line == text.splitlines()[0]


def test_empty_text():
    with pytest.raises(SmiTableError):
        parse_smi_table("")
