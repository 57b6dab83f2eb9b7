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
  - Gathers its own readings, read-only - C(nvidia-smi -q -x), C(topo -m), C(nvlink -s), C(-L) and the
    NVIDIA PCI functions in C(/sys) (unless O(topology) is given), the GPU device nodes in O(dev_dir),
    whether systemd runs the host, C(dpkg-query) (also C(nvidia-fabricmanager*)), C(apt-mark showhold),
    C(systemctl) (also C(nvidia-persistenced), C(nvidia-fabricmanager)), C(/proc/driver/nvidia-nvswitch/devices),
    C(dcgmi diag) (only with O(dcgm_diag_level) > 0, bounded by C(timeout)), the kernel log,
    C(/proc/sys), cpufreq in sysfs, logrotate and cron files, the vLLM instances' environment files
    and their C(GET /health) - and runs every check of the catalog in
    C(plugins/module_utils/_compliance.py) on them.
  - What to compare with comes from the records the roles leave on the host, the local facts
    C(gpu_fleet_cuda_stack.fact) (pins, holds, NCCL build and library), C(gpu_fleet_vllm_server.fact)
    (config directory, venv, unit template, layouts and instances), C(gpu_fleet_housekeeping.fact)
    (logrotate and cron paths) and C(gpu_fleet_host_tuning.fact) in O(facts_dir) - not from path
    options or the roles' variables.
  - Where a role has recorded nothing yet (a bare host, before a rollout) each of its checks
    reports status C(not_applied), a warning, with the expected values of the collection's pin
    rules (C(plugins/module_utils/_cuda_pins.py)) for the settings in O(cuda_stack); it never passes.
  - Each check returns findings with C(id), C(severity) (C(fail), C(warn), C(info)), C(status)
    (C(pass), C(fail), C(warn), C(not_applied), C(not_applicable)), C(host), C(expected), C(actual) and
    C(remediation). A check whose input is absent on the host (no NVLink, no cpufreq, no readable
    kernel log, turned off, no systemd) says so with status C(not_applicable); it never fails for that.
  - Two checks fail a host on which nothing can be served, whatever else passes - C(systemd)
    (systemd is not PID 1 - no C(/run/systemd/system) - or C(systemctl) is missing; the vLLM
    instances are systemd units) and C(gpu_devices) (no C(/dev/nvidia<minor>) character device,
    or none for a GPU nvidia-smi lists).
  - The module itself does not fail when the host is not compliant; it returns the findings and
    a summary (C(compliant)). C(playbooks/compliance.yml) (role gpu_fleet.vllm_serving.compliance) turns them into a table, a JSON report,
    JUnit XML and a non-zero exit. It fails only on bad parameters or unreadable tool output.
  - Never changes anything on the host; check mode runs the same reads.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  mode:
    description:
      - C(pre_deploy) - before a rollout; what the rollout will change (packages not installed yet,
        units not started) is not judged; what no role has recorded yet is C(not_applied).
      - C(post_deploy) - everything must be in place, as recorded.
      - C(auto) - C(post_deploy) when the C(vllm_server) role's record exists in O(facts_dir), else C(pre_deploy).
      - C(preflight) - deprecated alias of C(pre_deploy) (the result reports C(pre_deploy));
        it will be removed in version 1.0.0 of the collection.
    type: str
    choices: [auto, pre_deploy, post_deploy, preflight]
    default: auto
  topology:
    description:
      - C(gpu_topology) facts from M(gpu_fleet.vllm_serving.gpu_topology_facts). When omitted the
        module runs nvidia-smi itself (NUMA placement then comes from C(topo -m) only).
    type: dict
  nvidia_smi_path:
    description: Path of nvidia-smi; default is the one on C(PATH). Used when O(topology) is omitted.
    type: path
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
      - Pinned packages, name to exact apt version (C({libnccl2 2.14.3-1+cuda11.7})), each to be
        installed at that version and held - instead of the pins C(cuda_stack) recorded (or, before
        it ran, the pins of O(cuda_stack)).
    type: dict
    default: {}
  cuda_stack:
    description:
      - The C(cuda_stack) settings the inventory asks for, named as the role's variables without
        their C(cuda_stack_) prefix; an unset (null) one takes the role's default.
      - Their pins (the collection's pin rules, also the C(gpu_fleet.vllm_serving.cuda_pins) filter)
        are the expected values where C(cuda_stack) has recorded nothing yet, and are compared with
        the recorded ones (a difference fails after a rollout, warns before it). The driver minimum
        is that of the recorded CUDA release, else of this one.
    type: dict
    default: {}
    suboptions:
      cuda_version:
        description: CUDA release (C(cuda_stack_cuda_version)).
        type: str
      cuda_package_version:
        description: Full apt version of the toolkit package (C(cuda_stack_cuda_package_version)).
        type: str
      nccl_version:
        description: NCCL release (C(cuda_stack_nccl_version)).
        type: str
      nccl_build:
        description: Full NCCL build (C(cuda_stack_nccl_build)).
        type: str
      install_nccl:
        description: Whether NCCL is pinned (C(cuda_stack_install_nccl)).
        type: bool
      nccl_install_method:
        description: C(apt) or C(tarball) (C(cuda_stack_nccl_install_method)).
        type: str
      nccl_prefix:
        description: Directory of tarball builds (C(cuda_stack_nccl_prefix)).
        type: path
      nccl_libdir:
        description: Directory of the apt build's library (C(cuda_stack_nccl_libdir)).
        type: path
  facts_dir:
    description:
      - Directory of the roles' records (local facts), C(gpu_fleet_facts_dir).
    type: path
    default: /etc/ansible/facts.d
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
  vllm_pip_spec:
    description:
      - The vLLM the host should run (C(vllm_server_pip_spec)), for the C(vllm_stack) check; the release
        table of the collection gives what that release brings and needs.
    type: str
    default: vllm==0.6.3.post1
    version_added: 0.4.0
  vllm_nccl_so_path:
    description: As C(vllm_server_nccl_so_path), for the NCCL the plan would choose before a rollout.
    type: str
    default: auto
    version_added: 0.4.0
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
  dcgm_diag_level:
    description:
      - Run C(dcgmi diag -r <level>) (NVIDIA DCGM) and turn its failures into C(dcgm_diag) findings;
        C(0) (the default) does not run it. Level 1 takes seconds, 2 about two minutes, 3 and 4 much
        longer and load the GPUs - never on a host that serves.
      - Not applicable (with the reason) where C(dcgmi) is not installed or MIG is enabled on a GPU
        (dcgmi diag does not support MIG). A run that gives no result fails, with its output.
    type: int
    default: 0
    choices: [0, 1, 2, 3, 4]
  host:
    description: Name used in findings; default the host name.
    type: str
  dev_dir:
    description: Directory of the device nodes (C(/dev/nvidia<minor>)). Only tests change it.
    type: path
    default: /dev
    version_added: 0.3.0
  systemd_runtime_dir:
    description:
      - The directory systemd creates when it booted the host (sd_booted(3)); the host runs systemd
        when it exists and C(systemctl) is on C(PATH). Only tests change it.
    type: path
    default: /run/systemd/system
    version_added: 0.3.0
notes:
  - Supports check mode (it only reads).
  - Runs as root for C(dmesg) and the ECC counters; as another user some checks become not applicable.
seealso:
  - module: gpu_fleet.vllm_serving.gpu_topology_facts
  - module: gpu_fleet.vllm_serving.vllm_layout
"""

EXAMPLES = r"""
- name: Check the host (before a rollout, or after it)
  gpu_fleet.vllm_serving.gpu_compliance:
    expected_gpu_count: 8
    cuda_stack:
      cuda_version: "12.1"
      nccl_version: "2.14.3"
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
      description: Check id (C(gpu_driver), C(gpu_devices), C(gpu_count), C(ecc_mode), C(ecc_uncorrectable),
        C(ecc_remap), C(persistence_mode), C(nvlink), C(fabric_manager), C(kernel_log), C(dcgm_diag), C(layout), C(packages),
        C(nccl_effective), C(sysctl), C(governor), C(logrotate), C(cron), C(systemd), C(units), C(vllm_stack)).
      type: str
    check:
      description: One-line title of the check.
      type: str
    subject:
      description: What the finding is about (C(host), C(GPU 3), C(libnccl2), C(vllm@n0-0) ...).
      type: str
    status:
      description: C(pass), C(fail), C(warn), C(not_applied) (its role recorded nothing here yet) or C(not_applicable).
      type: str
    severity:
      description: C(fail) (not fit to serve), C(warn) (also C(not_applied)) or C(info) (passed or not applicable).
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
           "counts": {"pass": 30, "fail": 1, "warn": 0, "not_applied": 0, "not_applicable": 4},
           "failed_checks": ["nvlink"], "warned_checks": []}
  contains:
    host:
      description: Host name.
      type: str
    mode:
      description: C(pre_deploy) or C(post_deploy) (O(mode=auto) resolved, O(mode=preflight) reported as C(pre_deploy)).
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
  description:
    - The raw inputs the checks judged (for the report; kernel-log events, instances, unit states),
      C(records) (which roles recorded what they applied) and C(pins) (the expected pins and where
      they come from, C(record) or C(pin rules)).
  returned: always
  type: dict
  sample: {"kernel_log_source": "journal", "kernel_log_events": [], "instances": [], "systemd": true,
           "pid1": "systemd", "device_nodes": ["nvidia0", "nvidia1"],
           "records": {"cuda_stack": true, "vllm_server": true, "housekeeping": true, "host_tuning": true}}
"""

import glob
import gzip
import os
import re
import socket
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.urls import open_url

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance as checks
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _compliance_records as records_of
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _cuda_pins
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _host_readings as readings_of
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout import plan_layout
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._layout_model import LayoutError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nccl_gather import (
    NcclGatherError,
    gather as nccl_gather,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _safe_read
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_stack as stack_of
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._release_plan import (
    ReleaseError, choose_nccl, largest_group)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._smi_errors import TopologyParseError
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._vllm_releases import release_for_spec
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._dcgm import parse_dcgmi_diag
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology import (
    build_gpu_topology,
    pci_bus_ids,
    unavailable_topology,
)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._topology_gather import (
    read_sysfs,
    read_text,
    run_nvidia_smi,
)

ENV = {"LC_ALL": "C"}

CUDA_STACK_SPEC = dict(
    cuda_version=dict(type="str"),
    cuda_package_version=dict(type="str"),
    nccl_version=dict(type="str"),
    nccl_build=dict(type="str"),
    install_nccl=dict(type="bool"),
    nccl_install_method=dict(type="str"),   # apt | tarball, checked with the pin rules (null allowed)
    nccl_prefix=dict(type="path"),
    nccl_libdir=dict(type="path"),
)

ARGUMENT_SPEC = dict(
    mode=dict(type="str", default="auto", choices=list(checks.MODES) + sorted(checks.MODE_ALIASES)),
    topology=dict(type="dict"),
    nvidia_smi_path=dict(type="path"),
    expected_gpu_count=dict(type="int", default=0),
    retired_pages_max=dict(type="int", default=0),
    packages=dict(type="dict", default={}),
    cuda_stack=dict(type="dict", default={}, options=CUDA_STACK_SPEC),
    facts_dir=dict(type="path", default="/etc/ansible/facts.d"),
    model_name=dict(type="str"),
    model_path=dict(type="path"),
    model_config=dict(type="dict"),
    layout=dict(type="raw", default="auto"),
    base_port=dict(type="int", default=8001),
    gpu_memory_utilization=dict(type="float", default=0.9),
    max_model_len=dict(type="int", default=0),
    allow_mig=dict(type="bool", default=False),
    vllm_pip_spec=dict(type="str", default="vllm==0.6.3.post1"),
    vllm_nccl_so_path=dict(type="str", default="auto"),
    health_check=dict(type="bool", default=True),
    health_timeout=dict(type="float", default=5),
    kernel_log=dict(type="str", default="auto", choices=["auto", "journal", "dmesg", "file", "none"]),
    kernel_log_path=dict(type="path", default="/var/log/kern.log"),
    kernel_log_since=dict(type="str", default="-24h"),
    dcgm_diag_level=dict(type="int", default=0, choices=[0, 1, 2, 3, 4]),
    host=dict(type="str"),
    dev_dir=dict(type="path", default="/dev"),
    systemd_runtime_dir=dict(type="path", default="/run/systemd/system"),
)


# --- reading the host (all I/O is here) ----------------------------------------------------------

class Gatherer(object):
    def __init__(self, module, host):
        self.module = module
        self.params = module.params
        self.host = host
        self.systemd_booted = os.path.isdir(self.params["systemd_runtime_dir"])
        self.systemctl_path = module.get_bin_path("systemctl")
        self.has_systemd = self.systemd_booted and bool(self.systemctl_path)

    def run(self, argv):
        return self.module.run_command(argv, environ_update=ENV)

    def topology(self):
        if self.params["topology"]:
            return self.params["topology"]
        smi = self.params["nvidia_smi_path"] or self.module.get_bin_path("nvidia-smi")
        if not smi or not os.access(smi, os.X_OK):
            return unavailable_topology("nvidia-smi not found (%s)" % (smi or "PATH"))
        results = run_nvidia_smi(self.run, smi)
        try:
            return build_gpu_topology(results, read_sysfs("/sys", pci_bus_ids(results)))
        except TopologyParseError as exc:
            self.module.fail_json(
                msg="gpu_compliance on %s: cannot read the output of %s: %s. Add the output to "
                    "tests/fixtures/real/ and extend the parser of that command in plugins/module_utils/ "
                    "(_topo_matrix.py, _query_xml.py or _nvlink.py)."
                    % (self.host, smi, exc), outputs=results)

    def pid1(self):
        """Name of process 1 (/proc/1/comm), or None."""
        return (read_text("/proc/1/comm") or "").strip() or None

    def device_nodes(self):
        """(GPU device nodes, impostors, error) of O(dev_dir) (_host_readings.gpu_device_nodes)."""
        dev_dir = self.params["dev_dir"]
        try:
            names = os.listdir(dev_dir)
        except OSError as exc:
            return [], [], str(exc)
        entries = []
        for name in names:
            if re.match(readings_of.NVIDIA_GPU_NODE, name):
                try:
                    entries.append((name, stat.S_ISCHR(os.stat(os.path.join(dev_dir, name)).st_mode)))
                except OSError:
                    entries.append((name, False))
        nodes, impostors = readings_of.gpu_device_nodes(entries)
        return nodes, impostors, None

    def systemctl(self, verb, unit):
        rc, out, err = self.run(["systemctl", verb, unit])
        return readings_of.first_answer(out, err)

    def packages(self, names):
        """(installed {name: version}, held names); (None, None) without dpkg-query."""
        if not names:
            return {}, set()
        if not self.module.get_bin_path("dpkg-query"):
            return None, None
        rc, out, err = self.run(["dpkg-query", "-W", "-f=%s" % readings_of.DPKG_QUERY_FORMAT] + sorted(names))
        installed, dpkg_holds = readings_of.parse_dpkg_query(out)
        apt_mark = self.module.get_bin_path("apt-mark")
        if apt_mark:
            rc, out, err = self.run([apt_mark, "showhold"])
            if rc == 0:
                return installed, readings_of.parse_showhold(out)
        return installed, dpkg_holds

    def nvswitch_devices(self, root="/proc/driver/nvidia-nvswitch/devices"):
        """Entries of the driver's NVSwitch device directory; None when it cannot be read."""
        try:
            return sorted(os.listdir(root))
        except OSError:
            return None

    def fabricmanager_packages(self):
        """{package: version} of the installed nvidia-fabricmanager* packages; None without dpkg-query."""
        installed, _holds = self.packages(["nvidia-fabricmanager*"])
        if installed is None:
            return None
        return dict((name, version) for name, version in installed.items() if not name.endswith("-dev"))

    # kernel log: one reader per source, each (text, source, None) or (None, None, why not)
    def _journal(self):
        if not self.module.get_bin_path("journalctl"):
            return None, None, "journal: no journalctl"
        rc, out, err = self.run(["journalctl", "-k", "--no-pager", "-o", "short",
                                 "--since", self.params["kernel_log_since"]])
        # In a container journalctl -k answers with the container's journal, which has no
        # kernel messages: only an answer with kernel lines counts as "read" under auto.
        if rc == 0 and (self.params["kernel_log"] == "journal" or " kernel: " in out):
            return out, "journal", None
        return None, None, "journal: %s" % ((err or out).strip().splitlines() or ["no kernel messages"])[-1]

    def _dmesg(self):
        dmesg = self.module.get_bin_path("dmesg")
        if not dmesg:
            return None, None, "dmesg: not installed"
        rc, out, err = self.run([dmesg])
        if rc == 0:
            return out, "dmesg", None
        return None, None, "dmesg: %s" % (err.strip() or "rc %d" % rc)

    def _log_file(self):
        path = self.params["kernel_log_path"]
        text = read_text(path)
        if text is not None:
            return text, path, None
        return None, None, "%s: not readable" % path

    KERNEL_LOG_READERS = {"journal": _journal, "dmesg": _dmesg, "file": _log_file}

    def kernel_log(self):
        """(text or None, source, error or None) from the first source of O(kernel_log) that answers."""
        wanted = self.params["kernel_log"]
        if wanted == "none":
            return None, "none", "disabled (kernel_log=none)"
        order = ["journal", "dmesg", "file"] if wanted == "auto" else [wanted]
        errors = []
        for source in order:
            text, name, error = self.KERNEL_LOG_READERS[source](self)
            if error is None:
                return text, name, None
            errors.append(error)
        return None, "/".join(order), "; ".join(errors)

    def record_texts(self):
        """{role: text of its record in O(facts_dir), or None}."""
        return dict((role, read_text(records_of.record_path(self.params["facts_dir"], role)))
                    for role in records_of.RECORDS)

    def nccl(self, venv, env_files):
        """nccl facts of the deployed instances (None without ldconfig)."""
        ldconfig = self.module.get_bin_path("ldconfig", opt_dirs=["/sbin", "/usr/sbin"])
        if not ldconfig:
            return None
        try:
            return nccl_gather(self.run, ldconfig, [venv], env_files)
        except NcclGatherError as exc:
            self.module.fail_json(msg="gpu_compliance on %s: %s" % (self.host, exc), rc=exc.rc,
                                  stdout=exc.stdout, stderr=exc.stderr)

    def venv_files(self, venv):
        """(dist-info names, vllm version file text, torch/version.py text) of the virtualenv."""
        sites = sorted(glob.glob(os.path.join(venv or "/nonexistent", "lib", "python3*", "site-packages")))
        if not sites:
            return [], None, None
        site = sites[-1]
        try:
            names = [n for n in os.listdir(site) if n.endswith(".dist-info")]
        except OSError:
            names = []
        version = read_text(os.path.join(site, "vllm", "_version.py")) or read_text(
            os.path.join(site, "vllm", "version.py"))
        return names, version, read_text(os.path.join(site, "torch", "version.py"))

    def instance_log(self, path, user):
        """(text or None, why not): an instance's log since its last start, read without following
        the service user's links (_safe_read): the live file, then - while no start of vLLM is in
        what was read - its rotations (housekeeping's logrotate: <log>.1, then <log>.N.gz)."""
        uids, names = _safe_read.service_owners(user) if user else ({0}, "root")
        text, first_error = "", None
        for index, name in enumerate([path, path + ".1"] + ["%s.%d.gz" % (path, n) for n in range(2, 6)]):
            try:
                data = _safe_read.read_tail(name, uids, 4 * 1024 * 1024, names)
            except _safe_read.Refused as exc:
                if index == 0:
                    first_error = exc.reason
                break
            except (IOError, OSError) as exc:
                if index == 0:
                    first_error = exc.strerror or str(exc)
                break
            if name.endswith(".gz"):
                try:
                    data = gzip.decompress(data)
                except (IOError, OSError, EOFError):
                    break
            text = data.decode("utf-8", "replace") + text
            if stack_of.START_MARKER.search(text):
                break
        if first_error:
            return None, first_error
        return text, None

    def health(self, port):
        if not port:
            return "no port"
        try:
            response = open_url("http://127.0.0.1:%d/health" % port, method="GET",
                                timeout=self.params["health_timeout"], use_proxy=False)
            return response.getcode()
        except Exception as exc:  # HTTPError carries the status, others the reason
            code = getattr(exc, "code", None)
            return code if isinstance(code, int) else str(getattr(exc, "reason", exc))

    def sysctl_values(self, keys):
        """{dotted key: live value or None} from /proc/sys."""
        live = {}
        for key in keys:
            value = read_text(readings_of.sysctl_path(key))
            live[key] = value.strip() if value is not None else None
        return live

    def sysctl_absent(self, keys):
        """Those of ``keys`` whose absence can be the wanted state (ABSENT_MEANS) that have no
        /proc/sys entry here."""
        return set(key for key in keys if key in readings_of.ABSENT_MEANS
                   and not os.path.lexists(readings_of.sysctl_path(key)))

    def governors(self):
        """{cpuN: scaling_governor} of every CPU with cpufreq."""
        found = {}
        for path in glob.glob(readings_of.GOVERNOR_GLOB):
            value = read_text(path)
            if value is not None:
                found[readings_of.cpu_of(path)] = value.strip()
        return found

    def tool(self, name):
        return bool(self.module.get_bin_path(name, opt_dirs=["/usr/sbin"]))

    def unit_state(self, inst, prefix):
        unit = "%s@%s.service" % (prefix, inst["name"])
        state = {"enabled": self.systemctl("is-enabled", unit), "active": self.systemctl("is-active", unit),
                 "health": None}
        if self.params["health_check"] and state["active"] == "active":
            state["health"] = self.health(inst.get("port"))
        return state

    def plan(self, topology):
        """(plan or None, error or None, requested) of the layout check."""
        p = self.params
        config_text = read_text(os.path.join(p["model_path"], "config.json")) if p["model_path"] else None
        config, layout, error, requested = checks.layout_request(p, config_text, topology, self.host)
        if config is None or error:
            return None, error, requested
        try:
            return plan_layout(topology, config, layout, host=self.host,
                               model_name=p["model_name"] or p["model_path"] or "model",
                               model_path=p["model_path"], base_port=p["base_port"],
                               gpu_memory_utilization=p["gpu_memory_utilization"],
                               max_model_len=p["max_model_len"] or None,
                               allow_mig=p["allow_mig"], fp8_moe_tp_padding=_fp8_padding(p["vllm_pip_spec"])), None, True
        except LayoutError as exc:
            return None, str(exc), True


def _spec_release(spec):
    """The facts of the release the inventory's vllm_server_pip_spec pins, or None when the table
    cannot answer for it (the plan refuses such a spec; here it leaves the checks without facts)."""
    try:
        return release_for_spec(spec, allow_unlisted=True)
    except ReleaseError:
        return None


def _fp8_padding(spec):
    """The release's fp8_moe_tp_padding (False when the spec is not a listed release)."""
    return bool((_spec_release(spec) or {}).get("fp8_moe_tp_padding"))


# --- the checks, in catalog order: each step reads what it needs and returns its findings --------

class Inspection(object):
    """One run: the gatherer, the parameters, the resolved mode, the roles' records, the expected
    pins and what earlier steps read."""

    def __init__(self, gatherer, mode, records, expected):
        self.g = gatherer
        self.p = gatherer.params
        self.host = gatherer.host
        self.mode = mode
        self.deployed = mode == "post_deploy"
        self.records = records
        self.expected = expected
        self.readings = {"mode": mode, "systemd": gatherer.has_systemd,
                         "records": dict((role, rec is not None) for role, rec in records.items()),
                         "pins": {"source": expected["source"], "wanted": expected["wanted"]}}
        self.topology = None
        self.plan = (None, None, False)
        self.instances = None


def _gpus(run):
    run.topology = topology = run.g.topology()
    run.readings["gpu_count"] = topology.get("gpu_count", 0)
    run.readings["driver_version"] = topology.get("driver_version")
    nodes, impostors, error = run.g.device_nodes()
    run.readings["device_nodes"] = nodes
    return (checks.check_driver(run.host, topology, run.expected["min_driver"])
            + checks.check_gpu_devices(run.host, nodes, impostors, topology, run.p["dev_dir"], error)
            + checks.check_gpu_count(run.host, topology, run.p["expected_gpu_count"])
            + checks.check_ecc(run.host, topology, run.p["retired_pages_max"]))


def _nvlink(run):
    run.plan = run.g.plan(run.topology)
    instances = records_of.recorded_instances(run.records["vllm_server"]) if run.deployed else None
    if not instances and run.plan[0] is not None:
        instances = run.plan[0]["instances"]
    run.instances = run.readings["instances"] = instances
    return checks.check_nvlink(run.host, run.topology, instances)


def _persistence(run):
    state = run.g.systemctl("is-active", "nvidia-persistenced") if run.g.has_systemd else None
    running = None if state is None else state == "active"
    return checks.check_persistence(run.host, run.topology, running)


def _fabric_manager(run):
    state = run.g.systemctl("is-active", "nvidia-fabricmanager") if run.g.has_systemd else None
    switches = run.g.nvswitch_devices()
    packages = run.g.fabricmanager_packages() if switches or checks.is_nvswitch_system(run.topology) else None
    run.readings["nvswitch_devices"] = switches
    return checks.check_fabric_manager(run.host, run.topology, state, switches, packages)


# seconds each level may take before the check gives up (coreutils timeout; 124 is its exit code)
DCGM_TIMEOUT = {1: 120, 2: 600, 3: 3600, 4: 7200}


def _dcgm_diag(run):
    level = run.p["dcgm_diag_level"]
    dcgmi = run.g.module.get_bin_path("dcgmi") if level else None
    reason = checks.dcgm_skip_reason(run.topology, level, dcgmi)
    if reason:
        return checks.check_dcgm_diag(run.host, level, reason)
    timeout = run.g.module.get_bin_path("timeout")
    argv = ([timeout, str(DCGM_TIMEOUT[level])] if timeout else []) + [dcgmi, "diag", "-r", str(level)]
    rc, out, err = run.g.run(argv)
    if timeout and rc == 124:
        err += "\ndcgmi diag -r %d did not finish within %d s" % (level, DCGM_TIMEOUT[level])
    run.readings["dcgm_diag_rc"] = rc
    return checks.check_dcgm_diag(run.host, level, None, parse_dcgmi_diag(out + "\n" + err), rc, out + err)


def _kernel_log(run):
    text, source, error = run.g.kernel_log()
    events = checks.parse_kernel_log(text) if text is not None else None
    run.readings["kernel_log_source"] = source
    run.readings["kernel_log_events"] = events
    return checks.check_kernel_log(run.host, events, source, error)


def _layout(run):
    plan, error, requested = run.plan
    return checks.check_layout(run.host, plan, error, requested)


def _packages(run):
    e = run.expected
    installed, holds = run.g.packages(list(e["wanted"]))
    out = checks.check_packages(run.host, e["wanted"], installed, holds, run.deployed,
                                recorded=e["recorded"] or e["explicit"])
    if e["recorded"] and not e["explicit"]:
        out += checks.check_recorded_pins(run.host, e["wanted"], e["requested_pins"], run.deployed)
    return out + checks.check_foreign_holds(run.host, e["wanted"], holds, e["own_holds"])


def _nccl_effective(run):
    e, vllm = run.expected, run.records["vllm_server"]
    missing = "cuda_stack" if not e["recorded"] else ("vllm_server" if vllm is None else None)
    nccl = None
    choice = ((vllm or {}).get("release") or {}).get("nccl")
    torch_chosen = (choice or {}).get("choice") == "torch"
    if run.deployed and not missing and (torch_chosen or (e["install_nccl"] and e["nccl_release"])):
        nccl = run.g.nccl(vllm.get("venv") or "", records_of.instance_env_files(vllm))
        run.readings["nccl_instances"] = nccl["instances"] if nccl else None
    return checks.check_nccl_effective(run.host, nccl, e["nccl_release"] if e["install_nccl"] else "",
                                       e["nccl_cuda"] or None, (vllm or {}).get("venv"), run.deployed,
                                       missing_record=missing, choice=choice)


def _host_tuning(run):
    report = run.records["host_tuning"]
    live = run.g.sysctl_values((report or {}).get("sysctl_applied") or {})
    absent = run.g.sysctl_absent((report or {}).get("sysctl_not_applicable") or {})
    return (checks.check_sysctl(run.host, report, live, absent)
            + checks.check_governor(run.host, report, run.g.governors()))


def _housekeeping(run):
    g, record = run.g, run.records["housekeeping"] or {}
    paths = dict((key, record.get(key) or "") for key in ("logrotate_config", "cron_file"))
    logrotate = {"binary": g.tool("logrotate"), "config_path": paths["logrotate_config"],
                 "config": bool(paths["logrotate_config"]) and os.path.isfile(paths["logrotate_config"])}
    cron = {"binary": g.tool("cron"), "config_path": paths["cron_file"],
            "config": bool(paths["cron_file"]) and os.path.isfile(paths["cron_file"]),
            "service": g.systemctl("is-active", "cron") if g.has_systemd and run.deployed else None}
    return checks.check_housekeeping(run.host, logrotate, cron, run.deployed,
                                     recorded=run.records["housekeeping"] is not None)


def _systemd(run):
    run.readings["pid1"] = pid1 = run.g.pid1()
    return checks.check_systemd(run.host, run.g.systemd_booted, run.g.systemctl_path, pid1, run.p["systemd_runtime_dir"])


def _units(run):
    record = run.records["vllm_server"]
    layout = records_of.active_layout(record) or {"unit": "vllm", "target": "vllm.target"}
    units, target = None, None
    if run.g.has_systemd and run.deployed and record is not None:
        units = dict((inst["name"], run.g.unit_state(inst, layout["unit"])) for inst in run.instances or [])
        target = {"enabled": run.g.systemctl("is-enabled", layout["target"]),
                  "active": run.g.systemctl("is-active", layout["target"])}
    run.readings["units"] = units
    return checks.check_units(run.host, run.instances if run.deployed else [], units, target, run.deployed,
                              recorded=record is not None, unit=layout["unit"], target_name=layout["target"])


def _planned_release(run):
    """The release the inventory asks for, with the NCCL the plan would choose (or None)."""
    release = _spec_release(run.p["vllm_pip_spec"])
    if release is None:
        return None
    e = run.expected
    plan = run.plan[0] or {}
    pinned = e["nccl_release"] if e["install_nccl"] else None
    decision, _problem = choose_nccl(release, run.p["vllm_nccl_so_path"], largest_group(plan.get("instances")), pinned)
    return dict(release, nccl=decision)


def _stack_instances(run, record):
    layout = records_of.active_layout(record) or {}
    log_dir = record.get("log_dir") or "/var/log/vllm"
    out = []
    for inst in run.instances or []:
        unit = "%s@%s" % (layout.get("unit") or "vllm", inst["name"])
        state = (run.readings.get("units") or {}).get(inst["name"]) or {}
        path = os.path.join(log_dir, "%s%s.log" % (layout.get("log_prefix") or "", inst["name"]))
        entry = dict(inst, unit=unit, active=state.get("active") == "active", log_path=path)
        if entry["active"]:
            entry["log"], entry["log_error"] = run.g.instance_log(path, record.get("service_user"))
        out.append(entry)
    return out


def _vllm_stack(run):
    record = run.records["vllm_server"]
    reading = dict(deployed=run.deployed, recorded=record is not None, spec=run.p["vllm_pip_spec"],
                   driver=(run.topology or {}).get("driver_version"), pins=run.expected)
    if run.deployed and record is not None:
        names, version_text, torch_text = run.g.venv_files(record.get("venv"))
        reading.update(dists=stack_of.parse_dist_infos(names), version_file=stack_of.parse_version_file(version_text),
                       torch_cuda=stack_of.parse_torch_cuda(torch_text), release=record.get("release"),
                       instances=_stack_instances(run, record))
        run.readings["vllm_stack"] = dict(dists=reading["dists"], version_file=reading["version_file"],
                                          torch_cuda=reading["torch_cuda"])
    else:
        reading["release"] = _planned_release(run)
    return stack_of.check_vllm_stack(run.host, reading)


STEPS = (_gpus, _persistence, _nvlink, _fabric_manager, _kernel_log, _dcgm_diag, _layout, _packages, _nccl_effective, _host_tuning,
         _housekeeping, _systemd, _units, _vllm_stack)


CATALOG_ORDER = dict((check_id, index) for index, check_id in enumerate(checks.CHECKS))


def inspect(gatherer, mode, records, expected, record_findings=()):
    """Run every step; return (findings in catalog order, readings)."""
    run = Inspection(gatherer, mode, records, expected)
    findings = list(record_findings)
    for step in STEPS:
        findings += step(run)
    findings.sort(key=lambda item: CATALOG_ORDER[item["id"]])   # stable: a check's own order stays
    return findings, run.readings


def requested_pins(params):
    """The pin rules applied to O(cuda_stack) (unset settings: the role's defaults)."""
    given = dict((key, value) for key, value in (params["cuda_stack"] or {}).items() if value is not None)
    return _cuda_pins.resolve(given)


def main():
    module = AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True)
    p = module.params
    host = p["host"] or socket.gethostname()
    requested = requested_pins(p)
    bad = checks.parameter_problems(p) + ["cuda_stack: %s" % why for why in requested["problems"]]
    if bad:
        module.fail_json(msg="gpu_compliance on %s: %s" % (host, "; ".join(bad)))
    if p["mode"] in checks.MODE_ALIASES:
        module.deprecate("gpu_compliance: mode=%s is a deprecated alias; use mode=%s"
                         % (p["mode"], checks.MODE_ALIASES[p["mode"]]),
                         version="1.0.0", collection_name="gpu_fleet.vllm_serving")
    try:
        gatherer = Gatherer(module, host)
        records, record_findings = records_of.parse_records(gatherer.record_texts(), p["facts_dir"], host)
        mode = checks.resolve_mode(p["mode"], records["vllm_server"] is not None)
        expected = records_of.expected_pins(requested, records["cuda_stack"], p["packages"])
        findings, readings = inspect(gatherer, mode, records, expected, record_findings)
    except Exception as exc:  # never a traceback: say what failed and where
        module.fail_json(msg="gpu_compliance on %s: unexpected %s: %s (a bug in gpu_fleet.vllm_serving; "
                             "please report it)" % (host, type(exc).__name__, exc))
    module.exit_json(changed=False, findings=findings, summary=checks.summarize(host, findings, mode),
                     readings=readings)


if __name__ == "__main__":
    main()
