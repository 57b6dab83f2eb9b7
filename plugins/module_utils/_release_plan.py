# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""What the plan knows about the vLLM release before anything is installed.

Private to the collection. Pure code: no Ansible imports, no I/O. The facts come from
``_vllm_releases`` (the release table); this file applies them to one host's plan:

* the release itself (``vllm_server_pip_spec`` must pin one listed release);
* the model architectures of ``config.json`` against those the release serves;
* the driver against the CUDA runtime of the release's wheels;
* which NCCL the instances get (``vllm_server_nccl_so_path``): vLLM's NCCL wrapper binds symbols
  older NCCLs lack (its NCCL floor); with a tensor x pipeline parallel group > 1, a library below
  the floor is loaded, then silently dropped (vLLM carries on with torch's own NCCL), so an explicit
  path below the floor is refused and ``auto`` avoids it. A group of 1 creates no NCCL communicator.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._vllm_releases import (
    DRIVER_FLOORS, ReleaseError, architectures, release_for_spec, rows)

__all__ = ["plan_release", "check_architectures", "check_driver", "choose_nccl", "numeric_version", "largest_group",
           "log_requests_args", "ReleaseError"]


def numeric_version(text):
    """``'2.14.3'`` / ``'580.159.04'`` -> tuple of ints; None when ``text`` has no leading number."""
    parts = []
    for part in str(text or "").strip().split("."):
        digits = ""
        for char in part:
            if not char.isdigit():
                break
            digits += char
        if not digits:
            break
        parts.append(int(digits))
        if digits != part:
            break
    return tuple(parts) or None


def _serving(architecture, distribution):
    """Listed releases of ``distribution`` whose registry has ``architecture``, oldest first."""
    return ["%s==%s" % (distribution, row["version"]) for row in rows(distribution)
            if architecture in architectures(row)]


def check_architectures(release, config):
    """Problems (strings) for the ``architectures`` of ``config.json`` the release cannot serve."""
    names = config.get("architectures")
    if names is None:
        return []
    if not isinstance(names, list) or not all(isinstance(name, str) and name for name in names):
        return ["config.json architectures is %r: it must be a list of model class names (e.g. [\"Qwen2ForCausalLM\"]). "
                "Fix: give the model's own config.json" % (names,)]
    problems = []
    for name in names:
        if name in release["architectures"]:
            continue
        others = _serving(name, release["distribution"])
        if len(others) > 3:
            serving = "%s and %d later listed releases (newest %s)" % (others[0], len(others) - 1, others[-1])
        else:
            serving = ", ".join(others)
        problems.append(
            "the model's architecture %s (config.json) is not served by vLLM %s: its model registry has no such "
            "class. Fix: %s, or serve another model"
            % (name, release["version"], ("pin a release that serves it in vllm_server_pip_spec: %s" % serving)
               if others else "no listed release serves it; choose a model of a served architecture"))
    return problems


def check_driver(release, driver_version):
    """(problem or None, what the plan says about the driver and the CUDA runtime)."""
    runtime = release.get("cuda_runtime")
    if not runtime:
        return None, "vLLM %s (%s) brings no CUDA runtime: no driver needed" % (release["version"], release["distribution"])
    major = runtime.split(".")[0]
    floor = DRIVER_FLOORS.get(major)
    said = ("vLLM %s's wheels bring the CUDA %s runtime (torch %s): the host's CUDA toolkit does not reach it; the "
            "driver must be >= %s" % (release["version"], runtime, release["torch"] or "not known", floor))
    if not driver_version:
        return None, said + " (driver version not known here)"
    have, need = numeric_version(driver_version), numeric_version(floor)
    if have is not None and need is not None and have < need:
        return ("driver %s is older than %s, which the CUDA %s runtime of vLLM %s's wheels needs (NVIDIA's CUDA "
                "minor-version compatibility table). Fix: upgrade the NVIDIA driver, or pin a vLLM release built "
                "for an older CUDA" % (driver_version, floor, runtime, release["version"])), said
    return None, said + " (driver %s: ok)" % driver_version


def _floor_text(release):
    return ("its NCCL wrapper needs NCCL >= %s" % release["nccl_floor"]) if release["nccl_floor"] else \
        "its NCCL wrapper binds only the classic symbols (no floor)"


def _meets(version, floor):
    if not floor:
        return True
    have, need = numeric_version(version), numeric_version(floor)
    return have is not None and need is not None and have >= need


def choose_nccl(release, setting, largest_group, pinned=None, explicit_version=None, unreadable=None):
    """Which NCCL the instances get: (decision dict, problem or None).

    ``setting`` is ``vllm_server_nccl_so_path``: ``auto``, ``""`` (torch's own) or a path.
    ``pinned`` is cuda_stack's pinned system NCCL version (None when cuda_stack installs none).
    ``explicit_version`` is the NCCL version of an explicit path (read on the host, or None);
    ``unreadable`` says why it has none (e.g. "does not exist on the host").
    ``largest_group`` is the largest tensor x pipeline parallel size of the planned instances.
    """
    bundled = release.get("nccl_bundled")
    torch_nccl = "torch's own NCCL%s" % ((" %s" % bundled) if bundled else "")
    if not release.get("cuda_runtime"):
        return dict(choice="none", path=None, version=None,
                    why="vLLM %s (%s) is a CPU build: it uses no NCCL" % (release["version"], release["distribution"])), None
    if setting == "":
        return dict(choice="torch", path=None, version=bundled,
                    why="vllm_server_nccl_so_path is empty: %s" % torch_nccl), None
    if setting == "auto":
        if pinned and _meets(pinned, release["nccl_floor"]):
            return dict(choice="system", path=None, version=pinned,
                        why="the pinned NCCL %s reaches vLLM %s through VLLM_NCCL_SO_PATH (%s)"
                            % (pinned, release["version"], _floor_text(release))), None
        if pinned:
            why = ("the NCCL %s pin does not reach vLLM %s: %s, so a tensor-parallel group would drop it silently; "
                   "the instances use %s" % (pinned, release["version"], _floor_text(release), torch_nccl))
        else:
            why = "cuda_stack pins no system NCCL: the instances use %s" % torch_nccl
        return dict(choice="torch", path=None, version=bundled, why=why), None
    decision = dict(choice="explicit", path=setting, version=explicit_version,
                    why="vllm_server_nccl_so_path names %s (NCCL %s)" % (setting, explicit_version or "version unknown"))
    if largest_group <= 1 or not release["nccl_floor"]:
        return decision, None
    if explicit_version and _meets(explicit_version, release["nccl_floor"]):
        return decision, None
    have = ("is NCCL %s" % explicit_version) if explicit_version else (
        "%s, so its NCCL version is not known" % (unreadable or "has a version that cannot be read here"))
    return decision, (
        "vllm_server_nccl_so_path is %s, which %s, but vLLM %s's NCCL wrapper needs NCCL >= %s: with a "
        "tensor x pipeline parallel group of %d, vLLM would load it, then silently drop its NCCL communicator "
        "and use torch's own. Fix: set vllm_server_nccl_so_path: auto (or \"\" for torch's NCCL), or point it at "
        "an NCCL >= %s" % (setting, have, release["version"], release["nccl_floor"], largest_group,
                           release["nccl_floor"]))


def _summary(release):
    keys = ("distribution", "version", "row", "listed", "note", "status", "torch", "cuda_runtime", "nccl_bundled",
            "nccl_floor", "needs_ray", "flags", "kv_gauges", "error_404", "start_log", "entry_point",
            "fp8_moe_tp_padding", "bind_reuse_address")
    out = dict((key, release.get(key)) for key in keys)
    out["kv_gauges"] = list(out["kv_gauges"] or ())
    out["log_requests_args"] = log_requests_args(release["flags"])
    return out


def log_requests_args(flags):
    """{"on": [...], "off": [...]}: what to render for vllm_server_log_requests true / false. A release
    with --enable-log-requests logs no request by default (its --disable-log-requests, where still
    there, is deprecated); an older one logs them unless --disable-log-requests."""
    if flags.get("enable_log_requests"):
        return {"on": [flags["enable_log_requests"]], "off": []}
    return {"on": [], "off": [flags["disable_log_requests"]] if flags.get("disable_log_requests") else []}


def plan_release(pip_spec, config, allow_unlisted=False, driver_version=None):
    """(release summary, problems): the release ``pip_spec`` pins, with the architecture and driver
    checks done. Raises ReleaseError when the spec or the release is refused."""
    release = release_for_spec(pip_spec, allow_unlisted)
    problems = check_architectures(release, config)
    problem, said = check_driver(release, driver_version)
    if problem:
        problems.append(problem)
    summary = _summary(release)
    summary["driver"] = said
    return summary, problems


def largest_group(*instance_lists):
    """The largest tensor x pipeline parallel size over every planned instance."""
    sizes = [int(i.get("tensor_parallel_size", 1)) * int(i.get("pipeline_parallel_size", 1))
             for instances in instance_lists for i in (instances or [])]
    return max(sizes or [1])
