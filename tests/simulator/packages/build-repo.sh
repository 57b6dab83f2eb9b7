#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build the STAND-IN CUDA/NCCL apt repository of the gpu-fleet simulated GPU hosts (TEST ONLY).
#
#   tests/simulator/packages/build-repo.sh [--force] [--verify]
#
# The packages carry the REAL names and version strings of NVIDIA's CUDA apt repository, so the
# cuda_stack role's real install path (apt source + key, `apt-cache madison`, pinned install,
# hold) runs unchanged against a simulated host; every Description starts with
# "gpu-fleet simulator stand-in, not NVIDIA's package" and nothing in them is NVIDIA's code:
#
#   cuda-toolkit-12-1  12.1.0-1, 12.1.1-1                 /usr/local/cuda-12.1/bin/nvcc (answers
#                      --version like the real nvcc of that release), version.json, lib64/;
#                      postinst/prerm register /usr/local/cuda and /usr/local/cuda-12 with
#                      update-alternatives (names "cuda", "cuda-12"), like cuda-toolkit-12-1-config-common
#   libnccl2           2.14.3-1+cuda11.0, 2.14.3-1+cuda11.7, 2.18.3-1+cuda12.1
#                      a real ELF library compiled here (ncclGetVersion() -> 21403 / 21803, the string
#                      "NCCL version 2.14.3+cuda11.7" inside), /usr/lib/x86_64-linux-gnu/libnccl.so.<x.y.z>
#                      + libnccl.so.2; Multi-Arch: same, Section: libs; ldconfig trigger
#   libnccl-dev        same versions; /usr/include/nccl.h, libnccl.so -> libnccl.so.2;
#                      Depends: libnccl2 (= <same version>), as NVIDIA's does
#
# (2.18.3 is the newest, so an unpinned install drifts away from the 2.14.3 pin: tests need that.)
#
# Output (gitignored), laid out like NVIDIA's flat per-distro repos:
#   tests/simulator/build/cuda-repo/debian11/x86_64/   *.deb Packages Packages.gz Release InRelease Release.gpg
#   tests/simulator/build/cuda-repo/ubuntu2204/x86_64/ the same debs, own indexes
#   tests/simulator/build/cuda-repo/gpu-sim-archive.asc  armored public signing key (Signed-By)
#   tests/simulator/build/cuda-repo/gpu-sim-archive.gpg  the same key, binary
#   tests/simulator/build/cuda-repo/gpu-sim-archive.fpr  its fingerprint (one line)
# Work files (gitignored): tests/simulator/build/packages-work/ (gnupg/ holds the signing key;
# the committed key is imported there).
#
# The signing key is src/gpu-sim-archive.test-only-secret.asc (ed25519, no passphrase, uid
# "gpu-fleet simulator archive (test only)", committed on purpose so that its fingerprint
# EA92493EF191AB79B38906DA40ADE4451D203378 can be checked by the cuda_stack role); it is imported
# into that throw-away GNUPGHOME and signs nothing else.
#
# Cache: a sha256 over this script, check-repo.sh, src/*, the gcc and dpkg-deb versions and the key
# fingerprint is kept in packages-work/cuda-repo.inputs; when it matches and the output is complete
# nothing is rebuilt. --force rebuilds anyway; --verify only runs check-repo.sh on the output.
# After every build check-repo.sh proves the repo with apt itself (update through a deb822 source
# with Signed-By, madison, simulated installs) and loads the library.
#
# Runs as root on Debian 12 (bookworm): installs dpkg-dev, apt-utils, gnupg and gcc with apt-get
# when a tool is missing. Environment: GPU_SIM_BUILD_DIR (default tests/simulator/build).
set -euo pipefail
umask 022

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sim_dir="$(cd "${here}/.." && pwd)"
build_dir="${GPU_SIM_BUILD_DIR:-${sim_dir}/build}"
out="${build_dir}/cuda-repo"
work="${build_dir}/packages-work"
gnupg_home="${work}/gnupg"
stamp="${work}/cuda-repo.inputs"
key_file="${here}/src/gpu-sim-archive.test-only-secret.asc"
maintainer="gpu-fleet simulator <gpu-fleet-sim@example.invalid>"
dists=(debian11 ubuntu2204)
# Fixed timestamps inside the debs (dpkg-deb clamps file mtimes to it): 2023-06-01T00:00:00Z.
export SOURCE_DATE_EPOCH=1685577600
export LC_ALL=C

# cuda-toolkit-12-1 builds: deb version | toolkit version | nvcc version | "Built on" | compiler build.
# nvcc --version texts of the real CUDA 12.1.0 (V12.1.66) and 12.1.1 (V12.1.105) on Linux.
cuda_builds=(
    "12.1.0-1|12.1.0|12.1.66|Tue_Feb__7_19:32:13_PST_2023|32415258"
    "12.1.1-1|12.1.1|12.1.105|Mon_Apr__3_17:16:06_PDT_2023|32688072"
)
# NCCL builds: <nccl>-<rev>+cuda<major.minor>, as NVIDIA names them.
nccl_builds=("2.14.3-1+cuda11.0" "2.14.3-1+cuda11.7" "2.18.3-1+cuda12.1")

force=0
verify_only=0
for arg in "$@"; do
    case "${arg}" in
        --force) force=1 ;;
        --verify) verify_only=1 ;;
        -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
        *) printf 'usage: %s [--force] [--verify]\n' "$0" >&2; exit 2 ;;
    esac
done

log() { printf '[build-repo] %s\n' "$*" >&2; }
die() { printf '[build-repo] ERROR: %s\n' "$*" >&2; exit 1; }

start=$(date +%s.%N)
elapsed() { awk -v s="${start}" -v e="$(date +%s.%N)" 'BEGIN { printf "%.1f", e - s }'; }

if [ "${verify_only}" = 1 ]; then
    exec "${here}/check-repo.sh" "${out}"
fi

# --- tools ---------------------------------------------------------------------------------------
missing=()
command -v dpkg-deb >/dev/null 2>&1 || missing+=(dpkg)
command -v dpkg-architecture >/dev/null 2>&1 || missing+=(dpkg-dev)
command -v apt-ftparchive >/dev/null 2>&1 || missing+=(apt-utils)
command -v gpg >/dev/null 2>&1 || missing+=(gnupg)
command -v gpg-agent >/dev/null 2>&1 || missing+=(gpg-agent)
command -v gpgv >/dev/null 2>&1 || missing+=(gpgv)
command -v gcc >/dev/null 2>&1 || missing+=(gcc)
[ -e /usr/include/stdio.h ] || missing+=(libc6-dev)
if [ "${#missing[@]}" -gt 0 ]; then
    [ "$(id -u)" = 0 ] || die "missing ${missing[*]}; run as root to install them with apt-get"
    log "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}" ||
        { DEBIAN_FRONTEND=noninteractive apt-get update -q &&
          DEBIAN_FRONTEND=noninteractive apt-get install -y -q --no-install-recommends "${missing[@]}"; }
fi

# --- signing key (stable: reused from packages-work/gnupg) ---------------------------------------
mkdir -p "${work}"
mkdir -p -m 700 "${gnupg_home}"
chmod 700 "${gnupg_home}"
export GNUPGHOME="${gnupg_home}"
tmp="$(mktemp -d "${work}/tmp.XXXXXX")"
cleanup() {
    # stop only the gpg-agent of this GNUPGHOME (gpg starts one for key generation and signing)
    gpgconf --kill gpg-agent >/dev/null 2>&1 || true
    rm -rf "${tmp}"
}
trap cleanup EXIT

gpg_batch=(gpg --batch --quiet --no-tty --trust-model always --pinentry-mode loopback --passphrase '')
# The signing key is committed (src/gpu-sim-archive.test-only-secret.asc, test only), so its
# fingerprint is known in advance: tests/simulator/inventory/group_vars sets cuda_stack_apt_key_fingerprint to it.
fpr="$(gpg --batch --quiet --with-colons --show-keys "${key_file}" 2>/dev/null |
       awk -F: '$1 == "fpr" && !found { print $10; found = 1 }')"
[ -n "${fpr}" ] || die "no key in ${key_file}"
"${gpg_batch[@]}" --import "${key_file}" 2> "${tmp}/import.log" ||
    { cat "${tmp}/import.log" >&2; die "key import failed"; }

# --- cache ---------------------------------------------------------------------------------------
inputs="$(
    cd "${here}" &&
    { sha256sum build-repo.sh check-repo.sh src/*
      gcc -dumpfullversion -dumpversion
      dpkg-deb --version | head -n 1
      echo "${fpr}"; } | sha256sum | cut -d' ' -f1
)"
complete() {
    local dist deb
    for f in gpu-sim-archive.asc gpu-sim-archive.gpg gpu-sim-archive.fpr; do
        [ -s "${out}/${f}" ] || return 1
    done
    [ "$(cat "${out}/gpu-sim-archive.fpr")" = "${fpr}" ] || return 1
    for dist in "${dists[@]}"; do
        for f in Packages Packages.gz Release InRelease Release.gpg; do
            [ -s "${out}/${dist}/x86_64/${f}" ] || return 1
        done
        deb=$(find "${out}/${dist}/x86_64" -maxdepth 1 -name '*.deb' | wc -l)
        [ "${deb}" -eq $(( ${#cuda_builds[@]} + 2 * ${#nccl_builds[@]} )) ] || return 1
    done
}
if [ "${force}" = 0 ] && [ -f "${stamp}" ] && [ "$(cat "${stamp}")" = "${inputs}" ] && complete; then
    log "up to date (inputs unchanged): ${out} [$(elapsed) s]"
    exit 0
fi
rm -f "${stamp}"

# --- package helpers -----------------------------------------------------------------------------
# build_deb ROOT: write DEBIAN/md5sums and Installed-Size, then dpkg-deb --build into ${tmp}/debs
build_deb() {
    local root="$1" size name
    (cd "${root}" && find . -type f ! -path './DEBIAN/*' -printf '%P\0' | sort -z |
        xargs -0 -r md5sum) > "${root}/DEBIAN/md5sums"
    [ -s "${root}/DEBIAN/md5sums" ] || rm -f "${root}/DEBIAN/md5sums"
    size=$(du -sk --apparent-size --exclude=DEBIAN "${root}" | cut -f1)
    sed -i "s/^Installed-Size: .*/Installed-Size: ${size}/" "${root}/DEBIAN/control"
    name="$(awk '/^Package:/ { p = $2 } /^Version:/ { v = $2 } /^Architecture:/ { a = $2 }
                END { sub(/^[0-9]+:/, "", v); print p "_" v "_" a ".deb" }' "${root}/DEBIAN/control")"
    dpkg-deb --root-owner-group -Zxz --build "${root}" "${tmp}/debs/${name}" >/dev/null
    log "built ${name}"
}

subst() {  # subst FILE KEY=VALUE... : replace @KEY@ in FILE
    local file="$1" pair
    shift
    for pair in "$@"; do
        local key="${pair%%=*}" value="${pair#*=}"
        value="${value//\\/\\\\}"; value="${value//&/\\&}"; value="${value//|/\\|}"
        sed -i "s|@${key}@|${value}|g" "${file}"
    done
}

mkdir -p "${tmp}/debs"

# --- cuda-toolkit-12-1 ---------------------------------------------------------------------------
for build in "${cuda_builds[@]}"; do
    IFS='|' read -r deb_version toolkit_version nvcc_version built_on compiler_build <<<"${build}"
    cuda_mm="${toolkit_version%.*}"          # 12.1
    cuda_major="${cuda_mm%%.*}"              # 12
    pkg="cuda-toolkit-${cuda_mm/./-}"        # cuda-toolkit-12-1
    priority="${cuda_mm/./}"                 # 121, as NVIDIA's alternatives use
    root="${tmp}/root-${pkg}-${deb_version}"
    prefix="${root}/usr/local/cuda-${cuda_mm}"
    mkdir -p "${root}/DEBIAN" "${prefix}/bin" "${prefix}/lib64" "${root}/usr/share/doc/${pkg}"
    install -m 0755 "${here}/src/nvcc.in" "${prefix}/bin/nvcc"
    subst "${prefix}/bin/nvcc" "CUDA_VERSION=${toolkit_version}" "BUILT_ON=${built_on}" \
        "NVCC_VERSION=${nvcc_version}" "COMPILER_BUILD=${compiler_build}"
    cat > "${prefix}/version.json" <<EOF
{
   "cuda" : {
      "name" : "CUDA SDK",
      "version" : "${toolkit_version}"
   },
   "cuda_nvcc" : {
      "name" : "CUDA NVCC",
      "version" : "${nvcc_version}"
   },
   "gpu_fleet_simulator" : {
      "name" : "gpu-fleet simulator stand-in, not NVIDIA's package (test only)",
      "version" : "${deb_version}"
   }
}
EOF
    chmod 0644 "${prefix}/version.json"
    printf 'gpu-fleet simulator stand-in, not NVIDIA'"'"'s package (test only).\nCUDA %s toolkit stand-in: nvcc answers --version only; lib64/ is an empty placeholder.\n' \
        "${toolkit_version}" > "${root}/usr/share/doc/${pkg}/README.gpu-sim"
    for script in postinst prerm; do
        install -m 0755 "${here}/src/cuda-toolkit.${script}.in" "${root}/DEBIAN/${script}"
        subst "${root}/DEBIAN/${script}" "CUDA_MM=${cuda_mm}" "CUDA_MAJOR=${cuda_major}" "PRIORITY=${priority}"
    done
    cat > "${root}/DEBIAN/control" <<EOF
Package: ${pkg}
Version: ${deb_version}
Architecture: amd64
Maintainer: ${maintainer}
Installed-Size: 0
Section: devel
Priority: optional
Homepage: https://developer.nvidia.com/cuda-toolkit
Description: gpu-fleet simulator stand-in, not NVIDIA's package: CUDA Toolkit ${toolkit_version}
 Test stand-in for NVIDIA's ${pkg} package (CUDA ${toolkit_version}), with its real name and
 version so that a deployment's real install path runs on a simulated GPU host.
 It ships /usr/local/cuda-${cuda_mm}/bin/nvcc, which answers --version like the real
 nvcc ${nvcc_version} and compiles nothing, version.json and an empty lib64/, and
 registers /usr/local/cuda and /usr/local/cuda-${cuda_major} with update-alternatives.
EOF
    build_deb "${root}"
done

# --- libnccl2 / libnccl-dev ----------------------------------------------------------------------
libdir="usr/lib/x86_64-linux-gnu"
for deb_version in "${nccl_builds[@]}"; do
    nccl="${deb_version%%-*}"                            # 2.14.3
    cuda_tag="${deb_version##*+}"                        # cuda11.7
    full="${nccl}+${cuda_tag}"                           # 2.14.3+cuda11.7 (the library's own string)
    IFS=. read -r major minor patch <<<"${nccl}"
    code=$(( major * 10000 + minor * 100 + patch ))      # NCCL_VERSION_CODE since 2.9
    src="${tmp}/src-${full}"
    mkdir -p "${src}"
    cp "${here}/src/nccl.h.in" "${src}/nccl.h"
    subst "${src}/nccl.h" "NCCL_FULL=${full}" "NCCL_MAJOR=${major}" "NCCL_MINOR=${minor}" \
        "NCCL_PATCH=${patch}" "NCCL_CODE=${code}"

    root="${tmp}/root-libnccl2-${deb_version}"
    mkdir -p "${root}/DEBIAN" "${root}/${libdir}" "${root}/usr/share/doc/libnccl2"
    gcc -shared -fPIC -O2 -Wall -Werror -I"${src}" -DNCCL_FULL_VERSION="\"${full}\"" \
        -Wl,-soname,libnccl.so.2 -Wl,--as-needed \
        -o "${root}/${libdir}/libnccl.so.${nccl}" "${here}/src/nccl_standin.c"
    chmod 0644 "${root}/${libdir}/libnccl.so.${nccl}"
    ln -s "libnccl.so.${nccl}" "${root}/${libdir}/libnccl.so.2"
    # refresh the ld.so cache after install/removal (`ldconfig -p` lists libnccl.so.2, as on a real host)
    printf 'activate-noawait ldconfig\n' > "${root}/DEBIAN/triggers"
    chmod 0644 "${root}/DEBIAN/triggers"
    printf 'gpu-fleet simulator stand-in, not NVIDIA'"'"'s package (test only).\nlibnccl %s: ncclGetVersion() returns %d; no collectives are implemented.\n' \
        "${full}" "${code}" > "${root}/usr/share/doc/libnccl2/README.gpu-sim"
    cat > "${root}/DEBIAN/control" <<EOF
Package: libnccl2
Source: nccl
Version: ${deb_version}
Architecture: amd64
Maintainer: ${maintainer}
Installed-Size: 0
Section: libs
Priority: optional
Multi-Arch: same
Homepage: https://developer.nvidia.com/nccl
Description: gpu-fleet simulator stand-in, not NVIDIA's package: NCCL ${nccl} runtime (${cuda_tag})
 Test stand-in for NVIDIA's libnccl2 ${deb_version}, with its real name and version so
 that a deployment's real install and pin path runs on a simulated GPU host.
 libnccl.so.2 is a real shared library built from a few lines of C: ncclGetVersion()
 returns ${code} and it carries the string "NCCL version ${full}"; it implements no
 collective operation.
EOF
    build_deb "${root}"

    root="${tmp}/root-libnccl-dev-${deb_version}"
    mkdir -p "${root}/DEBIAN" "${root}/${libdir}" "${root}/usr/include" "${root}/usr/share/doc/libnccl-dev"
    install -m 0644 "${src}/nccl.h" "${root}/usr/include/nccl.h"
    ln -s libnccl.so.2 "${root}/${libdir}/libnccl.so"
    printf 'gpu-fleet simulator stand-in, not NVIDIA'"'"'s package (test only).\nlibnccl-dev %s: minimal nccl.h and the libnccl.so link.\n' \
        "${full}" > "${root}/usr/share/doc/libnccl-dev/README.gpu-sim"
    cat > "${root}/DEBIAN/control" <<EOF
Package: libnccl-dev
Source: nccl
Version: ${deb_version}
Architecture: amd64
Maintainer: ${maintainer}
Installed-Size: 0
Depends: libnccl2 (= ${deb_version})
Section: libdevel
Priority: optional
Multi-Arch: same
Homepage: https://developer.nvidia.com/nccl
Description: gpu-fleet simulator stand-in, not NVIDIA's package: NCCL ${nccl} development files (${cuda_tag})
 Test stand-in for NVIDIA's libnccl-dev ${deb_version}: a minimal /usr/include/nccl.h
 (version macros, result codes, ncclGetVersion) and the libnccl.so link.
EOF
    build_deb "${root}"
done

# --- repositories --------------------------------------------------------------------------------
new="${tmp}/cuda-repo"
mkdir -p "${new}"
gpg --batch --armor --export "${fpr}" > "${new}/gpu-sim-archive.asc"
gpg --batch --export "${fpr}" > "${new}/gpu-sim-archive.gpg"
printf '%s\n' "${fpr}" > "${new}/gpu-sim-archive.fpr"
cat > "${new}/README.gpu-sim" <<EOF
gpu-fleet simulator stand-in of NVIDIA's CUDA apt repositories (TEST ONLY, not NVIDIA's packages).
Built by tests/simulator/packages/build-repo.sh. Flat repos, one per distro, as NVIDIA lays them out:
  deb [signed-by=/path/gpu-sim-archive.asc] file:///path/debian11/x86_64/ /
Signing key fingerprint: ${fpr}
EOF
for dist in "${dists[@]}"; do
    dir="${new}/${dist}/x86_64"
    mkdir -p "${dir}"
    cp "${tmp}"/debs/*.deb "${dir}/"
    (cd "${dir}" && apt-ftparchive packages . > Packages)
    gzip -9n -c "${dir}/Packages" > "${dir}/Packages.gz"
    (cd "${dir}" && apt-ftparchive \
        -o APT::FTPArchive::Release::Origin="gpu-fleet simulator" \
        -o APT::FTPArchive::Release::Label="gpu-fleet simulator stand-in CUDA repo (test only)" \
        -o APT::FTPArchive::Release::Description="gpu-fleet simulator stand-in of NVIDIA's CUDA ${dist} x86_64 repository; not NVIDIA's packages" \
        release .) > "${tmp}/Release"
    mv "${tmp}/Release" "${dir}/Release"
    "${gpg_batch[@]}" --yes --local-user "${fpr}" --digest-algo SHA512 --clearsign \
        --output "${dir}/InRelease" "${dir}/Release"
    "${gpg_batch[@]}" --yes --local-user "${fpr}" --digest-algo SHA512 --armor --detach-sign \
        --output "${dir}/Release.gpg" "${dir}/Release"
done

rm -rf "${out}.old"
[ -e "${out}" ] && mv "${out}" "${out}.old"
mv "${new}" "${out}"
rm -rf "${out}.old"

log "checking the repository with apt"
"${here}/check-repo.sh" "${out}"
printf '%s\n' "${inputs}" > "${stamp}"
log "built ${out} (key ${fpr}) [$(elapsed) s]"
