# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Raw state of a simulated host after host_tuning and housekeeping (molecule scenario host_tuning).

Expected values are the issue's (drop-in path, 03:00, `*.pt` older than 7 days, 0640 vllm:vllm)
and what a podman container is known to refuse: /proc/sys is mounted read-only, and the
net.core.* buffer sizes are not per network namespace (read-only in a non-initial one).
The assertions read files, /proc, units and processes directly; they never ask the roles.
"""
import json
import os
import re
import shlex
import time

import pytest
from testinfra_helpers import molecule_host, run_playbook, scenario_dir

NAME = "i5-host-tuning"  # the platform of molecule.yml


@pytest.fixture(scope="module")
def box():
    """The container, reached over SSH as Ansible reaches it (testinfra's ssh backend with the
    scenario's control socket; its ansible backend, one Ansible run per command, took 16 minutes
    for this module on a 2-core machine)."""
    return molecule_host(NAME)


DROPIN = "/etc/sysctl.d/60-gpu-serving.conf"
REPORT = "/etc/ansible/facts.d/gpu_fleet_host_tuning.fact"
WANTED = {"vm.swappiness": "0", "net.core.rmem_max": "33554432", "net.core.wmem_max": "33554432",
          "kernel.numa_balancing": "0"}
CACHE = "/var/cache/qwen_image_cache"
CRON = "/etc/cron.d/gpu-fleet-cache-cleanup"
SCRIPT = "/usr/local/sbin/gpu-fleet-cache-cleanup"
CLEANUP_CONFIG = "/etc/gpu-fleet/cache-cleanup.json"
SWAPPED = "/var/cache/i16-swapped/"  # the scenario's second cleanup directory, as given
LOGDIR = "/var/log/vllm"


def _report(box):
    return json.loads(box.file(REPORT).content_string)


def _proc_sys(box, key):
    return box.file("/proc/sys/" + key.replace(".", "/")).content_string.strip()


# --- sysctl ------------------------------------------------------------------------------------

def test_proc_sys_is_read_only_here(box):
    """The premise of the next tests: this container cannot take any of the wanted keys."""
    assert box.run("sh -c 'echo 60 > /proc/sys/vm/swappiness'").rc != 0
    assert box.run("sh -c 'echo 33554432 > /proc/sys/net/core/rmem_max'").rc != 0


def test_dropin_holds_no_refused_key(box):
    dropin = box.file(DROPIN)
    assert dropin.exists and dropin.user == "root" and dropin.mode == 0o644
    settings = [line for line in dropin.content_string.splitlines() if line.strip() and not line.startswith("#")]
    assert settings == []
    assert "Managed by gpu_fleet.vllm_serving.host_tuning" in dropin.content_string
    # and the kernel's own loader accepts every file, ours included
    result = box.run("sysctl -p %s" % DROPIN)
    assert result.rc == 0, result.stderr


def test_refused_keys_reported_with_reason_and_live_value(box):
    report = _report(box)
    assert report["sysctl_file"] == DROPIN
    assert report["sysctl_wanted"] == {k: int(v) for k, v in WANTED.items()}
    assert report["sysctl_applied"] == {}
    refused = report["sysctl_not_applicable"]
    assert set(refused) == set(WANTED)
    for key, probe in refused.items():
        assert probe["settable"] is False, key
        assert probe["present"] is True, key
        # the reported value is the live one, read back from /proc/sys now
        assert probe["value"] == _proc_sys(box, key), key
        assert probe["reason"], key
    # the container's live swappiness is the host's 60-ish, not the wanted 0: a persisted file
    # saying 0 here would be a lie, hence none
    assert re.match(r"^(read-only|refused)", refused["vm.swappiness"]["reason"])
    assert re.match(r"^(read-only|refused)", refused["net.core.rmem_max"]["reason"])


@pytest.fixture(scope="module")
def check_run(box):
    """One --check --diff run of the converge playbook, with a cleanup pattern holding %."""
    return _ansible_playbook(box, check=True, extra={"housekeeping_cache_pattern": "*%.pt"})


def test_refused_keys_named_in_play_output(box, check_run):
    """The converge output is not kept by molecule; a check-mode run shows the same report."""
    out = check_run
    assert out.returncode == 0, out.stdout
    for key in WANTED:
        assert "host i5-host-tuning: sysctl %s not applicable (host-owned, not persisted)" % key in out.stdout
    # the container's live kernel.numa_balancing is 0 (no NUMA balancing in this kernel config or
    # already off), the wanted value; its swappiness is not 0
    live = _proc_sys(box, "kernel.numa_balancing")
    expected = "already as wanted" if live == "0" else "the host must set it"
    numa = r"sysctl kernel\.numa_balancing not applicable .*; live value %s, wanted 0 \(%s\)" % (live, expected)
    assert re.search(numa, out.stdout)
    swappiness = (r"sysctl vm\.swappiness not applicable .*; live value %s, wanted 0 \(the host must set it\)"
                  % _proc_sys(box, "vm.swappiness"))
    assert re.search(swappiness, out.stdout)


# --- governor ----------------------------------------------------------------------------------

def test_governor_unit_installed_enabled_and_skipped(box):
    unit = box.file("/etc/systemd/system/gpu-fleet-cpu-governor.service").content_string
    assert "ConditionPathExists=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor" in unit
    assert "ExecStart=/usr/local/sbin/gpu-fleet-cpu-governor performance" in unit
    assert box.service("gpu-fleet-cpu-governor").is_enabled
    assert not box.file("/sys/devices/system/cpu/cpu0/cpufreq").exists
    start = box.run("systemctl start gpu-fleet-cpu-governor.service")
    assert start.rc == 0, start.stderr
    show = box.check_output("systemctl show -p ConditionResult -p ActiveState -p Result gpu-fleet-cpu-governor.service")
    assert "ConditionResult=no" in show
    assert "ActiveState=inactive" in show
    assert "Result=success" in show


def test_governor_reported_not_applicable(box):
    assert _report(box)["governor"] == \
        "not applicable: no cpufreq under /sys/devices/system/cpu (VM or container)"


def test_installed_governor_helper_on_planted_sysfs(box):
    root = "/tmp/i5-sysfs"
    box.run("rm -rf %s" % root)
    plant = [
        ("cpu0", "powersave", "performance powersave"),
        ("cpu1", "performance", "performance powersave"),
        ("cpu2", "userspace", "userspace"),
    ]
    for cpu, current, available in plant:
        d = "%s/devices/system/cpu/%s/cpufreq" % (root, cpu)
        box.check_output("mkdir -p %s && echo %s > %s/scaling_governor && echo %s > %s/scaling_available_governors",
                         d, current, d, available, d)
    box.check_output("mkdir -p %s/devices/system/cpu/cpu3" % root)  # no cpufreq
    out = box.run("SYSFS_ROOT=%s /usr/local/sbin/gpu-fleet-cpu-governor performance" % root)
    assert out.rc == 0, out.stderr
    assert out.stdout.splitlines()[-1] == ("not offered: performance on cpu2 (available: userspace); "
                                           "left as they are; 2 other CPUs handled (1 changed)")
    cur = box.check_output("cat %s/devices/system/cpu/cpu[0-2]/cpufreq/scaling_governor" % root).split()
    assert cur == ["performance", "performance", "userspace"]
    box.run("rm -rf %s" % root)


# --- swap --------------------------------------------------------------------------------------

def test_swap_off_not_run_in_a_container(box):
    report = _report(box)
    assert report["swap"] == "not applicable: container guest (podman); swap belongs to the host kernel, left as is"


# --- logrotate ---------------------------------------------------------------------------------

def test_log_dir_owned_by_service_user(box):
    d = box.file(LOGDIR)
    assert d.is_directory and d.user == "vllm" and d.group == "vllm" and d.mode == 0o750


def test_logrotate_config(box):
    conf = box.file("/etc/logrotate.d/vllm").content_string
    body = [line.strip() for line in conf.splitlines() if line.strip() and not line.strip().startswith("#")]
    assert body == [
        "/var/log/vllm/*.log {", "daily", "rotate 30", "compress", "delaycompress", "missingok",
        "notifempty", "copytruncate", "su vllm vllm", "create 0640 vllm vllm", "}",
    ]
    # an empty state file: the real one does not exist before logrotate's first daily run
    debug = box.run("logrotate -d -s /dev/null /etc/logrotate.d/vllm")
    assert debug.rc == 0, debug.stderr
    assert "error" not in (debug.stdout + debug.stderr).lower(), debug.stdout + debug.stderr
    assert "rotating pattern: /var/log/vllm/*.log" in debug.stdout + debug.stderr


def _seqs(text):
    return [int(line.split()[1]) for line in text.splitlines() if line.startswith("line ")]


def _wait_growth(box, path, seconds=10):
    size = int(box.check_output("stat -c %%s %s" % path))
    deadline = time.time() + seconds
    while time.time() < deadline:
        time.sleep(0.5)
        if int(box.check_output("stat -c %%s %s" % path)) > size:
            return True
    return False


def test_two_forced_rotations_keep_the_writer_writing(box):
    """A long-running writer (as vLLM under systemd: StandardOutput=append:, one descriptor for
    the whole life of the process) survives two forced rotations: after each, it keeps writing
    into the live file, the rotated copies stop growing, the older one is compressed."""
    log = LOGDIR + "/i5-writer.log"
    state = "/var/lib/logrotate/i5-test.status"
    box.run("systemctl stop i5-writer.service; systemctl reset-failed i5-writer.service")
    box.run("rm -f %s %s.* %s" % (log, log, state))
    # vllm_server creates each instance's log file the same way before its unit starts
    box.check_output("install -o vllm -g vllm -m 0640 /dev/null %s" % log)
    box.check_output(
        "systemd-run --unit=i5-writer --uid=vllm --gid=vllm -p StandardOutput=append:%s "
        "/bin/sh -c 'i=0; while :; do i=$((i+1)); echo \"line $i\"; sleep 0.05; done'" % log)
    try:
        assert _wait_growth(box, log)
        for rotation in (1, 2):
            time.sleep(1)
            out = box.run("logrotate -f -s %s /etc/logrotate.d/vllm" % state)
            assert out.rc == 0, out.stderr
            assert _wait_growth(box, log), "rotation %d: the writer stopped writing into the live file" % rotation
            size_1 = box.file(log + ".1").size
            time.sleep(1.5)
            assert box.file(log + ".1").size == size_1, "rotation %d: the rotated file still grows" % rotation
            assert box.file(log).size > 0
            live = box.file(log).content_string
            assert "\0" not in live, "the writer kept its old offset: the live file starts with a hole"
            rotated = _seqs(box.file(log + ".1").content_string)
            assert rotated and _seqs(live)[0] > rotated[-1]
        # after two rotations: live file, .1 (delaycompress), .2.gz
        listing = box.check_output("ls %s" % LOGDIR).split()
        assert sorted(n for n in listing if n.startswith("i5-writer")) == \
            ["i5-writer.log", "i5-writer.log.1", "i5-writer.log.2.gz"]
        assert box.run("gzip -t %s.2.gz" % log).rc == 0
        oldest = _seqs(box.check_output("zcat %s.2.gz" % log))
        middle = _seqs(box.file(log + ".1").content_string)
        newest = _seqs(box.file(log).content_string)
        assert oldest[0] == 1
        assert oldest[-1] < middle[0] <= middle[-1] < newest[0]
        for name in ("i5-writer.log", "i5-writer.log.1", "i5-writer.log.2.gz"):
            f = box.file(LOGDIR + "/" + name)
            assert (f.user, f.group, f.mode) == ("vllm", "vllm", 0o640), name
        # the writer is the same process as before the rotations
        assert box.check_output("systemctl show -p NRestarts --value i5-writer.service") == "0"
        assert box.check_output("systemctl is-active i5-writer.service") == "active"
    finally:
        box.run("systemctl stop i5-writer.service")
        box.run("rm -f %s %s.* %s" % (log, log, state))


def test_housekeeping_recorded_its_paths(box):
    f = box.file("/etc/ansible/facts.d/gpu_fleet_housekeeping.fact")
    assert f.user == "root" and f.mode == 0o644
    record = json.loads(f.content_string)
    assert (record["logrotate_config"], record["cron_file"], record["log_dir"], record["cache_dirs"]) == (
        "/etc/logrotate.d/vllm", CRON, LOGDIR, [CACHE, SWAPPED])


# --- cache cleanup cron ------------------------------------------------------------------------

def _cron_line(box):
    lines = [line for line in box.file(CRON).content_string.splitlines()
             if line.strip() and not line.startswith("#")]
    assert len(lines) == 1, lines
    return lines[0]


def test_cron_entry_only_calls_the_script(box):
    f = box.file(CRON)
    assert f.user == "root" and f.mode == 0o644
    assert _cron_line(box) == "0 3 * * * root /usr/bin/python3 -I %s --quiet" % SCRIPT


def test_cleanup_script_installed_root_owned(box):
    f = box.file(SCRIPT)
    assert (f.user, f.group, f.mode) == ("root", "root", 0o755)
    with open(os.path.join(scenario_dir(), "..", "..", "roles", "housekeeping", "files",
                           "gpu_fleet_cache_cleanup.py")) as handle:
        assert f.content_string == handle.read()


def test_cleanup_config_is_data(box):
    f = box.file(CLEANUP_CONFIG)
    assert (f.user, f.group, f.mode) == ("root", "root", 0o644)
    assert box.file("/etc/gpu-fleet").user == "root" and box.file("/etc/gpu-fleet").mode == 0o755
    assert json.loads(f.content_string) == {"dirs": [CACHE, SWAPPED], "pattern": "*.pt", "max_age_days": 7,
                                            "owners": ["vllm"]}


def test_pattern_is_data_not_shell(box, check_run):
    """A pattern holding % (cron's newline) is written into the JSON configuration as it is;
    the cron line stays the same (check mode + diff: nothing changes on the box)."""
    assert check_run.returncode == 0, check_run.stdout
    assert '+    "pattern": "*%.pt"' in check_run.stdout  # the diff of the configuration
    assert json.loads(box.file(CLEANUP_CONFIG).content_string)["pattern"] == "*.pt"
    assert _cron_line(box) == "0 3 * * * root /usr/bin/python3 -I %s --quiet" % SCRIPT


OLD = "10 days ago"
RECENT = "3 days ago"
# path below the cache dir -> (kind, age, survives)
TREE = {
    "old.pt": ("file", OLD, False),
    "sub/deeper/old.pt": ("file", OLD, False),
    "old file with spaces.pt": ("file", OLD, False),
    "recent.pt": ("file", RECENT, True),
    "new.pt": ("file", None, True),
    "old.bin": ("file", OLD, True),
    "old.pt.bak": ("file", OLD, True),
    "olddir.pt": ("dir", OLD, True),
    "link-to-outside.pt": ("link", OLD, True),        # -> /srv/i5-outside/victim.pt
    "linked-dir": ("dirlink", OLD, True),             # -> /srv/i5-outside/dir
    "otherfs/old.pt": ("file", OLD, True),            # another file system
}
OUTSIDE = {"/srv/i5-outside/victim.pt": OLD, "/srv/i5-outside/dir/old.pt": OLD}


def _plant(box):
    q = shlex.quote
    script = [
        "set -e",
        "find %s -mindepth 1 -maxdepth 1 ! -name otherfs -exec rm -rf {} +" % CACHE,
        "rm -rf %s/otherfs/* /srv/i5-outside" % CACHE,
        "mkdir -p /srv/i5-outside/dir",
    ]
    for path, age in OUTSIDE.items():
        script.append("touch -d %s %s" % (q(age), path))
    for rel, (kind, age, _survives) in TREE.items():
        path = q(CACHE + "/" + rel)
        script.append("mkdir -p %s" % q(os.path.dirname(CACHE + "/" + rel)))
        script.append({
            "file": "echo data > %s" % path,
            "dir": "mkdir -p %s" % path,
            "link": "ln -s /srv/i5-outside/victim.pt %s" % path,
            "dirlink": "ln -s /srv/i5-outside/dir %s" % path,
        }[kind])
        if age:
            script.append("touch -h -d %s %s" % (q(age), path))
    # the parent directories were touched by planting; age them too (they must survive anyway)
    script.append("touch -d %s %s/sub %s/sub/deeper" % (q(OLD), CACHE, CACHE))
    box.check_output("sh -c %s" % q("\n".join(script)))


def test_otherfs_is_another_file_system(box):
    dev = box.check_output("stat -c %%d %s %s/otherfs" % (CACHE, CACHE)).split()
    assert dev[0] != dev[1]


def _run_as_cron(box):
    """The cron line's command, run as cron runs it (/bin/sh -c, as root)."""
    return box.run("/bin/sh -c %s" % shlex.quote(_cron_line(box).split(None, 6)[6]))


def test_cleanup_from_cron_deletes_exactly_old_pt_files(box):
    _plant(box)
    result = _run_as_cron(box)
    assert result.rc == 0, result.stderr
    assert result.stdout == "" and result.stderr == ""  # --quiet: deletions go to syslog only
    left = set(box.check_output("cd %s && find . -mindepth 1" % CACHE).splitlines())
    for rel, (kind, _age, survives) in TREE.items():
        assert ("./" + rel in left) == survives, "%s (%s): %s" % (rel, kind, "deleted" if survives else "kept")
    for path in OUTSIDE:
        assert box.file(path).exists, path
    assert box.file(CACHE + "/sub/deeper").is_directory
    assert box.file(CACHE + "/link-to-outside.pt").is_symlink
    assert box.file(CACHE + "/linked-dir").is_symlink


USR_VICTIM = "/usr/share/i16-victim/old.pt"


def test_nightly_job_does_not_follow_a_link_to_usr(box):
    """After the role ran, the second cleanup directory (configured as /var/cache/i16-swapped/,
    with a trailing slash) is swapped for a link to /usr holding an old *.pt file: the nightly job
    refuses it, deletes nothing below /usr, and still cleans the first directory."""
    q = shlex.quote
    swapped = SWAPPED.rstrip("/")
    try:
        box.check_output("sh -c %s" % q("set -e; mkdir -p %s; echo data > %s; touch -d %s %s; ln -sfn /usr %s" % (
            os.path.dirname(USR_VICTIM), USR_VICTIM, q(OLD), USR_VICTIM, swapped)))
        box.check_output("sh -c %s" % q("echo data > %s/old.pt; touch -d %s %s/old.pt" % (CACHE, q(OLD), CACHE)))
        assert box.file(swapped).is_symlink and box.file(SWAPPED + "share/i16-victim/old.pt").exists
        result = _run_as_cron(box)
        assert result.rc == 1, (result.rc, result.stdout, result.stderr)
        assert ('gpu-fleet-cache-cleanup: refused "%s": %s is a symbolic link (to /usr): the cleanup never follows '
                "links, also not through a trailing slash; nothing below it was deleted" % (SWAPPED, swapped)
                ) in result.stderr
        assert box.file(USR_VICTIM).exists
        assert not box.file(CACHE + "/old.pt").exists
    finally:
        box.run("rm -f %s; rm -rf %s" % (swapped, os.path.dirname(USR_VICTIM)))


# --- refused paths change nothing --------------------------------------------------------------

def _ansible_playbook(box, check=False, extra=None):
    args = ["--check", "--diff"] if check else []
    if extra:
        args += ["-e", json.dumps(extra)]
    # one line per message (the YAML result format wraps long strings)
    return run_playbook(os.path.join(scenario_dir(), "converge.yml"), *args,
                        env={"ANSIBLE_CALLBACK_RESULT_FORMAT": "json"})


STATE = ("stat -c '%n %Y %s %a %U' /etc/sysctl.d/60-gpu-serving.conf /etc/logrotate.d/vllm "
         "/etc/cron.d/gpu-fleet-cache-cleanup /etc/ansible/facts.d/gpu_fleet_host_tuning.fact "
         "/etc/systemd/system/gpu-fleet-cpu-governor.service /var/log/vllm " + SCRIPT + " " + CLEANUP_CONFIG + "; "
         "md5sum /etc/cron.d/gpu-fleet-cache-cleanup /etc/logrotate.d/vllm " + CLEANUP_CONFIG)


REFUSED = {
    "/": "it is the root directory /",
    "/etc": "it is a system directory or lies in one: /etc is a system directory",
    "/srv/models": "it is a parent of /srv/models/Qwen2.5-7B-Instruct, a model path (vllm_server_model.path, model_store_models)",
    "/srv/models/Qwen2.5-7B-Instruct/cache": "it lies inside /srv/models/Qwen2.5-7B-Instruct, a model path",
    "var/cache/x": "it is a relative path",
    "/var/cache/i16-link/": "/var/cache/i16-link is a symbolic link (to /usr)",
}


def test_refused_paths_change_nothing(box):
    """Refused paths fail the host in the validation play, before host_tuning or housekeeping
    change anything, even though the same run also asks for other changes; each is named. One is
    a link to /usr on the host, named with a trailing slash."""
    box.check_output("ln -sfn /usr /var/cache/i16-link")
    try:
        before = box.check_output(STATE)
        out = _ansible_playbook(box, extra={
            "housekeeping_cache_dirs": ["/var/cache/qwen_image_cache"] + list(REFUSED),
            "housekeeping_logrotate_rotate": 5,
            "host_tuning_sysctl": {"vm.max_map_count": 1048576},
        })
        after = box.check_output(STATE)
    finally:
        box.run("rm -f /var/cache/i16-link")
    assert out.returncode != 0
    for index, (bad, reason) in enumerate(REFUSED.items(), 1):
        # the JSON result format escapes the quotes around the value
        expected = "host i5-host-tuning: housekeeping_cache_dirs[%d] is %s: %s" % (index, json.dumps(bad), reason)
        assert json.dumps(expected)[1:-1] in out.stdout, expected
    assert "housekeeping_cache_dirs[0] is" not in out.stdout
    assert "Traceback" not in out.stdout
    assert "changed=0" in out.stdout
    assert _tuning_tasks(out.stdout) == []
    assert after == before


def _tuning_tasks(output):
    """The host_tuning tasks that ran, less its read-only checks (the validation play: the argument spec
    of entry point validate, tasks/validate.yml's "Refuse ..." checks and governor_check.yml's dry run)."""
    checks = (" : Validating arguments against arg spec 'validate'", " : Refuse ", " : Find out what the CPUs need")
    return [line for line in output.splitlines()
            if line.startswith("TASK [gpu_fleet.vllm_serving.host_tuning") and not any(c in line for c in checks)]


def test_refused_governor_changes_nothing(box):
    """A governor name the helper refuses (here one that would add a line to the unit) fails the
    host in the validation play: the unit is not written, nor anything else the run asks for."""
    before = box.check_output(STATE)
    unit = box.file("/etc/systemd/system/gpu-fleet-cpu-governor.service").content_string
    out = _ansible_playbook(box, extra={"host_tuning_governor": "performance\nExecStartPre=/bin/true",
                                        "host_tuning_sysctl": {"vm.max_map_count": 1048576}})
    assert out.returncode != 0
    assert "host i5-host-tuning: host_tuning_governor is " in out.stdout
    assert "it must be a cpufreq governor name: a lower-case letter, then lower-case letters, digits, _ and - only" in out.stdout
    assert "Nothing was changed." in out.stdout
    assert "Traceback" not in out.stdout
    assert "changed=0" in out.stdout
    assert _tuning_tasks(out.stdout) == []
    assert box.check_output(STATE) == before
    assert box.file("/etc/systemd/system/gpu-fleet-cpu-governor.service").content_string == unit
