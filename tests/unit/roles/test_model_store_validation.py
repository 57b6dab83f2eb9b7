# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""model_store refuses bad entries in its validation step, which runs before any task that reads
a source or changes the host: a real ansible-playbook run on localhost (connection local) whose
paths all lie in tmp_path, so the test can also check that nothing was created."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_playbook

GOOD_REV = "10cf7f3be1c93173acb0cd9c812df93e9f58955f"


def run_role(tmp_path, models):
    playbook = tmp_path / "play.yml"
    playbook.write_text(json.dumps([{
        "name": "validate only", "hosts": "all", "gather_facts": False,
        "roles": [{"role": "gpu_fleet.vllm_serving.model_store", "vars": {"model_store_models": models}}]}]))
    proc = run_playbook(tmp_path, playbook, "-i", "testhost,", "-c", "local")
    return proc.returncode, " ".join(proc.stdout.split())


def entry(tmp_path, **over):
    base = {"repo_id": "Qwen/Qwen2.5-0.5B-Instruct", "revision": GOOD_REV,
            "path": str(tmp_path / "models" / "m"), "source": "dir", "mirror": str(tmp_path / "mirror")}
    base.update(over)
    return base


@pytest.mark.parametrize("over, text", [
    ({"revision": "main"}, "revision 'main' is not a full 40-digit commit hash"),
    ({"repo_id": "../etc"}, "repo_id '../etc' is not owner/name"),
    ({"path": "/srv"}, "path '/srv' must be an absolute, normalised directory of its own"),
    ({"path": "models/m"}, "path 'models/m' must be an absolute"),
    ({"source": "ftp"}, "source 'ftp' is not one of hub, dir, http"),
    ({"source": "http", "mirror": "/not/a/url"}, "source http needs mirror, an http(s):// base URL"),
    ({"format": "onnx"}, "format 'onnx' is not one of"),
])
def test_bad_entry_is_refused_naming_host_value_and_fix(tmp_path, over, text):
    rc, out = run_role(tmp_path, [entry(tmp_path, **over)])
    assert rc != 0
    assert "model_store on testhost: nothing was changed;" in out and text in out, out
    assert "Traceback" not in out
    assert not (tmp_path / "models").exists()


def test_all_problems_are_reported_at_once_and_duplicate_paths_refused(tmp_path):
    rc, out = run_role(tmp_path, [entry(tmp_path, revision="v1.0"), entry(tmp_path), entry(tmp_path)])
    assert rc != 0
    assert "entry 0 (Qwen/Qwen2.5-0.5B-Instruct): revision 'v1.0'" in out
    assert "entry 2 (Qwen/Qwen2.5-0.5B-Instruct): path '%s' is used by another entry" % (tmp_path / "models" / "m") in out


def test_missing_mirror_answer_fails_before_any_change(tmp_path):
    rc, out = run_role(tmp_path, [entry(tmp_path)])
    assert rc != 0
    assert "model_store on testhost: Qwen/Qwen2.5-0.5B-Instruct@%s:" % GOOD_REV in out
    assert "%s/Qwen/Qwen2.5-0.5B-Instruct/%s/model-info.json" % (tmp_path / "mirror", GOOD_REV) in out
    assert "nothing was changed" in out
    assert not (tmp_path / "models").exists()
