# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""housekeeping refuses dangerous cache cleanup paths at validation time.

The role's real validation tasks (roles/housekeeping/tasks/validate.yml) run through
ansible-playbook in check mode against localhost, once for all cases; each case records either
"accepted" or the failure messages. That the validation runs before anything changes is proven on
the simulated host (molecule scenario host_tuning, test_refused_path_changes_nothing).
"""

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_harness

MODEL = {"name": "Qwen/Qwen2.5-7B-Instruct", "path": "/srv/models/Qwen2.5-7B-Instruct"}
FIX = "Fix: list the cache directory itself as a normalised absolute path"

# id: (dirs, model path, expected: "accepted" or a list of (entry, reason fragment))
CASES = {
    "default": (["/var/cache/qwen_image_cache"], MODEL, "accepted"),
    "several_good": (["/var/cache/qwen_image_cache", "/srv/cache/torch", "/data/cache/"], MODEL, "accepted"),
    "sibling_of_model": (["/srv/models/Qwen2.5-7B-Instruct-cache"], MODEL, "accepted"),
    "no_model": (["/srv/cache"], {}, "accepted"),
    "root": (["/"], MODEL, [("/", "it is the root directory /")]),
    "root_slashes": (["//"], MODEL, [("//", "it is the root directory /")]),
    "empty": ([""], MODEL, [("", "it is empty")]),
    "blank": (["  "], MODEL, [("  ", "it is empty")]),
    "null": ([None], MODEL, [("", "it is empty")]),
    "relative": (["var/cache/x"], MODEL, [("var/cache/x", "it is a relative path")]),
    "dot": (["."], MODEL, [(".", "it is a relative path")]),
    "tilde": (["~/cache"], MODEL, [("~/cache", "it is a relative path")]),
    "dot_component": (["/var/cache/./x"], MODEL, [("/var/cache/./x", "it is not normalised")]),
    "dotdot_component": (["/var/cache/x/../.."], MODEL, [("/var/cache/x/../..", "it is not normalised")]),
    "empty_component": (["/var//cache"], MODEL, [("/var//cache", "it is not normalised")]),
    "slash_dot": (["/."], MODEL, [("/.", "it is not normalised")]),
    "percent": (["/var/cache/a%b"], MODEL, [("/var/cache/a%b", "it holds '%', a quote")]),
    "quote": (["/var/cache/a'b"], MODEL, [("/var/cache/a'b", "it holds '%', a quote")]),
    "etc": (["/etc"], MODEL, [("/etc", "it lies in the system tree /etc")]),
    "etc_slash": (["/etc/"], MODEL, [("/etc/", "it lies in the system tree /etc")]),
    "usr": (["/usr"], MODEL, [("/usr", "it lies in the system tree /usr")]),
    "usr_lib": (["/usr/lib/python3/dist-packages"], MODEL,
                [("/usr/lib/python3/dist-packages", "it lies in the system tree /usr")]),
    "boot": (["/boot/grub"], MODEL, [("/boot/grub", "it lies in the system tree /boot")]),
    "dpkg": (["/var/lib/dpkg/info"], MODEL, [("/var/lib/dpkg/info", "it lies in the system tree /var/lib/dpkg")]),
    "var": (["/var"], MODEL, [("/var", "it is the system directory /var")]),
    "var_cache": (["/var/cache/"], MODEL, [("/var/cache/", "it is the system directory /var/cache")]),
    "var_lib": (["/var/lib"], MODEL, [("/var/lib", "it is the system directory /var/lib")]),
    "home": (["/home"], MODEL, [("/home", "it is the system directory /home")]),
    "srv": (["/srv"], MODEL, [("/srv", "it is the system directory /srv")]),
    "tmp": (["/tmp"], MODEL, [("/tmp", "it is the system directory /tmp")]),
    "model_itself": (["/srv/models/Qwen2.5-7B-Instruct"], MODEL,
                     [("/srv/models/Qwen2.5-7B-Instruct",
                       "it is the model directory /srv/models/Qwen2.5-7B-Instruct (vllm_server_model.path) or a parent of it")]),
    "model_parent": (["/srv/models"], MODEL,
                     [("/srv/models", "it is the model directory /srv/models/Qwen2.5-7B-Instruct (vllm_server_model.path) or a parent of it")]),
    "model_child": (["/srv/models/Qwen2.5-7B-Instruct/cache"], MODEL,
                    [("/srv/models/Qwen2.5-7B-Instruct/cache",
                      "it lies inside the model directory /srv/models/Qwen2.5-7B-Instruct (vllm_server_model.path)")]),
    "model_trailing_slash": (["/srv/models/"], {"name": "m", "path": "/srv/models/Qwen/"},
                             [("/srv/models/", "it is the model directory /srv/models/Qwen (vllm_server_model.path) or a parent of it")]),
    # every bad entry of a list is named, the good one is not
    "mixed": (["/var/cache/qwen_image_cache", "/", "/etc"], MODEL,
              [("/", "it is the root directory /"), ("/etc", "it lies in the system tree /etc")]),
    "empty_list": ([], MODEL, [None]),
}


@pytest.fixture(scope="module")
def results(tmp_path_factory):
    cases = [{"id": k, "dirs": v[0], "model": v[1]} for k, v in CASES.items()]
    return run_harness(tmp_path_factory.mktemp("validate"), "housekeeping_validate.yml", cases)


@pytest.mark.parametrize("case", sorted(CASES))
def test_cleanup_path(results, case):
    dirs, _model, expected = CASES[case]
    got = results[case]
    if expected == "accepted":
        assert got == "accepted"
        return
    assert isinstance(got, list), got
    if expected == [None]:
        assert len(got) == 1
        assert got[0].startswith("host localhost: housekeeping_cache_dirs is empty.")
        assert "housekeeping_cache_cleanup_enabled=false" in got[0]
        return
    assert len(got) == len(expected), got
    for msg, (entry, reason) in zip(got, expected):
        assert msg.startswith("host localhost: housekeeping_cache_dirs entry '%s' is refused: %s" % (entry, reason)), msg
        assert FIX in msg, msg
