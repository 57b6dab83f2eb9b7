# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""preflight.yml against the converged simulated a100x6_2numa host, clean and with planted faults.

Two kinds of test, kept apart on purpose:
* raw-state assertions (dpkg, systemd, nvidia-smi output) that do not use the catalog, so a bug
  in a check cannot hide itself;
* the playbook run as an operator runs it (ansible-playbook, JSON report, exit code), once clean
  and once per planted fault, each expecting exactly the finding the fault should cause.
Expected values come from the scenario (layout: GPUs 0+1 and 4+5, TP=2; 6 GPUs) and the pins of
roles/cuda_stack (CUDA 12.1.1-1, NCCL 2.14.3-1+cuda11.7).
"""
import json
import os
import subprocess
import time

import pytest

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())
INVENTORY = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
HOST = "i7-preflight"
NCCL = "2.14.3-1+cuda11.7"
INSTANCES = {"n0-0": 8001, "n1-0": 8002}


def preflight(tmp_path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(PROJECT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, ".build", "ac"))
    proc = subprocess.run(
        [os.path.join(PROJECT, ".venv", "bin", "ansible-playbook"), "-i", INVENTORY,
         os.path.join(PROJECT, "playbooks", "preflight.yml"), "-e", "preflight_report_dir=%s" % tmp_path]
        + list(extra), env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
        cwd=PROJECT)
    with open(os.path.join(str(tmp_path), "preflight-report.json")) as handle:
        report = json.load(handle)
    host = [h for h in report["hosts"] if h["host"] == HOST][0]
    return proc, report, host


def failing(host_report):
    return sorted((f["id"], f["subject"], f["actual"]) for f in host_report["findings"] if f["severity"] == "fail")


# --- raw state, independent of the catalog -----------------------------------------------

def test_raw_pins_installed_and_held(host):
    for pkg in ("libnccl2", "libnccl-dev"):
        out = host.check_output("dpkg-query -W -f='${Version} ${Status}' %s", pkg)
        assert out == "%s hold ok installed" % NCCL
    assert "libnccl2" in host.check_output("apt-mark showhold").split()


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_raw_instances_running(host, name):
    assert host.service("vllm@%s" % name).is_running
    assert host.socket("tcp://127.0.0.1:%d" % INSTANCES[name]).is_listening
    env = host.file("/etc/vllm/%s.env" % name).content_string
    assert "VLLM_TENSOR_PARALLEL_SIZE=2\n" in env


def test_raw_simulated_gpus(host):
    assert len(host.check_output("nvidia-smi -L").splitlines()) == 6
    assert "<inactive>" not in host.check_output("nvidia-smi nvlink -s")


# --- the preflight playbook ----------------------------------------------------------------

def test_preflight_passes_after_converge(tmp_path):
    proc, report, host_report = preflight(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report["compliant"] is True
    assert host_report["summary"]["mode"] == "post_deploy"
    assert failing(host_report) == []
    passed = set(f["id"] for f in host_report["findings"] if f["status"] == "pass")
    assert {"gpu_driver", "gpu_count", "ecc_uncorrectable", "nvlink", "layout", "packages",
            "units", "logrotate", "cron"} <= passed
    junit = (tmp_path / "preflight-junit.xml").read_text()
    assert 'failures="0"' in junit and 'name="nvlink [TP group n0-0 (GPUs 0,1)]"' in junit


def test_preflight_check_mode_changes_nothing(tmp_path):
    proc = preflight(tmp_path, "--check")[0]
    assert proc.returncode == 0, proc.stdout[-3000:]
    recap = [line for line in proc.stdout.splitlines() if line.startswith(HOST + " ")]
    assert recap and "changed=0" in recap[-1]


@pytest.fixture
def fault(host):
    planted = []

    def plant(*argv):
        planted.append(argv)
        host.run_expect([0], "gpu-sim-fault %s" % " ".join(argv))
    yield plant
    host.run_expect([0], "gpu-sim-fault clear")


def test_fault_gpu_missing(tmp_path, fault):
    fault("gpu-missing", "5")
    proc, report, host_report = preflight(tmp_path)
    assert proc.returncode != 0
    ids = failing(host_report)
    assert ("gpu_count", "host", "5 GPU(s), 5 healthy") in ids
    # GPU 5 was part of instance n1-0's TP group
    assert ("nvlink", "TP group n1-0 (GPUs 4,5)", "GPU 5 not found") in ids


def test_fault_ecc_uncorrectable(tmp_path, fault):
    fault("ecc-uncorrectable", "3", "2")
    proc, report, host_report = preflight(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("ecc_uncorrectable", "GPU 3", "volatile 2, aggregate 2")]


def test_fault_nvlink_inactive_in_tp_group(tmp_path, fault):
    fault("nvlink-inactive", "4", "7")
    proc, report, host_report = preflight(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("nvlink", "TP group n1-0 (GPUs 4,5)", "GPU 4 link 7 inactive")]


def test_fault_nvlink_inactive_outside_tp_groups_passes(tmp_path, fault):
    fault("nvlink-inactive", "2", "0")   # GPUs 2 and 3 serve nothing in this layout
    proc, report, host_report = preflight(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_fault_held_package_removed(tmp_path, host):
    host.run_expect([0], "dpkg --remove --force-hold libnccl-dev")
    try:
        proc, report, host_report = preflight(tmp_path)
        assert proc.returncode != 0
        assert failing(host_report) == [("packages", "libnccl-dev", "not installed")]
    finally:
        host.run_expect([0], "apt-get install -y -q --allow-change-held-packages libnccl-dev=%s" % NCCL)
        host.run_expect([0], "apt-mark hold libnccl-dev")


def test_fault_hold_released(tmp_path, host):
    host.run_expect([0], "apt-mark unhold libnccl2")
    try:
        proc, report, host_report = preflight(tmp_path)
        assert proc.returncode != 0
        assert failing(host_report) == [("packages", "libnccl2", NCCL + " installed, not held")]
    finally:
        host.run_expect([0], "apt-mark hold libnccl2")


def test_fault_unit_stopped(tmp_path, host):
    host.run_expect([0], "systemctl stop vllm@n0-0.service")
    try:
        proc, report, host_report = preflight(tmp_path)
        assert proc.returncode != 0
        assert failing(host_report) == [("units", "vllm@n0-0", "not active (inactive)")]
    finally:
        # vLLM 0.6.3 (and the stand-in) bind the port without SO_REUSEADDR: starting while
        # connections to it sit in TIME_WAIT fails with `Address already in use`, and with the
        # unit's RestartSec=10 / StartLimitBurst=5 it can end `failed` (see the report of issue 7).
        # Restore the host cleanly: start only once the port is free.
        wait_port_free(host, INSTANCES["n0-0"])
        host.run_expect([0], "systemctl reset-failed vllm@n0-0.service; systemctl start vllm@n0-0.service")
        wait_healthy(host, "n0-0")


def wait_port_free(host, port, timeout=120):
    deadline = time.time() + timeout
    while time.time() < deadline:
        out = host.check_output("ss -Htan '( sport = :%d )'" % port)
        if not out.strip():
            return
        time.sleep(3)
    raise AssertionError("port %d still has sockets after %d s" % (port, timeout))


def wait_healthy(host, name, timeout=180):
    """Wait until the instance is active and answers /health again.

    A restarted vLLM 0.6.3 binds its port without SO_REUSEADDR (the stand-in keeps that), so a
    restart within TIME_WAIT of the last connections fails with `Address already in use` and
    systemd retries (RestartSec=10) until the port is free: up to about a minute of flapping.
    """
    probe = ("python3 -c \"import urllib.request; "
             "urllib.request.urlopen('http://127.0.0.1:%d/health', timeout=3)\"" % INSTANCES[name])
    deadline = time.time() + timeout
    while time.time() < deadline:
        if host.run("systemctl is-active vllm@%s.service" % name).stdout.strip() == "active" \
                and host.run(probe).rc == 0:
            return
        time.sleep(3)
    raise AssertionError("vllm@%s did not come back within %d s" % (name, timeout))
