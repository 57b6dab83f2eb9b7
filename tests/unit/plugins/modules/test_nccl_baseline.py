# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""nccl_baseline run as Ansible runs it (subprocess, args file), driving the simulated
all_reduce_perf (tests/simulator/bin/all_reduce_perf, replaying the real DGX A100 capture
nccltests_03: avg busbw 222.066, 8 GiB out-of-place busbw 234.72). The molecule scenario
`compliance` runs the playbook on a simulated host."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import ROOT, fixture_path, run_module

SIM = os.path.join(ROOT, "tests", "simulator", "bin", "all_reduce_perf")
FAULT = os.path.join(ROOT, "tests", "simulator", "bin", "gpu-sim-fault")
REPLAY = fixture_path("real/public/nccltests_03_dgx_a100_4gpu_nvswitch_222.txt")


@pytest.fixture
def sim(tmp_path):
    profile = tmp_path / "profile"
    profile.mkdir()

    def fault(*argv):
        subprocess.run([sys.executable, FAULT] + list(argv), check=True,
                       env=dict(os.environ, GPU_SIM_PROFILE=str(profile)))

    env = {"GPU_SIM_PROFILE": str(profile), "GPU_SIM_NCCL_TESTS_OUTPUT": REPLAY}
    return fault, env


def run(tmp_path, env, check=False, **args):
    args = dict({"binary": SIM, "gpus": 4, "environment": env, "host": "gpu01",
                 "baseline_path": str(tmp_path / "state" / "nccl_baseline.json")}, **args)
    return run_module(tmp_path, "nccl_baseline", args, check_mode=check)[1]


def stored(tmp_path):
    path = tmp_path / "state" / "nccl_baseline.json"
    return path.read_text() if path.exists() else None


def test_first_run_stores_the_baseline(tmp_path, sim):
    result = run(tmp_path, sim[1])
    assert result["changed"] is True and result["action"] == "stored", result
    record = json.loads(stored(tmp_path))
    assert record["summary"]["avg_busbw"] == 222.066
    assert record["summary"]["large_message_busbw"] == 234.72
    assert record["summary"]["large_message_size"] == 8589934592
    assert record["args"] == ["-b", "8", "-e", "1G", "-f", "2", "-g", "4"]
    assert record["host"] == "gpu01"
    assert oct(os.stat(str(tmp_path / "state" / "nccl_baseline.json")).st_mode & 0o777) == "0o644"


def test_drop_of_20_percent_is_flagged_10_is_not(tmp_path, sim):
    fault, env = sim
    run(tmp_path, env)
    before = stored(tmp_path)
    fault("nccl-bandwidth", "0.9")
    ok = run(tmp_path, env)
    assert ok["changed"] is False and ok["regression"] is False, ok
    assert [f["drop_percent"] for f in ok["findings"]] == [10.0, 10.0]
    fault("nccl-bandwidth", "0.8")
    bad = run(tmp_path, env)
    assert bad["regression"] is True and "failed" not in bad
    # 177.653 / 222.066 and 187.78 / 234.72, as printed by the simulated run
    assert [(f["metric"], f["current"], f["drop_percent"]) for f in bad["findings"]] == [
        ("avg_busbw", 177.653, 20.0), ("large_message_busbw", 187.78, 20.0)]
    assert bad["message"].startswith("gpu01: all_reduce_perf bandwidth drop: avg busbw 177.65 GB/s is 20.0% below "
                                     "the baseline 222.07 GB/s")
    assert stored(tmp_path) == before


def test_threshold_is_configurable(tmp_path, sim):
    fault, env = sim
    run(tmp_path, env)
    fault("nccl-bandwidth", "0.9")
    assert run(tmp_path, env, max_drop_percent=5)["regression"] is True


@pytest.mark.parametrize("kind, why", [
    ("wrong", "wrong results (#wrong > 0) at 1 size(s), first 4294967296 B"),
    ("zero", "bus bandwidth is 0 in every row"),
    ("truncated", "output ends before '# Avg bus bandwidth'"),
    ("error", "exit status 1"),
])
@pytest.mark.parametrize("mode", ["auto", "record"])
def test_broken_run_fails_and_is_never_stored(tmp_path, sim, kind, why, mode):
    fault, env = sim
    run(tmp_path, env)
    before = stored(tmp_path)
    fault("nccl-broken", kind)
    result = run(tmp_path, env, mode=mode)
    assert result["failed"] is True
    assert result["msg"].startswith("nccl_baseline on gpu01: broken run of %s" % SIM)
    assert why in result["msg"] and "the baseline is untouched" in result["msg"]
    assert stored(tmp_path) == before


def test_broken_first_run_stores_nothing(tmp_path, sim):
    fault, env = sim
    fault("nccl-broken", "zero")
    assert run(tmp_path, env)["failed"] is True
    assert stored(tmp_path) is None


def test_check_mode_runs_nothing_and_writes_nothing(tmp_path, sim):
    fault, env = sim
    fault("nccl-broken", "error")   # would fail if it ran
    result = run(tmp_path, env, check=True)
    assert result["changed"] is True and result["action"] == "would_store"
    assert "stdout" not in result and stored(tmp_path) is None
    assert not (tmp_path / "state").exists()


def test_record_replaces_a_sound_baseline(tmp_path, sim):
    fault, env = sim
    run(tmp_path, env)
    fault("nccl-bandwidth", "0.5")
    result = run(tmp_path, env, mode="record")
    assert result["action"] == "stored"
    assert json.loads(stored(tmp_path))["summary"]["avg_busbw"] == 111.033


def test_other_arguments_are_not_compared(tmp_path, sim):
    run(tmp_path, sim[1])
    result = run(tmp_path, sim[1], gpus=2)
    assert result["failed"] is True
    assert "recorded with all_reduce_perf -b 8 -e 1G -f 2 -g 4, this run would be all_reduce_perf " \
           "-b 8 -e 1G -f 2 -g 2" in result["msg"]


@pytest.mark.parametrize("args, text", [
    ({"max_drop_percent": 150}, "max_drop_percent must be > 0 and < 100 (percent of the baseline), got 150"),
    ({"gpus": -1}, "gpus must be >= 1"),
    ({"binary": "/nonexistent/all_reduce_perf"}, "binary /nonexistent/all_reduce_perf is not an executable file"),
    ({"args": ["-g", "2"]}, "give the GPU count once"),
])
def test_bad_input_changes_nothing(tmp_path, sim, args, text):
    result = run(tmp_path, sim[1], **args)
    assert result["failed"] is True
    assert result["msg"].startswith("nccl_baseline on gpu01: ") and text in result["msg"]
    assert result["msg"].endswith("Nothing was run or changed.")
    assert not (tmp_path / "state").exists()


def test_compare_without_baseline_fails(tmp_path, sim):
    result = run(tmp_path, sim[1], mode="compare")
    assert result["failed"] is True and "there is no baseline at" in result["msg"]


def test_unreadable_baseline_is_not_overwritten(tmp_path, sim):
    (tmp_path / "state").mkdir()
    (tmp_path / "state" / "nccl_baseline.json").write_text("{not json")
    result = run(tmp_path, sim[1])
    assert result["failed"] is True and "is unreadable" in result["msg"]
    assert stored(tmp_path) == "{not json"
