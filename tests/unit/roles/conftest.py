# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Shared by the role tests: run a playbook on localhost (run_playbook), or a role's validation
harness playbook (tests/unit/roles/harness/) over a list of cases with ansible-playbook --check on
localhost, returning its results (run_harness)."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import os
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.normpath(os.path.join(HERE, "..", "..", ".."))


def collections_path():
    # ansible-test copies the collection to .../ansible_collections/gpu_fleet/vllm_serving
    parts = ROOT.split(os.sep)
    if parts[-3:-1] == ["ansible_collections", "gpu_fleet"]:
        return os.sep.join(parts[:-3])
    return os.path.join(ROOT, ".build", "ac")


def _run_playbook(tmp, playbook, *args):
    """ansible-playbook PLAYBOOK ARGS against localhost (local connection, this Python), run from
    the directory tmp (its PWD too) with a bare configuration there; returns the process."""
    (tmp / "ansible.cfg").write_text("[defaults]\n")
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=collections_path(), ANSIBLE_NOCOLOR="1",
               ANSIBLE_LOCAL_TEMP=str(tmp / "tmp"), ANSIBLE_HOME=str(tmp / "home"),
               ANSIBLE_INVENTORY_UNPARSED_WARNING="false", ANSIBLE_LOCALHOST_WARNING="false",
               ANSIBLE_RETRY_FILES_ENABLED="false", ANSIBLE_CONFIG=str(tmp / "ansible.cfg"), LC_ALL="C.UTF-8",
               PWD=str(tmp))
    return subprocess.run(
        [sys.executable, "-m", "ansible.cli.playbook", "-i", "localhost,", "-c", "local", playbook,
         "-e", "ansible_python_interpreter=%s" % sys.executable] + list(args),
        env=env, cwd=str(tmp), stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
        timeout=600, check=False)


def _run_harness(tmp, harness, cases):
    (tmp / "cases.json").write_text(json.dumps(cases))
    proc = _run_playbook(tmp, os.path.join(HERE, "harness", harness), "--check",
                         "-e", "cases_file=%s results_file=%s" % (tmp / "cases.json", tmp / "results.json"))
    assert proc.returncode == 0, proc.stdout
    assert "Traceback" not in proc.stdout
    return json.loads((tmp / "results.json").read_text())


@pytest.fixture(scope="module")
def run_playbook():
    """run_playbook(tmp_dir, playbook, *args) -> the ansible-playbook process (localhost, local)."""
    return _run_playbook


@pytest.fixture(scope="module")
def run_harness():
    """run_harness(tmp_dir, 'harness.yml', cases) -> {case id: result} from the harness playbook."""
    return _run_harness
