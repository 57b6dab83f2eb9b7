# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The generated tests/fixtures/models/*/config.json files agree with qwen2.5-family.tsv.

The tsv is parsed here with its own code (not make_configs.py), so a bug in the generator or a
hand edit of a json file shows up as a failure.
"""

from __future__ import absolute_import, division, print_function

import json
import os
import subprocess
import sys

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import model_figures

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
MODELS = os.path.join(ROOT, "tests", "fixtures", "models")
TSV = os.path.join(MODELS, "qwen2.5-family.tsv")


def tsv_rows():
    with open(TSV) as handle:
        lines = [line.rstrip("\n") for line in handle if line.strip() and not line.startswith("#")]
    header = lines[0].split("\t")
    return [dict(zip(header, line.split("\t"))) for line in lines[1:]]


ROWS = tsv_rows()


def test_tsv_has_the_seven_qwen25_models():
    assert [r["model"] for r in ROWS] == [
        "Qwen2.5-0.5B-Instruct", "Qwen2.5-1.5B-Instruct", "Qwen2.5-3B-Instruct", "Qwen2.5-7B-Instruct",
        "Qwen2.5-14B-Instruct", "Qwen2.5-32B-Instruct", "Qwen2.5-72B-Instruct"]


def test_no_stray_model_directories():
    dirs = sorted(d for d in os.listdir(MODELS) if os.path.isdir(os.path.join(MODELS, d)) and d != "__pycache__")
    assert dirs == sorted(r["model"] for r in ROWS)


@pytest.mark.parametrize("row", ROWS, ids=[r["model"] for r in ROWS])
def test_config_json_matches_tsv(row):
    with open(os.path.join(MODELS, row["model"], "config.json")) as handle:
        cfg = json.load(handle)
    for key in ("hidden_size", "intermediate_size", "num_hidden_layers", "num_attention_heads",
                "num_key_value_heads", "vocab_size", "max_position_embeddings"):
        assert cfg[key] == int(row[key]), key
        assert isinstance(cfg[key], int) and not isinstance(cfg[key], bool), key
    assert cfg["tie_word_embeddings"] is (row["tie_word_embeddings"] == "true")
    assert cfg["torch_dtype"] == row["torch_dtype"]
    assert cfg["architectures"] == ["Qwen2ForCausalLM"]
    assert cfg["model_type"] == "qwen2"
    assert "params_billion" not in cfg  # not a config.json key; the planner computes it


@pytest.mark.parametrize("row", ROWS, ids=[r["model"] for r in ROWS])
def test_computed_parameters_match_model_card(row):
    """Parameters computed from config.json are within 1% of the model card figure in the tsv."""
    with open(os.path.join(MODELS, row["model"], "config.json")) as handle:
        fig = model_figures(json.load(handle))
    card = float(row["params_billion"]) * 1e9
    assert abs(fig["parameters"] - card) / card < 0.01


def test_generator_check_mode_finds_files_current():
    proc = subprocess.run([sys.executable, os.path.join(MODELS, "make_configs.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 0, proc.stderr


def test_generator_check_mode_detects_a_stale_file(tmp_path):
    """Copy the generator and tsv, damage one json file: --check must fail and name it."""
    import shutil
    for name in ("make_configs.py", "qwen2.5-family.tsv"):
        shutil.copy(os.path.join(MODELS, name), str(tmp_path / name))
    for row in ROWS:
        os.mkdir(str(tmp_path / row["model"]))
        shutil.copy(os.path.join(MODELS, row["model"], "config.json"), str(tmp_path / row["model"] / "config.json"))
    target = tmp_path / "Qwen2.5-7B-Instruct" / "config.json"
    target.write_text(target.read_text().replace('"num_key_value_heads": 4', '"num_key_value_heads": 7'))
    proc = subprocess.run([sys.executable, str(tmp_path / "make_configs.py"), "--check"],
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 1
    assert "Qwen2.5-7B-Instruct" in proc.stderr
