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
# HOST defaults to every host of tests/simulator/inventory/gpu_hosts: gpu-sim-a100x6 (profile
# a100x6_2numa) and gpu-sim-h200 (profile h200_vm). `up` on running hosts starts nothing and only
# re-runs plant.yml (which then reports changed=0).
#
# Environment: GPU_SIM_INVENTORY (inventory used to plant, default tests/simulator/inventory/;
# benchmarks/fleet.py passes its own), GPU_SIM_IMAGE (default localhost/gpu-fleet-sim:bullseye), GPU_SIM_BOOT_TIMEOUT
# (seconds to wait for systemd, default 90), GPU_SIM_SKIP_PACKAGES=1 (do not run
# tests/simulator/packages/build-all.sh before planting), ANSIBLE_PLAYBOOK (default
# .venv/bin/ansible-playbook of the repo, else the one on PATH), GPU_SIM_SSH=1 (authorise the key
# .build/sim-ssh/id_ed25519, created when absent, for root in each host; the image's sshd runs from
# boot: benchmarks/fleet.py uses it to reach the hosts the way a fleet is reached, over SSH with
# pipelining, as molecule does with the same key).
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

ssh_key() {  # once per checkout: the key pair root's authorized_keys gets (git-ignored, never committed)
    mkdir -p "${ssh_dir}"
    [ -f "${ssh_dir}/id_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -C gpu-sim-test -f "${ssh_dir}/id_ed25519"
}

enable_ssh() {  # the image's sshd (tests/simulator/image/build-image.sh) runs from boot; authorise the key
    local host="$1"
    podman exec -i "${host}" sh -c 'umask 077; mkdir -p /root/.ssh; cat > /root/.ssh/authorized_keys' <"${ssh_dir}/id_ed25519.pub"
    podman exec "${host}" systemctl is-active --quiet ssh.service \
        || die "${host}: sshd is not running (an image older than the sshd recipe? rebuild: tests/simulator/image/build-image.sh)"
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
            ssh_key
            for h in "${hosts[@]}"; do enable_ssh "${h}"; done
            log "sshd running in ${hosts[*]}"
        fi
        log "hosts up, systemd $(podman exec "${hosts[0]}" systemctl is-system-running 2>/dev/null || true) [$(since "${t}")]"
        t=$(now)
        limit="$(IFS=,; echo "${hosts[*]}")"
        (cd "${repo}" && "$(ansible_playbook)" -i "${GPU_SIM_INVENTORY:-${here}/inventory}" --limit "${limit}" "${here}/plant.yml")
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
