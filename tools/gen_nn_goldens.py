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

# ---- convolutions (PyTorch's weight layout) -------------------------------------------------
for n, (cin, cout, k, stride, pad, dil, groups, shape) in {
        "1d": (4, 6, [3], [2], [1], [1], 2, (2, 4, 9)),
        "2d": (3, 4, [3, 2], [1, 2], [1, 0], [2, 1], 1, (2, 3, 7, 6)),
        "2d_depthwise": (4, 4, [3, 3], [1, 1], [1, 1], [1, 1], 4, (1, 4, 5, 5)),
        "3d": (2, 3, [2, 2, 2], [1, 1, 1], [0, 1, 0], [1, 1, 1], 1, (1, 2, 3, 4, 3))}.items():
    rank = len(k)
    cls = [None, tnn.Conv1d, tnn.Conv2d, tnn.Conv3d][rank]
    m = cls(cin, cout, k, stride=stride, padding=pad, dilation=dil, groups=groups)
    C.add("conv%dd" % rank, {"channels": [cin, cout], "kernel_size": k, "stride": stride,
                             "padding": pad, "dilation": dil, "groups": groups},
          [("weight", m.weight, same), ("bias", m.bias, same)], [rnd(*shape)], m, tag=n)
m = tnn.Conv2d(3, 2, 3, padding="same", bias=False)
C.add("conv2d", {"channels": [3, 2], "kernel_size": [3, 3], "padding_mode": "same", "bias": False},
      [("weight", m.weight, same)], [rnd(1, 3, 5, 4)], m, tag="same")
for n, (cin, cout, k, stride, pad, opad, dil, groups, shape) in {
        "1d": (4, 2, [3], [2], [1], [1], [1], 2, (2, 4, 5)),
        "2d": (3, 4, [3, 2], [2, 1], [1, 0], [1, 0], [1, 2], 1, (2, 3, 4, 3))}.items():
    rank = len(k)
    cls = [None, tnn.ConvTranspose1d, tnn.ConvTranspose2d][rank]
    m = cls(cin, cout, k, stride=stride, padding=pad, output_padding=opad, dilation=dil,
            groups=groups)
    C.add("conv_transpose%dd" % rank,
          {"channels": [cin, cout], "kernel_size": k, "stride": stride, "padding": pad,
           "padding_out": opad, "dilation": dil, "groups": groups},
          [("weight", m.weight, same), ("bias", m.bias, same)], [rnd(*shape)], m, tag=n)

# ---- pooling, interpolation, unfold/fold -------------------------------------------------
C.add("max_pool2d", {"kernel_size": [3, 2], "stride": [2, 1], "padding": [1, 0]}, [],
      [rnd(2, 3, 7, 5)], tnn.MaxPool2d((3, 2), stride=(2, 1), padding=(1, 0)))
C.add("max_pool1d", {"kernel_size": [2], "ceil_mode": True}, [], [rnd(2, 3, 7)],
      tnn.MaxPool1d(2, ceil_mode=True))
C.add("avg_pool2d", {"kernel_size": [2, 2], "padding": [1, 1], "count_include_pad": False}, [],
      [rnd(2, 3, 5, 4)], tnn.AvgPool2d(2, padding=1, count_include_pad=False))
C.add("avg_pool1d", {"kernel_size": [3], "stride": [2]}, [], [rnd(2, 3, 8)],
      tnn.AvgPool1d(3, stride=2))
C.add("adaptive_avg_pool2d", {"output_size": [3, 2]}, [], [rnd(2, 3, 7, 5)],
      tnn.AdaptiveAvgPool2d((3, 2)))
C.add("adaptive_avg_pool1d", {"output_size": [4]}, [], [rnd(2, 3, 9)], tnn.AdaptiveAvgPool1d(4))
for mode, ac in [("nearest", None), ("bilinear", False), ("bilinear", True), ("bicubic", False)]:
    ember_mode = {"nearest": "nearest", "bilinear": "linear", "bicubic": "cubic"}[mode]
    cfg = {"output_size": [7, 5], "mode": ember_mode}
    if ac is not None:
        cfg["align_corners"] = ac
    C.add("interpolate", cfg, [], [rnd(1, 2, 4, 3)],
          lambda x, mode=mode, ac=ac: F.interpolate(x, size=(7, 5), mode=mode, align_corners=ac),
          tag=mode + ("_ac" if ac else ""))
C.add("unfold", {"kernel_size": [2, 3], "stride": [1, 2], "padding": [1, 0], "dilation": [1, 1]},
      [], [rnd(2, 3, 4, 5)], tnn.Unfold((2, 3), stride=(1, 2), padding=(1, 0)))
C.add("fold", {"output_size": [4, 5], "kernel_size": [2, 2], "stride": [1, 1], "padding": [0, 0],
               "dilation": [1, 1]}, [], [rnd(2, 12, 12)], tnn.Fold((4, 5), (2, 2)))

# ---- API breadth: norm and embedding options (appended: the cases above keep their inputs) --
flat = lambda t: t.reshape(-1)  # noqa: E731  (ember keeps a multi-dim gamma flattened)
m = tnn.LayerNorm((3, 4))
with torch.no_grad():
    m.weight.uniform_(0.5, 1.5)
    m.bias.uniform_(-0.5, 0.5)
C.add("layer_norm", {"normalized_shape": [3, 4]}, [("gamma", m.weight, flat), ("beta", m.bias, flat)],
      [rnd(2, 3, 4)], m, tag="two_dims")
C.add("layer_norm", {"d_model": 5, "elementwise_affine": False}, [], [rnd(2, 3, 5)],
      tnn.LayerNorm(5, elementwise_affine=False), tag="no_affine")
w_nb = (torch.rand(5) + 0.5).requires_grad_(True)
C.add("layer_norm", {"d_model": 5, "bias": False}, [("gamma", w_nb, same)], [rnd(2, 3, 5)],
      lambda x: F.layer_norm(x, (5,), w_nb, None), tag="no_bias")
for tag, shape in [("no_affine_2d", (4, 3)), ("no_affine_4d", (2, 3, 4, 5))]:
    bn = tnn.BatchNorm2d(3, affine=False) if len(shape) == 4 else tnn.BatchNorm1d(3, affine=False)
    with torch.no_grad():
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    bufs = [("running_mean", lambda bn=bn: bn.running_mean.clone()),
            ("running_var", lambda bn=bn: bn.running_var.clone())]
    C.add("batch_norm_train", {"num_features": 3, "affine": False}, [], [rnd(*shape)], bn,
          tag=tag, buffers=bufs)
C.add("rms_norm", {"d_model": 6, "elementwise_affine": False}, [], [rnd(2, 3, 6)],
      lambda x: rms(x, torch.ones(6)), tag="no_affine")
m = tnn.Embedding(10, 4, padding_idx=3)
C.add("embedding", {"n_embedding": 10, "d_model": 4, "padding_idx": 3}, [("weight", m.weight, same)],
      [torch.tensor([[1, 3, 9], [0, 3, 3]])], m, tag="padding_idx")
m = tnn.Embedding(10, 4, max_norm=1.5)
with torch.no_grad():
    m.weight.mul_(1.5)
C.add("embedding", {"n_embedding": 10, "d_model": 4, "max_norm": 1.5}, [("weight", m.weight, same)],
      [torch.tensor([[1, 3, 9], [0, 5, 3]])], m, tag="max_norm")
m = tnn.Embedding(10, 4, max_norm=2.0, norm_type=1.0)
C.add("embedding", {"n_embedding": 10, "d_model": 4, "max_norm": 2.0, "max_norm_p": 1.0},
      [("weight", m.weight, same)], [torch.tensor([[2, 4], [6, 8]])], m, tag="max_norm_p1")

for key, nd, fill, pad, shape in [("conv2d", 2, "reflect", [1, 2], (2, 3, 5, 6)),
                                  ("conv2d", 2, "replicate", [2, 1], (1, 3, 4, 4)),
                                  ("conv1d", 1, "circular", [2], (2, 3, 7))]:
    k = [3] * nd
    m = (tnn.Conv2d if nd == 2 else tnn.Conv1d)(3, 4, k, padding=pad, padding_mode=fill)
    C.add(key, {"channels": [3, 4], "kernel_size": k, "padding": pad, "padding_fill": fill},
          [("weight", m.weight, same), ("bias", m.bias, same)], [rnd(*shape)], m, tag=fill)

C.write(os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "layer_goldens.json"))
