# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""playbooks/compliance.yml (role compliance) and its deprecated alias playbooks/preflight.yml on
this machine's localhost, which has no GPU (nvidia_smi_path points nowhere, so the result is the
same on a GPU host): a clear verdict and both reports in ./gpu-fleet-reports, no traceback; the
deprecated preflight_* variables honoured, the compliance_* names winning; bad values refused with
the variable named; the internal role common refusing to run on its own.
The molecule scenario of compliance runs the same playbooks against a converged simulated host."""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import glob
import json
import os

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_playbook as _run_playbook

HERE = os.path.dirname(os.path.abspath(__file__))
PLAYBOOKS = os.path.normpath(os.path.join(HERE, "..", "..", "..", "playbooks"))
NO_GPU = ("-e", "gpu_preflight_nvidia_smi_path=/nonexistent/nvidia-smi")


def run_playbook(tmp, playbook, *args):
    """ansible-playbook on localhost over the local connection, run from ``tmp`` (its PWD too)."""
    return _run_playbook(tmp, playbook, "-i", "localhost,", "-c", "local", *args)


def _report(report_dir):
    with open(os.path.join(str(report_dir), "compliance-report.json")) as handle:
        report = json.load(handle)
    assert [h["host"] for h in report["hosts"]] == ["localhost"]
    return report, report["hosts"][0]


def _finding(host_report, check_id):
    return [f for f in host_report["findings"] if f["id"] == check_id][0]


def test_no_gpu_fails_clearly_and_writes_both_reports(tmp_path):
    proc = run_playbook(tmp_path, os.path.join(PLAYBOOKS, "compliance.yml"), *NO_GPU)
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stdout
    assert "host localhost: gpu_driver: host: no usable GPU" in proc.stdout
    recap = [line for line in proc.stdout.splitlines() if line.startswith("localhost ")]
    assert recap and "changed=0" in recap[-1] and "failed=1" in recap[-1]
    reports = tmp_path / "gpu-fleet-reports"
    report, host_report = _report(reports)
    assert report["compliant"] is False and host_report["summary"]["compliant"] is False
    # auto, nothing deployed here (the module names this mode pre_deploy, formerly preflight)
    assert host_report["summary"]["mode"] in ("pre_deploy", "preflight")
    driver = _finding(host_report, "gpu_driver")
    assert driver["status"] == "fail" and "/nonexistent/nvidia-smi" in driver["actual"]
    assert _finding(host_report, "gpu_count")["expected"] == ">= 1"
    junit = (reports / "compliance-report.xml").read_text()
    # gpu_driver and gpu_count; gpu_devices and systemd too where this machine lacks them (raw state)
    failures = 2 + (not glob.glob("/dev/nvidia[0-9]*")) + (not os.path.isdir("/run/systemd/system"))
    assert '<testsuites name="gpu_fleet compliance"' in junit and 'failures="%d"' % failures in junit
    assert '<testcase classname="localhost.gpu_driver" name="gpu_driver [host]">' in junit
    assert "DEPRECATED" not in proc.stdout


def test_deprecated_alias_and_variables_in_check_mode(tmp_path):
    old = tmp_path / "old"
    proc = run_playbook(tmp_path, os.path.join(PLAYBOOKS, "preflight.yml"), "--check", *NO_GPU,
                        "-e", "preflight_report_dir=%s" % old, "-e", "preflight_expected_gpu_count=3",
                        "-e", "compliance_expected_gpu_count=4")
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stdout
    assert ("DEPRECATED: preflight_expected_gpu_count, preflight_report_dir still honoured; rename them "
            "to compliance_expected_gpu_count, compliance_report_dir") in " ".join(proc.stdout.split())
    report, host_report = _report(old)   # preflight_report_dir honoured
    assert _finding(host_report, "gpu_count")["expected"] == "4"   # the compliance_* name wins
    assert (old / "compliance-report.xml").exists()
    assert not (tmp_path / "gpu-fleet-reports").exists()
    assert not [n for n in os.listdir(str(old)) if n.startswith("preflight")]


# A host the controller cannot reach: nothing listens on port 1 of the loopback (refused at once).
LIMIT_INVENTORY = u"""[gpu_hosts]
localhost ansible_connection=local
gpu-gone ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1
"""


def run_limited(tmp_path, limit):
    (tmp_path / "hosts.ini").write_text(LIMIT_INVENTORY)
    return _run_playbook(tmp_path, os.path.join(PLAYBOOKS, "compliance.yml"), "-i", str(tmp_path / "hosts.ini"),
                         "--limit", limit, *NO_GPU)


def test_limit_to_an_unreachable_host_still_writes_the_reports(tmp_path):
    proc = run_limited(tmp_path, "gpu-gone")
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stdout
    reports = tmp_path / "gpu-fleet-reports"
    with open(str(reports / "compliance-report.json")) as handle:
        report = json.load(handle)
    assert report["compliant"] is False and [h["host"] for h in report["hosts"]] == ["gpu-gone"]
    gone = report["hosts"][0]
    assert gone["findings"] == [] and gone["summary"]["status"] == "unreachable"
    assert gone["summary"]["error"].startswith("unreachable: ") and "127.0.0.1 port 1" in gone["summary"]["error"]
    junit = (reports / "compliance-report.xml").read_text()
    assert '<testsuite name="gpu-gone"' in junit and 'errors="1"' in junit and "127.0.0.1 port 1" in junit
    assert "host gpu-gone: could not be checked: unreachable: " in " ".join(proc.stdout.split())
    # the reports go to gpu_fleet_report_dir, nothing else lands in the directory the run started in
    assert sorted(n for n in os.listdir(str(tmp_path)) if n.startswith("compliance")) == []


def test_limit_to_one_host_reports_that_host(tmp_path):
    proc = run_limited(tmp_path, "localhost")
    assert proc.returncode == 2, proc.stdout
    report, host_report = _report(tmp_path / "gpu-fleet-reports")   # localhost only, checked
    assert host_report["findings"] and host_report["summary"]["status"] == "fail"
    assert _finding(host_report, "gpu_driver")["status"] == "fail"


def test_bad_mode_is_refused_naming_the_variable(tmp_path):
    proc = run_playbook(tmp_path, os.path.join(PLAYBOOKS, "compliance.yml"), *NO_GPU,
                        "-e", "compliance_mode=bogus")
    assert proc.returncode == 2, proc.stdout
    assert "Traceback" not in proc.stdout
    out = " ".join(proc.stdout.split())
    assert "compliance_mode" in out and "bogus" in out and "pre_deploy" in out
    assert not (tmp_path / "gpu-fleet-reports").exists()


COMMON_PROBE = """
- name: Probe the internal role common
  hosts: localhost
  gather_facts: false
  tasks:
    - name: Its main entry point
      block:
        - name: Run it
          ansible.builtin.include_role:
            name: gpu_fleet.vllm_serving.common
      rescue:
        - name: Keep the message
          ansible.builtin.set_fact:
            main_error: "{{ ansible_failed_result.msg }}"
    - name: Its check entry point with a relative report directory
      block:
        - name: Run it
          ansible.builtin.include_role:
            name: gpu_fleet.vllm_serving.common
            tasks_from: check
          vars:
            gpu_fleet_report_dir: reports
      rescue:
        - name: Keep the message
          ansible.builtin.set_fact:
            check_error: "{{ ansible_failed_result.msg }}"
    - name: Its defaults entry point runs no task, so no check either
      ansible.builtin.include_role:
        name: gpu_fleet.vllm_serving.common
        tasks_from: defaults
      vars:
        gpu_fleet_report_dir: reports
    - name: Its defaults entry point as shipped
      ansible.builtin.include_role:
        name: gpu_fleet.vllm_serving.common
        tasks_from: defaults
        public: true
    - name: Write what happened
      ansible.builtin.copy:
        content: "{{ {'main': main_error, 'check': check_error, 'report_dir': gpu_fleet_report_dir,
                      'state_dir': gpu_fleet_state_dir} | to_json }}"
        dest: "{{ playbook_dir }}/probe.json"
        mode: "0644"
"""


def test_common_refuses_to_run_alone_and_checks_its_defaults(tmp_path):
    (tmp_path / "probe.yml").write_text(COMMON_PROBE)
    proc = run_playbook(tmp_path, str(tmp_path / "probe.yml"))
    assert proc.returncode == 0, proc.stdout
    probe = json.loads((tmp_path / "probe.json").read_text())
    assert probe["main"].startswith("internal role: include it through another role")
    assert "gpu_fleet_report_dir is 'reports'" in probe["check"]
    assert "must be absolute paths" in probe["check"] and "Fix:" in probe["check"]
    # the defaults entry point ran nothing: the play went on to write the probe
    assert "Its defaults entry point runs no task" in proc.stdout
    assert probe["report_dir"] == str(tmp_path / "gpu-fleet-reports")   # under the PWD
    assert probe["state_dir"] == "/var/lib/gpu_fleet"
