# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""docs/prometheus/vllm-alerts.yml agrees with what the vllm_monitoring collector writes and with
the role's defaults: every metric a rule's expr names is one the collector writes (with the label
names and values it writes), and the thresholds are roles/vllm_monitoring/defaults/main.yml's."""
import importlib.util
import os
import re

import pytest
import yaml

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
RULES = os.path.join(REPO, "docs", "prometheus", "vllm-alerts.yml")
DEFAULTS = os.path.join(REPO, "roles", "vllm_monitoring", "defaults", "main.yml")
COLLECTOR = os.path.join(REPO, "roles", "vllm_monitoring", "files", "gpu_fleet_monitor.py")

# PromQL words that are not metric names (functions, operators, modifiers).
PROMQL = {"time", "delta", "rate", "increase", "max", "min", "sum", "avg", "count", "by", "without",
          "and", "or", "unless", "on", "ignoring", "bool", "offset", "absent", "max_over_time",
          "min_over_time", "avg_over_time", "changes", "resets", "group_left", "group_right"}


def _load(path):
    with open(path) as handle:
        return yaml.safe_load(handle)


def _collector():
    spec = importlib.util.spec_from_file_location("gpu_fleet_monitor", COLLECTOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


RULE_LIST = [r for g in _load(RULES)["groups"] for r in g["rules"]]
BY_NAME = dict((r["alert"], r) for r in RULE_LIST)


@pytest.fixture(scope="module")
def written():
    """metric name -> {label: set of values} from a textfile the collector renders for a host with
    every kind of series (an up and a down instance, a GPU with ECC counters)."""
    mon = _collector()
    cfg = mon.validate_config({"textfile_dir": "/x", "state_file": "/x/s"})
    results = [dict(name="n0-0", layout="full", port=8001, up=True, usage=0.8, source="vllm:kv_cache_usage_perc", level=1,
                    high_runs=1),
               dict(name="n1-0", layout="full", port=8002, up=False, usage=None, level=None, high_runs=0)]
    gpus = mon.parse_gpu_query("0, GPU-x, 1, 2, 3, 4, 5, 6\n")
    text = mon.render_textfile(results, gpus, True, cfg, 1)
    out = {}
    for name, labels, _value in mon.parse_prometheus_text(text):
        entry = out.setdefault(name, {})
        for key, value in labels.items():
            entry.setdefault(key, set()).add(value)
    return out


def _selectors(expr):
    """(metric, {label: value}) for every metric selector in a PromQL expression."""
    found = []
    for match in re.finditer(r'([a-zA-Z_:][a-zA-Z0-9_:]*)\s*(\{[^}]*\})?', re.sub(r'\[[^\]]*\]', '', expr)):
        word = match.group(1)
        if word in PROMQL or re.match(r'^[0-9]', word):
            continue
        after = expr[match.end():].lstrip()
        if after.startswith("(") and not match.group(2):
            continue  # a function call
        labels = dict(re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)\s*=\s*"([^"]*)"', match.group(2) or ""))
        found.append((word, labels))
    return found


def test_rules_found():
    assert len(RULE_LIST) >= 6
    for rule in RULE_LIST:
        assert rule["labels"]["severity"] in ("warning", "critical")
        assert rule["annotations"]["summary"]


@pytest.mark.parametrize("alert", sorted(BY_NAME))
def test_rule_names_only_written_metrics_and_labels(alert, written):
    selectors = _selectors(BY_NAME[alert]["expr"])
    assert selectors, BY_NAME[alert]["expr"]
    for metric, labels in selectors:
        assert metric in written, "%s: %s is not written by the collector" % (alert, metric)
        for key, value in labels.items():
            assert key in written[metric], "%s: %s has no label %s" % (alert, metric, key)
            assert value in written[metric][key], "%s: %s{%s} is never %r" % (alert, metric, key, value)


def test_annotations_name_only_written_labels(written):
    every_label = set(["instance", "job"])  # added by the scrape of node_exporter
    for labels in written.values():
        every_label |= set(labels)
    for rule in RULE_LIST:
        for text in rule["annotations"].values():
            for label in re.findall(r'\$labels\.([a-zA-Z_]+)', text):
                assert label in every_label, (rule["alert"], label)


def _number(expr, pattern):
    match = re.search(pattern, expr)
    assert match, (pattern, expr)
    return float(match.group(1))


def test_thresholds_are_the_role_defaults():
    defaults = _load(DEFAULTS)
    warn = _number(BY_NAME["VllmKvCacheHigh"]["expr"], r'gpu_fleet_vllm_gpu_cache_usage_perc\s*>=\s*([0-9.]+)')
    assert warn == defaults["vllm_monitoring_warn_threshold"]
    runs = _number(BY_NAME["VllmKvCacheFull"]["expr"], r'gpu_fleet_vllm_kv_cache_high_runs\s*>=\s*([0-9]+)')
    assert runs == defaults["vllm_monitoring_alert_consecutive_runs"]
    stale = _number(BY_NAME["GpuFleetMonitorStale"]["expr"], r'>\s*([0-9]+)\s*$')
    assert stale == 3 * 60 * defaults["vllm_monitoring_interval_minutes"]
    # the alert threshold itself is applied by the collector; the rule's text must say the same
    assert "%d %%" % round(defaults["vllm_monitoring_alert_threshold"] * 100) in BY_NAME["VllmKvCacheFull"]["annotations"]["summary"]


def test_the_role_readme_points_at_the_rules():
    with open(os.path.join(REPO, "roles", "vllm_monitoring", "README.md")) as handle:
        assert "docs/prometheus/vllm-alerts.yml" in handle.read()
