#!/usr/bin/python3
"""The PyTorch peer of bench/cpu_bench.cpp: the same ops, sizes and names ("<op>/<size>"),
timed in this process, printed (or written) as JSON for bench/merge_bench.py.

Run by scripts/bench.sh cpu with Debian's python3-torch (/usr/bin/python3):
    /usr/bin/python3 bench/peer_torch_cpu.py --threads 2 [--reps 7] [--min-time 0.2] [--out F]
and, with --serve, by cpu_bench --paired_torch for its paired rows (serve() below).

Each op is warmed up, then timed `reps` times; one sample runs the op back to back until it
has taken at least `min_time` seconds and counts the mean of that batch. The reported time is
the median of the samples, as Google Benchmark's median aggregate is for ember. Every op
returns a new tensor, like ember's, and runs under torch.inference_mode() (no autograd
bookkeeping; ember's CPU backend has none either).
"""
import argparse
import json
import math
import platform
import statistics
import sys
import time

import torch

TINY = 16
ELEMS = 16 << 20
SUM_ELEMS = 64 << 20
SOFTMAX_ROWS, SOFTMAX_COLS = 4096, 1024
SQUARE = 4096
# matmul: (name, m, k, n, a stored transposed, b stored transposed); as bench/cpu_bench.h
MATMUL_SIZES = (("256", 256, 256, 256, False, False), ("512", 512, 512, 512, False, False),
                ("1024", 1024, 1024, 1024, False, False), ("2048", 2048, 2048, 2048, False, False),
                ("train_fwd_64x784x256", 64, 784, 256, False, False),
                ("train_wgrad_784x64x256_ta", 784, 64, 256, True, False),
                ("train_dgrad_64x256x784_tb", 64, 256, 784, False, True))
# conv2d: (name, n, c_in, c_out, hw, k), stride 1, padding (k - 1) // 2; as bench/cpu_bench.h
CONV2D_SIZES = (("resnet_3x3_8x64x56x56", 8, 64, 64, 56, 3),
                ("cifar_3x3_32x3x32x32", 32, 3, 32, 32, 3),
                ("resnet_1x1_8x64x56x56_to256", 8, 64, 256, 56, 1),
                ("resnet_1x1_1x64x56x56_to256", 1, 64, 256, 56, 1),
                ("cifar_3x3_32x32x32x32", 32, 32, 32, 32, 3),
                ("small_3x3_64x16x28x28", 64, 16, 16, 28, 3))
POOL_N, POOL_C, POOL_HW = 8, 64, 112  # max_pool2d 3x3, stride 2, padding 1
# depthwise conv2d: (name, n, c, hw, k, stride), groups c, padding k // 2; as bench/cpu_bench.h
DEPTHWISE_SIZES = (("8x64x56x56_k3", 8, 64, 56, 3, 1), ("8x96x56x56_k5s2", 8, 96, 56, 5, 2),
                   ("8x672x14x14_k5s2", 8, 672, 14, 5, 2))
# attention: (name, heads, len, d, causal), q = k = v shapes; as bench/cpu_bench.h
ATTENTION_SIZES = (("8x512x64", 8, 512, 64, False),
                   ("8x1024x64_causal", 8, 1024, 64, True))


def uniform(*shape):
    return torch.empty(*shape, dtype=torch.float32).uniform_(-1, 1)


def cases():
    """(name, make) pairs; make() builds the inputs and returns the op to time."""

    def add(n):
        a, b = uniform(n), uniform(n)
        return lambda: torch.add(a, b)

    def exp():
        x = uniform(ELEMS)
        return lambda: torch.exp(x)

    def unary(f):
        x = uniform(ELEMS)
        return lambda: f(x)

    def pow_():
        x, y = uniform(ELEMS).abs() + 0.01, uniform(ELEMS) * 3.0
        return lambda: torch.pow(x, y)

    def total():
        x = uniform(SUM_ELEMS)
        return lambda: torch.sum(x)

    def sum_dim():
        x = uniform(SQUARE, SQUARE)
        return lambda: torch.sum(x, dim=1, keepdim=True)

    def layer_norm():
        x = torch.randn(SOFTMAX_ROWS, SOFTMAX_COLS)
        w, b = uniform(SOFTMAX_COLS), uniform(SOFTMAX_COLS)
        return lambda: torch.nn.functional.layer_norm(x, (SOFTMAX_COLS,), w, b, 1e-5)

    def softmax():
        x = torch.randn(SOFTMAX_ROWS, SOFTMAX_COLS)
        return lambda: torch.softmax(x, dim=1)

    def transpose_copy():
        x = uniform(SQUARE, SQUARE)
        return lambda: x.t().contiguous()

    def matmul(m, k, n, ta, tb, dtype=torch.float32):
        a = uniform(k, m).t() if ta else uniform(m, k)
        b = uniform(n, k).t() if tb else uniform(k, n)
        a, b = a.to(dtype), b.to(dtype)
        return lambda: torch.matmul(a, b)

    def conv2d(n, c_in, c_out, hw, k):
        x, w = uniform(n, c_in, hw, hw), uniform(c_out, c_in, k, k)
        return lambda: torch.nn.functional.conv2d(x, w, None, 1, (k - 1) // 2)

    def max_pool2d():
        x = uniform(POOL_N, POOL_C, POOL_HW, POOL_HW)
        return lambda: torch.nn.functional.max_pool2d(x, 3, 2, 1)

    def depthwise_conv2d(n, c, hw, k, stride):
        x, w = uniform(n, c, hw, hw), uniform(c, 1, k, k)
        return lambda: torch.nn.functional.conv2d(x, w, None, stride, k // 2, 1, c)

    def attention(heads, n, d, causal):
        # torch 1.13 has no scaled_dot_product_attention: the same math as three ops
        q, k, v = uniform(heads, n, d), uniform(heads, n, d), uniform(heads, n, d)
        scale = 1 / math.sqrt(d)
        mask = torch.ones(n, n, dtype=torch.bool).triu(1) if causal else None

        def run():
            s = torch.matmul(q, k.transpose(-1, -2)) * scale
            if mask is not None:
                s = s.masked_fill(mask, -math.inf)
            return torch.matmul(torch.softmax(s, dim=-1), v)
        return run

    sq = f"{SQUARE}x{SQUARE}"
    yield f"add/{TINY}", lambda: add(TINY)
    yield f"add/{ELEMS >> 20}M", lambda: add(ELEMS)
    yield f"exp/{ELEMS >> 20}M", exp
    yield f"gelu/{ELEMS >> 20}M", lambda: unary(torch.nn.functional.gelu)
    yield f"erf/{ELEMS >> 20}M", lambda: unary(torch.erf)
    yield f"sin100x/{ELEMS >> 20}M", lambda: unary(lambda x: torch.sin(x * 100.0))
    yield f"log1p/{ELEMS >> 20}M", lambda: unary(torch.log1p)
    yield f"pow/{ELEMS >> 20}M", pow_
    yield f"sum/{SUM_ELEMS >> 20}M", total
    yield f"sum_dim/{sq}", sum_dim
    yield f"softmax/{SOFTMAX_ROWS}x{SOFTMAX_COLS}", softmax
    yield f"layer_norm/{SOFTMAX_ROWS}x{SOFTMAX_COLS}", layer_norm
    yield f"transpose_copy/{sq}", transpose_copy
    yield f"max_pool2d/{POOL_N}x{POOL_C}x{POOL_HW}x{POOL_HW}_k3s2", max_pool2d
    for name, *size in DEPTHWISE_SIZES:
        yield f"depthwise_conv2d/{name}", lambda size=size: depthwise_conv2d(*size)
    for name, *size in MATMUL_SIZES:
        yield f"matmul/{name}", lambda size=size: matmul(*size)
    for name, *size in MATMUL_SIZES:
        yield f"matmul_bf16/{name}", lambda size=size: matmul(*size, dtype=torch.bfloat16)
    for name, *size in CONV2D_SIZES:
        yield f"conv2d/{name}", lambda size=size: conv2d(*size)
    for name, *size in ATTENTION_SIZES:
        yield f"attention/{name}", lambda size=size: attention(*size)


def time_op(fn, reps, min_time):
    """Median seconds per call, and the batch size used."""
    clock = time.perf_counter
    start, calls = clock(), 0
    while calls < 3 or clock() - start < min_time:  # warm-up, and a first estimate
        fn()
        calls += 1
    per_call = (clock() - start) / calls
    batch = max(1, math.ceil(min_time / per_call))
    samples = []
    for _ in range(reps):
        t0 = clock()
        for _ in range(batch):
            fn()
        samples.append((clock() - t0) / batch)
    return statistics.median(samples), samples, batch


def serve():
    """Answers requests on stdin, one a line, for bench/cpu_paired.cpp's paired rows:
    "has NAME" -> "1" or "0"; "run NAME BATCH_MS GAP_MS" -> the median ms of one batch of NAME,
    run as cpu_paired.cpp runs ember's: GAP_MS idle, one untimed call, then calls timed one by
    one until there are 3 or more and BATCH_MS have passed. An op's inputs are made on its first
    run and kept until another op runs."""
    makers = dict(cases())
    current, fn = None, None
    clock = time.perf_counter
    for line in sys.stdin:
        words = line.split()
        if len(words) == 2 and words[0] == "has":
            print("1" if words[1] in makers else "0", flush=True)
        elif len(words) == 4 and words[0] == "run" and words[1] in makers:
            name, batch_ms, gap_ms = words[1], float(words[2]), float(words[3])
            if name != current:
                fn = None  # the previous op's inputs freed before the next one's are made
                fn, current = makers[name](), name
            time.sleep(gap_ms / 1e3)
            fn()
            samples, start = [], clock()
            while len(samples) < 3 or (clock() - start) * 1e3 < batch_ms:
                t0 = clock()
                fn()
                samples.append((clock() - t0) * 1e3)
            print(f"{statistics.median(samples):.6g}", flush=True)
        else:
            print(f"error: {line.strip()!r}: 'has NAME' or 'run NAME BATCH_MS GAP_MS' expected",
                  flush=True)


def write_report(results, out):
    """Writes the peer report merge_bench.py reads (to `out`, or stdout when None)."""
    report = {"peer": "torch", "version": torch.__version__, "threads": torch.get_num_threads(),
              "python": platform.python_version(), "results": results}
    text = json.dumps(report, indent=1)
    if out:
        with open(out, "w") as f:
            f.write(text + "\n")
    else:
        print(text)


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--threads", type=int, required=True)
    p.add_argument("--reps", type=int, default=7)
    p.add_argument("--min-time", type=float, default=0.2, help="seconds per sample")
    p.add_argument("--filter", default="", help="only names containing this")
    p.add_argument("--out", help="write JSON here instead of stdout")
    p.add_argument("--serve", action="store_true",
                   help="time batches asked for on stdin (cpu_bench --paired_torch)")
    args = p.parse_args()

    torch.set_num_threads(args.threads)
    torch.manual_seed(0)
    # glibc serves an allocation of its mmap threshold or more by mmap, and raises the threshold
    # to the size of each such block freed (up to 32 MiB): until a larger block has been freed,
    # every output of the same size is a fresh mapping, its pages faulted in on every call (3 ->
    # 32 on 32x32, a 4 MiB output, took 3.2 ms against 0.41 after a larger op had run; the 1x1
    # conv's 25.7 MB output 21-26 ms against 5.9-6.8). A block of 31 MiB made and dropped here
    # leaves every op in the state of a process that has run for a while.
    torch.empty(31 << 18)
    if args.serve:
        with torch.inference_mode():
            serve()
        return
    results = []
    with torch.inference_mode():
        for name, make in cases():
            if args.filter not in name:
                continue
            fn = make()
            median, samples, batch = time_op(fn, args.reps, args.min_time)
            del fn
            results.append({"name": name, "ms": median * 1e3,
                            "samples_ms": [s * 1e3 for s in samples], "batch": batch})
            print(f"peer_torch_cpu: {name}: {median * 1e3:.4g} ms", file=sys.stderr)
    write_report(results, args.out)

if __name__ == "__main__":
    main()
