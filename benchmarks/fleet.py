# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Benchmarks (not tests) on simulated GPU hosts: site.yml converge cost and fleet scaling.

  converge  one fresh simulated host (profile a100x6_2numa): site.yml first run, then the
            idempotent re-run; prints wall time, tasks and `changed` of each, and the ratio.
            Targets (issue 8): re-run changed=0, re-run time <= 50% of the first run.
  fleet     N simulated hosts (default 1, 4 and 8): the same playbook (default
            playbooks/compliance.yml) over the first 1, 4, 8 hosts, REPEAT times each; prints the
            median wall time per size and the ratio of the largest to 1 host.
            Target (issue 8): 8 hosts / 1 host <= 2.5 with the shipped ansible.cfg (forks 16,
            pipelining) and a jsonfile fact cache (FACT_CACHE below: the setting these figures
            were first measured with, when ansible.cfg still turned the cache on).
  rollout   site.yml's batched rollout (issue 6) on N fresh hosts (default 4, serial 25% = one host
            per batch, max_fail_percentage 0): first a run with a planted failure on the first
            host (an unknown vLLM flag: its instances crash, the readiness gate fails) that must
            stop before the second batch changes anything (checked on every other host: no
            /etc/vllm), then the real run; prints the batches in order and, for each, that its
            readiness gate passed before the next batch's first task.

The hosts are podman containers named gpu-bench-NN (never the demo's or molecule's), started by
tests/simulator/hosts.sh with this script's own inventory, and removed at the end (--keep leaves
them). By default the timed runs reach them over SSH (GPU_SIM_SSH=1 gives each container sshd and
a key; ansible.cfg's pipelining and ControlPersist apply), as a real fleet is reached;
--connection podman times the `podman exec` connection instead (molecule's until issue 15; no
pipelining: about three `podman exec` per task). Run from the repository root after `make sim`:

    .venv/bin/python benchmarks/fleet.py converge
    .venv/bin/python benchmarks/fleet.py fleet --sizes 1,4,8 [--playbook playbooks/compliance.yml] [--repeat 3]
    .venv/bin/python benchmarks/fleet.py rollout [--hosts 4] [--prefix gpu-bench]

Needs CONTAINERS_CONF=tests/simulator/containers.conf (set here when absent).
"""
from __future__ import absolute_import, division, print_function

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import time

REPO = os.path.abspath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
BENCH = os.path.join(REPO, ".build", "bench")
# The fact cache the figures in docs/performance.md were measured with (ansible.cfg turned it on
# until issue 15; the collection's ansible.cfg sets none now).
FACT_CACHE = {"ANSIBLE_CACHE_PLUGIN": "ansible.builtin.jsonfile",
              "ANSIBLE_CACHE_PLUGIN_CONNECTION": os.path.join(BENCH, "fact_cache"),
              "ANSIBLE_CACHE_PLUGIN_TIMEOUT": "600"}
RECAP = re.compile(r"^(?P<host>\S+)\s+:\s+ok=(?P<ok>\d+)\s+changed=(?P<changed>\d+)\s+unreachable=(?P<unreachable>\d+)"
                   r"\s+failed=(?P<failed>\d+)\s+skipped=(?P<skipped>\d+)\s+rescued=(?P<rescued>\d+)"
                   r"\s+ignored=(?P<ignored>\d+)", re.M)


def env():
    e = dict(os.environ)
    e.setdefault("CONTAINERS_CONF", os.path.join(REPO, "tests", "simulator", "containers.conf"))
    e.setdefault("ANSIBLE_CONFIG", os.path.join(REPO, "ansible.cfg"))
    e.setdefault("ANSIBLE_COLLECTIONS_PATH", os.path.join(REPO, ".build", "ac"))
    e["ANSIBLE_FORCE_COLOR"] = "false"
    e["PATH"] = os.path.join(REPO, ".venv", "bin") + os.pathsep + e.get("PATH", "")
    e["GPU_SIM_INVENTORY"] = os.path.join(BENCH, "inventory", "hosts.yml")
    for key, value in FACT_CACHE.items():
        e.setdefault(key, value)
    return e


def names(count, prefix="gpu-bench"):
    return ["%s-%02d" % (prefix, i) for i in range(1, count + 1)]


def write_inventory(hosts, profile):
    inv = os.path.join(BENCH, "inventory")
    os.makedirs(inv, exist_ok=True)
    link = os.path.join(inv, "group_vars")
    if not os.path.islink(link):
        os.symlink(os.path.join(REPO, "tests", "simulator", "inventory", "group_vars"), link)
    lines = ["# written by benchmarks/fleet.py", "all:", "  children:", "    gpu_hosts:", "      hosts:"]
    lines += ["        %s:" % h for h in hosts]
    lines += ["      vars:",
              "        ansible_connection: containers.podman.podman",
              "        ansible_python_interpreter: /usr/bin/python3",
              "        gpu_sim_profile: %s" % profile, ""]
    with open(os.path.join(inv, "hosts.yml"), "w") as fh:
        fh.write("\n".join(lines))
    return os.path.join(inv, "hosts.yml")


def hosts_sh(action, hosts, ssh=False):
    e = env()
    if ssh:
        e["GPU_SIM_SSH"] = "1"
    subprocess.run(["bash", os.path.join(REPO, "tests", "simulator", "hosts.sh"), action] + hosts,
                   cwd=REPO, env=e, check=True, stdout=subprocess.DEVNULL)


def ssh_inventory(hosts, profile):
    """The same hosts reached over SSH (their podman network address), as a fleet is reached."""
    key = os.path.join(REPO, ".build", "sim-ssh", "id_ed25519")
    lines = ["# written by benchmarks/fleet.py: the simulated hosts over SSH (pipelining from ansible.cfg)",
             "all:", "  children:", "    gpu_hosts:", "      hosts:"]
    for h in hosts:
        addr = subprocess.run(["podman", "container", "inspect", "--format", "{{.NetworkSettings.IPAddress}}", h],
                              env=env(), check=True, stdout=subprocess.PIPE, universal_newlines=True).stdout.strip()
        lines += ["        %s:" % h, "          ansible_host: %s" % addr]
    lines += ["      vars:",
              "        ansible_connection: ansible.builtin.ssh",
              "        ansible_user: root",
              "        ansible_ssh_private_key_file: %s" % key,
              # throw-away containers whose host keys are new on every start
              "        ansible_ssh_common_args: -o StrictHostKeyChecking=no -o UserKnownHostsFile=/dev/null -o LogLevel=ERROR",
              "        ansible_python_interpreter: /usr/bin/python3",
              "        gpu_sim_profile: %s" % profile, ""]
    path = os.path.join(BENCH, "inventory", "hosts-ssh.yml")
    with open(path, "w") as fh:
        fh.write("\n".join(lines))
    return path


def bring_up(hosts, opts):
    """Fresh hosts, planted over podman; the inventory the timed runs use (ssh or podman)."""
    inventory = write_inventory(hosts, opts.profile)
    ssh = opts.connection == "ssh"
    hosts_sh("down", hosts)
    hosts_sh("up", hosts, ssh=ssh)
    return ssh_inventory(hosts, opts.profile) if ssh else inventory


def playbook(inventory, path, limit=None, extra=None):
    cmd = [os.path.join(REPO, ".venv", "bin", "ansible-playbook"), "-i", inventory, path]
    if limit:
        cmd += ["--limit", ",".join(limit)]
    cmd += extra or []
    start = time.monotonic()
    res = subprocess.run(cmd, cwd=REPO, env=env(), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True, check=False)
    wall = time.monotonic() - start
    # The whole output of the latest run of each playbook, for profile_tasks reading.
    os.makedirs(BENCH, exist_ok=True)
    with open(os.path.join(BENCH, "last-%s.log" % os.path.basename(path)), "a") as fh:
        fh.write(res.stdout)
    recap = {m.group("host"): {k: int(v) for k, v in m.groupdict().items() if k != "host"}
             for m in RECAP.finditer(res.stdout)}
    return {"rc": res.returncode, "wall_s": round(wall, 1), "recap": recap, "tail": res.stdout[-3000:],
            "tail_full": res.stdout}


def summarize(run):
    counts = list(run["recap"].values())
    return {"rc": run["rc"], "wall_s": run["wall_s"],
            "tasks": sum(c["ok"] + c["failed"] + c["skipped"] for c in counts),
            "changed": sum(c["changed"] for c in counts),
            "failed": sum(c["failed"] + c["unreachable"] for c in counts)}


def converge(opts):
    hosts = names(1)
    inventory = bring_up(hosts, opts)
    try:
        first = playbook(inventory, os.path.join(REPO, "site.yml"))
        second = playbook(inventory, os.path.join(REPO, "site.yml"))
    finally:
        if not opts.keep:
            hosts_sh("down", hosts)
    a, b = summarize(first), summarize(second)
    report = {"benchmark": "site.yml converge, 1 simulated host (%s)" % opts.profile,
              "connection": opts.connection,
              "first_run": a, "rerun": b,
              "rerun_to_first_ratio": round(b["wall_s"] / a["wall_s"], 3) if a["wall_s"] else None,
              "targets": {"rerun_changed_0": b["changed"] == 0,
                          "rerun_at_most_half": bool(a["wall_s"]) and b["wall_s"] <= 0.5 * a["wall_s"]}}
    if a["rc"] or b["rc"]:
        report["failure_tail"] = (first if a["rc"] else second)["tail"]
    print(json.dumps(report, indent=2))
    return 0 if not (a["rc"] or b["rc"]) else 1


def fleet(opts):
    sizes = sorted(int(s) for s in opts.sizes.split(","))
    hosts = names(max(sizes))
    inventory = bring_up(hosts, opts)
    rows = []
    try:
        if opts.converge_first:
            prep = playbook(inventory, os.path.join(REPO, "site.yml"))
            if prep["rc"]:
                print(prep["tail"], file=sys.stderr)
                return 1
        for size in sizes:
            runs = [playbook(inventory, os.path.join(REPO, opts.playbook), limit=hosts[:size], extra=opts.extra)
                    for _run in range(opts.repeat)]
            walls = [r["wall_s"] for r in runs]
            rows.append({"hosts": size, "median_s": round(statistics.median(walls), 1), "runs_s": walls,
                         "rc": [r["rc"] for r in runs], "failed_hosts": summarize(runs[-1])["failed"]})
    finally:
        if not opts.keep:
            hosts_sh("down", hosts)
    base = rows[0]["median_s"]
    for row in rows:
        row["ratio_to_%d_host" % sizes[0]] = round(row["median_s"] / base, 2) if base else None
    print(json.dumps({"benchmark": "%s over simulated hosts (%s)" % (opts.playbook, opts.profile),
                      "connection": opts.connection,
                      "converged_first": opts.converge_first, "repeat": opts.repeat, "rows": rows,
                      "largest_to_smallest": rows[-1]["ratio_to_%d_host" % sizes[0]]}, indent=2))
    return 0


READY_TASK = "Wait until every instance of the active layout is healthy"
SERVE_PLAY = "PLAY [Tune, pin and serve]"


def play_events(stdout, play=SERVE_PLAY):
    """(index, task, host, status) of every task result in the given play, in output order."""
    events, task, inside = [], None, False
    for line in stdout.splitlines():
        if line.startswith("PLAY ["):
            inside = line.startswith(play)
        elif line.startswith("TASK ["):
            task = line[6:].rsplit("]", 1)[0]
        elif inside and task:
            m = re.match(r"^(ok|changed|failed|fatal|skipping): \[([^\]]+)\]", line)
            if m:
                events.append((len(events), task, m.group(2), m.group(1)))
    return events


def batches(events):
    """Hosts in the order the serving play first touched them, with their first and ready index."""
    order = []
    for idx, task, host, status in events:
        if not any(b["host"] == host for b in order):
            order.append({"host": host, "first": idx, "ready": None, "failed": False})
        row = [b for b in order if b["host"] == host][0]
        if READY_TASK in task and status == "ok":
            row["ready"] = idx
        if status in ("failed", "fatal"):
            row["failed"] = True
    return order


def host_has(host, path):
    return subprocess.run(["podman", "exec", host, "test", "-e", path], env=env(), check=False,
                          stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0


def rollout(opts):
    hosts = names(opts.hosts, opts.prefix)
    site = os.path.join(REPO, "site.yml")
    report = {"benchmark": "site.yml batched rollout on %d fresh simulated hosts (%s)" % (len(hosts), opts.profile),
              "connection": opts.connection}
    inventory = bring_up(hosts, opts)
    try:
        # 1. planted failure on the first host (first batch): an unknown flag makes its vLLM exit 2
        planted = playbook(inventory, site, extra=["-e", "@" + _planted_vars(hosts[0])])
        ev = play_events(planted["tail_full"])
        touched = sorted(set(h for _i, _t, h, _s in ev))
        untouched_ok = {h: not host_has(h, "/etc/vllm") for h in hosts[1:]}
        report["planted_failure"] = {
            "rc": planted["rc"], "wall_s": planted["wall_s"], "failed_host": hosts[0],
            "hosts_the_serving_play_touched": touched,
            "other_hosts_without_etc_vllm": untouched_ok,
            "stopped_before_batch_2": planted["rc"] != 0 and touched == [hosts[0]] and all(untouched_ok.values()),
            "failure": [line for line in planted["tail_full"].splitlines() if "is not ready" in line][:1]}
        # 2. the real rollout (the first host is repaired by the same run: its flag is gone)
        run = playbook(inventory, site)
        rows = batches(play_events(run["tail_full"]))
        for k, row in enumerate(rows):
            nxt = rows[k + 1]["first"] if k + 1 < len(rows) else None
            row["batch"] = k + 1
            row["ready_before_next_batch"] = row["ready"] is not None and (nxt is None or row["ready"] < nxt)
        report["rollout"] = {"rc": run["rc"], "wall_s": run["wall_s"], "batches": rows,
                             "each_batch_ready_before_next": bool(rows) and all(r["ready_before_next_batch"] for r in rows),
                             "recap": run["recap"]}
        if run["rc"]:
            report["rollout"]["tail"] = run["tail"]
    finally:
        if not opts.keep:
            hosts_sh("down", hosts)
    print(json.dumps(report, indent=2))
    ok = report["planted_failure"]["stopped_before_batch_2"] and report.get("rollout", {}).get("each_batch_ready_before_next")
    return 0 if ok else 1


def _planted_vars(host):
    path = os.path.join(BENCH, "planted-failure.yml")
    with open(path, "w") as fh:
        # extra vars apply to every host: the flag is chosen per host from the inventory name
        fh.write("vllm_server_extra_args: \"{{ ['--gpu-fleet-planted-bad-flag'] if inventory_hostname == '%s' else [] }}\"\n"
                 "vllm_server_ready_timeout: 120\n" % host)
    return path


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="what")
    c = sub.add_parser("converge")
    f = sub.add_parser("fleet")
    r = sub.add_parser("rollout")
    r.add_argument("--hosts", type=int, default=4)
    r.add_argument("--prefix", default="gpu-bench", help="container names PREFIX-NN")
    for p in (c, f, r):
        p.add_argument("--profile", default="a100x6_2numa")
        p.add_argument("--keep", action="store_true", help="leave the gpu-bench-NN containers running")
        p.add_argument("--connection", choices=("ssh", "podman"), default="ssh",
                       help="how the timed runs reach the hosts: ssh (sshd in each container, pipelining and "
                            "ControlPersist from ansible.cfg, as a fleet is reached; default) or podman "
                            "(podman exec per command, no pipelining: what molecule used until issue 15)")
    f.add_argument("--sizes", default="1,4,8")
    f.add_argument("--playbook", default="playbooks/compliance.yml")
    f.add_argument("--repeat", type=int, default=3)
    f.add_argument("--converge-first", action="store_true", help="run site.yml on all hosts before timing")
    f.add_argument("--extra", nargs="*", default=[], help="extra ansible-playbook arguments")
    opts = parser.parse_args()
    if opts.what == "converge":
        return converge(opts)
    if opts.what == "fleet":
        return fleet(opts)
    if opts.what == "rollout":
        return rollout(opts)
    parser.print_help()
    return 2


if __name__ == "__main__":
    sys.exit(main())
