#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: vllm_log_signatures
short_description: Classify known failure signatures in vLLM and NCCL logs
version_added: 0.2.0
description:
  - Reads log files on the host and reports which known failure signatures they contain - a
    tensor-parallel size that does not divide the attention heads, custom all-reduce / GPU
    peer-to-peer access unsupported, NCCL timeouts and errors, CUDA out of memory - each with
    the number of matching lines, the first one, and the fix.
  - Read-only; used by C(playbooks/diagnose.yml) for the bundle's summary.
author:
  - gpu_fleet maintainers (@gpu-fleet)
options:
  paths:
    description: Log files to read (journal exports, C(/var/log/vllm/*.log), NCCL debug logs). Missing files are listed in RV(missing).
    type: list
    elements: path
    required: true
notes:
  - Supports check mode.
"""

EXAMPLES = r"""
- name: Classify the vLLM logs
  gpu_fleet.vllm_serving.vllm_log_signatures:
    paths:
      - /tmp/diag/journal-vllm.txt
  register: signatures
"""

RETURN = r"""
signatures:
  description: One entry per file and signature found in it, files in O(paths) order, signatures in catalog order.
  returned: always
  type: list
  elements: dict
  sample: [{"id": "tp_heads_indivisible", "title": "tensor-parallel size does not divide the attention heads",
            "count": 1, "file": "/tmp/diag/journal-vllm.txt", "line_no": 22,
            "first_line": "ValueError: Total number of attention heads (28) must be divisible by tensor parallel size (8).",
            "fix": "Choose a tensor_parallel_size that divides num_attention_heads ..."}]
  contains:
    id:
      description:
        - C(tp_heads_indivisible), C(custom_allreduce_p2p), C(nccl_timeout), C(cuda_oom),
          C(fp8_block_indivisible) or C(cuda_system_not_initialized) (CUDA error 802, NVSwitch fabric not ready).
        - C(unclassified_fatal) when no signature matched but the file ends in a crash (a traceback, an
          C(...Error:) line, a worker that died, with no serving line after it); never reported together
          with another signature of the same file.
      type: str
    title:
      description: What the signature means, as the catalog words it.
      type: str
    count:
      description: How many lines of that file match the signature.
      type: int
    file:
      description: The path (one of O(paths)) whose content matched.
      type: str
    line_no:
      description: Line number (1-based) of the first match, the line in C(first_line).
      type: int
    first_line:
      description: That first matching line, without leading and trailing blanks.
      type: str
    fix:
      description: What to do about it (the catalog's fix).
      type: str
    last_lines:
      description: For C(unclassified_fatal) only, the file's last 10 non-empty lines.
      type: list
      elements: str
      returned: when id is C(unclassified_fatal)
missing:
  description: Paths that could not be read.
  returned: always
  type: list
  elements: str
  sample: []
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils._signatures import classify


def main():
    module = AnsibleModule(argument_spec=dict(paths=dict(type="list", elements="path", required=True)),
                           supports_check_mode=True)
    found, missing = [], []
    for path in module.params["paths"]:
        try:
            with open(path, "r", errors="replace") as handle:
                text = handle.read()
        except (IOError, OSError):
            missing.append(path)
            continue
        for entry in classify(text):
            entry["file"] = path
            found.append(entry)
    module.exit_json(changed=False, signatures=found, missing=missing)


if __name__ == "__main__":
    main()
