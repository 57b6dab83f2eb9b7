# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""log_collect run as Ansible runs it (subprocess, args file) on a planted log directory: the
service user's files, a link it planted to a root-only file, a FIFO, another user's file, and a
second directory whose other files must not be searched with the first one's patterns."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import pwd

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module

SECRET = u"s16-root-only-secret\n"
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


def _service_user():
    """An existing user other than root (the module resolves the owner by name), e.g. nobody."""
    for entry in pwd.getpwall():
        if entry.pw_uid not in (0, os.geteuid()) and entry.pw_name != "root":
            return entry
    pytest.skip("no user but root on this machine")
    return None


@pytest.fixture
def planted(tmp_path):
    logs = tmp_path / "var-log-vllm"
    other = tmp_path / "tmp"
    logs.mkdir()
    other.mkdir()
    secret = tmp_path / "root-only"
    secret.write_text(SECRET)
    secret.chmod(0o600)
    (logs / "n0-0.log").write_text(u"INFO vLLM API server version 0.6.3\n")
    os.symlink(str(secret), str(logs / "x.log"))
    os.mkfifo(str(logs / "fifo.log"))
    (logs / "n0-0.log.1").write_text(u"rotated, not matched by *.log\n")
    (other / "nccl-7.log").write_text(u"NCCL INFO comm 0x1 rank 0\n")
    (other / "someone.log").write_text(u"another user's /tmp file\n")
    return tmp_path, logs, other


def collect(tmp_path, paths, **extra):
    args = {"paths": paths, "dest": str(tmp_path / "bundle" / "logs"), "owner": "root"}
    args.update(extra)
    return run_module(tmp_path, "log_collect", args)


def _all_bytes(root):
    data = b""
    for dirpath, _dirs, files in os.walk(str(root)):
        for name in files:
            with open(os.path.join(dirpath, name), "rb") as handle:
                data += handle.read()
    return data


def test_link_fifo_are_skipped_files_copied_from_their_own_directory_only(planted):
    tmp_path, logs, other = planted
    (tmp_path / "bundle").mkdir()
    rc, res = collect(tmp_path, [str(logs / "*.log"), str(other / "nccl*.log")])
    assert rc == 0 and res["changed"] is True, res
    dest = tmp_path / "bundle" / "logs"
    copies = dict((f["path"], f["dest"]) for f in res["files"])
    assert copies == {str(logs / "n0-0.log"): str(dest) + str(logs / "n0-0.log"),
                      str(other / "nccl-7.log"): str(dest) + str(other / "nccl-7.log")}
    assert res["skipped"] == [{"path": str(logs / "fifo.log"), "reason": "a FIFO, not a regular file"},
                              {"path": str(logs / "x.log"), "reason": "a symbolic link, not followed"}]
    # the second directory is searched with its own pattern only: someone.log is not *.log of logs/
    assert res["searched"] == [{"directory": str(logs), "patterns": ["*.log"]},
                               {"directory": str(other), "patterns": ["nccl*.log"]}]
    assert SECRET.encode() not in _all_bytes(dest)
    with open(copies[str(logs / "n0-0.log")]) as handle:
        assert handle.read() == u"INFO vLLM API server version 0.6.3\n"
    for path in copies.values():
        assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert oct(os.stat(str(dest)).st_mode & 0o777) == "0o700"


@ROOT_ONLY
def test_only_files_of_the_owner_or_root_are_copied(planted):
    tmp_path, logs, other = planted
    user = _service_user()
    os.chown(str(logs / "n0-0.log"), user.pw_uid, user.pw_gid)
    os.chown(str(other / "someone.log"), user.pw_uid + 1000, user.pw_gid)
    (tmp_path / "bundle").mkdir()
    rc, res = collect(tmp_path, [str(logs / "n0-0.log"), str(other / "*.log")], owner=user.pw_name)
    assert rc == 0, res
    copied = [(f["path"], f["uid"]) for f in res["files"]]
    assert copied == [(str(logs / "n0-0.log"), user.pw_uid), (str(other / "nccl-7.log"), 0)]
    assert res["skipped"] == [{"path": str(other / "someone.log"),
                               "reason": "owned by uid %d, not by %s or root" % (user.pw_uid + 1000, user.pw_name)}]


def test_owner_unknown_on_the_host_copies_roots_files_only_and_warns(planted):
    tmp_path, logs, _other = planted
    (tmp_path / "bundle").mkdir()
    rc, res = collect(tmp_path, [str(logs / "n0-0.log")], owner="no-such-user-s16")
    assert rc == 0 and [f["path"] for f in res["files"]] == [str(logs / "n0-0.log")]
    assert "user 'no-such-user-s16' does not exist on this host" in str(res["warnings"])


def test_a_file_above_the_cap_gives_its_end(planted):
    tmp_path, logs, _other = planted
    (logs / "big.log").write_bytes(b"x" * 1000 + b"the last line\n")
    (tmp_path / "bundle").mkdir()
    rc, res = collect(tmp_path, [str(logs / "big.log")], max_file_bytes=14)
    assert rc == 0
    assert res["files"][0]["size"] == 1014 and res["files"][0]["copied"] == 14 and res["files"][0]["truncated"]
    with open(res["files"][0]["dest"], "rb") as handle:
        assert handle.read() == b"the last line\n"


def test_missing_directory_and_linked_directory_are_skipped(planted):
    tmp_path, logs, _other = planted
    os.symlink(str(tmp_path), str(logs / "sub"))
    (tmp_path / "bundle").mkdir()
    rc, res = collect(tmp_path, [str(tmp_path / "absent" / "*.log"), str(logs / "sub" / "*")])
    assert rc == 0 and res["files"] == [] and res["changed"] is False
    assert res["skipped"] == [{"path": str(tmp_path / "absent"), "reason": "not found"},
                              {"path": str(logs / "sub"), "reason": "a symbolic link, not followed"}]


def test_check_mode_reports_and_writes_nothing(planted):
    tmp_path, logs, _other = planted
    (tmp_path / "bundle").mkdir()
    rc, res = run_module(tmp_path, "log_collect", {"paths": [str(logs / "*.log")], "dest": str(tmp_path / "bundle" / "logs")},
                         check_mode=True)
    assert rc == 0 and res["changed"] is True and [f["copied"] for f in res["files"]] == [0]
    assert not (tmp_path / "bundle" / "logs").exists()


@pytest.mark.parametrize("args, text", [
    ({"paths": ["var/log/vllm/*.log"]}, "log_collect: paths: 'var/log/vllm/*.log' is not an absolute path glob"),
    ({"paths": ["/var/log/*/x.log"]}, "log_collect: paths: '/var/log/*/x.log' has a wildcard in its directory part"),
    ({"paths": ["/var/log/vllm/*.log"], "max_file_bytes": 0}, "log_collect: max_file_bytes is 0: give a positive"),
])
def test_bad_input_is_a_clear_error_and_nothing_is_written(tmp_path, args, text):
    args = dict(args, dest=str(tmp_path / "out"))
    rc, res = run_module(tmp_path, "log_collect", args)
    assert rc == 1 and res["msg"].startswith(text) and res["msg"].endswith("Nothing was changed."), res["msg"]
    assert not (tmp_path / "out").exists()


def test_dest_whose_parent_is_missing_is_a_clear_error(planted):
    tmp_path, logs, _other = planted
    rc, res = collect(tmp_path, [str(logs / "*.log")], dest=str(tmp_path / "no" / "such"))
    assert rc == 1 and res["msg"].startswith("log_collect: dest %s cannot be used" % (tmp_path / "no" / "such"))
