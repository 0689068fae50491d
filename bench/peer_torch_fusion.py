"""PyTorch's side of scripts/bench.sh fusion: the 6-op chain and the training steps of
bench/fusion_bench.cpp, eager and under torch.compile, on one GPU (CUDA events, medians after
warm-up), with torch.compile's warm-up (first call minus a steady one)."""
import argparse, json, statistics, time
import torch, torch.nn as nn, torch.nn.functional as F

ap = argparse.ArgumentParser()
ap.add_argument("--reps", type=int, default=30)
ap.add_argument("--out", required=True)
args = ap.parse_args()
dev = "cuda"
torch.manual_seed(0)
res = {"torch": torch.__version__, "gpu": torch.cuda.get_device_name(0)}


def bench(fn, warm=5, reps=args.reps):
    for _ in range(warm):
        fn()
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record(); fn(); e.record(); torch.cuda.synchronize()
        ts.append(s.elapsed_time(e))
    return statistics.median(ts)


def put(k, v):
    res[k] = v
    print(f"{k:52s} {v}", flush=True)


def first_call_s(fn):
    torch.cuda.synchronize()
    t0 = time.time(); fn(); torch.cuda.synchronize()
    return time.time() - t0


N = 1 << 26
a, b, c = (torch.randn(N, device=dev) for _ in range(3))
def chain(a, b, c):
    return F.gelu(a * b + c).exp().mul(0.5).add(a).tanh()
put("chain6_64M_eager_ms", round(bench(lambda: chain(a, b, c)), 4))
cchain = torch.compile(chain)
first = first_call_s(lambda: cchain(a, b, c))
ms = bench(lambda: cchain(a, b, c))
put("chain6_64M_compiled_ms", round(ms, 4))
put("chain6_compile_warmup_s", round(first - ms / 1e3, 2))


def mlp():
    return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))


def cnn():  # examples/mnist/cnn.h
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 10))


def train(label, make, batch, compiled):
    model = make().to(dev)
    fwd = torch.compile(model) if compiled else model
    opt = torch.optim.Adam(model.parameters(), lr=1e-3)
    xb = torch.randn(batch, 1, 28, 28, device=dev)
    yb = torch.randint(0, 10, (batch,), device=dev)
    def step():
        opt.zero_grad(set_to_none=True)
        F.cross_entropy(fwd(xb), yb).backward()
        opt.step()
    first = first_call_s(step)
    ms = bench(step)
    kind = "compiled" if compiled else "eager"
    put(f"{label}_step_{kind}_ms", round(ms, 4))
    put(f"{label}_warmup_{kind}_s", round(first - ms / 1e3, 2))


for compiled in (False, True):
    train("mlp784_256_10_b64", mlp, 64, compiled)
    train("mlp784_256_10_b1024", mlp, 1024, compiled)
    train("cnn_fmnist_b256", cnn, 256, compiled)
# The transformer encoder layer of fusion_bench.cpp: bf16 autocast, f32 weights, AdamW.
def transformer(compiled):
    layer = nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True, norm_first=True).to(dev)
    fwd = torch.compile(layer) if compiled else layer
    xt = torch.randn(8, 512, 768, device=dev)
    topt = torch.optim.AdamW(layer.parameters(), lr=1e-4)
    def tstep():
        topt.zero_grad(set_to_none=True)
        with torch.autocast("cuda", dtype=torch.bfloat16):
            out = fwd(xt)
        out.float().pow(2).mean().backward()
        topt.step()
    first = first_call_s(tstep)
    ms = bench(tstep, reps=20)
    kind = "compiled" if compiled else "eager"
    put(f"transformer_layer768_b8_s512_bf16_step_{kind}_ms", round(ms, 4))
    put(f"transformer_layer768_b8_s512_bf16_warmup_{kind}_s", round(first - ms / 1e3, 2))


for compiled in (False, True):
    transformer(compiled)
json.dump(res, open(args.out, "w"), indent=1)
