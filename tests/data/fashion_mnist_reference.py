#!/usr/bin/env python3
"""Prints the Fashion-MNIST reference values that tests/data/mnist_test.cpp checks, read with
numpy from Debian's dataset-fashion-mnist files (run with Debian's python3 and python3-numpy)."""
import gzip

import numpy as np

DIR = "/usr/share/datasets/fashion-mnist/"


def load(prefix):
    with gzip.open(DIR + prefix + "-images-idx3-ubyte.gz") as f:
        images = np.frombuffer(f.read(), dtype=np.uint8, offset=16).reshape(-1, 28, 28)
    with gzip.open(DIR + prefix + "-labels-idx1-ubyte.gz") as f:
        labels = np.frombuffer(f.read(), dtype=np.uint8, offset=8)
    return images, labels


for prefix, indices in (("train", [0, 1, 12345, 59999]), ("t10k", [0, 4321, 9999])):
    images, labels = load(prefix)
    print(prefix, "items", len(labels), "per class", np.bincount(labels).tolist(),
          "pixel sum", int(images.astype(np.int64).sum()))
    for i in indices:
        im = images[i]
        print(f"  {i}: label {labels[i]} sum {int(im.astype(np.int64).sum())} "
              f"[14,14]={im[14, 14]} [10,5]={im[10, 5]} [27,27]={im[27, 27]}")
