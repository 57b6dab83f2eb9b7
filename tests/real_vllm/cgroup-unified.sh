#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The vllm_real container's systemd (Debian 12, systemd 252) on a cgroup v1 machine: without a
# writable cgroup2 hierarchy it never learns that a unit's cgroup emptied once its main process
# exited before its children (vLLM's API server exits before its engine core), so every stop waits
# out TimeoutStopSec. This mounts cgroup2 at /sys/fs/cgroup/unified (the hybrid layout systemd
# knows) on this machine, once; molecule/vllm_real/molecule.yml hands it to the container rw.
# Needs root. Does nothing when it is mounted already.
set -euo pipefail
fs="$(stat -fc %T /sys/fs/cgroup)"
if [ "${fs}" != tmpfs ]; then
    echo "[cgroup-unified] /sys/fs/cgroup is ${fs}, not the cgroup v1 tmpfs this scenario is made for" >&2
    exit 1
fi
if ! mountpoint -q /sys/fs/cgroup/unified; then
    mkdir -p /sys/fs/cgroup/unified
    mount -t cgroup2 none /sys/fs/cgroup/unified
    echo "[cgroup-unified] mounted cgroup2 at /sys/fs/cgroup/unified" >&2
fi
