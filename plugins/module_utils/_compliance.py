# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The compliance check catalog: readings in, findings out.

Pure code: no Ansible imports, no I/O. The ``gpu_compliance`` module gathers the readings
(nvidia-smi through ``_topology``, dpkg, systemd, files) and calls the checks here; unit tests
call them with planted readings. Every check returns a list of findings::

    {"id": "ecc_uncorrectable", "check": "...", "subject": "GPU 3", "status": "fail",
     "severity": "fail", "host": "gpu01", "expected": "0", "actual": "2",
     "remediation": "..."}

``status`` is what happened: ``pass``, ``fail``, ``warn``, ``not_applied`` (the role that applies
it has recorded nothing on this host yet: before a rollout; a warning, never a pass) or
``not_applicable`` (the input is absent on this host: no NVLink, no cpufreq, turned off ...;
the checks that need systemd are not applicable without it, and ``systemd`` fails such a host).
``severity`` is what it means for the host: ``fail`` (not fit to serve), ``warn`` (look at it),
``info`` (passed or not applicable). A host is compliant when no finding has severity ``fail``.

Also here: the kernel-log parser for Xid events and "fallen off the bus" (dmesg, syslog and
journal forms), and the module's inputs: its parameter checks, the check mode (``auto``,
``pre_deploy``, ``post_deploy``) and the layout request. The roles' records (local facts) are read
in ``_compliance_records``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._host_readings import absent_satisfies
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._xid import classify as classify_xid
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._xid import root_cause

__all__ = [
    "CHECKS",
    "STATUSES",
    "MODES",
    "MODE_ALIASES",
    "resolve_mode",
    "parameter_problems",
    "layout_request",
    "finding",
    "not_applied",
    "summarize",
    "version_tuple",
    "parse_kernel_log",
    "tp_groups",
    "check_driver",
    "check_gpu_devices",
    "check_gpu_count",
    "check_persistence",
    "check_ecc",
    "check_nvlink",
    "check_fabric_manager",
    "check_kernel_log",
    "check_dcgm_diag",
    "check_layout",
    "check_packages",
    "check_foreign_holds",
    "check_nccl_effective",
    "check_sysctl",
    "check_governor",
    "check_housekeeping",
    "check_systemd",
    "check_units",
]

# id -> one-line title. The ids are the stable names of the catalog (report keys, JUnit test
# names, the testinfra suite's parameters).
CHECKS = {
    "gpu_driver": "NVIDIA driver present and new enough for the pinned CUDA",
    "gpu_devices": "NVIDIA device nodes (/dev/nvidia<minor>, character devices) present for every GPU",
    "gpu_count": "GPU count as expected, every GPU healthy",
    "ecc_mode": "ECC enabled on every GPU",
    "ecc_uncorrectable": "no uncorrectable ECC errors",
    "ecc_remap": "no pending or failed row remapping, retired pages under the threshold",
    "persistence_mode": "persistence mode on for every GPU (nvidia-persistenced)",
    "nvlink": "NVLinks of every planned tensor-parallel group active",
    "fabric_manager": "NVSwitch fabric ready: Fabric Manager at the driver's version and active where NVSwitches are, every GPU's fabric Completed",
    "kernel_log": "no Xid events or GPUs fallen off the bus in the kernel log",
    "dcgm_diag": "DCGM diagnostic (dcgmi diag) passes, where it is asked for and can run",
    "layout": "the planned vLLM layout is valid for this host",
    "packages": "pinned CUDA/NCCL packages installed at their versions and held",
    "nccl_effective": "every vLLM instance loads the NCCL the plan chose (the pinned one through VLLM_NCCL_SO_PATH, or torch's own)",
    "sysctl": "sysctl values as tuned by host_tuning (or reported not applicable)",
    "governor": "CPU frequency governor as tuned (or reported not applicable)",
    "logrotate": "logrotate installed with the vLLM log stanza",
    "cron": "cron installed with the cache cleanup job",
    "systemd": "systemd is the service manager (PID 1): the vLLM instances are its units",
    "units": "vLLM units enabled, active and healthy",
    "vllm_stack": "the vLLM release the inventory asks for runs, with its torch, a driver for its CUDA runtime and the NCCL the plan chose",
}

STATUSES = ("pass", "fail", "warn", "not_applied", "not_applicable")
_SEVERITY = {"pass": "info", "not_applicable": "info", "warn": "warn", "not_applied": "warn", "fail": "fail"}


def finding(check_id, status, host, expected, actual, remediation="", subject=None):
    """One finding. ``status`` in STATUSES; severity follows from it."""
    if check_id not in CHECKS:
        raise ValueError("unknown check id %r" % (check_id,))
    if status not in _SEVERITY:
        raise ValueError("unknown status %r" % (status,))
    return {
        "id": check_id,
        "check": CHECKS[check_id],
        "subject": subject or "host",
        "status": status,
        "severity": _SEVERITY[status],
        "host": host,
        "expected": "" if expected is None else str(expected),
        "actual": "" if actual is None else str(actual),
        "remediation": remediation if _SEVERITY[status] in ("fail", "warn") else "",
    }


def summarize(host, findings, mode=None):
    """Counts per status and severity, and the host's verdict."""
    counts = dict((status, 0) for status in STATUSES)
    for item in findings:
        counts[item["status"]] += 1
    failed = sorted(set(item["id"] for item in findings if item["severity"] == "fail"))
    warned = sorted(set(item["id"] for item in findings if item["severity"] == "warn"))
    return {
        "host": host,
        "mode": mode,
        "compliant": not failed,
        "status": "fail" if failed else ("warn" if warned else "pass"),
        "counts": counts,
        "failed_checks": failed,
        "warned_checks": warned,
    }


def version_tuple(text):
    """``'530.30.02'`` -> ``(530, 30, 2)``; None when there is no leading number."""
    parts = re.findall(r"\d+", text or "")
    if not parts or not re.match(r"^\s*\d", text or ""):
        return None
    return tuple(int(part) for part in parts)


def _na(check_id, host, expected, why, subject=None):
    return finding(check_id, "not_applicable", host, expected, why, subject=subject)


def not_applied(check_id, host, expected, role, subject=None, now=None):
    """The finding of a check whose role has recorded nothing on this host (a warning)."""
    actual = "not applied: %s has recorded nothing on this host" % role
    if now:
        actual += " (now: %s)" % now
    return finding(check_id, "not_applied", host, expected, actual,
                   "Roll out with site.yml (role %s); until then there is nothing applied to check." % role,
                   subject)


# --- GPUs -------------------------------------------------------------------------------------

def check_driver(host, topology, min_driver):
    """Driver answered and its version >= ``min_driver`` (the pinned CUDA's minimum)."""
    expected = ">= %s" % min_driver if min_driver else "present"
    if not topology or not topology.get("available"):
        reason = (topology or {}).get("reason") or "no GPU facts"
        return [finding("gpu_driver", "fail", host, expected, "no usable GPU: %s" % reason,
                        "Install or repair the NVIDIA driver until `nvidia-smi` lists the GPUs "
                        "(driver/library mismatch: reboot or reload the kernel module).")]
    version = topology.get("driver_version")
    if not version:
        return [finding("gpu_driver", "warn", host, expected, "driver version unknown",
                        "nvidia-smi -q -x gave no driver_version; check the driver install.")]
    if min_driver:
        have, need = version_tuple(version), version_tuple(min_driver)
        if have is None or need is None:
            return [finding("gpu_driver", "warn", host, expected, version,
                            "Cannot compare driver version %r with %r." % (version, min_driver))]
        if have < need:
            return [finding("gpu_driver", "fail", host, expected, version,
                            "Upgrade the NVIDIA driver to %s or later (CUDA release notes, "
                            "Table 3), or pin an older CUDA (cuda_stack_cuda_version)."
                            % min_driver)]
    return [finding("gpu_driver", "pass", host, expected, version)]


_DEVICE_FIX = ("Load the NVIDIA driver (`modprobe nvidia`; `nvidia-modprobe -c <minor>` creates /dev/nvidia<minor> "
               "when no udev rule does), or, in a container, pass the GPUs through (NVIDIA Container Toolkit "
               "`--gpus all` or CDI, or `--device /dev/nvidia<minor> --device /dev/nvidiactl --device /dev/nvidia-uvm`).")


def check_gpu_devices(host, nodes, impostors=(), topology=None, dev_dir="/dev", error=None):
    """``nodes``: names of the GPU device nodes in ``dev_dir`` that are character devices
    (``_host_readings.gpu_device_nodes``), ``impostors`` those named so that are not; ``error``:
    why ``dev_dir`` could not be listed. Without a node no process can open a GPU, whatever
    nvidia-smi says (it may run elsewhere, or be a stand-in). Each GPU of ``topology`` with a
    minor number needs its own node."""
    expected = "%s/nvidia<minor> character device per GPU" % dev_dir.rstrip("/")
    if error:
        return [finding("gpu_devices", "fail", host, expected, "cannot list %s: %s" % (dev_dir, error), _DEVICE_FIX)]
    if not nodes:
        actual = "no NVIDIA device nodes"
        if impostors:
            actual += " (%s: not character devices)" % ", ".join(impostors)
        return [finding("gpu_devices", "fail", host, expected, actual, _DEVICE_FIX)]
    out = []
    for gpu in (topology or {}).get("gpus") or []:
        minor = gpu.get("minor_number")
        if minor is not None and "nvidia%d" % minor not in nodes:
            out.append(finding("gpu_devices", "fail", host, "%s/nvidia%d" % (dev_dir.rstrip("/"), minor),
                               "missing (present: %s)" % ", ".join(nodes), _DEVICE_FIX,
                               subject="GPU %s" % gpu.get("index")))
    if not out:
        out.append(finding("gpu_devices", "pass", host, expected, ", ".join(nodes)))
    return out


_COUNT_NAMES = (("qx", "nvidia-smi -q -x"), ("topo", "nvidia-smi topo -m"), ("list", "nvidia-smi -L"),
                ("sysfs", "sysfs (NVIDIA display/3D PCI functions)"))


def _count_disagreement(host, topology, facts_count):
    """A failing finding when the sources of the facts show different GPU counts."""
    sources = topology.get("gpu_count_sources")
    sources = sources if isinstance(sources, dict) else {}
    seen = [(name, sources[key]) for key, name in _COUNT_NAMES
            if isinstance(sources.get(key), int) and not isinstance(sources.get(key), bool)]
    if len(set(count for _name, count in seen)) <= 1:
        return []
    return [finding("gpu_count", "fail", host, "every source shows the same GPUs",
                    ", ".join("%s %d" % item for item in seen),
                    "A GPU the kernel sees but nvidia-smi does not show (or the other way round) is "
                    "not usable and shifts the indices the plan binds to: check `lspci -d 10de:`, "
                    "`nvidia-smi -L` and the kernel log (Xid 79, fallen off the bus), then reset or "
                    "service the GPU. The facts list %d GPU(s)." % facts_count,
                    subject="GPU count by source")]


def check_persistence(host, topology, daemon_running=None):
    """Persistence mode on every GPU (the driver keeps the GPUs initialised between processes);
    ``daemon_running``: whether nvidia-persistenced runs (None: unknown)."""
    expected = "persistence mode Enabled (nvidia-persistenced)"
    gpus = (topology or {}).get("gpus") or []
    if not gpus:
        return [_na("persistence_mode", host, expected, "no GPU facts")]
    modes = [(gpu.get("index"), gpu.get("persistence_mode")) for gpu in gpus]
    if not any("persistence_mode" in gpu for gpu in gpus):
        return [_na("persistence_mode", host, expected, "the GPU facts have no persistence_mode (gathered by an "
                    "older gpu_topology_facts): gather them again")]
    off = [str(index) for index, mode in modes if mode == "Disabled"]
    unknown = [str(index) for index, mode in modes if mode != "Enabled" and mode != "Disabled"]
    daemon = {True: "nvidia-persistenced running", False: "nvidia-persistenced not running",
              None: "nvidia-persistenced state unknown"}[daemon_running]
    if off:
        return [finding("persistence_mode", "fail", host, expected,
                        "Disabled on GPU %s; %s" % (",".join(off), daemon),
                        "Without persistence the driver tears the GPUs down whenever no process holds "
                        "them: every vLLM start pays the initialisation and NVSwitch hosts lose their "
                        "fabric state. Enable and start nvidia-persistenced (`systemctl enable --now "
                        "nvidia-persistenced`); `nvidia-smi -pm 1` is the deprecated fallback.")]
    if len(unknown) == len(modes):
        return [_na("persistence_mode", host, expected, "N/A on every GPU")]
    return [finding("persistence_mode", "pass", host, expected,
                    "Enabled on %d GPU(s)%s; %s" % (
                        len(modes) - len(unknown),
                        " (N/A on GPU %s)" % ",".join(unknown) if unknown else "", daemon))]


def check_gpu_count(host, topology, expected_count):
    """``gpu_count`` healthy GPUs, equal to ``expected_count`` when that is set (> 0)."""
    if not topology or not topology.get("available"):
        return [finding("gpu_count", "fail", host,
                        expected_count if expected_count else ">= 1", 0,
                        "No usable GPU: %s" % (topology or {}).get("reason"))]
    gpus = topology.get("gpus") or []
    unhealthy = [gpu for gpu in gpus if not gpu.get("healthy")]
    healthy = len(gpus) - len(unhealthy)
    out = []
    for gpu in unhealthy:
        out.append(finding("gpu_count", "fail", host, "healthy", gpu.get("reason") or "unhealthy",
                           "GPU %s (%s) does not answer: check `nvidia-smi -q -i %s`, the kernel "
                           "log (Xid), then reset or service the GPU."
                           % (gpu.get("index"), gpu.get("pci_bus_id"), gpu.get("pci_bus_id")),
                           subject="GPU %s" % gpu.get("index")))
    out.extend(_count_disagreement(host, topology, len(gpus)))
    actual = "%d GPU(s), %d healthy" % (len(gpus), healthy)
    if expected_count and healthy != expected_count:
        out.append(finding("gpu_count", "fail", host, expected_count, actual,
                           "nvidia-smi lists %d healthy GPU(s) where %d are expected: a GPU "
                           "fell off the bus, is held by MIG/passthrough, or the inventory's "
                           "expected count is wrong. Check `nvidia-smi -L` and the kernel log."
                           % (healthy, expected_count)))
    elif not expected_count:
        out.append(finding("gpu_count", "not_applicable", host, "not set", actual))
    else:
        out.append(finding("gpu_count", "pass", host, expected_count, actual))
    return out


def check_ecc(host, topology, retired_pages_max=0):
    """ECC mode, uncorrectable counters, row remapping and retired pages, per GPU."""
    out = []
    gpus = (topology or {}).get("gpus") or []
    if not gpus:
        return [_na(c, host, "GPUs", "no GPU facts") for c in
                ("ecc_mode", "ecc_uncorrectable", "ecc_remap")]
    for gpu in gpus:
        subject = "GPU %s" % gpu.get("index")
        ecc = gpu.get("ecc") or {}
        mode = ecc.get("mode")
        if mode is None:
            out.append(_na("ecc_mode", host, "Enabled", "N/A (GPU without ECC)", subject))
        elif mode.lower() == "enabled":
            out.append(finding("ecc_mode", "pass", host, "Enabled", mode, subject=subject))
        else:
            out.append(finding("ecc_mode", "fail", host, "Enabled", mode,
                               "Enable ECC: `nvidia-smi -i %s -e 1`, then reset the GPU or "
                               "reboot." % gpu.get("index"), subject))
        vol, agg = ecc.get("volatile_uncorrected"), ecc.get("aggregate_uncorrected")
        if vol is None and agg is None:
            out.append(_na("ecc_uncorrectable", host, 0, "counters N/A", subject))
        elif vol:
            out.append(finding("ecc_uncorrectable", "fail", host, 0,
                               "volatile %s, aggregate %s" % (vol, agg),
                               "Uncorrectable ECC errors since the last driver load: drain the "
                               "GPU, reset it (`nvidia-smi -r -i %s`) and watch for Xid 48/63/94/"
                               "95; repeated errors mean RMA." % gpu.get("index"), subject))
        elif agg:
            out.append(finding("ecc_uncorrectable", "warn", host, 0,
                               "volatile 0, aggregate %s" % agg,
                               "Uncorrectable errors in the GPU's lifetime count: watch it; "
                               "rising counts mean RMA.", subject))
        else:
            out.append(finding("ecc_uncorrectable", "pass", host, 0,
                               "volatile %s, aggregate %s" % (vol, agg), subject=subject))
        problems = []
        if ecc.get("remapped_rows_pending"):
            problems.append("row remap pending")
        if ecc.get("remapped_rows_failure"):
            problems.append("row remapping failed")
        if ecc.get("retired_pages_pending"):
            problems.append("page retirement pending")
        counts = [ecc.get("retired_pages_single_bit"), ecc.get("retired_pages_double_bit")]
        retired = sum(count for count in counts if count is not None)
        if None in counts:
            # N/A is not 0: Hopper and later retire no pages (they remap rows), nvidia-smi says N/A
            retired_text = "retired pages unknown (nvidia-smi: N/A)" if counts == [None, None] else \
                "%d retired pages (%s-bit count N/A)" % (retired, "single" if counts[0] is None else "double")
        else:
            retired_text = "%d retired pages" % retired
        if retired > retired_pages_max:
            problems.append("%d retired pages (max %d)" % (retired, retired_pages_max))
        known = [ecc.get(k) for k in ("remapped_rows_pending", "remapped_rows_failure",
                                      "retired_pages_pending", "retired_pages_single_bit",
                                      "retired_pages_double_bit")]
        expected = "no pending remap/retirement, retired pages <= %d" % retired_pages_max
        if problems:
            out.append(finding("ecc_remap", "fail", host, expected, ", ".join(problems),
                               "Reset the GPU (`nvidia-smi -r -i %s`, or reboot) to apply pending "
                               "remaps/retirements; a failed remap or retired pages over the "
                               "threshold mean the GPU needs service (RMA)." % gpu.get("index"),
                               subject))
        elif all(value is None for value in known):
            out.append(_na("ecc_remap", host, expected, "N/A", subject))
        else:
            out.append(finding("ecc_remap", "pass", host, expected,
                               "none pending, %s" % retired_text, subject=subject))
    return out


def tp_groups(instances):
    """Tensor-parallel groups of planned/deployed instances: ``[(name, [gpus])]``.

    An instance's GPUs are PP consecutive TP groups (the planner's order).
    """
    groups = []
    for inst in instances or []:
        gpus = list(inst.get("gpus") or [])
        tp = int(inst.get("tensor_parallel_size") or 1)
        if tp < 1:
            tp = 1
        for start in range(0, len(gpus), tp):
            name = inst.get("name") or "instance"
            if len(gpus) > tp:
                name = "%s/pp%d" % (name, start // tp)
            groups.append((name, gpus[start:start + tp]))
    return groups


def check_nvlink(host, topology, instances):
    """Every GPU of a TP group that talks over NVLink has all its NVLinks active."""
    groups = [(name, gpus) for name, gpus in tp_groups(instances) if len(gpus) > 1]
    if instances is None:
        return [_na("nvlink", host, "all NVLinks active", "no plan and nothing deployed")]
    if not groups:
        return [_na("nvlink", host, "all NVLinks active", "no tensor-parallel group (TP=1)")]
    gpus = dict((gpu["index"], gpu) for gpu in (topology or {}).get("gpus") or [])
    links = (topology or {}).get("links") or []
    out = []
    for name, members in groups:
        subject = "TP group %s (GPUs %s)" % (name, ",".join(str(g) for g in members))
        missing = [g for g in members if g not in gpus]
        if missing:
            out.append(finding("nvlink", "fail", host, "GPUs %s present" % members,
                               "GPU %s not found" % ",".join(str(g) for g in missing),
                               "The group's GPUs are not all visible; see gpu_count.", subject))
            continue
        nv_pairs = []
        for i in members:
            for j in members:
                if i < j and i < len(links) and j < len(links[i]) and \
                        re.match(r"^NV\d+$", links[i][j] or ""):
                    nv_pairs.append((i, j))
        if not nv_pairs:
            out.append(_na("nvlink", host, "all NVLinks active",
                           "group connected over PCIe only", subject))
            continue
        inactive = []
        for g in members:
            dead = [str(link["link"]) for link in gpus[g].get("nvlinks") or []
                    if link.get("state") != "active"]
            if dead:
                inactive.append("GPU %d link %s inactive" % (g, ",".join(dead)))
        if inactive:
            out.append(finding("nvlink", "fail", host, "all NVLinks active", "; ".join(inactive),
                               "Check `nvidia-smi nvlink -s` and `nvidia-smi nvlink -e` (error "
                               "counters); reset the GPUs or reseat the NVLink bridge; until then "
                               "plan this group elsewhere or use --disable-custom-all-reduce.",
                               subject))
        else:
            active = sum(len(gpus[g].get("nvlinks") or []) for g in members)
            out.append(finding("nvlink", "pass", host, "all NVLinks active",
                               "%d links active" % active if active else
                               "NV# in topo -m (nvlink -s shows none)", subject=subject))
    return out


def is_nvswitch_system(topology):
    """HGX/DGX-style: 8 or more GPUs, every pair NV# (all-to-all through NVSwitch)."""
    links = (topology or {}).get("links") or []
    count = len(links)
    if count < 8:
        return False
    return all(re.match(r"^NV\d+$", links[i][j] or "")
               for i in range(count) for j in range(count) if i != j)


_FM_FIX = ("Install NVIDIA Fabric Manager at exactly the driver's version (nvidia-fabricmanager-<branch>, "
           "e.g. nvidia-fabricmanager-535 %s) and `systemctl enable --now nvidia-fabricmanager`; wait until "
           "`nvidia-smi -q` shows Fabric State Completed on every GPU. Without it CUDA on NVSwitch systems "
           "fails with error 802 'system not yet initialized' (log signature cuda_system_not_initialized).")


def _fabric_states(topology):
    """[(index, state, status)] of the GPUs whose -q -x fabric section says something (not N/A)."""
    out = []
    for gpu in (topology or {}).get("gpus") or []:
        fabric = gpu.get("fabric") if isinstance(gpu.get("fabric"), dict) else {}
        if fabric.get("state"):
            out.append((gpu.get("index"), fabric.get("state"), fabric.get("status")))
    return out


def _fm_package_problem(driver, fm_packages):
    """Why the installed Fabric Manager package does not match the driver, or None."""
    if fm_packages is None:
        return None  # no dpkg: the service state decides
    if not fm_packages:
        return "no nvidia-fabricmanager package installed"
    if not driver:
        return "driver version unknown: cannot match %s" % ", ".join(sorted(fm_packages))
    wrong = ["%s %s" % (name, version) for name, version in sorted(fm_packages.items())
             if driver and version.split(":")[-1].split("-")[0] != driver]
    if wrong:
        return "%s installed for driver %s (Fabric Manager refuses to start: 'driver interface version ... " \
               "don't match with driver version')" % (", ".join(wrong), driver)
    return None


def check_fabric_manager(host, topology, fm_state, nvswitch_devices=None, fm_packages=None):
    """NVSwitch fabric ready: Fabric Manager installed at the driver's version and active where this
    host holds NVSwitches, and every GPU's fabric state Completed.

    ``fm_state``: ``systemctl is-active nvidia-fabricmanager`` (None: no systemd);
    ``nvswitch_devices``: entries of /proc/driver/nvidia-nvswitch/devices/ (None: not readable);
    ``fm_packages``: {package: version} of the installed nvidia-fabricmanager* packages (None: no dpkg).
    An NVSwitch system is one with local NVSwitch devices, or 8+ GPUs all-to-all NV# (HGX/DGX);
    a VM given a slice of one sees no NVSwitch but its GPUs' fabric state (managed outside it).
    """
    states = _fabric_states(topology)
    not_ready = ["GPU %s %s%s" % (index, state, "/%s" % status if status else "")
                 for index, state, status in states if state != "Completed" or status not in (None, "Success")]
    local = bool(nvswitch_devices)
    if not (local or is_nvswitch_system(topology)):
        if not_ready:
            return [finding("fabric_manager", "fail", host, "Fabric State Completed on every GPU",
                            "; ".join(not_ready), _FM_FIX % (topology or {}).get("driver_version"))]
        if states:
            return [finding("fabric_manager", "pass", host, "Fabric State Completed on every GPU",
                            "Completed on %d GPU(s); no NVSwitch device on this host (the fabric is "
                            "managed outside it, e.g. by the hypervisor)" % len(states))]
        return [_na("fabric_manager", host, "active on NVSwitch systems",
                    "not an NVSwitch system (no NVSwitch device, fewer than 8 GPUs or not all-to-all NV#)")]
    driver = (topology or {}).get("driver_version")
    problems = []
    if fm_state != "active":
        problems.append("nvidia-fabricmanager %s" % (fm_state or "state unknown (no systemd)"))
    package = _fm_package_problem(driver, fm_packages)
    if package:
        problems.append(package)
    problems.extend(not_ready)
    expected = "nvidia-fabricmanager %s active, Fabric State Completed on every GPU" % (driver or "<driver>")
    if problems:
        return [finding("fabric_manager", "fail", host, expected, "; ".join(problems), _FM_FIX % driver)]
    return [finding("fabric_manager", "pass", host, expected, "active%s%s" % (
        ", %s" % ", ".join("%s %s" % item for item in sorted((fm_packages or {}).items())) if fm_packages else "",
        ", Completed on %d GPU(s)" % len(states) if states else ""))]


# --- kernel log -------------------------------------------------------------------------------

_DMESG_TS_RE = re.compile(r"^\[\s*(\d+\.\d+)\]\s?(.*)$")
_SYSLOG_RE = re.compile(
    r"^([A-Z][a-z]{2}\s+\d{1,2}\s+\d{2}:\d{2}:\d{2}|\d{4}-\d{2}-\d{2}T[\d:.+\-Z]+)\s+(\S+)\s+"
    r"([^:\s]+?)(?:\[\d+\])?:\s?(.*)$")
# MIG-attributed Xids carry the instance: "Xid (PCI:0000:4b:00 GPU-I:07 GPU-CI:00): 94, ..."
_XID_RE = re.compile(r"NVRM: Xid \((?:PCI:)?([0-9A-Fa-f:.]+)((?:\s+GPU-C?I:\d+)*)\):\s*(\d+)(?:,\s*(.*))?$")
_PID_RE = re.compile(r"\bpid=(\d+|'<unknown>')")
_FALLEN_START_RE = re.compile(r"NVRM: The NVIDIA GPU ([0-9A-Fa-f:.]+)\s*$")
_FALLEN_RE = re.compile(r"fallen off the bus")
_GPU_LOST_RE = re.compile(r"NVRM: GPU ([0-9A-Fa-f:.]+): GPU has fallen off the bus")


def _split_prefix(line):
    """Return (timestamp, source, message) of one log line in dmesg, syslog or journal form."""
    match = _DMESG_TS_RE.match(line)
    if match:
        return match.group(1), "dmesg", match.group(2)
    match = _SYSLOG_RE.match(line)
    if match and match.group(3) == "kernel":
        rest = match.group(4)
        inner = _DMESG_TS_RE.match(rest)  # journal -k -o short-monotonic / kern.log with [ts]
        return match.group(1), "syslog", inner.group(2) if inner else rest
    if match:
        return match.group(1), "other", match.group(4)
    return None, "bare", line


def parse_kernel_log(text):
    """Xid and "fallen off the bus" events in kernel-log text.

    Accepts ``dmesg`` (``[  12.345] NVRM: ...``), syslog/``journalctl -k`` (``Jan 10 13:04:04
    host kernel: NVRM: ...``, also ISO timestamps) and bare ``NVRM: ...`` lines; a message
    split over lines (driver 570 prints "The NVIDIA GPU <bus>" / "(PCI ID: ...) installed in
    this system has" / "fallen off the bus ...", continuations without a timestamp) counts as
    one event. Non-kernel syslog lines are ignored.

    Returns ``[{"kind": "xid"|"fallen_off_bus", "xid": int|None, "pci": str|None,
    "pid": str|None, "timestamp": str|None, "message": str, "line": int}]`` (1-based line of
    the event's first line).
    """
    events = []
    pending = None  # open multi-line "The NVIDIA GPU <bus>" message
    for number, raw in enumerate((text or "").replace("\r\n", "\n").split("\n"), 1):
        if not raw.strip():
            continue
        stamp, source, message = _split_prefix(raw.rstrip())
        if source == "other":
            pending = None
            continue
        message = message.strip()
        if pending is not None and (source == "bare" or stamp == pending["timestamp"]) and \
                not _XID_RE.search(message):
            pending["message"] += " " + message
            if _FALLEN_RE.search(message):
                pending["kind"] = "fallen_off_bus"
                events.append(pending)
                pending = None
            continue
        pending = None
        match = _XID_RE.search(message)
        if match:
            rest = match.group(4) or ""
            pid = _PID_RE.search(rest)
            events.append({"kind": "xid", "xid": int(match.group(3)), "pci": match.group(1),
                           "mig": match.group(2).strip() or None,
                           "pid": pid.group(1) if pid else None, "timestamp": stamp,
                           "message": message[message.index("NVRM:"):], "line": number})
            continue
        match = _GPU_LOST_RE.search(message)
        if match:
            events.append({"kind": "fallen_off_bus", "xid": None, "pci": match.group(1),
                           "pid": None, "timestamp": stamp, "message": message, "line": number})
            continue
        match = _FALLEN_START_RE.search(message)
        if match:
            pending = {"kind": None, "xid": None, "pci": match.group(1), "pid": None,
                       "timestamp": stamp, "message": message, "line": number}
            continue
        if "NVRM:" in message and _FALLEN_RE.search(message):
            events.append({"kind": "fallen_off_bus", "xid": None, "pci": None, "pid": None,
                           "timestamp": stamp, "message": message, "line": number})
    return events


def _xid_finding(host, expected, event, where, root_message=""):
    meaning = classify_xid(event["xid"], event["message"], root_message)
    event["xid_meaning"] = meaning
    name = "Xid %d (%s)" % (event["xid"], meaning["mnemonic"] or "not in NVIDIA's catalog")
    actual = "%s on %s: %s" % (name, where, event["message"])
    if meaning["root_xid"] is not None:
        actual += " [root cause Xid %d (%s)]" % (meaning["root_xid"], meaning["root_mnemonic"] or "not in the catalog")
    code = meaning["root_xid"] if meaning["root_xid"] is not None else event["xid"]
    if meaning["severity"] == "info":
        return None
    if meaning["severity"] == "warn":
        return finding("kernel_log", "warn", host, expected, actual,
                       "%s; usually raised by the application (bad memory access, killed kernel): read "
                       "the process's log around this time. NVIDIA's Xid catalog, Xid %d: investigatory "
                       "action %s." % (meaning["rule"], code, meaning["investigatory_action"] or "none given"),
                       where)
    return finding("kernel_log", "fail", host, expected, actual,
                   "%s. Drain the GPU, follow NVIDIA's Xid catalog for Xid %d (investigatory action %s), "
                   "reset the GPU (`nvidia-smi -r`) or reboot as it says, and re-run the compliance "
                   "check; repeated events mean service/RMA." % (
                       meaning["rule"], code, meaning["investigatory_action"] or "none given"), where)


def check_kernel_log(host, events, source, error=None):
    """``events`` from parse_kernel_log; ``source`` names where they were read; ``error`` set
    (and events None) when no kernel log could be read. Each Xid is judged by ``_xid.classify``
    (NVIDIA's catalog, the root cause of ``caused by previous Xid N``); Xids the catalog says to
    ignore are named in the passing finding."""
    expected = "no Xid / fallen off the bus"
    if events is None:
        return [_na("kernel_log", host, expected,
                    "kernel log not readable (%s): %s" % (source, error or "no source"))]
    out = []
    ignored = []
    last = {}  # (pci, xid) -> message of the latest such event: a later "caused by previous Xid" reads it
    for event in events:
        where = "GPU %s" % event["pci"] if event["pci"] else "GPU"
        if event["kind"] == "fallen_off_bus":
            out.append(finding("kernel_log", "fail", host, expected,
                               "%s fell off the bus: %s" % (where, event["message"]),
                               "The GPU stopped answering on PCIe: drain the host, power-cycle "
                               "it (a reset is not enough), check power/PCIe seating; repeated "
                               "events mean hardware service.", where))
            continue
        root = root_cause(event["message"])
        item = _xid_finding(host, expected, event, where, last.get((event["pci"], root), ""))
        last[(event["pci"], event["xid"])] = event["message"]
        if item is None:
            ignored.append("Xid %d on %s" % (event["xid"], where))
        else:
            out.append(item)
    if not out:
        actual = "none in %s" % source
        if ignored:
            actual = "none failing in %s; NVIDIA's catalog says to ignore: %s" % (source, ", ".join(ignored))
        out.append(finding("kernel_log", "pass", host, expected, actual))
    return out


# --- DCGM diagnostic --------------------------------------------------------------------------

def dcgm_skip_reason(topology, level, dcgmi_path):
    """Why ``dcgmi diag`` is not run (None: run it): turned off, dcgmi absent, MIG enabled."""
    if not level:
        return "turned off (compliance_dcgm_diag_level 0)"
    if not dcgmi_path:
        return "dcgmi not installed (DCGM, package datacenter-gpu-manager)"
    mig = [str(gpu.get("index")) for gpu in (topology or {}).get("gpus") or [] if gpu.get("mig_mode") == "Enabled"]
    if mig:
        return "MIG enabled on GPU %s: dcgmi diag does not support MIG" % ",".join(mig)
    return None


def check_dcgm_diag(host, level, skip_reason=None, parsed=None, rc=0, output=""):
    """Findings of ``dcgmi diag -r <level>`` (``parsed`` by ``_dcgm.parse_dcgmi_diag``)."""
    expected = "dcgmi diag -r %s passes" % level
    if skip_reason:
        return [_na("dcgm_diag", host, expected, skip_reason)]
    if parsed["mig_incompatible"]:
        return [_na("dcgm_diag", host, expected, parsed["mig_incompatible"][0])]
    out = []
    notes = dict()
    for message in parsed["messages"]:
        notes.setdefault(message["test"], []).append("%s: %s" % (message["kind"], message["text"]))
    fix = ("DCGM's diagnostic found a fault: read its message, follow the DCGM user guide for that test "
           "(reset the GPU, check cooling/power, drain and service it); re-run `dcgmi diag -r %s`." % level)
    for item in parsed["results"]:
        if item["result"] in ("Fail", "Error", "Warn"):
            actual = "%s%s" % (item["result"], " (%s)" % item["detail"] if item["detail"] else "")
            if notes.get(item["test"]):
                actual += "; " + "; ".join(notes.pop(item["test"]))
            out.append(finding("dcgm_diag", "warn" if item["result"] == "Warn" else "fail", host, expected, actual,
                               fix, subject="dcgmi %s" % item["test"]))
    for test, texts in sorted(notes.items(), key=lambda kv: str(kv[0])):
        for text in texts:
            if text.startswith(("Error", "Warning")):
                out.append(finding("dcgm_diag", "fail" if text.startswith("Error") else "warn", host, expected,
                                   text, fix, subject="dcgmi %s" % (test or "diag")))
    if not parsed["ran"] and (rc != 0 or not out):
        out.append(finding("dcgm_diag", "fail", host, expected,
                           "dcgmi diag -r %s gave no result (rc %s): %s" % (level, rc, " ".join((output or "").split())[:300]),
                           "Make `dcgmi diag -r %s` run: nv-hostengine running (systemctl start nvidia-dcgm), "
                           "a DCGM release that knows this GPU and driver." % level))
    if not out:
        passed = sum(1 for item in parsed["results"] if item["result"] == "Pass")
        out.append(finding("dcgm_diag", "pass", host, expected, "%d result(s) Pass%s, no failure%s" % (
            passed, ", %d Skip" % sum(1 for i in parsed["results"] if i["result"] == "Skip") if any(
                i["result"] == "Skip" for i in parsed["results"]) else "",
            " (DCGM %s)" % parsed["version"] if parsed["version"] else "")))
    return out


# --- layout -----------------------------------------------------------------------------------

def check_layout(host, plan=None, error=None, requested=True):
    """``plan`` (vllm_layout facts) or ``error`` (the planner's refusal)."""
    if not requested:
        return [_na("layout", host, "valid plan",
                    "no model/layout given (model_path or model_config, layout)")]
    if error:
        return [finding("layout", "fail", host, "valid plan", error,
                        "Choose a layout the planner accepts (the message lists valid "
                        "tensor-parallel sizes), or fix the model path/config.")]
    desc = ", ".join(
        "%s: GPUs %s TP=%s PP=%s" % (i.get("name"), i.get("gpus"), i.get("tensor_parallel_size"),
                                     i.get("pipeline_parallel_size"))
        for i in (plan or {}).get("instances") or [])
    return [finding("layout", "pass", host, "valid plan", desc or "valid")]


# --- deployed state ---------------------------------------------------------------------------

def _packages_not_applied(host, wanted, installed):
    out = []
    for name, version in sorted(wanted.items()):
        have = (installed or {}).get(name)
        now = "not installed" if have is None else "%s installed" % have
        out.append(not_applied("packages", host, "%s installed and held" % version, "cuda_stack", name,
                               now if installed is not None else None))
    return out


def check_recorded_pins(host, recorded, requested, deployed=True):
    """The pins cuda_stack recorded against those the inventory asks for (both {package: version})."""
    expected = ", ".join("%s=%s" % item for item in sorted(requested.items())) or "no pins"
    actual = ", ".join("%s=%s" % item for item in sorted(recorded.items())) or "no pins"
    if recorded == requested:
        return [finding("packages", "pass", host, expected, actual, subject="cuda_stack record")]
    return [finding("packages", "fail" if deployed else "warn", host, expected, actual,
                    "The inventory asks for other pins than cuda_stack applied: re-run site.yml --tags "
                    "cuda_stack%s." % ("" if deployed else " (the rollout will)"), "cuda_stack record")]


def check_packages(host, wanted, installed, holds, deployed=True, recorded=True):
    """``wanted`` {package: version}; ``installed`` {package: version} from dpkg-query (None =
    dpkg absent); ``holds`` set of held packages (None = unknown); ``recorded``: whether
    cuda_stack recorded its pins here (if not, every pin is ``not_applied``)."""
    expected_all = ", ".join("%s=%s held" % (k, v) for k, v in sorted((wanted or {}).items()))
    if not wanted:
        return [_na("packages", host, "pinned packages", "no pinned packages given")]
    if not recorded:
        return _packages_not_applied(host, wanted, installed)
    if installed is None:
        return [_na("packages", host, expected_all, "no dpkg on this host")]
    if not deployed:
        return _packages_before_rollout(host, wanted, installed, holds)
    return [_package_finding(host, name, version, installed.get(name), holds)
            for name, version in sorted(wanted.items())]


def check_foreign_holds(host, wanted, holds, own_holds=()):
    """A pinned package that is already held (``holds``: ``apt-mark showhold``, None = unknown)
    without cuda_stack having recorded that hold (``own_holds``: the holds of its record; none
    before it ran) is held by someone else: the rollout installs its pinned version over that hold
    and takes the hold over. A warning per package, naming it."""
    out = []
    for name in sorted(set(wanted or {}) & set(holds or ()) - set(own_holds or ())):
        out.append(finding(
            "packages", "warn", host, "%s held by cuda_stack only (or not held)" % name,
            "held (apt-mark showhold), and cuda_stack recorded no hold of %s: someone else holds it" % name,
            "site.yml (cuda_stack) will override this hold: it installs %s=%s over it "
            "(allow_change_held_packages) and then holds it as its own, and cuda_stack_state=absent "
            "releases it later. If the hold is there on purpose (another tool, an image's pin), settle that "
            "first." % (name, wanted[name]), name))
    return out


def _package_finding(host, name, version, have, holds):
    """One pinned package on a host where cuda_stack applied its pins."""
    expected = "%s installed and held" % version
    if have is None:
        return finding("packages", "fail", host, expected, "not installed",
                       "Re-run site.yml --tags cuda_stack (installs %s=%s and holds it)." % (name, version), name)
    if have != version:
        return finding("packages", "fail", host, expected, "%s installed" % have,
                       "Version drift: something upgraded %s. Re-run site.yml --tags "
                       "cuda_stack; use force_apt_get for upgrades on these hosts." % name, name)
    if holds is not None and name not in holds:
        return finding("packages", "fail", host, expected, "%s installed, not held" % have,
                       "`apt-mark hold %s` (or re-run site.yml --tags cuda_stack) so "
                       "upgrades cannot move it." % name, name)
    return finding("packages", "pass", host, expected,
                   "%s installed, held" % have if holds is not None else "%s installed (holds unknown)" % have,
                   subject=name)


def _packages_before_rollout(host, wanted, installed, holds):
    """Before the rollout a missing or other version is what site.yml will change, not drift;
    replacing a version other software on the host may rely on deserves a warning."""
    expected_all = ", ".join("%s=%s held" % (k, v) for k, v in sorted(wanted.items()))
    if not any(name in installed for name in wanted):
        return [_na("packages", host, expected_all, "not deployed (none installed)")]
    out = []
    for name, version in sorted(wanted.items()):
        have = installed.get(name)
        expected = "%s installed and held" % version
        if have is None:
            out.append(_na("packages", host, expected, "not deployed (not installed yet)", name))
        elif have != version:
            out.append(finding("packages", "warn", host, expected, "%s installed" % have,
                               "site.yml (cuda_stack) will replace %s %s with %s and hold it: check "
                               "that nothing else on this host needs %s." % (name, have, version, have),
                               name))
        else:
            out.append(_package_finding(host, name, version, have, holds))
    return out


def _nccl_label(record):
    version = record.get("version") or "unknown version"
    return "NCCL %s%s" % (version, ("+cuda%s" % record["cuda"]) if record.get("cuda") else "")


def _nccl_instances(nccl):
    """(subject ``vllm@<name>``, instance facts) per environment file of the nccl facts, by name."""
    for path, inst in sorted(((nccl or {}).get("instances") or {}).items()):
        name = path.rsplit("/", 1)[-1]
        yield "vllm@%s" % (name[:-4] if name.endswith(".env") else name), inst


def _nccl_torch_chosen(host, nccl, choice, venv):
    """The plan gave the instances torch's own NCCL (the pin is below the release's NCCL floor):
    no instance may name another library in VLLM_NCCL_SO_PATH."""
    expected = "torch's own NCCL (the plan: %s)" % (choice.get("why") or "vllm_server_nccl_so_path")
    out = []
    for subject, inst in _nccl_instances(nccl):
        record = inst.get("effective") or {}
        if inst.get("nccl_so_path"):
            out.append(finding("nccl_effective", "fail", host, expected, "VLLM_NCCL_SO_PATH=%s" % inst["nccl_so_path"],
                               "Re-run site.yml --tags vllm_server: the environment file is not the plan's.", subject))
        else:
            out.append(finding("nccl_effective", "pass", host, expected, "torch's bundled NCCL%s (%s)"
                               % (" in %s" % venv if venv else "", _nccl_label(record) if record else "not found"),
                               subject=subject))
    return out or [_na("nccl_effective", host, expected, "not deployed (no vLLM instance environment files)")]


def check_nccl_effective(host, nccl, pinned_version, pinned_cuda=None, venv=None, deployed=True,
                         missing_record=None, choice=None):
    """Which NCCL each deployed vLLM instance loads, against the pin (``cuda_stack_nccl_version``).

    ``nccl``: the ``nccl`` facts of nccl_facts (``instances`` keyed by environment file, each with
    ``nccl_so_path`` and ``effective``; ``system``), or None when they could not be read (no
    ldconfig). ``pinned_cuda``: the ``+cudaX.Y`` of the pinned build, checked when both sides
    know it. ``venv``: the vLLM virtualenv whose torch-bundled NCCL an instance without
    ``VLLM_NCCL_SO_PATH`` loads (for the messages). ``missing_record``: the role (cuda_stack,
    vllm_server) that has recorded nothing here yet: the check is then ``not_applied``.
    ``choice``: the NCCL the plan chose (vllm_server's record, ``release.nccl``); with ``torch`` (the
    pin is below the release's NCCL floor) the instances must load torch's own NCCL instead.
    """
    if deployed and not missing_record and (choice or {}).get("choice") == "torch":
        return _nccl_torch_chosen(host, nccl, choice, venv)
    if (choice or {}).get("choice") == "explicit" and choice.get("version"):
        # vllm_server_nccl_so_path named a library: the plan read its version and checked it against the
        # release's NCCL floor; the instances must load that one, whatever the pin says
        pinned_version, pinned_cuda = choice["version"], None
    expected = "NCCL %s%s" % (pinned_version, ("+cuda%s" % pinned_cuda) if pinned_cuda else "")
    if not pinned_version:
        return [_na("nccl_effective", host, "pinned NCCL", "no pinned NCCL version given")]
    if missing_record:
        return [not_applied("nccl_effective", host, expected, missing_record)]
    if not deployed:
        return [_na("nccl_effective", host, expected, "not deployed (vLLM not installed yet)")]
    if nccl is None:
        return [_na("nccl_effective", host, expected, "NCCL libraries not readable here (no ldconfig)")]
    instances = nccl.get("instances") or {}
    if not instances:
        return [_na("nccl_effective", host, expected, "not deployed (no vLLM instance environment files)")]
    system = nccl.get("system") or {}
    system_ok = system.get("version") == pinned_version and (
        not pinned_cuda or not system.get("cuda") or system.get("cuda") == pinned_cuda)
    if system_ok:
        fix = ("Set vllm_server_nccl_so_path: %s (the pinned system library, %s) and re-run site.yml --tags "
               "vllm_server, so vLLM gets it through VLLM_NCCL_SO_PATH." % (system.get("path"), _nccl_label(system)))
    else:
        fix = ("Re-run site.yml --tags cuda_stack to install the pinned NCCL %s (the system library is %s), then "
               "set vllm_server_nccl_so_path to it and re-run site.yml --tags vllm_server."
               % (pinned_version, _nccl_label(system) if system else "absent"))
    out = []
    for subject, inst in _nccl_instances(nccl):
        so_path = inst.get("nccl_so_path")
        record = inst.get("effective")
        if so_path:
            origin = "VLLM_NCCL_SO_PATH=%s" % so_path
        else:
            origin = "torch's bundled NCCL%s (VLLM_NCCL_SO_PATH unset)" % (" in %s" % venv if venv else "")
        if not record:
            out.append(finding("nccl_effective", "fail", host, expected,
                               "%s: no libnccl.so.2 found" % origin, fix, subject))
            continue
        if record.get("error") and not record.get("version"):
            out.append(finding("nccl_effective", "fail", host, expected,
                               "%s: %s" % (origin, record["error"]), fix, subject))
            continue
        library = record.get("realpath") or record.get("path")
        if not record.get("version"):
            out.append(finding("nccl_effective", "warn", host, expected,
                               "%s loads %s, version not readable" % (origin, library),
                               "Check the library (`strings %s | grep 'NCCL version'`); %s" % (library, fix),
                               subject))
            continue
        wrong_cuda = pinned_cuda and record.get("cuda") and record["cuda"] != pinned_cuda
        actual = "%s loads %s (%s)" % (origin, library, _nccl_label(record))
        if record["version"] != pinned_version or wrong_cuda:
            out.append(finding("nccl_effective", "fail", host, expected, actual, fix, subject))
        else:
            out.append(finding("nccl_effective", "pass", host, expected, actual, subject=subject))
    return out


def check_sysctl(host, report, live, absent=()):
    """``report``: host_tuning's fact file (dict) or None; ``live`` {key: value or None};
    ``absent``: the keys with no /proc/sys entry here. A key host_tuning could not set that is
    absent, where its absence is the wanted state (``_host_readings.ABSENT_MEANS``: no automatic
    NUMA balancing in this kernel, nothing to turn off), passes."""
    if report is None:
        return [not_applied("sysctl", host, "as tuned by host_tuning", "host_tuning")]
    out = []
    for key, value in sorted((report.get("sysctl_applied") or {}).items()):
        have = live.get(key)
        if have is None:
            out.append(finding("sysctl", "warn", host, value, "not readable",
                               "/proc/sys entry for %s is not readable here." % key, key))
        elif " ".join(str(have).split()) == " ".join(str(value).split()):
            out.append(finding("sysctl", "pass", host, value, have, subject=key))
        else:
            out.append(finding("sysctl", "fail", host, value, have,
                               "Something changed %s after host_tuning set it: re-run site.yml "
                               "--tags host_tuning and look for other sysctl.d files setting it."
                               % key, key))
    wanted = report.get("sysctl_wanted") or {}
    for key, why in sorted((report.get("sysctl_not_applicable") or {}).items()):
        note = absent_satisfies(key, wanted.get(key)) if key in absent else None
        if note:
            out.append(finding("sysctl", "pass", host, wanted[key], "absent: %s" % note, subject=key))
            continue
        if isinstance(why, dict):  # host_tuning records the sysctl_probe result
            why = why.get("reason") or why
        out.append(_na("sysctl", host, "host-owned", "not applicable: %s" % why, key))
    if not out:
        out.append(_na("sysctl", host, "as tuned", "no keys in the report"))
    return out


def check_governor(host, report, live):
    """``live``: {cpu: governor} read from sysfs ({} when no cpufreq)."""
    if report is None:
        return [not_applied("governor", host, "as tuned by host_tuning", "host_tuning")]
    state = str(report.get("governor") or "not managed")
    if not live:
        return [_na("governor", host, state, "no cpufreq on this host")]
    wanted = state.split(":", 1)[-1].strip() if ":" in state else state
    if state.startswith("not ") or state.startswith("skipped"):
        return [_na("governor", host, "as tuned", state)]
    wrong = sorted(cpu for cpu, value in live.items() if value != wanted)
    if wrong:
        return [finding("governor", "fail", host, wanted, "%d CPU(s) differ (e.g. %s: %s)"
                        % (len(wrong), wrong[0], live[wrong[0]]),
                        "Re-run site.yml --tags host_tuning; check that no other service "
                        "(tuned, power-profiles-daemon) resets the governor.")]
    return [finding("governor", "pass", host, wanted, "%d CPU(s) %s" % (len(live), wanted))]


def check_housekeeping(host, logrotate, cron, deployed=True, recorded=True):
    """``logrotate`` / ``cron``: dicts {binary: bool, config: bool, config_path: str (empty:
    turned off in housekeeping), service: str|None (cron only)}; ``recorded``: whether
    housekeeping recorded its paths here."""
    out = []
    for check_id, state, what, fix in (
            ("logrotate", logrotate, "the vLLM log stanza",
             "Re-run site.yml --tags housekeeping (installs logrotate and its vLLM stanza)."),
            ("cron", cron, "the cache cleanup job",
             "Re-run site.yml --tags housekeeping (installs cron and the cache cleanup job); "
             "`systemctl enable --now cron`.")):
        if not recorded:
            out.append(not_applied(check_id, host, "installed, %s present" % what, "housekeeping"))
            continue
        if not state["config_path"]:
            out.append(_na(check_id, host, "installed, %s present" % what, "turned off in housekeeping"))
            continue
        expected = "installed, %s present" % state["config_path"]
        if not deployed and not state["config"]:
            out.append(_na(check_id, host, expected, "not deployed (%s absent)" % state["config_path"]))
            continue
        problems = []
        if not state["binary"]:
            problems.append("%s not installed" % check_id)
        if not state["config"]:
            problems.append("%s missing" % state["config_path"])
        if state.get("service") not in (None, "active"):
            problems.append("service %s" % state["service"])
        if problems:
            out.append(finding(check_id, "fail", host, expected, ", ".join(problems), fix))
        else:
            out.append(finding(check_id, "pass", host, expected, "present"))
    return out


def check_systemd(host, booted, systemctl, pid1=None, runtime_dir="/run/systemd/system"):
    """``booted``: systemd's runtime directory (/run/systemd/system, sd_booted(3)) exists;
    ``systemctl``: its path or None; ``pid1``: the name of process 1 (/proc/1/comm), for the
    message. The roles deploy the vLLM instances as systemd units: a host without systemd as its
    service manager cannot serve, whatever else passes."""
    expected = "systemd as PID 1"
    if booted and systemctl:
        return [finding("systemd", "pass", host, expected, "systemd%s" % (" (PID 1 %s)" % pid1 if pid1 else ""))]
    problems = []
    if not booted:
        problems.append("not booted with systemd (no %s)" % runtime_dir)
    if not systemctl:
        problems.append("no systemctl")
    if pid1 and pid1 != "systemd":
        problems.append("PID 1 is %s" % pid1)
    return [finding("systemd", "fail", host, expected, "; ".join(problems),
                    "The vLLM instances run as systemd units (vllm@<instance>.service, vllm.target): serve from a "
                    "host that boots systemd as PID 1 (bare metal, a VM, or a container started with systemd as "
                    "its init, e.g. `podman run --systemd=always IMAGE /sbin/init`).")]


def _target_finding(host, target, name):
    if target.get("enabled") == "enabled" and target.get("active") == "active":
        return finding("units", "pass", host, "enabled, active", "enabled, active", subject=name)
    return finding("units", "fail", host, "enabled, active", "%s, %s" % (target.get("enabled"), target.get("active")),
                   "`systemctl enable --now %s` (or re-run site.yml --tags vllm_server)." % name, name)


def check_units(host, instances, units, target=None, deployed=True, recorded=True, unit="vllm",
                target_name="vllm.target"):
    """``units``: {instance: {"enabled": str, "active": str, "health": int|str|None}} where
    ``health`` is the HTTP status of GET /health (None = not probed); ``target``: {"enabled":
    str, "active": str} of the active layout's target (``target_name``) or None when systemd is
    absent; ``unit``: the active layout's unit prefix (``vllm`` for ``vllm@<instance>``)."""
    if not recorded:
        return [not_applied("units", host, "enabled, active, healthy", "vllm_server")]
    if not deployed:
        return [_na("units", host, "enabled, active, healthy", "pre_deploy: the rollout will (re)start them")]
    if units is None:
        return [_na("units", host, "enabled, active, healthy", "no systemd on this host")]
    out = [_target_finding(host, target, target_name)] if target is not None else []
    if not instances:
        out.append(finding("units", "fail", host, ">= 1 instance", "no instance recorded by vllm_server",
                           "Re-run site.yml --tags vllm_server."))
    for inst in instances or []:
        name = "%s@%s" % (unit, inst["name"])
        state = (units or {}).get(inst["name"]) or {}
        problems = []
        if state.get("active") != "active":
            problems.append("not active (%s)" % state.get("active"))
        if state.get("health") not in (None, 200):
            problems.append("GET /health on port %s: %s" % (inst.get("port"), state.get("health")))
        actual = "%s, health %s" % (state.get("active"), state.get("health", "not probed"))
        if problems:
            out.append(finding("units", "fail", host, "active, /health 200", "; ".join(problems),
                               "`systemctl status %s` and `journalctl -u %s`; run "
                               "playbooks/diagnose.yml for the known failure signatures, then "
                               "`systemctl restart %s`." % (name, name, name), name))
        else:
            out.append(finding("units", "pass", host, "active, /health 200", actual, subject=name))
    return out


# --- the module's inputs ------------------------------------------------------------------------

MODES = ("auto", "pre_deploy", "post_deploy")
MODE_ALIASES = {"preflight": "pre_deploy"}   # deprecated mode name -> its current name


def resolve_mode(requested, deployed_marker):
    """The mode a run checks in. ``auto`` is ``post_deploy`` when the deployment marker (the
    record of vllm_server) exists, else ``pre_deploy``; a deprecated alias is its new name."""
    mode = MODE_ALIASES.get(requested, requested)
    if mode == "auto":
        return "post_deploy" if deployed_marker else "pre_deploy"
    return mode


def parameter_problems(params):
    """What is wrong with the gpu_compliance parameters: a list of sentences, empty when sound."""
    p = params
    bad = []
    if p["expected_gpu_count"] < 0:
        bad.append("expected_gpu_count must be >= 0 (0 = do not judge), got %d" % p["expected_gpu_count"])
    if p["retired_pages_max"] < 0:
        bad.append("retired_pages_max must be >= 0, got %d" % p["retired_pages_max"])
    for name, version in (p["packages"] or {}).items():
        if not isinstance(version, str) or not version.strip():
            bad.append("packages.%s must be an exact apt version string, got %r" % (name, version))
    settings = p.get("cuda_stack") or {}
    if settings.get("nccl_version") and not re.match(r"^\d+\.\d+\.\d+$", settings["nccl_version"]):
        bad.append("cuda_stack.nccl_version must be an NCCL version x.y.z such as 2.14.3 (cuda_stack_nccl_version), "
                   "got %r" % settings["nccl_version"])
    if settings.get("nccl_build") and not re.match(r"^\d+\.\d+\.\d+-\d+\+cuda\d+\.\d+$", settings["nccl_build"]):
        bad.append("cuda_stack.nccl_build must be a full NCCL build such as 2.14.3-1+cuda11.7 (cuda_stack_nccl_build), "
                   "got %r" % settings["nccl_build"])
    return bad


def layout_request(params, config_text, topology, host):
    """What the layout check plans with: ``(config, layout, error, requested)``.

    ``config_text``: the host's ``<model_path>/config.json`` (None: absent or unreadable), else
    ``params["model_config"]`` is used. ``requested`` is False when no model was given at all
    (the check is then not applicable); ``error`` says why no plan can be made.
    """
    model_path = params["model_path"]
    config = None
    if config_text is not None:
        try:
            config = json.loads(config_text)
        except ValueError as exc:
            return None, None, "%s/config.json is not valid JSON: %s" % (model_path, exc), True
    if config is None:
        config = params["model_config"]
    if config is None:
        if model_path:
            return None, None, "no config.json at %s on %s and no model_config" % (model_path, host), True
        return None, None, None, False
    if not topology.get("available"):
        return None, None, "no usable GPU to plan on: %s" % topology.get("reason"), True
    layout = params["layout"]
    if isinstance(layout, str) and layout.strip().lower() != "auto":
        try:
            layout = json.loads(layout)
        except ValueError:
            return None, None, "layout must be 'auto' or a list of instances, got %r" % layout, True
    return config, layout, None, True
