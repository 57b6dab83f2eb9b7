# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The housekeeping cleanup script (roles/housekeeping/files/gpu_fleet_cache_cleanup.py), run as
cron runs it - a subprocess reading a root-owned JSON configuration - against planted trees:
symbolic links swapped in after the role validated the path, a trailing slash into a link, a
component writable by others or owned by another user. What survives is read back from the tree.

The runs need root (the script trusts only root-owned components and a root-owned
configuration), as on the hosts; the pure checks run as anyone. Another file system inside the
directory (not entered) is proven on the simulated host (molecule scenario host_tuning).
"""
import importlib.util
import json
import os
import subprocess
import sys
import time

import pytest

SCRIPT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..",
                                      "roles", "housekeeping", "files", "gpu_fleet_cache_cleanup.py"))
DAY = 86400
OLD = time.time() - 10 * DAY
RECENT = time.time() - 3 * DAY
NOBODY = 65534

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="the script trusts root-owned trees only (as on the hosts)")


def _load():
    spec = importlib.util.spec_from_file_location("gpu_fleet_cache_cleanup", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


cleanup = _load()


def write(path, age=OLD):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(u"data\n")
    os.utime(str(path), (age, age))
    return path


def config(tmp_path, dirs, pattern="*.pt", age=7, owners=("vllm",), mode=0o644):
    path = tmp_path / "cache-cleanup.json"
    path.write_text(json.dumps({"dirs": [str(d) for d in dirs], "pattern": pattern, "max_age_days": age,
                                "owners": list(owners)}))
    os.chmod(str(path), mode)
    return path


def run(conf, *args):
    return subprocess.run([sys.executable, "-I", SCRIPT, "--config", str(conf)] + list(args),
                          stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, check=False)


def left(root):
    return sorted(os.path.relpath(os.path.join(d, n), str(root))
                  for d, dirs, files in os.walk(str(root)) for n in dirs + files)


@pytest.fixture
def cache(tmp_path):
    """A cache directory (root-owned, 0755) below tmp_path, and a victim tree outside it."""
    root = tmp_path / "cache"
    root.mkdir()
    outside = tmp_path / "outside"
    write(outside / "victim.pt")
    write(outside / "dir" / "old.pt")
    return root


# --- what is deleted --------------------------------------------------------------------------

@needs_root
def test_deletes_exactly_old_regular_matching_files(tmp_path, cache):
    write(cache / "old.pt")
    write(cache / "sub" / "deeper" / "old.pt")
    write(cache / "old file with spaces.pt")
    write(cache / ".hidden.pt")
    write(cache / "recent.pt", RECENT)
    write(cache / "new.pt", time.time())
    write(cache / "old.bin")
    write(cache / "old.pt.bak")
    (cache / "olddir.pt").mkdir()
    os.symlink(str(tmp_path / "outside" / "victim.pt"), str(cache / "link-to-outside.pt"))
    os.symlink(str(tmp_path / "outside" / "dir"), str(cache / "linked-dir"))
    os.utime(str(cache / "link-to-outside.pt"), (OLD, OLD), follow_symlinks=False)
    proc = run(config(tmp_path, [cache]))
    assert proc.returncode == 0, proc.stderr
    assert left(cache) == ["link-to-outside.pt", "linked-dir", "new.pt", "old.bin", "old.pt.bak",
                           "olddir.pt", "recent.pt", "sub", "sub/deeper"]
    assert (tmp_path / "outside" / "victim.pt").exists() and (tmp_path / "outside" / "dir" / "old.pt").exists()
    assert "deleted %s" % (cache / "sub" / "deeper" / "old.pt") in proc.stdout
    assert "%s: 4 file(s) deleted" % cache in proc.stdout


@needs_root
def test_age_is_days_of_24_hours(tmp_path, cache):
    write(cache / "two-days.pt", time.time() - 2 * DAY - 60)
    write(cache / "one-day.pt", time.time() - DAY + 60)
    assert run(config(tmp_path, [cache], age=2)).returncode == 0
    assert left(cache) == ["one-day.pt"]


@needs_root
def test_dry_run_deletes_nothing(tmp_path, cache):
    write(cache / "old.pt")
    proc = run(config(tmp_path, [cache]), "--dry-run")
    assert proc.returncode == 0, proc.stderr
    assert "would delete %s" % (cache / "old.pt") in proc.stdout
    assert left(cache) == ["old.pt"]


@needs_root
def test_quiet_prints_nothing(tmp_path, cache):
    write(cache / "old.pt")
    proc = run(config(tmp_path, [cache]), "--quiet")
    assert (proc.returncode, proc.stdout, proc.stderr) == (0, "", "")
    assert left(cache) == []


@needs_root
def test_missing_directory_is_nothing_to_clean(tmp_path):
    proc = run(config(tmp_path, [tmp_path / "not-yet"]))
    assert proc.returncode == 0, proc.stderr
    assert "%s does not exist: nothing to clean" % (tmp_path / "not-yet") in proc.stdout


# --- links and owners, asked again at run time -------------------------------------------------

def _usr_like(tmp_path):
    """A tree standing for /usr: root-owned, one old *.pt file a naive walk would delete."""
    return write(tmp_path / "usr" / "lib" / "python3" / "torch" / "weights.pt").parents[3]


@needs_root
@pytest.mark.parametrize("suffix", ["", "/", "//"])
def test_directory_swapped_for_a_link_is_refused(tmp_path, suffix):
    """Validated as a real directory, later replaced by a link to a /usr-like tree; given with or
    without a trailing slash (which would make lstat, find -P and os.walk descend into it)."""
    usr = _usr_like(tmp_path)
    link = tmp_path / "cache"
    os.symlink(str(usr), str(link))
    good = tmp_path / "good"
    write(good / "old.pt")
    proc = run(config(tmp_path, [str(link) + suffix, good]))
    assert proc.returncode == 1
    assert "%s is a symbolic link (to %s)" % (link, usr) in proc.stderr
    assert "nothing below it was deleted" in proc.stderr
    assert (usr / "lib" / "python3" / "torch" / "weights.pt").exists()
    assert left(good) == []  # the other directory is still cleaned


@needs_root
def test_link_in_a_parent_component_is_refused(tmp_path):
    real = tmp_path / "real"
    write(real / "cache" / "old.pt")
    os.symlink(str(real), str(tmp_path / "via"))
    proc = run(config(tmp_path, [tmp_path / "via" / "cache"]))
    assert proc.returncode == 1
    assert "%s is a symbolic link (to %s)" % (tmp_path / "via", real) in proc.stderr
    assert left(real / "cache") == ["old.pt"]


@needs_root
def test_component_writable_by_others_is_refused(tmp_path):
    shared = tmp_path / "shared"
    write(shared / "cache" / "old.pt")
    os.chmod(str(shared), 0o777)
    proc = run(config(tmp_path, [shared / "cache"]))
    assert proc.returncode == 1
    assert "%s is writable by its group or by others (mode 0777)" % shared in proc.stderr
    assert left(shared / "cache") == ["old.pt"]


@needs_root
def test_sticky_component_above_a_root_owned_entry_is_accepted(tmp_path):
    sticky = tmp_path / "sticky"
    write(sticky / "cache" / "old.pt")
    os.chmod(str(sticky), 0o1777)
    proc = run(config(tmp_path, [sticky / "cache"]))
    assert proc.returncode == 0, proc.stderr
    assert left(sticky / "cache") == []


@needs_root
def test_sticky_component_above_an_entry_of_another_user_is_refused(tmp_path):
    sticky = tmp_path / "sticky"
    write(sticky / "theirs" / "cache" / "old.pt")
    os.chmod(str(sticky), 0o1777)
    os.chown(str(sticky / "theirs"), NOBODY, NOBODY)
    proc = run(config(tmp_path, [sticky / "theirs" / "cache"]))
    assert proc.returncode == 1
    assert "%s is writable by its group or by others (mode 1777)" % sticky in proc.stderr


@needs_root
def test_parent_owned_by_another_user_is_refused(tmp_path):
    theirs = tmp_path / "theirs"
    write(theirs / "cache" / "old.pt")
    os.chown(str(theirs), NOBODY, NOBODY)
    proc = run(config(tmp_path, [theirs / "cache"], owners=["nobody"]))
    assert proc.returncode == 1
    assert "%s is owned by uid %d, not root:" % (theirs, NOBODY) in proc.stderr
    assert left(theirs / "cache") == ["old.pt"]


@needs_root
def test_directory_owned_by_the_service_user_is_cleaned(tmp_path, cache):
    write(cache / "old.pt")
    os.chown(str(cache), NOBODY, NOBODY)
    proc = run(config(tmp_path, [cache], owners=["nobody"]))
    assert proc.returncode == 0, proc.stderr
    assert left(cache) == []


@needs_root
def test_directory_owned_by_another_user_is_refused(tmp_path, cache):
    write(cache / "old.pt")
    os.chown(str(cache), NOBODY, NOBODY)
    proc = run(config(tmp_path, [cache], owners=["root"]))
    assert proc.returncode == 1
    assert "%s is owned by uid %d, not root or the service user" % (cache, NOBODY) in proc.stderr


@needs_root
def test_group_writable_directory_is_refused(tmp_path, cache):
    write(cache / "old.pt")
    os.chmod(str(cache), 0o775)
    proc = run(config(tmp_path, [cache]))
    assert proc.returncode == 1
    assert "%s is writable by its group or by others (mode 0775): they could plant files" % cache in proc.stderr
    assert left(cache) == ["old.pt"]


@needs_root
def test_a_file_where_the_directory_was(tmp_path):
    write(tmp_path / "cache")
    proc = run(config(tmp_path, [tmp_path / "cache"]))
    assert proc.returncode == 1
    assert "%s is not a directory" % (tmp_path / "cache") in proc.stderr


# --- the configuration ------------------------------------------------------------------------

@needs_root
@pytest.mark.parametrize("fault", ["group_writable", "not_root", "link"])
def test_untrusted_configuration_is_refused(tmp_path, cache, fault):
    write(cache / "old.pt")
    conf = config(tmp_path, [cache], mode=0o664 if fault == "group_writable" else 0o644)
    if fault == "not_root":
        os.chown(str(conf), NOBODY, NOBODY)
    if fault == "link":
        os.symlink(str(conf), str(tmp_path / "link.json"))
        conf = tmp_path / "link.json"
    proc = run(conf)
    assert proc.returncode == 2
    assert "nothing was deleted" in proc.stderr
    assert left(cache) == ["old.pt"]


BAD_CONFIG = {
    "quote": ({"pattern": "*.pt'; touch /tmp/x; '"}, "must be a file-name glob"),
    "slash": ({"pattern": "sub/*.pt"}, "must be a file-name glob"),
    "space": ({"pattern": "* .pt"}, "must be a file-name glob"),
    "newline": ({"pattern": "*.pt\n"}, "must be a file-name glob"),
    "empty": ({"pattern": ""}, "must be a file-name glob"),
    "star": ({"pattern": "*"}, "holds only wildcards"),
    "stars": ({"pattern": "*?*"}, "holds only wildcards"),
    "age_negative": ({"max_age_days": -1}, "max_age_days -1 must be a whole number of days, at least 1"),
    "age_zero": ({"max_age_days": 0}, "max_age_days 0 must be"),
    "age_word": ({"max_age_days": "seven"}, 'max_age_days "seven" must be'),
    "age_string": ({"max_age_days": "7"}, 'max_age_days "7" must be'),
    "age_bool": ({"max_age_days": True}, "max_age_days true must be"),
    "age_float": ({"max_age_days": 7.5}, "max_age_days 7.5 must be"),
    "no_dirs": ({"dirs": []}, "dirs must be a non-empty list"),
    "dirs_string": ({"dirs": "/var/cache/x"}, "dirs must be a non-empty list"),
    "owners_string": ({"owners": "vllm"}, "owners must be a list"),
}


@pytest.mark.parametrize("case", sorted(BAD_CONFIG))
def test_bad_configuration_values(case):
    change, message = BAD_CONFIG[case]
    data = dict({"dirs": ["/var/cache/x"], "pattern": "*.pt", "max_age_days": 7, "owners": ["vllm"]}, **change)
    with pytest.raises(cleanup.Refused) as err:
        cleanup.check_config(data)
    assert message in str(err.value)


@pytest.mark.parametrize("pattern", ["*.pt", "*.bin", "model-?.safetensors", "[0-9]*.pt", "*%.pt", "cache_*"])
def test_good_patterns(pattern):
    assert cleanup.pattern_reason(pattern) is None


@pytest.mark.parametrize("entry,reason", [
    ("/", "/ is the root directory"), ("//", "/ is the root directory"), ("var/cache", "is not an absolute path"),
    ("/var/../etc", "is not normalised"), ("/var//cache", "is not normalised"), ("/var/cache/x\n", "control"),
    (None, "is not an absolute path"),
])
def test_bad_directories_as_configured(entry, reason):
    assert reason in cleanup.dir_reason(entry)


@needs_root
def test_bad_value_deletes_nothing(tmp_path, cache):
    write(cache / "old.pt")
    proc = run(config(tmp_path, [cache], pattern="*"))
    assert proc.returncode == 2
    assert 'pattern "*" holds only wildcards' in proc.stderr
    assert left(cache) == ["old.pt"]


@needs_root
def test_root_directory_refused_at_run_time(tmp_path):
    proc = run(config(tmp_path, ["/"]), "--dry-run")
    assert proc.returncode == 1
    assert "/ is the root directory" in proc.stderr
    assert "would delete" not in proc.stdout


def test_check_config_mode(tmp_path):
    good = tmp_path / "good.json"
    good.write_text(json.dumps({"dirs": ["/var/cache/x"], "pattern": "*.pt", "max_age_days": 7}))
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"dirs": ["/var/cache/x"], "pattern": "*.pt", "max_age_days": -1}))
    argv = [sys.executable, "-I", SCRIPT, "--check-config"]
    assert subprocess.run(argv + [str(good)], check=False).returncode == 0
    proc = subprocess.run(argv + [str(bad)], stderr=subprocess.PIPE, universal_newlines=True, check=False)
    assert proc.returncode == 2 and "max_age_days -1" in proc.stderr
