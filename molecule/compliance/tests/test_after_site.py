# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Raw host state after site.yml on the simulated a100x6_2numa host (compliance scenario).

These assertions are independent of the collection's own checks: they read files, units,
sockets, dpkg and HTTP answers directly. Expected values come from the profile (6x A100 80GB,
GPUs 0-2 on NUMA node 0, 3-5 on NUMA node 1) and the scenario's layout (host_vars: two TP=2
instances on the NVLink pairs 0+1 and 4+5, numbered from port 8001 by first GPU). Runs before
test_preflight.py (file order), on the host as converge left it.
"""
import json
import time

import pytest
from testinfra_helpers import env_file, extra_vars, http, run_playbook, stream_arrival_times

INSTANCES = {
    # name: (gpus, numa node, port)
    "n0-0": ("0,1", 0, 8001),
    "n1-0": ("4,5", 1, 8002),
}
MODEL = "Qwen/Qwen2.5-7B-Instruct"
NCCL = "2.14.3-1+cuda11.7"


def _env_file(host, name):
    return env_file(host, "/etc/vllm/%s.env" % name)


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_instance_env_file(host, name):
    gpu, node, port = INSTANCES[name]
    f = host.file("/etc/vllm/%s.env" % name)
    assert f.exists and f.user == "root" and f.group == "vllm" and f.mode == 0o640
    env = _env_file(host, name)
    assert env["CUDA_VISIBLE_DEVICES"] == str(gpu)
    assert env["CUDA_DEVICE_ORDER"] == "PCI_BUS_ID"
    assert env["VLLM_PORT"] == str(port)
    assert env["VLLM_TENSOR_PARALLEL_SIZE"] == "2"
    assert env["VLLM_NUMACTL_ARGS"] == "--cpunodebind=%d --membind=%d" % (node, node)


def test_no_other_instances(host):
    names = sorted(p[:-4] for p in host.file("/etc/vllm").listdir() if p.endswith(".env"))
    assert names == sorted(INSTANCES)


@pytest.mark.parametrize("name", sorted(INSTANCES))
def test_instance_running_and_listening(host, name):
    gpu, node, port = INSTANCES[name]
    svc = host.service("vllm@%s" % name)
    assert svc.is_running
    assert host.socket("tcp://127.0.0.1:%d" % port).is_listening
    assert not host.socket("tcp://0.0.0.0:%d" % port).is_listening
    proc = [p for p in host.process.filter(user="vllm") if "--port %d " % port in p.args + " "]
    assert proc, "no process of user vllm serves port %d" % port
    args = proc[0].args
    assert "/opt/vllm/venv/bin/python -m vllm.entrypoints.openai.api_server --model /srv/models/Qwen2.5-7B-Instruct" in args
    assert "--served-model-name %s" % MODEL in args
    assert "--tensor-parallel-size 2 --pipeline-parallel-size 1" in args
    # vLLM 0.6.3 logs every prompt unless told not to (issue 17: vllm_server_log_requests false)
    assert args.split().count("--disable-log-requests") == 1


def test_numactl_binding_used_by_units(host):
    """The simulator's numactl records how each unit was started."""
    lines = host.file("/var/log/gpu-sim/numactl.jsonl").content_string.splitlines()
    calls = [json.loads(line)["argv"] for line in lines if line.strip()]
    for name, (gpu, node, port) in INSTANCES.items():
        wanted = ["--cpunodebind=%d" % node, "--membind=%d" % node]
        assert any(c[1:3] == wanted and "--port" in c and c[c.index("--port") + 1] == str(port) for c in calls), name


def test_target_groups_instances(host):
    target = host.file("/etc/systemd/system/vllm.target").content_string
    for name in INSTANCES:
        assert "Wants=vllm@%s.service" % name in target
    assert host.service("vllm.target").is_enabled


def test_unit_keeps_gpus_visible(host):
    unit = host.file("/etc/systemd/system/vllm@.service").content_string
    assert "PrivateDevices=no" in unit
    assert "DevicePolicy" not in unit
    assert "Restart=on-failure" in unit


def _http(host, url, body=None):
    return http(host, url, body)


def test_endpoint_balances_and_completes(host):
    seen = set()
    body = json.dumps({"model": MODEL, "prompt": "hi", "max_tokens": 2})
    for _attempt in range(12):
        resp = _http(host, "http://127.0.0.1:8000/v1/completions", body)
        assert resp["status"] == 200, resp
        assert json.loads(resp["body"])["model"] == MODEL
        seen.add(resp["headers"]["X-GPU-Sim-Instance"])
    assert len(seen) >= 2, "nginx sent every request to one instance: %s" % seen


def test_prompts_are_not_logged_by_default(host):
    # issue 17: vLLM 0.6.3 logs every prompt unless started with --disable-log-requests; the units
    # pass it (vllm_server_log_requests false). The request is answered; its prompt reaches no log.
    marker = "i7-prompt-marker-%d" % int(time.time() * 1000)
    resp = _http(host, "http://127.0.0.1:8001/v1/completions", json.dumps({"model": MODEL, "prompt": marker, "max_tokens": 2}))
    assert resp["status"] == 200, resp
    time.sleep(2)
    assert marker not in host.file("/var/log/vllm/n0-0.log").content_string
    assert marker not in host.check_output("journalctl -u vllm@n0-0.service --no-pager")


def test_endpoint_health(host):
    assert _http(host, "http://127.0.0.1:8000/health")["status"] == 200


def test_endpoint_streams_unbuffered(host):
    """Chunks of a stream must arrive separately through nginx, not in one burst at the end."""
    result = stream_arrival_times(host, MODEL)
    assert result["done"]
    assert len(result["times"]) >= 4
    assert len(set(round(t, 2) for t in result["times"])) >= 3, result["times"]


def test_metrics_only_local(host):
    metrics = _http(host, "http://127.0.0.1:8000/metrics")
    assert metrics["status"] == 200 and "vllm:gpu_cache_usage_perc" in metrics["body"]
    nginx = host.file("/etc/nginx/conf.d/gpu-fleet-vllm.conf").content_string
    assert "deny all;" in nginx and "least_conn;" in nginx and "proxy_buffering off;" in nginx
    # secure by default: no API key here, so the endpoint listens on loopback only, and nothing
    # (Debian's default nginx site) on port 80
    assert host.socket("tcp://127.0.0.1:8000").is_listening
    assert not host.socket("tcp://0.0.0.0:8000").is_listening
    ip = host.check_output("hostname -I").split()[0]
    assert _http(host, "http://%s:8000/health" % ip)["status"] == 0
    assert not host.socket("tcp://0.0.0.0:80").is_listening and not host.socket("tcp://:::80").is_listening


@pytest.mark.parametrize("package,version", [
    ("cuda-toolkit-12-1", "12.1.1-1"),
    ("libnccl2", NCCL),
    ("libnccl-dev", NCCL),
])
def test_cuda_nccl_pinned_and_held(host, package, version):
    out = host.check_output("dpkg-query -W -f='${Version} ${Status}' %s" % package)
    assert out == "%s hold ok installed" % version
    policy = host.check_output("apt-cache policy %s" % package)
    assert "Candidate: %s" % version in policy
    pref = host.file("/etc/apt/preferences.d/gpu-fleet-cuda-pins.pref").content_string
    assert "Package: %s\nPin: version %s\nPin-Priority: 1001" % (package, version) in pref


def test_newer_nccl_offered_but_not_taken(host):
    """The mirror carries a newer build: without the pin, apt would drift to it."""
    madison = host.check_output("apt-cache madison libnccl2")
    assert "2.18.3-1+cuda12.1" in madison
    sim = host.run("apt-get -s upgrade")
    assert "libnccl2" not in "".join(l for l in sim.stdout.splitlines() if l.startswith("Inst"))


def test_cuda_repo_defined_once(host):
    sources = host.check_output("grep -rl 'gpu-sim/cuda-repo' /etc/apt/sources.list /etc/apt/sources.list.d/ || true")
    assert sources.split() == ["/etc/apt/sources.list.d/cuda.sources"]


def test_toolkit_environment(host):
    assert host.check_output("bash -lc 'command -v nvcc'") == "/usr/local/cuda-12.1/bin/nvcc"
    assert host.file("/etc/ld.so.conf.d/gpu-fleet-cuda.conf").contains("/usr/local/cuda-12.1/lib64")
    assert "release 12.1, V12.1.105" in host.check_output("/usr/local/cuda-12.1/bin/nvcc --version")


def test_sysctl_dropin_holds_no_refused_key(host):
    """In a container /proc/sys is read-only: every key is refused, none may be persisted."""
    dropin = host.file("/etc/sysctl.d/60-gpu-serving.conf")
    assert dropin.exists
    keys = [l.split("=")[0].strip() for l in dropin.content_string.splitlines() if l.strip() and not l.startswith("#")]
    for key in keys:
        path = "/proc/sys/" + key.replace(".", "/")
        assert host.run("sh -c 'cat %s > %s'" % (path, path)).rc == 0, "%s persisted but refused" % key
    report = json.loads(host.file("/etc/ansible/facts.d/gpu_fleet_host_tuning.fact").content_string)
    refused = set(report["sysctl_not_applicable"])
    assert refused | set(report["sysctl_applied"]) == {
        "vm.swappiness", "net.core.rmem_max", "net.core.wmem_max", "kernel.numa_balancing"}
    assert not refused & set(keys)
    assert report["governor"].startswith("not applicable: no cpufreq")


def test_governor_unit_skipped_without_cpufreq(host):
    unit = host.file("/etc/systemd/system/gpu-fleet-cpu-governor.service").content_string
    assert "ConditionPathExists=/sys/devices/system/cpu/cpu0/cpufreq/scaling_governor" in unit
    assert host.service("gpu-fleet-cpu-governor").is_enabled
    assert host.run("systemctl is-failed gpu-fleet-cpu-governor").stdout.strip() != "failed"


def test_logrotate_config_valid(host):
    d = host.file("/var/log/vllm")
    assert d.user == "vllm" and d.group == "vllm" and d.mode == 0o750
    conf = host.file("/etc/logrotate.d/vllm").content_string
    for directive in ("daily", "rotate 30", "compress", "delaycompress", "missingok", "notifempty",
                      "copytruncate", "su vllm vllm", "create 0640 vllm vllm"):
        assert directive in conf
    assert host.run("logrotate -d /etc/logrotate.d/vllm").rc == 0


def test_cache_cleanup_cron(host):
    """The cron line only calls the cleanup script; the values are data in its configuration."""
    cron = host.file("/etc/cron.d/gpu-fleet-cache-cleanup").content_string
    assert "\n0 3 * * * root /usr/bin/python3 -I /usr/local/sbin/gpu-fleet-cache-cleanup --quiet\n" in cron
    assert "find" not in cron
    config = json.loads(host.file("/etc/gpu-fleet/cache-cleanup.json").content_string)
    assert config == {"dirs": ["/var/cache/qwen_image_cache"], "pattern": "*.pt", "max_age_days": 7, "owners": ["vllm"]}


def test_bad_layout_fails_before_any_change(host):
    """TP=3 on Qwen2.5-7B (28 heads) is refused by the plan play; nothing on the host changes."""
    before = host.check_output("stat -c '%Y %s' /etc/vllm/*.env /etc/nginx/conf.d/gpu-fleet-vllm.conf")
    layout = {"vllm_server_layout": [{"gpus": [0, 1, 2], "tensor_parallel_size": 3, "pipeline_parallel_size": 1}]}
    proc = run_playbook("site.yml", *extra_vars(layout))
    out = proc.stdout
    assert proc.returncode != 0
    assert "i7-compliance" in out
    assert "28" in out and "attention heads" in out
    assert "1, 2, 4" in out
    assert "changed=0" in out
    assert "Tune, pin and serve" not in out or "TASK [gpu_fleet.vllm_serving.host_tuning" not in out
    assert host.check_output("stat -c '%Y %s' /etc/vllm/*.env /etc/nginx/conf.d/gpu-fleet-vllm.conf") == before
