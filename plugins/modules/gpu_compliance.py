#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: gpu_compliance
short_description: Check a GPU serving host against the compliance catalog and return findings
version_added: 0.2.0
description:
  - Gathers its own readings, read-only - C(nvidia-smi -q -x), C(topo -m), C(nvlink -s) (unless
    O(topology) is given), C(dpkg-query), C(apt-mark showhold), C(systemctl), the kernel log, the
    C(host_tuning) report, C(/proc/sys), cpufreq in sysfs, logrotate and cron files, the vLLM
    instances' environment files and their C(GET /health) - and runs every check of the catalog
    in C(plugins/module_utils/_compliance.py) on them.
  - Each check returns findings with C(id), C(severity) (C(fail), C(warn), C(info)), C(status)
    (C(pass), C(fail), C(warn), C(not_applicable)), C(host), C(expected), C(actual) and
    C(remediation). A check whose input is absent on the host (no systemd, nothing deployed, no
    NVLink, no cpufreq, no readable kernel log) says so with status C(not_applicable); it never
    fails for that.
  - The module itself does not fail when the host is not compliant; it returns the findings and
    a summary (C(compliant)). C(playbooks/preflight.yml) turns them into a table, a JSON report,
    JUnit XML and a non-zero exit. It fails only on bad parameters or unreadable tool output.
  - Never changes anything on the host; check mode runs the same reads.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  mode:
    description:
      - C(preflight) - before deployment; deployed-state checks (packages, units, host_tuning,
        housekeeping) report C(not_applicable) when nothing of ours is installed yet.
      - C(post_deploy) - everything must be in place.
      - C(auto) - C(post_deploy) when O(unit_file) exists, else C(preflight).
    type: str
    choices: [auto, preflight, post_deploy]
    default: auto
  topology:
    description:
      - C(gpu_topology) facts from M(gpu_fleet.vllm_serving.gpu_topology_facts). When omitted the
        module runs nvidia-smi itself (NUMA placement then comes from C(topo -m) only).
    type: dict
  nvidia_smi_path:
    description: Path of nvidia-smi; default is the one on C(PATH). Used when O(topology) is omitted.
    type: path
  min_driver:
    description:
      - Lowest driver version the pinned CUDA runs on (CUDA 12.1 release notes, Table 3 -
        C(530.30.02)). Empty checks only that a driver answers.
    type: str
    default: "530.30.02"
  expected_gpu_count:
    description: Number of healthy GPUs the host must show; C(0) reports the count without judging it.
    type: int
    default: 0
  retired_pages_max:
    description: Most retired pages (single + double bit) a GPU may have before it fails the check.
    type: int
    default: 0
  packages:
    description:
      - Pinned packages, name to exact apt version (C({libnccl2 2.14.3-1+cuda11.7})); each must be
        installed at that version and held. Empty skips the check.
    type: dict
    default: {}
  nccl_version:
    description:
      - The pinned NCCL version (C(cuda_stack_nccl_version), for example C(2.14.3)) every deployed vLLM
        instance must load, through C(VLLM_NCCL_SO_PATH) or torch's bundled copy (check C(nccl_effective)).
        Empty skips the check.
    type: str
    default: ""
  nccl_cuda:
    description:
      - The CUDA version of the pinned NCCL build (C(11.7) of C(2.14.3-1+cuda11.7)); when set, a library
        that names another CUDA build fails C(nccl_effective) too. Empty compares the NCCL version only.
    type: str
    default: ""
  vllm_venv:
    description: The vLLM virtualenv, whose torch-bundled NCCL an instance without C(VLLM_NCCL_SO_PATH) loads.
    type: path
    default: /opt/vllm/venv
  model_name:
    description: Served model name, for the layout check.
    type: str
  model_path:
    description: Model directory on the host holding C(config.json), for the layout check.
    type: path
  model_config:
    description: The model's C(config.json) as a dict, used when the host has no copy.
    type: dict
  layout:
    description:
      - C(auto) or a list of instances (as C(vllm_server_layout)); planned with the collection's
        layout planner. Without O(model_path)/O(model_config) the layout check is not applicable.
    type: raw
    default: auto
  base_port:
    description: First instance port, as C(vllm_server_base_port).
    type: int
    default: 8001
  gpu_memory_utilization:
    description: As C(vllm_server_gpu_memory_utilization).
    type: float
    default: 0.9
  max_model_len:
    description: As C(vllm_server_max_model_len); C(0) uses the model's maximum.
    type: int
    default: 0
  allow_mig:
    description: As C(vllm_server_allow_mig).
    type: bool
    default: false
  config_dir:
    description: Directory of the deployed instances' environment files (C(<instance>.env)).
    type: path
    default: /etc/vllm
  unit_file:
    description: The instance template unit; its presence means "deployed" for O(mode=auto).
    type: path
    default: /etc/systemd/system/vllm@.service
  health_check:
    description: Probe C(GET http://127.0.0.1:<port>/health) of each deployed instance.
    type: bool
    default: true
  health_timeout:
    description: Seconds to wait for each C(/health) answer.
    type: float
    default: 5
  kernel_log:
    description:
      - Where to read kernel messages. C(auto) tries C(journal), then C(dmesg), then C(file).
      - C(journal) - C(journalctl -k) since O(kernel_log_since); C(dmesg) - the ring buffer (since
        boot); C(file) - O(kernel_log_path) (syslog or kern.log form); C(none) - skip the check.
      - Containers usually cannot read the ring buffer; the check then reports C(not_applicable).
    type: str
    choices: [auto, journal, dmesg, file, none]
    default: auto
  kernel_log_path:
    description: Log file for O(kernel_log=file) (and the last resort of C(auto)).
    type: path
    default: /var/log/kern.log
  kernel_log_since:
    description: C(journalctl --since) value, how far back an Xid counts as recent.
    type: str
    default: "-24h"
  host_tuning_report:
    description: The C(host_tuning) role's report (a local facts file, JSON).
    type: path
    default: /etc/ansible/facts.d/gpu_fleet_host_tuning.fact
  logrotate_config:
    description: The vLLM logrotate stanza the C(housekeeping) role installs.
    type: path
    default: /etc/logrotate.d/vllm
  cron_file:
    description: The cache cleanup cron file the C(housekeeping) role installs.
    type: path
    default: /etc/cron.d/gpu-fleet-cache-cleanup
  host:
    description: Name used in findings; default the host name.
    type: str
notes:
  - Supports check mode (it only reads).
  - Runs as root for C(dmesg) and the ECC counters; as another user some checks become not applicable.
seealso:
  - module: gpu_fleet.vllm_serving.gpu_topology_facts
  - module: gpu_fleet.vllm_serving.vllm_layout
"""

EXAMPLES = r"""
- name: Check the host (before deployment, or after it)
  gpu_fleet.vllm_serving.gpu_compliance:
    expected_gpu_count: 8
    packages:
      cuda-toolkit-12-1: 12.1.1-1
      libnccl2: 2.14.3-1+cuda11.7
      libnccl-dev: 2.14.3-1+cuda11.7
    model_name: Qwen/Qwen2.5-7B-Instruct
    model_path: /srv/models/Qwen2.5-7B-Instruct
    layout: auto
  register: compliance

- name: Fail when a check failed
  ansible.builtin.assert:
    that: compliance.summary.compliant
    fail_msg: "{{ compliance.findings | selectattr('severity', 'eq', 'fail') | list }}"
"""

RETURN = r"""
findings:
  description: Every finding, in catalog order (one or more per check; per GPU, package, unit ...).
  returned: always
  type: list
  elements: dict
  sample:
    - id: ecc_uncorrectable
      check: no uncorrectable ECC errors
      subject: GPU 3
      status: fail
      severity: fail
      host: gpu01
      expected: "0"
      actual: volatile 2, aggregate 2
      remediation: "Uncorrectable ECC errors since the last driver load: drain the GPU, reset it ..."
  contains:
    id:
      description: Check id (C(gpu_driver), C(gpu_count), C(ecc_mode), C(ecc_uncorrectable),
        C(ecc_remap), C(nvlink), C(fabric_manager), C(kernel_log), C(layout), C(packages),
        C(nccl_effective), C(sysctl), C(governor), C(logrotate), C(cron), C(units)).
      type: str
    check:
      description: One-line title of the check.
      type: str
    subject:
      description: What the finding is about (C(host), C(GPU 3), C(libnccl2), C(vllm@n0-0) ...).
      type: str
    status:
      description: C(pass), C(fail), C(warn) or C(not_applicable).
      type: str
    severity:
      description: C(fail) (not fit to serve), C(warn) or C(info) (passed or not applicable).
      type: str
    host:
      description: Host name.
      type: str
    expected:
      description: What the check wants.
      type: str
    actual:
      description: What the host shows (or why the check does not apply).
      type: str
    remediation:
      description: How to fix it; empty for C(info).
      type: str
summary:
  description: Verdict of the host.
  returned: always
  type: dict
  sample: {"host": "gpu01", "mode": "post_deploy", "compliant": false, "status": "fail",
           "counts": {"pass": 30, "fail": 1, "warn": 0, "not_applicable": 4},
           "failed_checks": ["nvlink"], "warned_checks": []}
  contains:
    host:
      description: Host name.
      type: str
    mode:
      description: C(preflight) or C(post_deploy) (O(mode=auto) resolved).
      type: str
    compliant:
      description: True when no finding has severity C(fail).
      type: bool
    status:
      description: C(fail), C(warn) or C(pass).
      type: str
    counts:
      description: Number of findings per status.
      type: dict
    failed_checks:
      description: Ids of checks with a failing finding.
      type: list
      elements: str
    warned_checks:
      description: Ids of checks with a warning.
      type: list
      elements: str
readings:
  description: The raw inputs the checks judged (for the report; kernel-log events, instances, unit states).
  returned: always
  type: dict
  sample: {"kernel_log_source": "journal", "kernel_log_events": [], "instances": []}
"""

import glob
import json
import os
import re
import socket

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as checks
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout import plan_layout
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import LayoutError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nccl_gather import (
    NcclGatherError,
    gather as nccl_gather,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import TopologyParseError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import (
    build_gpu_topology,
    unavailable_topology,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology_gather import (
    read_text,
    run_nvidia_smi,
)

ENV = {"LC_ALL": "C"}


class Gatherer(object):
    def __init__(self, module, host):
        self.module = module
        self.host = host
        self.has_systemd = os.path.isdir("/run/systemd/system") and bool(module.get_bin_path("systemctl"))

    def run(self, argv):
        return self.module.run_command(argv, environ_update=ENV)

    def topology(self):
        params = self.module.params
        if params["topology"]:
            return params["topology"]
        smi = params["nvidia_smi_path"] or self.module.get_bin_path("nvidia-smi")
        if not smi or not os.access(smi, os.X_OK):
            return unavailable_topology("nvidia-smi not found (%s)" % (smi or "PATH"))
        results = run_nvidia_smi(self.run, smi)
        try:
            return build_gpu_topology(results, None)
        except TopologyParseError as exc:
            self.module.fail_json(
                msg="gpu_compliance on %s: cannot read the output of %s: %s. Add the output to "
                    "tests/fixtures/real/ and extend plugins/module_utils/_topology.py."
                    % (self.host, smi, exc), outputs=results)

    def systemctl(self, verb, unit):
        rc, out, err = self.run(["systemctl", verb, unit])
        return (out.strip().splitlines() or [err.strip() or "unknown"])[0]

    def packages(self, names):
        if not names:
            return {}, set()
        if not self.module.get_bin_path("dpkg-query"):
            return None, None
        rc, out, err = self.run(["dpkg-query", "-W", "-f=${Package}\t${Version}\t${Status}\n"] + sorted(names))
        installed, dpkg_holds = {}, set()
        for line in out.splitlines():
            parts = line.split("\t")
            if len(parts) == 3 and parts[2].endswith(" installed"):
                installed[parts[0]] = parts[1]
                if parts[2].startswith("hold "):
                    dpkg_holds.add(parts[0])
        apt_mark = self.module.get_bin_path("apt-mark")
        if apt_mark:
            rc, out, err = self.run([apt_mark, "showhold"])
            if rc == 0:
                return installed, set(line.strip() for line in out.splitlines() if line.strip())
        return installed, dpkg_holds

    def kernel_log(self):
        params = self.module.params
        wanted = params["kernel_log"]
        if wanted == "none":
            return None, "none", "disabled (kernel_log=none)"
        errors = []
        order = ["journal", "dmesg", "file"] if wanted == "auto" else [wanted]
        for source in order:
            if source == "journal":
                if not self.module.get_bin_path("journalctl"):
                    errors.append("journal: no journalctl")
                    continue
                rc, out, err = self.run(["journalctl", "-k", "--no-pager", "-o", "short",
                                         "--since", params["kernel_log_since"]])
                # In a container journalctl -k answers with the container's journal, which has no
                # kernel messages: only an answer with kernel lines counts as "read" under auto.
                if rc == 0 and (wanted == "journal" or " kernel: " in out):
                    return out, "journal", None
                errors.append("journal: %s" % ((err or out).strip().splitlines() or ["no kernel messages"])[-1])
            elif source == "dmesg":
                dmesg = self.module.get_bin_path("dmesg")
                if not dmesg:
                    errors.append("dmesg: not installed")
                    continue
                rc, out, err = self.run([dmesg])
                if rc == 0:
                    return out, "dmesg", None
                errors.append("dmesg: %s" % (err.strip() or "rc %d" % rc))
            else:
                text = read_text(params["kernel_log_path"])
                if text is not None:
                    return text, params["kernel_log_path"], None
                errors.append("%s: not readable" % params["kernel_log_path"])
        return None, "/".join(order), "; ".join(errors)

    def instances(self):
        files = {}
        for path in sorted(glob.glob(os.path.join(self.module.params["config_dir"], "*.env"))):
            text = read_text(path)
            if text is not None:
                files[os.path.basename(path)[:-4]] = text
        return checks.instances_from_env(files)

    def nccl(self):
        """nccl facts of the deployed instances (None without ldconfig)."""
        ldconfig = self.module.get_bin_path("ldconfig", opt_dirs=["/sbin", "/usr/sbin"])
        if not ldconfig:
            return None
        try:
            return nccl_gather(self.run, ldconfig, [self.module.params["vllm_venv"]],
                               [os.path.join(self.module.params["config_dir"], "*.env")])
        except NcclGatherError as exc:
            self.module.fail_json(msg="gpu_compliance on %s: %s" % (self.host, exc), rc=exc.rc,
                                  stdout=exc.stdout, stderr=exc.stderr)

    def health(self, port):
        if not port:
            return "no port"
        try:
            response = open_url("http://127.0.0.1:%d/health" % port, method="GET",
                                timeout=self.module.params["health_timeout"], use_proxy=False)
            return response.getcode()
        except Exception as exc:  # HTTPError carries the status, others the reason
            code = getattr(exc, "code", None)
            return code if isinstance(code, int) else str(getattr(exc, "reason", exc))


def _layout(module, host, topology):
    params = module.params
    config = None
    if params["model_path"]:
        text = read_text(os.path.join(params["model_path"], "config.json"))
        if text is not None:
            try:
                config = json.loads(text)
            except ValueError as exc:
                return None, "%s/config.json is not valid JSON: %s" % (params["model_path"], exc), True
    if config is None:
        config = params["model_config"]
    if config is None:
        if params["model_path"]:
            return None, "no config.json at %s on %s and no model_config" % (params["model_path"], host), True
        return None, None, False
    if not topology.get("available"):
        return None, "no usable GPU to plan on: %s" % topology.get("reason"), True
    layout = params["layout"]
    if isinstance(layout, str) and layout.strip().lower() != "auto":
        try:
            layout = json.loads(layout)
        except ValueError:
            return None, "layout must be 'auto' or a list of instances, got %r" % layout, True
    try:
        plan = plan_layout(topology, config, layout, host=host,
                           model_name=params["model_name"] or params["model_path"] or "model",
                           model_path=params["model_path"], base_port=params["base_port"],
                           gpu_memory_utilization=params["gpu_memory_utilization"],
                           max_model_len=params["max_model_len"] or None,
                           allow_mig=params["allow_mig"])
    except LayoutError as exc:
        return None, str(exc), True
    return plan, None, True


def main():
    module = AnsibleModule(
        argument_spec=dict(
            mode=dict(type="str", default="auto", choices=["auto", "preflight", "post_deploy"]),
            topology=dict(type="dict"),
            nvidia_smi_path=dict(type="path"),
            min_driver=dict(type="str", default="530.30.02"),
            expected_gpu_count=dict(type="int", default=0),
            retired_pages_max=dict(type="int", default=0),
            packages=dict(type="dict", default={}),
            nccl_version=dict(type="str", default=""),
            nccl_cuda=dict(type="str", default=""),
            vllm_venv=dict(type="path", default="/opt/vllm/venv"),
            model_name=dict(type="str"),
            model_path=dict(type="path"),
            model_config=dict(type="dict"),
            layout=dict(type="raw", default="auto"),
            base_port=dict(type="int", default=8001),
            gpu_memory_utilization=dict(type="float", default=0.9),
            max_model_len=dict(type="int", default=0),
            allow_mig=dict(type="bool", default=False),
            config_dir=dict(type="path", default="/etc/vllm"),
            unit_file=dict(type="path", default="/etc/systemd/system/vllm@.service"),
            health_check=dict(type="bool", default=True),
            health_timeout=dict(type="float", default=5),
            kernel_log=dict(type="str", default="auto", choices=["auto", "journal", "dmesg", "file", "none"]),
            kernel_log_path=dict(type="path", default="/var/log/kern.log"),
            kernel_log_since=dict(type="str", default="-24h"),
            host_tuning_report=dict(type="path", default="/etc/ansible/facts.d/gpu_fleet_host_tuning.fact"),
            logrotate_config=dict(type="path", default="/etc/logrotate.d/vllm"),
            cron_file=dict(type="path", default="/etc/cron.d/gpu-fleet-cache-cleanup"),
            host=dict(type="str"),
        ),
        supports_check_mode=True,
    )
    p = module.params
    host = p["host"] or socket.gethostname()
    bad = []
    if p["expected_gpu_count"] < 0:
        bad.append("expected_gpu_count must be >= 0 (0 = do not judge), got %d" % p["expected_gpu_count"])
    if p["retired_pages_max"] < 0:
        bad.append("retired_pages_max must be >= 0, got %d" % p["retired_pages_max"])
    if p["min_driver"] and checks.version_tuple(p["min_driver"]) is None:
        bad.append("min_driver must be a driver version such as 530.30.02, got %r" % p["min_driver"])
    for name, version in (p["packages"] or {}).items():
        if not isinstance(version, str) or not version.strip():
            bad.append("packages.%s must be an exact apt version string, got %r" % (name, version))
    if p["nccl_version"] and not re.match(r"^\d+\.\d+\.\d+$", p["nccl_version"]):
        bad.append("nccl_version must be an NCCL version x.y.z such as 2.14.3 (cuda_stack_nccl_version), got %r"
                   % p["nccl_version"])
    if p["nccl_cuda"] and not re.match(r"^\d+\.\d+$", p["nccl_cuda"]):
        bad.append("nccl_cuda must be a CUDA version X.Y such as 11.7 (the +cudaX.Y of the NCCL build), got %r"
                   % p["nccl_cuda"])
    if bad:
        module.fail_json(msg="gpu_compliance on %s: %s" % (host, "; ".join(bad)))

    try:
        g = Gatherer(module, host)
        mode = p["mode"]
        if mode == "auto":
            mode = "post_deploy" if os.path.exists(p["unit_file"]) else "preflight"
        deployed = mode == "post_deploy"
        findings = []
        readings = {"mode": mode, "systemd": g.has_systemd}

        topology = g.topology()
        readings["gpu_count"] = topology.get("gpu_count", 0)
        readings["driver_version"] = topology.get("driver_version")
        findings += checks.check_driver(host, topology, p["min_driver"])
        findings += checks.check_gpu_count(host, topology, p["expected_gpu_count"])
        findings += checks.check_ecc(host, topology, p["retired_pages_max"])

        plan, layout_error, requested = _layout(module, host, topology)
        instances = g.instances() if deployed else None
        if not instances and plan is not None:
            instances = plan["instances"]
        readings["instances"] = instances
        findings += checks.check_nvlink(host, topology, instances)
        fm_state = g.systemctl("is-active", "nvidia-fabricmanager") if g.has_systemd else None
        findings += checks.check_fabric_manager(host, topology, fm_state)

        text, source, error = g.kernel_log()
        events = checks.parse_kernel_log(text) if text is not None else None
        readings["kernel_log_source"] = source
        readings["kernel_log_events"] = events
        findings += checks.check_kernel_log(host, events, source, error)

        findings += checks.check_layout(host, plan, layout_error, requested)

        installed, holds = g.packages(list((p["packages"] or {}).keys()))
        findings += checks.check_packages(host, p["packages"], installed, holds, deployed)

        nccl = None
        if deployed and p["nccl_version"]:
            nccl = g.nccl()
            readings["nccl_instances"] = nccl["instances"] if nccl else None
        findings += checks.check_nccl_effective(host, nccl, p["nccl_version"], p["nccl_cuda"] or None,
                                                p["vllm_venv"], deployed)

        report = None
        raw = read_text(p["host_tuning_report"])
        if raw is not None:
            try:
                report = json.loads(raw)
            except ValueError:
                report = {"sysctl_applied": {}, "governor": "not managed"}
                findings.append(checks.finding(
                    "sysctl", "warn", host, "JSON report", "%s is not valid JSON" % p["host_tuning_report"],
                    "Re-run site.yml --tags host_tuning to rewrite it."))
        live = {}
        for key in ((report or {}).get("sysctl_applied") or {}):
            value = read_text(os.path.join("/proc/sys", key.replace(".", "/")))
            live[key] = value.strip() if value is not None else None
        findings += checks.check_sysctl(host, report, live)
        governors = {}
        for path in glob.glob("/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"):
            value = read_text(path)
            if value is not None:
                governors[path.split("/")[5]] = value.strip()
        findings += checks.check_governor(host, report, governors)

        logrotate = {"binary": bool(module.get_bin_path("logrotate", opt_dirs=["/usr/sbin"])),
                     "config": os.path.isfile(p["logrotate_config"]),
                     "config_path": p["logrotate_config"]}
        cron = {"binary": bool(module.get_bin_path("cron", opt_dirs=["/usr/sbin"])),
                "config": os.path.isfile(p["cron_file"]), "config_path": p["cron_file"],
                "service": g.systemctl("is-active", "cron") if g.has_systemd and deployed else None}
        findings += checks.check_housekeeping(host, logrotate, cron, deployed)

        units, target = None, None
        if g.has_systemd and deployed:
            units = {}
            for inst in instances or []:
                unit = "vllm@%s.service" % inst["name"]
                state = {"enabled": g.systemctl("is-enabled", unit),
                         "active": g.systemctl("is-active", unit), "health": None}
                if p["health_check"] and state["active"] == "active":
                    state["health"] = g.health(inst.get("port"))
                units[inst["name"]] = state
            target = {"enabled": g.systemctl("is-enabled", "vllm.target"),
                      "active": g.systemctl("is-active", "vllm.target")}
        readings["units"] = units
        findings += checks.check_units(host, instances if deployed else [], units, target, deployed)
    except Exception as exc:  # never a traceback: say what failed and where
        module.fail_json(msg="gpu_compliance on %s: unexpected %s: %s (a bug in gpu_fleet.vllm_serving; "
                             "please report it)" % (host, type(exc).__name__, exc))
    module.exit_json(changed=False, findings=findings, summary=checks.summarize(host, findings, mode),
                     readings=readings)


if __name__ == "__main__":
    main()
