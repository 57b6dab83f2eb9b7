#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build every stand-in package of the gpu-fleet simulator (TEST ONLY):
#   build-repo.sh   -> tests/simulator/build/cuda-repo/   (signed apt repo: cuda-toolkit-12-1, libnccl2, libnccl-dev)
#   build-wheel.sh  -> tests/simulator/build/wheelhouse/  (vllm-0.6.3.post1+gpusim wheel)
#   build-nccl-tarball.sh -> tests/simulator/build/nccl-tarballs/ (stand-in NCCL .txz + SHA256SUMS)
#   build-nccl-tarball.sh -> tests/simulator/build/nccl-tarballs/ (stand-in NCCL .txz + SHA256SUMS)
#
#   tests/simulator/packages/build-all.sh [--force]
#
# All steps are cached (nothing is rebuilt when their inputs are unchanged); --force rebuilds.
# tests/simulator/plant.yml copies the two folders into the simulated hosts
# (/srv/gpu-sim/cuda-repo, /srv/gpu-sim/wheelhouse).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
start=$(date +%s.%N)
"${here}/build-repo.sh" "$@"
"${here}/build-wheel.sh" "$@"
"${here}/build-nccl-tarball.sh" "$@"
printf '[build-all] stand-in packages ready [%s s]\n' \
    "$(awk -v s="${start}" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }')" >&2
