#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Prove that the stand-in CUDA/NCCL apt repository built by build-repo.sh works, with apt itself.
#
#   tests/simulator/packages/check-repo.sh [REPO_DIR]      (default tests/simulator/build/cuda-repo)
#
# For each flat repo (debian11/x86_64, ubuntu2204/x86_64), in a private apt state (nothing of
# this machine's apt configuration is read or changed):
#   - `apt-get update` through a deb822 .sources file (URIs: file:///.../x86_64/, Suites: /,
#     Signed-By: gpu-sim-archive.asc) must succeed without any error or warning line (so the
#     InRelease signature was checked and accepted);
#   - gpgv accepts InRelease and Release.gpg with the exported key;
#   - `apt-cache madison` lists exactly the expected versions of libnccl2, libnccl-dev and
#     cuda-toolkit-12-1; libnccl-dev depends on libnccl2 (= same version);
#   - a simulated unpinned install of libnccl2 picks the newest build (the drift a pin must stop)
#     and a pinned install of libnccl2 + libnccl-dev 2.14.3-1+cuda11.7 resolves.
# Then, from the debs themselves: libnccl.so.2 is loaded with dlopen() and ncclGetVersion() must
# return the version code; the "NCCL version x.y.z+cudaA.B" string must be inside; nvcc --version
# must print the real release line. Exit status 0 when all hold, 1 with the reason otherwise.
set -euo pipefail
export LC_ALL=C

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${1:-${here}/../build/cuda-repo}" && pwd)"

log() { printf '[check-repo] %s\n' "$*" >&2; }
die() { printf '[check-repo] FAILED: %s\n' "$*" >&2; exit 1; }

nccl_versions="2.14.3-1+cuda11.0 2.14.3-1+cuda11.7 2.18.3-1+cuda12.1"
cuda_versions="12.1.0-1 12.1.1-1"
newest_nccl="2.18.3-1+cuda12.1"
pinned_nccl="2.14.3-1+cuda11.7"

key="${repo}/gpu-sim-archive.asc"
[ -s "${key}" ] || die "no key ${key}"
[ -s "${repo}/gpu-sim-archive.gpg" ] || die "no key ${repo}/gpu-sim-archive.gpg"
fpr="$(cat "${repo}/gpu-sim-archive.fpr")"

tmp="$(mktemp -d)"
trap 'rm -rf "${tmp}"' EXIT

# sorted list of the versions apt-cache madison prints for a package
madison() {
    apt-cache "${apt_opts[@]}" madison "$1" | awk -F'|' '{ gsub(/ /, "", $2); print $2 }' | sort | xargs
}
sorted() { printf '%s\n' $1 | sort | xargs; }

checked=0
for dir in "${repo}"/*/x86_64; do
    [ -d "${dir}" ] || continue
    dist="$(basename "$(dirname "${dir}")")"
    state="${tmp}/${dist}"
    mkdir -p "${state}/lists/partial" "${state}/cache/archives/partial" "${state}/parts" \
        "${state}/prefs" "${state}/gnupg"
    : > "${state}/status"
    cat > "${state}/gpu-sim.sources" <<EOF
Types: deb
URIs: file://${dir}/
Suites: /
Signed-By: ${key}
EOF
    apt_opts=(
        -o "Dir::Etc::SourceList=${state}/gpu-sim.sources"
        -o "Dir::Etc::SourceParts=${state}/parts"
        -o "Dir::Etc::Preferences=${state}/none"
        -o "Dir::Etc::PreferencesParts=${state}/prefs"
        -o "Dir::Etc::Trusted=${state}/none.gpg"
        -o "Dir::Etc::TrustedParts=${state}/parts"
        -o "Dir::State::Lists=${state}/lists"
        -o "Dir::State::status=${state}/status"
        -o "Dir::Cache=${state}/cache"
        -o "APT::Architecture=amd64"
        -o "APT::Architectures::=amd64"
        -o "APT::Sandbox::User=root"
        -o "Acquire::Languages=none"
        -o "Debug::NoLocking=1"
    )
    if ! apt-get "${apt_opts[@]}" update > "${state}/update.log" 2>&1; then
        cat "${state}/update.log" >&2
        die "${dist}: apt-get update failed"
    fi
    if grep -E '^(W|E|Err):' "${state}/update.log" >&2; then
        die "${dist}: apt-get update reported the lines above"
    fi

    for f in InRelease; do
        gpgv --homedir "${state}/gnupg" --keyring "${repo}/gpu-sim-archive.gpg" "${dir}/${f}" \
            > "${state}/gpgv.log" 2>&1 || { cat "${state}/gpgv.log" >&2; die "${dist}: gpgv rejects ${f}"; }
    done
    gpgv --homedir "${state}/gnupg" --keyring "${repo}/gpu-sim-archive.gpg" "${dir}/Release.gpg" \
        "${dir}/Release" > "${state}/gpgv.log" 2>&1 ||
        { cat "${state}/gpgv.log" >&2; die "${dist}: gpgv rejects Release.gpg"; }
    grep -q "${fpr}" "${state}/gpgv.log" || die "${dist}: Release.gpg not made by ${fpr}"

    got="$(madison libnccl2)"
    [ "${got}" = "$(sorted "${nccl_versions}")" ] || die "${dist}: libnccl2 versions '${got}'"
    got="$(madison libnccl-dev)"
    [ "${got}" = "$(sorted "${nccl_versions}")" ] || die "${dist}: libnccl-dev versions '${got}'"
    got="$(madison cuda-toolkit-12-1)"
    [ "${got}" = "$(sorted "${cuda_versions}")" ] || die "${dist}: cuda-toolkit-12-1 versions '${got}'"
    for v in ${nccl_versions}; do
        apt-cache "${apt_opts[@]}" show "libnccl-dev=${v}" | grep -xF "Depends: libnccl2 (= ${v})" >/dev/null ||
            die "${dist}: libnccl-dev ${v} does not depend on libnccl2 (= ${v})"
    done
    for p in libnccl2 libnccl-dev cuda-toolkit-12-1; do
        if apt-cache "${apt_opts[@]}" show "${p}" | grep -E '^Description(-en)?:' |
            grep -v "gpu-fleet simulator stand-in, not NVIDIA's package" >&2; then
            die "${dist}: a ${p} Description (above) does not name the stand-in"
        fi
    done

    apt-get "${apt_opts[@]}" -s install libnccl2 > "${state}/drift.log" 2>&1 ||
        { cat "${state}/drift.log" >&2; die "${dist}: simulated install of libnccl2 failed"; }
    grep -q "^Inst libnccl2 (${newest_nccl} " "${state}/drift.log" ||
        { cat "${state}/drift.log" >&2; die "${dist}: unpinned libnccl2 is not ${newest_nccl}"; }
    apt-get "${apt_opts[@]}" -s install "libnccl2=${pinned_nccl}" "libnccl-dev=${pinned_nccl}" \
        "cuda-toolkit-12-1=12.1.1-1" > "${state}/pinned.log" 2>&1 ||
        { cat "${state}/pinned.log" >&2; die "${dist}: pinned simulated install failed"; }
    for p in "libnccl2 (${pinned_nccl}" "libnccl-dev (${pinned_nccl}" "cuda-toolkit-12-1 (12.1.1-1"; do
        grep -qF "Inst ${p} " "${state}/pinned.log" ||
            { cat "${state}/pinned.log" >&2; die "${dist}: pinned install lacks ${p}"; }
    done
    log "${dist}: apt update (signed), madison, Depends and simulated installs OK"
    checked=$((checked + 1))
done
[ "${checked}" -gt 0 ] || die "no */x86_64 repository under ${repo}"

# --- the payload ---------------------------------------------------------------------------------
probe="${tmp}/nccl-probe"
cat > "${probe}.c" <<'EOF'
#include <dlfcn.h>
#include <stdio.h>
int main(int argc, char **argv) {
  void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  int (*get)(int *) = (int (*)(int *))dlsym(lib, "ncclGetVersion");
  if (!get) { fprintf(stderr, "%s\n", dlerror()); return 1; }
  int v = 0;
  if (get(&v) != 0) return 1;
  printf("%d\n", v);
  return 0;
}
EOF
gcc -o "${probe}" "${probe}.c" -ldl
first="$(ls -d "${repo}"/*/x86_64 | head -n 1)"
for v in ${nccl_versions}; do
    nccl="${v%%-*}"
    full="${nccl}+${v##*+}"
    IFS=. read -r major minor patch <<<"${nccl}"
    want=$(( major * 10000 + minor * 100 + patch ))
    x="${tmp}/x-${v}"
    dpkg-deb -x "${first}/libnccl2_${v}_amd64.deb" "${x}"
    so="${x}/usr/lib/x86_64-linux-gnu/libnccl.so.2"
    [ "$(readlink "${so}")" = "libnccl.so.${nccl}" ] || die "libnccl.so.2 of ${v} does not point to libnccl.so.${nccl}"
    got="$("${probe}" "${so}")" || die "cannot load ${so} of ${v}"
    [ "${got}" = "${want}" ] || die "ncclGetVersion of ${v} returns ${got}, want ${want}"
    grep -qaF "NCCL version ${full}" "${so}" || die "no 'NCCL version ${full}' string in ${v}"
    dpkg-deb -x "${first}/libnccl-dev_${v}_amd64.deb" "${x}"
    grep -q "^#define NCCL_VERSION_CODE ${want}$" "${x}/usr/include/nccl.h" || die "nccl.h of ${v}"
done
for v in ${cuda_versions}; do
    x="${tmp}/x-cuda-${v}"
    dpkg-deb -x "${first}/cuda-toolkit-12-1_${v}_amd64.deb" "${x}"
    case "${v}" in
        12.1.0-1) want="Cuda compilation tools, release 12.1, V12.1.66" ;;
        12.1.1-1) want="Cuda compilation tools, release 12.1, V12.1.105" ;;
    esac
    "${x}/usr/local/cuda-12.1/bin/nvcc" --version | grep -xF "${want}" >/dev/null || die "nvcc --version of ${v}"
    [ -d "${x}/usr/local/cuda-12.1/lib64" ] || die "no lib64/ in cuda-toolkit-12-1 ${v}"
done
log "libnccl.so.2 loads and reports its version; nvcc --version matches: OK"
log "repository OK: ${repo} (key ${fpr})"
