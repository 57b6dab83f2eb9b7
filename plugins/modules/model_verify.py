#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: model_verify
short_description: Verify a staged model directory against its manifest of published checksums
version_added: 0.1.0
description:
  - Checks every file of a model directory against a manifest built from the model hub's answer
    for a pinned revision (C(GET /api/models/<repo>/revision/<commit>?blobs=true)) or against the
    C(manifest.json) already beside the weights.
  - "Reports, as findings in the shape of the compliance checks: missing files, extra files,
    truncated files (a size check, no hashing), corrupted files (sha256 for files the hub stores in
    git LFS, the git blob id C(sha1(\"blob <size>\\0\" + content)) for the others), a revision other
    than the pin, a C(config.json) that cannot be parsed, weight files of another format than the
    manifest's (a C(.gguf) or C(.bin) in a safetensors model) and, when O(expected_config) is
    given, where the controller's copy of C(config.json) differs from the model's own."
  - Large files are hashed in streaming chunks. A file whose size, modification time and expected
    checksum equal those recorded at its last verification is not hashed again.
  - With O(record=true) and no failing finding it writes C(manifest.json) into O(path) with the
    files' verified size and mtime and the model's C(config.json); that is its only change.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  path:
    description: The model directory (holding C(config.json) and the weights).
    type: path
    required: true
  hub_info:
    description:
      - The hub's answer for the pinned revision, with per-file metadata (C(siblings[].size),
        C(siblings[].blobId), C(siblings[].lfs.sha256)); a mirror serves the same JSON as
        C(model-info.json).
      - When omitted, the C(manifest.json) in O(path) is the reference.
    type: dict
  repo_id:
    description: The model's repository id, e.g. C(Qwen/Qwen2.5-7B-Instruct). Required with O(hub_info).
    type: str
  revision:
    description:
      - The pinned revision (a full 40-digit commit hash). A source or a directory holding another
        revision is a failing finding.
    type: str
  format:
    description: Weight format the model must use; weight files of other formats are failing findings.
    type: str
    choices: [safetensors, gguf, pytorch]
    default: safetensors
  conversions:
    description:
      - Explicitly allowed conversions (e.g. a GGUF build). Each is a dict C(format), C(source) and
        C(files), a list of C({name, size, sha256}); a conversion without its own checksum list is
        refused.
    type: list
    elements: dict
    default: []
  expected_config:
    description:
      - The controller-side copy of C(config.json) the layout planner used
        (C(vllm_server_model.config)). Keys that differ from the model's own are findings
        (failing for keys the planner reads).
    type: dict
  record:
    description:
      - Write C(manifest.json) with the verified state into O(path) when no finding fails.
    type: bool
    default: false
  fail_on_findings:
    description: Fail the task when a finding of severity C(fail) is found.
    type: bool
    default: true
  host:
    description: Host name put into the findings and messages (the inventory name).
    type: str
    default: ""
  chunk_size:
    description: Bytes read per hashing step.
    type: int
    default: 8388608
notes:
  - Supports check mode; it then writes nothing and reports what it would record.
  - Findings name the file, the expected and the actual value and the remediation.
seealso:
  - name: Hub API used for the checksums
    description: The revision endpoint with C(blobs=true) that lists sizes, blob ids and LFS sha256s.
    link: https://huggingface.co/docs/hub/api
"""

EXAMPLES = r"""
- name: Verify a staged copy against the hub's answer for the pinned revision
  gpu_fleet.vllm_serving.model_verify:
    path: /srv/models/.model_store/Qwen2.5-7B-Instruct/a09a35458c702b33eeacc393d103063234e8bc28
    hub_info: "{{ hub_answer.json }}"
    repo_id: Qwen/Qwen2.5-7B-Instruct
    revision: a09a35458c702b33eeacc393d103063234e8bc28
    record: true
    host: "{{ inventory_hostname }}"

- name: Re-check a model against its own manifest.json, report only
  gpu_fleet.vllm_serving.model_verify:
    path: /srv/models/Qwen2.5-7B-Instruct
    fail_on_findings: false
  register: model_check
"""

RETURN = r"""
findings:
  description: Problems found, one per file and fault.
  returned: always
  type: list
  elements: dict
  contains:
    id:
      description: >-
        model-file-missing, model-file-extra, model-file-truncated, model-file-size-mismatch,
        model-file-corrupted, model-file-not-regular, model-format, model-revision-mismatch,
        model-config-unparseable or model-config-mismatch.
      type: str
    severity:
      description: fail, warn or info.
      type: str
    host:
      description: The O(host) option.
      type: str
    file:
      description: File relative to O(path); null for findings about the whole model.
      type: str
    expected:
      description: The expected value (size in bytes, checksum with its algorithm and source, revision).
      type: str
    actual:
      description: What the directory holds.
      type: str
    remediation:
      description: What to do about it.
      type: str
  sample:
    - id: model-file-corrupted
      severity: fail
      host: gpu01
      file: model.safetensors
      expected: sha256 3f2a... (hub-lfs-sha256)
      actual: sha256 9c41...
      remediation: model.safetensors does not match its published checksum, fetch it again
summary:
  description: Counts of findings by severity and of the work done.
  returned: always
  type: dict
  contains:
    fail:
      description: Failing findings.
      type: int
    warn:
      description: Warnings.
      type: int
    info:
      description: Informational findings.
      type: int
    files:
      description: Files in the manifest.
      type: int
    bytes:
      description: Total size of the files in the manifest, in bytes.
      type: int
    hashed:
      description: Files hashed in this run.
      type: int
    hashed_bytes:
      description: Bytes hashed in this run.
      type: int
    trusted:
      description: Files not hashed because their size and mtime equal the recorded ones.
      type: int
  sample: {fail: 0, warn: 0, info: 0, files: 4, bytes: 15231233024, hashed: 0, hashed_bytes: 0, trusted: 4}
verified:
  description: True when no finding has severity fail.
  returned: always
  type: bool
exists:
  description: Whether O(path) exists (a missing directory reports every file as missing).
  returned: always
  type: bool
to_fetch:
  description: Files to fetch (again) so that the directory verifies, with their size and why.
  returned: always
  type: list
  elements: dict
  sample: [{file: model.safetensors, size: 1048576, reason: corrupted}]
fetch_bytes:
  description: Total size of RV(to_fetch) in bytes.
  returned: always
  type: int
manifest:
  description: The manifest as recorded (or as it would be recorded) in C(manifest.json).
  returned: always
  type: dict
hashed:
  description: Names of the files hashed in this run.
  returned: always
  type: list
  elements: str
"""

import os
import stat

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _model_manifest as mm


def scan(root):
    """{relative name: {size, mtime_ns, regular}} of everything under root but manifest.json."""
    listing = {}
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames.sort()
        for name in sorted(filenames) + [d for d in dirnames if os.path.islink(os.path.join(dirpath, d))]:
            full = os.path.join(dirpath, name)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            if rel == mm.MANIFEST_NAME:
                continue
            st = os.lstat(full)
            listing[rel] = {"size": st.st_size,
                            "mtime_ns": getattr(st, "st_mtime_ns", int(st.st_mtime * 1e9)),
                            "regular": stat.S_ISREG(st.st_mode)}
    return listing


def _read(path):
    with open(path, "rb") as handle:
        return handle.read().decode("utf-8", "replace")


def _message(host, path, where, failing):
    lines = ["model_verify on %s: %s (%s) failed verification, %d failing finding(s); this copy must not be used:"
             % (host or "this host", path, where, len(failing))]
    for item in failing[:8]:
        lines.append("%s %s: expected %s, actual %s - %s" % (
            item["id"], item["file"] or "-", item["expected"], item["actual"], item["remediation"]))
    if len(failing) > 8:
        lines.append("... and %d more (see findings)" % (len(failing) - 8))
    return " | ".join(lines)


def _on_disk(manifest_path):
    """(manifest.json of the copy or None, why it is not usable or None)."""
    if not os.path.isfile(manifest_path):
        return None, None
    try:
        return mm.load_manifest(_read(manifest_path)), None
    except mm.ManifestError as exc:
        return None, str(exc)
    except (IOError, OSError) as exc:
        return None, "cannot read %s: %s" % (manifest_path, exc)


def _config(path, listing, expected_config, host):
    """(the copy's config.json or None, findings on it and against the expected one)."""
    if "config.json" not in listing or not listing["config.json"]["regular"]:
        return None, []
    config, findings = mm.parse_config(_read(os.path.join(path, "config.json")), host)
    if config is not None and expected_config is not None:
        findings += mm.compare_configs(expected_config, config, host)
    return config, findings


def _record(module, path, manifest):
    tmp = os.path.join(path, ".%s.tmp" % mm.MANIFEST_NAME)
    with open(tmp, "w") as handle:
        handle.write(mm.dump_manifest(manifest))
    os.chmod(tmp, 0o444)
    module.atomic_move(tmp, os.path.join(path, mm.MANIFEST_NAME))


def run(module):
    p = module.params
    host, path = p["host"], p["path"]
    problem = mm.parameter_problem(p["revision"], p["hub_info"], p["repo_id"], p["chunk_size"], host)
    if problem:
        module.fail_json(msg=problem)
    on_disk, on_disk_error = _on_disk(os.path.join(path, mm.MANIFEST_NAME))
    try:
        expected = mm.expected_manifest(p["hub_info"], p["repo_id"], p["revision"], p["format"], p["conversions"],
                                        on_disk, host)
    except mm.ManifestError as exc:
        module.fail_json(msg="model_verify on %s: %s: %s" % (host, path, exc))
    if expected is None:
        module.fail_json(msg="model_verify on %s: %s has no usable manifest.json (%s) and no hub_info was "
                             "given; stage the model with the model_store role, or pass hub_info"
                         % (host, path, on_disk_error or "file not found"))
    manifest, recorded, findings = expected

    exists = os.path.isdir(path)
    listing = scan(path) if exists else {}
    check, report = mm.verify(manifest, listing, lambda name: open(os.path.join(path, name), "rb"),
                              host=host, recorded=recorded, chunk_size=p["chunk_size"])
    config, config_findings = _config(path, listing, p["expected_config"], host)
    findings += check + config_findings
    counts = mm.summarize(findings)
    new_manifest = mm.updated_manifest(manifest, report, config)
    changed = bool(p["record"] and exists and counts["fail"] == 0 and on_disk != new_manifest)
    if changed and not module.check_mode:
        _record(module, path, new_manifest)
    result = {
        "changed": changed, "findings": findings, "summary": mm.verify_summary(counts, manifest, report),
        "verified": counts["fail"] == 0, "exists": exists, "to_fetch": report["to_fetch"],
        "fetch_bytes": sum(item["size"] for item in report["to_fetch"]),
        "manifest": new_manifest, "hashed": report["hashed"],
    }
    if counts["fail"] and p["fail_on_findings"]:
        where = "%s@%s" % (manifest.get("repo_id"), manifest.get("revision"))
        module.fail_json(msg=_message(host, path, where, [f for f in findings if f["severity"] == "fail"]), **result)
    module.exit_json(**result)


def main():
    module = AnsibleModule(
        argument_spec=dict(
            path=dict(type="path", required=True),
            hub_info=dict(type="dict"),
            repo_id=dict(type="str"),
            revision=dict(type="str"),
            format=dict(type="str", default="safetensors", choices=["safetensors", "gguf", "pytorch"]),
            conversions=dict(type="list", elements="dict", default=[]),
            expected_config=dict(type="dict"),
            record=dict(type="bool", default=False),
            fail_on_findings=dict(type="bool", default=True),
            host=dict(type="str", default=""),
            chunk_size=dict(type="int", default=8388608),
        ),
        supports_check_mode=True,
    )
    try:
        run(module)
    except (IOError, OSError) as exc:
        module.fail_json(msg="model_verify on %s: cannot read %s: %s; check the path and its permissions"
                         % (module.params["host"], module.params["path"], exc))


if __name__ == "__main__":
    main()
