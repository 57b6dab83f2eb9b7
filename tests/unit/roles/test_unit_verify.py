# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""gpu-fleet-unit-verify (roles/common/files/), the validate step of every unit the roles write,
run for real with this machine's systemd-analyze on candidate files named as Ansible names them
(no unit suffix).

What it refuses is what systemd would start without a setting the role asked for, or not at all;
an unknown key (a setting newer than the host's systemd) is accepted. On the simulated hosts
(systemd 247) the roles' own units pass through it (molecule scenarios vllm_server, host_tuning),
and a refused unit is shown to leave the installed one in place (molecule vllm_server)."""
import os
import shutil
import subprocess

import pytest

SCRIPT = os.path.join(os.path.dirname(__file__), "..", "..", "..",
                      "roles", "common", "files", "gpu-fleet-unit-verify")
ANALYZE = shutil.which("systemd-analyze")
needs_systemd = pytest.mark.skipif(ANALYZE is None, reason="systemd-analyze is not installed here")
TRUE = shutil.which("true") or "/bin/true"

GOOD_SERVICE = "[Unit]\nDescription=good\n\n[Service]\nType=oneshot\nExecStart=%s\n" % TRUE
GOOD_TEMPLATE = ("[Unit]\nDescription=instance %%i\nPartOf=not-installed.target\n\n[Service]\n"
                 "EnvironmentFile=/etc/nowhere/%%i.env\nExecStart=%s %%i\n\n[Install]\nWantedBy=not-installed.target\n"
                 % TRUE)
GOOD_TIMER = "[Timer]\nOnCalendar=*-*-* *:00/10:00\nPersistent=true\n\n[Install]\nWantedBy=timers.target\n"

# id: (unit name, text, expected exit status, fragments stderr must hold)
CASES = {
    "service": ("gpu-fleet-t.service", GOOD_SERVICE, 0, []),
    "template": ("gpu-fleet-t@.service", GOOD_TEMPLATE, 0, []),
    "timer": ("gpu-fleet-t.timer", GOOD_TIMER, 0, []),
    "target": ("gpu-fleet-t.target", "[Unit]\nDescription=t\nWants=gpu-fleet-t@a.service\n", 0, []),
    "unknown_key_of_newer_systemd": ("gpu-fleet-t.service", GOOD_SERVICE + "ProtectFutureThing=yes\n", 0, []),
    "missing_executable": ("gpu-fleet-t.service", GOOD_SERVICE.replace(TRUE, "/opt/not-installed/bin/vllm"), 1,
                           ["gpu-fleet-t.service", "/opt/not-installed/bin/vllm"]),
    "template_missing_executable": ("gpu-fleet-t@.service", GOOD_TEMPLATE.replace(TRUE, "/opt/not-installed/bin/vllm"),
                                    1, ["/opt/not-installed/bin/vllm"]),
    "relative_read_write_path": ("gpu-fleet-t.service", GOOD_SERVICE + "ReadWritePaths=/var/lib/x -relative/cache\n",
                                 1, ["gpu-fleet-t.service:7:", "relative/cache"]),
    "bad_device_policy": ("gpu-fleet-t.service", GOOD_SERVICE + "DevicePolicy=clsoed\n", 1, ["clsoed"]),
    "bad_calendar": ("gpu-fleet-t.timer", GOOD_TIMER.replace("*-*-* *:00/10:00", "every ten minutes"), 1,
                     ["gpu-fleet-t.timer:2:", "every ten minutes"]),
    "assignment_outside_section": ("gpu-fleet-t.service", "ExecStart=%s\n" % TRUE + GOOD_SERVICE, 1,
                                   ["gpu-fleet-t.service:1:"]),
    "unknown_section": ("gpu-fleet-t.service", GOOD_SERVICE + "[Servce]\nUser=nobody\n", 1, ["Servce"]),
    "no_exec_start": ("gpu-fleet-t.service", "[Service]\nType=oneshot\n", 1, ["gpu-fleet-t.service"]),
}


def verify(tmp_path, unit, text, env=None):
    # Ansible's temporary copy of the rendered template: a name that is no unit name
    candidate = tmp_path / "ansible-tmp-source"
    candidate.write_text(text)
    return subprocess.run(["sh", SCRIPT, str(candidate), unit], capture_output=True, text=True,
                          env=env or dict(os.environ), check=False)


@needs_systemd
@pytest.mark.parametrize("case", sorted(CASES))
def test_verify(tmp_path, case):
    unit, text, status, fragments = CASES[case]
    proc = verify(tmp_path, unit, text)
    assert proc.returncode == status, proc.stderr
    for fragment in fragments:
        assert fragment in proc.stderr, proc.stderr
    if status:
        assert proc.stderr.startswith("gpu-fleet-unit-verify: systemd refuses %s as rendered; "
                                      "the installed unit was left as it is:" % unit), proc.stderr
        # the candidate is named as the unit it would become, never by its temporary path
        assert "/tmp" not in proc.stderr and "ansible-tmp-source" not in proc.stderr, proc.stderr


@needs_systemd
def test_diagnostics_of_other_units_are_not_the_candidates(tmp_path):
    """A unit the candidate names may have its own problems (systemd prints them while loading it):
    they do not refuse the candidate."""
    other = tmp_path / "units"
    other.mkdir()
    (other / "gpu-fleet-t-broken.service").write_text("[Service]\nExecStart=/bin/true\nType=bogus\n")
    env = dict(os.environ, SYSTEMD_UNIT_PATH="%s:" % other)
    text = GOOD_SERVICE.replace("[Unit]\n", "[Unit]\nWants=gpu-fleet-t-broken.service\n")
    proc = verify(tmp_path, "t-broken.service", text, env)
    assert proc.returncode == 0, proc.stderr


@pytest.mark.parametrize("unit", ["", "x y.service", "../x.service", "x.conf", ".service", "a/b.service"])
def test_refuses_what_is_no_unit_name(tmp_path, unit):
    proc = verify(tmp_path, unit, GOOD_SERVICE)
    assert proc.returncode == 2
    assert "gpu-fleet-unit-verify: '%s' is not a" % unit in proc.stderr


def test_without_systemd_analyze_accepts_and_says_so(tmp_path):
    """A host without systemd-analyze (no systemd): accepted, with a note on stderr."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for tool in ("sh", "cp", "mktemp", "rm", "sed", "awk", "grep", "printf"):
        path = shutil.which(tool)
        if path:
            os.symlink(path, str(bindir / tool))
    env = dict(os.environ, PATH=str(bindir))
    proc = subprocess.run([str(bindir / "sh"), SCRIPT, str(tmp_path / "none"), "gpu-fleet-t.service"],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 2 and "is not a file" in proc.stderr
    (tmp_path / "cand").write_text(GOOD_SERVICE)
    proc = subprocess.run([str(bindir / "sh"), SCRIPT, str(tmp_path / "cand"), "gpu-fleet-t.service"],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "systemd-analyze not found: gpu-fleet-t.service accepted without verification" in proc.stderr
