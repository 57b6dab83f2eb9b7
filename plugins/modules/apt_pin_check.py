#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: apt_pin_check
short_description: Say which version apt would install with a pin file replaced, and which other pin files decide it
version_added: 0.1.0
description:
  - Copies the host's apt preferences (C(preferences) and C(preferences.d)) into a private
    directory, puts O(pins_content) there in place of O(pins_file), and asks C(apt-cache policy)
    with that copy which version of each package of O(packages) apt would choose (its candidate).
    The host's own preference files are not changed.
  - A version that is not the candidate cannot be installed by M(ansible.builtin.apt) (it fails
    with C(no available installation candidate)); for each such package the module names the pin
    stanzas of the other preference files that apply to it.
  - Changes nothing.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  packages:
    description: Package name to the exact version wanted.
    type: dict
    required: true
  pins_file:
    description: The preference file the caller owns (in C(<apt_dir>/preferences.d)); the copy holds
      O(pins_content) under its name instead of what the host has.
    type: path
    required: true
  pins_content:
    description: The content the caller would write to O(pins_file).
    type: str
    required: true
  apt_options:
    description:
      - Further apt configuration for the query, C(Key=Value) each (passed as C(-o Key=Value)); for
        example a private sources list and package lists.
    type: list
    elements: str
    default: []
  apt_dir:
    description: apt's configuration directory. Only tests change it.
    type: path
    default: /etc/apt
notes:
  - Supports check mode.
  - Pins by C(src:) package name are not attributed to a package (apt still applies them).
seealso:
  - module: ansible.builtin.apt
  - name: apt_preferences(5)
    description: How apt chooses a candidate version from pins.
    link: https://manpages.debian.org/bookworm/apt/apt_preferences.5.en.html
"""

EXAMPLES = r"""
- name: Would apt install the NCCL build with our pins in place?
  gpu_fleet.vllm_serving.apt_pin_check:
    packages:
      libnccl2: 2.18.3-1+cuda12.1
      libnccl-dev: 2.18.3-1+cuda12.1
    pins_file: /etc/apt/preferences.d/gpu-fleet-cuda-pins.pref
    pins_content: "{{ lookup('ansible.builtin.template', 'cuda-pins.pref.j2') }}"
  register: pin_check
"""

RETURN = r"""
results:
  description:
    - One entry per package, in the order of O(packages). C(status) is C(installed) (that version is
      installed), C(ok) (apt's candidate is that version), C(missing) (no repository offers it),
      C(unknown) (apt knows no such package) or C(not_candidate) (other pins make another version
      the candidate). C(ok) is true for C(installed) and C(ok).
    - C(holders) lists the stanzas of other preference files that decide a C(not_candidate)
      (C(file), C(line_number), C(packages), C(pin), C(priority)); C(message) says it in a sentence.
  returned: always
  type: list
  elements: dict
  sample:
    - package: libnccl2
      wanted: 2.14.3-1+cuda11.0
      status: not_candidate
      ok: false
      installed: 2.14.3-1+cuda11.7
      candidate: 2.14.3-1+cuda11.7
      candidate_priority: 1001
      wanted_priority: 1001
      repository_versions: [2.18.3-1+cuda12.1, 2.14.3-1+cuda11.7, 2.14.3-1+cuda11.0]
      holders:
        - {file: /etc/apt/preferences.d/00-site-nccl, line_number: 2, packages: [libnccl2, libnccl-dev],
           pin: version 2.14.3-1+cuda11.7, priority: 1001}
      message: "with the apt pins this host would have, apt's candidate for libnccl2 is ..."
problems:
  description: The entries of RV(results) that are not C(ok).
  returned: always
  type: list
  elements: dict
preference_files:
  description: The host's preference files apt reads (their stanzas are the ones RV(results) can name).
  returned: always
  type: list
  elements: str
"""

import os
import shutil

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _apt_policy


def read(module, path):
    try:
        with open(path, "rb") as handle:
            return handle.read().decode("utf-8", "replace")
    except (IOError, OSError) as exc:
        module.fail_json(msg="cannot read apt preference file %s: %s" % (path, to_native(exc)))


def copy_preferences(module, apt_dir, private, owned):
    """Copy the host's preference files to ``private`` (the owned one left out) and return the
    (path, text) of those apt reads, in apt's order (the single file, then the parts sorted)."""
    parts = os.path.join(apt_dir, "preferences.d")
    read_files = []
    single = os.path.join(apt_dir, "preferences")
    if os.path.isfile(single):
        text = read(module, single)
        shutil.copyfile(single, os.path.join(private, "preferences"))
        read_files.append((single, text))
    names = sorted(os.listdir(parts)) if os.path.isdir(parts) else []
    for name in names:
        path = os.path.join(parts, name)
        if path == owned or not os.path.isfile(path):
            continue
        shutil.copyfile(path, os.path.join(private, "preferences.d", name))
        if _apt_policy.preferences_file_read(name):
            read_files.append((path, read(module, path)))
    return read_files


def main():
    module = AnsibleModule(
        argument_spec=dict(
            packages=dict(type="dict", required=True),
            pins_file=dict(type="path", required=True),
            pins_content=dict(type="str", required=True),
            apt_options=dict(type="list", elements="str", default=[]),
            apt_dir=dict(type="path", default="/etc/apt"),
        ),
        supports_check_mode=True,
    )
    params = module.params
    wanted = dict((str(k), str(v)) for k, v in params["packages"].items())
    owned = params["pins_file"]
    if os.path.dirname(owned) != os.path.join(params["apt_dir"], "preferences.d"):
        module.fail_json(msg="pins_file %s is not in %s/preferences.d" % (owned, params["apt_dir"]))
    private = os.path.join(module.tmpdir, "apt-preferences")
    os.makedirs(os.path.join(private, "preferences.d"))
    files = copy_preferences(module, params["apt_dir"], private, owned)
    with open(os.path.join(private, "preferences.d", os.path.basename(owned)), "w") as handle:
        handle.write(params["pins_content"])
    argv = ["apt-cache", "-o", "Dir::Etc::PreferencesParts=" + os.path.join(private, "preferences.d"),
            "-o", "Dir::Etc::Preferences=" + os.path.join(private, "preferences")]
    for option in params["apt_options"]:
        argv += ["-o", option]
    argv += ["policy"] + list(wanted)
    rc, out, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    if rc != 0:
        module.fail_json(msg="apt-cache policy failed: %s" % (" ".join(_apt_policy.apt_errors(err)) or err.strip()),
                         rc=rc, stdout=out, stderr=err)
    stanzas = []
    for path, text in files:
        stanzas.extend(_apt_policy.parse_preferences(path, text))
    results = _apt_policy.check_pins(_apt_policy.parse_policy(out), wanted, stanzas, owned)
    module.exit_json(changed=False, results=results, problems=[r for r in results if not r["ok"]],
                     preference_files=[path for path, dummy in files])


if __name__ == "__main__":
    main()
