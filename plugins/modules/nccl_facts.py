#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: nccl_facts
short_description: Report which NCCL library the host and its vLLM instances really load
version_added: 0.1.0
description:
  - Finds the system C(libnccl.so.2) the dynamic linker resolves (first x86-64 entry of
    C(ldconfig -p)) and reads its version from the library itself (the C(NCCL version x.y.z+cudaA.B)
    string NCCL embeds), else from the file the soname link points at (C(libnccl.so.2.28.3)).
  - Finds the NCCL bundled with torch in each given virtualenv
    (C(lib/python3.*/site-packages/nvidia/nccl/lib/libnccl.so.2)) and reads its version the same way,
    else from the C(nvidia_nccl_cuXX-<version>.dist-info) directory. Never imports torch.
  - Reads C(VLLM_NCCL_SO_PATH) from the vLLM instances' environment files and reports, per file, the
    library the instance will load (that path, else torch's bundled copy in the first virtualenv)
    and whether it is the pinned one.
  - pip-installed torch loads its own NCCL, not the system package; a system NCCL pin reaches vLLM
    only through C(VLLM_NCCL_SO_PATH). These facts make that split visible.
  - Changes nothing.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  venvs:
    description:
      - Python virtualenvs whose torch-bundled NCCL to report (for example the vLLM virtualenv).
      - The first one is what an instance without C(VLLM_NCCL_SO_PATH) loads.
    type: list
    elements: path
    default: []
  env_files:
    description:
      - Environment files of the vLLM instances (systemd C(EnvironmentFile)); shell globs allowed.
    type: list
    elements: str
    default: [/etc/vllm/*.env]
  libraries:
    description:
      - Further NCCL library files to report (for example a tarball install's
        C(/opt/nccl/<build>/lib/libnccl.so.2)), keyed by path in C(libraries) of the result.
    type: list
    elements: path
    default: []
  pinned_path:
    description:
      - The NCCL library the instances should load. Compared after resolving links.
      - Empty means the system library found through C(ldconfig -p).
    type: path
notes:
  - Supports check mode.
  - Reading the version string maps the library file (a real libnccl is a few hundred MB) and
    searches it; nothing is loaded or executed.
seealso:
  - name: vLLM environment variables (VLLM_NCCL_SO_PATH)
    description: vLLM uses this NCCL library instead of the one torch brought.
    link: https://docs.vllm.ai/en/latest/serving/env_vars.html
requirements:
  - ldconfig (glibc)
"""

EXAMPLES = r"""
- name: Read the effective NCCL of the host and of the vLLM instances
  gpu_fleet.vllm_serving.nccl_facts:
    venvs: [/opt/vllm/venv]

- name: Fail when an instance does not load the pinned system NCCL
  ansible.builtin.assert:
    that: ansible_facts.nccl.instances | dict2items | map(attribute='value.uses_pinned') | min
"""

RETURN = r"""
ansible_facts:
  description: Facts added to the host.
  returned: always
  type: dict
  contains:
    nccl:
      description: The NCCL libraries found and which one each vLLM instance loads.
      returned: always
      type: dict
      contains:
        system:
          description:
            - The system C(libnccl.so.2) the dynamic linker resolves, or null when ldconfig knows none.
            - C(path) is what C(ldconfig -p) lists, C(realpath) the file after links, C(version)
              x.y.z, C(cuda) the CUDA version of the build when the library says it (else null),
              C(version_source) one of C(binary), C(filename), C(dist-info), or null when unknown.
          type: dict
          sample:
            path: /lib/x86_64-linux-gnu/libnccl.so.2
            realpath: /usr/lib/x86_64-linux-gnu/libnccl.so.2.28.3
            version: 2.28.3
            cuda: "13.0"
            version_source: binary
        ldconfig:
          description: Every C(libnccl.so.2) entry of C(ldconfig -p), in lookup order.
          type: list
          elements: dict
          sample: [{name: libnccl.so.2, flags: [libc6, x86-64], path: /lib/x86_64-linux-gnu/libnccl.so.2}]
        venvs:
          description: Per virtualenv, torch's bundled NCCL (same keys as C(system)) or null when
            the virtualenv has none.
          type: dict
          sample:
            /opt/torch/.venv:
              path: /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
              realpath: /opt/torch/.venv/lib/python3.12/site-packages/nvidia/nccl/lib/libnccl.so.2
              version: 2.28.9
              cuda: "12.9"
              version_source: binary
        libraries:
          description: Per path given in C(libraries), its record (same keys as C(system)), or
            null when the file does not exist.
          type: dict
          sample:
            /opt/nccl/2.14.3-1+cuda11.7/lib/libnccl.so.2:
              path: /opt/nccl/2.14.3-1+cuda11.7/lib/libnccl.so.2
              realpath: /opt/nccl/2.14.3-1+cuda11.7/lib/libnccl.so.2.14.3
              version: 2.14.3
              cuda: "11.7"
              version_source: binary
        pinned_path:
          description: The library instances should load, after resolving links (null when none).
          type: str
          sample: /usr/lib/x86_64-linux-gnu/libnccl.so.2.14.3
        instances:
          description:
            - Per environment file, C(nccl_so_path) (the C(VLLM_NCCL_SO_PATH) value or null),
              C(effective) (the library record the instance loads, or null when unknown) and
              C(uses_pinned) (whether that library is C(pinned_path)).
          type: dict
          sample:
            /etc/vllm/n0-0.env:
              nccl_so_path: /usr/lib/x86_64-linux-gnu/libnccl.so.2
              effective: {path: /usr/lib/x86_64-linux-gnu/libnccl.so.2, version: 2.14.3}
              uses_pinned: true
"""

import glob
import mmap
import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _nccl


def read_library(path, dist_version=None):
    """Library record for a file on this host; version from its bytes when readable."""
    realpath = os.path.realpath(path)
    binary_version, binary_cuda, error = None, None, None
    try:
        with open(realpath, "rb") as handle:
            if os.fstat(handle.fileno()).st_size > 0:
                mapped = mmap.mmap(handle.fileno(), 0, access=mmap.ACCESS_READ)
                try:
                    binary_version, binary_cuda = _nccl.version_from_binary(mapped)
                finally:
                    mapped.close()
    except (IOError, OSError, ValueError) as exc:
        error = "%s: %s" % (realpath, exc)
    record = _nccl.library_record(path, realpath, binary_version, binary_cuda, dist_version)
    if error:
        record["error"] = error
    return record


def torch_nccl(venv):
    for site in sorted(glob.glob(os.path.join(venv, "lib", "python3*", "site-packages"))):
        lib = os.path.join(site, "nvidia", "nccl", "lib", _nccl.NCCL_SONAME)
        if os.path.exists(lib):
            dist_version, dummy = _nccl.version_from_dist_info(os.listdir(site))
            return read_library(lib, dist_version)
    return None


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venvs=dict(type="list", elements="path", default=[]),
            env_files=dict(type="list", elements="str", default=["/etc/vllm/*.env"]),
            libraries=dict(type="list", elements="path", default=[]),
            pinned_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    ldconfig = module.get_bin_path("ldconfig", required=True, opt_dirs=["/sbin", "/usr/sbin"])
    rc, out, err = module.run_command([ldconfig, "-p"], environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg="ldconfig -p failed (rc %d): %s" % (rc, err.strip()), rc=rc, stdout=out, stderr=err)
    entries = [e for e in _nccl.parse_ldconfig_p(out) if e["name"] == _nccl.NCCL_SONAME]
    chosen = _nccl.pick_library(entries, machine=os.uname()[4])
    system = read_library(chosen["path"]) if chosen else None

    venvs = {}
    for venv in module.params["venvs"]:
        venvs[venv] = torch_nccl(venv)

    pinned = module.params["pinned_path"] or (system["path"] if system else None)
    pinned_real = os.path.realpath(pinned) if pinned else None
    bundled = venvs[module.params["venvs"][0]] if module.params["venvs"] else None

    instances = {}
    for pattern in module.params["env_files"]:
        for path in sorted(glob.glob(pattern)):
            try:
                with open(path) as handle:
                    env = _nccl.parse_env_file(handle.read())
            except (IOError, OSError) as exc:
                module.fail_json(msg="cannot read vLLM environment file %s: %s" % (path, exc))
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

    libraries = {}
    for path in module.params["libraries"]:
        libraries[path] = read_library(path) if os.path.exists(path) else None

    module.exit_json(changed=False, ansible_facts={"nccl": {
        "system": system,
        "libraries": libraries,
        "ldconfig": entries,
        "venvs": venvs,
        "pinned_path": pinned_real,
        "instances": instances,
    }})


if __name__ == "__main__":
    main()
