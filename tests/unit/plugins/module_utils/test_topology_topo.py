# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""parse_topo_matrix over every real ``nvidia-smi topo -m`` capture.

Expected values were written by reading each fixture file (cat -A), never by running the parser.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._cpulist import parse_cpulist
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._links import nvlink_islands
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    TopologyParseError,
    TruncatedOutputError,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topo_matrix import parse_topo_matrix

REAL = os.path.join(os.path.dirname(__file__), "..", "..", "..", "fixtures", "real")


def read(name):
    with open(os.path.join(REAL, name), "r") as handle:
        return handle.read()


def cpus(text):
    return parse_cpulist(text)


def gpu_fields(topo, index):
    gpu = topo["gpus"][index]
    return gpu["cpu_affinity"], gpu["numa_node"]


def nic(topo, name):
    matches = [item for item in topo["nics"] if item["name"] == name]
    assert len(matches) == 1, topo["nics"]
    return matches[0]["links"]


def test_topo_01_a100_sxm4_nvswitch_8_nics_in_legend():
    topo = parse_topo_matrix(read("public/topo_01_a100_sxm4_8nic_no_gpunumaid.txt"))
    assert topo["gpu_count"] == 8
    assert "GPU NUMA ID" not in topo["columns"]
    assert topo["columns"][-2:] == ["CPU Affinity", "NUMA Affinity"]
    assert all(topo["links"][i][j] == ("X" if i == j else "NV12")
               for i in range(8) for j in range(8))
    for index in range(4):
        assert gpu_fields(topo, index) == (cpus("0-31,64-95"), 0)
    for index in range(4, 8):
        assert gpu_fields(topo, index) == (cpus("32-63,96-127"), 1)
    assert topo["gpus"][0]["gpu_numa_id"] is None
    assert [item["name"] for item in topo["nics"]] == ["mlx5_%d" % n for n in range(8)]
    assert nic(topo, "mlx5_0") == ["PXB", "PXB", "NODE", "NODE", "SYS", "SYS", "SYS", "SYS"]
    assert nic(topo, "mlx5_7") == ["SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PXB", "PXB"]
    assert nvlink_islands(topo["links"]) == [[0, 1, 2, 3, 4, 5, 6, 7]]
    assert topo["warnings"] == []


def test_topo_02_a6000_bridge_pairs_gpu_numa_id_na():
    topo = parse_topo_matrix(read("public/topo_02_a6000_8gpu_nvlink_bridge_pairs.txt"))
    assert topo["gpu_count"] == 8
    links = topo["links"]
    assert links[0][1] == "NV4" and links[2][3] == "NV4" and links[4][5] == "NV4"
    assert links[6][7] == "NV4"
    assert links[0][2] == "NODE" and links[0][4] == "SYS" and links[5][7] == "NODE"
    assert topo["link_class"][0][1] == "nvlink"
    assert topo["link_class"][0][2] == "node"
    assert topo["link_class"][3][4] == "sys"
    for index in range(4):
        assert gpu_fields(topo, index) == (cpus("0-63"), 0)
    for index in range(4, 8):
        assert gpu_fields(topo, index) == (cpus("64-127"), 1)
    assert all(gpu["gpu_numa_id"] is None for gpu in topo["gpus"])
    assert nic(topo, "mlx5_0") == ["SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PHB", "NODE"]
    assert nic(topo, "mlx5_1") == ["SYS", "SYS", "SYS", "SYS", "NODE", "NODE", "PHB", "NODE"]
    assert nvlink_islands(links) == [[0, 1], [2, 3], [4, 5], [6, 7]]


def test_topo_03_a30_pairs_cross_socket_nic_row_trailing_space():
    topo = parse_topo_matrix(read("public/topo_03_a30_4gpu_nv4_pairs_cross_socket.txt"))
    assert topo["gpu_count"] == 4
    assert topo["links"][0][1] == "NV4" and topo["links"][2][3] == "NV4"
    assert topo["links"][1][2] == "SYS"
    assert gpu_fields(topo, 0) == (cpus("0-23,48-71"), 0)
    assert gpu_fields(topo, 1) == (cpus("0-23,48-71"), 0)
    assert gpu_fields(topo, 2) == (cpus("24-47,72-95"), 1)
    assert gpu_fields(topo, 3) == (cpus("24-47,72-95"), 1)
    assert nic(topo, "mlx5_0") == ["SYS", "SYS", "PXB", "PIX"]
    assert nvlink_islands(topo["links"]) == [[0, 1], [2, 3]]


def test_topo_04_odd_gpu_count_one_nvlink_pair():
    topo = parse_topo_matrix(read("public/topo_04_a6000_3gpu_one_nvlink_pair.txt"))
    assert topo["gpu_count"] == 3
    assert topo["links"] == [["X", "NV4", "NODE"], ["NV4", "X", "NODE"], ["NODE", "NODE", "X"]]
    for index in range(3):
        assert gpu_fields(topo, index) == (list(range(64, 72)), 1)
    assert nic(topo, "mlx5_0") == ["NODE", "NODE", "PHB"]
    assert nic(topo, "mlx5_1") == ["NODE", "NODE", "PHB"]
    assert nvlink_islands(topo["links"]) == [[0, 1], [2]]


def test_topo_05_dgx1_cube_mesh_tabs_mlx5_headers_out_of_order_cpu_affinity_only():
    topo = parse_topo_matrix(read("public/topo_05_dgx1_v100_hybrid_cube_mesh_tabs.txt"))
    assert topo["gpu_count"] == 8
    assert topo["columns"][-1] == "CPU Affinity"
    assert "NUMA Affinity" not in topo["columns"]
    assert topo["links"][0] == ["X", "NV1", "NV1", "NV2", "NV2", "SYS", "SYS", "SYS"]
    assert topo["links"][7] == ["SYS", "SYS", "SYS", "NV1", "NV2", "NV1", "NV2", "X"]
    assert topo["links"][2][6] == "NV1" and topo["links"][1][5] == "NV2"
    for index in range(4):
        assert gpu_fields(topo, index) == (cpus("0-19,40-59"), None)
    for index in range(4, 8):
        assert gpu_fields(topo, index) == (cpus("20-39,60-79"), None)
    assert [item["name"] for item in topo["nics"]] == ["mlx5_0", "mlx5_2", "mlx5_1", "mlx5_3"]
    assert nic(topo, "mlx5_0") == ["PIX", "PIX", "PHB", "PHB", "SYS", "SYS", "SYS", "SYS"]
    assert nic(topo, "mlx5_2") == ["SYS", "SYS", "SYS", "SYS", "PIX", "PIX", "PHB", "PHB"]
    assert nic(topo, "mlx5_1") == ["PHB", "PHB", "PIX", "PIX", "SYS", "SYS", "SYS", "SYS"]
    assert nvlink_islands(topo["links"]) == [[0, 1, 2, 3, 4, 5, 6, 7]]


def test_topo_06_k80_oldest_format_mlx4_column():
    topo = parse_topo_matrix(read("public/topo_06_k80_4gpu_mlx4_oldest_soc_legend.txt"))
    assert topo["gpu_count"] == 4
    assert topo["columns"] == ["GPU0", "GPU1", "GPU2", "GPU3", "mlx4_0", "CPU Affinity"]
    assert topo["links"][0] == ["X", "PIX", "PHB", "PHB"]
    assert topo["links"][2][3] == "PIX"
    assert topo["link_class"][0][1] == "pix" and topo["link_class"][0][2] == "phb"
    for index in range(4):
        assert gpu_fields(topo, index) == (list(range(12)), None)
    assert nic(topo, "mlx4_0") == ["PHB", "PHB", "PHB", "PHB"]
    assert nvlink_islands(topo["links"]) == [[0], [1], [2], [3]]


def test_soc_code_is_class_sys():
    # topo_06's legend defines SOC; put it in the matrix the way pre-R384 drivers printed it.
    text = read("public/topo_06_k80_4gpu_mlx4_oldest_soc_legend.txt")
    lines = text.split("\n")
    lines[1] = lines[1].replace("PHB     PHB     PHB     0-11", "SOC     PHB     PHB     0-11")
    lines[3] = lines[3].replace("PHB     PHB      X ", "SOC     PHB      X ")
    topo = parse_topo_matrix("\n".join(lines))
    assert topo["links"][0][2] == "SOC" and topo["links"][2][0] == "SOC"
    assert topo["link_class"][0][2] == "sys"
    assert topo["warnings"] == []


def test_topo_07_slurm_two_gpus_mlx5_headers_empty_nic_affinity_cells():
    topo = parse_topo_matrix(read("public/topo_07_a100_2gpu_slurm_alloc_mlx5_headers_tabs.txt"))
    assert topo["gpu_count"] == 2
    assert topo["links"] == [["X", "SYS"], ["SYS", "X"]]
    assert gpu_fields(topo, 0) == (list(range(64)), 0)
    assert gpu_fields(topo, 1) == (list(range(64, 128)), 1)
    assert nic(topo, "mlx5_0") == ["NODE", "SYS"]
    assert nic(topo, "mlx5_1") == ["SYS", "NODE"]


def test_topo_09_single_gpu_numa_affinity_na_double_tabs():
    topo = parse_topo_matrix(read("public/topo_09_tesla_p4_single_gpu_numa_affinity_na_tabs.txt"))
    assert topo["gpu_count"] == 1
    assert topo["links"] == [["X"]]
    assert topo["gpus"][0]["cpu_affinity"] == list(range(8))
    assert topo["gpus"][0]["numa_affinity"] is None
    assert topo["gpus"][0]["numa_node"] is None
    assert topo["gpus"][0]["gpu_numa_id"] is None
    assert topo["nics"] == []
    assert topo["warnings"] == []


def test_topo_10_five_gpus_gpu0_alone_on_numa1():
    topo = parse_topo_matrix(read("public/topo_10_5gpu_pcie_gpu0_alone_on_numa1.txt"))
    assert topo["gpu_count"] == 5
    assert gpu_fields(topo, 0) == (cpus("8-15,24-31"), 1)
    for index in range(1, 5):
        assert gpu_fields(topo, index) == (cpus("0-7,16-23"), 0)
    assert topo["links"][1][2] == "PHB" and topo["links"][3][4] == "PHB"
    assert topo["links"][1][3] == "NODE" and topo["links"][0][4] == "SYS"
    assert topo["nics"] == []
    assert nvlink_islands(topo["links"]) == [[0], [1], [2], [3], [4]]


def test_topo_13_h100_nv6_sparse_numa_strided_cpus_no_legend():
    topo = parse_topo_matrix(read("public/topo_13_h100_4gpu_nv6_numa_3175_strided_cpus.txt"))
    assert topo["gpu_count"] == 4
    assert all(topo["links"][i][j] == ("X" if i == j else "NV6")
               for i in range(4) for j in range(4))
    assert gpu_fields(topo, 0) == ([6, 14, 22, 30], 3)
    assert gpu_fields(topo, 1) == ([4, 12, 20, 28], 1)
    assert gpu_fields(topo, 2) == ([7, 15, 23, 31], 7)
    assert gpu_fields(topo, 3) == ([5, 13, 21, 29], 5)
    # no NIC Legend in this capture: names fall back to the labels, with a warning each
    assert [item["name"] for item in topo["nics"]] == ["NIC0", "NIC1", "NIC2", "NIC3"]
    assert nic(topo, "NIC2") == ["SYS", "SYS", "PIX", "SYS"]
    assert len([w for w in topo["warnings"] if "NIC Legend" in w]) == 4


def test_topo_15_pcie_all_sys_even_on_one_numa_node():
    topo = parse_topo_matrix(read("public/topo_15_8x4090_pcie_all_sys_tabs.txt"))
    assert topo["gpu_count"] == 8
    assert all(topo["links"][i][j] == ("X" if i == j else "SYS")
               for i in range(8) for j in range(8))
    for index in range(4):
        assert gpu_fields(topo, index) == (cpus("0-55,112-167"), 0)
    for index in range(4, 8):
        assert gpu_fields(topo, index) == (cpus("56-111,168-223"), 1)
    assert nic(topo, "NIC0") == ["SYS", "SYS", "SYS", "SYS", "SYS", "SYS", "PHB", "SYS"]
    assert nic(topo, "NIC1") == ["SYS", "SYS", "SYS", "SYS", "SYS", "SYS", "PHB", "SYS"]
    assert nvlink_islands(topo["links"]) == [[i] for i in range(8)]


def test_h200_vm_ansi_underlined_header_double_tab():
    text = read("h200_vm/topo_m.out")
    assert "\x1b[4m" in text  # the capture really carries the escape
    topo = parse_topo_matrix(text)
    assert topo["gpu_count"] == 1
    assert topo["columns"] == ["GPU0", "CPU Affinity", "NUMA Affinity", "GPU NUMA ID"]
    assert topo["links"] == [["X"]] and topo["link_class"] == [["self"]]
    assert topo["gpus"][0]["cpu_affinity"] == list(range(16))
    assert topo["gpus"][0]["numa_node"] == 0
    assert topo["gpus"][0]["gpu_numa_id"] is None
    assert topo["nics"] == [] and topo["warnings"] == []


def test_crlf_line_endings_parse_the_same():
    text = read("public/topo_03_a30_4gpu_nv4_pairs_cross_socket.txt")
    assert parse_topo_matrix(text.replace("\n", "\r\n")) == parse_topo_matrix(text)


# ---- robustness ----------------------------------------------------------------------------

def test_empty_output_is_truncated():
    with pytest.raises(TruncatedOutputError):
        parse_topo_matrix("")


def test_cut_in_the_middle_of_a_row_is_truncated():
    text = read("public/topo_01_a100_sxm4_8nic_no_gpunumaid.txt")
    cut = text[:text.index("\nGPU3") + 21]  # "GPU3    NV12    NV12" and nothing after
    with pytest.raises(TruncatedOutputError) as info:
        parse_topo_matrix(cut)
    assert info.value.line_no == 5


def test_cut_between_rows_is_truncated():
    text = read("public/topo_02_a6000_8gpu_nvlink_bridge_pairs.txt")
    cut = "\n".join(text.split("\n")[:6])  # header + GPU0..GPU4
    with pytest.raises(TruncatedOutputError) as info:
        parse_topo_matrix(cut)
    assert "GPU5" in str(info.value)


def test_unknown_link_code_names_the_line():
    text = read("public/topo_04_a6000_3gpu_one_nvlink_pair.txt")
    bad = text.replace("GPU1    NV4      X", "GPU1    XYZ      X")
    with pytest.raises(TopologyParseError) as info:
        parse_topo_matrix(bad)
    assert not isinstance(info.value, TruncatedOutputError)
    assert info.value.line_no == 3
    assert "XYZ" in str(info.value) and "GPU1    XYZ" in str(info.value)


def test_missing_cell_is_detected_as_misalignment():
    text = read("public/topo_04_a6000_3gpu_one_nvlink_pair.txt")
    bad = text.replace("GPU1    NV4      X      NODE", "GPU1     X      NODE")
    with pytest.raises(TopologyParseError) as info:
        parse_topo_matrix(bad)
    assert info.value.line_no == 3


def test_plain_nvidia_smi_table_is_not_topo():
    text = read("public/smi_fail_02_a40_8gpu_gpu4_err_gsp_timeout.txt")
    with pytest.raises(TopologyParseError) as info:
        parse_topo_matrix(text)
    assert info.value.line_no == 1
    assert "no matrix header" in str(info.value)


def test_bad_cpu_affinity_names_the_line():
    text = read("public/topo_07_a100_2gpu_slurm_alloc_mlx5_headers_tabs.txt")
    bad = text.replace("\t0-63\t0", "\t0-6x\t0")
    with pytest.raises(TopologyParseError) as info:
        parse_topo_matrix(bad)
    assert info.value.line_no == 2 and "CPU Affinity" in str(info.value)


def test_handle_error_line_before_the_matrix_is_skipped():
    text = ("Unable to determine the device handle for GPU 0000:09:00.0: Unknown Error\n"
            + read("public/topo_07_a100_2gpu_slurm_alloc_mlx5_headers_tabs.txt"))
    topo = parse_topo_matrix(text)
    assert topo["gpu_count"] == 2
