# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Raw host state of vllm_monitoring on the simulated a100x6_2numa host (vllm_server scenario).

Expected instances and ports are read from the environment files on the host (/etc/vllm/*.env,
what vllm_server rendered), the GPUs from the simulated `nvidia-smi -L`; the textfile is parsed
here, not with the collector's code. KV-cache levels are planted through the vLLM stand-in's
test-only file /run/gpu-sim/kv-cache-usage/<port>.

During the run sequence the timer is stopped so that no scheduled run slips in between the runs
this file starts (each test starts the service itself); it is started again at the end, and every
planted file is removed and every stopped instance started again (test_vllm_server.py runs next).
"""
import json
import os
import re
import time

import pytest
from testinfra_helpers import env_file, extra_vars, run_playbook

UNIT = "gpu-fleet-monitor"
TEXTFILE = "/var/lib/node_exporter/textfile_collector/gpu_fleet_vllm.prom"
STATE = "/var/lib/gpu-fleet-monitor/state.json"
PLANT = "/run/gpu-sim/kv-cache-usage"
REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
SERIES = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})? (\S+)$')


def _instances(host):
    """name -> port from the environment files vllm_server left on the host (api-key.env, which
    sits next to them, names no port and is no instance)."""
    out = {}
    for path in host.check_output("ls /etc/vllm/*.env").split():
        port = env_file(host, path).get("VLLM_PORT")
        if port:
            out[os.path.basename(path)[:-4]] = int(port)
    assert out, "no instance environment file in /etc/vllm"
    return out


def _textfile(host):
    """{(metric, frozenset(labels)): value} and the raw text."""
    text = host.file(TEXTFILE).content_string
    series = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        name, labels, value = SERIES.match(line).groups()
        pairs = frozenset(re.findall(r'(\w+)="([^"]*)"', labels or ""))
        series[(name, pairs)] = float(value)
    return series, text


def _value(series, metric, **labels):
    hits = [v for (name, pairs), v in series.items() if name == metric and set(labels.items()) <= set(pairs)]
    assert len(hits) == 1, (metric, labels, hits)
    return hits[0]


def _run(host):
    """One collector run, as the timer starts it; returns its journal lines."""
    cursor = host.check_output("journalctl -n 0 --show-cursor -q | tail -1 || true")
    # The timer starts the collector every 10 minutes; these tests start it many times a minute,
    # faster than systemd's default start limit (5 starts in 10 s) allows: clear that count.
    host.run("systemctl reset-failed %s.service" % UNIT)
    start = host.run("systemctl start %s.service" % UNIT)
    status = "systemctl status %s.service; journalctl -u %s.service -n 30" % (UNIT, UNIT)
    assert start.rc == 0, (start.stderr, host.run(status).stdout)
    result = host.check_output("systemctl show -p Result --value %s.service" % UNIT)
    assert result == "success"
    cur = cursor.split("cursor: ", 1)[1] if "cursor: " in cursor else ""
    args = "--after-cursor='%s'" % cur if cur else "-n 50"
    # journald takes the service's stdout stream asynchronously: wait for the run's last line
    for _attempt in range(20):
        lines = host.check_output("journalctl -u %s.service -o json %s" % (UNIT, args)).splitlines()
        if any(m.startswith("gpu-fleet-monitor: layout ") for m in _messages(lines, 6)):
            return lines
        time.sleep(0.5)
    raise AssertionError("no summary line of the run in the journal: %s" % _messages(lines))


def _messages(lines, priority=None):
    out = []
    for line in lines:
        entry = json.loads(line)
        if priority is None or entry.get("PRIORITY") == str(priority):
            out.append(entry.get("MESSAGE", ""))
    return out


def _plant(host, port, usage):
    host.check_output("mkdir -p %s && echo %s > %s/%d" % (PLANT, usage, PLANT, port))


@pytest.fixture(scope="module")
def quiet_timer(host):
    host.check_output("systemctl stop %s.timer" % UNIT)
    yield
    host.run("rm -rf %s" % PLANT)
    host.check_output("systemctl start %s.timer" % UNIT)


def _wait_healthy(host, port, timeout=90):
    deadline = time.time() + timeout
    while time.time() < deadline:
        if host.run("python3 -c \"import urllib.request,sys; urllib.request.urlopen('http://127.0.0.1:%d/health', timeout=2)\"" % port).rc == 0:
            return True
        time.sleep(1)
    return False


# --- the timer ---------------------------------------------------------------------------------

def test_timer_enabled_active_every_10_minutes(host):
    timer = host.service("%s.timer" % UNIT)
    assert timer.is_enabled and timer.is_running
    props = dict(l.split("=", 1) for l in host.check_output(
        "systemctl show %s.timer -p TimersCalendar -p Persistent -p RandomizedDelayUSec" % UNIT).splitlines())
    assert "OnCalendar=*-*-* *:00/10:00" in props["TimersCalendar"]
    assert props["Persistent"] == "yes"
    assert props["RandomizedDelayUSec"] == "30s"
    # systemd's own reading of the schedule: the next two elapses are 10 minutes apart
    out = host.check_output("systemd-analyze calendar --iterations=2 '*-*-* *:00/10:00'")
    nexts = re.findall(r'(?:Next elapse|Iter\. #\d+): \w+ \S+ \d\d:(\d\d):00', out)
    assert len(nexts) >= 2 and (int(nexts[1]) - int(nexts[0])) % 60 == 10


# --- runs ------------------------------------------------------------------------------------------

def test_one_run_writes_one_series_per_instance_and_gpu(host, quiet_timer):
    _run(host)
    series, text = _textfile(host)
    instances = _instances(host)
    assert len(instances) == 4
    for name, port in instances.items():
        assert _value(series, "gpu_fleet_vllm_up", vllm_instance=name, port=str(port)) == 1
        assert _value(series, "gpu_fleet_vllm_kv_cache_level", vllm_instance=name) == 0
    assert len([k for k in series if k[0] == "gpu_fleet_vllm_up"]) == len(instances)
    gpus = [l for l in host.check_output("nvidia-smi -L").splitlines() if l.startswith("GPU ")]
    assert len(gpus) == 6
    for line in gpus:
        index = line.split()[1].rstrip(":")
        uuid = line.split("(UUID: ")[1].rstrip(")")
        assert _value(series, "gpu_fleet_gpu_memory_total_bytes", gpu=index, uuid=uuid) == 81920 * 1048576
        assert _value(series, "gpu_fleet_gpu_ecc_errors", gpu=index, kind="uncorrected", scope="volatile") == 0
    for metric in {k[0] for k in series}:
        assert metric.startswith("gpu_fleet_")
        assert "# HELP %s " % metric in text and "# TYPE %s gauge" % metric in text
    f = host.file(TEXTFILE)
    assert f.mode == 0o644 and f.user == "root"
    assert host.check_output("ls -A %s" % os.path.dirname(TEXTFILE)) == "gpu_fleet_vllm.prom"  # no temp file left


def test_planted_kv_cache_usage_gives_warn(host, quiet_timer):
    instances = _instances(host)
    port = instances["n0-0"]
    _plant(host, port, "0.8")
    journal = _run(host)
    series, _text = _textfile(host)
    assert _value(series, "gpu_fleet_vllm_gpu_cache_usage_perc", vllm_instance="n0-0") == 0.8
    assert _value(series, "gpu_fleet_vllm_kv_cache_level", vllm_instance="n0-0") == 1
    for name in set(instances) - {"n0-0"}:
        assert _value(series, "gpu_fleet_vllm_kv_cache_level", vllm_instance=name) == 0
    warnings = [m for m in _messages(journal, 4) if m.startswith("WARN vLLM instance n0-0 ")]
    assert len(warnings) == 1, _messages(journal)


def test_three_runs_above_alert_give_alert_two_do_not(host, quiet_timer):
    port = _instances(host)["n0-0"]
    _plant(host, port, "0.9")
    for run in (1, 2):
        journal = _run(host)
        series, _text = _textfile(host)
        assert _value(series, "gpu_fleet_vllm_kv_cache_high_runs", vllm_instance="n0-0") == run
        assert _value(series, "gpu_fleet_vllm_kv_cache_level", vllm_instance="n0-0") == 1
        assert not [m for m in _messages(journal, 3) if "ALERT" in m]
    journal = _run(host)
    series, _text = _textfile(host)
    assert _value(series, "gpu_fleet_vllm_kv_cache_level", vllm_instance="n0-0") == 2
    alerts = [m for m in _messages(journal, 3) if m.startswith("ALERT vLLM instance n0-0 ")]
    assert len(alerts) == 1, _messages(journal)
    # the count lives on disk under /var/lib between runs (each run is a new process)
    assert json.loads(host.file(STATE).content_string)["instances"]["full/n0-0"]["high_runs"] == 3
    host.check_output("rm -f %s/%d" % (PLANT, port))


def test_planted_uncorrectable_ecc_errors_are_counted(host, quiet_timer):
    line = [l for l in host.check_output("nvidia-smi -L").splitlines() if l.startswith("GPU 2:")][0]
    uuid = line.split("(UUID: ")[1].rstrip(")")
    fault_tool = os.path.join(REPO, "tests", "simulator", "bin", "gpu-sim-fault")
    host.ansible("ansible.builtin.copy", "src=%s dest=/usr/local/bin/gpu-sim-fault mode=0755" % fault_tool, check=False)
    host.check_output("gpu-sim-fault ecc-uncorrectable 2 3")
    try:
        _run(host)
        series, _text = _textfile(host)
        for scope in ("volatile", "aggregate"):
            assert _value(series, "gpu_fleet_gpu_ecc_errors", gpu="2", uuid=uuid, kind="uncorrected", scope=scope) == 3
        assert _value(series, "gpu_fleet_gpu_ecc_errors", gpu="1", kind="uncorrected", scope="volatile") == 0
    finally:
        host.check_output("gpu-sim-fault clear")


def test_stopped_instance_is_up_0_not_a_failed_run(host, quiet_timer):
    port = _instances(host)["n1-0"]
    host.check_output("systemctl stop vllm@n1-0.service")
    try:
        journal = _run(host)  # asserts Result=success
        series, _text = _textfile(host)
        assert _value(series, "gpu_fleet_vllm_up", vllm_instance="n1-0", port=str(port)) == 0
        assert _value(series, "gpu_fleet_vllm_up", vllm_instance="n0-0") == 1
        assert [m for m in _messages(journal, 4) if m.startswith("vLLM instance n1-0 ") and "unreachable" in m]
    finally:
        # --no-block: the unit first waits for the port's TIME_WAIT connections (vllm-wait-port, up
        # to 60 s) left by the scrapes; the tests below run meanwhile, the last one waits for it.
        host.check_output("systemctl start --no-block vllm@n1-0.service")


# --- the role: refused settings change nothing, --check on a converged host -------------------------

def _playbook(*extra, check=False):
    args = extra_vars(*extra) + (["--check", "--diff"] if check else [])
    proc = run_playbook("molecule/vllm_server/monitoring.yml", *args)
    return proc.returncode, proc.stdout


def _snapshot(host):
    return host.check_output(
        "stat -c '%n %Y %s %a' /etc/gpu-fleet/monitoring.json /etc/systemd/system/gpu-fleet-monitor.* "
        "/usr/local/libexec/gpu-fleet/gpu-fleet-monitor; systemctl is-enabled gpu-fleet-monitor.timer; "
        "systemctl is-active gpu-fleet-monitor.timer || true")


def test_warn_above_alert_is_refused_and_changes_nothing(host):
    host.check_output("systemctl start %s.timer" % UNIT)  # the run sequence above had stopped it
    before = _snapshot(host)
    rc, out = _playbook({"vllm_monitoring_warn_threshold": 0.9, "vllm_monitoring_alert_threshold": 0.85})
    assert rc != 0
    assert "Traceback" not in out
    assert "warn must" in out and "vllm_monitoring_warn_threshold=0.9" in out
    assert re.search(r"host [\w.-]+: KV-cache thresholds", out), out
    assert _snapshot(host) == before


def test_check_mode_on_the_converged_host_changes_nothing(host):
    host.check_output("systemctl start %s.timer" % UNIT)
    rc, out = _playbook(check=True)
    assert rc == 0, out
    recap = [l for l in out.splitlines() if re.match(r"^\S+\s+: ok=", l)][-1]
    assert "changed=0" in recap, out


def test_stopped_instance_serves_again(host):
    """Last test of this file: the instance stopped above is back (test_vllm_server.py runs next)."""
    port = _instances(host)["n1-0"]
    assert _wait_healthy(host, port, timeout=150)
    assert host.service("vllm@n1-0.service").is_running
