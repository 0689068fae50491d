#!/usr/bin/env python3
"""The PyTorch peer of bench/cuda_bench.cpp on one GPU: the same figures, names and sizes,
timed the same way (CUDA events around each call on the current stream, warm-up first, the
median of `reps` samples), random normal data. Written as JSON for bench/cuda_report.py:

    python3 bench/peer_torch_cuda.py [--reps 30] [--warmup 5] [--filter S] [--out FILE]

The names are those of the project's H200 anchor figures (bench/peer_torch_cuda_h200.json),
so a run here, a stored anchor and ember's run can be read side by side.
"""
import argparse
import json
import time
import statistics
import sys

import torch
import torch.nn.functional as F


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--reps", type=int, default=30)
    p.add_argument("--warmup", type=int, default=5)
    p.add_argument("--filter", default="")
    p.add_argument("--out")
    args = p.parse_args()
    if not torch.cuda.is_available():
        sys.exit("peer_torch_cuda.py: no CUDA GPU for PyTorch")
    dev = "cuda"
    torch.manual_seed(0)
    results = []

    def time_ms(fn, reps=None):
        for _ in range(args.warmup):
            fn()
        torch.cuda.synchronize()
        ts = []
        for _ in range(reps or args.reps):
            s = torch.cuda.Event(enable_timing=True)
            e = torch.cuda.Event(enable_timing=True)
            s.record()
            fn()
            e.record()
            e.synchronize()
            ts.append(s.elapsed_time(e))
        return statistics.median(ts)

    def want(name):
        return args.filter in name

    def put(name, ms, unit, value):
        print(f"{name:44s} {ms:10.4f} ms {value:12.2f} {unit}", flush=True)
        results.append({"name": name, "ms": ms, "unit": unit, "value": value})

    def gbps(nbytes, ms):
        return nbytes / (ms * 1e-3) / 1e9

    with torch.inference_mode():
        if want("copy_GBps(read+write)"):
            x = torch.randn(1 << 28, device=dev)
            y = torch.empty_like(x)
            ms = time_ms(lambda: y.copy_(x))
            put("copy_GBps(read+write)", ms, "GB/s", gbps(2 * x.numel() * 4, ms))
            del x, y
        for n in (4096, 8192):
            for kind, dt in (("fp32", torch.float32), ("tf32", torch.float32),
                             ("bf16", torch.bfloat16), ("fp16", torch.float16)):
                name = f"matmul_{n}_{kind}_TFLOPs"
                if not want(name):
                    continue
                torch.backends.cuda.matmul.allow_tf32 = kind == "tf32"
                a = torch.randn(n, n, device=dev, dtype=dt)
                b = torch.randn(n, n, device=dev, dtype=dt)
                ms = time_ms(lambda: a @ b, reps=max(3, args.reps // 3))
                put(name, ms, "TFLOP/s", 2 * n**3 / (ms * 1e-3) / 1e12)
        torch.backends.cuda.matmul.allow_tf32 = False
        n = 1 << 26
        if want("add_64M_GBps") or want("chain6_64M_eager_ms"):
            a, b, c = (torch.randn(n, device=dev) for _ in range(3))
            if want("add_64M_GBps"):
                ms = time_ms(lambda: a + b)
                put("add_64M_GBps", ms, "GB/s", gbps(3 * n * 4, ms))
            if want("chain6_64M_eager_ms"):
                ms = time_ms(lambda: F.gelu(a * b + c).exp().mul(0.5).add(a).tanh())
                put("chain6_64M_eager_ms", ms, "ms", ms)
            del a, b, c
        if want("tiny_add_us_per_op_eager"):
            t = torch.randn(16, device=dev)

            def tiny():
                z = t
                for _ in range(100):
                    z = z + 1.0
                return z

            ms = time_ms(tiny)
            put("tiny_add_us_per_op_eager", ms, "us/op", ms * 1000 / 100)
            # PyTorch's eager path is what its users write: the same figure for ember's
            # Tensor<Dispatch> row.
            put("tiny_add_us_per_op_tensor", ms, "us/op", ms * 1000 / 100)
        if want("tiny_add_host_us_per_op"):
            z = torch.randn(16, device=dev)
            torch.cuda.synchronize()
            us = []
            for _ in range(5):
                t0 = time.perf_counter()
                for _ in range(10000):
                    z = z + 1.0
                us.append((time.perf_counter() - t0) * 1e6 / 10000)
                torch.cuda.synchronize()
            us.sort()
            put("tiny_add_host_us_per_op", us[2] * 1e-3, "us/op", us[2])
        if want("softmax_8192x4096_ms"):
            m = torch.randn(8192, 4096, device=dev)
            ms = time_ms(lambda: torch.softmax(m, -1))
            put("softmax_8192x4096_ms", ms, "ms", ms)
        if want("layernorm_8192x4096_ms"):
            m = torch.randn(8192, 4096, device=dev)
            g, b = torch.ones(4096, device=dev), torch.zeros(4096, device=dev)
            ms = time_ms(lambda: F.layer_norm(m, (4096,), g, b))
            put("layernorm_8192x4096_ms", ms, "ms", ms)
        if want("sum_256M_ms"):
            x = torch.randn(1 << 28, device=dev)
            ms = time_ms(lambda: x.sum())
            put("sum_256M_ms", ms, "ms", ms)

    # conv2d: x [64, 128, 56, 56], w [128, 128, 3, 3], padding 1, no bias (ember's conv has
    # none), cuDNN's defaults (torch.backends.cudnn.benchmark off); strict f32 with
    # cudnn.allow_tf32 off, TF32 with it on (PyTorch's default). Forward under no_grad;
    # forward + backward takes both gradients for an upstream gradient, three times the flop.
    conv_flops = 2 * 64 * 128 * 56 * 56 * 128 * 9
    for kind in ("fp32", "tf32"):
        fwd = f"conv2d_64x128x56x56_k3_{kind}_TFLOPs"
        both = f"conv2d_64x128x56x56_k3_{kind}_fwdbwd_TFLOPs"
        if not (want(fwd) or want(both)):
            continue
        torch.backends.cudnn.allow_tf32 = kind == "tf32"
        xc = torch.randn(64, 128, 56, 56, device=dev, requires_grad=True)
        wc = torch.randn(128, 128, 3, 3, device=dev, requires_grad=True)
        if want(fwd):
            def conv_fwd():
                with torch.no_grad():
                    return F.conv2d(xc, wc, padding=1)

            ms = time_ms(conv_fwd)
            put(fwd, ms, "TFLOP/s", conv_flops / (ms * 1e-3) / 1e12)
        if want(both):
            gy = torch.randn(64, 128, 56, 56, device=dev)

            def conv_fwd_bwd():
                y = F.conv2d(xc, wc, padding=1)
                return torch.autograd.grad(y, (xc, wc), gy)

            ms = time_ms(conv_fwd_bwd)
            put(both, ms, "TFLOP/s", 3 * conv_flops / (ms * 1e-3) / 1e12)
        del xc, wc
    torch.backends.cudnn.allow_tf32 = True

    report = {"peer": "torch", "torch": torch.__version__,
              "gpu": torch.cuda.get_device_name(0), "results": results}
    if args.out:
        with open(args.out, "w") as f:
            json.dump(report, f, indent=1)
    else:
        json.dump(report, sys.stdout, indent=1)


if __name__ == "__main__":
    main()
