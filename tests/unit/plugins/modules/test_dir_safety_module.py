# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The dir_safety module run as Ansible runs it, on trees planted below tmp_path: it changes
nothing, names owners, and protects a path also as it resolves on the host."""
import os
import pwd

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the module trusts root-owned trees only")


@needs_root
def test_judges_each_path_and_changes_nothing(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "cache").mkdir()
    (tree / "store" / "m" / "rev").mkdir(parents=True)
    (tree / "models").mkdir()
    os.symlink(str(tree / "store" / "m" / "rev"), str(tree / "models" / "m"))
    os.symlink("/usr", str(tree / "usr-link"))
    before = sorted(os.listdir(str(tree)))
    paths = [str(tree / "cache") + "/", str(tree / "usr-link") + "/", str(tree / "store" / "m"),
             str(tree / "later"), "/root/.cache", None]
    rc, result = run_module(tmp_path, "dir_safety", {
        "paths": paths, "owners": ["no-such-user-i16"],
        "protected": {"a model path (vllm_server_model.path)": [str(tree / "models" / "m"), ""],
                      "the vLLM virtualenv (vllm_server_venv)": "/opt/vllm/venv"}}, check_mode=True)
    assert rc == 0 and result["changed"] is False, result
    got = [(d["path"], d["exists"], d["reason"]) for d in result["dirs"]]
    assert got[0] == (str(tree / "cache") + "/", True, None)
    assert got[1][2] == ("%s is a symbolic link (to /usr): the cleanup never follows links, also not through a "
                         "trailing slash" % (tree / "usr-link"))
    assert got[2][2] == ("it is a parent of %s, a model path (vllm_server_model.path) as it resolves on this host"
                         % (tree / "store" / "m" / "rev"))
    assert got[3] == (str(tree / "later"), False, None)
    assert got[4][2] == "it lies in /root (root's home directory)"
    assert got[5] == (None, False, "it is empty")
    assert sorted(os.listdir(str(tree))) == before


@needs_root
def test_names_the_owner(tmp_path):
    (tmp_path / "theirs" / "cache").mkdir(parents=True)
    os.chown(str(tmp_path / "theirs"), 65534, 65534)
    rc, result = run_module(tmp_path, "dir_safety", {"paths": [str(tmp_path / "theirs" / "cache")]})
    name = pwd.getpwuid(65534).pw_name
    assert rc == 0
    assert result["dirs"][0]["reason"] == ("%s is owned by %s (uid 65534), not root: that user could replace what "
                                           "lies below it with a link" % (tmp_path / "theirs", name))


def test_home_directories_of_the_host(tmp_path):
    """Every account's home directory of this machine read from the passwd database (those in a
    tree refused anyway, such as /root, and / are left out here)."""
    from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._dir_safety import place_reason
    homes = [(e.pw_name, e.pw_dir) for e in pwd.getpwall()
             if e.pw_dir.startswith("/") and e.pw_dir != "/" and place_reason(e.pw_dir.rstrip("/")) is None]
    if not homes:
        pytest.skip("no home directory outside the refused trees on this machine")
    user, home = homes[0]
    rc, result = run_module(tmp_path, "dir_safety", {"paths": [home.rstrip("/") + "/cache"]})
    assert rc == 0
    assert result["dirs"][0]["reason"] == "it lies inside %s, the home directory of user %s" % (home.rstrip("/"), user)
