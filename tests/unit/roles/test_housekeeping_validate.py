# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""housekeeping refuses bad values and dangerous cleanup directories at validation time.

The role's real validation tasks (roles/housekeeping/tasks/validate.yml, with the dir_safety
module reading this machine's file system) run through ansible-playbook in check mode against
localhost, once for all cases; each case records "accepted" or the failure messages. Directories
on the host are real trees planted once per session under a fresh temporary directory (links, a
trailing slash into a link, a component writable by others). That the validation runs before
anything changes is proven on the simulated host (molecule scenario host_tuning,
test_refused_path_changes_nothing).
"""
import os
import tempfile

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import cached, run_harness

MODEL = {"name": "Qwen/Qwen2.5-7B-Instruct", "path": "/srv/models/Qwen2.5-7B-Instruct"}
DIR_FIX = "Fix: list the cache directory itself as a normalised absolute path"
D = "housekeeping_cache_dirs"

# id: (vars, expected): "accepted", or [(variable as named in the message, value as JSON, reason fragment)]
# Values of the wrong type or outside the choices: refused by the entry point's argument spec.
SPEC = "Validation of arguments failed: "

CASES = {
    "default": ({}, "accepted"),
    "several_good": ({D: ["/var/cache/qwen_image_cache", "/srv/cache/torch", "/data/cache/"], "vllm_server_model": MODEL},
                     "accepted"),
    "sibling_of_model": ({D: ["/srv/models/Qwen2.5-7B-Instruct-cache"], "vllm_server_model": MODEL}, "accepted"),
    "cron_fields": ({"housekeeping_cache_cron_hour": "*/6", "housekeeping_cache_cron_minute": "0,30"}, "accepted"),
    "cron_ints": ({"housekeeping_cache_cron_hour": 23, "housekeeping_cache_cron_minute": 59}, "accepted"),
    "age_string": ({"housekeeping_cache_max_age_days": "7"}, "accepted"),
    "weekly": ({"housekeeping_logrotate_frequency": "weekly"}, "accepted"),
    "off_skips_cleanup": ({"housekeeping_cache_cleanup_enabled": False, "housekeeping_cache_pattern": "*",
                           D: ["/"]}, "accepted"),
    # a value outside the argument spec's choices is refused by the entry point even when unused
    "off_skips_logrotate": ({"housekeeping_logrotate_enabled": False, "housekeeping_logrotate_frequency": "hourly"},
                            SPEC + "housekeeping_logrotate_frequency must be one of: daily, weekly, monthly, got: hourly"),
    # --- values --------------------------------------------------------------------------------
    "pattern_quote": ({"housekeeping_cache_pattern": "*.pt' -o -name '*"},
                      [("housekeeping_cache_pattern", '"*.pt\' -o -name \'*"', "without quotes, slashes, spaces")]),
    "pattern_injection": ({"housekeeping_cache_pattern": "x'; touch /tmp/pwned; '"},
                          [("housekeeping_cache_pattern", '"x\'; touch /tmp/pwned; \'"', "must be one file-name glob")]),
    "pattern_slash": ({"housekeeping_cache_pattern": "sub/*.pt"},
                      [("housekeeping_cache_pattern", '"sub/*.pt"', "must be one file-name glob")]),
    "pattern_space": ({"housekeeping_cache_pattern": "*.pt *.bin"},
                      [("housekeeping_cache_pattern", '"*.pt *.bin"', "must be one file-name glob")]),
    "pattern_newline": ({"housekeeping_cache_pattern": "*.pt\n"},
                        [("housekeeping_cache_pattern", '"*.pt\\n"', "must be one file-name glob")]),
    "pattern_empty": ({"housekeeping_cache_pattern": ""},
                      [("housekeeping_cache_pattern", '""', "must be one file-name glob")]),
    "pattern_star": ({"housekeeping_cache_pattern": "*"},
                     [("housekeeping_cache_pattern", '"*"', "it holds only wildcards, so it would match every file")]),
    "pattern_stars": ({"housekeeping_cache_pattern": "**?"},
                      [("housekeeping_cache_pattern", '"**?"', "it holds only wildcards")]),
    "age_negative": ({"housekeeping_cache_max_age_days": -1},
                     [("housekeeping_cache_max_age_days", "-1", "it must be a whole number of days, at least 1")]),
    "age_zero": ({"housekeeping_cache_max_age_days": 0},
                 [("housekeeping_cache_max_age_days", "0", "0 would delete files still being written")]),
    "age_word": ({"housekeeping_cache_max_age_days": "seven"},
                 SPEC + "'housekeeping_cache_max_age_days' is of type str and we were unable to convert to int"),
    "age_negative_string": ({"housekeeping_cache_max_age_days": "-1"},
                            [("housekeeping_cache_max_age_days", '"-1"', "it must be a whole number of days")]),
    "age_float": ({"housekeeping_cache_max_age_days": 7.5},
                  SPEC + "'housekeeping_cache_max_age_days' is of type float and we were unable to convert to int"),
    "hour_range": ({"housekeeping_cache_cron_hour": "24"},
                   [("housekeeping_cache_cron_hour", '"24"', "it must be a cron hour field: numbers 0-23")]),
    "hour_injection": ({"housekeeping_cache_cron_hour": "3 * * * root rm -rf / #"},
                       [("housekeeping_cache_cron_hour", '"3 * * * root rm -rf / #"', "it must be a cron hour field")]),
    "hour_newline": ({"housekeeping_cache_cron_hour": "3\n* * * * * root sh"},
                     [("housekeeping_cache_cron_hour", '"3\\n* * * * * root sh"', "it must be a cron hour field")]),
    "minute_range": ({"housekeeping_cache_cron_minute": "60"},
                     [("housekeeping_cache_cron_minute", '"60"', "it must be a cron minute field: numbers 0-59")]),
    "hourly": ({"housekeeping_logrotate_frequency": "hourly"},
               SPEC + "housekeeping_logrotate_frequency must be one of: daily, weekly, monthly, got: hourly"),
    "rotate_word": ({"housekeeping_logrotate_rotate": "30\n/etc/shadow {"},
                    SPEC + "'housekeeping_logrotate_rotate' is of type str and we were unable to convert to int"),
    "log_dir_var": ({"housekeeping_log_dir": "/var/log"},
                    [("housekeeping_log_dir", '"/var/log"', "never / or a system directory")]),
    # every bad value is named in one run
    "several_values": ({"housekeeping_cache_pattern": "*", "housekeeping_cache_max_age_days": -1,
                        "housekeeping_logrotate_frequency": "weekly"},
                       [("housekeeping_cache_pattern", '"*"', "it holds only wildcards"),
                        ("housekeeping_cache_max_age_days", "-1", "at least 1")]),
    # --- directories, as written and by place ------------------------------------------------------
    "empty_list": ({D: []}, [(D, "[]", "it must be a non-empty list of cache directories")]),
    "string_not_list": ({D: "/var/cache/x"}, [(D, '"/var/cache/x"', "it must be a non-empty list")]),
    "root": ({D: ["/"]}, [(D + "[0]", '"/"', "it is the root directory /")]),
    "root_slashes": ({D: ["//"]}, [(D + "[0]", '"//"', "it is the root directory /")]),
    "empty": ({D: [""]}, [(D + "[0]", '""', "it is empty")]),
    "null": ({D: [None]}, [(D + "[0]", "null", "it is empty")]),
    "relative": ({D: ["var/cache/x"]}, [(D + "[0]", '"var/cache/x"', "it is a relative path")]),
    "tilde": ({D: ["~/cache"]}, [(D + "[0]", '"~/cache"', "it is a relative path")]),
    "dotdot": ({D: ["/var/cache/x/../.."]}, [(D + "[0]", '"/var/cache/x/../.."', "it is not normalised")]),
    "newline": ({D: ["/var/cache/x\n"]}, [(D + "[0]", '"/var/cache/x\\n"', "it holds a control character")]),
    "etc": ({D: ["/etc/"]}, [(D + "[0]", '"/etc/"', "it is a system directory or lies in one: /etc is a system")]),
    "etc_vllm": ({D: ["/etc/vllm"]}, [(D + "[0]", '"/etc/vllm"', "it lies in /etc (configuration)")]),
    "usr": ({D: ["/usr/local/lib/python3.9/dist-packages"]},
            [(D + "[0]", '"/usr/local/lib/python3.9/dist-packages"', "it lies in /usr (installed software)")]),
    "var_cache": ({D: ["/var/cache"]}, [(D + "[0]", '"/var/cache"', "/var/cache is a system directory")]),
    "home": ({D: ["/home/alice/.cache"]}, [(D + "[0]", '"/home/alice/.cache"', "it lies in /home (home directories)")]),
    "root_home": ({D: ["/root/.cache/torch"]}, [(D + "[0]", '"/root/.cache/torch"', "/root")]),
    "opt": ({D: ["/opt/other/cache"]}, [(D + "[0]", '"/opt/other/cache"', "it lies in /opt (add-on software")]),
    "containers": ({D: ["/var/lib/containers/storage/overlay"]},
                   [(D + "[0]", '"/var/lib/containers/storage/overlay"', "lies under /var/lib/containers")]),
    "venv": ({D: ["/srv/venvs/vllm/lib"], "vllm_server_venv": "/srv/venvs/vllm"},
             [(D + "[0]", '"/srv/venvs/vllm/lib"', "it lies inside /srv/venvs/vllm, the vLLM virtualenv (vllm_server_venv)")]),
    "state_dir": ({D: ["/var/lib/gpu_fleet"]},
                  [(D + "[0]", '"/var/lib/gpu_fleet"', "it is /var/lib/gpu_fleet, the collection's state directory")]),
    "model_itself": ({D: ["/srv/models/Qwen2.5-7B-Instruct/"], "vllm_server_model": MODEL},
                     [(D + "[0]", '"/srv/models/Qwen2.5-7B-Instruct/"',
                       "it is /srv/models/Qwen2.5-7B-Instruct, a model path (vllm_server_model.path, model_store_models)")]),
    "model_parent": ({D: ["/srv/models"], "vllm_server_model": MODEL},
                     [(D + "[0]", '"/srv/models"', "it is a parent of /srv/models/Qwen2.5-7B-Instruct, a model path")]),
    "model_child": ({D: ["/srv/models/Qwen2.5-7B-Instruct/cache"], "vllm_server_model": MODEL},
                    [(D + "[0]", '"/srv/models/Qwen2.5-7B-Instruct/cache"', "it lies inside /srv/models/Qwen2.5-7B-Instruct")]),
    "weight_store": ({D: ["/srv/models/.model_store"], "vllm_server_model": MODEL},
                     [(D + "[0]", '"/srv/models/.model_store"', "it is /srv/models/.model_store, the weight store of model_store")]),
    "weight_store_of_staged_model": ({D: ["/data/w/.model_store/m/abc"],
                                      "model_store_models": [{"repo_id": "a/m", "path": "/data/w/m"}]},
                                     [(D + "[0]", '"/data/w/.model_store/m/abc"',
                                       "it lies inside /data/w/.model_store, the weight store of model_store")]),
    # every bad entry of a list is named, the good one is not
    "mixed": ({D: ["/var/cache/qwen_image_cache", "/", "/etc"]},
              [(D + "[1]", '"/"', "it is the root directory /"), (D + "[2]", '"/etc"', "/etc is a system directory")]),
}

# Real trees on this machine (the module reads them): {tree} is their temporary root.
LINK = "{tree} is a symbolic link (to /usr): the cleanup never follows links, also not through a trailing slash"
TREE_CASES = {
    "tree_real_dir": ({D: ["{tree}/real/cache/"]}, "accepted"),
    "tree_missing": ({D: ["{tree}/not/yet"]}, "accepted"),
    "tree_link_to_usr": ({D: ["{tree}/usr-link"]},
                         [(D + "[0]", '"{tree}/usr-link"', LINK.replace("{tree}", "{tree}/usr-link"))]),
    "tree_trailing_slash_into_link": ({D: ["{tree}/usr-link/"]},
                                      [(D + "[0]", '"{tree}/usr-link/"', LINK.replace("{tree}", "{tree}/usr-link"))]),
    "tree_link_in_parent": ({D: ["{tree}/via/cache"]},
                            [(D + "[0]", '"{tree}/via/cache"', "{tree}/via is a symbolic link (to {tree}/real)")]),
    "tree_writable_component": ({D: ["{tree}/shared/cache"]},
                                [(D + "[0]", '"{tree}/shared/cache"',
                                  "{tree}/shared is writable by its group or by others (mode 0777)")]),
    "tree_writable_dir": ({D: ["{tree}/open"]},
                          [(D + "[0]", '"{tree}/open"', "{tree}/open is writable by its group or by others (mode 0775)")]),
    "tree_model_link_resolved": ({D: ["{tree}/store/m/rev"], "vllm_server_model": {"name": "m", "path": "{tree}/models/m"}},
                                 [(D + "[0]", '"{tree}/store/m/rev"',
                                   "it is {tree}/store/m/rev, a model path (vllm_server_model.path, model_store_models) "
                                   "as it resolves on this host")]),
}


def _plant():
    """A tree under a fresh temporary directory; returns its path (once per session: cached)."""
    tree = tempfile.mkdtemp(prefix="gpu-fleet-hk-validate-")
    os.makedirs(os.path.join(tree, "real", "cache"))
    os.symlink("/usr", os.path.join(tree, "usr-link"))
    os.symlink(os.path.join(tree, "real"), os.path.join(tree, "via"))
    os.makedirs(os.path.join(tree, "shared", "cache"))
    os.chmod(os.path.join(tree, "shared"), 0o777)
    os.makedirs(os.path.join(tree, "open"))
    os.chmod(os.path.join(tree, "open"), 0o775)
    os.makedirs(os.path.join(tree, "store", "m", "rev"))
    os.makedirs(os.path.join(tree, "models"))
    os.symlink(os.path.join(tree, "store", "m", "rev"), os.path.join(tree, "models", "m"))
    return tree


def _fill(value, tree):
    if isinstance(value, str):
        return value.replace("{tree}", tree)
    if isinstance(value, list):
        return [_fill(v, tree) for v in value]
    if isinstance(value, tuple):
        return tuple(_fill(v, tree) for v in value)
    if isinstance(value, dict):
        return dict((k, _fill(v, tree)) for k, v in value.items())
    return value


def all_cases():
    """CASES, plus the tree cases when running as root (the module trusts root-owned trees only)."""
    if os.geteuid() != 0:
        return dict(CASES)
    tree = cached("housekeeping-validate-tree", _plant)
    return dict(CASES, **_fill(TREE_CASES, tree))


@pytest.fixture(scope="module")
def cases():
    return all_cases()


@pytest.fixture(scope="module")
def results(tmp_path_factory, cases):
    listed = [{"id": k, "vars": v[0]} for k, v in sorted(cases.items())]
    return run_harness(tmp_path_factory.mktemp("validate"), "housekeeping_validate.yml", listed)


@pytest.mark.parametrize("case", sorted(CASES) + sorted(TREE_CASES))
def test_validation(cases, results, case):
    if case not in cases:
        pytest.skip("tree cases need root (the module trusts root-owned trees only)")
    expected = cases[case][1]
    got = results[case]
    if expected == "accepted":
        assert got == "accepted"
        return
    if isinstance(expected, str):  # refused by the entry point's argument spec, before the role's checks
        assert isinstance(got, list) and len(got) == 1 and got[0].startswith(SPEC.rstrip()), got
        assert expected[len(SPEC):] in got[0], got
        return
    assert isinstance(got, list) and len(got) == len(expected), got
    for msg, (var, value, reason) in zip(got, expected):
        assert msg.startswith("host localhost: %s is %s: " % (var, value)), msg
        assert reason in msg, msg
        assert msg.endswith("Nothing was changed."), msg
        if var.startswith(D + "["):
            assert DIR_FIX in msg, msg
