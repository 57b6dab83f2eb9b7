# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_safe_read on real files: symbolic links (to the file and in the directory path), FIFOs,
sockets, hard links, other owners (os.chown: the tests run as root; skipped otherwise), and a
file swapped for a link after it was opened."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import signal
import socket
import stat

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _safe_read as sr

SERVICE_UID = 4242  # a uid no test machine gives a real user here; only compared, never logged in
ROOT_ONLY = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another uid needs root")


@pytest.fixture
def tree(tmp_path):
    """logs/ (the service user's directory) and secret (a root-only 0600 file beside it)."""
    logs = tmp_path / "logs"
    logs.mkdir()
    secret = tmp_path / "secret"
    secret.write_text(u"root-only-secret\n")
    secret.chmod(0o600)
    return logs, secret


@pytest.fixture
def no_hang():
    """Fail instead of hanging when an open blocks (a FIFO opened without O_NONBLOCK)."""
    def expired(*_args):
        raise AssertionError("the open blocked")
    old = signal.signal(signal.SIGALRM, expired)
    signal.alarm(5)
    yield
    signal.alarm(0)
    signal.signal(signal.SIGALRM, old)


def _refused(path, owners=frozenset([0])):
    with pytest.raises(sr.Refused) as err:
        sr.read_tail(str(path), set(owners))
    return err.value.reason


def test_regular_file_of_root_is_read(tree):
    logs, _secret = tree
    (logs / "n0-0.log").write_text(u"line 1\nline 2\n")
    assert sr.read_tail(str(logs / "n0-0.log"), {0}) == b"line 1\nline 2\n"


def test_tail_is_the_end_of_the_file(tree):
    logs, _secret = tree
    (logs / "big.log").write_bytes(b"a" * 100 + b"END")
    assert sr.read_tail(str(logs / "big.log"), {0}, max_bytes=5) == b"aaEND"


def test_symbolic_link_to_a_root_only_file_is_not_followed(tree):
    logs, secret = tree
    os.symlink(str(secret), str(logs / "x.log"))
    assert _refused(logs / "x.log") == "a symbolic link, not followed"


def test_link_in_the_directory_path_is_not_followed(tree, tmp_path):
    logs, secret = tree
    os.symlink(str(tmp_path), str(logs / "sub"))  # logs/sub -> the directory holding the secret
    assert _refused(logs / "sub" / "secret") == "%s is a symbolic link, not followed" % (logs / "sub")


def test_directory_itself_a_link_is_refused(tree, tmp_path):
    os.symlink(str(tmp_path), str(tmp_path / "linked"))
    with pytest.raises(sr.Refused) as err:
        sr.open_dir(str(tmp_path / "linked"))
    assert err.value.reason == "a symbolic link, not followed"


def test_fifo_is_refused_without_blocking(tree, no_hang):
    logs, _secret = tree
    os.mkfifo(str(logs / "f.log"))
    assert _refused(logs / "f.log") == "a FIFO, not a regular file"


def test_socket_is_refused(tree):
    logs, _secret = tree
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.bind(str(logs / "s.log"))
        assert _refused(logs / "s.log") == "a socket, not a regular file"
    finally:
        sock.close()


def test_directory_where_a_file_is_expected_is_refused(tree):
    logs, _secret = tree
    (logs / "d.log").mkdir()
    assert _refused(logs / "d.log") == "a directory, not a regular file"


def test_missing_file_and_directory(tree):
    logs, _secret = tree
    assert _refused(logs / "none.log") == "not found"
    assert _refused(logs / "none" / "x.log") == "%s is not found" % (logs / "none")


@ROOT_ONLY
def test_file_of_another_user_is_refused(tree):
    logs, _secret = tree
    (logs / "o.log").write_text(u"theirs\n")
    os.chown(str(logs / "o.log"), SERVICE_UID + 1, SERVICE_UID + 1)
    with pytest.raises(sr.Refused) as err:
        sr.read_tail(str(logs / "o.log"), {SERVICE_UID, 0}, owner_names="vllm or root")
    assert err.value.reason == "owned by uid %d, not by vllm or root" % (SERVICE_UID + 1)


@ROOT_ONLY
def test_file_of_the_service_user_is_read(tree):
    logs, _secret = tree
    (logs / "n0-0.log").write_text(u"mine\n")
    os.chown(str(logs / "n0-0.log"), SERVICE_UID, SERVICE_UID)
    assert sr.read_tail(str(logs / "n0-0.log"), {SERVICE_UID, 0}) == b"mine\n"


def test_hard_link_to_a_root_file_is_refused(tree):
    logs, secret = tree
    os.link(str(secret), str(logs / "h.log"))
    reason = _refused(logs / "h.log")
    assert reason == "a root-owned file with 2 hard links (another name of it may be a root-only file)"


@ROOT_ONLY
def test_hard_link_among_the_service_users_own_files_is_read(tree):
    logs, _secret = tree
    (logs / "a.log").write_text(u"mine\n")
    os.chown(str(logs / "a.log"), SERVICE_UID, SERVICE_UID)
    os.link(str(logs / "a.log"), str(logs / "b.log"))
    assert sr.read_tail(str(logs / "b.log"), {SERVICE_UID, 0}) == b"mine\n"


def test_a_file_swapped_for_a_link_after_the_check_is_read_as_it_was(tree):
    """The race of the diagnostics bundle: the name is replaced between check and read. The
    descriptor that was checked is what gets read, never the name again."""
    logs, secret = tree
    (logs / "x.log").write_text(u"the log\n")
    dir_fd = sr.open_dir(str(logs))
    try:
        fd, st = sr.open_file("x.log", {0}, dir_fd=dir_fd)
        os.symlink(str(secret), str(logs / "x.tmp"))
        os.rename(str(logs / "x.tmp"), str(logs / "x.log"))  # now x.log -> secret
        chunks = []
        sr.copy_tail(fd, st.st_size, chunks.append, 1024)
        os.close(fd)
    finally:
        os.close(dir_fd)
    assert b"".join(chunks) == b"the log\n"
    assert os.path.islink(str(logs / "x.log"))


def test_copy_tail_reads_no_more_than_the_cap_of_a_growing_file(tree):
    logs, _secret = tree
    (logs / "g.log").write_bytes(b"0123456789")
    fd, st = sr.open_path(str(logs / "g.log"), {0})
    with open(str(logs / "g.log"), "ab") as handle:
        handle.write(b"grown")
    chunks = []
    assert sr.copy_tail(fd, st.st_size, chunks.append, 4) == (4, True)
    os.close(fd)
    assert b"".join(chunks) == b"6789"


# --- the pure parts --------------------------------------------------------------------------------

def _st(mode, uid=0, nlink=1):
    return os.stat_result((mode, 1, 1, nlink, uid, 0, 10, 0, 0, 0))


@pytest.mark.parametrize("st, problem", [
    (_st(stat.S_IFREG | 0o640, 998), None),
    (_st(stat.S_IFREG | 0o600, 0), None),
    (_st(stat.S_IFLNK | 0o777), "a symbolic link, not a regular file, not followed"),
    (_st(stat.S_IFIFO | 0o600), "a FIFO, not a regular file"),
    (_st(stat.S_IFCHR | 0o600), "a character device, not a regular file"),
    (_st(stat.S_IFREG | 0o644, 1001), "owned by uid 1001, not by 0 or 998"),
    (_st(stat.S_IFREG | 0o600, 0, 2), "a root-owned file with 2 hard links (another name of it may be a root-only file)"),
    (_st(stat.S_IFREG | 0o640, 998, 3), None),
])
def test_file_problem(st, problem):
    assert sr.file_problem(st, {998, 0}) == problem


def test_split_globs_one_search_per_directory_and_its_own_patterns():
    globs = ["/var/log/vllm/*.log", "/var/log/vllm/nccl*", "/tmp/nccl*.log", "/var/log//vllm/*.log"]
    assert list(sr.split_globs(globs).items()) == [("/var/log/vllm", ["*.log", "nccl*"]), ("/tmp", ["nccl*.log"])]


@pytest.mark.parametrize("glob, text", [
    ("var/log/*.log", "is not an absolute path glob"),
    ("/var/log/*/x.log", "has a wildcard in its directory part"),
    ("/var/log/vllm/", "is not an absolute path glob"),
    ("/var/log/..", "is not a file name glob"),
    (5, "is not an absolute path glob"),
])
def test_split_globs_refuses(glob, text):
    with pytest.raises(ValueError, match=text):
        sr.split_globs([glob])


@pytest.mark.parametrize("name, patterns, matched", [
    ("n0-0.log", ["*.log"], True),
    ("n0-0.log.1", ["*.log"], False),
    ("N0.LOG", ["*.log"], False),
    (".hidden.log", ["*.log"], False),
    (".hidden.log", [".*.log"], True),
    ("nccl-1.txt", ["*.log", "nccl*"], True),
])
def test_matches_like_a_shell_glob(name, patterns, matched):
    assert sr.matches(name, patterns) is matched
