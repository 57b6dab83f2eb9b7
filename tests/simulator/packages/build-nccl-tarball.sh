#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build STAND-IN NCCL tarballs for the gpu-fleet simulated GPU hosts (TEST ONLY, not NVIDIA's).
#
#   tests/simulator/packages/build-nccl-tarball.sh [--force]
#
# NVIDIA publishes NCCL also as "nccl_<nccl>-<rev>+cuda<X.Y>_x86_64.txz" (redist folder v2.14/ ...),
# one top directory of that name holding include/nccl.h and lib/libnccl.so.<x.y.z> with the
# libnccl.so.2 and libnccl.so links. The stand-ins here have the same names and layout; the
# library is compiled from src/nccl_standin.c (ncclGetVersion() and the "NCCL version ..." string
# only), so the cuda_stack role's tarball method (sha256 check, versioned prefix, ld.so.conf.d,
# ldconfig) runs for real on a simulated host.
#
# Output (gitignored): tests/simulator/build/nccl-tarballs/
#   nccl_2.14.3-1+cuda11.7_x86_64.txz  nccl_2.18.3-1+cuda12.1_x86_64.txz  SHA256SUMS
# Cached: a sha256 over this script, src/nccl_standin.c, src/nccl.h.in and the gcc version.
# Environment: GPU_SIM_BUILD_DIR (default tests/simulator/build).
set -euo pipefail
umask 022
export LC_ALL=C
export SOURCE_DATE_EPOCH=1685577600

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
build_dir="${GPU_SIM_BUILD_DIR:-$(cd "${here}/.." && pwd)/build}"
out="${build_dir}/nccl-tarballs"
stamp="${build_dir}/packages-work/nccl-tarballs.inputs"
builds=("2.14.3-1+cuda11.7" "2.18.3-1+cuda12.1")

log() { printf '[build-nccl-tarball] %s\n' "$*" >&2; }
force=0
[ "${1:-}" = "--force" ] && force=1

command -v gcc >/dev/null 2>&1 || { log "gcc missing (build-repo.sh installs it)"; exit 1; }
mkdir -p "${build_dir}/packages-work"
inputs="$(cd "${here}" && { sha256sum build-nccl-tarball.sh src/nccl_standin.c src/nccl.h.in; gcc -dumpfullversion -dumpversion; } |
          sha256sum | cut -d' ' -f1)"
if [ "${force}" = 0 ] && [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${inputs}" ] && [ -s "${out}/SHA256SUMS" ]; then
    log "up to date: ${out}"
    exit 0
fi

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT
mkdir -p "${tmp}/out"
for deb_version in "${builds[@]}"; do
    nccl="${deb_version%%-*}"; cuda_tag="${deb_version##*+}"; full="${nccl}+${cuda_tag}"
    IFS=. read -r major minor patch <<<"${nccl}"
    code=$(( major * 10000 + minor * 100 + patch ))
    name="nccl_${deb_version}_x86_64"
    top="${tmp}/${name}"
    mkdir -p "${top}/include" "${top}/lib"
    sed -e "s|@NCCL_FULL@|${full}|g" -e "s|@NCCL_MAJOR@|${major}|g" -e "s|@NCCL_MINOR@|${minor}|g" \
        -e "s|@NCCL_PATCH@|${patch}|g" -e "s|@NCCL_CODE@|${code}|g" "${here}/src/nccl.h.in" > "${top}/include/nccl.h"
    gcc -shared -fPIC -O2 -Wall -Werror -I"${top}/include" -DNCCL_FULL_VERSION="\"${full}\"" \
        -Wl,-soname,libnccl.so.2 -o "${top}/lib/libnccl.so.${nccl}" "${here}/src/nccl_standin.c"
    chmod 0644 "${top}/lib/libnccl.so.${nccl}" "${top}/include/nccl.h"
    ln -s "libnccl.so.${nccl}" "${top}/lib/libnccl.so.2"
    ln -s libnccl.so.2 "${top}/lib/libnccl.so"
    printf "gpu-fleet simulator stand-in, not NVIDIA's NCCL (test only): %s, ncclGetVersion() -> %d.\n" \
        "${full}" "${code}" > "${top}/README.gpu-sim"
    tar -C "${tmp}" --sort=name --mtime="@${SOURCE_DATE_EPOCH}" --owner=0 --group=0 --numeric-owner \
        -cJf "${tmp}/out/${name}.txz" "${name}"
    log "built ${name}.txz"
done
(cd "${tmp}/out" && sha256sum -- *.txz > SHA256SUMS)
rm -rf "${out}"
mkdir -p "$(dirname "${out}")"
mv "${tmp}/out" "${out}"
printf '%s\n' "${inputs}" > "${stamp}"
log "built ${out}"
