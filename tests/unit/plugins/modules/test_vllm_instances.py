# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_instances and owned_files run as Ansible runs them (subprocess, args file).

vllm_instances calls ``systemctl``: here a recording stand-in first on PATH answers
``list-units`` and ``show`` from files planted in tmp_path and logs every call (argv, LC_ALL), so
the tests see which calls a run makes and in which order. The molecule scenario vllm_server runs
the module against real systemd. owned_files reads real files planted in tmp_path."""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import grp
import hashlib
import http.server
import json
import os
import pwd
import socket
import sys
import threading

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import run_module


STANDIN = r'''#!%s
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "calls.jsonl"), "a") as log:
    log.write(json.dumps({"argv": sys.argv[1:], "lc_all": os.environ.get("LC_ALL")}) + "\n")
verb = sys.argv[1]
fail = os.path.join(here, "fail-" + verb)
if os.path.exists(fail):
    sys.stderr.write(open(fail).read())
    sys.exit(5)
answer = os.path.join(here, verb + ".out")
if os.path.exists(answer):
    sys.stdout.write(open(answer).read())
'''

# the full layout of the molecule vllm_server scenario, running; the degraded one installed
LIST_UNITS = ("vllm-degraded@n0-0.service loaded inactive dead    vLLM server instance n0-0 (degraded layout)\n"
              "vllm@n0-0.service          loaded active   running vLLM server instance n0-0\n"
              "vllm@n1-0.service          loaded active   running vLLM server instance n1-0\n")
SHOW = ("Id=vllm.target\nActiveState=active\nUnitFileState=enabled\n\n"
        "Id=vllm-degraded.target\nActiveState=inactive\nUnitFileState=disabled\n")


def plant(tmp_path, list_units=LIST_UNITS, show=SHOW, fail=None):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    script = bindir / "systemctl"
    script.write_text(STANDIN % sys.executable)
    script.chmod(0o755)
    (bindir / "list-units.out").write_text(list_units)
    (bindir / "show.out").write_text(show)
    if fail:
        (bindir / ("fail-" + fail)).write_text("Job for vllm@n0-0.service failed.\n")
    for rel in ("etc/vllm/degraded",):
        (tmp_path / rel).mkdir(parents=True)
    for name in ("api-key.env", "n0-0.env", "n1-0.env", "n1-9.env"):
        (tmp_path / "etc/vllm" / name).write_text("VLLM_PORT=1\n")
    (tmp_path / "etc/vllm/degraded/n0-0.env").write_text("VLLM_PORT=2\n")
    return bindir


def layouts(tmp_path):
    return [{"kind": "full", "unit": "vllm", "target": "vllm.target", "env_dir": str(tmp_path / "etc/vllm"),
             "instances": [{"name": "n0-0", "gpus": [0, 1], "port": 8001}, {"name": "n1-0", "gpus": [3]}]},
            {"kind": "degraded", "unit": "vllm-degraded", "target": "vllm-degraded.target",
             "env_dir": str(tmp_path / "etc/vllm/degraded"), "instances": [{"name": "n0-0", "gpus": [0]}]}]


def calls(bindir):
    log = bindir / "calls.jsonl"
    return [json.loads(line) for line in log.read_text().splitlines()] if log.exists() else []


def verbs(bindir):
    return [c["argv"][0] for c in calls(bindir)]


# --- vllm_instances: check mode -------------------------------------------------------------------

def test_check_mode_reads_the_units_and_reports_the_switch_without_doing_it(tmp_path):
    bindir = plant(tmp_path)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts(tmp_path), "active": "degraded"},
                         check_mode=True, diff=True, bindir=bindir)
    assert rc == 0, res
    assert res["changed"] is True
    assert res["stopped"] == ["vllm@n0-0.service", "vllm@n1-0.service", "vllm.target"]
    assert res["removed"] == [str(tmp_path / "etc/vllm/n1-9.env")]
    assert res["started"] == ["vllm-degraded@n0-0.service", "vllm-degraded.target"]
    assert (res["enabled"], res["disabled"], res["reset_failed"]) == (["vllm-degraded.target"], ["vllm.target"], [])
    assert res["diff"]["after"].splitlines() == [
        "stop vllm@n0-0.service vllm@n1-0.service vllm.target",
        "remove " + str(tmp_path / "etc/vllm/n1-9.env"),
        "start vllm-degraded@n0-0.service vllm-degraded.target",
        "enable vllm-degraded.target",
        "disable vllm.target"]
    # only the two reads, with the C locale; nothing stopped, nothing removed
    assert [c["argv"] for c in calls(bindir)] == [
        ["list-units", "--all", "--plain", "--no-legend", "--full", "vllm@*.service", "vllm-degraded@*.service"],
        ["show", "-p", "Id", "-p", "ActiveState", "-p", "UnitFileState", "vllm.target", "vllm-degraded.target"]]
    assert {c["lc_all"] for c in calls(bindir)} == {"C"}
    assert (tmp_path / "etc/vllm/n1-9.env").exists()


def test_converged_host_changes_nothing_and_runs_only_the_reads(tmp_path):
    bindir = plant(tmp_path)
    (tmp_path / "etc/vllm/n1-9.env").unlink()
    for check_mode in (True, False):
        rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts(tmp_path), "active": "full"},
                             check_mode=check_mode, bindir=bindir)
        assert rc == 0 and res["changed"] is False, res
        assert res["units"] == {"vllm-degraded@n0-0.service": "inactive", "vllm@n0-0.service": "active",
                                "vllm@n1-0.service": "active"}
    assert verbs(bindir) == ["list-units", "show"] * 2


# --- vllm_instances: applying -----------------------------------------------------------------------

def test_switch_stops_in_one_call_before_the_one_start_call(tmp_path):
    bindir = plant(tmp_path)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts(tmp_path), "active": "degraded",
                                                      "daemon_reload": True}, bindir=bindir)
    assert rc == 0 and res["changed"] is True, res
    assert [c["argv"] for c in calls(bindir)][2:] == [
        ["daemon-reload"],
        ["stop", "vllm@n0-0.service", "vllm@n1-0.service", "vllm.target"],
        ["start", "vllm-degraded@n0-0.service", "vllm-degraded.target"],
        ["disable", "vllm.target"],
        ["enable", "vllm-degraded.target"]]
    assert not (tmp_path / "etc/vllm/n1-9.env").exists()
    assert (tmp_path / "etc/vllm/api-key.env").exists()


def test_changed_env_file_restarts_its_instance(tmp_path):
    bindir = plant(tmp_path)
    (tmp_path / "etc/vllm/n1-9.env").unlink()
    rc, res = run_module(tmp_path, "vllm_instances", {
        "layouts": layouts(tmp_path), "active": "full",
        "changed_env_files": [str(tmp_path / "etc/vllm/n1-0.env")]}, bindir=bindir)
    assert rc == 0 and res["changed"] is True, res
    assert [c["argv"] for c in calls(bindir)][2:] == [["stop", "vllm@n1-0.service"], ["start", "vllm@n1-0.service"]]


# --- vllm_instances: strategy rolling ---------------------------------------------------------------

def rolling_layouts(tmp_path):
    full, degraded = layouts(tmp_path)
    full["instances"] = [{"name": "n0-0", "gpus": [0, 1], "port": 8001, "cuda_visible_devices": "0,1"},
                         {"name": "n1-0", "gpus": [3], "port": 8002, "cuda_visible_devices": "3"}]
    degraded["instances"] = [{"name": "n0-0", "gpus": [0], "port": 8101, "cuda_visible_devices": "0"}]
    return [full, degraded]


def test_rolling_switch_returns_the_steps_and_stops_or_starts_nothing_itself(tmp_path):
    bindir = plant(tmp_path)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": rolling_layouts(tmp_path), "active": "degraded",
                                                      "strategy": "rolling", "health_timeout": 0}, diff=True, bindir=bindir)
    assert rc == 0 and res["changed"] is True, res
    assert res["zero_drop"] is True
    assert res["steps"] == [
        {"out": ["vllm@n0-0.service"], "out_ports": [8001], "start": ["vllm-degraded@n0-0.service"],
         "start_names": ["n0-0"], "start_ports": [8101], "serving_ports": [8002], "serving_after_ports": [8002, 8101]},
        {"out": ["vllm@n1-0.service"], "out_ports": [8002], "start": [], "start_names": [], "start_ports": [],
         "serving_ports": [8101], "serving_after_ports": [8101]}]
    assert res["diff"]["after"].splitlines()[1] == "step 2: out, drain, stop vllm@n1-0.service (serving: vllm-degraded@n0-0.service)"
    # the two reads and nothing else; the stale file is removed
    assert [c["argv"][:2] for c in calls(bindir)] == [["list-units", "--all"], ["show", "-p"]]
    assert not (tmp_path / "etc/vllm/n1-9.env").exists()


PORTS = {"vllm@n0-0.service": 8001, "vllm@n1-0.service": 8002}


def plant_started(tmp_path, visible, ports=None):
    """The copies of the environment files the running units made at start (their RuntimeDirectory)."""
    for unit, devices in visible.items():
        path = tmp_path / "run" / unit[:-len(".service")]
        path.mkdir(parents=True)
        (path / "started.env").write_text("# started\nCUDA_VISIBLE_DEVICES=%s\nVLLM_PORT=%d\n"
                                          % (devices, (ports or PORTS)[unit]))
    return str(tmp_path / "run")


def test_rolling_port_change_keeps_the_running_instances_on_the_ports_they_listen_on(tmp_path):
    # vllm_server_base_port moved 8001 -> 9001: the running n1-0 still listens on 8002 until its own step
    bindir = plant(tmp_path)
    started = plant_started(tmp_path, {"vllm@n0-0.service": "0,1", "vllm@n1-0.service": "3"})
    layouts = rolling_layouts(tmp_path)
    layouts[0]["instances"][0]["port"], layouts[0]["instances"][1]["port"] = 9001, 9002
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts, "active": "full", "strategy": "rolling", "health_timeout": 0,
                                                      "restart_all": True, "started_dir": started}, bindir=bindir)
    assert rc == 0, res
    assert [(s["out_ports"], s["start_ports"], s["serving_ports"], s["serving_after_ports"]) for s in res["steps"]] == [
        ([8001], [9001], [8002], [8002, 9001]),
        ([8002], [9002], [9001], [9001, 9002])]


def test_rolling_restart_reads_the_devices_each_unit_started_with(tmp_path):
    bindir = plant(tmp_path)
    started = plant_started(tmp_path, {"vllm@n0-0.service": "0,1", "vllm@n1-0.service": "3"})
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": rolling_layouts(tmp_path), "active": "full",
                                                      "strategy": "rolling", "health_timeout": 0, "restart_all": True,
                                                      "started_dir": started}, bindir=bindir)
    assert rc == 0, res
    assert res["zero_drop"] is True
    assert [(s["out"], s["start"], s["serving_ports"]) for s in res["steps"]] == [
        (["vllm@n0-0.service"], ["vllm@n0-0.service"], [8002]),
        (["vllm@n1-0.service"], ["vllm@n1-0.service"], [8001])]


def test_rolling_restart_of_instances_started_on_unknown_devices_is_not_zero_drop(tmp_path):
    # n1-0 started on GPU 0 (an older plan) and n0-0's copy is missing: both hold every GPU, so the
    # last one serving would have to stop before anything starts
    bindir = plant(tmp_path)
    started = plant_started(tmp_path, {"vllm@n1-0.service": "0"})
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": rolling_layouts(tmp_path), "active": "full",
                                                      "strategy": "rolling", "health_timeout": 0, "restart_all": True,
                                                      "started_dir": started}, bindir=bindir)
    assert rc == 0, res
    assert res["zero_drop"] is False and res["steps"] == []
    assert "no rolling order keeps an instance serving" in json.dumps(res.get("warnings")), sorted(res)
    assert [c["argv"] for c in calls(bindir)][2:] == [["stop", "vllm@n0-0.service", "vllm@n1-0.service"],
                                                      ["start", "vllm@n0-0.service", "vllm@n1-0.service"]]


def test_restart_of_a_name_the_active_layout_does_not_plan_is_refused_before_any_call(tmp_path):
    bindir = plant(tmp_path)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": rolling_layouts(tmp_path), "active": "full",
                                                      "strategy": "rolling", "health_timeout": 0, "restart": ["n7-0"]}, bindir=bindir)
    assert rc != 0
    assert res["msg"] == ("vllm_instances: restart names n7-0, which the active layout 'full' does not plan "
                          "(its instances: n0-0, n1-0); nothing was changed")
    assert calls(bindir) == []


def test_failed_start_fails_with_rc_stdout_stderr_and_what_was_done(tmp_path):
    bindir = plant(tmp_path, fail="start")
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts(tmp_path), "active": "degraded"},
                         bindir=bindir)
    assert rc == 1 and res["failed"] is True
    assert res["msg"] == ("systemctl start vllm-degraded@n0-0.service vllm-degraded.target failed (rc 5): "
                          "Job for vllm@n0-0.service failed.")
    assert (res["rc"], res["stdout"], res["stderr"]) == (5, "", "Job for vllm@n0-0.service failed.\n")
    assert res["stopped"] == ["vllm@n0-0.service", "vllm@n1-0.service", "vllm.target"]
    assert res["started"] == []


# --- vllm_instances: arguments --------------------------------------------------------------------

def test_missing_required_arguments_are_named(tmp_path):
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts(tmp_path)})
    assert rc == 1 and res["msg"] == "missing required arguments: active"
    rc, res = run_module(tmp_path, "vllm_instances", {"active": "full", "layouts": [{"kind": "full", "unit": "vllm"}]})
    assert rc == 1 and "missing required arguments: env_dir, target found in layouts" in res["msg"], res["msg"]


def test_instance_without_gpus_list_is_refused_before_any_systemctl_call(tmp_path):
    bindir = plant(tmp_path)
    bad = layouts(tmp_path)
    bad[0]["instances"] = [{"name": "n0-0", "gpus": ["zero"]}]
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": bad, "active": "full"}, bindir=bindir)
    assert rc == 1
    assert res["msg"].startswith("vllm_instances: layout 'full': every instance needs a 'name' and a list of "
                                 "integer 'gpus' (as vllm_layout plans them); got [{'name': 'n0-0', 'gpus': ['zero']}]")
    assert calls(bindir) == []


def test_unknown_active_layout_and_gpu_planned_twice_fail_cleanly(tmp_path):
    bindir = plant(tmp_path)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": layouts(tmp_path), "active": "spare"}, bindir=bindir)
    assert rc == 1 and res["msg"] == "vllm_instances: no layout named 'spare' (layouts: full, degraded)"
    twice = layouts(tmp_path)
    twice[0]["instances"][1]["gpus"] = [1]
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": twice, "active": "full"}, bindir=bindir)
    assert rc == 1
    assert res["msg"] == ("vllm_instances: layout 'full': GPU 1 is planned for both vllm@n0-0.service and "
                          "vllm@n1-0.service, and two servers never hold one GPU: give each instance its own GPUs")
    # only reads happened
    assert set(verbs(bindir)) == {"list-units", "show"}


# --- owned_files ------------------------------------------------------------------------------------

def _me():
    return pwd.getpwuid(os.getuid()).pw_name, grp.getgrgid(os.getgid()).gr_name


def test_owned_files_names_what_differs_and_why(tmp_path):
    user, group = _me()
    same = tmp_path / "same.env"
    same.write_text("A=1\n")
    same.chmod(0o640)
    drifted = tmp_path / "drifted.env"
    drifted.write_text("A=1\n")
    drifted.chmod(0o644)
    edited = tmp_path / "edited.env"
    edited.write_text("A=2\n")
    edited.chmod(0o640)
    log = tmp_path / "n0-0.log"
    log.write_text("anything\n")
    log.chmod(0o640)
    (tmp_path / "dir").mkdir()
    (tmp_path / "dir").chmod(0o750)
    (tmp_path / "dir2").mkdir()
    (tmp_path / "present.env").write_text("")
    sha = hashlib.sha1(b"A=1\n").hexdigest()
    files = [{"path": str(p), "owner": user, "group": group, "mode": "0640"} for p in (same, drifted, edited, log)]
    files += [{"path": str(tmp_path / "dir"), "state": "directory", "owner": user, "mode": "0750"},
              {"path": str(tmp_path / "missing.env"), "mode": "0640"},
              {"path": str(tmp_path / "present.env"), "state": "absent"},
              {"path": str(tmp_path / "gone.env"), "state": "absent"},
              {"path": str(tmp_path / "dir2"), "state": "file"}]
    checksums = {str(p): sha for p in (same, drifted, edited, tmp_path / "missing.env")}
    for check_mode in (False, True):
        rc, res = run_module(tmp_path, "owned_files", {"files": files, "checksums": checksums}, check_mode=check_mode)
        assert rc == 0 and res["changed"] is False, res
        assert res["differ"] == [str(drifted), str(edited), str(tmp_path / "missing.env"),
                                 str(tmp_path / "present.env"), str(tmp_path / "dir2")]
        assert res["reasons"] == {str(drifted): ["mode 0644, must be 0640"], str(edited): ["content differs"],
                                  str(tmp_path / "missing.env"): ["missing"],
                                  str(tmp_path / "present.env"): ["present, must be absent"],
                                  str(tmp_path / "dir2"): ["is a directory, must be a file"]}
        # the checksums never reach the output
        assert sha not in json.dumps(res)


def test_owned_files_refuses_a_mode_that_is_not_octal(tmp_path):
    rc, res = run_module(tmp_path, "owned_files", {"files": [{"path": str(tmp_path), "mode": "rw-r"}]})
    assert rc == 1 and res["msg"] == "owned_files: mode 'rw-r' is not an octal number such as '0640'"


# --- the /health probe: only an instance that answers counts as serving -----------------------------

class _Health(threading.Thread):
    """A real HTTP server on 127.0.0.1 answering GET /health with ``status`` (a vLLM still loading its
    model does not answer at all; a wedged one may answer 500)."""

    def __init__(self, status):
        super().__init__(daemon=True)
        code = status

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self):  # noqa: N802 (http.server's name)
                self.send_response(code if self.path == "/health" else 404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, *args):
                pass

        self.server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]

    def run(self):
        self.server.serve_forever()


@pytest.fixture
def health():
    servers = []

    def start(status):
        server = _Health(status)
        server.start()
        servers.append(server)
        return server.port
    yield start
    for server in servers:
        server.server.shutdown()
        server.server.server_close()


def _restart_n0_0(tmp_path, n1_status, health):
    bindir = plant(tmp_path)
    ports = {"vllm@n0-0.service": health(200), "vllm@n1-0.service": health(n1_status)}
    started = plant_started(tmp_path, {"vllm@n0-0.service": "0,1", "vllm@n1-0.service": "3"}, ports)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": rolling_layouts(tmp_path), "active": "full",
                                                      "strategy": "rolling", "restart": ["n0-0"],
                                                      "started_dir": started}, bindir=bindir)
    assert rc == 0, res
    return res, ports


def test_restart_beside_a_healthy_instance_is_rolling(tmp_path, health):
    res, ports = _restart_n0_0(tmp_path, 200, health)
    assert res["zero_drop"] is True, res
    assert [(s["out"], s["serving_ports"]) for s in res["steps"]] == [
        (["vllm@n0-0.service"], [ports["vllm@n1-0.service"]])]


def test_an_active_instance_whose_health_fails_does_not_count_as_serving(tmp_path, health):
    # systemd says active for both; n1-0 answers 503 (still loading): restarting n0-0 would leave the
    # endpoint with nothing that serves, so the plan says so and the run warns
    res, _ports = _restart_n0_0(tmp_path, 503, health)
    assert res["zero_drop"] is False and res["steps"] == [], res
    assert res["zero_drop_reason"].startswith("vllm@n0-0.service is the only instance serving"), res
    assert "no rolling order keeps an instance serving" in json.dumps(res.get("warnings"))


def test_no_instance_answering_its_probe_warns_instead_of_a_silent_plain_switch(tmp_path):
    # both units are active, nothing listens on the ports they started with (a crashed or wedged
    # server, or a probe that failed): said and warned, never taken for "nothing serves yet"
    closed = []
    for _n in range(2):
        sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        sock.bind(("127.0.0.1", 0))
        closed.append(sock.getsockname()[1])
        sock.close()
    bindir = plant(tmp_path)
    ports = {"vllm@n0-0.service": closed[0], "vllm@n1-0.service": closed[1]}
    started = plant_started(tmp_path, {"vllm@n0-0.service": "0,1", "vllm@n1-0.service": "3"}, ports)
    rc, res = run_module(tmp_path, "vllm_instances", {"layouts": rolling_layouts(tmp_path), "active": "full",
                                                      "strategy": "rolling", "restart": ["n0-0"], "health_timeout": 1,
                                                      "started_dir": started}, bindir=bindir)
    assert rc == 0, res
    assert res["zero_drop"] is False and res["zero_drop_reason"].startswith(
        "no active instance answers /health (vllm@n0-0.service, vllm@n1-0.service)"), res
    assert "no rolling order keeps an instance serving" in json.dumps(res.get("warnings"))
