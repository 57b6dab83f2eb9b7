# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""_dir_safety: where a cleanup directory may lie, and what it is on the host, read from real
trees planted below tmp_path (links, a trailing slash into a link, components writable by others
or owned by another user). Ownership cases need root to chown, as the module runs on the hosts."""
import os

import pytest

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._dir_safety import (
    component_paths, component_records, lexical_reason, place_reason, verdict)

NOBODY = 65534
MODEL = ("/srv/models/Qwen2.5-7B-Instruct", "the model path (vllm_server_model.path)")
STORE = ("/srv/models/.model_store", "the weight store (model_store)")
VENV = ("/opt/vllm/venv", "the vLLM virtualenv (vllm_server_venv)")
HOMES = [("root", "/root"), ("vllm", "/var/lib/vllm"), ("daemon", "/usr/sbin"), ("sync", "/"), ("man", "/var/cache/man")]
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="chown to another user needs root")

LEXICAL = {
    "": "it is empty",
    "   ": "it is empty",
    None: "it is empty",
    7: "it is empty",
    "var/cache": "it is a relative path",
    "~/cache": "it is a relative path",
    "/var/cache/x\n* * * * * root sh": "it holds a control character",
    "/var/cache/./x": "it is not normalised",
    "/var/cache/x/..": "it is not normalised",
    "/var//cache": "it is not normalised",
}


@pytest.mark.parametrize("path", list(LEXICAL), ids=repr)
def test_lexical_refusals(path):
    assert lexical_reason(path).startswith(LEXICAL[path])


@pytest.mark.parametrize("path", ["/var/cache/qwen_image_cache", "/data/cache/", "/srv/cache//", "/a'b", "/a%b"])
def test_lexical_accepts(path):
    assert lexical_reason(path) is None


PLACES = {
    "/": "it is the root directory /",
    "/var": "it is a system directory or lies in one: /var is a system directory",
    "/var/cache": "it is a system directory or lies in one: /var/cache is a system directory",
    "/var/lib/dpkg/info": "it is a system directory or lies in one: /var/lib/dpkg/info lies under /var/lib/dpkg",
    "/var/lib/containers/storage/overlay": "it is a system directory or lies in one: /var/lib/containers/storage/overlay "
                                           "lies under /var/lib/containers",
    "/var/lib/containerd/io.containerd.content.v1.content": "it is a system directory or lies in one: "
                                                            "/var/lib/containerd/io.containerd.content.v1.content lies under "
                                                            "/var/lib/containerd",
    "/var/lib/docker": "it is a system directory or lies in one: /var/lib/docker is a system directory",
    "/etc/vllm": "it lies in /etc (configuration)",
    "/usr/local/lib/python3.9/dist-packages": "it lies in /usr (installed software)",
    "/usr/local/share/cache": "it lies in /usr (installed software)",
    "/opt/vllm": "it is a parent of /opt/vllm/venv, the vLLM virtualenv (vllm_server_venv)",
    "/opt/other/cache": "it lies in /opt (add-on software such as the vLLM virtualenv)",
    "/run/vllm": "it lies in /run (runtime state)",
    "/home/alice/.cache": "it lies in /home (home directories)",
    "/root/.cache/torch": "it lies in /root (root's home directory)",
    "/srv/models/Qwen2.5-7B-Instruct": "it is /srv/models/Qwen2.5-7B-Instruct, the model path (vllm_server_model.path)",
    "/srv/models": "it is a parent of /srv/models/Qwen2.5-7B-Instruct, the model path (vllm_server_model.path)",
    "/srv/models/Qwen2.5-7B-Instruct/cache": "it lies inside /srv/models/Qwen2.5-7B-Instruct, the model path",
    "/srv/models/.model_store/Qwen2.5-7B-Instruct": "it lies inside /srv/models/.model_store, the weight store (model_store)",
    "/var/lib/vllm/.cache/huggingface": "it lies inside /var/lib/vllm, the home directory of user vllm",
    "/var/cache/man": "it is /var/cache/man, the home directory of user man",
}


@pytest.mark.parametrize("path", sorted(PLACES))
def test_places_refused(path):
    reason = place_reason(path.rstrip("/") or "/", [MODEL, STORE, VENV], HOMES)
    assert reason is not None and reason.startswith(PLACES[path]), reason


@pytest.mark.parametrize("path", ["/var/cache/qwen_image_cache", "/srv/cache/torch", "/data/cache",
                                  "/srv/models/Qwen2.5-7B-Instruct-cache", "/srv/models-cache", "/var/lib/gpu-cache"])
def test_places_accepted(path):
    # a home directory "/" (user sync) protects nothing: it would refuse everything
    assert place_reason(path, [MODEL, STORE, VENV], HOMES) is None


def test_component_paths():
    assert component_paths("/var/cache/x") == ["/", "/var", "/var/cache", "/var/cache/x"]


# --- real trees -------------------------------------------------------------------------------

def judge(path, leaf_uids=()):
    """verdict() on the host, nothing protected by place below tmp_path."""
    return verdict(path, (), (), leaf_uids)


def test_real_directory_accepted(tmp_path):
    (tmp_path / "cache").mkdir()
    got = judge(str(tmp_path / "cache") + "/")
    assert got == {"path": str(tmp_path / "cache") + "/", "normalized": str(tmp_path / "cache"),
                   "exists": True, "reason": None}


def test_missing_directory_accepted(tmp_path):
    got = judge(str(tmp_path / "not" / "yet"))
    assert (got["exists"], got["reason"]) == (False, None)


@pytest.mark.parametrize("suffix", ["", "/", "//"])
def test_link_to_usr_refused_also_with_trailing_slash(tmp_path, suffix):
    os.symlink("/usr", str(tmp_path / "cache"))
    got = judge(str(tmp_path / "cache") + suffix)
    assert got["reason"] == ("%s is a symbolic link (to /usr): the cleanup never follows links, also not through a "
                             "trailing slash" % (tmp_path / "cache"))


def test_link_in_a_parent_refused(tmp_path):
    (tmp_path / "real" / "cache").mkdir(parents=True)
    os.symlink(str(tmp_path / "real"), str(tmp_path / "via"))
    got = judge(str(tmp_path / "via" / "cache"))
    assert got["reason"].startswith("%s is a symbolic link (to %s)" % (tmp_path / "via", tmp_path / "real"))


def test_dangling_link_refused(tmp_path):
    os.symlink(str(tmp_path / "gone"), str(tmp_path / "cache"))
    assert judge(str(tmp_path / "cache"))["reason"].startswith("%s is a symbolic link" % (tmp_path / "cache"))


def test_file_refused(tmp_path):
    (tmp_path / "cache").write_text(u"")
    assert judge(str(tmp_path / "cache"))["reason"] == "%s is not a directory" % (tmp_path / "cache")


def test_component_writable_by_others_refused(tmp_path):
    (tmp_path / "shared" / "cache").mkdir(parents=True)
    os.chmod(str(tmp_path / "shared"), 0o777)
    assert judge(str(tmp_path / "shared" / "cache"))["reason"] == (
        "%s is writable by its group or by others (mode 0777): they could put a link in place of what lies "
        "below it" % (tmp_path / "shared"))


def test_group_writable_directory_refused(tmp_path):
    (tmp_path / "cache").mkdir()
    os.chmod(str(tmp_path / "cache"), 0o770)
    assert judge(str(tmp_path / "cache"))["reason"].startswith(
        "%s is writable by its group or by others (mode 0770): they could plant files" % (tmp_path / "cache"))


def test_sticky_component_above_root_owned_entry_accepted(tmp_path):
    (tmp_path / "sticky" / "cache").mkdir(parents=True)
    os.chmod(str(tmp_path / "sticky"), 0o1777)
    assert os.stat(str(tmp_path)).st_uid == os.geteuid()
    if os.geteuid() == 0:
        assert judge(str(tmp_path / "sticky" / "cache"))["reason"] is None


@needs_root
def test_sticky_component_above_entry_of_another_user_refused(tmp_path):
    (tmp_path / "sticky" / "theirs").mkdir(parents=True)
    os.chmod(str(tmp_path / "sticky"), 0o1777)
    os.chown(str(tmp_path / "sticky" / "theirs"), NOBODY, NOBODY)
    assert judge(str(tmp_path / "sticky" / "theirs"), [NOBODY])["reason"].startswith(
        "%s is writable by its group or by others (mode 1777)" % (tmp_path / "sticky"))


@needs_root
def test_parent_owned_by_another_user_refused(tmp_path):
    (tmp_path / "theirs" / "cache").mkdir(parents=True)
    os.chown(str(tmp_path / "theirs"), NOBODY, NOBODY)
    assert judge(str(tmp_path / "theirs" / "cache"), [NOBODY])["reason"] == (
        "%s is owned by %d, not root: that user could replace what lies below it with a link" % (tmp_path / "theirs", NOBODY))


@needs_root
def test_directory_of_the_service_user(tmp_path):
    (tmp_path / "cache").mkdir()
    os.chown(str(tmp_path / "cache"), NOBODY, NOBODY)
    assert judge(str(tmp_path / "cache"), [NOBODY])["reason"] is None
    assert judge(str(tmp_path / "cache"), [])["reason"].startswith(
        "%s is owned by %d, not root or the service user" % (tmp_path / "cache", NOBODY))


def test_records_stop_at_the_first_link(tmp_path):
    os.symlink("/usr", str(tmp_path / "cache"))
    records = component_records(str(tmp_path / "cache" / "lib"))
    assert [(r.path, r.kind, r.target) for r in records[-2:]] == [
        (str(tmp_path), "dir", None), (str(tmp_path / "cache"), "link", "/usr")]


def test_place_refused_before_the_host_is_read(tmp_path):
    def read(_norm):
        raise AssertionError("read the host for a refused place")
    got = verdict("/usr/", [], [], [], read)
    assert got == {"path": "/usr/", "normalized": "/usr", "exists": False,
                   "reason": "it is a system directory or lies in one: /usr is a system directory"}
