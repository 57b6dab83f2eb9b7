#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Build the base image of the gpu-fleet SIMULATED GPU hosts: a bare Debian 11 (bullseye) server
# that boots systemd as PID 1 inside podman (runc). It holds no GPU tooling at all: the simulated
# nvidia-smi, the numactl bridge, the profiles and the stand-in repos are planted afterwards by
# tests/simulator/plant.yml, and everything else (nginx, numactl, python venvs, ...) is installed
# by the collection's roles, as on a real server.
#
#   tests/simulator/image/build-image.sh [--force]
#
# Environment:
#   GPU_SIM_IMAGE   image name            (default localhost/gpu-fleet-sim:bullseye)
#   GPU_SIM_MIRROR  Debian mirror URI     (default: read from this machine's apt sources)
#   GPU_SIM_SUITE   Debian suite          (default bullseye; the CUDA 12.1 repo targets debian11)
#
# The Debian mirror is read at run time from this machine's apt sources (deb822
# /etc/apt/sources.list.d/*.sources, then /etc/apt/sources.list); no host name lives in the repo.
# This machine's CA bundle is copied into the image (HTTPS here may go through a proxy whose CA
# is only in that bundle) and pip is pointed at it (/etc/pip.conf).
#
# Cache: a sha256 over this script (and any other file under tests/simulator/image/), the containers.conf,
# the CA bundle, the mirror and the suite is stored as the image label org.gpu-fleet.sim.recipe;
# when the existing image carries the same value nothing is rebuilt.
#
# Needs root (debootstrap, chroot). Installs podman, runc and debootstrap with apt-get if missing.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
sim_dir="$(cd "${here}/.." && pwd)"
image="${GPU_SIM_IMAGE:-localhost/gpu-fleet-sim:bullseye}"
suite="${GPU_SIM_SUITE:-bullseye}"
ca_bundle="/etc/ssl/certs/ca-certificates.crt"
label="org.gpu-fleet.sim.recipe"
force=0
[ "${1:-}" = "--force" ] && force=1

export CONTAINERS_CONF="${sim_dir}/containers.conf"

log() { printf '[build-image] %s\n' "$*" >&2; }
die() { printf '[build-image] ERROR: %s\n' "$*" >&2; exit 1; }

[ "$(id -u)" = 0 ] || die "run as root (debootstrap and chroot need it)"

# --- tools -------------------------------------------------------------------------------------
missing=()
command -v podman >/dev/null 2>&1 || missing+=(podman)
command -v runc >/dev/null 2>&1 || [ -x /usr/sbin/runc ] || missing+=(runc)
command -v debootstrap >/dev/null 2>&1 || [ -x /usr/sbin/debootstrap ] || missing+=(debootstrap)
if [ "${#missing[@]}" -gt 0 ]; then
    log "installing ${missing[*]} with apt-get"
    DEBIAN_FRONTEND=noninteractive apt-get update -q
    DEBIAN_FRONTEND=noninteractive apt-get install -y -q "${missing[@]}"
fi
PATH="${PATH}:/usr/sbin:/sbin"

# --- mirror ------------------------------------------------------------------------------------
# Print the URI of the first apt source that carries the machine's Debian release suite (not
# -security/-updates/-backports) with component main.
find_mirror() {
    local f
    shopt -s nullglob
    for f in /etc/apt/sources.list.d/*.sources; do
        awk '
            function flush() {
                if (types ~ /(^| )deb( |$)/ && comps ~ /(^| )main( |$)/ && uris != "") {
                    n = split(suites, s, /[ \t]+/)
                    for (i = 1; i <= n; i++)
                        if (s[i] != "" && s[i] !~ /-/) { split(uris, u, /[ \t]+/); print u[1]; found = 1; exit }
                }
                types = ""; uris = ""; suites = ""; comps = ""
            }
            /^[ \t]*#/ { next }
            /^[ \t]*$/ { flush(); next }
            { key = tolower($1); sub(/:$/, "", key); $1 = ""; sub(/^[ \t]+/, "")
              if (key == "types") types = $0; else if (key == "uris") uris = $0
              else if (key == "suites") suites = $0; else if (key == "components") comps = $0 }
            END { if (!found) flush() }
        ' "$f" | head -n 1
    done
    shopt -u nullglob
    if [ -f /etc/apt/sources.list ]; then
        # deb [options] URI SUITE COMPONENTS...
        awk '$1 == "deb" { i = 2; if ($2 ~ /^\[/) { while (i <= NF && $i !~ /\]$/) i++; i++ }
                           if ($(i+1) !~ /-/ && index(" " substr($0, index($0, $(i+1))) " ", " main ")) { print $i; exit } }' \
            /etc/apt/sources.list
    fi
}
mirror="${GPU_SIM_MIRROR:-$(find_mirror | head -n 1)}"
[ -n "${mirror}" ] || die "no Debian mirror found in /etc/apt/sources.list.d/*.sources or /etc/apt/sources.list; set GPU_SIM_MIRROR"
mirror="${mirror%/}"
[ -r "${ca_bundle}" ] || die "${ca_bundle} is missing (install ca-certificates)"

# --- recipe hash -------------------------------------------------------------------------------
recipe_hash="$(
    {
        printf 'suite=%s\nmirror=%s\n' "${suite}" "${mirror}"
        sha256sum "${CONTAINERS_CONF}" "${ca_bundle}" | awk '{print $1}'
        (cd "${here}" && find . -type f -print0 | LC_ALL=C sort -z | xargs -0 sha256sum)
    } | sha256sum | awk '{print $1}'
)"

current="$(podman image inspect --format "{{ index .Labels \"${label}\" }}" "${image}" 2>/dev/null || true)"
if [ "${force}" = 0 ] && [ "${current}" = "${recipe_hash}" ]; then
    log "${image} is up to date (recipe ${recipe_hash:0:12}); nothing to do"
    exit 0
fi
old_id="$(podman image inspect --format '{{.Id}}' "${image}" 2>/dev/null || true)"
log "building ${image} (Debian ${suite} from ${mirror}; recipe ${recipe_hash:0:12})"

# --- rootfs ------------------------------------------------------------------------------------
work="$(mktemp -d /var/tmp/gpu-fleet-sim-rootfs.XXXXXX)"
cleanup() {
    # debootstrap may leave /proc or /sys mounted when it fails half-way
    for m in proc sys dev/pts dev; do umount -l "${work}/rootfs/${m}" 2>/dev/null || true; done
    rm -rf --one-file-system "${work}"
}
trap cleanup EXIT
rootfs="${work}/rootfs"

# A plausible bare server: systemd + dbus (Ansible's systemd/service modules), python3 and
# python3-apt (Ansible's apt module), procps/iproute2/kmod (basic admin tools), ca-certificates,
# and openssh-server (a fleet is reached over SSH: molecule and benchmarks/fleet.py connect with
# ansible's ssh connection and pipelining; the key is authorised per container at start, never
# baked in). Deliberately absent: numactl, nginx, python3-venv, cron, logrotate, gnupg (the roles
# install what they need) and anything NVIDIA.
include="systemd,systemd-sysv,dbus,python3,python3-apt,procps,iproute2,kmod,ca-certificates,less,openssh-server"
t0=$(date +%s)
debootstrap --variant=minbase --include="${include}" "${suite}" "${rootfs}" "${mirror}" \
    >"${work}/debootstrap.log" 2>&1 || { tail -n 40 "${work}/debootstrap.log" >&2; die "debootstrap failed (log above)"; }
log "debootstrap done in $(( $(date +%s) - t0 )) s"

# apt sources of the image: the same mirror, suite main (nothing else; the roles add their repos)
printf 'deb %s %s main\n' "${mirror}" "${suite}" >"${rootfs}/etc/apt/sources.list"

# CA bundle of this machine: every certificate of it that the image's own bundle lacks (e.g. the
# CA of an HTTPS proxy) becomes one local CA file of the image. One certificate per file matters:
# OpenSSL's CApath lookup (Python's default) only sees the first certificate of a file. Running
# update-ca-certificates puts them into /etc/ssl/certs (hash links + ca-certificates.crt), and any
# later ca-certificates upgrade keeps them.
awk -v outdir="${rootfs}/usr/local/share/ca-certificates" '
    /-----BEGIN CERTIFICATE-----/ { inblk = 1; key = ""; pem = "" }
    inblk { line = $0; sub(/\r$/, "", line); pem = pem line "\n"; gsub(/[ \t]/, "", line); key = key line }
    /-----END CERTIFICATE-----/ && inblk {
        inblk = 0
        if (FILENAME == ARGV[1]) { known[key] = 1 }
        else if (!(key in known) && !(key in done)) {
            done[key] = 1; n++
            f = sprintf("%s/gpu-sim-build-host-%03d.crt", outdir, n)
            printf "%s", pem > f; close(f)
        }
    }
    END { printf "%d\n", n > "/dev/stderr" }
' "${rootfs}/etc/ssl/certs/ca-certificates.crt" "${ca_bundle}" 2>"${work}/extra-cas"
log "CA certificates of this machine added to the image: $(cat "${work}/extra-cas")"
chroot "${rootfs}" /usr/sbin/update-ca-certificates >/dev/null 2>&1 \
    || die "update-ca-certificates failed in the image"
printf '[global]\ncert = /etc/ssl/certs/ca-certificates.crt\n' >"${rootfs}/etc/pip.conf"

# sshd: keys only (root logs in with the key authorised at container start). The host keys the
# package generated are the image's own (test hosts; clients connect with StrictHostKeyChecking=no
# and no known_hosts file).
printf 'PasswordAuthentication no\n' >"${rootfs}/etc/ssh/sshd_config.d/gpu-sim.conf"
[ -L "${rootfs}/etc/systemd/system/multi-user.target.wants/ssh.service" ] \
    || die "openssh-server did not enable ssh.service in the image"

# systemd needs no masked units here: booted under podman + runc (--systemd=always) the image
# reaches `systemctl is-system-running` = running with no failed unit (see ../README.md).

# identity: systemd creates a machine-id on first boot; no host name baked in
: >"${rootfs}/etc/machine-id"
rm -f "${rootfs}/var/lib/dbus/machine-id"
printf 'localhost\n' >"${rootfs}/etc/hostname"

# package lists as on an installed server (apt's cache age then tells roles when to refresh;
# an image with no lists but a fresh lists/ directory would look "recently updated" to them)
chroot "${rootfs}" /usr/bin/apt-get update -q >/dev/null || die "apt-get update failed in the image"

# shrink: no downloaded .debs, no logs
rm -rf "${rootfs}"/var/cache/apt/archives/*.deb "${rootfs}"/var/log/*.log

# --- import ------------------------------------------------------------------------------------
t0=$(date +%s)
tar --numeric-owner --xattrs -C "${rootfs}" -c . | podman import \
    --change 'CMD ["/sbin/init"]' \
    --change 'STOPSIGNAL SIGRTMIN+3' \
    --change "LABEL ${label}=${recipe_hash}" \
    --change "LABEL org.gpu-fleet.sim.description=gpu-fleet simulated GPU host base image (Debian ${suite}, no GPU)" \
    --message "gpu-fleet simulated GPU host base image" --quiet \
    - "${image}" >/dev/null
log "imported ${image} in $(( $(date +%s) - t0 )) s"

new_id="$(podman image inspect --format '{{.Id}}' "${image}")"
if [ -n "${old_id}" ] && [ "${old_id}" != "${new_id}" ]; then
    podman rmi "${old_id}" >/dev/null 2>&1 || log "old image ${old_id:0:12} still in use by a container; left in place"
fi
log "done: ${image} ${new_id:0:12}"
