# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""A SIMULATED nvidia-smi for the unit tests of gpu_topology_facts (not NVIDIA's tool).

It replays captured output files byte for byte according to its argv. The profile is a JSON file
named by the environment variable SIMULATED_NVIDIA_SMI_PROFILE::

    {"commands": {"-q -x":     {"file": "/path/q_x.out", "rc": 0, "stream": "stdout"},
                  "topo -m":   {"file": "/path/topo_m.out"},
                  "nvlink -s": {"file": "/path/nvlink_s.out"}},
     "default":  {"file": "/path/smi_fail_04.txt", "rc": 18},
     "log": "/path/calls.jsonl"}

A command not in "commands" uses "default"; with no default it answers like the real tool does
for arguments it does not know (exit 2). Each call appends {"argv", "lc_all"} to "log".
"""

from __future__ import absolute_import, division, print_function

import json
import os
import sys


def main(argv):
    with open(os.environ["SIMULATED_NVIDIA_SMI_PROFILE"], "r") as handle:
        profile = json.load(handle)
    if profile.get("log"):
        with open(profile["log"], "a") as handle:
            handle.write(json.dumps({"argv": argv, "lc_all": os.environ.get("LC_ALL")}) + "\n")
    entry = profile.get("commands", {}).get(" ".join(argv), profile.get("default"))
    if entry is None:
        sys.stdout.write("Invalid combination of input arguments. Please run 'nvidia-smi -h' "
                         "for help.\n")
        return 2
    data = b""
    if entry.get("file"):
        with open(entry["file"], "rb") as handle:
            data = handle.read()
    stream = sys.stderr if entry.get("stream") == "stderr" else sys.stdout
    stream.flush()
    stream.buffer.write(data)
    stream.flush()
    return int(entry.get("rc", 0))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
