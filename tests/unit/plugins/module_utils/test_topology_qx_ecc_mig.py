# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""ECC counters, retired pages, remapped rows and MIG devices from ``nvidia-smi -q -x``.

Expected values were written by reading each fixture file, never by running the parser. The
real captures all have zero counters, so some tests change a few counters of a real capture
(by exact string replacement, asserted to have happened) to tell the counters apart; the
non-zero values follow the real A100 incident in public/ecc_02_* (DRAM correctable 177, one
correctable row remapped, remap pending).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._query_xml import parse_query_xml
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import build_gpu_topology

REAL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "real")
QX_02 = "public/qx_02_a100_sxm4_4gpu_host_mig4_xml_one_gpu_block_remapped_rows_na.txt"
QX_03 = "public/qx_03_v100s_8gpu_vm_full_xml_v11_accounting_zero_ecc_empty_pagelist.txt"
TOPO_03 = "public/topo_03_a30_4gpu_nv4_pairs_cross_socket.txt"

ECC_KEYS = {"mode", "volatile_uncorrected", "volatile_corrected", "aggregate_uncorrected",
            "aggregate_corrected", "retired_pages_single_bit", "retired_pages_double_bit",
            "retired_pages_pending", "remapped_rows_correctable", "remapped_rows_uncorrectable",
            "remapped_rows_pending", "remapped_rows_failure"}
MIG_DEVICE_KEYS = {"index", "gpu_instance_id", "compute_instance_id", "multiprocessor_count",
                   "memory_total_mib", "volatile_uncorrected"}


def read(name):
    with open(os.path.join(REAL, name), "r") as handle:
        return handle.read()


def replace_once(text, old, new):
    assert text.count(old) >= 1, old
    return text.replace(old, new, 1)


def replace_in_block(text, start_tag, end_tag, changes):
    """Apply ``changes`` [(old, new)] inside the first ``start_tag`` .. ``end_tag`` block only."""
    start = text.index(start_tag)
    end = text.index(end_tag, start) + len(end_tag)
    block = text[start:end]
    for old, new in changes:
        assert old in block, (start_tag, old)
        block = block.replace(old, new, 1)
    return text[:start] + block + text[end:]


def only_gpu(text):
    qx = parse_query_xml(text)
    assert len(qx["gpus"]) == 1
    return qx["gpus"][0]


# ---- real captures as they are -------------------------------------------------------------

def test_qx_02_a100_mig_devices_read_from_xml():
    gpu = only_gpu(read(QX_02))
    assert gpu["mig_mode"] == "Enabled"
    # four <mig_device> blocks: index 0-3, gpu_instance_id 3-6, compute_instance_id 0,
    # 14 SMs, fb_memory_usage/total 19968 MiB, volatile sram_uncorrectable 0
    assert gpu["mig_devices"] == [
        {"index": i, "gpu_instance_id": i + 3, "compute_instance_id": 0,
         "multiprocessor_count": 14, "memory_total_mib": 19968, "volatile_uncorrected": 0}
        for i in range(4)]
    assert gpu["mig_device_count"] == len(gpu["mig_devices"]) == 4


def test_qx_02_a100_v12_ecc_and_remapped_rows_na():
    gpu = only_gpu(read(QX_02))
    # lines 263-293: v12 sram_/dram_ counters all 0, retired_pages N/A, <remapped_rows>N/A
    assert gpu["ecc"] == {
        "mode": "Enabled",
        "volatile_uncorrected": 0, "volatile_corrected": 0,
        "aggregate_uncorrected": 0, "aggregate_corrected": 0,
        "retired_pages_single_bit": None, "retired_pages_double_bit": None,
        "retired_pages_pending": None,
        "remapped_rows_correctable": None, "remapped_rows_uncorrectable": None,
        "remapped_rows_pending": None, "remapped_rows_failure": None,
    }


def test_qx_03_v100s_v11_ecc_retired_pages_zero_on_all_eight():
    qx = parse_query_xml(read(QX_03))
    assert len(qx["gpus"]) == 8
    for gpu in qx["gpus"]:
        # single_bit/double_bit totals 0 (volatile and aggregate), retired_count 0 with an
        # empty <retired_pagelist>, pending_retirement No, <remapped_rows>N/A
        assert gpu["ecc"] == {
            "mode": "Enabled",
            "volatile_uncorrected": 0, "volatile_corrected": 0,
            "aggregate_uncorrected": 0, "aggregate_corrected": 0,
            "retired_pages_single_bit": 0, "retired_pages_double_bit": 0,
            "retired_pages_pending": False,
            "remapped_rows_correctable": None, "remapped_rows_uncorrectable": None,
            "remapped_rows_pending": None, "remapped_rows_failure": None,
        }
        assert gpu["mig_mode"] is None  # <current_mig>N/A
        assert gpu["mig_devices"] == [] and gpu["mig_device_count"] == 0


# ---- real captures with a few counters changed ---------------------------------------------

def test_h200_v13_counters_summed_per_class_and_kind():
    text = read("h200_vm/q_x.out")
    text = replace_in_block(text, "<volatile>", "</volatile>", [
        ("<sram_correctable>0<", "<sram_correctable>5<"),
        ("<sram_uncorrectable_parity>0<", "<sram_uncorrectable_parity>2<"),
        ("<sram_uncorrectable_secded>0<", "<sram_uncorrectable_secded>3<"),
        ("<dram_correctable>0<", "<dram_correctable>177<"),
        ("<dram_uncorrectable>0<", "<dram_uncorrectable>4<"),
    ])
    text = replace_in_block(text, "<aggregate>", "</aggregate>", [
        ("<sram_correctable>0<", "<sram_correctable>10<"),
        ("<sram_uncorrectable_parity>0<", "<sram_uncorrectable_parity>20<"),
        ("<sram_uncorrectable_secded>0<", "<sram_uncorrectable_secded>30<"),
        ("<dram_correctable>0<", "<dram_correctable>1000<"),
        ("<dram_uncorrectable>0<", "<dram_uncorrectable>40<"),
        # not a counter: must not be added
        ("<sram_threshold_exceeded>No<", "<sram_threshold_exceeded>Yes<"),
    ])
    # the per-source breakdown repeats the aggregate uncorrectable SRAM errors: not added again
    text = replace_in_block(text, "<aggregate_uncorrectable_sram_sources>",
                            "</aggregate_uncorrectable_sram_sources>",
                            [("<sram_l2>0<", "<sram_l2>50<")])
    ecc = only_gpu(text)["ecc"]
    assert ecc["volatile_corrected"] == 5 + 177
    assert ecc["volatile_uncorrected"] == 2 + 3 + 4
    assert ecc["aggregate_corrected"] == 10 + 1000
    assert ecc["aggregate_uncorrected"] == 20 + 30 + 40


def test_h200_remapped_rows_pending_like_the_a100_xid63_incident():
    text = replace_in_block(read("h200_vm/q_x.out"), "<remapped_rows>", "</remapped_rows>", [
        ("<remapped_row_corr>0<", "<remapped_row_corr>1<"),
        ("<remapped_row_unc>0<", "<remapped_row_unc>2<"),
        ("<remapped_row_pending>No<", "<remapped_row_pending>Yes<"),
    ])
    ecc = only_gpu(text)["ecc"]
    assert ecc["remapped_rows_correctable"] == 1
    assert ecc["remapped_rows_uncorrectable"] == 2
    assert ecc["remapped_rows_pending"] is True
    assert ecc["remapped_rows_failure"] is False
    text = replace_once(text, "<remapped_row_failure>No<", "<remapped_row_failure>Yes<")
    assert only_gpu(text)["ecc"]["remapped_rows_failure"] is True


def test_qx_02_v12_dram_correctable_177():
    text = read(QX_02)
    text = replace_in_block(text, "<ecc_errors>", "</ecc_errors>", [
        ("<dram_correctable>0<", "<dram_correctable>177<"),   # volatile (first)
        ("<dram_correctable>0<", "<dram_correctable>180<"),   # aggregate
        ("<sram_uncorrectable>0<", "<sram_uncorrectable>1<"),  # volatile
    ])
    ecc = only_gpu(text)["ecc"]
    assert ecc["volatile_corrected"] == 177
    assert ecc["aggregate_corrected"] == 180
    assert ecc["volatile_uncorrected"] == 1
    assert ecc["aggregate_uncorrected"] == 0


def test_qx_03_v11_totals_and_retired_pages_of_first_gpu_only():
    text = read(QX_03)
    text = replace_in_block(text, "<ecc_errors>", "</ecc_errors>", [
        ("<total>0</total>", "<total>3</total>"),  # volatile single_bit
        ("<total>0</total>", "<total>1</total>"),  # volatile double_bit
        ("<total>0</total>", "<total>7</total>"),  # aggregate single_bit
        ("<total>0</total>", "<total>2</total>"),  # aggregate double_bit
    ])
    text = replace_in_block(text, "<retired_pages>", "</retired_pages>", [
        ("<retired_count>0<", "<retired_count>4<"),  # multiple_single_bit_retirement
        ("<retired_count>0<", "<retired_count>1<"),  # double_bit_retirement
        ("<pending_retirement>No<", "<pending_retirement>Yes<"),
    ])
    gpus = parse_query_xml(text)["gpus"]
    ecc = gpus[0]["ecc"]
    assert (ecc["volatile_corrected"], ecc["volatile_uncorrected"]) == (3, 1)
    assert (ecc["aggregate_corrected"], ecc["aggregate_uncorrected"]) == (7, 2)
    assert (ecc["retired_pages_single_bit"], ecc["retired_pages_double_bit"]) == (4, 1)
    assert ecc["retired_pages_pending"] is True
    assert gpus[1]["ecc"]["aggregate_corrected"] == 0
    assert gpus[1]["ecc"]["retired_pages_pending"] is False


def test_ecc_disabled_counters_na_are_none():
    text = read("h200_vm/q_x.out")
    start = text.index("<ecc_errors>")
    end = text.index("</ecc_errors>")
    text = (text[:start] + text[start:end].replace(">0<", ">N/A<") + text[end:]).replace(
        "<current_ecc>Enabled<", "<current_ecc>Disabled<")
    ecc = only_gpu(text)["ecc"]
    assert ecc["mode"] == "Disabled"
    for key in ("volatile_uncorrected", "volatile_corrected", "aggregate_uncorrected",
                "aggregate_corrected"):
        assert ecc[key] is None, key


def test_collapsed_blocks_are_none():
    text = read("h200_vm/q_x.out")
    for tag in ("ecc_errors", "retired_pages", "remapped_rows"):
        start = text.index("<%s>" % tag)
        end = text.index("</%s>" % tag) + len("</%s>" % tag)
        text = text[:start] + "<%s>N/A</%s>" % (tag, tag) + text[end:]
    ecc = only_gpu(text)["ecc"]
    assert ecc["mode"] == "Enabled"
    assert set(ecc) == ECC_KEYS
    assert all(ecc[key] is None for key in ECC_KEYS - {"mode"})


def test_mig_device_with_na_values():
    text = read(QX_02)
    text = replace_in_block(text, "<mig_device>", "</mig_device>", [
        ("<multiprocessor_count>14<", "<multiprocessor_count>N/A<"),
        ("<sram_uncorrectable>0<", "<sram_uncorrectable>N/A<"),
        ("<total>19968 MiB<", "<total>N/A<"),
    ])
    devices = only_gpu(text)["mig_devices"]
    assert devices[0] == {"index": 0, "gpu_instance_id": 3, "compute_instance_id": 0,
                          "multiprocessor_count": None, "memory_total_mib": None,
                          "volatile_uncorrected": None}
    assert devices[1]["memory_total_mib"] == 19968


# ---- facts ---------------------------------------------------------------------------------

def test_facts_carry_mig_devices_and_ecc_and_fill_unknown_gpus():
    facts = build_gpu_topology({"qx": read(QX_02), "topo": read(TOPO_03)})
    assert facts["gpu_count"] == 4
    gpu = facts["gpus"][1]  # the one <gpu> block, minor_number 1
    assert [d["gpu_instance_id"] for d in gpu["mig_devices"]] == [3, 4, 5, 6]
    assert gpu["mig_device_count"] == 4
    assert set(gpu["mig_devices"][0]) == MIG_DEVICE_KEYS
    assert gpu["ecc"]["aggregate_corrected"] == 0
    assert gpu["ecc"]["remapped_rows_pending"] is None
    for index in (0, 2, 3):  # not in -q -x: same keys, nothing known
        other = facts["gpus"][index]
        assert other["mig_devices"] == [] and other["mig_device_count"] == 0
        assert set(other["ecc"]) == ECC_KEYS
        assert all(value is None for value in other["ecc"].values())


def test_err_fields_in_one_gpu_of_xml_mark_it_unhealthy_and_keep_the_others():
    # Planted fault: GPU 00000000:00:10.0 of the real 8x V100S capture answers ERR!/Unknown Error in the
    # fields the plain table showed as ERR! for the A40 of NVIDIA/open-gpu-kernel-modules#446.
    import re
    text = read(QX_03)
    start = text.index('<gpu id="00000000:00:10.0">')
    end = text.index("</gpu>", start)
    block = text[start:end]
    block = re.sub(r"<gpu_temp>[^<]*</gpu_temp>", "<gpu_temp>Unknown Error</gpu_temp>", block, count=1)
    block = re.sub(r"<performance_state>[^<]*</performance_state>",
                   "<performance_state>ERR!</performance_state>", block, count=1)
    qx = parse_query_xml(text[:start] + block + text[end:])
    bad = [g for g in qx["gpus"] if not g["healthy"]]
    assert [g["pci_bus_id"] for g in bad] == ["00000000:00:10.0"]
    assert "temperature/gpu_temp 'Unknown Error'" in bad[0]["reason"]
    assert "performance_state 'ERR!'" in bad[0]["reason"]
    assert len([g for g in qx["gpus"] if g["healthy"]]) == 7
