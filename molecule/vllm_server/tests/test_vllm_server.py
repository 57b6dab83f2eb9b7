# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Raw host state of the vllm_server scenario (simulated a100x6_2numa host).

Expected values come from the profile (GPUs 0-2 on NUMA node 0, 3-5 on NUMA node 1, NVLink pairs
0-1, 2-3, 4-5) and the explicit layout in molecule.yml: TP=2 on [0, 1] and [4, 5], TP=1 on [2] and
[3]; instances are named n<NUMA>-<k> and numbered from port 8001 by first GPU. The degraded
layout is the planner's default (best layout on at most 4 GPUs): Qwen2.5-7B fits one GPU, so
four TP=1 instances on the lowest GPUs 0-3, numbered from port 8101. Nothing here calls the collection's own code.
"""
import json
import os
import subprocess
import time

import pytest
from testinfra_helpers import env_file, http, stream_arrival_times

MODEL = "Qwen/Qwen2.5-7B-Instruct"
FULL = {
    # name: (gpus, numa node, port, tensor parallel size)
    "n0-0": ("0,1", 0, 8001, 2),
    "n0-1": ("2", 0, 8002, 1),
    "n1-0": ("3", 1, 8003, 1),
    "n1-1": ("4,5", 1, 8004, 2),
}
DEGRADED = {
    "n0-0": ("0", 0, 8101, 1),
    "n0-1": ("1", 0, 8102, 1),
    "n0-2": ("2", 0, 8103, 1),
    "n1-0": ("3", 1, 8104, 1),
}
CLAIMS = "/dev/shm/gpu-sim-claims/claims.jsonl"
# converge.yml's test key (vllm_server_api_key); not a secret
KEY = "s6-molecule-api-key-8c1d"
AUTH = {"Authorization": "Bearer " + KEY}


def _http(host, url, body=None, headers=None):
    return http(host, url, body, headers)


def _completion(host, port=8000, prompt="hi", headers=None):
    return _http(host, "http://127.0.0.1:%d/v1/completions" % port,
                 json.dumps({"model": MODEL, "prompt": prompt, "max_tokens": 2}),
                 AUTH if headers is None else headers)


def _show(host, unit, *props):
    out = host.check_output("systemctl show %s %s" % (unit, " ".join("-p " + p for p in props)))
    return dict(line.split("=", 1) for line in out.splitlines() if "=" in line)


def _claims(host):
    return [json.loads(line) for line in host.file(CLAIMS).content_string.splitlines() if line.strip()]


# --- units, environment files, binding, ports -------------------------------------------------

@pytest.mark.parametrize("name", sorted(FULL))
def test_full_instance_env_file(host, name):
    gpus, _node, port, tp = FULL[name]
    f = host.file("/etc/vllm/%s.env" % name)
    assert (f.user, f.group, f.mode) == ("root", "vllm", 0o640)
    env = env_file(host, "/etc/vllm/%s.env" % name)
    assert env["CUDA_VISIBLE_DEVICES"] == gpus
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["VLLM_PORT"] == str(port)
    assert env["VLLM_TENSOR_PARALLEL_SIZE"] == str(tp)
    assert "VLLM_API_KEY" not in env


def test_only_planned_env_files(host):
    full = host.check_output("ls /etc/vllm/*.env").split()
    degraded = host.check_output("ls /etc/vllm/degraded/*.env").split()
    # the API key file sits next to them (converge.yml sets a key)
    assert sorted(full) == sorted(["/etc/vllm/api-key.env"] + ["/etc/vllm/%s.env" % n for n in FULL])
    assert sorted(degraded) == sorted("/etc/vllm/degraded/%s.env" % n for n in DEGRADED)
    for name, (gpus, _node, port, _tp) in DEGRADED.items():
        env = env_file(host, "/etc/vllm/degraded/%s.env" % name)
        assert (env["CUDA_VISIBLE_DEVICES"], env["VLLM_PORT"]) == (gpus, str(port))


@pytest.mark.parametrize("name", sorted(FULL))
def test_full_instance_runs_with_its_arguments(host, name):
    gpus, node, port, tp = FULL[name]
    assert host.service("vllm@%s" % name).is_running
    sock = host.socket("tcp://127.0.0.1:%d" % port)
    assert sock.is_listening
    assert not host.socket("tcp://0.0.0.0:%d" % port).is_listening
    procs = [p for p in host.process.filter(user="vllm") if "--port %d " % port in p.args + " "]
    assert procs, "no process of user vllm serves port %d" % port
    assert "--tensor-parallel-size %d --pipeline-parallel-size 1" % tp in procs[0].args
    info = json.loads(_http(host, "http://127.0.0.1:%d/gpu-sim/info" % port)["body"])
    assert info["cuda_visible_devices"] == gpus


def test_numactl_binding_of_the_tp2_instances(host):
    """The simulator's numactl bridge records how each unit was started."""
    calls = [json.loads(line)["argv"] for line in
             host.file("/var/log/gpu-sim/numactl.jsonl").content_string.splitlines() if line.strip()]
    for name in ("n0-0", "n1-1"):
        _gpus, node, port, _tp = FULL[name]
        wanted = ["--cpunodebind=%d" % node, "--membind=%d" % node]
        assert any(c[1:3] == wanted and "--port" in c and c[c.index("--port") + 1] == str(port)
                   and c[c.index("--tensor-parallel-size") + 1] == "2" for c in calls), name


def test_targets(host):
    full = host.file("/etc/systemd/system/vllm.target").content_string
    degraded = host.file("/etc/systemd/system/vllm-degraded.target").content_string
    assert sorted(line for line in full.splitlines() if line.startswith("Wants=")) == sorted(
        "Wants=vllm@%s.service" % n for n in FULL)
    # no coupling between the layouts: vllm_instances orders stops and starts per GPU
    assert not [l for l in (full + degraded).splitlines() if l.startswith(("Conflicts=", "After="))]
    assert host.service("vllm.target").is_enabled and host.service("vllm.target").is_running
    assert not host.service("vllm-degraded.target").is_enabled
    assert not host.service("vllm-degraded.target").is_running


def test_unit_runs_as_service_user_sandboxed_with_gpus_visible(host):
    props = _show(host, "vllm@n0-0.service", "User", "PrivateDevices", "ProtectSystem", "DevicePolicy",
                  "NoNewPrivileges", "Restart", "PartOf", "Conflicts", "TimeoutStopUSec")
    assert props["User"] == "vllm"
    assert props["PrivateDevices"] == "no"
    assert props["ProtectSystem"] == "strict"
    assert props["DevicePolicy"] == "closed"  # converge.yml sets vllm_server_device_policy: closed
    assert props["NoNewPrivileges"] == "yes"
    assert props["Restart"] == "on-failure"
    assert props["PartOf"] == "vllm.target"
    assert "vllm-degraded" not in props["Conflicts"] and "vllm.target" not in props["Conflicts"]
    assert props["TimeoutStopUSec"] == "1min 30s"  # vllm_server_drain_timeout 60 + 30
    assert "--api-key" not in host.file("/etc/systemd/system/vllm@.service").content_string


def test_systemd_analyze_security_exposure(host):
    out = host.run("systemd-analyze security vllm@n0-0.service")
    assert out.rc in (0, 1), out.stderr  # rc 1 only above a --threshold
    line = [l for l in out.stdout.splitlines() if "Overall exposure level" in l][0]
    score = float(line.split("level for vllm@n0-0.service:")[1].split()[0])
    print("systemd-analyze security vllm@n0-0.service: %s" % line.strip())
    assert score <= 4.5, line


def test_device_allow_list_leaves_the_gpus(host):
    """vllm_server_device_policy: closed: only the NVIDIA devices (and systemd's pseudo devices)."""
    unit = host.file("/etc/systemd/system/vllm@.service").content_string
    for line in ("DevicePolicy=closed", "DeviceAllow=/dev/nvidiactl rw", "DeviceAllow=/dev/nvidia-uvm rw",
                 "DeviceAllow=/dev/nvidia-uvm-tools rw", "DeviceAllow=char-nvidia-frontend rw",
                 "DeviceAllow=char-nvidia-uvm rw", "DeviceAllow=char-nvidia-caps rw"):
        assert line in unit.splitlines(), line
    # one DeviceAllow= line per entry
    allow = host.check_output("systemctl show -p DeviceAllow vllm@n1-1.service")
    for dev in ("/dev/nvidiactl rw", "char-nvidia-frontend rw", "char-nvidia-uvm rw", "char-nvidia-caps rw"):
        assert dev in allow, allow


# --- API key ----------------------------------------------------------------------------------

def test_api_key_required_on_v1_only(host):
    assert _completion(host, headers={})["status"] == 401
    assert _completion(host, headers={"Authorization": "Bearer wrong"})["status"] == 401
    assert _completion(host)["status"] == 200
    assert _http(host, "http://127.0.0.1:8000/v1/models", headers=AUTH)["status"] == 200
    assert _http(host, "http://127.0.0.1:8000/health")["status"] == 200


def test_api_key_only_in_its_root_owned_file(host):
    key_file = host.file("/etc/vllm/api-key.env")
    assert key_file.user == "root" and key_file.group == "vllm" and key_file.mode == 0o640
    assert key_file.content_string.strip() == "VLLM_API_KEY=%s" % KEY
    for unit in ("vllm@n0-0.service", "vllm@n1-1.service"):
        shown = host.check_output("systemctl show %s" % unit)
        assert KEY not in shown
        assert "/etc/vllm/api-key.env" in shown
        pid = int(_show(host, unit, "MainPID")["MainPID"])
        pids = [pid] + [int(p) for p in host.run("pgrep -P %d" % pid).stdout.split()]
        for p in pids:
            cmdline = host.file("/proc/%d/cmdline" % p).content_string
            assert KEY not in cmdline and "--api-key" not in cmdline, (p, cmdline)
    # no world-readable file outside /proc, /sys and /usr holds the key
    # (the pattern is written so that this command's own module file does not match it)
    found = host.run("find /etc /var /opt /srv /root /home /tmp /run -xdev -type f -perm -o+r "
                     "-size -4M -print0 2>/dev/null | xargs -0 -r grep -l -e '%s[%s]'" % (KEY[:-1], KEY[-1]))
    assert found.stdout.strip() == "", found.stdout


def test_wrong_key_fails_the_readiness_gate_at_once(host):
    record = json.loads(host.file("/root/i6-wrong-key.json").content_string)
    assert record["failed"] is True
    assert "401" in record["msg"], record["msg"]
    # it failed on the 401 and did not wait out its 300 s timeout
    assert record["elapsed"] is not None and record["elapsed"] < 300, record


# --- logs: journal and /var/log/vllm/<instance>.log ---------------------------------------------

def _journal(host, unit):
    return host.check_output("journalctl --no-pager -o cat -u %s" % unit)


def _wait_for(check, what, timeout=10):
    deadline = time.time() + timeout
    while not check():
        assert time.time() < deadline, what
        time.sleep(0.2)


def test_instance_logs_to_journal_and_file(host):
    marker = "s6-log-marker-%d" % int(time.time() * 1000)
    assert _completion(host, port=8003, prompt=marker)["status"] == 200  # n1-0 directly
    log = "/var/log/vllm/n1-0.log"
    _wait_for(lambda: marker in host.file(log).content_string, "%s not in %s" % (marker, log))
    _wait_for(lambda: marker in _journal(host, "vllm@n1-0.service"), "%s not in the journal" % marker)
    # vLLM's own lines in both; uvicorn's start-up lines go to the journal only
    assert "vLLM API server version" in host.file(log).content_string
    assert "Uvicorn running on http://127.0.0.1:8003" in _journal(host, "vllm@n1-0.service")
    assert host.file(log).user == "vllm" and host.file(log).mode == 0o640
    unit = host.file("/etc/systemd/system/vllm@.service").content_string
    assert "StandardOutput=journal" in unit and "append:" not in unit
    # vllm_server_log_requests: true (host_vars): vLLM 0.6.3 logs requests unless told not to
    assert "--disable-log-requests" not in unit


def test_degraded_instances_log_to_their_own_files(host):
    for name in DEGRADED:
        text = host.file("/var/log/vllm/degraded-%s.log" % name).content_string
        assert "vLLM API server version" in text, name
        assert "vLLM API server version" in _journal(host, "vllm-degraded@%s.service" % name)


def test_log_file_keeps_receiving_lines_after_logrotate(host):
    log = "/var/log/vllm/n1-0.log"
    before = "s6-before-rotate-%d" % int(time.time() * 1000)
    assert _completion(host, port=8003, prompt=before)["status"] == 200
    _wait_for(lambda: before in host.file(log).content_string, "before-marker not logged")
    # housekeeping's configuration (copytruncate), forced
    host.check_output("logrotate -f /etc/logrotate.d/vllm")
    assert before in host.file(log + ".1").content_string
    after = "s6-after-copytruncate-%d" % int(time.time() * 1000)
    assert _completion(host, port=8003, prompt=after)["status"] == 200
    _wait_for(lambda: after in host.file(log).content_string, "no line after copytruncate")
    assert before not in host.file(log).content_string
    # rotation by rename (no copytruncate): WatchedFileHandler must reopen the new file
    host.check_output("printf '%%s\\n' '%s {' 'rotate 3' 'su vllm vllm' 'create 0640 vllm vllm' '}' "
                      "> /tmp/s6-rename.conf" % log)
    host.check_output("logrotate -f -s /tmp/s6-rename.state /tmp/s6-rename.conf")
    renamed = "s6-after-rename-%d" % int(time.time() * 1000)
    assert _completion(host, port=8003, prompt=renamed)["status"] == 200
    _wait_for(lambda: renamed in host.file(log).content_string, "no line in the new file after a rename")
    assert renamed not in host.file(log + ".1").content_string
    assert after in host.file(log + ".1").content_string


# --- endpoint --------------------------------------------------------------------------------

def test_endpoint_balances_over_every_instance(host):
    seen = set()
    for _attempt in range(24):
        resp = _completion(host)
        assert resp["status"] == 200, resp
        seen.add(int(resp["headers"]["X-GPU-Sim-Instance"]))
        if seen == set(p for _g, _n, p, _t in FULL.values()):
            break
    assert seen == set(p for _g, _n, p, _t in FULL.values())


def test_endpoint_streams_unbuffered(host):
    """Chunks of a stream must arrive separately through nginx, not in one burst at the end."""
    result = stream_arrival_times(host, MODEL, {"Authorization": "Bearer %s" % KEY})
    assert result["done"]
    assert len(result["times"]) >= 4
    assert len(set(round(t, 2) for t in result["times"])) >= 3, result["times"]


def test_metrics_and_instance_ports_not_public(host):
    conf = host.file("/etc/nginx/conf.d/gpu-fleet-vllm.conf").content_string
    assert "deny all;" in conf and "allow 127.0.0.1;" in conf
    ip = host.check_output("hostname -I").split()[0]
    # from an address not in vllm_server_metrics_allow: only /v1/ (with the key) and /health; every
    # spelling vLLM matches for its metrics (^/metrics(?P<path>.*)$) and every other path is refused
    for path in ("/metrics", "/metrics/", "/metricsX", "/metrics/../metrics", "/version", "/tokenize",
                 "/detokenize", "/docs", "/"):
        assert _http(host, "http://%s:8000%s" % (ip, path))["status"] == 403, path
    # /v1 without the slash is proxied as the API (measured: vLLM's 401 without the key), never content
    assert _http(host, "http://%s:8000/v1" % ip)["status"] == 401
    assert _http(host, "http://%s:8000/health" % ip)["status"] == 200
    assert _http(host, "http://%s:8000/v1/models" % ip, headers=AUTH)["status"] == 200
    assert _http(host, "http://%s:8000/v1/models" % ip)["status"] == 401
    # from loopback (allowed): the metrics
    assert _http(host, "http://127.0.0.1:8000/metrics")["status"] == 200
    assert _http(host, "http://%s:8001/health" % ip)["status"] == 0  # instance ports: loopback only
    # Debian's default nginx site (port 80 of every address) is gone
    assert not host.file("/etc/nginx/sites-enabled/default").exists
    assert _http(host, "http://127.0.0.1:80/")["status"] == 0


# --- layout change, rollback, restart ---------------------------------------------------------

def _recorded_layouts(record):
    """{layout: (unit, target, env_dir, {name: (gpus, numa node, port, tensor parallel size)})}"""
    return dict((l["layout"], (l["unit"], l["target"], l["env_dir"], dict(
        (i["name"], (",".join(str(g) for g in i["gpus"]), i["numa_node"], i["port"], i["tensor_parallel_size"]))
        for i in l["instances"]))) for l in record["layouts"])


def test_vllm_server_recorded_what_it_applied(host):
    f = host.file("/etc/ansible/facts.d/gpu_fleet_vllm_server.fact")
    assert f.user == "root" and f.mode == 0o644
    record = json.loads(f.content_string)
    assert (record["config_dir"], record["venv"], record["service_user"], record["unit_template"]) == (
        "/etc/vllm", "/opt/vllm/venv", "vllm", "/etc/systemd/system/vllm@.service")
    assert record["active_layout"] == "full"   # switched back by side_effect.yml
    assert _recorded_layouts(record) == {
        "full": ("vllm", "vllm.target", "/etc/vllm", FULL),
        "degraded": ("vllm-degraded", "vllm-degraded.target", "/etc/vllm/degraded", DEGRADED)}
    # the switch to the degraded layout recorded it as the active one
    while_degraded = json.loads(host.file("/root/i6-record-degraded.json").content_string)
    assert while_degraded["active_layout"] == "degraded"
    assert _recorded_layouts(while_degraded) == _recorded_layouts(record)


def test_no_gpu_was_ever_held_by_two_servers(host):
    """The stand-in's claim ledger covers the whole scenario: the auto layout, the change to the
    explicit layout, the switch to the degraded layout and back. No claim may find its GPU still
    held by a live server."""
    events = _claims(host)
    claims = [e for e in events if e["event"] == "claim"]
    # auto (6) + explicit (4) + degraded (4) + explicit again (4), at least
    assert len(claims) >= 18, claims
    assert [e for e in events if e["event"] == "conflict"] == []


def test_rollback_switch_served_the_degraded_layout(host):
    record = json.loads(host.file("/root/i6-rollback.json").content_string)
    print("rollback switch (playbooks/rollback.yml, wall time on the host): %.1f s" % record["switch_seconds"])
    assert record["answer_devices"] in [g for g, _n, _p, _t in DEGRADED.values()]
    journal = host.check_output("journalctl --no-pager -o cat -u 'vllm-degraded@*'")
    for name in DEGRADED:
        assert "Started vLLM server instance %s (degraded layout)" % name in journal


def test_switch_on_the_converged_host_wrote_nothing(host):
    """site.yml's tasks had converged the host: the switch's one-call comparison found every file
    the role owns (units, targets, helpers, logging, API key, environment and log files of both
    layouts) as this run renders it, so none of the per-file tasks ran - nor do they on a re-run."""
    record = json.loads(host.file("/root/i6-rollback.json").content_string)
    assert record["owned_files_differ"] == []


def test_switch_back_found_and_repaired_the_drifted_mode(host):
    """side_effect.yml set /etc/vllm/n0-0.env to 0644 between the two switches."""
    record = json.loads(host.file("/root/i6-switch-back.json").content_string)
    assert record == {"differ": ["/etc/vllm/n0-0.env"],
                      "reasons": {"/etc/vllm/n0-0.env": ["mode 0644, must be 0640"]}}
    assert host.file("/etc/vllm/n0-0.env").mode == 0o640


def test_check_mode_switch_reports_its_steps_and_changes_nothing(host):
    """rollback.yml --check --diff on the host serving the full layout: vllm_instances reports the
    stop of the full layout before the start of the degraded one, and nothing happens."""
    inventory = os.environ.get("MOLECULE_INVENTORY_FILE")
    project = os.environ.get("MOLECULE_PROJECT_DIRECTORY")
    if not inventory or not project:
        pytest.fail("run under molecule (MOLECULE_INVENTORY_FILE and MOLECULE_PROJECT_DIRECTORY unset)")
    pids = {n: _show(host, "vllm@%s.service" % n, "MainPID")["MainPID"] for n in FULL}
    extra = {"gpu_fleet_rollback_to": "degraded", "vllm_server_api_key": KEY, "vllm_server_device_policy": "closed",
             "vllm_server_listen_address": "0.0.0.0",
             "vllm_server_layout": [{"gpus": [0, 1], "tensor_parallel_size": 2}, {"gpus": [2]}, {"gpus": [3]},
                                    {"gpus": [4, 5], "tensor_parallel_size": 2}]}
    env = dict(os.environ, ANSIBLE_COLLECTIONS_PATH=os.path.join(project, ".build", "ac"),
               ANSIBLE_FORCE_COLOR="false", ANSIBLE_NOCOLOR="1")
    proc = subprocess.run([os.path.join(project, ".venv", "bin", "ansible-playbook"), "-i", inventory,
                           os.path.join(project, "playbooks", "rollback.yml"), "-e", json.dumps(extra),
                           "--check", "--diff"],
                          capture_output=True, text=True, cwd=project, env=env, timeout=600, check=False)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out
    # the rolling order (worked out by hand: each full instance out, then the degraded ones on its GPUs)
    assert ("+step 1: out, drain, stop vllm@n0-0.service; start, gate, in vllm-degraded@n0-0.service "
            "vllm-degraded@n0-1.service (serving: vllm@n0-1.service vllm@n1-0.service vllm@n1-1.service)\n"
            "+step 2: out, drain, stop vllm@n0-1.service; start, gate, in vllm-degraded@n0-2.service (serving: "
            "vllm@n1-0.service vllm@n1-1.service vllm-degraded@n0-0.service vllm-degraded@n0-1.service)\n"
            "+step 3: out, drain, stop vllm@n1-0.service; start, gate, in vllm-degraded@n1-0.service (serving: "
            "vllm@n1-1.service vllm-degraded@n0-0.service vllm-degraded@n0-1.service vllm-degraded@n0-2.service)\n"
            "+step 4: out, drain, stop vllm@n1-1.service (serving: vllm-degraded@n0-0.service "
            "vllm-degraded@n0-1.service vllm-degraded@n0-2.service vllm-degraded@n1-0.service)\n") in out, out
    assert {n: _show(host, "vllm@%s.service" % n, "MainPID")["MainPID"] for n in FULL} == pids
    assert host.service("vllm.target").is_running and not host.service("vllm-degraded.target").is_running
    assert not any(host.service("vllm-degraded@%s" % n).is_running for n in DEGRADED)


def test_switches_and_restart_under_load_dropped_no_request(host):
    """loadgen.py ran 8 clients (half streaming) through the endpoint from before the rollback to the
    degraded layout until after the switch back and the restart of n0-1 (side_effect.yml)."""
    summary = json.loads(host.file("/root/i18-loadgen.json").content_string)
    log = host.file("/var/log/nginx/gpu-fleet-vllm.access.log").content_string.splitlines()
    retried = [line for line in log if "upstream=" in line and "," in line.split("upstream=")[1].split()[0]]
    print("rolling switch to degraded, back to full, restart of n0-1 under load: sent %d (streamed %d), "
          "failed %d, retried by nginx %d, %.0f s" % (summary["sent"], summary["streamed"], summary["failed"],
                                                      len(retried), summary["stopped"] - summary["started"]))
    assert summary["clients"] == 8 and summary["streamed"] > 0 and summary["plain"] > 0
    assert summary["sent"] > 100, summary
    assert summary["failed"] == 0, summary["failures"][:10]
    assert any("upstream=127.0.0.1:81" in line for line in log)  # the degraded instances answered
    assert retried == [], retried[:10]


def test_restart_playbook_restarted_only_n0_1(host):
    """side_effect.yml noted the main PIDs before and after playbooks/restart.yml (n0-1)."""
    record = json.loads(host.file("/root/i18-restart-pids.json").content_string)
    before, after = record["before"], record["after"]
    assert sorted(before) == sorted(after) == sorted(FULL)
    assert all(int(pid) > 0 for pid in list(before.values()) + list(after.values())), record
    assert [n for n in sorted(before) if before[n] != after[n]] == ["n0-1"], record


def test_kill_9_instance_restarts_while_endpoint_answers(host):
    before = _show(host, "vllm@n0-1.service", "MainPID", "NRestarts")
    pid = int(before["MainPID"])
    assert pid > 0
    host.check_output("kill -9 %d" % pid)
    statuses = []
    deadline = time.time() + 120
    restarted = False
    while time.time() < deadline:
        statuses.append(_completion(host)["status"])
        now = _show(host, "vllm@n0-1.service", "MainPID", "NRestarts", "ActiveState")
        if int(now["NRestarts"]) > int(before["NRestarts"]) and now["ActiveState"] == "active" \
                and _http(host, "http://127.0.0.1:8002/health")["status"] == 200:
            restarted = True
            break
        time.sleep(1)
    assert restarted, "vllm@n0-1 not restarted after kill -9"
    after = _show(host, "vllm@n0-1.service", "MainPID", "NRestarts")
    assert int(after["MainPID"]) != pid
    # one restart: the port wait (ExecStartPre) outlasts the killed server's TIME_WAIT connections,
    # so vLLM 0.6.3's plain bind() does not fail into more restarts (or start-limit-hit)
    assert int(after["NRestarts"]) == int(before["NRestarts"]) + 1
    assert statuses and all(s == 200 for s in statuses), statuses
    assert [e for e in _claims(host) if e["event"] == "conflict"] == []
