# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark (not a test): wall time of one vllm_monitoring collector run, as the timer starts it
(a new python3 process), against N vLLM stand-ins (tests/simulator/vllm_standin) and the simulated
nvidia-smi on the a100x6_2numa profile; plus one instance whose port is closed (refused at once).

    python3 benchmarks/monitor_collector.py [--instances 1,4,8] [--runs 5]

Prints, per N, the median and max of --runs runs. On a real host the nvidia-smi call dominates
(0.1-0.2 s on the H200, docs/performance.md); a hung instance costs vllm_monitoring_scrape_timeout
seconds, instances are scraped one after the other.
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

REPO = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))
COLLECTOR = os.path.join(REPO, "roles", "vllm_monitoring", "files", "gpu_fleet_monitor.py")
STANDIN = os.path.join(REPO, "tests", "simulator", "vllm_standin")
PROFILE = os.path.join(REPO, "tests", "simulator", "profiles", "a100x6_2numa")
SIM_SMI = os.path.join(REPO, "tests", "simulator", "bin", "nvidia-smi")
CONFIG = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_size": 3584,
          "intermediate_size": 18944, "num_hidden_layers": 28, "num_attention_heads": 28,
          "num_key_value_heads": 4, "vocab_size": 152064, "max_position_embeddings": 32768,
          "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


def free_port():
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def wait_healthy(port):
    deadline = time.time() + 30
    while time.time() < deadline:
        try:
            urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=1)
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit("stand-in on port %d not healthy" % port)


def bench(tmp, count, runs, env):
    procs, ports = [], []
    model = os.path.join(tmp, "model")
    env_dir = os.path.join(tmp, "etc-vllm-%d" % count)
    os.makedirs(env_dir)
    try:
        for i in range(count):
            port = free_port()
            procs.append(subprocess.Popen(
                [sys.executable, "-m", "vllm.scripts", "serve", model, "--host", "127.0.0.1", "--port", str(port)],
                env=dict(env, CUDA_VISIBLE_DEVICES=str(i % 6)), stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
            ports.append(port)
        for port in ports:
            wait_healthy(port)
        for i, port in enumerate(ports + [free_port()]):  # the last one is closed
            with open(os.path.join(env_dir, "i%d.env" % i), "w") as handle:
                handle.write("VLLM_PORT=%d\n" % port)
        config = os.path.join(tmp, "monitoring-%d.json" % count)
        textfiles = os.path.join(tmp, "textfile-%d" % count)
        os.makedirs(textfiles)
        with open(config, "w") as handle:
            json.dump({"textfile_dir": textfiles, "state_file": os.path.join(tmp, "state-%d.json" % count),
                       "layouts": [{"name": "full", "env_dir": env_dir, "target": "gpu-fleet-bench-none.target"}]},
                      handle)
        times = []
        for _run_index in range(runs):
            start = time.perf_counter()
            subprocess.run([sys.executable, COLLECTOR, "--config", config], env=env, check=True,
                           stdout=subprocess.DEVNULL)
            times.append(time.perf_counter() - start)
        return times
    finally:
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        for proc in procs:
            proc.wait(timeout=10)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--instances", default="1,4,8")
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    tmp = tempfile.mkdtemp(prefix="monitor-bench-")
    try:
        os.makedirs(os.path.join(tmp, "model"))
        with open(os.path.join(tmp, "model", "config.json"), "w") as handle:
            json.dump(CONFIG, handle)
        bindir = os.path.join(tmp, "bin")
        os.makedirs(bindir)
        os.symlink(SIM_SMI, os.path.join(bindir, "nvidia-smi"))
        env = dict(os.environ, PYTHONPATH=STANDIN, GPU_SIM_VLLM_STARTUP_DELAY="0", GPU_SIM_PROFILE=PROFILE,
                   GPU_SIM_LOG_DIR=os.path.join(tmp, "nolog"), GPU_SIM_CLAIMS_DIR=os.path.join(tmp, "claims"),
                   GPU_SIM_KV_CACHE_DIR=os.path.join(tmp, "kv"), PATH=bindir + ":" + os.environ.get("PATH", ""))
        print("collector run (new process), N stand-ins + 1 closed port, simulated nvidia-smi, %d runs" % args.runs)
        for count in [int(n) for n in args.instances.split(",")]:
            times = bench(tmp, count, args.runs, env)
            print("N=%d: median %.3f s, max %.3f s" % (count, statistics.median(times), max(times)))
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
