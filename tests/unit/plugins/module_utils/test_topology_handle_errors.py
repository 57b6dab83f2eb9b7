# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A GPU the driver cannot open: every real spelling of nvidia-smi's handle error, on any stream
of any call, keeps that GPU at its index (unhealthy, with the tool's words) and never shifts the
others. Newer drivers' KMD/UMD version labels are read too.

The spellings are the lines of tests/fixtures/real/public/smi_handle_2* and smi_fail_09 (expected
bus ids typed from those files). The dead GPU is planted on the simulated a100x6_2numa host with the
simulator's own fault (``gpu-sim-fault gpu-missing``: the GPU leaves -q -x, topo -m and nvlink -s,
as it does on a real host), and the real line, re-addressed to that GPU's bus, is added to one
output.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import re
import shutil
import subprocess
import sys

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._query_xml import parse_query_xml
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import (
    find_handle_errors,
    handle_error_index,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import build_gpu_topology
from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_path, fixture_text

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))))
PROFILE = os.path.join(REPO, "tests", "simulator", "profiles", "a100x6_2numa")
FAULT = os.path.join(REPO, "tests", "simulator", "bin", "gpu-sim-fault")
SPELLINGS = {
    "smi_handle_20_rtxpro6000_610_kmd_table_gpu1_index_colon_4digit_domain_first_line.txt": ("00000000:34:00.0", 1),
    "smi_handle_21_win_369_gpu_is_lost_double_space_console_wrapped.txt": ("00000000:03:00.0", None),
    "smi_handle_22_515_open_lowercase_gpu_not_found.txt": ("00000000:01:00.0", None),
    "smi_handle_23_515_open_gpu_space_not_found_d8.txt": ("00000000:D8:00.0", None),
    "smi_handle_24_tesla_p4_nospace_gpu0000_unknown_error.txt": ("00000000:07:00.0", None),
    "smi_fail_09_q_single_gpu_handle_unknown_error_spaced_busid.txt": ("00000000:09:00.0", None),
}
BUSES = ["00000000:17:00.0", "00000000:31:00.0", "00000000:4B:00.0",
         "00000000:98:00.0", "00000000:B1:00.0", "00000000:CA:00.0"]  # a100x6_2numa, index order


def _line(name):
    return [line for line in fixture_text("real/public/" + name).splitlines() if "device handle" in line][0]


@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_every_real_spelling_is_read(name):
    bus, index = SPELLINGS[name]
    found = find_handle_errors(fixture_text("real/public/" + name))
    assert [item[0] for item in found] == [bus]
    assert found[0][1] == _line(name).strip()
    assert handle_error_index(found[0][1]) == index


def _planted(tmp_path, dead):
    profile = tmp_path / "profile"
    shutil.copytree(PROFILE, str(profile))
    env = dict(os.environ, GPU_SIM_PROFILE=str(profile))
    subprocess.check_call([sys.executable, FAULT, "gpu-missing", str(dead)], env=env)
    out = {}
    for key, name in (("qx", "q-x"), ("topo", "topo-m"), ("nvlink", "nvlink-s")):
        with open(str(profile / "faults" / (name + ".out")), newline="") as handle:
            out[key] = handle.read()
    return out


def _readdressed(name, bus):
    """The fixture's line naming ``bus`` (same domain width and case as printed)."""
    line = _line(name).strip()
    match = re.search(r"((?:[0-9A-Fa-f]{4,8}:)?)([0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-7])\s*:", line)
    short = bus[-7:] if match.group(2).isupper() or not match.group(2)[:2].isalpha() else bus[-7:].lower()
    domain = match.group(1) and bus[:9][-len(match.group(1)):]
    return line[:match.start()] + domain + short + line[match.end(2):]


@pytest.mark.parametrize("stream", ["stdout", "stderr"])
@pytest.mark.parametrize("call", ["qx", "topo", "nvlink"])
@pytest.mark.parametrize("name", sorted(SPELLINGS))
def test_dead_gpu_keeps_its_index(tmp_path, name, call, stream):
    dead = 2
    outputs = _planted(tmp_path, dead)
    line = _readdressed(name, BUSES[dead])
    if SPELLINGS[name][1] is not None:
        line = re.sub(r"for GPU\d+:", "for GPU%d:" % dead, line)
    results = dict((key, {"rc": 0, "stdout": text, "stderr": ""}) for key, text in outputs.items())
    results[call]["rc"] = 255
    results[call][stream] = (line + "\n" + results[call][stream]) if stream == "stdout" else line + "\n"
    facts = build_gpu_topology(results)
    assert [gpu["pci_bus_id"] for gpu in facts["gpus"]] == BUSES
    assert [gpu["healthy"] for gpu in facts["gpus"]] == [i != dead for i in range(6)]
    assert facts["gpus"][dead]["reason"] == line
    assert facts["gpus"][3]["name"] == "NVIDIA A100 80GB PCIe"
    assert facts["links"][0][1] == "NV12" and facts["links"][4][5] == "NV12"
    assert not any("index" in w and "bus order" in w for w in facts["warnings"])


def test_named_index_that_disagrees_with_bus_order_is_a_warning(tmp_path):
    outputs = _planted(tmp_path, 2)
    line = "Unable to determine the device handle for GPU5: 0000:4B:00.0: Unknown Error"
    facts = build_gpu_topology({"qx": {"rc": 255, "stdout": outputs["qx"], "stderr": line},
                                "topo": outputs["topo"], "nvlink": outputs["nvlink"]})
    assert facts["gpus"][2]["healthy"] is False
    assert ("nvidia-smi names GPU 00000000:4B:00.0 index 5 but it is GPU 2 in PCI bus order; "
            "indices follow the bus order") in facts["warnings"]


def test_kmd_and_umd_version_labels():
    # PLANTED: no -q -x of a 610 driver is public; the h200 capture's version elements are
    # rewritten as the 610 -q text prints them (smi_kmd_21: deprecated note, then KMD/UMD lines).
    xml = fixture_text("real/h200_vm/q_x.out")
    xml = xml.replace("<driver_version>580.159.04</driver_version>",
                      "<driver_version>610.47 [Deprecated; will be removed in CUDA 14.0. Use KMD Version "
                      "instead]</driver_version>\n\t<kmd_version>610.47</kmd_version>")
    xml = xml.replace("<cuda_version>13.0</cuda_version>", "<cuda_umd_version>13.3</cuda_umd_version>")
    parsed = parse_query_xml(xml)
    assert (parsed["driver_version"], parsed["cuda_driver_version"]) == ("610.47", "13.3")
    only_old = fixture_text("real/h200_vm/q_x.out").replace(
        "<driver_version>580.159.04</driver_version>", "<driver_version>610.47 [Deprecated; will be removed"
        " in CUDA 14.0. Use KMD Version instead]</driver_version>")
    assert parse_query_xml(only_old)["driver_version"] == "610.47"
    assert os.path.isfile(fixture_path("real/public/smi_kmd_21_q_header_610_47_deprecated_driver_cuda_plus_kmd_umd.txt"))


def test_qx_cut_short_places_the_dead_gpu_at_its_named_index():
    topo = fixture_text("real/h200x4_nvswitch/topo_m.out")
    qx = fixture_text("real/h200x4_nvswitch/q_x.out")
    cut = qx[:qx.index('<gpu id="00000000:00:08.0">')]   # -q -x stopped before GPU 2's block
    line = "Unable to determine the device handle for GPU2: 0000:00:08.0: Unknown Error"
    for stdout in ("", cut):
        facts = build_gpu_topology({"qx": {"rc": 15, "stdout": stdout, "stderr": line}, "topo": topo})
        assert facts["gpus"][2]["healthy"] is False and facts["gpus"][2]["pci_bus_id"] == "00000000:00:08.0"
        assert facts["gpus"][0]["healthy"] is True


def test_sysfs_counts_only_gpus_bound_to_nvidia_or_unbound(tmp_path):
    from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology_gather import nvidia_gpus
    for name, klass, driver in (("0000:01:00.0", "0x030200", "nvidia"), ("0000:02:00.0", "0x030200", "vfio-pci"),
                                ("0000:03:00.0", "0x030000", None), ("0000:03:00.1", "0x040300", "snd_hda_intel"),
                                ("0000:04:00.0", "0x068000", "nvidia-nvswitch")):
        dev = tmp_path / "bus" / "pci" / "devices" / name
        dev.mkdir(parents=True)
        (dev / "vendor").write_text("0x10de\n")
        (dev / "class").write_text(klass + "\n")
        if driver:
            (tmp_path / driver).mkdir(exist_ok=True)
            os.symlink(str(tmp_path / driver), str(dev / "driver"))
    assert nvidia_gpus(str(tmp_path)) == ["0000:01:00.0", "0000:03:00.0"]
    assert nvidia_gpus(str(tmp_path / "none")) is None
