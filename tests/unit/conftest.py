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
- ``cached(key, compute)``: ``compute()``'s JSON result, computed once per pytest session for
  ``key``. ansible-test runs every test in a fork of its own (its ``ansible_forked`` plugin), so a
  module-scoped fixture is rebuilt for every test; an expensive one (a harness playbook run) goes
  through ``cached`` to run once. The cache is a fresh directory per session (``pytest_configure``).

Test files import these functions::

    from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text, run_module
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", ".."))
FIXTURES = os.path.join(ROOT, "tests", "fixtures")
MODULES = os.path.join(ROOT, "plugins", "modules")
HARNESS = os.path.join(HERE, "roles", "harness")
HUB_REPO = "Qwen/Qwen2.5-0.5B-Instruct"
HUB_REV = "10cf7f3be1c93173acb0cd9c812df93e9f58955f"
HUB_MODEL = "hub/%s/%s" % (HUB_REPO, HUB_REV)


CACHE_ENV = "GPU_FLEET_TEST_CACHE"


def pytest_configure(config):
    """One cache directory per session, inherited by every forked test (see ``cached``); with
    pytest-xdist, a file's tests go to one worker so its harness runs once."""
    if not os.environ.get(CACHE_ENV):
        os.environ[CACHE_ENV] = tempfile.mkdtemp(prefix="gpu-fleet-test-cache-")
    if getattr(config.option, "dist", "no") == "load":
        config.option.dist = "loadfile"


def cached(key, compute):
    """``compute()`` (a JSON-serialisable value), run once per session for ``key`` (a string)."""
    directory = os.environ.get(CACHE_ENV)
    if not directory:
        return compute()
    path = os.path.join(directory, hashlib.sha256(key.encode("utf-8")).hexdigest() + ".json")
    if os.path.exists(path):
        with open(path) as handle:
            return json.load(handle)
    value = compute()
    fd, tmp = tempfile.mkstemp(dir=directory)
    with os.fdopen(fd, "w") as handle:
        json.dump(value, handle)
    os.rename(tmp, path)
    return value


def collections_root():
    """Directory holding ``ansible_collections``: the parent of the copy ansible-test runs
    (.../ansible_collections/gpu_fleet/vllm_serving), else the checkout's .build/ac link."""
    parts = os.path.realpath(ROOT).split(os.sep)
    if len(parts) > 3 and parts[-3] == "ansible_collections":
        return os.sep.join(parts[:-3]) or os.sep
    return os.path.join(ROOT, ".build", "ac")


def _playbook_collections_path():
    """This collection, then the checkout venv's collections (ansible.posix, community.general):
    under ansible-test the tests run with ansible-test's own Python, which has only ansible-core,
    so a role task using ansible.posix would not resolve there."""
    paths = [collections_root()]
    for top in (ROOT, os.path.normpath(os.path.join(ROOT, *[".."] * 5))):
        paths += sorted(glob.glob(os.path.join(top, ".venv", "lib", "python*", "site-packages")))
    return os.pathsep.join(p for p in paths if os.path.isdir(os.path.join(p, "ansible_collections")))


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
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=_playbook_collections_path(), ANSIBLE_NOCOLOR="1",
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
    {case id: result}. Once per session for the same harness and cases (``cached``)."""
    key = json.dumps({"harness": harness, "cases": cases}, sort_keys=True)
    return cached(key, lambda: _run_harness(tmp, harness, cases))


def _run_harness(tmp, harness, cases):
    (tmp / "cases.json").write_text(json.dumps(cases))
    proc = run_playbook(tmp, os.path.join(HARNESS, harness), "-i", "localhost,",
                        "-e", "cases_file=%s results_file=%s" % (tmp / "cases.json", tmp / "results.json"),
                        check=True)
    assert proc.returncode == 0, proc.stdout
    assert "Traceback" not in proc.stdout
    return json.loads((tmp / "results.json").read_text())
