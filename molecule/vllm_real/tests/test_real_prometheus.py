# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_real: a real Prometheus (Debian's) scrapes the real node_exporter, whose textfile collector
reads the collection's collector file, and both real vLLM instances; it loads the shipped rule file
unchanged (converge.yml). The verifier asks Prometheus's HTTP API. The alert fires from REAL KV-cache
usage: long requests fill a deliberately small cache (group_vars) while the collector runs by hand.
The documented series come from roles/vllm_monitoring/README.md's metrics table, not from a list
kept here."""
import json
import os
import re
import time
import urllib.parse

from testinfra_helpers import http, project, wait_until

PROM = "http://127.0.0.1:9090"
FULL = ("n0-0", "n0-1")
TEXTFILE = "/var/lib/node_exporter/textfile_collector/gpu_fleet_vllm.prom"
MAX_MODEL_LEN = 1024  # group_vars/gpu_hosts.yml


def _api(host, path, **params):
    answer = http(host, PROM + path + ("?" + urllib.parse.urlencode(params) if params else ""))
    assert answer["status"] == 200, answer
    body = json.loads(answer["body"])
    assert body["status"] == "success", body
    return body["data"]


def _query(host, expr):
    return _api(host, "/api/v1/query", query=expr)["result"]


def _documented():
    """(metric, labels) of every row of the README's metrics table ("same" = the row above)."""
    path = os.path.join(project(), "roles", "vllm_monitoring", "README.md")
    with open(path) as handle:
        text = handle.read()
    table = text.split("## Metrics", 1)[1].split("\n\n", 2)[1]
    rows, base = [], []
    for line in table.splitlines()[2:]:
        names_cell, labels_cell = [c.strip() for c in line.strip("|").split("|")[:2]]
        names = re.findall(r"`([^`]+)`", names_cell)
        found = re.findall(r"`([a-z_]+)`", labels_cell)
        if labels_cell.startswith("same"):
            labels = base + found        # "same, and `source`": the first row's, plus these
        else:
            labels = base = found
        first = names[0]
        for name in names:
            if name.startswith("..._"):
                # `..._alert_threshold` beside `gpu_fleet_vllm_kv_cache_warn_threshold`: same stem
                stem = first[:first.rindex("_", 0, first.rindex("_"))]
                name = stem + name[3:]
            rows.append((name, tuple(labels)))
    assert len(rows) >= 14, rows
    return rows


def _fresh_scrape(host):
    """Run the collector now, then wait for two scrapes of node_exporter (5 s interval)."""
    host.check_output("systemctl reset-failed gpu-fleet-monitor.service; systemctl start gpu-fleet-monitor.service")
    time.sleep(12)


def test_prometheus_scrapes_node_exporter_and_both_instances(host):
    """The targets of the loaded configuration (not `up`, which still holds, for 5 minutes, the
    samples of the package's default configuration Prometheus ran with before converge)."""
    def targets():
        active = _api(host, "/api/v1/targets", state="active")["activeTargets"]
        return {(t["labels"]["job"], t["labels"]["instance"], t["labels"].get("layout", ""),
                 t["labels"].get("vllm_instance", "")): t["health"] for t in active}

    expected = {("node", "127.0.0.1:9100", "", ""): "up",
                ("vllm", "127.0.0.1:8001", "full", "n0-0"): "up", ("vllm", "127.0.0.1:8002", "full", "n0-1"): "up",
                # planned, not serving: the full layout is active
                ("vllm", "127.0.0.1:8101", "degraded", "n0-0"): "down"}
    # a target not scraped yet since the last restart is "unknown": wait for a scrape (5 s)
    wait_until(lambda: targets() == expected, 30, "Prometheus's active targets %s" % expected, interval=2)
    assert host.socket("tcp://127.0.0.1:9090").is_listening and not host.socket("tcp://0.0.0.0:9090").is_listening


def test_every_documented_gpu_fleet_series_with_its_labels(host):
    _fresh_scrape(host)
    missing, unlabelled = [], []
    for name, labels in _documented():
        # this configuration's node_exporter target only: the package's default configuration, which
        # Prometheus ran before converge, scraped localhost:9100 as job node too (5 minutes of lookback)
        series = _query(host, '%s{job="node", instance="127.0.0.1:9100"}' % name)
        if not series:
            missing.append(name)
            continue
        for one in series:
            if not set(labels) <= set(one["metric"]):
                unlabelled.append((name, labels, one["metric"]))
        if "vllm_instance" in labels:
            seen = {one["metric"]["vllm_instance"] for one in series}
            assert set(FULL) <= seen, (name, seen)
    assert missing == [] and unlabelled == [], (missing, unlabelled[:5])


def test_real_vllm_series_of_both_instances(host):
    for name in FULL:
        series = _query(host, 'count({job="vllm", vllm_instance="%s", __name__=~"vllm:.+"})' % name)
        assert series and int(series[0]["value"][1]) >= 10, (name, series)
        kv = _query(host, 'vllm:kv_cache_usage_perc{vllm_instance="%s"}' % name)
        assert kv and kv[0]["metric"]["model_name"] == "tiny-qwen2", kv


def test_shipped_rules_are_loaded_unchanged(host):
    shipped = open(os.path.join(project(), "docs", "prometheus", "vllm-alerts.yml")).read()
    assert host.file("/etc/prometheus/gpu-fleet-vllm-alerts.yml").content_string == shipped
    loaded = {rule["name"] for group in _api(host, "/api/v1/rules")["groups"] for rule in group["rules"]}
    assert {"VllmKvCacheHigh", "VllmInstanceDown", "GpuFleetMonitorStale"} <= loaded, loaded


def _kv_alerts(host, instance):
    return [a for a in _api(host, "/api/v1/alerts")["alerts"]
            if a["labels"]["alertname"] == "VllmKvCacheHigh" and a["labels"].get("vllm_instance") == instance]


def test_kv_cache_alert_fires_from_real_usage_and_resolves(host):
    """REAL usage, not planted input: sixteen long requests overfill n0-0's small cache (vLLM's own
    count of its tokens, from its log), the collector runs by hand until it reads >= 0.75."""
    journal = host.check_output("journalctl --no-pager -o cat -u vllm@n0-0.service")
    tokens = int(re.findall(r"KV cache size: ([0-9,]+) tokens", journal)[-1].replace(",", ""))
    prompt = tokens // 5
    assert 4 * (MAX_MODEL_LEN - 8) > tokens and prompt < MAX_MODEL_LEN // 2, tokens
    assert _kv_alerts(host, "n0-0") == []
    host.check_output("systemctl stop gpu-fleet-monitor.timer")
    try:
        out = host.check_output(
            "/usr/bin/python3 /usr/local/bin/gpu-fleet-kv-fill --port 8001 --model tiny-qwen2 --instance n0-0 --vocab 1000 "
            "--requests 16 --prompt-tokens %d --max-tokens %d --textfile %s --level 0.75 "
            "--collect systemctl start gpu-fleet-monitor.service" % (prompt, MAX_MODEL_LEN - prompt - 8, TEXTFILE))
        fill = json.loads(out)
        print("vllm_real KV fill: cache %d tokens, %s" % (tokens, fill))
        assert fill["peak"] is not None and fill["peak"] >= 0.75, fill
        assert all(r["status"] == 200 for r in fill["requests"]), fill
        firing = wait_until(lambda: [a for a in _kv_alerts(host, "n0-0") if a["state"] == "firing"], 60,
                            "VllmKvCacheHigh firing for n0-0", interval=2)
        assert firing[0]["labels"]["severity"] == "warning" and float(firing[0]["value"]) >= 0.75, firing
        # the requests are done: the next collector run reads the idle cache and the alert resolves
        host.check_output("systemctl start gpu-fleet-monitor.service")
        wait_until(lambda: _kv_alerts(host, "n0-0") == [], 60, "VllmKvCacheHigh of n0-0 resolved", interval=2)
    finally:
        host.check_output("systemctl start gpu-fleet-monitor.timer")
