# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Failure signatures on every real vLLM log fixture (tests/fixtures/real/public/vllm_*).

Expected ids, counts and lines were read from the fixture files.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._signatures import SIGNATURES, classify
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_path, fixture_text

PUBLIC = fixture_path("real/public")
EXPECTED = {
    # vllm_01 also says "Disabled the custom all-reduce kernel because it is not supported on hcus."
    # (an INFO line, not a failure): it must not be classified as a P2P failure.
    "vllm_01_qwen25_7b_tp8_heads28_dcu.txt": [("tp_heads_indivisible", 1, 22)],
    "vllm_03_tp3_heads32_three_gpu_box.txt": [("tp_heads_indivisible", 1, 15)],
    "vllm_06_sglang_custom_ar_peer_access_unsupported_tp2.txt": [("custom_allreduce_p2p", 2, 4)],
    "vllm_802_20_v1_worker_set_device_cudagetdevicecount_802_workerproc_failed.txt": [("cuda_system_not_initialized", 1, 6)],
    "vllm_802_21_v0_mq_engine_cudagetdevicecount_802_after_worker_ready.txt": [("cuda_system_not_initialized", 1, 3)],
    "vllm_crash_20_v0191_qwen36_27b_tp4_a100_worker_valueerror_hybrid_kv_cache_engine_core_failed.txt":
        [("unclassified_fatal", 1, 53)],
    "vllm_crash_21_v1_tp2_a100_worker_died_unexpectedly_shm_broadcast_no_traceback.txt": [("unclassified_fatal", 1, 2)],
    "vllm_fp8_20_qwen3_coder_480b_fp8_tp8_gate_up_320_block_n_128_v1_worker.txt": [("fp8_block_indivisible", 1, 13)],
    "vllm_fp8_21_qwen3_fp8_tp8_gate_up_192_block_n_128_docs_excerpt.txt": [("fp8_block_indivisible", 1, 3)],
    "vllm_fp8_22_v0230_dsv4_tp_ep_input_size_192_block_k_128_worker_failed_to_start.txt": [("fp8_block_indivisible", 1, 2)],
    # healthy starts (and an offline run) with alarming-looking warnings: nothing to report
    "vllm_ok_20_v0190_qwen25_72b_tp4_l40s_custom_ar_pcie_startup_ok.txt": [],
    "vllm_ok_21_v066post1_internvl3_78b_tp8_l40s_offline_custom_ar_pcie_ok.txt": [],
    "vllm_ok_22_v0130_ngc2601_qwen3_30b_a3b_fp8_gb10_tp1_not_enough_sms_avg_throughput.txt": [],
}
HEALTHY = sorted(name for name in EXPECTED if name.startswith("vllm_ok_"))
SIGNATURE_IDS = [sig[0] for sig in SIGNATURES]


def test_every_vllm_fixture_has_an_expectation():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(PUBLIC, "vllm_*")))
    assert names == sorted(EXPECTED)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_fixture(name):
    found = classify(fixture_text("real/public/" + name))
    assert [(f["id"], f["count"], f["line_no"]) for f in found] == EXPECTED[name]
    assert all(f["fix"] for f in found)


def test_first_line_quotes_the_log():
    found = classify(fixture_text("real/public/vllm_01_qwen25_7b_tp8_heads28_dcu.txt"))
    assert found[0]["first_line"] == ("ValueError: Total number of attention heads (28) must be "
                                      "divisible by tensor parallel size (8).")


def test_nccl_timeout_and_oom_lines():
    text = ("[rank1]:[E ProcessGroupNCCL.cpp:607] [Rank 1] Watchdog caught collective operation timeout: "
            "WorkNCCL(SeqNum=5, OpType=ALLREDUCE) ran for 600000 milliseconds before timing out.\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n")
    assert [f["id"] for f in classify(text)] == ["nccl_timeout", "cuda_oom"]


def test_clean_log():
    assert classify("INFO 02-26 08:54:31 api_server.py:1] vLLM API server version 0.6.3\n") == []


@pytest.mark.parametrize("sig_id", SIGNATURE_IDS)
def test_each_signature_has_a_real_failure_and_no_healthy_match(sig_id):
    positives = [name for name, found in EXPECTED.items() if any(f[0] == sig_id for f in found)]
    planted = {"nccl_timeout", "cuda_oom"}  # no real log yet: test_nccl_timeout_and_oom_lines plants them
    assert positives or sig_id in planted
    pattern = [sig[2] for sig in SIGNATURES if sig[0] == sig_id][0]
    for name in HEALTHY:
        for line in fixture_text("real/public/" + name).splitlines():
            assert not pattern.search(line), (name, line)


def test_custom_allreduce_warning_is_not_a_failure():
    text = fixture_text("real/public/vllm_ok_20_v0190_qwen25_72b_tp4_l40s_custom_ar_pcie_startup_ok.txt")
    assert "Custom allreduce is disabled because it's not supported on more than two PCIe-only GPUs" in text
    assert classify(text) == []


def test_unclassified_fatal_quotes_the_tail():
    found = classify(fixture_text("real/public/vllm_crash_21_v1_tp2_a100_worker_died_unexpectedly_shm_broadcast_no_traceback.txt"))
    assert found[0]["first_line"].endswith("Worker proc VllmWorker-1 died unexpectedly, shutting down executor.")
    assert found[0]["last_lines"][-1].endswith("No available shared memory broadcast block found in 60 second.")
    assert len(found[0]["last_lines"]) == 5


def test_crash_then_serving_is_not_fatal():
    text = ("Traceback (most recent call last):\nKeyError: 'x'\n"
            "INFO:     Application startup complete.\n")
    assert classify(text) == []
    assert [f["id"] for f in classify(text + "RuntimeError: Engine core initialization failed.\n")] == ["unclassified_fatal"]


def test_known_signature_wins_over_unclassified():
    text = "Traceback (most recent call last):\ntorch.OutOfMemoryError: CUDA out of memory.\n"
    assert [f["id"] for f in classify(text)] == ["cuda_oom"]


def test_quiet_levels_handled_errors_and_oom_kill():
    ok = fixture_text("real/public/vllm_ok_20_v0190_qwen25_72b_tp4_l40s_custom_ar_pcie_startup_ok.txt")
    assert classify(ok + "(APIServer pid=1) WARNING 04-16 11:20:00 [x.py:1] RuntimeError: max_num_seqs too high\n") == []
    handled = ("ERROR 04-16 11:20:00 [serving.py:1] Traceback (most recent call last):\n"
               "ValueError: This model's maximum context length is 4096 tokens.\n"
               'INFO:     127.0.0.1:5000 - "POST /v1/completions HTTP/1.1" 400 Bad Request\n')
    assert classify(ok + handled) == []
    assert [f["id"] for f in classify(ok + "vllm@n0-0.service: Failed with result 'oom-kill'.\n")] == \
        ["unclassified_fatal"]
