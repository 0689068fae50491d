#!/usr/bin/python3
"""The PyTorch peer of the main job: the same Fashion-MNIST models and hyper-parameters as
examples/mnist (batch 64, Adam 1e-3, the same normalization), trained for N epochs on the
CPU (or, with --device cuda, on a GPU); writes seconds per training epoch and the test accuracy after each epoch as JSON.

    peer_torch_mnist.py --model cnn --epochs 3 --threads 2 --seed 42 --out bench/out/mnist.torch.cnn.42.json
"""
import argparse
import gzip
import json
import os
import struct
import time

import numpy as np
import torch
import torch.nn as nn

MEAN, STD = 0.2860, 0.3530


def read_idx(path):
    for p in (path, path + ".gz"):
        if os.path.exists(p):
            data = (gzip.open if p.endswith(".gz") else open)(p, "rb").read()
            break
    else:
        raise SystemExit("missing " + path)
    ndim = data[3]
    dims = struct.unpack(">" + "I" * ndim, data[4:4 + 4 * ndim])
    return np.frombuffer(data, dtype=np.uint8, offset=4 + 4 * ndim).reshape(dims)


def load(root, split):
    x = read_idx(os.path.join(root, split + "-images-idx3-ubyte"))
    y = read_idx(os.path.join(root, split + "-labels-idx1-ubyte"))
    x = (torch.tensor(x, dtype=torch.float32) / 255.0 - MEAN) / STD
    return x.unsqueeze(1), torch.tensor(y, dtype=torch.int64)


def model(kind):
    if kind == "mlp":
        return nn.Sequential(nn.Flatten(), nn.Linear(784, 256), nn.ReLU(), nn.Linear(256, 10))
    return nn.Sequential(nn.Conv2d(1, 8, 3), nn.ReLU(), nn.MaxPool2d(2), nn.Conv2d(8, 16, 3),
                         nn.ReLU(), nn.MaxPool2d(2), nn.Flatten(), nn.Linear(400, 10))


def train_epoch(net, opt, loader, dev):
    """One epoch of steps on `loader`'s batches (cross-entropy); returns the images seen."""
    lossf = nn.CrossEntropyLoss()
    images = 0
    for xb, yb in loader:
        xb, yb = xb.to(dev, non_blocking=True), yb.to(dev, non_blocking=True)
        opt.zero_grad()
        loss = lossf(net(xb), yb)
        loss.backward()
        opt.step()
        images += xb.shape[0]
    return images


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", default="cnn")
    ap.add_argument("--epochs", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--seed", type=int, default=42)
    ap.add_argument("--data", default=os.environ.get("EMBER_MNIST_DIR",
                                                      "/usr/share/datasets/fashion-mnist"))
    ap.add_argument("--device", default="cpu", help="cpu, or cuda for the GPU peer")
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    dev = torch.device(a.device)
    torch.set_num_threads(a.threads)
    torch.empty(31 << 18)  # glibc's mmap threshold raised, as in peer_torch_cpu.py
    torch.manual_seed(a.seed)
    xtr, ytr = load(a.data, "train")
    xte, yte = load(a.data, "t10k")
    net = model(a.model).to(dev)
    opt = torch.optim.Adam(net.parameters(), lr=1e-3)
    loader = torch.utils.data.DataLoader(torch.utils.data.TensorDataset(xtr, ytr),
                                         batch_size=64, shuffle=True)
    epochs = []
    for _ in range(a.epochs):
        net.train()
        t0 = time.perf_counter()
        train_epoch(net, opt, loader, dev)
        if dev.type == "cuda":
            torch.cuda.synchronize()
        secs = time.perf_counter() - t0
        net.eval()
        with torch.no_grad():
            acc = sum((net(xte[i:i + 1000].to(dev)).argmax(1).cpu() == yte[i:i + 1000]).sum().item()
                      for i in range(0, len(yte), 1000)) / len(yte)
        epochs.append({"seconds": secs, "test_accuracy": acc})
        print("torch %s epoch %d: %.2f s, test accuracy %.4f" % (a.model, len(epochs), secs, acc))
    with open(a.out, "w") as f:
        json.dump({"model": a.model, "device": a.device, "threads": a.threads, "seed": a.seed,
                   "epochs": epochs}, f)


if __name__ == "__main__":
    main()
