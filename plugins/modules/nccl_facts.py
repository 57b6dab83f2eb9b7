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
short_description: Report which NCCL library (version, CUDA build) the host and each vLLM instance really load
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
  env_excludes:
    description:
      - File names (shell globs, matched against the base name) among I(env_files) that are not
        instance environment files and are never opened, for example the API key file of
        the role C(gpu_fleet.vllm_serving.vllm_server), which holds a secret.
    type: list
    elements: str
    default: [api-key.env]
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

import os

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._nccl_gather import (
    NcclGatherError,
    gather,
)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            venvs=dict(type="list", elements="path", default=[]),
            env_files=dict(type="list", elements="str", default=["/etc/vllm/*.env"]),
            env_excludes=dict(type="list", elements="str", default=["api-key.env"]),
            libraries=dict(type="list", elements="path", default=[]),
            pinned_path=dict(type="path"),
        ),
        supports_check_mode=True,
    )
    ldconfig = module.get_bin_path("ldconfig", required=True, opt_dirs=["/sbin", "/usr/sbin"])
    try:
        facts = gather(lambda argv: module.run_command(argv, environ_update={"LC_ALL": "C"}), ldconfig,
                       module.params["venvs"], module.params["env_files"], module.params["libraries"],
                       module.params["pinned_path"], os.uname()[4], module.params["env_excludes"])
    except NcclGatherError as exc:
        module.fail_json(msg=str(exc), rc=exc.rc, stdout=exc.stdout, stderr=exc.stderr)
    module.exit_json(changed=False, ansible_facts={"nccl": facts})


if __name__ == "__main__":
    main()
