# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_nccltests over every real nccl-tests capture (tests/fixtures/real/public/nccltests_*).

Expected values were read from the files by eye (cat -A), not produced by the code. The broken
variants are the real files cut or edited in one named place, so the expected verdict follows
from the edit.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccltests
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_path, fixture_text

PUBLIC = fixture_path("real/public")
H100 = "nccltests_01_h100_2node_nonmpi_build_busbw_zero.txt"
DGX = "nccltests_03_dgx_a100_4gpu_nvswitch_222.txt"
RTX = "nccltests_05_rtx5090_mpi_tagged_v2_18_socket.txt"


def read(name):
    return fixture_text("real/public/" + name)


def test_every_real_fixture_is_covered():
    names = sorted(os.path.basename(p) for p in glob.glob(os.path.join(PUBLIC, "nccltests_*")))
    assert names == sorted([H100, DGX, RTX])


# --- nccltests_03: DGX A100, 4 GPUs, column header, no preamble --------------------------------

def test_dgx_a100_table():
    result = _nccltests.parse_nccl_tests(read(DGX))
    assert result["version"] is None and result["collective"] is None
    assert result["params"]["nGpus"] is None and result["devices"] == []
    assert [r["size"] for r in result["rows"]] == [1073741824, 2147483648, 4294967296, 8589934592]
    first = result["rows"][0]
    assert (first["count"], first["type"], first["redop"], first["root"]) == (268435456, "float", "sum", -1)
    assert first["out_of_place"] == {"time_us": 7163.5, "algbw": 149.89, "busbw": 224.84, "wrong": 0}
    assert first["in_place"] == {"time_us": 7161.8, "algbw": 149.93, "busbw": 224.89, "wrong": 0}
    # integral times are printed without decimals once they reach 5 digits
    assert result["rows"][1]["out_of_place"]["time_us"] == 13989
    # the in-place outlier of the 4 GiB row
    assert result["rows"][2]["in_place"] == {"time_us": 39252, "algbw": 109.42, "busbw": 164.13, "wrong": 0}
    assert result["out_of_bounds"] == 0 and result["out_of_bounds_ok"] is True
    assert result["avg_busbw"] == 222.066
    assert result["complete"] is True and result["errors"] == [] and result["unparsed"] == []
    assert _nccltests.problems(result) == []


def test_dgx_a100_summary():
    summary = _nccltests.summary(_nccltests.parse_nccl_tests(read(DGX)))
    assert summary["avg_busbw"] == 222.066
    assert summary["large_message_size"] == 8589934592
    assert summary["large_message_busbw"] == 234.72
    assert summary["peak_busbw"] == 234.74
    assert summary["rows"] == 4


# --- nccltests_05: RTX 5090, nccl-tests 2.18 under mpirun --tag-output --------------------------

def test_rtx5090_mpi_tagged_header():
    result = _nccltests.parse_nccl_tests(read(RTX))
    assert result["mpi_tagged"] is True
    assert result["version"] == "2.18.0"
    assert (result["nccl_headers"], result["nccl_library"]) == (22907, 22907)
    assert result["collective"] == "all_reduce_perf_mpi" and result["concluded"] is True
    assert result["params"] == {"nThread": 1, "nGpus": 1, "minBytes": 1048576, "maxBytes": 134217728,
                                "step": "2(factor)", "warmup_iters": 10, "iters": 50, "agg_iters": 1,
                                "validation": 1, "graph": 0}
    assert result["devices"] == [
        {"rank": 0, "group": 0, "pid": 2994447, "host": "host-a", "device": 0, "bus_id": "0000:02:00",
         "name": "NVIDIA GeForce RTX 5090"},
        {"rank": 1, "group": 0, "pid": 2994448, "host": "host-a", "device": 0, "bus_id": "0000:02:00",
         "name": "NVIDIA GeForce RTX 5090"},
    ]


def test_rtx5090_mpi_tagged_table():
    result = _nccltests.parse_nccl_tests(read(RTX))
    assert len(result["rows"]) == 8
    assert result["rows"][0]["size"] == 1048576
    assert result["rows"][0]["out_of_place"] == {"time_us": 4366.46, "algbw": 0.24, "busbw": 0.24, "wrong": 0}
    last = result["rows"][-1]
    assert (last["size"], last["count"]) == (134217728, 33554432)
    assert last["out_of_place"] == {"time_us": 58479.5, "algbw": 2.30, "busbw": 2.30, "wrong": 0}
    assert last["in_place"] == {"time_us": 58055.4, "algbw": 2.31, "busbw": 2.31, "wrong": 0}
    assert result["avg_busbw"] == 1.57614 and result["out_of_bounds"] == 0
    # the X11 noise on stderr (untagged and tagged) is neither a row nor an error
    assert result["unparsed"] == ["Authorization required, but no authorization protocol specified"] * 4
    assert result["errors"] == []
    assert _nccltests.problems(result) == []
    assert _nccltests.summary(result)["large_message_busbw"] == 2.30


# --- nccltests_01: H100, non-MPI build under mpirun -np 16: a broken run -----------------------

def test_h100_nonmpi_build_rows():
    result = _nccltests.parse_nccl_tests(read(H100))
    assert len(result["rows"]) == 24
    sizes = sorted(set(r["size"] for r in result["rows"]))
    assert sizes == [134217728, 268435456, 536870912, 1073741824, 2147483648]
    last = result["rows"][-1]
    assert last["size"] == 2147483648
    assert last["out_of_place"] == {"time_us": 8645.7, "algbw": 248.39, "busbw": 0.0, "wrong": 0}
    # the absurd in-place algbw that breaks the column alignment is still read
    assert last["in_place"] == {"time_us": 0.31, "algbw": 7017920.42, "busbw": 0.0, "wrong": 0}
    assert result["avg_busbw"] == 0.0 and result["out_of_bounds"] == 0
    assert result["version"] is None and result["devices"] == []


def test_h100_nonmpi_build_is_broken():
    found = _nccltests.problems(_nccltests.parse_nccl_tests(read(H100)))
    assert len(found) == 2
    assert found[0].startswith("bus bandwidth is 0 in every row")
    assert found[1] == "message sizes repeat (24 rows, 5 sizes): output of several runs interleaved"


# --- broken variants of the real files ---------------------------------------------------------

def test_truncated_run():
    text = read(DGX).split("# Out of bounds")[0]   # stops after the last row
    result = _nccltests.parse_nccl_tests(text)
    assert len(result["rows"]) == 4 and result["complete"] is False and result["avg_busbw"] is None
    assert _nccltests.problems(result) == [
        "output ends before '# Avg bus bandwidth' (truncated or aborted run)"]


def test_wrong_results():
    lines = read(RTX).splitlines()
    # the 8 MiB row: set its in-place #wrong (last cell) from 0 to 3
    index = [i for i, line in enumerate(lines) if "     8388608 " in line][0]
    lines[index] = lines[index][:-1] + "3"
    lines = [line.replace("# Out of bounds values : 0 OK", "# Out of bounds values : 3 FAILED") for line in lines]
    result = _nccltests.parse_nccl_tests("\n".join(lines))
    assert result["rows"][3]["in_place"]["wrong"] == 3
    assert result["out_of_bounds"] == 3 and result["out_of_bounds_ok"] is False
    assert _nccltests.problems(result) == ["wrong results (#wrong > 0) at 1 size(s), first 8388608 B",
                                           "3 out-of-bounds value(s)"]


def test_failure_lines():
    # nccl-tests' failure message (src/common.h, testNcclError) after the first two rows
    lines = read(RTX).splitlines()
    index = [i for i, line in enumerate(lines) if "     2097152 " in line][0]
    text = "\n".join(lines[:index + 1] + [
        "[1,0]<stdout>:host-a: Test NCCL failure common.cu:1005 'unhandled system error / '"])
    result = _nccltests.parse_nccl_tests(text)
    assert result["errors"] == ["host-a: Test NCCL failure common.cu:1005 'unhandled system error / '"]
    assert len(result["rows"]) == 2
    found = _nccltests.problems(result)
    assert found[0].startswith("the run printed 1 failure line(s), first: host-a: Test NCCL failure")
    assert found[1] == "output ends before '# Avg bus bandwidth' (truncated or aborted run)"


def test_validation_off_prints_na():
    text = read(DGX).replace("224.84      0", "224.84    N/A")
    row = _nccltests.parse_nccl_tests(text)["rows"][0]
    assert row["out_of_place"]["wrong"] is None and row["in_place"]["wrong"] == 0


@pytest.mark.parametrize("text", ["", "bash: all_reduce_perf: command not found\n",
                                  "Authorization required, but no authorization protocol specified\n"])
def test_no_output_at_all(text):
    with pytest.raises(_nccltests.NcclTestsParseError):
        _nccltests.parse_nccl_tests(text)


# --- baseline comparison -------------------------------------------------------------------------

def test_compare_flags_a_drop_over_the_limit():
    baseline = {"avg_busbw": 222.066, "large_message_busbw": 234.72}
    current = {"avg_busbw": 177.6528, "large_message_busbw": 211.248}   # -20% and -10%
    avg, large = _nccltests.compare(baseline, current, 15)
    assert (avg["metric"], avg["drop_percent"], avg["dropped"]) == ("avg_busbw", 20.0, True)
    assert (large["metric"], large["drop_percent"], large["dropped"]) == ("large_message_busbw", 10.0, False)


def test_compare_faster_and_missing():
    avg, large = _nccltests.compare({"avg_busbw": 100.0, "large_message_busbw": None},
                                    {"avg_busbw": 110.0, "large_message_busbw": 5.0}, 15)
    assert avg["drop_percent"] == -10.0 and avg["dropped"] is False
    assert large["drop_percent"] is None and large["dropped"] is False
