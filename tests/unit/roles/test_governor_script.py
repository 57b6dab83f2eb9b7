# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The host_tuning governor script, run for real against planted sysfs trees.

No machine here has cpufreq (containers, the H200 VM), so the script's logic is proven on trees
laid out like /sys/devices/system/cpu/cpuN/cpufreq on a bare-metal host.
"""
import os
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..",
                      "roles", "host_tuning", "files", "gpu-fleet-cpu-governor")


def plant(root, cpus):
    """cpus: {name: (current governor, available governors)} or {name: None} for no cpufreq."""
    base = root / "devices" / "system" / "cpu"
    for name, freq in cpus.items():
        cpu = base / name
        cpu.mkdir(parents=True)
        (cpu / "online").write_text("1\n")
        if freq is not None:
            current, available = freq
            (cpu / "cpufreq").mkdir()
            (cpu / "cpufreq" / "scaling_governor").write_text(current + "\n")
            (cpu / "cpufreq" / "scaling_available_governors").write_text(available + "\n")
    # files next to the cpuN directories that the glob must not take for CPUs
    (base / "online").parent.mkdir(parents=True, exist_ok=True)
    (base / "online").write_text("0-%d\n" % (len(cpus) - 1))
    (base / "cpufreq").mkdir(exist_ok=True)
    (base / "cpuidle").mkdir(exist_ok=True)
    return base


def governor(base, name):
    return (base / name / "cpufreq" / "scaling_governor").read_text()


def run(root, *args):
    env = dict(os.environ, SYSFS_ROOT=str(root), LC_ALL="C")
    return subprocess.run(["sh", SCRIPT] + list(args), capture_output=True, text=True, env=env, check=False)


def last_line(proc):
    return proc.stdout.strip().splitlines()[-1]


def test_sets_performance_where_offered(tmp_path):
    base = plant(tmp_path, {
        "cpu0": ("powersave", "performance powersave"),
        "cpu1": ("performance", "performance powersave"),
        "cpu2": ("schedutil", "conservative ondemand userspace powersave performance schedutil"),
    })
    proc = run(tmp_path, "performance")
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc) == "applied: performance on 3 CPUs (2 changed)"
    assert "cpu0: powersave -> performance" in proc.stdout
    assert "cpu2: schedutil -> performance" in proc.stdout
    assert "cpu1:" not in proc.stdout
    for cpu in ("cpu0", "cpu1", "cpu2"):
        assert governor(base, cpu) == "performance\n"
    # a second run finds nothing to do
    again = run(tmp_path, "performance")
    assert again.returncode == 0
    assert again.stdout == "applied: performance on 3 CPUs (0 changed)\n"


def test_dry_run_writes_nothing(tmp_path):
    base = plant(tmp_path, {
        "cpu0": ("powersave", "performance powersave"),
        "cpu1": ("performance", "performance powersave"),
    })
    proc = run(tmp_path, "--dry-run", "performance")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "pending: performance on 1 of 2 CPUs (cpu0 was powersave)\n"
    assert governor(base, "cpu0") == "powersave\n"


def test_no_cpufreq_is_not_applicable(tmp_path):
    base = plant(tmp_path, {"cpu0": None, "cpu1": None})
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    proc = run(tmp_path, "performance")
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == "not applicable: no cpufreq under %s/devices/system/cpu (VM or container)\n" % tmp_path
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    assert not (base / "cpu0" / "cpufreq").exists()


def test_empty_sysfs_is_not_applicable(tmp_path):
    proc = run(tmp_path, "performance")
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc).startswith("not applicable: no cpufreq")


def test_governor_not_offered_is_reported_and_left_alone(tmp_path):
    # intel_pstate in active mode offers only performance and powersave
    base = plant(tmp_path, {
        "cpu0": ("powersave", "performance powersave"),
        "cpu1": ("powersave", "performance powersave"),
    })
    proc = run(tmp_path, "schedutil")
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc) == ("not offered: schedutil on cpu0 cpu1 (available: performance powersave); "
                               "left as they are; 0 other CPUs handled (0 changed)")
    assert governor(base, "cpu0") == "powersave\n"
    assert governor(base, "cpu1") == "powersave\n"


def test_mixed_host_sets_what_it_can(tmp_path):
    # cpu1 has no cpufreq (offline or no driver), cpu2 offers no performance governor
    base = plant(tmp_path, {
        "cpu0": ("powersave", "performance powersave"),
        "cpu1": None,
        "cpu2": ("userspace", "userspace"),
    })
    proc = run(tmp_path, "performance")
    assert proc.returncode == 0, proc.stderr
    assert last_line(proc) == ("not offered: performance on cpu2 (available: userspace); "
                               "left as they are; 1 other CPUs handled (1 changed)")
    assert governor(base, "cpu0") == "performance\n"
    assert governor(base, "cpu2") == "userspace\n"


def test_governor_must_match_a_whole_word(tmp_path):
    # "performance" is a substring of neither; "power" must not match "powersave"
    base = plant(tmp_path, {"cpu0": ("performance", "performance powersave")})
    proc = run(tmp_path, "power")
    assert last_line(proc).startswith("not offered: power on cpu0")
    assert governor(base, "cpu0") == "performance\n"


def test_refused_write_fails(tmp_path):
    base = plant(tmp_path, {"cpu0": ("powersave", "performance powersave")})
    target = base / "cpu0" / "cpufreq" / "scaling_governor"
    # a kernel file that cannot be written, even by root, in place of the governor file
    target.unlink()
    target.symlink_to("/proc/version")
    proc = run(tmp_path, "performance")
    assert proc.returncode == 1
    assert "cpu0: writing 'performance'" in proc.stderr


@pytest.mark.parametrize("args", [[], ["a", "b"], ["--dry-run"], ["perf ormance"], ["../x"]])
def test_usage_errors(tmp_path, args):
    proc = run(tmp_path, *args)
    assert proc.returncode == 2
    assert "gpu-fleet-cpu-governor" in proc.stderr
