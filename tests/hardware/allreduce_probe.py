# -*- coding: utf-8 -*-
# GNU General Public License v3.0+ (see COPYING or https://www.gnu.org/licenses/gpl-3.0.txt)
# SPDX-License-Identifier: GPL-3.0-or-later
"""All-reduce bandwidth probe (a measurement, not a test) for one group of GPUs.

One process per GPU, PyTorch + NCCL, the same collective a tensor-parallel vLLM instance runs on
every layer. Prints one JSON object: per message size the median time, algorithm bandwidth and
bus bandwidth (nccl-tests' definition: algbw x 2(n-1)/n), whether the sum was right, and the NCCL
transport lines (`NCCL_DEBUG=INFO`) so the path taken (P2P/NVLink, SHM, NET) is on record.

    NCCL_NVLS_ENABLE=0 python3 tests/hardware/allreduce_probe.py --gpus 0,1 [--label good] [--json-out F]
    NCCL_NVLS_ENABLE=0 NCCL_P2P_DISABLE=1 python3 tests/hardware/allreduce_probe.py --gpus 0,1 --label no-p2p

NVLink SHARP/multicast (NVLS) must stay off on shared hosts: the script refuses to run without
NCCL_NVLS_ENABLE=0.
"""
import argparse
import json
import os
import statistics
import sys
import tempfile


def _worker(rank, world, gpus, sizes, iters, init_file, result_file):
    import torch
    import torch.distributed as dist

    torch.cuda.set_device(gpus[rank])
    dist.init_process_group("nccl", init_method="file://" + init_file, rank=rank, world_size=world)
    rows = []
    for size in sizes:
        numel = size // 4
        buf = torch.empty(numel, dtype=torch.float32, device="cuda")
        for _warm in range(5):  # warm-up (also builds the NCCL communicator on the first call)
            buf.fill_(rank + 1.0)
            dist.all_reduce(buf)
        torch.cuda.synchronize()
        times = []
        for _iter in range(iters):
            buf.fill_(rank + 1.0)
            start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
            start.record()
            dist.all_reduce(buf)
            end.record()
            end.synchronize()
            times.append(start.elapsed_time(end) / 1000.0)
        expect = world * (world + 1) / 2.0
        ok = bool(torch.all(buf == expect).item())
        med = statistics.median(times)
        algbw = size / med / 1e9
        rows.append({"bytes": size, "median_us": round(med * 1e6, 1), "algbw_GBps": round(algbw, 2),
                     "busbw_GBps": round(algbw * 2 * (world - 1) / world, 2), "correct": ok})
    if rank == 0:
        with open(result_file, "w") as fh:
            json.dump(rows, fh)
    dist.barrier()
    dist.destroy_process_group()


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gpus", required=True, help="comma list of CUDA device indices (PCI bus order)")
    parser.add_argument("--label", default="")
    parser.add_argument("--iters", type=int, default=20)
    parser.add_argument("--sizes-mib", default="1,16,64,256,1024")
    parser.add_argument("--json-out", help="write the result here (NCCL_DEBUG=INFO also prints to stdout)")
    opts = parser.parse_args()
    if os.environ.get("NCCL_NVLS_ENABLE") != "0":
        sys.exit("refusing to run: set NCCL_NVLS_ENABLE=0 (NVLink multicast must stay off on shared hosts)")
    os.environ.setdefault("CUDA_DEVICE_ORDER", "PCI_BUS_ID")
    import torch
    import torch.multiprocessing as mp

    gpus = [int(g) for g in opts.gpus.split(",")]
    sizes = [int(float(s) * 1024 * 1024) for s in opts.sizes_mib.split(",")]
    tmp = tempfile.mkdtemp(prefix="allreduce-")
    init_file, result_file = os.path.join(tmp, "init"), os.path.join(tmp, "result.json")
    mp.spawn(_worker, args=(len(gpus), gpus, sizes, opts.iters, init_file, result_file), nprocs=len(gpus))
    with open(result_file) as fh:
        rows = json.load(fh)
    env = {k: v for k, v in sorted(os.environ.items()) if k.startswith("NCCL_") or k == "CUDA_DEVICE_ORDER"}
    text = json.dumps({"label": opts.label, "gpus": gpus, "torch": torch.__version__,
                       "nccl_loaded_by_torch": ".".join(str(x) for x in torch.cuda.nccl.version()), "env": env,
                       "results": rows}, indent=1)
    if opts.json_out:
        with open(opts.json_out, "w") as fh:
            fh.write(text + "\n")
    print(text)


if __name__ == "__main__":
    main()
