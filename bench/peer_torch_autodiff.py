#!/usr/bin/python3
"""The PyTorch peer of bench/autodiff_bench.cpp: an MLP (784-256-10, ReLU, cross-entropy) at
batch 64, forward + backward ("mlp_step/64") and forward alone ("mlp_forward/64"), and a 3x3
conv's forward + backward ("conv2d_step/..."), timed the way bench/peer_torch_cpu.py times
ops, written as JSON for bench/merge_bench.py.

    /usr/bin/python3 bench/peer_torch_autodiff.py --threads 2 [--reps 7] [--min-time 0.2] [--out F]
"""
import argparse
import sys

import torch
import torch.nn.functional as F

from peer_torch_cpu import time_op, write_report

BATCH, IN, HIDDEN, OUT = 64, 784, 256, 10


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--min-time", type=float, default=0.2)
    p.add_argument("--out")
    args = p.parse_args()
    torch.set_num_threads(args.threads)
    torch.empty(31 << 18)  # glibc's mmap threshold raised, as in peer_torch_cpu.py
    torch.manual_seed(0)

    def init(fan_in, *shape):
        k = fan_in ** -0.5
        return (torch.rand(*shape) * 2 * k - k).requires_grad_(True)

    w1, b1 = init(IN, IN, HIDDEN), init(IN, HIDDEN)
    w2, b2 = init(HIDDEN, HIDDEN, OUT), init(HIDDEN, OUT)
    x = torch.rand(BATCH, IN)
    y = torch.randint(0, OUT, (BATCH,))
    params = (w1, b1, w2, b2)

    def loss():
        h = F.relu(x @ w1 + b1)
        return F.cross_entropy(h @ w2 + b2, y)

    def step():  # forward + backward, gradients returned (not accumulated into .grad)
        return torch.autograd.grad(loss(), params)

    def forward():
        with torch.no_grad():
            return loss()

    cx = (torch.rand(8, 64, 56, 56) * 2 - 1).requires_grad_(True)
    cw = (torch.rand(64, 64, 3, 3) * 0.2 - 0.1).requires_grad_(True)

    def conv_step():  # input and weight gradients of the output's sum
        return torch.autograd.grad(F.conv2d(cx, cw, None, 1, 1).sum(), (cx, cw))

    dx = (torch.rand(8, 96, 56, 56) * 2 - 1).requires_grad_(True)
    dw = (torch.rand(96, 1, 5, 5) * 0.4 - 0.2).requires_grad_(True)

    def depthwise_step():  # the same for a depthwise 5x5 conv
        return torch.autograd.grad(F.conv2d(dx, dw, None, 1, 2, 1, 96).sum(), (dx, dw))

    results = []
    for name, fn in (("mlp_step/64", step), ("mlp_forward/64", forward),
                     ("conv2d_step/resnet_3x3_8x64x56x56", conv_step),
                     ("depthwise_step/5x5_8x96x56x56", depthwise_step)):
        median, samples, batch = time_op(fn, args.reps, args.min_time)
        results.append({"name": name, "ms": median * 1e3,
                        "samples_ms": [s * 1e3 for s in samples], "batch": batch})
        print(f"peer_torch_autodiff: {name}: {median * 1e3:.4g} ms", file=sys.stderr)
    write_report(results, args.out)

if __name__ == "__main__":
    main()
