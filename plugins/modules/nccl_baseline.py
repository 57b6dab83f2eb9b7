#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nccl_baseline
short_description: Run nccl-tests' all_reduce_perf, keep a per-host bandwidth baseline and flag drops
version_added: 0.3.0
description:
  - Runs an nccl-tests benchmark (C(all_reduce_perf) by default) on the host, parses its table and
    its C(# Avg bus bandwidth) line, and judges the run. A broken run - failure lines, wrong results
    (C(#wrong) > 0), out-of-bounds values, bus bandwidth 0, output cut before the average line,
    rows of several runs interleaved, non-zero exit - fails the module and is never stored.
  - Without a baseline on the host (or with O(mode=record)) a sound run is stored as the host's
    baseline in O(baseline_path) (JSON), and the module reports C(changed).
  - With a baseline, the run's average bus bandwidth and the bus bandwidth at the largest message
    size are compared with it; a drop of more than O(max_drop_percent) of either is returned as a
    finding with C(regression=true). The module does not fail for a regression; the caller
    (C(playbooks/nccl_baseline.yml)) decides. The baseline is left as it is.
  - A baseline recorded with other benchmark arguments (for example another GPU count) is not
    compared; the module fails and says how to record a new one.
  - In check mode nothing runs and nothing is written; the module says what it would do.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  binary:
    description:
      - The nccl-tests benchmark to run, an absolute path or a name looked up on C(PATH).
      - Any C(*_perf) binary of nccl-tests prints the same table; the baseline is per O(binary) only
        in the sense that its arguments and the collective name are stored with it.
    type: str
    default: /opt/nccl-tests/build/all_reduce_perf
  args:
    description:
      - Benchmark arguments before C(-g). The default sweeps 8 B to 1 GiB, doubling.
    type: list
    elements: str
    default: ["-b", "8", "-e", "1G", "-f", "2"]
  gpus:
    description:
      - GPUs the single process drives (C(-g)); C(0) leaves C(-g) out.
    type: int
    default: 0
  environment:
    description:
      - Extra environment for the benchmark, name to value, for example C(NCCL_NVLS_ENABLE) set to C(0)
        or C(NCCL_DEBUG) set to C(WARN). C(LC_ALL=C) is always set.
    type: dict
    default: {}
  baseline_path:
    description: Where the host's baseline lives (JSON). Its directory is created (C(0755)) when missing.
    type: path
    default: /var/lib/gpu_fleet/nccl_baseline.json
  max_drop_percent:
    description:
      - Largest drop, in percent of the baseline, of the average bus bandwidth or the large-message
        bus bandwidth that is not a regression. Must be greater than 0 and less than 100.
    type: float
    default: 15
  mode:
    description:
      - C(auto) - store the run as baseline when there is none, else compare with it.
      - C(compare) - compare; fail when there is no baseline.
      - C(record) - store a sound run as the new baseline, replacing the old one (after a hardware
        or driver change that is meant to stay).
    type: str
    choices: [auto, compare, record]
    default: auto
  timeout:
    description: Seconds the benchmark may run before it is killed (through C(timeout) from coreutils); C(0) waits forever.
    type: int
    default: 1800
  host:
    description: Host name used in messages and findings; default the host name.
    type: str
notes:
  - Supports check mode (nothing runs, nothing is written).
  - Bandwidths are GB/s (10^9 bytes per second) as nccl-tests prints them; message sizes are bytes.
requirements:
  - nccl-tests built on the host (U(https://github.com/NVIDIA/nccl-tests)).
seealso:
  - name: nccl-tests performance notes (algbw, busbw)
    description: What the bus bandwidth measures and why it is comparable across GPU counts.
    link: https://github.com/NVIDIA/nccl-tests/blob/master/doc/PERFORMANCE.md
"""

EXAMPLES = r"""
- name: Measure all-reduce bandwidth over 8 GPUs and compare it with the host's baseline
  gpu_fleet.vllm_serving.nccl_baseline:
    binary: /opt/nccl-tests/build/all_reduce_perf
    gpus: 8
    environment:
      NCCL_NVLS_ENABLE: "0"
  register: nccl

- name: Fail on a bandwidth drop
  ansible.builtin.assert:
    that: not nccl.regression
    fail_msg: "{{ nccl.message }}"
"""

RETURN = r"""
action:
  description: What happened - C(stored) (baseline written), C(compared), or in check mode C(would_store) / C(would_compare).
  returned: always
  type: str
  sample: compared
regression:
  description: True when a figure dropped by more than O(max_drop_percent).
  returned: always
  type: bool
  sample: false
message:
  description: One line for the operator, naming the host and the figures.
  returned: always
  type: str
  sample: "gpu01: all_reduce_perf avg busbw 177.65 GB/s is 20.0% below the baseline 222.07 GB/s (limit 15%)"
findings:
  description: One per compared figure (empty when the run was stored).
  returned: always
  type: list
  elements: dict
  sample: [{"metric": "avg_busbw", "baseline": 222.066, "current": 177.65, "drop_percent": 20.0, "dropped": true}]
  contains:
    metric:
      description: C(avg_busbw) (the C(# Avg bus bandwidth) line) or C(large_message_busbw) (out-of-place busbw at the largest size).
      type: str
    baseline:
      description: The baseline's value, GB/s.
      type: float
    current:
      description: This run's value, GB/s.
      type: float
    drop_percent:
      description: Drop against the baseline in percent (negative = faster); null when a side is missing.
      type: float
    dropped:
      description: Drop greater than O(max_drop_percent).
      type: bool
summary:
  description: This run's figures (absent in check mode).
  returned: when the benchmark ran
  type: dict
  sample: {"avg_busbw": 222.066, "large_message_size": 8589934592, "large_message_busbw": 234.72,
           "peak_busbw": 234.74, "rows": 4, "collective": null, "nccl_tests_version": null,
           "n_gpus": 4, "devices": 4}
baseline:
  description: The stored baseline record (the one compared with, or the one just written).
  returned: when there is one
  type: dict
  sample: {"schema": 1, "host": "gpu01", "recorded": "2026-11-29T22:10:00Z", "binary": "/opt/nccl-tests/build/all_reduce_perf",
           "args": ["-b", "8", "-e", "1G", "-f", "2", "-g", "8"], "environment": {"NCCL_NVLS_ENABLE": "0"},
           "summary": {"avg_busbw": 222.066, "large_message_busbw": 234.72}}
cmd:
  description: The command that ran.
  returned: when the benchmark ran
  type: list
  elements: str
  sample: ["/opt/nccl-tests/build/all_reduce_perf", "-b", "8", "-e", "1G", "-f", "2", "-g", "8"]
rc:
  description: Exit status of the benchmark.
  returned: when the benchmark ran
  type: int
  sample: 0
stdout:
  description: Output of the benchmark.
  returned: when the benchmark ran
  type: str
stderr:
  description: Error output of the benchmark.
  returned: when the benchmark ran
  type: str
"""

import json
import os
import socket
import tempfile
import time

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccltests

ARGUMENT_SPEC = dict(
    binary=dict(type="str", default="/opt/nccl-tests/build/all_reduce_perf"),
    args=dict(type="list", elements="str", default=["-b", "8", "-e", "1G", "-f", "2"]),
    gpus=dict(type="int", default=0),
    environment=dict(type="dict", default={}),
    baseline_path=dict(type="path", default="/var/lib/gpu_fleet/nccl_baseline.json"),
    max_drop_percent=dict(type="float", default=15),
    mode=dict(type="str", default="auto", choices=["auto", "compare", "record"]),
    timeout=dict(type="int", default=1800),
    host=dict(type="str"),
)


def _load_baseline(module, host, path):
    if not os.path.exists(path):
        return None
    try:
        with open(path) as handle:
            data = json.load(handle)
        if not isinstance(data, dict) or not isinstance(data.get("summary"), dict):
            raise ValueError("no 'summary' object")
        return data
    except (IOError, OSError, ValueError) as exc:
        module.fail_json(msg="nccl_baseline on %s: the stored baseline %s is unreadable (%s). Move it away "
                             "and run again with mode=record (or mode=auto) to record a new one."
                             % (host, path, exc))


def _store(module, path, record):
    directory = os.path.dirname(path) or "."
    if not os.path.isdir(directory):
        os.makedirs(directory, 0o755)
    fd, tmp = tempfile.mkstemp(prefix=".nccl_baseline.", dir=directory)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle, indent=2, sort_keys=True)
        handle.write("\n")
    os.chmod(tmp, 0o644)
    module.atomic_move(tmp, path)


def _validate(module, host):
    """(resolved binary, environment) or fail_json before anything ran or changed."""
    p = module.params
    bad, env = _nccltests.parameter_problems(p)
    binary = p["binary"]
    resolved = binary if os.path.isabs(binary) else module.get_bin_path(binary)
    if not resolved or not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
        bad.append("binary %s is not an executable file on this host; build nccl-tests "
                   "(make -C nccl-tests, MPI=1 for multi-node) and set nccl_baseline_binary to the "
                   "path of build/all_reduce_perf" % binary)
    if bad:
        module.fail_json(msg="nccl_baseline on %s: %s. Nothing was run or changed." % (host, "; ".join(bad)))
    return resolved, env


def _check_baseline(module, host, baseline, store, args, resolved):
    """Fail when there is nothing to compare with, or the baseline was another run."""
    path = module.params["baseline_path"]
    if module.params["mode"] == "compare" and baseline is None:
        module.fail_json(msg="nccl_baseline on %s: mode=compare but there is no baseline at %s; run once with "
                             "mode=auto or mode=record on a healthy host first." % (host, path))
    mismatch = None if baseline is None or store else _nccltests.baseline_mismatch(baseline, args, resolved)
    if mismatch:
        module.fail_json(msg="nccl_baseline on %s: the baseline at %s %s; figures of different runs are not "
                             "comparable. Run with the baseline's arguments, or record a new baseline "
                             "(mode=record)." % (host, path, mismatch), baseline=baseline)


def _exit_check_mode(module, host, baseline, store, resolved, args):
    path = module.params["baseline_path"]
    module.exit_json(changed=store, action="would_store" if store else "would_compare", regression=False,
                     findings=[], baseline=baseline,
                     message="%s: check mode: would run %s %s and %s" % (
                         host, resolved, " ".join(args),
                         "store it as baseline in %s" % path if store else "compare it with the baseline in %s" % path))


def _run(module, host, cmd, env):
    """Run the benchmark; return (rc, out, err, elapsed, parsed) of a sound run, else fail_json."""
    p = module.params
    argv = cmd
    if p["timeout"]:
        timeout_bin = module.get_bin_path("timeout")
        if timeout_bin:
            argv = [timeout_bin, str(p["timeout"])] + cmd
    started = time.time()
    rc, out, err = module.run_command(argv, environ_update=dict(env, LC_ALL="C"))
    elapsed = round(time.time() - started, 2)
    try:
        parsed = _nccltests.parse_nccl_tests(out + ("\n" + err if err else ""))
    except _nccltests.NcclTestsParseError as exc:
        module.fail_json(msg="nccl_baseline on %s: %s printed no nccl-tests output (rc %d): %s. Baseline untouched."
                             % (host, " ".join(cmd), rc, exc), rc=rc, stdout=out, stderr=err, cmd=cmd)
    broken = _nccltests.run_problems(parsed, rc, p["timeout"])
    if broken:
        module.fail_json(msg="nccl_baseline on %s: broken run of %s: %s. Not used as a measurement; the baseline "
                             "is untouched. Look at the output (NCCL_DEBUG=WARN in nccl_baseline_environment) and "
                             "the GPUs (playbooks/compliance.yml, playbooks/diagnose.yml)."
                             % (host, " ".join(cmd), "; ".join(broken)),
                         rc=rc, stdout=out, stderr=err, cmd=cmd, problems=broken, summary=_nccltests.summary(parsed))
    return rc, out, err, elapsed, parsed


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    host = p["host"] or socket.gethostname()
    resolved, env = _validate(module, host)
    baseline = _load_baseline(module, host, p["baseline_path"])
    store = baseline is None or p["mode"] == "record"
    args = _nccltests.command_args(p["args"], p["gpus"])
    _check_baseline(module, host, baseline, store, args, resolved)
    if module.check_mode:
        _exit_check_mode(module, host, baseline, store, resolved, args)

    cmd = [resolved] + args
    rc, out, err, elapsed, parsed = _run(module, host, cmd, env)
    summary = _nccltests.summary(parsed)
    ran = dict(cmd=cmd, rc=rc, stdout=out, stderr=err)
    if store:
        record = _nccltests.baseline_record(host, resolved, args, env, elapsed, parsed,
                                            time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()))
        try:
            _store(module, p["baseline_path"], record)
        except (IOError, OSError) as exc:
            module.fail_json(msg="nccl_baseline on %s: cannot write the baseline %s: %s"
                                 % (host, p["baseline_path"], exc), rc=rc, stdout=out, stderr=err)
        module.exit_json(changed=True, action="stored", regression=False, findings=[], summary=summary,
                         baseline=record, message=_nccltests.stored_message(host, resolved, p["baseline_path"], summary),
                         **ran)
    findings = _nccltests.compare(baseline["summary"], summary, p["max_drop_percent"])
    module.exit_json(changed=False, action="compared", regression=any(f["dropped"] for f in findings),
                     findings=findings, summary=summary, baseline=baseline,
                     message=_nccltests.compared_message(host, resolved, findings, summary, p["max_drop_percent"],
                                                         baseline, p["baseline_path"]), **ran)


if __name__ == "__main__":
    main()
