# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The compliance catalog: each check fed planted readings must give the exact finding.

Readings are small dicts shaped like the ``gpu_topology`` facts (or, where a real capture shows
the case, facts built from that capture). Expected findings were written from the rules in the
issue, not by running the checks.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as c
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import instances_from_env
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import (
    build_gpu_topology,
)
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text


H = "gpu01"


def only(findings, status=None):
    assert len(findings) == 1, findings
    if status:
        assert findings[0]["status"] == status, findings[0]
    return findings[0]


def ecc(**kw):
    base = {"mode": "Enabled", "volatile_uncorrected": 0, "volatile_corrected": 0,
            "aggregate_uncorrected": 0, "aggregate_corrected": 0,
            "retired_pages_single_bit": None, "retired_pages_double_bit": None,
            "retired_pages_pending": None, "remapped_rows_correctable": 0,
            "remapped_rows_uncorrectable": 0, "remapped_rows_pending": False,
            "remapped_rows_failure": False}
    base.update(kw)
    return base


def topo(n=2, links=None, nvlinks=None, driver="535.104.05", eccs=None, healthy=None):
    gpus = []
    for i in range(n):
        gpus.append({"index": i, "pci_bus_id": "00000000:%02X:00.0" % (i + 1),
                     "healthy": True if healthy is None else healthy[i], "reason": None,
                     "ecc": (eccs or {}).get(i, ecc()),
                     "nvlinks": (nvlinks or {}).get(i, [])})
    if links is None:
        links = [["X" if i == j else "SYS" for j in range(n)] for i in range(n)]
    return {"available": True, "reason": None, "driver_version": driver, "gpu_count": n,
            "gpus": gpus, "links": links}


# --- finding / summary -------------------------------------------------------------------------

def test_finding_shape_and_severity():
    f = c.finding("ecc_mode", "fail", H, "Enabled", "Disabled", "fix it", "GPU 1")
    assert f == {"id": "ecc_mode", "check": c.CHECKS["ecc_mode"], "subject": "GPU 1",
                 "status": "fail", "severity": "fail", "host": H, "expected": "Enabled",
                 "actual": "Disabled", "remediation": "fix it"}
    assert c.finding("ecc_mode", "pass", H, 1, 1, "x")["severity"] == "info"
    assert c.finding("ecc_mode", "pass", H, 1, 1, "x")["remediation"] == ""
    assert c.finding("ecc_mode", "not_applicable", H, 1, 1)["severity"] == "info"
    assert c.finding("ecc_mode", "warn", H, 1, 1)["severity"] == "warn"
    with pytest.raises(ValueError):
        c.finding("no_such_check", "pass", H, 1, 1)
    with pytest.raises(ValueError):
        c.finding("ecc_mode", "ok", H, 1, 1)


def test_summary_verdict():
    items = [c.finding("ecc_mode", "pass", H, 1, 1), c.finding("sysctl", "warn", H, 1, 2),
             c.finding("units", "fail", H, 1, 2), c.finding("units", "fail", H, 1, 2),
             c.finding("cron", "not_applicable", H, 1, 2)]
    s = c.summarize(H, items, "post_deploy")
    assert s == {"host": H, "mode": "post_deploy", "compliant": False, "status": "fail",
                 "counts": {"pass": 1, "fail": 2, "warn": 1, "not_applied": 0, "not_applicable": 1},
                 "failed_checks": ["units"], "warned_checks": ["sysctl"]}
    assert c.summarize(H, items[:2])["status"] == "warn"
    assert c.summarize(H, items[:2])["compliant"] is True
    # not applied (nothing recorded yet): a warning, never a pass, never a failure
    bare = c.summarize(H, [items[0], c.finding("packages", "not_applied", H, 1, 2)])
    assert (bare["status"], bare["compliant"], bare["warned_checks"]) == ("warn", True, ["packages"])
    assert bare["counts"]["not_applied"] == 1


def test_version_tuple():
    assert c.version_tuple("530.30.02") == (530, 30, 2)
    assert c.version_tuple("580.159.04") > c.version_tuple("530.30.02")
    assert c.version_tuple("525.60.13") < c.version_tuple("530.30.02")
    assert c.version_tuple("") is None
    assert c.version_tuple("N/A") is None


# --- driver / count --------------------------------------------------------------------------

def test_driver_new_enough_real_h200():
    facts = build_gpu_topology({"qx": fixture_text("real/h200_vm/q_x.out"), "topo": fixture_text("real/h200_vm/topo_m.out")})
    f = only(c.check_driver(H, facts, "530.30.02"), "pass")
    assert f["actual"] == "580.159.04" and f["expected"] == ">= 530.30.02"


def test_driver_too_old():
    f = only(c.check_driver(H, topo(driver="525.60.13"), "530.30.02"), "fail")
    assert f["actual"] == "525.60.13" and "530.30.02" in f["remediation"]


def test_driver_absent_real_failure_output():
    facts = build_gpu_topology({"qx": fixture_text("real/public/smi_fail_06_couldnt_communicate_with_driver.txt")})
    f = only(c.check_driver(H, facts, "530.30.02"), "fail")
    assert "couldn't communicate with the NVIDIA driver" in f["actual"]


def test_gpu_count_matches():
    f = only(c.check_gpu_count(H, topo(6), 6), "pass")
    assert f["actual"] == "6 GPU(s), 6 healthy"


def test_gpu_count_one_missing():
    f = only(c.check_gpu_count(H, topo(5), 6), "fail")
    assert f["expected"] == "6" and f["actual"] == "5 GPU(s), 5 healthy"


def test_gpu_count_unhealthy_gpu_is_its_own_finding():
    out = c.check_gpu_count(H, topo(2, healthy=[True, False]), 2)
    assert [(f["subject"], f["status"]) for f in out] == [("GPU 1", "fail"), ("host", "fail")]


def test_gpu_count_not_set_is_not_applicable():
    f = only(c.check_gpu_count(H, topo(1), 0), "not_applicable")
    assert f["actual"] == "1 GPU(s), 1 healthy"


# --- ECC ----------------------------------------------------------------------------------

def statuses(findings, check_id):
    return [(f["subject"], f["status"]) for f in findings if f["id"] == check_id]


def test_ecc_all_clean():
    out = c.check_ecc(H, topo(2))
    assert statuses(out, "ecc_mode") == [("GPU 0", "pass"), ("GPU 1", "pass")]
    assert statuses(out, "ecc_uncorrectable") == [("GPU 0", "pass"), ("GPU 1", "pass")]
    assert statuses(out, "ecc_remap") == [("GPU 0", "pass"), ("GPU 1", "pass")]


def test_ecc_disabled_fails():
    out = c.check_ecc(H, topo(2, eccs={1: ecc(mode="Disabled")}))
    assert statuses(out, "ecc_mode") == [("GPU 0", "pass"), ("GPU 1", "fail")]


def test_ecc_volatile_uncorrectable_fails():
    out = c.check_ecc(H, topo(2, eccs={0: ecc(volatile_uncorrected=2, aggregate_uncorrected=2)}))
    f = [x for x in out if x["id"] == "ecc_uncorrectable" and x["subject"] == "GPU 0"][0]
    assert f["status"] == "fail" and f["actual"] == "volatile 2, aggregate 2"


def test_ecc_aggregate_only_warns():
    out = c.check_ecc(H, topo(1, eccs={0: ecc(aggregate_uncorrected=3)}))
    assert statuses(out, "ecc_uncorrectable") == [("GPU 0", "warn")]


def test_ecc_remap_pending_real_a10_capture():
    # public/qx_01: Remapped Rows Uncorrectable 4, Pending Yes; that file is -q text, so the
    # same state is planted into the facts shape.
    out = c.check_ecc(H, topo(1, eccs={0: ecc(remapped_rows_uncorrectable=4, remapped_rows_pending=True)}))
    f = [x for x in out if x["id"] == "ecc_remap"][0]
    assert f["status"] == "fail" and f["actual"] == "row remap pending"


def test_ecc_retired_pages_over_threshold():
    e = ecc(retired_pages_single_bit=3, retired_pages_double_bit=1, retired_pages_pending=False)
    assert statuses(c.check_ecc(H, topo(1, eccs={0: e}), 4), "ecc_remap") == [("GPU 0", "pass")]
    f = [x for x in c.check_ecc(H, topo(1, eccs={0: e}), 3) if x["id"] == "ecc_remap"][0]
    assert f["status"] == "fail" and f["actual"] == "4 retired pages (max 3)"


def test_ecc_not_available_consumer_gpu():
    e = dict((k, None) for k in ecc())
    out = c.check_ecc(H, topo(1, eccs={0: e}))
    assert [f["status"] for f in out] == ["not_applicable"] * 3


def test_ecc_real_v100_xml_zero_counters():
    facts = build_gpu_topology({"qx": fixture_text("real/public/qx_03_v100s_8gpu_vm_full_xml_v11_accounting_zero_ecc_empty_pagelist.txt")})
    out = c.check_ecc(H, facts)
    assert set(f["status"] for f in out if f["id"] != "ecc_remap") == {"pass"}
    assert len(out) == 24


# --- NVLink / fabric manager -------------------------------------------------------------

def nv(n, dead=()):
    return [{"link": k, "state": "inactive" if k in dead else "active",
             "speed_gbps": None if k in dead else 25.0} for k in range(n)]


PAIRS = [["X", "NV12", "SYS"], ["NV12", "X", "SYS"], ["SYS", "SYS", "X"]]


def test_tp_groups_split_pp():
    inst = [{"name": "n0-0", "gpus": [0, 1, 2, 3], "tensor_parallel_size": 2},
            {"name": "n1-0", "gpus": [4], "tensor_parallel_size": 1}]
    assert c.tp_groups(inst) == [("n0-0/pp0", [0, 1]), ("n0-0/pp1", [2, 3]), ("n1-0", [4])]


def test_nvlink_active_group_passes():
    t = topo(3, links=PAIRS, nvlinks={0: nv(12), 1: nv(12)})
    f = only(c.check_nvlink(H, t, [{"name": "a", "gpus": [0, 1], "tensor_parallel_size": 2}]), "pass")
    assert f["actual"] == "24 links active" and f["subject"] == "TP group a (GPUs 0,1)"


def test_nvlink_inactive_link_in_group_fails():
    t = topo(3, links=PAIRS, nvlinks={0: nv(12), 1: nv(12, dead=(3,))})
    f = only(c.check_nvlink(H, t, [{"name": "a", "gpus": [0, 1], "tensor_parallel_size": 2}]), "fail")
    assert f["actual"] == "GPU 1 link 3 inactive"


def test_nvlink_inactive_link_outside_groups_is_ignored():
    t = topo(3, links=PAIRS, nvlinks={0: nv(12), 1: nv(12, dead=(3,))})
    out = c.check_nvlink(H, t, [{"name": "a", "gpus": [0], "tensor_parallel_size": 1},
                                {"name": "b", "gpus": [1], "tensor_parallel_size": 1}])
    assert only(out, "not_applicable")["actual"] == "no tensor-parallel group (TP=1)"


def test_nvlink_pcie_group_not_applicable():
    t = topo(3, links=PAIRS)
    f = only(c.check_nvlink(H, t, [{"name": "a", "gpus": [1, 2], "tensor_parallel_size": 2}]),
             "not_applicable")
    assert f["actual"] == "group connected over PCIe only"


def test_nvlink_group_gpu_missing():
    f = only(c.check_nvlink(H, topo(1), [{"name": "a", "gpus": [0, 1], "tensor_parallel_size": 2}]), "fail")
    assert f["actual"] == "GPU 1 not found"


def test_nvlink_real_ndv2_inactive_links():
    facts = build_gpu_topology({"nvlink": fixture_text("real/public/nvlink_err_01_v100_sxm2_ndv2_7gpu_blocks_6_inactive_links_no_eol.txt"),
                                "topo": fixture_text("real/public/topo_05_dgx1_v100_hybrid_cube_mesh_tabs.txt")})
    # topo_05 shows GPU0-GPU3 as NV1/NV2; nvlink_err_01 has inactive links only on GPUs 3,4,5,6
    out = c.check_nvlink(H, facts, [{"name": "a", "gpus": [0, 1], "tensor_parallel_size": 2},
                                    {"name": "b", "gpus": [2, 3], "tensor_parallel_size": 2}])
    assert [f["status"] for f in out] == ["pass", "fail"]
    assert out[1]["actual"].startswith("GPU 3 link ")


def test_fabric_manager_pair_is_not_nvswitch_real_h200x2():
    facts = build_gpu_topology({"topo": fixture_text("real/h200x2_nvlink/topo_m.out")})
    f = only(c.check_fabric_manager(H, facts, None), "not_applicable")
    assert "not an NVSwitch system" in f["actual"]


def test_fabric_completed_in_a_vm_slice_real_h200x2():
    # the real 2x H200 VM: no NVSwitch device, no Fabric Manager, every GPU's fabric Completed
    facts = build_gpu_topology({"qx": fixture_text("real/h200x2_nvlink/q_x.out"),
                                "topo": fixture_text("real/h200x2_nvlink/topo_m.out")})
    assert [g["fabric"] for g in facts["gpus"]] == [{"state": "Completed", "status": "Success"}] * 2
    f = only(c.check_fabric_manager(H, facts, None, []), "pass")
    assert f["actual"].startswith("Completed on 2 GPU(s); no NVSwitch device on this host")


def test_fabric_na_on_one_gpu_real_h200():
    facts = build_gpu_topology({"qx": fixture_text("real/h200_vm/q_x.out"), "topo": fixture_text("real/h200_vm/topo_m.out")})
    assert facts["gpus"][0]["fabric"] == {"state": None, "status": None}
    assert fixture_text("real/h200_health/nvswitch_proc.out").count("\n") > 0  # the empty devices/ dir, captured
    only(c.check_fabric_manager(H, facts, None, []), "not_applicable")


def _nvswitch_facts(state):
    # PLANTED: the real h200x2 -q -x with each GPU's fabric state as public/q_fabric_20 (AWS p5,
    # Fabric Manager not running) prints it
    qx = fixture_text("real/h200x2_nvlink/q_x.out").replace("<state>Completed</state>", "<state>%s</state>" % state)
    return build_gpu_topology({"qx": qx, "topo": fixture_text("real/h200x2_nvlink/topo_m.out")})


def test_fabric_in_progress_fails_with_the_802_fix():
    assert "In Progress" in fixture_text("real/public/q_fabric_20_h100_p5_570_grep_fabric_in_progress_status_na.txt")
    f = only(c.check_fabric_manager(H, _nvswitch_facts("In Progress"), "inactive", ["0000:05:00.0"],
                                    {"nvidia-fabricmanager-580": "580.159.04-1"}), "fail")
    assert f["actual"] == "nvidia-fabricmanager inactive; GPU 0 In Progress/Success; GPU 1 In Progress/Success"
    assert "error 802" in f["remediation"]
    f = only(c.check_fabric_manager(H, _nvswitch_facts("In Progress"), None, []), "fail")
    assert f["actual"] == "GPU 0 In Progress/Success; GPU 1 In Progress/Success"


def test_fabric_manager_version_must_match_the_driver():
    facts = _nvswitch_facts("Completed")
    f = only(c.check_fabric_manager(H, facts, "active", ["0000:05:00.0"], {"nvidia-fabricmanager-590": "590.48.01-1"}),
             "fail")
    assert f["actual"].startswith("nvidia-fabricmanager-590 590.48.01-1 installed for driver 580.159.04")
    f = only(c.check_fabric_manager(H, facts, "active", ["0000:05:00.0"], {}), "fail")
    assert f["actual"] == "no nvidia-fabricmanager package installed"
    f = only(c.check_fabric_manager(H, facts, "active", ["0000:05:00.0"], {"nvidia-fabricmanager-580": "580.159.04-1"}),
             "pass")
    assert f["actual"] == "active, nvidia-fabricmanager-580 580.159.04-1, Completed on 2 GPU(s)"


def test_fabric_manager_required_on_8_gpu_all_to_all():
    facts = build_gpu_topology({"topo": fixture_text("real/public/topo_01_a100_sxm4_8nic_no_gpunumaid.txt")})
    assert only(c.check_fabric_manager(H, facts, "inactive"), "fail")["actual"] == "nvidia-fabricmanager inactive"
    assert only(c.check_fabric_manager(H, facts, None), "fail")["actual"] == \
        "nvidia-fabricmanager state unknown (no systemd)"
    assert only(c.check_fabric_manager(H, facts, "active"), "pass")


def test_fabric_manager_hybrid_cube_mesh_is_not_nvswitch():
    facts = build_gpu_topology({"topo": fixture_text("real/public/topo_05_dgx1_v100_hybrid_cube_mesh_tabs.txt")})
    only(c.check_fabric_manager(H, facts, None), "not_applicable")


# --- kernel log ---------------------------------------------------------------------------

def test_xid_01_syslog_bare_row_remapper():
    events = c.parse_kernel_log(fixture_text("real/public/xid_01_xid63_row_remapper_pending.txt"))
    assert events == [{"kind": "xid", "xid": 63, "pci": "0000:10:1c", "mig": None, "pid": "1896", "timestamp": None,
                       "message": "NVRM: Xid (PCI:0000:10:1c): 63, pid=1896, Row Remapper: New row marked "
                                  "for remapping, reset gpu to activate.", "line": 1}]


def test_xid_02_fallen_off_bus_multiline():
    events = c.parse_kernel_log(fixture_text("real/public/xid_02_fallen_off_bus_multiline_no_xid.txt"))
    assert len(events) == 1
    e = events[0]
    assert (e["kind"], e["xid"], e["pci"], e["timestamp"], e["line"]) == \
        ("fallen_off_bus", None, "0000:b3:00.0", "1843.308145", 1)
    assert e["message"] == ("NVRM: The NVIDIA GPU 0000:b3:00.0 NVRM: (PCI ID: 10de:26b5) installed in "
                            "this system has NVRM: fallen off the bus and is not responding to commands.")


def test_xid_04_journal_three_gpus():
    events = c.parse_kernel_log(fixture_text("real/public/xid_04_xid31_mmu_fault_three_gpus_syslog.txt"))
    assert [(e["xid"], e["pci"], e["pid"], e["timestamp"], e["line"]) for e in events] == [
        (31, "0000:5e:00", "223309", "Jan 10 13:04:04", 1),
        (31, "0000:86:00", "223309", "Jan 10 13:04:04", 3),
        (31, "0000:af:00", "223309", "Jan 10 13:04:04", 4)]


@pytest.mark.parametrize("capture", ["h200_vm", "h200x2_nvlink"])
def test_real_h200_dmesg_has_no_events(capture):
    text = fixture_text("real/%s/dmesg_nv.out" % capture)
    assert "NVRM" in text
    assert c.parse_kernel_log(text) == []


def test_xid_inside_dmesg_timestamp_and_journal_iso():
    text = ("[ 5123.000001] NVRM: Xid (PCI:0000:3b:00): 79, pid=0, GPU has fallen off the bus.\n"
            "2025-01-10T13:04:04+0000 gpu01 kernel: NVRM: Xid (PCI:0000:86:00): 48, pid=1, DBE\n"
            "Jan 10 13:04:06 gpu01 sshd[12]: NVRM: Xid (PCI:0000:aa:00): 13, not kernel\n")
    events = c.parse_kernel_log(text)
    assert [(e["xid"], e["timestamp"]) for e in events] == [
        (79, "5123.000001"), (48, "2025-01-10T13:04:04+0000")]


def test_check_kernel_log_classifies():
    events = c.parse_kernel_log(fixture_text("real/public/xid_04_xid31_mmu_fault_three_gpus_syslog.txt"))
    assert [f["status"] for f in c.check_kernel_log(H, events, "file")] == ["warn"] * 3
    events = c.parse_kernel_log(fixture_text("real/public/xid_01_xid63_row_remapper_pending.txt"))
    only(c.check_kernel_log(H, events, "file"), "pass")  # IGNORE in the catalog; ecc_remap reads the remap
    events = c.parse_kernel_log("NVRM: Xid (PCI:0000:10:1c): 48, pid=1, DBE")
    f = only(c.check_kernel_log(H, events, "file"), "fail")
    assert f["actual"].startswith("Xid 48 (ROBUST_CHANNEL_GPU_ECC_DBE) on GPU 0000:10:1c")
    events = c.parse_kernel_log(fixture_text("real/public/xid_02_fallen_off_bus_multiline_no_xid.txt"))
    assert only(c.check_kernel_log(H, events, "dmesg"), "fail")["subject"] == "GPU 0000:b3:00.0"
    assert only(c.check_kernel_log(H, [], "journal"), "pass")["actual"] == "none in journal"
    f = only(c.check_kernel_log(H, None, "dmesg", "Operation not permitted"), "not_applicable")
    assert f["actual"] == "kernel log not readable (dmesg): Operation not permitted"


# --- layout -------------------------------------------------------------------------------

def test_layout():
    assert only(c.check_layout(H, requested=False), "not_applicable")
    f = only(c.check_layout(H, error="TP 3 does not divide 28 heads"), "fail")
    assert f["actual"] == "TP 3 does not divide 28 heads"
    plan = {"instances": [{"name": "n0-0", "gpus": [0, 1], "tensor_parallel_size": 2,
                           "pipeline_parallel_size": 1}]}
    assert only(c.check_layout(H, plan), "pass")["actual"] == "n0-0: GPUs [0, 1] TP=2 PP=1"


# --- packages -----------------------------------------------------------------------------

WANT = {"libnccl2": "2.14.3-1+cuda11.7", "cuda-toolkit-12-1": "12.1.1-1"}


def test_packages_installed_and_held():
    out = c.check_packages(H, WANT, dict(WANT), set(WANT))
    assert [(f["subject"], f["status"]) for f in out] == [("cuda-toolkit-12-1", "pass"), ("libnccl2", "pass")]


def test_packages_hold_removed():
    out = c.check_packages(H, WANT, dict(WANT), {"cuda-toolkit-12-1"})
    f = out[1]
    assert (f["subject"], f["status"], f["actual"]) == ("libnccl2", "fail", "2.14.3-1+cuda11.7 installed, not held")


def test_packages_removed_and_drifted():
    installed = {"cuda-toolkit-12-1": "12.1.0-1"}
    out = c.check_packages(H, WANT, installed, set())
    assert [(f["subject"], f["status"], f["actual"]) for f in out] == [
        ("cuda-toolkit-12-1", "fail", "12.1.0-1 installed"), ("libnccl2", "fail", "not installed")]


def test_a_hold_cuda_stack_did_not_set_warns_that_it_will_be_overridden():
    # libnccl2 held by someone else (an image's pin), the toolkit held by cuda_stack (its record)
    out = c.check_foreign_holds(H, WANT, {"libnccl2", "cuda-toolkit-12-1", "unrelated-pkg"}, ["cuda-toolkit-12-1"])
    f = only(out, "warn")
    assert (f["subject"], f["severity"]) == ("libnccl2", "warn")
    assert f["actual"] == "held (apt-mark showhold), and cuda_stack recorded no hold of libnccl2: someone else holds it"
    assert f["remediation"].startswith("site.yml (cuda_stack) will override this hold: it installs "
                                       "libnccl2=2.14.3-1+cuda11.7 over it")
    assert "cuda_stack_state=absent releases it later" in f["remediation"]
    # before cuda_stack ran (no record) every held pin is someone else's
    assert [x["subject"] for x in c.check_foreign_holds(H, WANT, set(WANT), [])] == sorted(WANT)
    # nothing held, all held by cuda_stack, holds unknown (no apt-mark or dpkg): nothing to say
    assert c.check_foreign_holds(H, WANT, set(), []) == []
    assert c.check_foreign_holds(H, WANT, set(WANT), list(WANT)) == []
    assert c.check_foreign_holds(H, WANT, None, []) == []


def test_packages_not_deployed_or_no_dpkg():
    assert only(c.check_packages(H, WANT, {}, set(), deployed=False), "not_applicable")
    assert only(c.check_packages(H, WANT, None, None), "not_applicable")["actual"] == "no dpkg on this host"
    assert only(c.check_packages(H, {}, {}, set()), "not_applicable")


def test_packages_real_h200_image_holds_other_nccl_before_rollout_warns():
    # h200_vm / h200x2_nvlink: libnccl2 2.28.3-1+cuda13.0 installed and held by the image, not the pinned
    # build. Before the rollout that is what cuda_stack will change (it may change held packages), so
    # it warns that another version will be replaced; the toolkit not installed yet is not applicable.
    out = c.check_packages(H, WANT, {"libnccl2": "2.28.3-1+cuda13.0"}, {"libnccl2"}, deployed=False)
    assert [(f["subject"], f["status"], f["actual"]) for f in out] == [
        ("cuda-toolkit-12-1", "not_applicable", "not deployed (not installed yet)"),
        ("libnccl2", "warn", "2.28.3-1+cuda13.0 installed")]
    assert "replace libnccl2 2.28.3-1+cuda13.0 with 2.14.3-1+cuda11.7" in out[1]["remediation"]


def test_packages_after_rollout_the_same_state_fails():
    out = c.check_packages(H, WANT, {"libnccl2": "2.28.3-1+cuda13.0"}, {"libnccl2"}, deployed=True)
    assert [(f["subject"], f["status"]) for f in out] == [("cuda-toolkit-12-1", "fail"), ("libnccl2", "fail")]


def test_packages_not_applied_without_a_cuda_stack_record():
    # a bare host: nothing recorded, so even a package that happens to be at the pin is not a pass
    out = c.check_packages(H, WANT, {"libnccl2": "2.14.3-1+cuda11.7"}, {"libnccl2"}, deployed=False, recorded=False)
    assert [(f["subject"], f["status"], f["severity"], f["expected"], f["actual"]) for f in out] == [
        ("cuda-toolkit-12-1", "not_applied", "warn", "12.1.1-1 installed and held",
         "not applied: cuda_stack has recorded nothing on this host (now: not installed)"),
        ("libnccl2", "not_applied", "warn", "2.14.3-1+cuda11.7 installed and held",
         "not applied: cuda_stack has recorded nothing on this host (now: 2.14.3-1+cuda11.7 installed)")]
    # no dpkg: the same, without what is installed now
    out = c.check_packages(H, WANT, None, None, recorded=False)
    assert [f["actual"] for f in out] == ["not applied: cuda_stack has recorded nothing on this host"] * 2


def test_recorded_pins_against_the_inventory():
    same = c.check_recorded_pins(H, dict(WANT), dict(WANT))
    assert [(f["subject"], f["status"]) for f in same] == [("cuda_stack record", "pass")]
    asked = dict(WANT, libnccl2="2.18.3-1+cuda12.1")
    after = only(c.check_recorded_pins(H, dict(WANT), asked, deployed=True), "fail")
    assert after["expected"] == "cuda-toolkit-12-1=12.1.1-1, libnccl2=2.18.3-1+cuda12.1"
    assert after["actual"] == "cuda-toolkit-12-1=12.1.1-1, libnccl2=2.14.3-1+cuda11.7"
    assert "re-run site.yml --tags cuda_stack." in after["remediation"]
    before = only(c.check_recorded_pins(H, dict(WANT), asked, deployed=False), "warn")
    assert "(the rollout will)" in before["remediation"]


# --- host tuning / housekeeping --------------------------------------------------------------

REPORT = {"sysctl_file": "/etc/sysctl.d/60-gpu-serving.conf",
          "sysctl_applied": {"vm.swappiness": "0"},
          "sysctl_not_applicable": {"net.core.rmem_max": "key absent in this network namespace"},
          "governor": "not applicable: no cpufreq", "swap": "left as is"}


def test_sysctl_as_tuned_and_not_applicable():
    out = c.check_sysctl(H, REPORT, {"vm.swappiness": "0"})
    assert [(f["subject"], f["status"]) for f in out] == [("vm.swappiness", "pass"),
                                                          ("net.core.rmem_max", "not_applicable")]


def test_sysctl_not_applicable_as_recorded_by_host_tuning():
    # host_tuning stores the sysctl_probe result per key (seen in the molecule run)
    rep = dict(REPORT, sysctl_not_applicable={"vm.swappiness": {
        "present": True, "reason": "read-only: file system mounted read-only", "settable": False}})
    f = c.check_sysctl(H, rep, {"vm.swappiness": "0"})[1]
    assert f["actual"] == "not applicable: read-only: file system mounted read-only"


def test_sysctl_absent_numa_balancing_passes_with_a_note():
    # host_tuning could not set kernel.numa_balancing: this kernel has none (no automatic NUMA
    # balancing), and 0 (off) was wanted; live, the entry is still absent
    probe = {"present": False, "value": None, "settable": False, "satisfied": True,
             "reason": "absent: /proc/sys/kernel/numa_balancing does not exist on this kernel (or not in this "
                       "network namespace)"}
    rep = dict(REPORT, sysctl_wanted={"vm.swappiness": 0, "kernel.numa_balancing": 0},
               sysctl_not_applicable={"kernel.numa_balancing": probe})
    f = c.check_sysctl(H, rep, {"vm.swappiness": "0"}, absent={"kernel.numa_balancing"})[1]
    assert (f["subject"], f["status"], f["severity"], f["expected"]) == ("kernel.numa_balancing", "pass", "info", "0")
    assert f["actual"] == ("absent: this kernel has no automatic NUMA balancing (built without "
                           "CONFIG_NUMA_BALANCING): nothing to turn off")
    # the entry is there now (another kernel booted since): host-owned as before, not a pass
    f = c.check_sysctl(H, rep, {"vm.swappiness": "0"}, absent=set())[1]
    assert f["status"] == "not_applicable" and f["actual"].startswith("not applicable: absent: ")
    # NUMA balancing wanted on: its absence does not satisfy that
    on = dict(rep, sysctl_wanted={"kernel.numa_balancing": 1})
    assert c.check_sysctl(H, on, {}, absent={"kernel.numa_balancing"})[1]["status"] == "not_applicable"


def test_sysctl_absent_key_of_another_namespace_stays_not_applicable():
    rep = dict(REPORT, sysctl_wanted={"net.core.rmem_max": 33554432})
    f = c.check_sysctl(H, rep, {"vm.swappiness": "0"}, absent={"net.core.rmem_max"})[1]
    assert (f["status"], f["actual"]) == ("not_applicable", "not applicable: key absent in this network namespace")


def test_sysctl_drift_fails():
    f = c.check_sysctl(H, REPORT, {"vm.swappiness": "60"})[0]
    assert (f["status"], f["expected"], f["actual"]) == ("fail", "0", "60")


def test_sysctl_and_governor_not_applied_without_a_record():
    # nothing recorded by host_tuning (a bare host): a warning, never a pass
    for f in (only(c.check_sysctl(H, None, {}), "not_applied"), only(c.check_governor(H, None, {}), "not_applied")):
        assert f["severity"] == "warn" and f["expected"] == "as tuned by host_tuning"
        assert f["actual"] == "not applied: host_tuning has recorded nothing on this host"
        assert "site.yml (role host_tuning)" in f["remediation"]


def test_governor():
    assert only(c.check_governor(H, REPORT, {}), "not_applicable")
    rep = dict(REPORT, governor="applied: performance")
    assert only(c.check_governor(H, rep, {"cpu0": "performance", "cpu1": "performance"}), "pass")
    f = only(c.check_governor(H, rep, {"cpu0": "performance", "cpu1": "powersave"}), "fail")
    assert f["actual"] == "1 CPU(s) differ (e.g. cpu1: powersave)"


def test_housekeeping():
    ok = {"binary": True, "config": True, "config_path": "/etc/logrotate.d/vllm"}
    cron = {"binary": True, "config": False, "config_path": "/etc/cron.d/x", "service": "inactive"}
    out = c.check_housekeeping(H, ok, cron)
    assert [(f["id"], f["status"]) for f in out] == [("logrotate", "pass"), ("cron", "fail")]
    assert out[1]["actual"] == "/etc/cron.d/x missing, service inactive"
    none = {"binary": False, "config": False, "config_path": "/p", "service": None}
    assert [f["status"] for f in c.check_housekeeping(H, none, none, deployed=False)] == ["not_applicable"] * 2
    # preflight on a host that has the tools but not our configuration: not deployed yet
    bare = {"binary": True, "config": False, "config_path": "/p", "service": None}
    assert [f["actual"] for f in c.check_housekeeping(H, bare, bare, deployed=False)] == ["not deployed (/p absent)"] * 2
    # deployed: the missing stanza fails
    assert [f["status"] for f in c.check_housekeeping(H, bare, bare)] == ["fail"] * 2
    # nothing recorded by housekeeping: not applied (a warning), whatever is on the host
    out = c.check_housekeeping(H, ok, ok, recorded=False)
    assert [(f["id"], f["status"], f["severity"]) for f in out] == [("logrotate", "not_applied", "warn"),
                                                                    ("cron", "not_applied", "warn")]
    assert out[0]["expected"] == "installed, the vLLM log stanza present"
    # recorded with the cron part turned off (empty path): not applicable, not a failure
    off = {"binary": False, "config": False, "config_path": "", "service": None}
    out = c.check_housekeeping(H, ok, off)
    assert [(f["id"], f["status"], f["actual"]) for f in out] == [
        ("logrotate", "pass", "present"), ("cron", "not_applicable", "turned off in housekeeping")]


# --- units --------------------------------------------------------------------------------

ENV = ("# comment\nCUDA_VISIBLE_DEVICES=0,1\nVLLM_PORT=8001\nVLLM_TENSOR_PARALLEL_SIZE=2\n"
       "VLLM_PIPELINE_PARALLEL_SIZE=1\n")


def test_units_healthy_and_stopped():
    inst = instances_from_env({"n0-0": ENV, "n0-1": ENV.replace("8001", "8002")})
    units = {"n0-0": {"active": "active", "health": 200}, "n0-1": {"active": "inactive", "health": "connection refused"}}
    out = c.check_units(H, inst, units, {"enabled": "enabled", "active": "active"})
    assert [(f["subject"], f["status"]) for f in out] == [
        ("vllm.target", "pass"), ("vllm@n0-0", "pass"), ("vllm@n0-1", "fail")]
    assert out[2]["actual"] == "not active (inactive); GET /health on port 8002: connection refused"


def test_units_not_deployed_and_no_systemd():
    assert only(c.check_units(H, [], {}, deployed=False), "not_applicable")["actual"].startswith("pre_deploy")
    assert only(c.check_units(H, [], None), "not_applicable")["actual"] == "no systemd on this host"
    f = only(c.check_units(H, [], None, deployed=False, recorded=False), "not_applied")
    assert f["severity"] == "warn" and f["actual"] == "not applied: vllm_server has recorded nothing on this host"


def test_units_of_the_active_degraded_layout():
    units = {"n0-0": {"enabled": "enabled", "active": "active", "health": 200},
             "n0-1": {"enabled": "enabled", "active": "failed", "health": None}}
    out = c.check_units(H, [{"name": "n0-0", "port": 8101}, {"name": "n0-1", "port": 8102}], units,
                        {"enabled": "disabled", "active": "active"}, unit="vllm-degraded",
                        target_name="vllm-degraded.target")
    assert [(f["subject"], f["status"]) for f in out] == [
        ("vllm-degraded.target", "fail"), ("vllm-degraded@n0-0", "pass"), ("vllm-degraded@n0-1", "fail")]
    assert "`systemctl enable --now vllm-degraded.target`" in out[0]["remediation"]
    assert "`systemctl restart vllm-degraded@n0-1`" in out[2]["remediation"]


# --- the module's inputs ----------------------------------------------------------------------

def test_modes_and_the_deprecated_alias():
    assert c.MODES == ("auto", "pre_deploy", "post_deploy")
    assert c.resolve_mode("auto", False) == "pre_deploy"
    assert c.resolve_mode("auto", True) == "post_deploy"
    assert c.resolve_mode("preflight", True) == "pre_deploy"     # deprecated alias, new name reported
    assert c.resolve_mode("post_deploy", False) == "post_deploy"


def test_layout_request():
    params = {"model_path": "/srv/m", "model_config": None, "layout": "auto"}
    available = {"available": True}
    assert c.layout_request(params, '{"a": 1}', available, H) == ({"a": 1}, "auto", None, True)
    assert c.layout_request(params, "{x", available, H)[2].startswith("/srv/m/config.json is not valid JSON")
    missing = "no config.json at /srv/m on gpu01 and no model_config"
    assert c.layout_request(params, None, available, H)[2:] == (missing, True)
    assert c.layout_request(dict(params, model_path=None), None, available, H) == (None, None, None, False)
    assert c.layout_request(params, "{}", {"available": False, "reason": "no driver"}, H)[2] == \
        "no usable GPU to plan on: no driver"
    assert c.layout_request(dict(params, layout='[{"gpus": [0]}]'), "{}", available, H)[1] == [{"gpus": [0]}]


# --- a host that can serve at all: device nodes and systemd ------------------------------------

def test_gpu_devices_pass_with_a_node_per_gpu():
    topo = {"gpus": [{"index": 0, "minor_number": 0}, {"index": 1, "minor_number": 1}]}
    f = only(c.check_gpu_devices(H, ["nvidia0", "nvidia1"], [], topo), "pass")
    assert (f["expected"], f["actual"]) == ("/dev/nvidia<minor> character device per GPU", "nvidia0, nvidia1")


def test_gpu_devices_fail_without_nodes_naming_the_fix():
    f = only(c.check_gpu_devices(H, [], ["nvidia0"], None), "fail")
    assert f["actual"] == "no NVIDIA device nodes (nvidia0: not character devices)"
    for words in ("modprobe nvidia", "nvidia-modprobe -c <minor>", "--gpus all", "CDI", "--device /dev/nvidiactl"):
        assert words in f["remediation"], words
    assert only(c.check_gpu_devices(H, [], [], None, "/dev", "Permission denied"), "fail")["actual"] == \
        "cannot list /dev: Permission denied"


def test_gpu_devices_fail_for_a_gpu_whose_node_is_missing():
    # minor numbers need not be the indexes
    topo = {"gpus": [{"index": 0, "minor_number": 2}, {"index": 1, "minor_number": 5}, {"index": 2}]}
    out = c.check_gpu_devices(H, ["nvidia2"], [], topo)
    assert [(f["subject"], f["status"], f["expected"], f["actual"]) for f in out] == [
        ("GPU 1", "fail", "/dev/nvidia5", "missing (present: nvidia2)")]


def test_systemd_as_pid1_passes():
    f = only(c.check_systemd(H, True, "/usr/bin/systemctl", "systemd"), "pass")
    assert (f["expected"], f["actual"]) == ("systemd as PID 1", "systemd (PID 1 systemd)")


@pytest.mark.parametrize("booted, systemctl, pid1, actual", [
    # the real H200 VM (a container): PID 1 is the runtime's process, systemctl is installed
    (False, "/usr/bin/systemctl", "process_api", "not booted with systemd (no /run/systemd/system); PID 1 is process_api"),
    (False, None, None, "not booted with systemd (no /run/systemd/system); no systemctl"),
    (True, None, "systemd", "no systemctl"),
    # the runtime directory gone under a running systemd: the tools then say it is not booted
    (False, "/usr/bin/systemctl", "systemd", "not booted with systemd (no /run/systemd/system)"),
])
def test_no_systemd_fails(booted, systemctl, pid1, actual):
    f = only(c.check_systemd(H, booted, systemctl, pid1), "fail")
    assert f["actual"] == actual and f["severity"] == "fail"
    assert f["remediation"].startswith("The vLLM instances run as systemd units")


def test_retired_pages_na_on_real_h200_is_unknown_not_zero():
    facts = build_gpu_topology({"qx": fixture_text("real/h200x2_nvlink/q_x.out"),
                                "topo": fixture_text("real/h200x2_nvlink/topo_m.out")})
    remap = [f for f in c.check_ecc(H, facts) if f["id"] == "ecc_remap"]
    assert [f["actual"] for f in remap] == ["none pending, retired pages unknown (nvidia-smi: N/A)"] * 2
    one = dict(facts["gpus"][0])
    one["ecc"] = dict(one["ecc"], retired_pages_single_bit=2)
    f = [x for x in c.check_ecc(H, {"gpus": [one]}, retired_pages_max=3) if x["id"] == "ecc_remap"][0]
    assert f["actual"] == "none pending, 2 retired pages (double-bit count N/A)"


def test_persistence_mode():
    facts = build_gpu_topology({"qx": fixture_text("real/h200x2_nvlink/q_x.out"),
                                "topo": fixture_text("real/h200x2_nvlink/topo_m.out")})
    assert [g["persistence_mode"] for g in facts["gpus"]] == ["Enabled", "Enabled"]
    f = only(c.check_persistence(H, facts, False), "pass")
    assert f["actual"] == "Enabled on 2 GPU(s); nvidia-persistenced not running"
    # PLANTED: the real capture with GPU 1's persistence turned off (smi_persist_20 shows Off on 8x H100)
    off = build_gpu_topology({"qx": fixture_text("real/h200x2_nvlink/q_x.out").replace(
        "<persistence_mode>Enabled</persistence_mode>", "<persistence_mode>Disabled</persistence_mode>", 2).replace(
        "<persistence_mode>Disabled</persistence_mode>", "<persistence_mode>Enabled</persistence_mode>", 1),
        "topo": fixture_text("real/h200x2_nvlink/topo_m.out")})
    f = only(c.check_persistence(H, off, None), "fail")
    assert f["actual"] == "Disabled on GPU 1; nvidia-persistenced state unknown"
    assert "systemctl enable --now nvidia-persistenced" in f["remediation"]
    only(c.check_persistence(H, {"gpus": []}), "not_applicable")


def test_gpu_count_sources_disagree():
    # a GPU the kernel sees (sysfs) that nvidia-smi does not show, without any handle error
    sysfs = {"pci": {}, "nodes": {}, "nvidia_gpus": ["0000:00:06.0", "0000:00:07.0", "0000:00:08.0"]}
    results = {"qx": fixture_text("real/h200x2_nvlink/q_x.out"), "topo": fixture_text("real/h200x2_nvlink/topo_m.out"),
               "list": fixture_text("real/h200x2_nvlink/smi_L.out")}
    facts = build_gpu_topology(results, sysfs)
    assert facts["gpu_count_sources"] == {"qx": 2, "topo": 2, "list": 2, "sysfs": 3}
    assert any(w.startswith("GPU count differs between sources: nvidia-smi -q -x 2, nvidia-smi topo -m 2, "
                            "nvidia-smi -L 2, sysfs NVIDIA display/3D PCI functions 3;") for w in facts["warnings"])
    fails = [f for f in c.check_gpu_count(H, facts, 2) if f["status"] == "fail"]
    assert [f["actual"] for f in fails] == [
        "nvidia-smi -q -x 2, nvidia-smi topo -m 2, nvidia-smi -L 2, sysfs (NVIDIA display/3D PCI functions) 3"]
    sysfs["nvidia_gpus"] = sysfs["nvidia_gpus"][:2]
    facts = build_gpu_topology(results, sysfs)
    assert [f["status"] for f in c.check_gpu_count(H, facts, 2)] == ["pass"]


def test_fabric_completed_with_a_bad_status_fails():
    assert "Insufficient Resources" in fixture_text(
        "real/public/q_fabric_24_fabric_completed_insufficient_resources_cliqueid0_zero_clusteruuid_reindented.txt")
    qx = fixture_text("real/h200x2_nvlink/q_x.out")
    qx = qx.replace("<status>Success</status>", "<status>Insufficient Resources</status>")
    facts = build_gpu_topology({"qx": qx, "topo": fixture_text("real/h200x2_nvlink/topo_m.out")})
    f = only(c.check_fabric_manager(H, facts, None, []), "fail")
    assert f["actual"] == ("GPU 0 Completed/Insufficient Resources; GPU 1 Completed/Insufficient Resources")


def test_old_or_odd_facts_do_not_crash():
    gpus = [{"index": 0, "healthy": True, "fabric": "Completed", "persistence_mode": "N/A"}]
    topo = {"available": True, "gpus": gpus, "gpu_count_sources": [2, 2]}
    assert [f["status"] for f in c.check_gpu_count(H, topo, 1)] == ["pass"]
    topo["gpu_count_sources"] = {"qx": "2", "sysfs": 3}
    assert [f["status"] for f in c.check_gpu_count(H, topo, 1)] == ["pass"]
    only(c.check_fabric_manager(H, topo, None, []), "not_applicable")
    only(c.check_persistence(H, topo), "not_applicable")
    f = only(c.check_persistence(H, {"gpus": [{"index": 0}]}), "not_applicable")
    assert "older gpu_topology_facts" in f["actual"]
    facts = _nvswitch_facts("Completed")
    f = only(c.check_fabric_manager(H, facts, "active", ["x"], {"nvidia-fabricmanager-580": "1:580.159.04-1"}), "pass")
