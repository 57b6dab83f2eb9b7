# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
#
# Everything we run on a real GPU host, in one go (the device machine has no network: ansible-core
# and resolvelib come as wheels in .build/wheels). Results go to $OUT (or ./hw-out).
#
#   bash tests/hardware/run_on_device.sh
set -u
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
export ANSIBLE_COLLECTIONS_PATH=/tmp/ac ANSIBLE_LOCALHOST_WARNING=0 ANSIBLE_INVENTORY_UNPARSED_WARNING=0

echo "== capture"; bash tests/hardware/capture.sh "$out/capture"
echo "== facts + planner"
/tmp/site/bin/ansible-playbook -i localhost, tests/hardware/plan.yml -e hw_out="$out" 2>&1 | tee "$out/plan.log" | tail -30
echo "== facts benchmark"
PYTHONPATH=/tmp/ac:/tmp/site python3 benchmarks/facts_module.py --runs 20 >"$out/facts_bench.json" 2>&1; cat "$out/facts_bench.json" | head -30
ngpu=$(nvidia-smi -L | grep -c '^GPU ')
all=$(seq -s, 0 $((ngpu - 1)))
echo "== all-reduce over GPUs $all"
if [ "$ngpu" -ge 2 ] && python3 -c 'import torch' 2>/dev/null; then
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
