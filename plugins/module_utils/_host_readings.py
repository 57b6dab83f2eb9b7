# -*- coding: utf-8 -*-
# Copyright: gpu_fleet maintainers
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""The small answers of a host's own tools, parsed: ``dpkg-query -W``, ``apt-mark showhold``,
``systemctl is-active|is-enabled|show``, where procfs/sysfs keep sysctl keys and cpufreq
governors, which sysctl keys may be absent because the wanted state is the kernel's without them,
and which ``/dev`` entries are NVIDIA GPU device nodes.

Private to the collection. Pure code: no Ansible imports, no I/O. The modules run the commands
(``module.run_command``) and read the files; unit tests call these with the text.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import posixpath
import re

__all__ = [
    "DPKG_QUERY_FORMAT",
    "GOVERNOR_GLOB",
    "first_answer",
    "key_values",
    "parse_dpkg_query",
    "parse_showhold",
    "parse_systemctl_show",
    "sysctl_path",
    "ABSENT_MEANS",
    "absent_satisfies",
    "cpu_of",
    "NVIDIA_GPU_NODE",
    "gpu_device_nodes",
]

# dpkg-query -W -f=<this>: one line per package, "name<TAB>version<TAB>status".
DPKG_QUERY_FORMAT = "${Package}\t${Version}\t${Status}\n"
GOVERNOR_GLOB = "/sys/devices/system/cpu/cpu[0-9]*/cpufreq/scaling_governor"


# --- systemd -----------------------------------------------------------------------------------

def first_answer(out, err):
    """The one-word answer of ``systemctl is-active|is-enabled UNIT`` (``active``, ``inactive``,
    ``enabled`` ...): the first line of stdout, else of stderr, else ``unknown``."""
    return (out.strip().splitlines() or [err.strip() or "unknown"])[0]


def key_values(items):
    """``KEY=VALUE`` strings -> {KEY: VALUE}, split at the first ``=``; items without one are
    ignored. The lines of ``systemctl show``, the fields of a sysfs listing line."""
    pairs = {}
    for item in items:
        key, sep, value = item.partition("=")
        if sep:
            pairs[key] = value
    return pairs


def parse_systemctl_show(out):
    """``systemctl show -p A -p B UNIT`` -> {"A": value, "B": value} (lines without ``=`` ignored)."""
    return key_values(out.splitlines())


# --- packages ----------------------------------------------------------------------------------

def parse_dpkg_query(out):
    """Output of ``dpkg-query -W -f=DPKG_QUERY_FORMAT names...`` -> (installed {name: version},
    set of names dpkg itself marks ``hold``). Packages not fully installed are left out."""
    installed, holds = {}, set()
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[2].endswith(" installed"):
            installed[parts[0]] = parts[1]
            if parts[2].startswith("hold "):
                holds.add(parts[0])
    return installed, holds


def parse_showhold(out):
    """``apt-mark showhold`` -> the set of held package names."""
    return set(line.strip() for line in out.splitlines() if line.strip())


# --- procfs / sysfs paths ----------------------------------------------------------------------

def sysctl_path(key, root="/proc/sys"):
    """``vm.swappiness`` -> ``/proc/sys/vm/swappiness``."""
    return posixpath.join(root, key.replace(".", "/"))


# A kernel built without a feature has no sysctl key for it. Where the wanted value turns the
# feature off, an absent key means there is nothing to turn off: the host is as wanted.
# {key: (the value its absence satisfies, why)}.
ABSENT_MEANS = {
    "kernel.numa_balancing": ("0", "this kernel has no automatic NUMA balancing (built without "
                                   "CONFIG_NUMA_BALANCING): nothing to turn off"),
}


def absent_satisfies(key, wanted):
    """Why ``key`` being absent already means the ``wanted`` value (a sentence), or None when its
    absence says nothing about that value (a typo, a key of another network namespace ...)."""
    entry = ABSENT_MEANS.get(key)
    if entry is None or wanted is None:
        return None
    return entry[1] if " ".join(str(wanted).split()) == entry[0] else None


def cpu_of(governor_path):
    """``/sys/devices/system/cpu/cpu3/cpufreq/scaling_governor`` -> ``cpu3``."""
    return governor_path.split("/")[5]


# --- /dev ----------------------------------------------------------------------------------------

# The NVIDIA driver's node of each GPU: /dev/nvidia<minor>, a character device (major 195).
# /dev/nvidiactl (195:255) and /dev/nvidia-uvm (its own major) serve every GPU and are not counted.
# roles/gpu_preflight/tasks/devices.yml finds the same names (ansible.builtin.find, this pattern).
NVIDIA_GPU_NODE = r"^nvidia[0-9]+$"


def _minor_of(name):
    return int(name[len("nvidia"):])


def gpu_device_nodes(entries):
    """``entries``: ``[(name, is_character_device)]`` of the entries of /dev ->
    ``(nodes, impostors)``: the names of GPU device nodes (``nvidia0`` ...) that are character
    devices, and those named so that are not (a plain file, a directory), each by minor number."""
    named = [(name, is_char) for name, is_char in entries if re.match(NVIDIA_GPU_NODE, name)]
    nodes = sorted((name for name, is_char in named if is_char), key=_minor_of)
    impostors = sorted((name for name, is_char in named if not is_char), key=_minor_of)
    return nodes, impostors
