# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Everything we run on a real GPU host, in one go (the device machine has no network: ansible-core
# and resolvelib come as wheels in .build/wheels). Results go to $OUT (or ./hw-out).
#
#   bash tests/hardware/run_on_device.sh                         # every stage
#   STAGES="compliance diagnose" bash tests/hardware/run_on_device.sh   # some of them
# Stages: capture plan bench allreduce compliance diagnose nccl validate release (preflight: old name of compliance)
#   release: the plan's release checks with the host's facts and its own libnccl.so.2 (tests/hardware/release.yml),
#   and the vllm_stack readers on the host's own torch (dist-info names, torch/version.py)
#   validate: site.yml --check against this host (the first play refuses or passes it; /etc, /opt and
#   /var/lib are checksummed before and after: check mode and a refusal change nothing)
set -u
STAGES=${STAGES:-capture plan bench allreduce compliance diagnose nccl}
want() { case " $STAGES " in *" $1 "*) return 0;; esac; return 1; }
dest=${OUT:-$PWD}
out=/tmp/hw-out
rm -rf "$out"; mkdir -p "$out"
# NVLink multicast stays off in every process on shared hosts
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1 CUDA_DEVICE_ORDER=PCI_BUS_ID
repo=$PWD
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .build/wheels/*.whl || exit 1
export PYTHONPATH=/tmp/site PATH=/tmp/site/bin:$PATH
mkdir -p /tmp/ac/ansible_collections/gpu_fleet
ln -sfn "$repo" /tmp/ac/ansible_collections/gpu_fleet/vllm_serving
# the collection's dependencies (community.general, ansible.posix), carried as a tarball: no network
[ -f .build/devcoll/collections.tgz ] && tar -C /tmp/ac -xzf .build/devcoll/collections.tgz
export ANSIBLE_COLLECTIONS_PATH=/tmp/ac ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0

ngpu=$(nvidia-smi -L | grep -c '^GPU ')
all=$(seq -s, 0 $((ngpu - 1)))
models=tests/fixtures/models
if want capture; then echo "== capture"; bash tests/hardware/capture.sh "$out/capture"; fi
if want plan; then
    echo "== facts + planner"
    /tmp/site/bin/ansible-playbook -i localhost, tests/hardware/plan.yml -e hw_out="$out" 2>&1 | tee "$out/plan.log" | tail -30
fi
if want bench; then
    echo "== facts benchmark"
    PYTHONPATH=/tmp/ac:/tmp/site python3 benchmarks/facts_module.py --runs 20 >"$out/facts_bench.json" 2>&1
    head -30 "$out/facts_bench.json"
fi
if want compliance || want preflight; then
    # the model of the plan: 72B needs TP=2 on a 2-GPU host, 7B fits one GPU
    model=Qwen2.5-7B-Instruct; [ "$ngpu" -ge 2 ] && model=Qwen2.5-72B-Instruct
    printf '{"vllm_server_model": {"name": "Qwen/%s", "path": "/nonexistent/%s", "config": %s}}' \
        "$model" "$model" "$(cat $models/$model/config.json)" >"$out/model-vars.json"
    for mode in "" "--check"; do
        echo "== compliance.yml $mode"
        /tmp/site/bin/ansible-playbook -i localhost, -c local playbooks/compliance.yml $mode \
            -e compliance_expected_gpu_count="$ngpu" -e compliance_report_dir="$out/compliance${mode:+-check}" \
            -e @"$out/model-vars.json" >"$out/compliance${mode:+-check}.log" 2>&1
        echo "compliance.yml $mode rc=$?"
    done
    sed -n "/Show the host's table/,/Collect the hosts' results/p" "$out/compliance.log" | head -60
fi
if want nccl; then
    # which NCCL the host and a torch virtualenv really load (nccl_facts), and the raw evidence
    echo "== nccl_facts"
    venv=$(python3 -c 'import sys; print(sys.prefix)')
    /tmp/site/bin/ansible localhost -c local -m gpu_fleet.vllm_serving.nccl_facts -a "venvs=$venv" \
        >"$out/nccl_facts.log" 2>&1; echo "nccl_facts rc=$?"; head -60 "$out/nccl_facts.log"
    {
        ldconfig -p | grep -i nccl
        for f in /usr/lib/x86_64-linux-gnu/libnccl.so.2 "$venv"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2; do
            r=$(readlink -f "$f"); echo "== $f -> $r $(stat -c %s "$r")"
            grep -a -b -o 'NCCL version [^[:cntrl:]]*' "$r" | head -5
        done
        ls -d "$venv"/lib/python3*/site-packages/nvidia_nccl*
    } >"$out/nccl_strings.out" 2>&1
    cat "$out/nccl_strings.out"
    PYTHONPATH=/tmp/site:/tmp/ac python3 benchmarks/nccl_version_scan.py --runs 5 /usr/lib/x86_64-linux-gnu/libnccl.so.2 \
        "$venv"/lib/python3*/site-packages/nvidia/nccl/lib/libnccl.so.2 >"$out/nccl_scan.json" 2>&1
    cat "$out/nccl_scan.json"
fi
if want validate; then
    echo "== site.yml (validate first)"
    printf '[gpu_hosts]\nlocalhost ansible_connection=local\n' >"$out/inventory.ini"
    sums() { find /etc /opt /var/lib -xdev \( -path /var/lib/apt/lists -o -path /var/lib/systemd -o -path /var/lib/dpkg \
        -o -path /var/lib/logrotate \) -prune -o -type f -print0 2>/dev/null | sort -z | xargs -0 md5sum 2>/dev/null | md5sum; }
    before=$(sums)
    /tmp/site/bin/ansible-playbook -i "$out/inventory.ini" site.yml --check -e @"$out/model-vars.json" \
        >"$out/site.log" 2>&1
    echo "site.yml rc=$? files under /etc /opt /var/lib: $([ "$before" = "$(sums)" ] && echo unchanged || echo CHANGED)"
    grep -E '^(PLAY|TASK|fatal|failed)|msg:' "$out/site.log" | tail -25
fi
if want release; then
    echo "== release checks of the plan"
    /tmp/site/bin/ansible-playbook -i localhost, tests/hardware/release.yml -e hw_out="$out" >"$out/release.log" 2>&1
    echo "release.yml rc=$?"; cat "$out/release_plans.json" | head -80
    PYTHONPATH=/tmp/ac:/tmp/site python3 - >"$out/vllm_stack_readers.json" 2>&1 <<'PY'
import glob, json, os, sys, sysconfig
from ansible_collections.gpu_fleet.vllm_serving.plugins.module_utils import _vllm_stack as s
site = sysconfig.get_paths()["purelib"]
names = [n for n in os.listdir(site) if n.endswith(".dist-info")]
torch_py = os.path.join(site, "torch", "version.py")
text = open(torch_py).read() if os.path.exists(torch_py) else None
dists = s.parse_dist_infos(names)
print(json.dumps({"site": site, "python": sys.version.split()[0],
                  "dists": dict((k, v) for k, v in sorted(dists.items()) if k.startswith(("torch", "vllm", "nvidia"))),
                  "torch_version_py": text, "torch_cuda": s.parse_torch_cuda(text)}, indent=1))
PY
    cat "$out/vllm_stack_readers.json"
fi
if want diagnose; then
    echo "== diagnose.yml"
    /tmp/site/bin/ansible-playbook -i localhost, -c local playbooks/diagnose.yml -e diagnostics_dest="$out/diagnose" \
        >"$out/diagnose.log" 2>&1
    echo "diagnose.yml rc=$?"; tail -5 "$out/diagnose.log"
fi
if want allreduce && [ "$ngpu" -ge 2 ] && python3 -c 'import torch' 2>/dev/null; then
    echo "== all-reduce over GPUs $all"
    for variant in "default" "NCCL_P2P_DISABLE=1" "NCCL_P2P_DISABLE=1 NCCL_SHM_DISABLE=1"; do
        tag=$(echo "$variant" | tr ' =' '__')
        env $( [ "$variant" = default ] || echo "$variant") NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=INIT,P2P,SHM,NET \
            timeout 240 python3 tests/hardware/allreduce_probe.py --gpus "$all" --label "$variant" \
            --json-out "$out/allreduce_$tag.json" >"$out/allreduce_$tag.log" 2>&1
        echo "rc=$? $variant"; grep -E '"(bytes|busbw_GBps|correct)"' "$out/allreduce_$tag.json" | paste - - - | head
        grep -E ' via ' "$out/allreduce_$tag.log" | head -2
    done
fi
python3 tests/hardware/sanitize.py "$out"
tar -C "$out" -czf "$dest/hw-results.tgz" .
cp "$out/plan.log" "$out/facts_bench.json" "$dest/" 2>/dev/null || true
