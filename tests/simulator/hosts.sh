#!/usr/bin/env bash
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Start / stop the SIMULATED GPU hosts of the gpu-fleet collection (podman containers booting
# systemd, no GPU; see tests/simulator/README.md).
#
#   tests/simulator/hosts.sh up     [HOST...]   build what is missing, start, wait for systemd, plant
#   tests/simulator/hosts.sh down   [HOST...]   remove the containers
#   tests/simulator/hosts.sh status [HOST...]   state of each host
#
# HOST defaults to every host of tests/simulator/inventory.yml: gpu-sim-a100x6 (profile
# a100x6_2numa) and gpu-sim-h200 (profile h200_vm). `up` on running hosts starts nothing and only
# re-runs plant.yml (which then reports changed=0).
#
# Environment: GPU_SIM_INVENTORY (inventory used to plant, default tests/simulator/inventory.yml;
# benchmarks/fleet.py passes its own), GPU_SIM_IMAGE (default localhost/gpu-fleet-sim:bullseye), GPU_SIM_BOOT_TIMEOUT
# (seconds to wait for systemd, default 90), GPU_SIM_SKIP_PACKAGES=1 (do not run
# tests/simulator/packages/build-all.sh before planting), ANSIBLE_PLAYBOOK (default
# .venv/bin/ansible-playbook of the repo, else the one on PATH), GPU_SIM_SSH=1 (also install and
# start sshd in each host and authorise the key .build/sim-ssh/id_ed25519, created when absent, for
# root: benchmarks/fleet.py uses it to reach the hosts the way a fleet is reached, over SSH with
# pipelining; the openssh-server .debs are downloaded once into .build/sim-ssh/debs by a throwaway
# container, so the hosts' own apt state stays as the image left it).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "${here}/../.." && pwd)"
export CONTAINERS_CONF="${here}/containers.conf"
image="${GPU_SIM_IMAGE:-localhost/gpu-fleet-sim:bullseye}"
boot_timeout="${GPU_SIM_BOOT_TIMEOUT:-90}"
all_hosts=(gpu-sim-a100x6 gpu-sim-h200)

log() { printf '[hosts.sh] %s\n' "$*" >&2; }
die() { printf '[hosts.sh] ERROR: %s\n' "$*" >&2; exit 1; }
now() { date +%s.%N; }
since() { awk -v s="$1" -v e="$(now)" 'BEGIN { printf "%.1f s", e - s }'; }

state_of() {  # running | exited | created | ... | absent
    podman container inspect --format '{{.State.Status}}' "$1" 2>/dev/null || echo absent
}

wait_systemd() {
    local host="$1" start state
    start=$(date +%s)
    while :; do
        state="$(podman exec "${host}" systemctl is-system-running 2>/dev/null || true)"
        case "${state}" in
            running) return 0 ;;
            degraded)
                log "${host}: systemd is degraded; failed units:"
                podman exec "${host}" systemctl --failed --no-legend --plain >&2 || true
                return 0 ;;
        esac
        if [ $(( $(date +%s) - start )) -ge "${boot_timeout}" ]; then
            podman exec "${host}" systemctl --failed --no-pager >&2 || true
            die "${host}: systemd not up after ${boot_timeout} s (state '${state:-none}')"
        fi
        sleep 1
    done
}

start_host() {
    local host="$1" state
    state="$(state_of "${host}")"
    case "${state}" in
        running)
            log "${host}: already running" ;;
        absent)
            log "${host}: starting a new container"
            podman --runtime runc run -d --name "${host}" --hostname "${host}" \
                --systemd=always \
                --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
                --shm-size=1g \
                --label org.gpu-fleet.sim=1 \
                "${image}" /sbin/init >/dev/null ;;
        *)
            log "${host}: container exists (${state}); starting it"
            podman start "${host}" >/dev/null ;;
    esac
}

ssh_dir="${repo}/.build/sim-ssh"

ssh_debs() {  # once: openssh-server and its dependencies for the image, downloaded in a throwaway container
    if ! compgen -G "${ssh_dir}/debs/*.deb" >/dev/null; then
        mkdir -p "${ssh_dir}/debs"
        log "downloading openssh-server for ${image} into ${ssh_dir}/debs"
        podman --runtime runc run --rm --ulimit nofile=20000:20000 --ulimit nproc=4096:4096 \
            -v "${ssh_dir}/debs:/out" "${image}" bash -c \
            'apt-get update -qq && apt-get install -y -qq --download-only --no-install-recommends openssh-server >/dev/null && cp /var/cache/apt/archives/*.deb /out/' \
            || die "could not download openssh-server (needs the Debian mirror)"
    fi
    [ -f "${ssh_dir}/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C gpu-sim-bench -f "${ssh_dir}/id_ed25519"
}

enable_ssh() {
    local host="$1"
    if ! podman exec "${host}" test -x /usr/sbin/sshd; then
        podman exec "${host}" mkdir -p /tmp/gpu-sim-ssh-debs
        podman cp "${ssh_dir}/debs/." "${host}:/tmp/gpu-sim-ssh-debs/"
        podman exec -e DEBIAN_FRONTEND=noninteractive "${host}" sh -c \
            'dpkg -i /tmp/gpu-sim-ssh-debs/*.deb >/tmp/gpu-sim-ssh-dpkg.log 2>&1 && rm -rf /tmp/gpu-sim-ssh-debs' \
            || die "${host}: installing openssh-server failed"
    fi
    podman exec -i "${host}" sh -c 'umask 077; mkdir -p /root/.ssh; cat > /root/.ssh/authorized_keys' <"${ssh_dir}/id_ed25519.pub"
    podman exec "${host}" systemctl enable --now ssh.service >/dev/null 2>&1 || die "${host}: sshd did not start"
}

ansible_playbook() {
    if [ -n "${ANSIBLE_PLAYBOOK:-}" ]; then
        echo "${ANSIBLE_PLAYBOOK}"
    elif [ -x "${repo}/.venv/bin/ansible-playbook" ]; then
        echo "${repo}/.venv/bin/ansible-playbook"
    else
        command -v ansible-playbook || die "ansible-playbook not found (create the .venv: see README.md)"
    fi
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
hosts=("$@")
[ ${#hosts[@]} -eq 0 ] && hosts=("${all_hosts[@]}")

case "${cmd}" in
    up)
        t=$(now)
        "${here}/image/build-image.sh"
        log "image ready [$(since "${t}")]"
        if [ "${GPU_SIM_SKIP_PACKAGES:-0}" != 1 ] && [ -x "${here}/packages/build-all.sh" ]; then
            t=$(now)
            "${here}/packages/build-all.sh"
            log "stand-in packages ready [$(since "${t}")]"
        fi
        t=$(now)
        for h in "${hosts[@]}"; do start_host "${h}"; done
        for h in "${hosts[@]}"; do wait_systemd "${h}"; done
        if [ "${GPU_SIM_SSH:-0}" = 1 ]; then
            ssh_debs
            for h in "${hosts[@]}"; do enable_ssh "${h}"; done
            log "sshd running in ${hosts[*]}"
        fi
        log "hosts up, systemd $(podman exec "${hosts[0]}" systemctl is-system-running 2>/dev/null || true) [$(since "${t}")]"
        t=$(now)
        limit="$(IFS=,; echo "${hosts[*]}")"
        (cd "${repo}" && "$(ansible_playbook)" -i "${GPU_SIM_INVENTORY:-${here}/inventory.yml}" --limit "${limit}" "${here}/plant.yml")
        log "planted ${limit} [$(since "${t}")]"
        ;;
    down)
        for h in "${hosts[@]}"; do
            if [ "$(state_of "${h}")" != absent ]; then
                podman rm -f -t 10 "${h}" >/dev/null
                log "${h}: removed"
            else
                log "${h}: not present"
            fi
        done
        ;;
    status)
        for h in "${hosts[@]}"; do
            state="$(state_of "${h}")"
            detail=""
            if [ "${state}" = running ]; then
                sysd="$(podman exec "${h}" systemctl is-system-running 2>/dev/null || true)"
                prof="$(podman exec "${h}" python3 -c 'import json; print(json.load(open("/etc/gpu-sim/profile/meta.json"))["name"])' 2>/dev/null || echo none)"
                detail="systemd=${sysd} profile=${prof}"
            fi
            printf '%-16s %-9s %s\n' "${h}" "${state}" "${detail}"
        done
        ;;
    *)
        sed -n '4,20p' "$0" | sed 's/^# \{0,1\}//' >&2
        exit 2
        ;;
esac
