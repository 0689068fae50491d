#!/usr/bin/python3
"""The PyTorch peer of scripts/bench.sh distributed on GPUs: the main job's CNN (the same model,
batch 64 a rank, Adam 1e-3, the same normalization as examples/mnist) trained data-parallel for
one epoch of Fashion-MNIST with DistributedDataParallel on N GPUs of this host, one process a GPU
(NCCL); the transformer layer of bench/dist_train_bench.cpp (d 768, 12 heads, ff 3072, pre-norm,
batch 8 x 512 a rank, bf16 autocast over f32 weights as in the fusion suite's peer, AdamW 1e-4)
for 5 warm-up and 20 timed steps; then torch.distributed.all_reduce (NCCL) of f32 buffers of the
given sizes. Rank 0 prints JSON lines: images/s of the training epoch, tokens/s of the
transformer's steps, and each size's median time and bandwidth.

    peer_torch_ddp.py --gpus 2 [--sizes-mib 1,16,64] [--reps 20]
"""
import argparse
import json
import os
import sys
import tempfile
import time

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from peer_torch_mnist import load, model, train_epoch  # noqa: E402  (the same data, model, steps)


def run(rank, a, store):
    os.environ.setdefault("NCCL_NVLS_ENABLE", "0")
    torch.cuda.set_device(rank)
    torch.set_num_threads(max(1, (os.cpu_count() or 1) // a.gpus))  # the host's cores shared
    dist.init_process_group("nccl", init_method="file://" + store, rank=rank, world_size=a.gpus)
    dev = torch.device("cuda", rank)
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train")
    net = nn.parallel.DistributedDataParallel(model("cnn").to(dev), device_ids=[rank])
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    data = torch.utils.data.TensorDataset(xtr, ytr)
    sampler = torch.utils.data.distributed.DistributedSampler(data, shuffle=True, seed=a.seed,
                                                              drop_last=True)
    loader = torch.utils.data.DataLoader(data, batch_size=64, sampler=sampler, drop_last=True)
    dist.barrier()
    t0 = time.perf_counter()
    images = train_epoch(net, opt, loader, dev)
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"name": "cnn_fmnist_images_per_s", "gpus": a.gpus,
                          "value": images * a.gpus / secs}), flush=True)
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True).to(dev)
    ddp = nn.parallel.DistributedDataParallel(layer, device_ids=[rank])
    topt = torch.optim.AdamW(ddp.parameters(), lr=1e-4)
    x = torch.randn(8, 512, 768, device=dev)

    def step():
        topt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = ddp(x)
        out.float().pow(2).mean().backward()
        topt.step()

    for _ in range(5):
        step()
    torch.cuda.synchronize()
    dist.barrier()
    t0 = time.perf_counter()
    for _ in range(20):
        step()
    torch.cuda.synchronize()
    secs = time.perf_counter() - t0
    if rank == 0:
        print(json.dumps({"name": "transformer_tokens_per_s", "ranks": a.gpus,
                          "value": 8 * 512 * a.gpus * 20 / secs, "step_ms": secs / 20 * 1e3}),
              flush=True)
    for mib in a.sizes_mib:
        buf = torch.ones(mib * (1 << 20) // 4, device=dev)
        dist.all_reduce(buf)  # warm-up
        ts = []
        for _ in range(a.reps):
            dist.barrier()
            torch.cuda.synchronize()
            t = time.perf_counter()
            dist.all_reduce(buf)
            torch.cuda.synchronize()
            ts.append((time.perf_counter() - t) * 1e3)
        ts.sort()
        ms = ts[len(ts) // 2]
        if rank == 0:
            print(json.dumps({"name": "allreduce_f32_%dMiB" % mib, "ranks": a.gpus, "ms": ms,
                              "GBps": buf.numel() * 4 / (ms * 1e-3) / 1e9}), flush=True)
    dist.destroy_process_group()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpus", type=int, default=1)
    ap.add_argument("--sizes-mib", default="1,16,64")
    ap.add_argument("--reps", type=int, default=20)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data", default=os.environ.get("EMBER_MNIST_DIR",
                                                      "/usr/share/datasets/fashion-mnist"))
    a = ap.parse_args()
    a.sizes_mib = [int(s) for s in a.sizes_mib.split(",") if s]
    with tempfile.TemporaryDirectory() as d:
        mp.spawn(run, args=(a, os.path.join(d, "store")), nprocs=a.gpus, join=True)


if __name__ == "__main__":
    main()
