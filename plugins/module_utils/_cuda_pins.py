# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The CUDA/NCCL pin rules: the one definition of what the collection pins.

Private to the collection. Pure code: no Ansible imports, no I/O. Its callers:

* the ``gpu_fleet.vllm_serving.cuda_pins`` filter, which the ``cuda_stack`` role applies to its
  variables before it changes anything (and records the result in its local fact);
* ``gpu_compliance``, for the expected values on a host where ``cuda_stack`` has recorded nothing
  yet (before a rollout), and to flag a host whose recorded pins are not what the inventory asks.

The settings (:data:`SETTINGS`) are the ``cuda_stack`` role's variables without the
``cuda_stack_`` prefix; a missing or empty one takes the role's default (:data:`DEFAULTS`, which
``roles/cuda_stack/defaults/main.yml`` repeats for users and a unit test keeps equal).
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath

__all__ = ["CUDA_TABLE", "NCCL_TABLE", "NCCL_PACKAGES", "DEFAULTS", "SETTINGS", "MANAGED_PACKAGES", "resolve"]

# CUDA releases: toolkit package, default full version, and the minimum Linux driver.
# Source: CUDA Toolkit 12.1 release notes, Table 3 (CUDA Toolkit and Corresponding Driver
# Versions): CUDA 12.1 GA and Update 1 need >= 530.30.02; any CUDA 12.x runs on >= 525.60.13 with
# minor-version compatibility (reduced feature set, e.g. no PTX JIT of newer PTX).
# distros: NVIDIA repository paths that carry this release (no CUDA 12.1 in debian12: that
# repository starts at 12.3).
CUDA_TABLE = {
    "12.1": {
        "package": "cuda-toolkit-12-1",
        "default_version": "12.1.1-1",
        "min_driver": "530.30.02",
        "minor_compat_driver": "525.60.13",
        "distros": ["ubuntu2004", "ubuntu2204", "debian11"],
    },
}

# NCCL builds per NCCL release and CUDA version. NVIDIA publishes every NCCL release as
# "<nccl>-1+cuda<X.Y>" for the CUDA versions current at its release. NCCL 2.14.3 predates CUDA 12.0:
# public install scripts show only +cuda11.7 and +cuda11.0 builds (apt), and +cuda11.7/+cuda11.6
# tarballs in NVIDIA's redist v2.14 folder; no +cuda12.x build of 2.14.3 is known.
# libnccl links the CUDA runtime statically (ldd lists no libcudart, checked on a real H200 for
# both the apt and torch-bundled builds), so a +cuda11.7 build runs on a CUDA 12 driver: for a
# CUDA 12.1 host the +cuda11.7 build is the one that serves. The role still asks the configured
# repository (apt-cache madison) before changing anything.
NCCL_TABLE = {
    "2.14.3": {"12.1": "2.14.3-1+cuda11.7"},
    "2.18.3": {"12.1": "2.18.3-1+cuda12.1"},
}

NCCL_PACKAGES = ("libnccl2", "libnccl-dev")

# Every package the rules can pin (what cuda_stack_state=absent releases).
MANAGED_PACKAGES = tuple(sorted(entry["package"] for entry in CUDA_TABLE.values())) + NCCL_PACKAGES

DEFAULTS = {
    "cuda_version": "12.1",
    "cuda_package_version": "",
    "nccl_version": "2.14.3",
    "nccl_build": "",
    "install_nccl": True,
    "nccl_install_method": "apt",
    "nccl_prefix": "/opt/nccl",
    "nccl_libdir": "/usr/lib/x86_64-linux-gnu",
}
SETTINGS = tuple(sorted(DEFAULTS))
METHODS = ("apt", "tarball")


def _settings(given):
    """DEFAULTS overlaid with the non-empty entries of ``given`` (unknown keys refused)."""
    unknown = sorted(set(given or {}) - set(DEFAULTS))
    if unknown:
        raise ValueError("unknown cuda_stack setting(s) %s; known: %s" % (", ".join(unknown), ", ".join(SETTINGS)))
    out = dict(DEFAULTS)
    for key, value in (given or {}).items():
        if value is not None and value != "":
            out[key] = value
    out["install_nccl"] = out["install_nccl"] in (True, "true", "True", "yes", "1", 1)
    for key in ("cuda_version", "nccl_version"):
        out[key] = str(out[key])
    return out


def _problems(s, cuda, build):
    problems = []
    if not cuda:
        problems.append("cuda_stack_cuda_version '%s' is not in the compatibility table; known: %s"
                        % (s["cuda_version"], ", ".join(sorted(CUDA_TABLE))))
    if s["install_nccl"] and not build:
        problems.append("no NCCL build of %s is known for CUDA %s; set cuda_stack_nccl_build to a full "
                        "version such as 2.14.3-1+cuda11.7" % (s["nccl_version"], s["cuda_version"]))
    if s["nccl_install_method"] not in METHODS:
        problems.append("cuda_stack_nccl_install_method must be one of %s, got '%s'"
                        % (", ".join(METHODS), s["nccl_install_method"]))
    return problems


def resolve(given=None):
    """The pins of the cuda_stack settings ``given`` (see :data:`SETTINGS`): a dict of plain
    values. ``problems`` lists what makes them unusable (empty when they are sound)."""
    s = _settings(given)
    cuda = CUDA_TABLE.get(s["cuda_version"], {})
    build = str(s["nccl_build"] or NCCL_TABLE.get(s["nccl_version"], {}).get(s["cuda_version"], ""))
    release = build.split("-", 1)[0]
    tarball = s["nccl_install_method"] == "tarball"
    tarball_dir = posixpath.join(s["nccl_prefix"], build) if build else ""
    pins = {}
    if cuda:
        pins[cuda["package"]] = str(s["cuda_package_version"] or cuda["default_version"])
    if s["install_nccl"] and build and not tarball:
        pins.update((name, build) for name in NCCL_PACKAGES)
    library = ""
    if s["install_nccl"] and build:
        library = posixpath.join(posixpath.join(tarball_dir, "lib") if tarball else s["nccl_libdir"],
                                 "libnccl.so." + release)
    return {
        "cuda_version": s["cuda_version"],
        "cuda_package": cuda.get("package", ""),
        "toolkit_version": pins.get(cuda.get("package"), ""),
        "min_driver": cuda.get("min_driver", ""),
        "minor_compat_driver": cuda.get("minor_compat_driver", ""),
        "distros": list(cuda.get("distros", [])),
        "known_cuda_versions": sorted(CUDA_TABLE),
        "install_nccl": s["install_nccl"],
        "nccl_install_method": s["nccl_install_method"],
        "nccl_version": s["nccl_version"],
        "nccl_build": build,
        "nccl_release": release,
        "nccl_cuda": build.split("+cuda", 1)[1] if "+cuda" in build else "",
        "nccl_tarball_dir": tarball_dir,
        "nccl_library": library,
        "pins": pins,
        "holds": sorted(pins),
        "managed_packages": list(MANAGED_PACKAGES),
        "problems": _problems(s, cuda, build),
    }
