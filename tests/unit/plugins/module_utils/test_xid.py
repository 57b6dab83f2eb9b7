# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""NVIDIA's Xid catalog as copied, and the severity rule of ``_xid`` on real kernel-log lines.

The expected counts are the catalog's own (its spreadsheet's "Xids" sheet: 172 rows, codes 1-172,
read 2026-12-03); the expected severities come from the rule written in ``_xid``'s docstring and
docs/compliance.md, typed here per bucket, not taken from the code.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as c
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _xid
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _xid_catalog as cat
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text

H = "gpu01"

# The rule, bucket by bucket (docs/compliance.md, "kernel_log").
RULE = {
    "RESTART_APP": "warn", "WORKFLOW_XID_45": "warn", "IGNORE": "info",
    "RESET_GPU": "fail", "RESTART_BM": "fail", "RESTART_VM": "fail", "CONTACT_SUPPORT": "fail",
    "CHECK_MECHANICALS": "fail", "CHECK_UVM": "fail", "UPDATE_SWFW": "fail", "WORKFLOW_XID_48": "fail",
    "WORKFLOW_NVLINK_ERR": "fail", "WORKFLOW_NVLINK5_ERR": "fail", "": "fail",
}


def test_catalog_rows_as_published():
    assert cat.COLUMNS[:3] == ("code", "mnemonic", "description")
    assert len(cat.ROWS) == 172
    assert [row[0] for row in cat.ROWS] == list(range(1, 173))
    assert all(len(row) == len(cat.COLUMNS) for row in cat.ROWS)
    assert cat.CATALOG_SOURCE == "https://docs.nvidia.com/deploy/xid-errors/analyzing-xid-catalog.html"
    # spot checks against the published table
    assert _xid.catalog_entry(79)["mnemonic"] == "ROBUST_CHANNEL_GPU_HAS_FALLEN_OFF_THE_BUS"
    assert _xid.catalog_entry(48)["immediate_action"] == "WORKFLOW_XID_48"
    assert [_xid.catalog_entry(x)["description"] for x in range(144, 151)] == [
        "NVLINK: SAW Error", "NVLINK: RLW Error", "NVLINK: TLW Error", "NVLINK: TREX Error",
        "NVLINK: NVLPW_CTRL Error", "NVLINK: NETIR Error", "NVLINK: MSE Error"]
    assert _xid.catalog_entry(173) is None


def test_every_bucket_of_the_catalog_has_a_rule():
    buckets = set(row[cat.COLUMNS.index("immediate_action")] for row in cat.ROWS)
    assert buckets - {"XID_154"} <= set(RULE), buckets - set(RULE)


@pytest.mark.parametrize("code", [row[0] for row in cat.ROWS])
def test_rule_per_row(code):
    entry = _xid.catalog_entry(code)
    if entry["immediate_action"] == "XID_154":
        assert _xid.classify(code, "GPU recovery action changed from 0x0 (None) to 0x1 (GPU Reset Required)")["severity"] == "fail"
        assert _xid.classify(code, "GPU recovery action changed from 0x1 (GPU Reset Required) to 0x0 (None)")["severity"] == "info"
    else:
        assert _xid.classify(code, "Fatal")["severity"] == RULE[entry["immediate_action"]]


def test_not_in_catalog_is_a_failure():
    meaning = _xid.classify(250, "something new")
    assert meaning["severity"] == "fail" and meaning["mnemonic"] is None
    assert "not in NVIDIA's catalog" in meaning["rule"]


def test_xid45_caused_by_nvlink_xid_is_hardware():
    events = c.parse_kernel_log(fixture_text("real/public/xid_20_xid45_caused_by_previous_xid149_145_journal_4gpus.txt"))
    assert events and all(e["xid"] == 45 for e in events)
    findings = c.check_kernel_log(H, events, "journal")
    assert [f["status"] for f in findings] == ["fail"] * len(events)
    assert findings[0]["actual"].startswith("Xid 45 (ROBUST_CHANNEL_PREEMPTIVE_REMOVAL) on GPU 0000:dc:00")
    assert findings[0]["actual"].endswith("[root cause Xid 149 (NVLINK_NETIR_ERROR)]")
    assert "caused by previous Xid 149" in findings[0]["remediation"]
    assert "WORKFLOW_NVLINK5_ERR" in findings[0]["remediation"]
    # the same Xid 45 without a root cause is the application's
    alone = "NVRM: Xid (PCI:0000:dc:00): 45, pid=1818990, name=python3, Ch 00000001"
    assert [f["status"] for f in c.check_kernel_log(H, c.parse_kernel_log(alone), "journal")] == ["warn"]


def test_gb200_nvlink5_fatal_and_recovery_action():
    events = c.parse_kernel_log(fixture_text("real/public/xid_21_gb200_dmesg_xid149_netir_link_evt_then_xid154_recovery_action.txt"))
    by = [(e["xid"], _xid.classify(e["xid"], e["message"])["severity"]) for e in events]
    assert (149, "fail") in by and (154, "fail") in by
    assert all(sev == "fail" for code, sev in by if code in (149, 154))


def test_gb200_nvlink5_nonfatal_warns():
    events = c.parse_kernel_log(fixture_text("real/public/xid_22_gb200_nvlink5_xid145_149_production_lines_no_timestamps.txt"))
    assert set(e["xid"] for e in events) == {145, 149}
    for event in events:
        expected = "warn" if " Nonfatal " in event["message"] else "fail"
        assert _xid.classify(event["xid"], event["message"])["severity"] == expected


@pytest.mark.parametrize("name, xid", [
    ("xid_23_rtx5090_xid79_fallen_off_bus_gsp_rc_595_author_elision.txt", 79),
    ("xid_24_dmesg_T_xid119_gsp_rpc_timeout_rpc_history_gpu4.txt", 119),
])
def test_hardware_xids_fail(name, xid):
    events = [e for e in c.parse_kernel_log(fixture_text("real/public/" + name)) if e["xid"] == xid]
    assert events
    assert all(f["status"] == "fail" for f in c.check_kernel_log(H, events, "dmesg"))


def test_ignored_xid_is_named_in_the_pass():
    events = c.parse_kernel_log(fixture_text("real/public/xid_01_xid63_row_remapper_pending.txt"))
    f = c.check_kernel_log(H, events, "file")
    assert len(f) == 1 and f[0]["status"] == "pass"
    assert f[0]["actual"] == "none failing in file; NVIDIA's catalog says to ignore: Xid 63 on GPU 0000:10:1c"


def test_mig_attributed_xid_is_read():
    # the driver's XID_PRINT_WITH_ATTR form (NVIDIA open-gpu-kernel-modules); PLANTED line in that form
    line = "NVRM: Xid (PCI:0000:4b:00 GPU-I:07 GPU-CI:00): 94, pid=1, Ch 00000008, errorString CTX SWITCH TIMEOUT"
    events = c.parse_kernel_log(line)
    assert [(e["xid"], e["pci"], e["mig"]) for e in events] == [(94, "0000:4b:00", "GPU-I:07 GPU-CI:00")]
    line48 = "NVRM: Xid (PCI:0000:4b:00 GPU-I:07): 48, pid=1, DBE"
    assert [f["status"] for f in c.check_kernel_log(H, c.parse_kernel_log(line48), "dmesg")] == ["fail"]


def test_caused_by_a_nonfatal_root_reads_the_root_event():
    text = ("NVRM: Xid (PCI:0018:01:00): 145, RLW_SRC_TRACK Nonfatal XC1 i0 Link 12 (0x040988e2 0x00000008)\n"
            "NVRM: Xid (PCI:0018:01:00): 45, pid=7, name=python3, Ch 00000001 caused by previous Xid 145\n")
    assert [f["status"] for f in c.check_kernel_log(H, c.parse_kernel_log(text), "dmesg")] == ["warn", "warn"]


def test_an_xid_after_an_open_fallen_off_message_is_not_swallowed():
    text = ("NVRM: The NVIDIA GPU 0000:b3:00.0\n"
            "NVRM: Xid (PCI:0000:b3:00): 48, pid=1, DBE\n")
    events = c.parse_kernel_log(text)
    assert [e["xid"] for e in events] == [48]
