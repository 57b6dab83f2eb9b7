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
import re

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_playbook

GOOD_REV = "10cf7f3be1c93173acb0cd9c812df93e9f58955f"


def run_role(tmp_path, models, **role_vars):
    playbook = tmp_path / "play.yml"
    role_vars["model_store_models"] = models
    playbook.write_text(json.dumps([{
        "name": "validate only", "hosts": "all", "gather_facts": False,
        "roles": [{"role": "gpu_fleet.vllm_serving.model_store", "vars": role_vars}]}]))
    proc = run_playbook(tmp_path, playbook, "-i", "testhost,", "-c", "local")
    return proc.returncode, " ".join(proc.stdout.split())


def _msg(out):
    """The failed task's message, from its JSON result in the output."""
    return json.loads('"%s"' % re.findall(r'"msg": "((?:[^"\\]|\\.)*)"', out)[-1])


def entry(tmp_path, **over):
    base = {"repo_id": "Qwen/Qwen2.5-0.5B-Instruct", "revision": GOOD_REV,
            "path": str(tmp_path / "models" / "m"), "source": "dir", "mirror": str(tmp_path / "mirror")}
    base.update(over)
    return base


@pytest.mark.parametrize("over, text", [
    ({"revision": "main"}, 'model_store_models[0].revision is "main": it is not a full 40-digit commit hash'),
    ({"repo_id": "../etc"}, 'model_store_models[0].repo_id is "../etc": it is not owner/name'),
    ({"path": "/srv"}, 'model_store_models[0].path is "/srv": it is a system directory'),
    ({"path": "/var/lib/"}, 'model_store_models[0].path is "/var/lib/": it is a system directory'),
    ({"path": "/usr/lib/models"}, 'model_store_models[0].path is "/usr/lib/models": it is a system directory'),
    ({"path": "models/m"}, 'model_store_models[0].path is "models/m": it must be an absolute'),
    ({"path": "/srv/models/a b"}, 'model_store_models[0].path is "/srv/models/a b": it must be an absolute, normalised path without blanks'),
    ({"source": "ftp"}, 'model_store_models[0].source is "ftp": it must be one of hub, dir, http'),
    ({"source": "http", "mirror": "/not/a/url"}, 'model_store_models[0].mirror is "/not/a/url": source http needs an http(s):// base URL'),
    ({"format": "onnx"}, 'model_store_models[0].format is "onnx": it must be one of'),
    ({"path": "/etc/ssl"}, 'model_store_models[0].path is "/etc/ssl": it lies in or holds /etc, which belongs to the OS'),
    ({"path": "/home/alice/m"}, 'model_store_models[0].path is "/home/alice/m": it lies in or holds /home'),
    ({"path": "/var/log/nginx"}, 'model_store_models[0].path is "/var/log/nginx": it lies in or holds /var/log'),
    ({"path": "/opt/vllm"}, 'model_store_models[0].path is "/opt/vllm": it lies in or holds /opt/vllm/venv'),
    ({"path": "/opt/vllm/venv/m"}, 'model_store_models[0].path is "/opt/vllm/venv/m": it lies in or holds /opt/vllm/venv'),
    ({"path": "/srv/models/.model_store/m"}, 'model_store_models[0].path is "/srv/models/.model_store/m": it must be an '
                                             'absolute, normalised path without blanks and outside the stores'),
    ({"conversions": {"format": "gguf"}}, 'model_store_models[0].conversions is {"format": "gguf"}: it must be a list'),
])
def test_bad_entry_is_refused_naming_host_value_and_fix(tmp_path, over, text):
    rc, out = run_role(tmp_path, [entry(tmp_path, **over)])
    assert rc != 0
    msg = _msg(out)
    assert msg.startswith("host testhost: model_store_models[0].") and text in msg, msg
    assert msg.endswith("Nothing was changed."), msg
    assert "Traceback" not in out
    assert not (tmp_path / "models").exists()


def test_all_problems_are_reported_at_once_and_duplicate_paths_refused(tmp_path):
    rc, out = run_role(tmp_path, [entry(tmp_path, revision="v1.0"), entry(tmp_path), entry(tmp_path)])
    assert rc != 0
    msg = _msg(out)
    assert 'model_store_models[0].revision is "v1.0"' in msg
    for index in (1, 2):
        assert ('model_store_models[%d].path is "%s": model_store_models[0] has it too' % (index, tmp_path / "models" / "m")) in msg
    assert 'model_store_models[0].path is' not in msg


def test_nested_model_paths_are_refused(tmp_path):
    inner = entry(tmp_path, path=str(tmp_path / "models" / "m" / "inner"))
    rc, out = run_role(tmp_path, [entry(tmp_path), inner])
    assert rc != 0
    assert ('model_store_models[1].path is "%s": it lies inside, or holds, model_store_models[0].path "%s"'
            % (tmp_path / "models" / "m" / "inner", tmp_path / "models" / "m")) in _msg(out)


@pytest.mark.parametrize("name", ["../../../usr", "", ".", "a/b"])
def test_a_store_name_that_is_no_directory_name_is_refused(tmp_path, name):
    rc, out = run_role(tmp_path, [entry(tmp_path)], model_store_dir_name=name)
    assert rc != 0
    assert _msg(out).startswith("host testhost: model_store_dir_name is %s: it is the name of the store directory"
                                % json.dumps(name)), _msg(out)
    assert not (tmp_path / "models").exists()


def test_a_token_message_names_the_hub_entry_after_a_dir_entry(tmp_path):
    models = [entry(tmp_path), entry(tmp_path, source="hub", endpoint="http://127.0.0.1:9", token="hf_x",
                                     path=str(tmp_path / "models" / "m2"))]
    rc, out = run_role(tmp_path, models)
    assert rc != 0
    assert "model_store_models[1].endpoint is 'http://127.0.0.1:9'" in _msg(out), _msg(out)
    assert "model_store_models[0].endpoint" not in _msg(out)


def test_a_group_that_is_no_group_name_is_refused(tmp_path):
    rc, out = run_role(tmp_path, [entry(tmp_path)], model_store_group="vllm; rm")
    assert rc != 0
    assert _msg(out) == ('host testhost: model_store_group is "vllm; rm": it is not a valid group name; set it to '
                         "the vLLM service user's group (vllm). Nothing was changed.")


def test_missing_mirror_answer_fails_before_any_change(tmp_path):
    rc, out = run_role(tmp_path, [entry(tmp_path)])
    assert rc != 0
    assert "model_store on testhost: Qwen/Qwen2.5-0.5B-Instruct@%s:" % GOOD_REV in out
    assert "%s/Qwen/Qwen2.5-0.5B-Instruct/%s/model-info.json" % (tmp_path / "mirror", GOOD_REV) in out
    assert "nothing was changed" in out
    assert not (tmp_path / "models").exists()


# --- the hub token (issue 16) ----------------------------------------------------------------------

def test_token_over_plain_http_and_tokens_that_break_a_header_are_refused_at_once(tmp_path):
    models = [entry(tmp_path, source="hub", endpoint="http://127.0.0.1:9", token="hf_Plain0"),
              entry(tmp_path, source="hub", endpoint="https://hub.example", token="hf_Bad1\n",
                    path=str(tmp_path / "models" / "m2"))]
    rc, out = run_role(tmp_path, models, model_store_hf_token="hf Global2")
    assert rc != 0
    assert ("host testhost: model_store_models[0].endpoint is 'http://127.0.0.1:9': plain http would send the hub "
            "token (model_store_models[0].token) in clear text to 127.0.0.1 and to anyone on the way; use the hub's "
            "https:// URL (a private CA: set model_store_ca_path), or leave model_store_models[0].token empty") in out
    assert "model_store_hf_token is (hidden, 10 characters): it holds whitespace, a line break" in out
    assert "model_store_models[1].token is (hidden, 8 characters)" in out
    assert "which would break or inject into its Authorization header" in out
    assert _msg(out).endswith("Nothing was changed.")
    assert "hf_Bad1" not in out and "Global2" not in out
    assert not (tmp_path / "models").exists()


def test_the_global_endpoint_is_named_when_the_entry_has_none(tmp_path):
    models = [entry(tmp_path, source="hub")]
    rc, out = run_role(tmp_path, models, model_store_hf_endpoint="http://hub.internal:8080", model_store_hf_token="hf_x")
    assert rc != 0
    assert ("host testhost: model_store_hf_endpoint is 'http://hub.internal:8080': plain http would send the hub "
            "token (model_store_hf_token) in clear text to hub.internal") in out


def test_plain_http_without_a_token_passes_validation_and_a_failed_fetch_names_the_url(tmp_path):
    rc, out = run_role(tmp_path, [entry(tmp_path, source="hub", endpoint="http://127.0.0.1:9")])
    assert rc != 0
    assert "plain http would send" not in out
    assert ("model_store on testhost: Qwen/Qwen2.5-0.5B-Instruct@%s: model_fetch on testhost: GET "
            "http://127.0.0.1:9/api/models/Qwen/Qwen2.5-0.5B-Instruct/revision/%s: failed:" % (GOOD_REV, GOOD_REV)) in out
    assert "Connection refused" in out and "nothing was changed" in out
    assert not (tmp_path / "models").exists()


@pytest.mark.parametrize("ca, text", [
    ("certs/hub-ca.pem", "model_store_ca_path is 'certs/hub-ca.pem': not an absolute path"),
    ("/nonexistent/hub-ca.pem", "model_store_ca_path is '/nonexistent/hub-ca.pem': no such file on the host"),
])
def test_a_private_ca_path_must_be_a_file_on_the_host(tmp_path, ca, text):
    rc, out = run_role(tmp_path, [entry(tmp_path)], model_store_ca_path=ca)
    assert rc != 0
    assert _msg(out).startswith("host testhost: %s" % text) and _msg(out).endswith("Nothing was changed.")
