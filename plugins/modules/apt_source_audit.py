#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: apt_source_audit
short_description: Check an apt repository's signing key and find other definitions of the repository
version_added: 0.1.0
description:
  - Reads the repository's signing key (URL, absolute path on the host, or an ASCII-armoured block),
    computes the fingerprints of its public keys and subkeys itself (OpenPGP v4 and v6; no gpg
    needed, so it also works in check mode on a host without gnupg) and says whether one of them is
    an expected fingerprint.
  - Lists every entry for the repository URI in C(sources.list), C(sources.list.d/*.list) and
    C(sources.list.d/*.sources), and the ones outside the file the caller owns (foreign entries),
    with the action that removes them per file. A second definition of the same URI with another
    C(Signed-By) makes apt stop with C(Conflicting values set for option Signed-By).
  - URIs are compared with http and https alike and trailing slashes ignored.
  - With O(check_apt), also asks apt itself whether it can read its sources (the read-only
    C(apt-get indextargets)) and returns its error lines. A conflicting definition stops every apt
    command on the host, and apt's message names no file.
  - Changes nothing; the caller removes what it decides to remove.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  uri:
    description: Repository URI as the owned entry has it (for example C(<mirror>/debian11/x86_64/)).
    type: str
    required: true
  owned_file:
    description: The sources file the caller owns; its entries are not foreign.
    type: path
    required: true
  key:
    description:
      - The signing key - an C(http(s)://) or C(file://) URL, an absolute path on the host, or the
        ASCII-armoured key block itself. Binary (C(.gpg)) and armoured files are both read.
    type: str
    required: true
  fingerprints:
    description:
      - Accepted fingerprints (40 or 64 hex digits, spaces allowed). Empty accepts nothing.
    type: list
    elements: str
    default: []
  apt_dir:
    description: apt's configuration directory. Only tests change it.
    type: path
    default: /etc/apt
  timeout:
    description: Seconds to wait for a key URL.
    type: int
    default: 30
  check_apt:
    description: Run C(apt-get indextargets) (with C(Dir::Etc) set to O(apt_dir)) and return whether
      apt can read its sources (RV(apt_readable), RV(apt_errors)).
    type: bool
    default: false
notes:
  - Supports check mode.
seealso:
  - module: ansible.builtin.deb822_repository
  - name: Updating the CUDA Linux GPG repository key (NVIDIA)
    description: The 2022 key rotation; the key of the current repositories is 3bf863cc.
    link: https://developer.nvidia.com/blog/updating-the-cuda-linux-gpg-repository-key/
"""

EXAMPLES = r"""
- name: Check the CUDA key and find other definitions of the CUDA repository
  gpu_fleet.vllm_serving.apt_source_audit:
    uri: https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/
    owned_file: /etc/apt/sources.list.d/cuda.sources
    key: https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/3bf863cc.pub
    fingerprints: [EB693B3035CD5710E231E123A4B469963BF863CC]
  register: audit
"""

RETURN = r"""
key_fingerprints:
  description: Fingerprints (upper-case hex) of every public key and subkey in the key data.
  returned: always
  type: list
  elements: str
  sample: [EB693B3035CD5710E231E123A4B469963BF863CC]
key_matches:
  description: Whether one of C(key_fingerprints) is in C(fingerprints).
  returned: always
  type: bool
  sample: true
key_armored:
  description: The key as an ASCII-armoured block (binary keys are armoured), to write as the keyring
    C(Signed-By) names; only the bytes whose fingerprints were checked.
  returned: always
  type: str
  sample: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nmQINBGJYmlEBEAD...\n-----END PGP PUBLIC KEY BLOCK-----\n"
entries:
  description:
    - Every entry for C(uri), owned or not. C(file), C(format) (C(one-line) or C(deb822)),
      C(line) (one-line entries, verbatim), C(line_number), C(types), C(uris), C(suites),
      C(signed_by) (null when absent), C(enabled).
  returned: always
  type: list
  elements: dict
  sample:
    - file: /etc/apt/sources.list.d/cuda-debian11-x86_64.list
      format: one-line
      line: deb https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/ /
      line_number: 1
      types: [deb]
      uris: ["https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/"]
      suites: [/]
      signed_by: null
      enabled: true
foreign:
  description: The entries of C(entries) outside C(owned_file).
  returned: always
  type: list
  elements: dict
actions:
  description:
    - Per file with foreign entries - C(remove_file) (every entry in it is for this URI),
      C(remove_lines) (a one-line file that also defines other repositories) or C(refuse) (a deb822
      file mixing this repository with others).
  returned: always
  type: dict
  sample: {/etc/apt/sources.list.d/cuda-debian11-x86_64.list: remove_file}
signed_by_conflict:
  description: Whether apt stops on the definitions of the repository in RV(entries) (in apt's reading
    order) because they disagree on C(Signed-By) (a first one without and a later one with it is
    accepted; any other difference is not); apt then reads no source at all.
  returned: always
  type: bool
  sample: true
apt_readable:
  description: Whether C(apt-get indextargets) could read the sources; true when O(check_apt) is false.
  returned: always
  type: bool
  sample: false
apt_errors:
  description: apt's C(E:) lines from C(apt-get indextargets), each once (empty when it read the sources).
  returned: always
  type: list
  elements: str
  sample:
    - >-
      E: Conflicting values set for option Signed-By regarding source
      https://developer.download.nvidia.com/compute/cuda/repos/debian11/x86_64/ /:
      /usr/share/keyrings/cuda-archive-keyring.gpg != /etc/apt/keyrings/gpu-fleet-cuda.asc
    - "E: The list of sources could not be read."
"""

import glob
import os

from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.text.converters import to_native
from ansible.module_utils.urls import fetch_url
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _apt_policy, _apt_source


def read_key(module, key):
    if key.lstrip().startswith("-----BEGIN PGP"):
        return key.encode("utf-8"), "inline"
    if key.startswith("file://"):
        key = key[len("file://"):]
    if key.startswith("/"):
        try:
            with open(key, "rb") as handle:
                return handle.read(), key
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot read the signing key %s: %s" % (key, to_native(exc)))
    if key.startswith(("http://", "https://")):
        response, info = fetch_url(module, key, timeout=module.params["timeout"])
        if info.get("status") != 200 or response is None:
            module.fail_json(msg="cannot download the signing key %s: HTTP %s %s"
                             % (key, info.get("status"), info.get("msg")))
        return response.read(), key
    module.fail_json(msg="key %r is neither a URL, an absolute path nor an armoured key block" % key)


def read_sources(module, apt_dir):
    """Entries of every source file, in apt's order: sources.list, then sources.list.d by name."""
    files = [os.path.join(apt_dir, "sources.list")]
    files += sorted(glob.glob(os.path.join(apt_dir, "sources.list.d", "*.list"))
                    + glob.glob(os.path.join(apt_dir, "sources.list.d", "*.sources")))
    entries = []
    for path in files:
        if not os.path.isfile(path):
            continue
        try:
            with open(path, "rb") as handle:
                text = handle.read().decode("utf-8", "replace")
        except (IOError, OSError) as exc:
            module.fail_json(msg="cannot read apt source file %s: %s" % (path, to_native(exc)))
        entries.extend(_apt_source.parse_sources(path, text))
    return entries


def apt_reads_sources(module, apt_dir):
    """(readable, error lines) from apt itself: indextargets reads the sources, fetches nothing."""
    argv = ["apt-get", "-o", "Dir::Etc=" + apt_dir, "indextargets", "--format", "$(URI)"]
    rc, dummy, err = module.run_command(argv, environ_update={"LC_ALL": "C"})
    return rc == 0, _apt_policy.apt_errors(err) if rc != 0 else []


def main():
    module = AnsibleModule(
        argument_spec=dict(
            uri=dict(type="str", required=True),
            owned_file=dict(type="path", required=True),
            key=dict(type="str", required=True, no_log=False),
            fingerprints=dict(type="list", elements="str", default=[]),
            apt_dir=dict(type="path", default="/etc/apt"),
            timeout=dict(type="int", default=30),
            check_apt=dict(type="bool", default=False),
        ),
        supports_check_mode=True,
    )
    params = module.params
    data, source = read_key(module, params["key"])
    try:
        found = _apt_source.fingerprints(data)
        public = _apt_source.public_packets(data)
    except _apt_source.OpenPGPKeyError as exc:
        module.fail_json(msg="the signing key from %s is not an OpenPGP public key: %s" % (source, exc))
    wanted = [_apt_source.normalize_fingerprint(f) for f in params["fingerprints"]]

    entries = read_sources(module, params["apt_dir"])
    readable, errors = apt_reads_sources(module, params["apt_dir"]) if params["check_apt"] else (True, [])
    wanted_uri = _apt_source.normalize_uri(params["uri"])
    mine = [e for e in entries if any(_apt_source.normalize_uri(u) == wanted_uri for u in e["uris"])]
    foreign, actions = _apt_source.foreign_entries(entries, params["uri"], params["owned_file"])
    module.exit_json(
        changed=False,
        key_source=source,
        key_fingerprints=found,
        key_matches=any(f in wanted for f in found),
        key_armored=_apt_source.armor(public),
        entries=mine,
        foreign=foreign,
        actions=actions,
        signed_by_conflict=_apt_source.signed_by_conflict(mine),
        apt_readable=readable,
        apt_errors=errors,
    )


if __name__ == "__main__":
    main()
