# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""``dcgmi diag`` tables (real outputs, tests/fixtures/real/public/dcgmi_diag_*) and the dcgm_diag check.

Expected rows and messages were read from the fixture files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as c
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._dcgm import parse_dcgmi_diag
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text

H = "gpu01"


def diag(name):
    return parse_dcgmi_diag(fixture_text("real/public/" + name))


def test_dcgm_338_deployment_rows_and_wrapped_info():
    r = diag("dcgmi_diag_22_dcgm_3_3_8_r3_h100x8_metadata_denylist_persistence_info_wrap_truncated.txt")
    assert r["version"] == "3.3.8" and r["ran"] is True
    assert [(x["test"], x["result"]) for x in r["results"]] == [
        ("Denylist", "Pass"), ("NVML Library", "Pass"), ("CUDA Main Library", "Pass"),
        ("Permissions and OS Blocks", "Pass"), ("Persistence Mode", "Pass")]
    assert r["messages"] == [{"kind": "Info", "test": "Persistence Mode",
                              "text": "Persistence mode for GPU 0 is disabled. Enabl"}]  # the poster cut it there
    assert [f["status"] for f in c.check_dcgm_diag(H, 3, None, r)] == ["pass"]


def test_dcgm_423_per_gpu_rows():
    r = diag("dcgmi_diag_23_dcgm_4_2_3_new_format_software_per_gpu_rows_truncated.txt")
    assert r["version"] == "4.2.3"
    assert [x["detail"] for x in r["results"]] == [None, "GPU0", "GPU1", "GPU2", "GPU3"]
    f = c.check_dcgm_diag(H, 1, None, r)
    assert [x["actual"] for x in f] == ["5 result(s) Pass, no failure (DCGM 4.2.3)"]


def test_fail_and_warning_with_words_joined_across_wraps():
    r = diag("dcgmi_diag_25_r2_gpu_memory_fail_gpu0_thermal_warning_wrapped_fragment.txt")
    assert [(x["test"], x["result"], x["detail"]) for x in r["results"]] == [
        ("GPU Memory", "Pass", "GPUs: 1, 2, 3, 4, 5, 6, 7"), ("GPU Memory", "Fail", "GPU: 0")]
    text = r["messages"][0]["text"]
    assert text.startswith("GPU 0 Thermal violations totaling 13.3 seconds started at 9.7 seconds into the test for GPU 0 ")
    assert "cooling on this machine is functional, including external, thermal material interface" in text
    f = c.check_dcgm_diag(H, 2, None, r)
    assert [(x["status"], x["subject"]) for x in f] == [("fail", "dcgmi GPU Memory")]
    assert f[0]["actual"].startswith("Fail (GPU: 0); Warning: GPU 0 Thermal violations")


def test_error_message_fails():
    r = diag("dcgmi_diag_24_deployment_error_row_remap_pending_wrapped_fragment.txt")
    assert r["messages"] == [{"kind": "Error", "test": None,
                              "text": "GPU 3 has uncorrectable memory errors and row remappings are pending"}]
    f = c.check_dcgm_diag(H, 1, None, r)
    assert [(x["status"], x["actual"]) for x in f] == [
        ("fail", "Error: GPU 3 has uncorrectable memory errors and row remappings are pending")]


def test_mig_and_skips():
    r = diag("dcgmi_diag_20_mig_configuration_incompatible_printed_twice.txt")
    f = c.check_dcgm_diag(H, 1, None, r, rc=226)
    mig = "GPU 0's MIG configuration is incompatible with the diagnostic because it prevents access to the entire GPU."
    assert [(x["status"], x["actual"]) for x in f] == [("not_applicable", mig)]
    topo = {"gpus": [{"index": 0, "mig_mode": "Disabled"}, {"index": 1, "mig_mode": "Enabled"}]}
    assert c.dcgm_skip_reason(topo, 1, "/usr/bin/dcgmi") == "MIG enabled on GPU 1: dcgmi diag does not support MIG"
    assert c.dcgm_skip_reason(topo, 0, "/usr/bin/dcgmi") == "turned off (compliance_dcgm_diag_level 0)"
    assert c.dcgm_skip_reason({"gpus": []}, 1, None).startswith("dcgmi not installed")
    assert c.dcgm_skip_reason({"gpus": []}, 1, "/usr/bin/dcgmi") is None


def test_run_without_result_fails_with_its_output():
    text = fixture_text("real/public/dcgmi_diag_21_empty_group_return_minus35.txt")
    f = c.check_dcgm_diag(H, 1, None, parse_dcgmi_diag(text), rc=1, output=text)
    assert len(f) == 1 and f[0]["status"] == "fail"
    assert f[0]["actual"].startswith("dcgmi diag -r 1 gave no result (rc 1): ")
