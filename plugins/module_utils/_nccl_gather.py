# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""Reading which NCCL a host and its vLLM instances load: files and ``ldconfig -p``.

Shared by nccl_facts and gpu_compliance (its ``nccl_effective`` check), so both read the same
libraries the same way. No Ansible imports: ``run`` is the caller's ``module.run_command``-like
function ``run(argv) -> (rc, stdout, stderr)``. The parsing is in ``_nccl``.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import fnmatch
import glob
import mmap
import os
import stat

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccl
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._instance_env import parse_env_text


class NcclGatherError(Exception):
    """A reading failed in a way the caller must report (message, rc, stdout, stderr)."""

    def __init__(self, msg, rc=None, stdout="", stderr=""):
        super(NcclGatherError, self).__init__(msg)
        self.rc, self.stdout, self.stderr = rc, stdout, stderr


def read_library(path, dist_version=None):
    """Library record for a file on this host; version from its bytes when readable.

    Only a regular file is opened (non-blocking: a FIFO named as a library would block the read);
    otherwise the record has no version and ``problem`` says why (``does not exist on the host``,
    ``is not a regular file``, ``cannot be read``), ``error`` the same with the path."""
    realpath = os.path.realpath(path)
    binary_version, binary_cuda, problem = None, None, None
    try:
        st = os.stat(realpath)
    except (IOError, OSError) as exc:
        st, problem = None, "does not exist on the host (%s)" % (exc.strerror or exc)
    if st is not None and not stat.S_ISREG(st.st_mode):
        problem = "is not a regular file"
    elif st is not None:
        try:
            with os.fdopen(os.open(realpath, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0)), "rb") as handle:
                if st.st_size > 0:
                    mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                    try:
                        binary_version, binary_cuda = _nccl.version_from_binary(mapped)
                    finally:
                        mapped.close()
        except (IOError, OSError, ValueError) as exc:
            problem = "cannot be read (%s)" % exc
    record = _nccl.library_record(path, realpath, binary_version, binary_cuda, dist_version)
    if problem:
        record["problem"], record["error"] = problem, "%s: %s" % (realpath, problem)
    return record


def torch_nccl(venv):
    """torch's bundled NCCL in a virtualenv, or None when it has none."""
    for site in sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))):
        lib = os.path.join(site, "nvidia", "nccl", "lib", _nccl.NCCL_SONAME)
        if os.path.exists(lib):
            dist_version, dummy = _nccl.version_from_dist_info(os.listdir(site))
            return read_library(lib, dist_version)
    return None


def gather(run, ldconfig, venvs, env_files, libraries=(), pinned_path=None, machine=None, env_excludes=("api-key.env",)):
    """The ``nccl`` facts (see nccl_facts' RETURN). Raises NcclGatherError when ``ldconfig -p``
    fails or an environment file cannot be read. Files whose base name matches one of
    ``env_excludes`` (the API key file) are not instances and are never opened."""
    rc, out, err = run([ldconfig, "-p"])
    if rc != 0:
        raise NcclGatherError("ldconfig -p failed (rc %d): %s" % (rc, err.strip()), rc, out, err)
    entries = [e for e in _nccl.parse_ldconfig_p(out) if e["name"] == _nccl.NCCL_SONAME]
    chosen = _nccl.pick_library(entries, machine=machine or os.uname()[4])
    system = read_library(chosen["path"]) if chosen else None

    found_venvs = {}
    for venv in venvs:
        found_venvs[venv] = torch_nccl(venv)

    pinned = pinned_path or (system["path"] if system else None)
    pinned_real = os.path.realpath(pinned) if pinned else None
    bundled = found_venvs[venvs[0]] if venvs else None

    instances = {}
    for pattern in env_files:
        for path in sorted(glob.glob(pattern)):
            if any(fnmatch.fnmatchcase(os.path.basename(path), ex) for ex in env_excludes):
                continue
            try:
                with open(path) as handle:
                    env = parse_env_text(handle.read())
            except (IOError, OSError) as exc:
                raise NcclGatherError("cannot read vLLM environment file %s: %s" % (path, exc))
            so_path = env.get("VLLM_NCCL_SO_PATH") or None
            if so_path:
                effective = read_library(so_path) if os.path.exists(so_path) else {
                    "path": so_path, "realpath": None, "version": None, "cuda": None,
                    "version_source": None, "error": "%s does not exist" % so_path}
            else:
                effective = bundled
            instances[path] = {
                "nccl_so_path": so_path,
                "effective": effective,
                "uses_pinned": bool(effective and pinned_real and effective.get("realpath") == pinned_real),
            }

    found_libraries = {}
    for path in libraries:
        found_libraries[path] = read_library(path) if os.path.exists(path) else None

    return {
        "system": system,
        "libraries": found_libraries,
        "ldconfig": entries,
        "venvs": found_venvs,
        "pinned_path": pinned_real,
        "instances": instances,
    }
