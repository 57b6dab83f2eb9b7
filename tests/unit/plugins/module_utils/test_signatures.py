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

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._signatures import classify
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_path, fixture_text

PUBLIC = fixture_path("real/public")
EXPECTED = {
    # vllm_01 also says "Disabled the custom all-reduce kernel because it is not supported on hcus."
    # (an INFO line, not a failure): it must not be classified as a P2P failure.
    "vllm_01_qwen25_7b_tp8_heads28_dcu.txt": [("tp_heads_indivisible", 1, 22)],
    "vllm_03_tp3_heads32_three_gpu_box.txt": [("tp_heads_indivisible", 1, 15)],
    "vllm_06_sglang_custom_ar_peer_access_unsupported_tp2.txt": [("custom_allreduce_p2p", 2, 4)],
}


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
