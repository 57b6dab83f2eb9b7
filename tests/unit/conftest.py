# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The unit tests' one harness (tests/unit/**): paths, fixtures, and running the real thing.

- ``fixture_path(rel)`` / ``fixture_text(rel)``: a file under tests/fixtures/ by relative path.
- ``run_module(tmp_path, name, args, check_mode=False)``: run ``plugins/modules/<name>.py`` as
  Ansible runs it - a subprocess given an args file, so AnsibleModule's real argument handling
  (types, choices, defaults, deprecations) applies - and return ``(rc, result)``: the JSON that
  ``exit_json``/``fail_json`` printed (``rc`` 0 or 1). A traceback fails the test.
- ``run_playbook(tmp, playbook, *options, check=False)``: ansible-playbook with this collection
  and a private configuration in ``tmp``.
- ``run_harness(tmp, harness, cases)``: run a role's validation harness playbook
  (tests/unit/roles/harness/) over a list of cases with ``ansible-playbook --check`` on localhost
  and return its results ``{case id: result}``.
- ``hub_info()`` / ``stage_planted_model(dest)``: the planted hub model tests/fixtures/hub/<repo>/<rev>/
  (HUB_REPO, HUB_REV): the hub's answer for it (its model-info.json), and a staged copy of it.
- ``collections_root()``: the directory holding ``ansible_collections`` for subprocesses.

Test files import these functions::

    from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text, run_module
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import shutil
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MODULES = os.path.join(ROOT, "plugins", "modules")
HARNESS = os.path.join(HERE, "roles", "harness")
HUB_REPO = "Qwen/Qwen2.5-0.5B-Instruct"
HUB_REV = "10cf7f3be1c93173acb0cd9c812df93e9f58955f"
HUB_MODEL = "hub/%s/%s" % (HUB_REPO, HUB_REV)


def collections_root():
    """Directory holding ``ansible_collections``: the parent of the copy ansible-test runs
    (.../ansible_collections/gpu_fleet/vllm_serving), else the checkout's .build/ac link."""
    parts = os.path.realpath(ROOT).split(os.sep)
    if len(parts) > 3 and parts[-3] == "ansible_collections":
        return os.sep.join(parts[:-3]) or os.sep
    return os.path.join(ROOT, ".build", "ac")


def fixture_path(rel):
    """Absolute path of ``tests/fixtures/<rel>`` (``rel`` with ``/`` separators)."""
    return os.path.join(FIXTURES, *rel.split("/"))


def fixture_text(rel, mode="r"):
    """Contents of ``tests/fixtures/<rel>``: text, or bytes with ``mode="rb"``."""
    with open(fixture_path(rel), mode) as handle:
        return handle.read()


def hub_info():
    """The hub's answer (``/api/models/<repo>/revision/<rev>?blobs=true``) for the planted model."""
    return json.loads(fixture_text(HUB_MODEL + "/model-info.json"))


def stage_planted_model(dest):
    """Copy the planted model to ``dest`` (a pathlib path) as model_store stages it: without
    model-info.json, which is the hub's answer, not part of the model. Returns ``dest``."""
    shutil.copytree(fixture_path(HUB_MODEL), str(dest))
    os.remove(str(dest / "model-info.json"))
    return dest


def run_module(tmp_path, name, args, check_mode=False, diff=False, bindir=None):
    """Run module ``name`` with ``args`` as Ansible does (args file in ``tmp_path``); return
    ``(rc, result dict)``. ``bindir``: a directory of stand-in tools put first on PATH; LC_ALL is
    then dropped from the environment, so the stand-ins see only the locale the module sets."""
    path = tmp_path / ("args-%s.json" % name)
    module_args = dict(args, _ansible_check_mode=check_mode, _ansible_diff=diff)
    path.write_text(json.dumps({"ANSIBLE_MODULE_ARGS": module_args}))
    env = dict(os.environ)
    env["PYTHONPATH"] = collections_root() + os.pathsep + env.get("PYTHONPATH", "")
    if bindir is not None:
        env["PATH"] = str(bindir) + os.pathsep + env.get("PATH", "")
        env.pop("LC_ALL", None)
    proc = subprocess.run([sys.executable, os.path.join(MODULES, name + ".py"), str(path)], cwd=ROOT, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stdout + proc.stderr
    return proc.returncode, json.loads(proc.stdout)


def run_playbook(tmp, playbook, *options, **kwargs):
    """Run ``ansible-playbook [--check] <options> <playbook>`` in ``tmp`` with this collection and a
    private ansible.cfg/home/temp there; return the CompletedProcess (stdout and stderr together)."""
    (tmp / "ansible.cfg").write_text(u"[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_root(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"), ANSIBLE_HOME=str(tmp / "home"),
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_RETRY_FILES_ENABLED="false", ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), LC_ALL="C.UTF-8",
               PWD=str(tmp))
    argv = [sys.executable, "-m", "ansible.cli.playbook"] + (["--check"] if kwargs.get("check") else [])
    argv += list(options) + ["-e", "ansible_python_interpreter=%s" % sys.executable, str(playbook)]
    return subprocess.run(argv, env=env, cwd=str(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                          universal_newlines=True, timeout=600, check=False)


def run_harness(tmp, harness, cases):
    """Run tests/unit/roles/harness/<harness> over ``cases`` in check mode on localhost; return
    {case id: result}."""
    (tmp / "cases.json").write_text(json.dumps(cases))
    proc = run_playbook(tmp, os.path.join(HARNESS, harness), "-i", "localhost,",
                        "-e", "cases_file=%s results_file=%s" % (tmp / "cases.json", tmp / "results.json"),
                        check=True)
    assert proc.returncode == 0, proc.stdout
    assert "Traceback" not in proc.stdout
    return json.loads((tmp / "results.json").read_text())
