# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""compliance.yml against the converged simulated a100x6_2numa host, clean and with planted faults.

Two kinds of test, kept apart on purpose:
* raw-state assertions (dpkg, systemd, nvidia-smi output) that do not use the catalog, so a bug
  in a check cannot hide itself;
* the playbook run as an operator runs it (ansible-playbook, JSON report, exit code), once clean
  and once per planted fault, each expecting exactly the finding the fault should cause; and the
  deprecated playbooks/preflight.yml alias once, writing the same reports.
Expected values come from the scenario (layout: GPUs 0+1 and 4+5, TP=2; 6 GPUs) and the pins of
roles/cuda_stack (CUDA 12.1.1-1, NCCL 2.14.3-1+cuda11.7).
"""
import json
import os
import subprocess
import time

import pytest
from testinfra_helpers import env_file

PROJECT = os.environ.get("MOLECULE_PROJECT_DIRECTORY", os.getcwd())
INVENTORY = os.path.dirname(os.environ["MOLECULE_INVENTORY_FILE"])
HOST = "i7-compliance"
NCCL = "2.14.3-1+cuda11.7"
INSTANCES = {"n0-0": 8001, "n1-0": 8002}


def playbook(name, *extra, cwd=PROJECT):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(PROJECT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, ".build", "ac"), PWD=str(cwd))
    return subprocess.run(
        [os.path.join(PROJECT, ".venv", "bin", "ansible-playbook"), "-i", INVENTORY,
         os.path.join(PROJECT, "playbooks", name)] + list(extra),
        env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, cwd=str(cwd))


def read_report(report_dir):
    with open(os.path.join(str(report_dir), "compliance-report.json")) as handle:
        report = json.load(handle)
    host = [h for h in report["hosts"] if h["host"] == HOST][0]
    return report, host


def compliance(tmp_path, *extra):
    proc = playbook("compliance.yml", "-e", "compliance_report_dir=%s" % tmp_path, *extra)
    return (proc,) + read_report(tmp_path)


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


def test_raw_stand_in_device_nodes(host):
    # plant.yml: a character device 195:<minor> per GPU of the profile, and nvidiactl 195:255
    out = host.check_output("stat -c '%n %F %t:%T %a' /dev/nvidia[0-9]* /dev/nvidiactl")
    assert out.splitlines() == ["/dev/nvidia%d character special file c3:%d 666" % (n, n) for n in range(6)] + [
        "/dev/nvidiactl character special file c3:ff 666"]
    assert host.file("/etc/gpu-sim/device-nodes").content_string.startswith("STAND-IN device nodes")


# --- the compliance playbook ---------------------------------------------------------------

def test_compliance_passes_after_converge(tmp_path):
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert report["compliant"] is True
    assert host_report["summary"]["mode"] == "post_deploy"
    assert failing(host_report) == []
    passed = set(f["id"] for f in host_report["findings"] if f["status"] == "pass")
    assert {"gpu_driver", "gpu_devices", "gpu_count", "ecc_uncorrectable", "nvlink", "layout", "packages",
            "nccl_effective", "systemd", "units", "logrotate", "cron", "vllm_stack"} <= passed
    stack = dict((f["subject"], f["actual"]) for f in host_report["findings"] if f["id"] == "vllm_stack")
    assert stack["vllm"] == "vllm 0.6.3.post1+gpusim installed (vllm.__version__ 0.6.3.post1+gpusim)"
    assert stack["torch"] == "torch 2.4.0+gpusim"
    assert stack["vllm@n0-0"] == stack["vllm@n1-0"] == "vLLM is using nccl==2.14.3 (group of 2)"
    junit = (tmp_path / "compliance-report.xml").read_text()
    assert 'failures="0"' in junit and 'name="nvlink [TP group n0-0 (GPUs 0,1)]"' in junit


def test_compliance_check_mode_changes_nothing(tmp_path):
    proc = compliance(tmp_path, "--check")[0]
    assert proc.returncode == 0, proc.stdout[-3000:]
    recap = [line for line in proc.stdout.splitlines() if line.startswith(HOST + " ")]
    assert recap and "changed=0" in recap[-1]


def test_deprecated_preflight_alias_writes_the_new_reports(tmp_path):
    # playbooks/preflight.yml imports compliance.yml: the same role and reports, here in the default
    # report directory, ./gpu-fleet-reports of the directory ansible-playbook runs from
    proc = playbook("preflight.yml", cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    reports = tmp_path / "gpu-fleet-reports"
    report, host_report = read_report(reports)
    assert report["compliant"] is True and [h["host"] for h in report["hosts"]] == [HOST]
    assert failing(host_report) == [] and host_report["summary"]["mode"] == "post_deploy"
    assert 'failures="0"' in (reports / "compliance-report.xml").read_text()
    assert sorted(os.listdir(str(tmp_path))) == ["gpu-fleet-reports"]   # no preflight-* files any more


def test_records_of_every_role_are_what_compliance_judged(tmp_path, host):
    # raw: each role left its record (local fact); compliance read them, not the roles' variables
    for role in ("cuda_stack", "vllm_server", "housekeeping", "host_tuning"):
        assert host.file("/etc/ansible/facts.d/gpu_fleet_%s.fact" % role).mode == 0o644, role
    cuda = json.loads(host.file("/etc/ansible/facts.d/gpu_fleet_cuda_stack.fact").content_string)
    assert cuda["pins"] == {"cuda-toolkit-12-1": "12.1.1-1", "libnccl2": NCCL, "libnccl-dev": NCCL}
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    pins = [f for f in host_report["findings"] if f["subject"] == "cuda_stack record"]
    assert [(f["status"], f["expected"]) for f in pins] == [
        ("pass", "cuda-toolkit-12-1=12.1.1-1, libnccl-dev=%s, libnccl2=%s" % (NCCL, NCCL))]


def test_nothing_recorded_is_not_applied_never_pass(tmp_path, host):
    # the records moved away: to compliance the host is one where no role has run (before a
    # rollout). Everything the roles apply is "not applied" (a warning) with the pin rules'
    # values; the host is compliant (nothing fails) but not passed.
    host.run_expect([0], "mv /etc/ansible/facts.d /root/facts.d.keep")
    try:
        proc, report, host_report = compliance(tmp_path)
    finally:
        host.run_expect([0], "mv /root/facts.d.keep /etc/ansible/facts.d")
    assert proc.returncode == 0, proc.stdout[-3000:]
    summary = host_report["summary"]
    assert (summary["mode"], summary["status"], summary["compliant"]) == ("pre_deploy", "warn", True)
    by_check = {}
    for f in host_report["findings"]:
        by_check.setdefault(f["id"], set()).add(f["status"])
    for check_id in ("nccl_effective", "sysctl", "governor", "logrotate", "cron", "units", "vllm_stack"):
        assert by_check[check_id] == {"not_applied"}, (check_id, by_check[check_id])
    packages = sorted((f["subject"], f["status"], f["expected"]) for f in host_report["findings"]
                      if f["id"] == "packages")
    # without cuda_stack's record the holds it set are someone else's to compliance: each held pin
    # warns that the rollout will override its hold
    assert packages == [
        ("cuda-toolkit-12-1", "not_applied", "12.1.1-1 installed and held"),
        ("cuda-toolkit-12-1", "warn", "cuda-toolkit-12-1 held by cuda_stack only (or not held)"),
        ("libnccl-dev", "not_applied", NCCL + " installed and held"),
        ("libnccl-dev", "warn", "libnccl-dev held by cuda_stack only (or not held)"),
        ("libnccl2", "not_applied", NCCL + " installed and held"),
        ("libnccl2", "warn", "libnccl2 held by cuda_stack only (or not held)")]
    override = [f for f in host_report["findings"] if f["id"] == "packages" and f["status"] == "warn"][0]
    assert override["remediation"].startswith("site.yml (cuda_stack) will override this hold: it installs "
                                              "cuda-toolkit-12-1=12.1.1-1 over it")
    assert "NOT_APPLIED" in proc.stdout   # the table names the status
    assert "WARNING: expected 12.1.1-1 installed and held" in (tmp_path / "compliance-report.xml").read_text()


@pytest.fixture
def fault(host):
    planted = []

    def plant(*argv):
        planted.append(argv)
        host.run_expect([0], "gpu-sim-fault %s" % " ".join(argv))
    yield plant
    host.run_expect([0], "gpu-sim-fault clear")


def test_fault_device_nodes_missing(tmp_path, fault, host):
    fault("device-nodes-missing")
    assert host.run("ls /dev/nvidia0").rc != 0
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("gpu_devices", "host", "no NVIDIA device nodes")]
    # site.yml refuses the host in its first play, naming what is missing and the fix; nothing changes
    before = host.check_output("stat -c '%Y %s' /etc/vllm/*.env /etc/sysctl.d/60-gpu-serving.conf")
    proc = playbook("site.yml")
    out = " ".join(proc.stdout.split())
    assert proc.returncode != 0
    assert "host %s: no NVIDIA device nodes in /dev: no /dev/nvidia<minor> character device" % HOST in out
    assert "nvidia-modprobe -c <minor>" in out and "--gpus all" in out and "Nothing was changed." in out
    assert "TASK [gpu_fleet.vllm_serving.host_tuning" not in proc.stdout
    recap = [line for line in proc.stdout.splitlines() if line.startswith(HOST + " ")]
    assert recap and "changed=0" in recap[-1] and "failed=1" in recap[-1]
    assert host.check_output("stat -c '%Y %s' /etc/vllm/*.env /etc/sysctl.d/60-gpu-serving.conf") == before


def test_no_systemd_is_not_compliant(tmp_path, host):
    # to the tools a host whose /run/systemd/system is missing was not booted with systemd
    # (sd_booted(3)), as on the real H200 VM; everything else is as converged
    # site.yml refuses such a host in its first play (gpu_preflight), before anything changes
    host.run_expect([0], "mv /run/systemd/system /run/systemd/system.keep")
    try:
        proc, report, host_report = compliance(tmp_path)
        before = host.check_output("stat -c '%Y %s' /etc/vllm/*.env /etc/sysctl.d/60-gpu-serving.conf")
        site = playbook("site.yml")
        after = host.check_output("stat -c '%Y %s' /etc/vllm/*.env /etc/sysctl.d/60-gpu-serving.conf")
    finally:
        host.run_expect([0], "mv /run/systemd/system.keep /run/systemd/system")
    assert proc.returncode != 0
    assert failing(host_report) == [("systemd", "host", "not booted with systemd (no /run/systemd/system)")]
    units = [f for f in host_report["findings"] if f["id"] == "units"]
    assert [(f["status"], f["actual"]) for f in units] == [("not_applicable", "no systemd on this host")]
    assert "host %s: systemd: host: not booted with systemd" % HOST in " ".join(proc.stdout.split())
    out = " ".join(site.stdout.split())
    assert site.returncode != 0
    assert "host %s: not booted with systemd (/run/systemd/system is not a directory" % HOST in out, out[-3000:]
    assert "Nothing was changed." in out
    assert "TASK [gpu_fleet.vllm_serving.host_tuning" not in site.stdout
    assert after == before


GONE_INVENTORY = "[gpu_hosts]\ngpu-gone ansible_connection=ssh ansible_host=127.0.0.1 ansible_port=1\n"


def test_limit_writes_the_report_of_the_limited_hosts(tmp_path):
    # run from a directory of the operator's: the reports land in gpu_fleet_report_dir below it
    (tmp_path / "gone.ini").write_text(GONE_INVENTORY)
    proc = playbook("compliance.yml", "-i", str(tmp_path / "gone.ini"), "--limit", HOST, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    report, host_report = read_report(tmp_path / "gpu-fleet-reports")
    assert [h["host"] for h in report["hosts"]] == [HOST] and report["compliant"] is True
    # the only limited host unreachable: the play keeps it, the report says so
    proc = playbook("compliance.yml", "-i", str(tmp_path / "gone.ini"), "--limit", "gpu-gone", cwd=tmp_path)
    assert proc.returncode != 0
    with open(str(tmp_path / "gpu-fleet-reports" / "compliance-report.json")) as handle:
        report = json.load(handle)
    assert [(h["host"], h["summary"]["status"]) for h in report["hosts"]] == [("gpu-gone", "unreachable")]
    assert "127.0.0.1 port 1" in report["hosts"][0]["summary"]["error"]
    assert "host gpu-gone: could not be checked: unreachable: " in " ".join(proc.stdout.split())
    assert sorted(os.listdir(str(tmp_path))) == ["gone.ini", "gpu-fleet-reports"]


def test_fault_gpu_missing(tmp_path, fault):
    fault("gpu-missing", "5")
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode != 0
    ids = failing(host_report)
    assert ("gpu_count", "host", "5 GPU(s), 5 healthy") in ids
    # nothing said the GPU is gone, but the kernel still sees it: the count by source disagrees
    assert ("gpu_count", "GPU count by source", "nvidia-smi -q -x 5, nvidia-smi topo -m 5, nvidia-smi -L 5, "
            "sysfs (NVIDIA display/3D PCI functions) 6") in ids
    # GPU 5 was part of instance n1-0's TP group
    assert ("nvlink", "TP group n1-0 (GPUs 4,5)", "GPU 5 not found") in ids


@pytest.mark.parametrize("spelling, line", [
    ("plain", "Unable to determine the device handle for GPU 0000:4b:00.0: Unknown Error"),
    ("indexed", "Unable to determine the device handle for GPU2: 0000:4B:00.0: Unknown Error"),
])
def test_fault_gpu_dead_keeps_its_index(tmp_path, fault, spelling, line):
    fault("gpu-dead", "2", spelling)
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("gpu_count", "GPU 2", line), ("gpu_count", "host", "6 GPU(s), 5 healthy")]


@pytest.mark.parametrize("kind, actual", [
    ("nvlink5", "Xid 149 (NVLINK_NETIR_ERROR) on GPU 0000:4b:00: NVRM: Xid (PCI:0000:4b:00): 149, NETIR_LINK_EVT  "
                "Fatal   XC0 i0 Link 01 (0x021425c6 0x00000000 0x00000000 0x00000000 0x00000000 0x00000000)"),
    ("caused-by", "Xid 45 (ROBUST_CHANNEL_PREEMPTIVE_REMOVAL) on GPU 0000:4b:00: NVRM: Xid (PCI:0000:4b:00): 45, "
                  "pid=1818990, name=python3, Ch 00000001 caused by previous Xid 149 "
                  "[root cause Xid 149 (NVLINK_NETIR_ERROR)]"),
])
def test_fault_nvlink_xid(tmp_path, fault, kind, actual):
    fault("xid", "2", kind)
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("kernel_log", "GPU 0000:4b:00", actual)]


def test_fault_ecc_uncorrectable(tmp_path, fault):
    fault("ecc-uncorrectable", "3", "2")
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("ecc_uncorrectable", "GPU 3", "volatile 2, aggregate 2")]


def test_fault_nvlink_inactive_in_tp_group(tmp_path, fault):
    fault("nvlink-inactive", "4", "7")
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode != 0
    assert failing(host_report) == [("nvlink", "TP group n1-0 (GPUs 4,5)", "GPU 4 link 7 inactive")]


def test_fault_nvlink_inactive_outside_tp_groups_passes(tmp_path, fault):
    fault("nvlink-inactive", "2", "0")   # GPUs 2 and 3 serve nothing in this layout
    proc, report, host_report = compliance(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]


def test_fault_held_package_removed(tmp_path, host):
    host.run_expect([0], "dpkg --remove --force-hold libnccl-dev")
    try:
        proc, report, host_report = compliance(tmp_path)
        assert proc.returncode != 0
        assert failing(host_report) == [("packages", "libnccl-dev", "not installed")]
    finally:
        host.run_expect([0], "apt-get install -y -q --allow-change-held-packages libnccl-dev=%s" % NCCL)
        host.run_expect([0], "apt-mark hold libnccl-dev")


def test_fault_hold_released(tmp_path, host):
    host.run_expect([0], "apt-mark unhold libnccl2")
    try:
        proc, report, host_report = compliance(tmp_path)
        assert proc.returncode != 0
        assert failing(host_report) == [("packages", "libnccl2", NCCL + " installed, not held")]
    finally:
        host.run_expect([0], "apt-mark hold libnccl2")


def test_raw_instances_load_the_pinned_nccl(host):
    # independent of the catalog: the env file names the system library (found by the role's
    # default vllm_server_nccl_so_path: auto; /lib is /usr/lib on this merged-/usr image), which
    # is the pinned build
    pinned = host.check_output("readlink -f /usr/lib/x86_64-linux-gnu/libnccl.so.2")
    for name in sorted(INSTANCES):
        path = "/etc/vllm/%s.env" % name
        keys = [line.split("=", 1)[0] for line in host.file(path).content_string.splitlines()]
        assert keys.count("VLLM_NCCL_SO_PATH") == 1, name
        path = env_file(host, path)["VLLM_NCCL_SO_PATH"]
        assert path.endswith("/x86_64-linux-gnu/libnccl.so.2"), path
        assert host.check_output("readlink -f %s" % path) == pinned
    assert "NCCL version 2.14.3+cuda11.7" in host.check_output(
        "grep -a -o 'NCCL version [0-9.]*+cuda[0-9.]*' $(readlink -f /usr/lib/x86_64-linux-gnu/libnccl.so.2)")


def test_fault_instance_on_torch_bundled_nccl(tmp_path, host):
    env = "/etc/vllm/n0-0.env"
    host.run_expect([0], "cp -p %s /root/n0-0.env.keep && sed -i '/^VLLM_NCCL_SO_PATH=/d' %s" % (env, env))
    try:
        proc, report, host_report = compliance(tmp_path)
        assert proc.returncode != 0
        assert failing(host_report) == [(
            "nccl_effective", "vllm@n0-0",
            "torch's bundled NCCL in /opt/vllm/venv (VLLM_NCCL_SO_PATH unset): no libnccl.so.2 found")]
        bad = [f for f in host_report["findings"] if f["severity"] == "fail"][0]
        assert bad["host"] == HOST and bad["expected"] == "NCCL 2.14.3+cuda11.7"
        assert bad["remediation"].startswith("Set vllm_server_nccl_so_path: ")
        assert "libnccl.so.2 (the pinned system library, NCCL 2.14.3+cuda11.7)" in bad["remediation"]
    finally:
        host.run_expect([0], "mv /root/n0-0.env.keep %s" % env)


def test_raw_instances_log_the_nccl_they_use(host):
    # independent of the catalog: rank 0 of each TP=2 instance logged the NCCL its communicator uses
    for name in sorted(INSTANCES):
        log = host.file("/var/log/vllm/%s.log" % name).content_string
        assert "vLLM is using nccl==2.14.3" in log, name


def test_fault_other_release_asked(tmp_path):
    # the inventory asks for another release than the host runs (changed, not rolled out)
    proc, report, host_report = compliance(tmp_path, "-e", "vllm_server_pip_spec=vllm==0.8.5.post1")
    assert proc.returncode != 0
    assert failing(host_report) == [("vllm_stack", "vllm", "vllm 0.6.3.post1+gpusim installed")]
    bad = [f for f in host_report["findings"] if f["severity"] == "fail"][0]
    assert bad["expected"] == "vllm==0.8.5.post1"


def test_fault_nccl_communicator_dropped(tmp_path, host):
    # TEST ONLY plant: n0-0's log as an instance leaves it when vLLM drops its NCCL communicator - a
    # new start and no "vLLM is using nccl==" after it (the stand-in's own silent drop, with a later
    # release's wrapper bound to the simulated libnccl, is tested in tests/unit/simulator; a restart
    # here would wait out the port's TIME_WAIT twice). nccl_effective still sees the pinned library in
    # the environment file; vllm_stack fails.
    log = "/var/log/vllm/n0-0.log"
    size = host.check_output("stat -c %%s %s", log)
    start = "INFO 12-02 10:00:01 api_server.py:528] vLLM API server version 0.6.3.post1+gpusim"
    host.run_expect([0], "printf '%%s\\n' '%s' >> %s" % (start, log))
    try:
        proc, report, host_report = compliance(tmp_path)
        assert proc.returncode != 0
        got = failing(host_report)
        assert [(i, s) for i, s, _a in got] == [("vllm_stack", "vllm@n0-0")], got
        assert got[0][2].startswith("group of 2, but rank 0 logged no 'vLLM is using nccl==' since its last start")
    finally:
        host.run_expect([0], "truncate -s %s %s" % (size, log))


def test_fault_unit_stopped(tmp_path, host):
    host.run_expect([0], "systemctl stop vllm@n0-0.service")
    try:
        proc, report, host_report = compliance(tmp_path)
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


# --- playbooks/nccl_baseline.yml against the simulated all_reduce_perf -----------------------
# The simulated all_reduce_perf (prepare.yml) replays the real DGX A100 capture nccltests_03:
# avg busbw 222.066 GB/s, out-of-place busbw at 8 GiB 234.72 GB/s. -g is the host's 6 GPUs.

BASELINE = "/var/lib/gpu_fleet/nccl_baseline.json"
SIM_CALLS = "/var/log/gpu-sim/all_reduce_perf.jsonl"


def nccl_baseline(tmp_path, *extra):
    env = dict(os.environ, ANSIBLE_CONFIG=os.path.join(PROJECT, "ansible.cfg"),
               ANSIBLE_COLLECTIONS_PATH=os.path.join(PROJECT, ".build", "ac"))
    return subprocess.run(
        [os.path.join(PROJECT, ".venv", "bin", "ansible-playbook"), "-i", INVENTORY,
         os.path.join(PROJECT, "playbooks", "nccl_baseline.yml"),
         "-e", "nccl_baseline_controller_dir=%s" % tmp_path,
         "-e", '{"nccl_baseline_environment": {"NCCL_NVLS_ENABLE": "0"}}'] + list(extra),
        env=env, check=False, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True,
        cwd=PROJECT)


def sim_calls(host):
    out = host.run("cat %s" % SIM_CALLS).stdout
    return [json.loads(line) for line in out.splitlines() if line.strip()]


@pytest.fixture(scope="module")
def nccl_clean(host):
    host.run_expect([0], "rm -f %s %s" % (BASELINE, SIM_CALLS))
    yield
    host.run_expect([0], "gpu-sim-fault clear")


def test_nccl_baseline_check_mode_runs_nothing(tmp_path, host, nccl_clean):
    proc = nccl_baseline(tmp_path, "--check")
    assert proc.returncode == 0, proc.stdout[-3000:]
    assert not host.file(BASELINE).exists
    assert sim_calls(host) == []
    assert not (tmp_path / (HOST + ".json")).exists()


def test_nccl_baseline_first_run_stores(tmp_path, host, nccl_clean):
    proc = nccl_baseline(tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    record = json.loads(host.file(BASELINE).content_string)
    assert record["summary"]["avg_busbw"] == 222.066
    assert record["summary"]["large_message_busbw"] == 234.72
    assert record["args"] == ["-b", "8", "-e", "1G", "-f", "2", "-g", "6"]
    calls = sim_calls(host)
    assert len(calls) == 1 and calls[0]["env"] == {"NCCL_NVLS_ENABLE": "0"}
    assert json.loads((tmp_path / (HOST + ".json")).read_text()) == record


@pytest.mark.parametrize("factor, fails", [("0.9", False), ("0.8", True)])
def test_nccl_baseline_drop(tmp_path, host, nccl_clean, factor, fails):
    before = host.file(BASELINE).content_string
    host.run_expect([0], "gpu-sim-fault nccl-bandwidth %s" % factor)
    proc = nccl_baseline(tmp_path)
    if fails:
        assert proc.returncode != 0
        assert ("%s: all_reduce_perf bandwidth drop: avg busbw 177.65 GB/s is 20.0%% below the baseline "
                "222.07 GB/s; busbw at 8589934592 B 187.78 GB/s is 20.0%% below the baseline 234.72 GB/s" % HOST) \
            in proc.stdout
    else:
        assert proc.returncode == 0, proc.stdout[-3000:]
        assert "within 15% of the baseline" in proc.stdout
    assert host.file(BASELINE).content_string == before


def test_nccl_baseline_broken_run_fails_and_keeps_baseline(tmp_path, host, nccl_clean):
    before = host.file(BASELINE).content_string
    host.run_expect([0], "gpu-sim-fault nccl-broken wrong")
    proc = nccl_baseline(tmp_path, "-e", "nccl_baseline_mode=record")
    assert proc.returncode != 0
    assert "broken run of /opt/nccl-tests/build/all_reduce_perf" in proc.stdout
    assert "wrong results (#wrong > 0)" in proc.stdout
    assert host.file(BASELINE).content_string == before
