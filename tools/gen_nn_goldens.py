#!/usr/bin/env python3
"""Writes tests/nn/layer_goldens.json: PyTorch's outputs and gradients for ember's layers.

Run with Debian's python3-torch:  /usr/bin/python3 tools/gen_nn_goldens.py
Each case names a key; tests/nn/layer_test.cpp maps the key to the ember layer.
"""
import os
import sys

import torch
import torch.nn as tnn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from nn_golden_lib import Cases, same, transposed  # noqa: E402

torch.manual_seed(0)
C = Cases()


def rnd(*s, lo=-2.0, hi=2.0):
    return torch.rand(s) * (hi - lo) + lo


# ---- Linear: weight stored [in, out] in ember ---------------------------------------------
for tag, bias, shape in [("2d", True, (5, 4)), ("3d", True, (2, 3, 4)), ("nobias", False, (5, 4))]:
    m = tnn.Linear(4, 3, bias=bias)
    params = [("weight", m.weight, transposed)] + ([("bias", m.bias, same)] if bias else [])
    C.add("linear", {"d_input": 4, "d_output": 3, "bias": bias}, params, [rnd(*shape)],
          m, tag=tag)

# ---- Embedding -----------------------------------------------------------------------------
m = tnn.Embedding(10, 4)
C.add("embedding", {"n_embedding": 10, "d_model": 4}, [("weight", m.weight, same)],
      [torch.tensor([[1, 3, 9], [0, 3, 3]])], m)

# ---- norms ---------------------------------------------------------------------------------
def affine_params(m, names=("gamma", "beta")):
    return [(names[0], m.weight, same), (names[1], m.bias, same)]


m = tnn.LayerNorm(6)
with torch.no_grad():
    m.weight.uniform_(0.5, 1.5)
    m.bias.uniform_(-0.5, 0.5)
C.add("layer_norm", {"d_model": 6}, affine_params(m), [rnd(2, 3, 6)], m)

g = torch.rand(6) + 0.5


def rms(x, g=g):
    return x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-5) * g


gl = g.clone().requires_grad_(True)
C.add("rms_norm", {"d_model": 6}, [("gamma", gl, same)], [rnd(2, 3, 6)],
      lambda x: rms(x, gl))

m = tnn.GroupNorm(2, 6)
with torch.no_grad():
    m.weight.uniform_(0.5, 1.5)
    m.bias.uniform_(-0.5, 0.5)
C.add("group_norm", {"num_groups": 2, "num_channels": 6}, affine_params(m), [rnd(2, 6, 3, 2)], m)
C.add("group_norm", {"num_groups": 3, "num_channels": 6, "affine": False}, [], [rnd(2, 6, 5)],
      tnn.GroupNorm(3, 6, affine=False), tag="no_affine")
m6 = tnn.InstanceNorm2d(6, affine=True)
with torch.no_grad():
    m6.weight.uniform_(0.5, 1.5)
    m6.bias.uniform_(-0.5, 0.5)
C.add("instance_norm", {"num_channels": 6}, affine_params(m6), [rnd(2, 6, 3, 3)], m6)

for tag, shape in [("2d", (4, 3)), ("4d", (2, 3, 4, 5))]:
    bn = tnn.BatchNorm2d(3) if len(shape) == 4 else tnn.BatchNorm1d(3)
    with torch.no_grad():
        bn.weight.uniform_(0.5, 1.5)
        bn.bias.uniform_(-0.5, 0.5)
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    bufs = [("running_mean", lambda bn=bn: bn.running_mean.clone()),
            ("running_var", lambda bn=bn: bn.running_var.clone())]
    bn.train()
    C.add("batch_norm_train", {"num_features": 3}, affine_params(bn), [rnd(*shape)], bn,
          tag=tag, buffers=bufs)
    bn.eval()
    C.add("batch_norm_eval", {"num_features": 3}, affine_params(bn), [rnd(*shape)], bn,
          tag=tag, buffers=bufs, grads=False)

# ---- PReLU, pixel shuffle ------------------------------------------------------------------
m = tnn.PReLU(3)
with torch.no_grad():
    m.weight.uniform_(0.1, 0.5)
C.add("prelu", {"num_parameters": 3}, [("weight", m.weight, same)], [rnd(2, 3, 4)], m)
C.add("pixel_shuffle", {"factor": 2}, [], [rnd(2, 8, 3, 2)], tnn.PixelShuffle(2))
C.add("pixel_unshuffle", {"factor": 2}, [], [rnd(2, 2, 4, 6)], tnn.PixelUnshuffle(2))

C.write(os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "layer_goldens.json"))
