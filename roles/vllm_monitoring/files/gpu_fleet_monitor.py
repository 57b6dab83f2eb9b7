# -*- coding: utf-8 -*-
# Managed by gpu_fleet.vllm_serving.vllm_monitoring (roles/vllm_monitoring/files/gpu_fleet_monitor.py).
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Health collector of a vLLM serving host, run by gpu-fleet-monitor.timer.

    python3 gpu-fleet-monitor --config /etc/gpu-fleet/monitoring.json

Per instance of the active vLLM layout (the environment files vllm_server renders, one per
instance, VLLM_PORT inside) it reads GET /metrics (the KV-cache usage gauge, a 0-1 fraction:
vllm:kv_cache_usage_perc from vLLM 0.9.2, vllm:gpu_cache_usage_perc up to 0.10, whichever is there);
per GPU it asks nvidia-smi for memory used/total and the ECC counters. It writes node_exporter
textfile metrics (gpu_fleet_*) atomically (temp file + rename in the textfile directory) and keeps
the number of consecutive runs above the alert threshold in a state file, so an alert survives
restarts. Each warn/alert/unreachable instance is one line on stdout/stderr with an sd-daemon
priority prefix, i.e. one journal entry at that priority.

Python 3.6+ standard library only (Debian 11 has 3.9). Everything above main() is pure logic
(no I/O) and is unit-tested from tests/unit/roles/test_vllm_monitoring_collector.py.
"""

from __future__ import absolute_import, division, print_function

import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time

from urllib.request import urlopen

# vLLM's KV-cache usage gauges, preferred first: vllm:kv_cache_usage_perc (from 0.9.2; the only one
# from 0.12) and vllm:gpu_cache_usage_perc (0.6.3 ... 0.10.x). The collection's release table
# (plugins/module_utils/_vllm_releases.py) is their home; a unit test keeps this list equal to it.
KV_METRICS = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc")
LEVELS = {0: "ok", 1: "warn", 2: "alert"}
GPU_FIELDS = [
    "index", "uuid", "memory.used", "memory.total",
    "ecc.errors.corrected.volatile.total", "ecc.errors.uncorrected.volatile.total",
    "ecc.errors.corrected.aggregate.total", "ecc.errors.uncorrected.aggregate.total",
]
MIB = 1024 * 1024

# name -> (type, help); the order is the order of the textfile.
METRICS = [
    ("gpu_fleet_monitor_last_run_timestamp_seconds", "gauge",
     "Unix time of the last run of the gpu_fleet vLLM health collector."),
    ("gpu_fleet_vllm_kv_cache_warn_threshold", "gauge",
     "KV-cache usage (0-1) at or above which an instance is at level warn."),
    ("gpu_fleet_vllm_kv_cache_alert_threshold", "gauge",
     "KV-cache usage (0-1) above which a run counts towards an alert."),
    ("gpu_fleet_vllm_kv_cache_alert_runs", "gauge",
     "Consecutive runs above the alert threshold that make an alert."),
    ("gpu_fleet_vllm_instances", "gauge",
     "vLLM instances of the active layout found in the environment files."),
    ("gpu_fleet_vllm_up", "gauge",
     "1 when the instance answered GET /metrics, 0 when it did not."),
    ("gpu_fleet_vllm_kv_cache_reported", "gauge",
     "1 when the instance's /metrics carried vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc with a finite value (absent with --disable-log-stats)."),
    ("gpu_fleet_vllm_gpu_cache_usage_perc", "gauge",
     "KV-cache usage of the instance, 1 means 100 percent; label source names the vLLM gauge read (vllm:kv_cache_usage_perc or vllm:gpu_cache_usage_perc)."),
    ("gpu_fleet_vllm_kv_cache_high_runs", "gauge",
     "Consecutive runs in which the instance's KV-cache usage was above the alert threshold."),
    ("gpu_fleet_vllm_kv_cache_level", "gauge",
     "KV-cache level of the instance: 0 ok, 1 warn, 2 alert."),
    ("gpu_fleet_gpu_query_up", "gauge",
     "1 when nvidia-smi answered the GPU query, 0 when it failed."),
    ("gpu_fleet_gpu_memory_used_bytes", "gauge",
     "GPU memory in use (nvidia-smi memory.used)."),
    ("gpu_fleet_gpu_memory_total_bytes", "gauge",
     "GPU memory in total (nvidia-smi memory.total)."),
    ("gpu_fleet_gpu_ecc_errors", "gauge",
     "ECC error count of the GPU (nvidia-smi ecc.errors.<kind>.<scope>.total); "
     "volatile resets with the driver, aggregate persists."),
]
METRIC_NAMES = [m[0] for m in METRICS]


class ConfigError(Exception):
    """The collector's configuration cannot be used."""


# --- parsing ------------------------------------------------------------------------------------

_SAMPLE = re.compile(r'^(?P<name>[a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(?P<labels>.*)\})?\s+(?P<value>\S+)(?:\s+\S+)?\s*$')
_LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"\s*,?\s*')


def parse_prometheus_text(text):
    """Samples of a Prometheus text exposition (0.0.4): list of (name, labels dict, float)."""
    samples = []
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        match = _SAMPLE.match(line)
        if not match:
            continue
        labels = {}
        for key, value in _LABEL.findall(match.group("labels") or ""):
            labels[key] = value.replace('\\"', '"').replace("\\n", "\n").replace("\\\\", "\\")
        try:
            value = float(match.group("value"))
        except ValueError:
            continue
        samples.append((match.group("name"), labels, value))
    return samples


def kv_cache_reading(text):
    """(usage, gauge) from a /metrics text: the highest series of the first of KV_METRICS that has a
    reading, and its name; (None, None) when none has.

    NaN series are skipped (no reading); an infinite one (+Inf, -Inf) of the gauge that would be read
    makes the answer unusable: ValueError says so (the gauge is a 0-1 fraction). An infinite series
    of a gauge that is not read (the deprecated one beside a good new one) does not."""
    values = dict((name, []) for name in KV_METRICS)
    for name, _labels, value in parse_prometheus_text(text):
        if name in values and not math.isnan(value):
            values[name].append(value)
    for name in KV_METRICS:
        if values[name]:
            bad = [v for v in values[name] if math.isinf(v)]
            if bad:
                raise ValueError("%s is %s, not a 0-1 fraction" % (name, "+Inf" if bad[0] > 0 else "-Inf"))
            return max(values[name]), name
    return None, None


def kv_cache_usage(text):
    """The KV-cache usage of a /metrics text (kv_cache_reading without the gauge's name), or None."""
    return kv_cache_reading(text)[0]


def parse_env_file(text):
    """KEY=VALUE lines of a systemd EnvironmentFile (comments and blank lines skipped)."""
    env = {}
    for line in text.splitlines():
        line = line.strip()
        if not line or line.startswith("#") or "=" not in line:
            continue
        key, value = line.split("=", 1)
        value = value.strip()
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "\"'":
            value = value[1:-1]
        env[key.strip()] = value
    return env


def instance_from_env(name, text):
    """One instance from its environment file: name, port, GPUs; None without a usable VLLM_PORT."""
    env = parse_env_file(text)
    try:
        port = int(env.get("VLLM_PORT", ""))
    except ValueError:
        return None
    if not 0 < port < 65536:
        return None
    return {"name": name, "port": port, "gpus": env.get("CUDA_VISIBLE_DEVICES", ""),
            "model": env.get("VLLM_SERVED_MODEL_NAME", "")}


def _number(cell):
    cell = cell.strip()
    if cell.endswith(" MiB"):
        cell = cell[:-4]
    try:
        value = float(cell)
    except ValueError:
        return None  # [N/A], [Not Supported], [Unknown Error] ...
    return value if math.isfinite(value) else None  # nan, inf: no reading either


def parse_gpu_query(text, fields=None):
    """Rows of `nvidia-smi --query-gpu=FIELDS --format=csv,noheader,nounits` (units and a header
    line are tolerated): list of dicts field -> str (index, uuid) or float/None (the numbers)."""
    fields = fields or GPU_FIELDS
    rows = []
    for line in text.splitlines():
        if not line.strip():
            continue
        cells = [c.strip() for c in line.split(",")]
        if cells[0] == fields[0] or cells[0].startswith(fields[0] + " "):
            continue  # header line
        if len(cells) != len(fields):
            raise ValueError("nvidia-smi answered %d fields where %d were asked: %r" % (len(cells), len(fields), line))
        row = {}
        for field, cell in zip(fields, cells):
            row[field] = cell if field in ("index", "uuid", "name", "pci.bus_id") else _number(cell)
        rows.append(row)
    return rows


# --- levels and state ---------------------------------------------------------------------------

def evaluate(usage, high_runs, warn, alert, alert_runs):
    """(level, high_runs) of one instance for this run.

    high_runs counts consecutive runs with usage > alert (a run without a reading breaks the
    streak); level is 2 (alert) once high_runs reaches alert_runs, else 1 (warn) for
    usage >= warn, else 0 (ok). usage None (unreachable, not reported) gives (None, 0)."""
    if usage is None:
        return None, 0
    high_runs = high_runs + 1 if usage > alert else 0
    if high_runs >= alert_runs:
        return 2, high_runs
    if usage >= warn:
        return 1, high_runs
    return 0, high_runs


def validate_config(config):
    """The configuration with defaults filled in; ConfigError names the bad value and the fix."""
    cfg = dict(config)
    try:
        warn = float(cfg.get("warn_threshold", 0.75))
        alert = float(cfg.get("alert_threshold", 0.85))
        runs = int(cfg.get("alert_consecutive_runs", 3))
        timeout = float(cfg.get("scrape_timeout", 5))
    except (TypeError, ValueError) as exc:
        raise ConfigError("a threshold, run count or timeout is not a number (%s); fix the role variables "
                          "vllm_monitoring_* and rerun the role" % exc) from exc
    if not 0 < warn <= 1 or not 0 < alert <= 1:
        raise ConfigError("thresholds must lie in (0, 1]: warn_threshold=%s alert_threshold=%s" % (warn, alert))
    if warn > alert:
        raise ConfigError("warn_threshold %s is above alert_threshold %s; set warn <= alert" % (warn, alert))
    if runs < 1 or timeout <= 0:
        raise ConfigError("alert_consecutive_runs must be >= 1 and scrape_timeout > 0 (got %s, %s)" % (runs, timeout))
    for key in ("textfile_dir", "state_file"):
        if not str(cfg.get(key, "")).startswith("/"):
            raise ConfigError("%s must be an absolute path (got %r)" % (key, cfg.get(key)))
    cfg.update(warn_threshold=warn, alert_threshold=alert, alert_consecutive_runs=runs, scrape_timeout=timeout)
    cfg.setdefault("layouts", [{"name": "full", "env_dir": "/etc/vllm", "target": "vllm.target"}])
    cfg.setdefault("textfile_name", "gpu_fleet_vllm.prom")
    cfg.setdefault("nvidia_smi", "nvidia-smi")
    cfg.setdefault("host", "127.0.0.1")
    return cfg


def choose_layout(layouts, active_targets):
    """The layout whose target is active (the first one when none is: its instances are due)."""
    for layout in layouts:
        if layout.get("target") in active_targets:
            return layout
    return layouts[0]


def assess(instances, scrapes, state, cfg):
    """Results per instance and the new state.

    instances: list from instance_from_env (with "layout"); scrapes: name -> /metrics text or
    None (unreachable); state: {"instances": {"<layout>/<name>": {"high_runs": N}}}."""
    old = (state or {}).get("instances", {})
    old = old if isinstance(old, dict) else {}
    new = {}
    results = []
    for inst in instances:
        key = "%s/%s" % (inst["layout"], inst["name"])
        text = scrapes.get(inst["name"])
        try:
            (usage, source), error = (kv_cache_reading(text) if text is not None else (None, None)), None
        except ValueError as exc:  # this instance's answer is unusable; the others are not
            usage, source, error = None, None, "GET /metrics answered an unusable value: %s" % exc
        previous = _high_runs(old.get(key))
        level, high_runs = evaluate(usage, previous, cfg["warn_threshold"], cfg["alert_threshold"],
                                    cfg["alert_consecutive_runs"])
        new[key] = {"high_runs": high_runs}
        results.append(dict(inst, up=text is not None, usage=usage, source=source, level=level, high_runs=high_runs,
                            error=error))
    return results, {"instances": new}


def _high_runs(entry):
    """The streak of a state file entry; 0 when the entry is missing or damaged."""
    try:
        return max(0, int(entry.get("high_runs", 0) or 0))
    except (AttributeError, TypeError, ValueError, OverflowError):
        return 0


def journal_lines(results, gpu_error, cfg):
    """(priority, message) per warn/alert/unreachable instance and for a failed GPU query."""
    lines = []
    for r in results:
        where = "vLLM instance %s (layout %s, port %d)" % (r["name"], r["layout"], r["port"])
        if not r["up"]:
            lines.append((4, "%s unreachable: GET /metrics failed (%s)" % (where, r.get("error") or "no answer")))
        elif r.get("error"):
            lines.append((4, "%s: %s; no KV-cache reading this run" % (where, r["error"])))
        elif r["level"] == 2:
            lines.append((3, "ALERT %s: KV-cache usage %.3f above %.2f in %d consecutive runs"
                          % (where, r["usage"], cfg["alert_threshold"], r["high_runs"])))
        elif r["level"] == 1:
            lines.append((4, "WARN %s: KV-cache usage %.3f at or above %.2f (runs above %.2f: %d of %d)"
                          % (where, r["usage"], cfg["warn_threshold"], cfg["alert_threshold"],
                             r["high_runs"], cfg["alert_consecutive_runs"])))
    if gpu_error:
        lines.append((3, "GPU query failed: %s" % gpu_error))
    return lines


# --- rendering ----------------------------------------------------------------------------------

def _escape(value):
    return str(value).replace("\\", "\\\\").replace("\n", "\\n").replace('"', '\\"')


def _fmt(value):
    if not math.isfinite(value):  # the text format's spelling; never int() of one
        return "NaN" if math.isnan(value) else ("+Inf" if value > 0 else "-Inf")
    if value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def render_textfile(results, gpus, gpu_ok, cfg, now):
    """The node_exporter textfile: # HELP/# TYPE once per metric, then its series."""
    series = dict((name, []) for name in METRIC_NAMES)
    series["gpu_fleet_monitor_last_run_timestamp_seconds"].append(({}, now))
    series["gpu_fleet_vllm_kv_cache_warn_threshold"].append(({}, cfg["warn_threshold"]))
    series["gpu_fleet_vllm_kv_cache_alert_threshold"].append(({}, cfg["alert_threshold"]))
    series["gpu_fleet_vllm_kv_cache_alert_runs"].append(({}, cfg["alert_consecutive_runs"]))
    series["gpu_fleet_vllm_instances"].append(({}, len(results)))
    for r in results:
        labels = {"vllm_instance": r["name"], "layout": r["layout"], "port": str(r["port"])}
        series["gpu_fleet_vllm_up"].append((labels, 1 if r["up"] else 0))
        if not r["up"]:
            continue
        series["gpu_fleet_vllm_kv_cache_reported"].append((labels, 0 if r["usage"] is None else 1))
        if r["usage"] is None:
            continue
        series["gpu_fleet_vllm_gpu_cache_usage_perc"].append(
            (dict(labels, source=r["source"]) if r.get("source") else labels, r["usage"]))
        series["gpu_fleet_vllm_kv_cache_high_runs"].append((labels, r["high_runs"]))
        series["gpu_fleet_vllm_kv_cache_level"].append((labels, r["level"]))
    series["gpu_fleet_gpu_query_up"].append(({}, 1 if gpu_ok else 0))
    for g in gpus:
        labels = {"gpu": g["index"], "uuid": g["uuid"]}
        for field, metric in (("memory.used", "gpu_fleet_gpu_memory_used_bytes"),
                              ("memory.total", "gpu_fleet_gpu_memory_total_bytes")):
            if g.get(field) is not None:
                series[metric].append((labels, g[field] * MIB))
        for kind in ("corrected", "uncorrected"):
            for scope in ("volatile", "aggregate"):
                value = g.get("ecc.errors.%s.%s.total" % (kind, scope))
                if value is not None:
                    series["gpu_fleet_gpu_ecc_errors"].append((dict(labels, kind=kind, scope=scope), value))
    out = []
    for name, kind, help_text in METRICS:
        if not series[name]:
            continue
        out.append("# HELP %s %s" % (name, help_text))
        out.append("# TYPE %s %s" % (name, kind))
        for labels, value in series[name]:
            text = ",".join('%s="%s"' % (k, _escape(labels[k])) for k in sorted(labels))
            out.append("%s%s %s" % (name, "{%s}" % text if text else "", _fmt(value)))
    return "\n".join(out) + "\n"


# --- I/O (main) ---------------------------------------------------------------------------------

def write_atomic(path, text, mode=0o644):
    """Write text to path through a temp file in the same directory and a rename: a reader sees
    the old file or the new one, never half of one. The temp name does not end in .prom, so
    node_exporter never reads it."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, mode)
        os.rename(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_instances(layout):
    instances = []
    env_dir = layout["env_dir"]
    try:
        names = sorted(os.listdir(env_dir))
    except OSError:
        return instances
    for fname in names:
        if not fname.endswith(".env"):
            continue
        try:
            with open(os.path.join(env_dir, fname)) as handle:
                inst = instance_from_env(fname[:-4], handle.read())
        except OSError:
            continue
        if inst:
            inst["layout"] = layout["name"]
            instances.append(inst)
    return instances


def active_targets(layouts):
    active = set()
    for layout in layouts:
        target = layout.get("target")
        if not target:
            continue
        try:
            if subprocess.call(["systemctl", "is-active", "--quiet", target],
                               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL) == 0:
                active.add(target)
        except OSError:  # no systemctl: no active target, the first layout is due
            pass
    return active


def scrape(host, port, timeout):
    try:
        with urlopen("http://%s:%d/metrics" % (host, port), timeout=timeout) as resp:
            return resp.read().decode("utf-8", "replace"), None
    except Exception as exc:  # pylint: disable=broad-except  # any failure means: not up
        return None, str(exc)


def query_gpus(nvidia_smi, timeout=30):
    argv = [nvidia_smi, "--query-gpu=" + ",".join(GPU_FIELDS), "--format=csv,noheader,nounits"]
    env = dict(os.environ, LC_ALL="C")
    try:
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
        out, err = proc.communicate(timeout=timeout)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return [], "%s: %s" % (" ".join(argv), exc)
    if proc.returncode != 0:
        return [], "%s exited %d: %s" % (" ".join(argv), proc.returncode,
                                         (out + err).decode("utf-8", "replace").strip()[:300])
    try:
        return parse_gpu_query(out.decode("utf-8", "replace")), None
    except ValueError as exc:
        return [], str(exc)


def load_state(path):
    try:
        with open(path) as handle:
            state = json.load(handle)
        return state if isinstance(state, dict) else {}
    except (OSError, ValueError):
        return {}


def main(argv=None):
    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 2 or argv[0] != "--config":
        sys.stderr.write("usage: gpu-fleet-monitor --config PATH\n")
        return 2
    try:
        with open(argv[1]) as handle:
            cfg = validate_config(json.load(handle))
    except (OSError, ValueError, ConfigError) as exc:
        sys.stderr.write("<3>gpu-fleet-monitor: configuration %s: %s\n" % (argv[1], exc))
        return 1
    layout = choose_layout(cfg["layouts"], active_targets(cfg["layouts"]))
    instances = read_instances(layout)
    scrapes, errors = {}, {}
    for inst in instances:
        scrapes[inst["name"]], errors[inst["name"]] = scrape(cfg["host"], inst["port"], cfg["scrape_timeout"])
    results, state = assess(instances, scrapes, load_state(cfg["state_file"]), cfg)
    for r in results:
        r["error"] = errors.get(r["name"]) or r.get("error")
    gpus, gpu_error = query_gpus(cfg["nvidia_smi"])
    text = render_textfile(results, gpus, gpu_error is None, cfg, int(time.time()))
    write_atomic(cfg["state_file"], json.dumps(state, sort_keys=True) + "\n", mode=0o600)
    write_atomic(os.path.join(cfg["textfile_dir"], cfg["textfile_name"]), text)
    for priority, message in journal_lines(results, gpu_error, cfg):
        sys.stdout.write("<%d>%s\n" % (priority, message))
    sys.stdout.write("<6>gpu-fleet-monitor: layout %s, %d instances (%d up), %d GPUs%s\n" % (
        layout["name"], len(results), sum(1 for r in results if r["up"]), len(gpus),
        "" if gpu_error is None else " (GPU query failed)"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
