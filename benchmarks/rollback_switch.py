# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmark (not a test): how long the rollback switch takes on a converged (simulated) host.

Two figures per direction (full -> degraded, degraded -> full):

* playbook: wall time of ``ansible-playbook playbooks/rollback.yml`` (facts, plan, switch, nginx,
            readiness gate with one completion through the endpoint) - what an operator waits for;
* systemd:  on the host, ``systemctl start <target>`` until every instance of the new layout answers
            ``GET /health`` - the switch itself, without Ansible.

Target (issue 6): playbook switch <= 30 s on the simulated host.

    PATH=.venv/bin:$PATH ANSIBLE_COLLECTIONS_PATH=.build/ac ANSIBLE_CONFIG=ansible.cfg \\
      CONTAINERS_CONF=tests/simulator/containers.conf \\
      python3 benchmarks/rollback_switch.py --inventory INVENTORY --host HOST [--runs 3] \\
        [--exec 'podman exec HOST'] [-e @vars.yml]

``--exec`` is the command prefix that runs a command on the host (default ``podman exec HOST``).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import shlex
import statistics
import subprocess
import sys
import time

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), ".."))

# Runs on the host: start a target, then poll /health of the given ports; prints seconds.
PROBE = r"""
import json, subprocess, sys, time, urllib.request
target, ports = sys.argv[1], [int(p) for p in sys.argv[2].split(",")]
t0 = time.time()
subprocess.run(["systemctl", "start", target], check=True)
pending = set(ports)
while pending and time.time() - t0 < 120:
    for port in sorted(pending):
        try:
            if urllib.request.urlopen("http://127.0.0.1:%d/health" % port, timeout=2).status == 200:
                pending.discard(port)
        except OSError:
            pass
    time.sleep(0.05)
print(json.dumps({"seconds": time.time() - t0, "pending": sorted(pending)}))
"""


def _ports(prefix, env_dir):
    out = subprocess.check_output(prefix + ["sh", "-c", "cat %s/*.env | grep ^VLLM_PORT=" % env_dir],
                                  universal_newlines=True)
    return sorted(int(line.split("=", 1)[1]) for line in out.split())


def _playbook(inventory, host, to, extra=()):
    t0 = time.time()
    cmd = ["ansible-playbook", "-i", inventory, "-l", host, os.path.join(ROOT, "playbooks", "rollback.yml"),
           "-e", "gpu_fleet_rollback_hosts=all", "-e", "gpu_fleet_rollback_to=%s" % to]
    for item in extra:
        cmd += ["-e", item]
    # the jsonfile fact cache the recorded figures were measured with (ansible.cfg turned it on
    # until issue 15; an operator's ansible.cfg or environment may set its own)
    env = dict({"ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile", "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "600",
                "ANSIBLE_CACHE_PLUGIN_CONNECTION": os.path.join(ROOT, ".build", "fact_cache")}, **os.environ)
    proc = subprocess.run(cmd, env=env,
                          stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, check=False)
    if proc.returncode:
        sys.stderr.write(proc.stdout[-4000:])
        raise SystemExit("rollback.yml to %s failed (rc %d)" % (to, proc.returncode))
    return time.time() - t0


def _systemd(prefix, target, ports):
    out = subprocess.check_output(prefix + ["python3", "-c", PROBE, target, ",".join(str(p) for p in ports)],
                                  universal_newlines=True)
    result = json.loads(out.strip().splitlines()[-1])
    if result["pending"]:
        raise SystemExit("%s: ports %s not healthy after 120 s" % (target, result["pending"]))
    return result["seconds"]


def _summary(name, values):
    return "%-32s median %6.2f s  min %6.2f s  max %6.2f s  (n=%d)" % (
        name, statistics.median(values), min(values), max(values), len(values))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--inventory", required=True)
    parser.add_argument("--host", required=True)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--exec", dest="exec_prefix", default=None)
    parser.add_argument("-e", "--extra-vars", dest="extra", action="append", default=[],
                        help="passed to ansible-playbook -e (e.g. @vars.yml with the host's vllm_server_layout)")
    args = parser.parse_args()
    prefix = shlex.split(args.exec_prefix) if args.exec_prefix else ["podman", "exec", args.host]
    full_ports = _ports(prefix, "/etc/vllm")
    degraded_ports = _ports(prefix, "/etc/vllm/degraded")
    times = {"playbook full->degraded": [], "playbook degraded->full": [],
             "systemd full->degraded": [], "systemd degraded->full": []}
    for _run in range(args.runs):
        # systemd first, so that the last playbook run leaves the host as found (full layout enabled)
        times["systemd full->degraded"].append(_systemd(prefix, "vllm-degraded.target", degraded_ports))
        times["systemd degraded->full"].append(_systemd(prefix, "vllm.target", full_ports))
        times["playbook full->degraded"].append(_playbook(args.inventory, args.host, "degraded", args.extra))
        times["playbook degraded->full"].append(_playbook(args.inventory, args.host, "full", args.extra))
    print("rollback switch on %s: full layout ports %s, degraded layout ports %s"
          % (args.host, full_ports, degraded_ports))
    for name, values in times.items():
        print(_summary(name, values))
    worst = max(times["playbook full->degraded"] + times["playbook degraded->full"])
    print("target: playbook switch <= 30 s: %s (worst %.1f s)" % ("met" if worst <= 30 else "NOT met", worst))
    return 0


if __name__ == "__main__":
    sys.exit(main())
