#!/usr/bin/env python3
"""Writes tests/ops/goldens.json: inputs and PyTorch's outputs for ember's op suite.

Run with Debian's python3-torch:  /usr/bin/python3 tools/gen_goldens.py
Each case names an op key; tests/ops/golden_cases.cpp maps the key to the ember call.
"""
import json
import math
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from golden_cases_lib import *  # noqa: E402,F401,F403  (In, I, Bo, case, CASES, ...)
import gen_goldens_breadth  # noqa: E402

# ---- elementwise: each on a plain, a non-contiguous, a rank-0 and a zero-size input -------
def unary(key, fn, lo=-2.0, hi=2.0, dtype="f32", **tol):  # noqa: C901
    case(key, lambda x: fn(x), [In(3, 4, dtype=dtype, lo=lo, hi=hi)], **tol)
    case(key, lambda x: fn(x), [In(2, 3, 4, dtype=dtype, lo=lo, hi=hi, layout="transposed")],
         tag="noncontig", **tol)
    case(key, lambda x: fn(x), [In(dtype=dtype, lo=lo, hi=hi)], tag="rank0", **tol)
    case(key, lambda x: fn(x), [In(0, 3, dtype=dtype, lo=lo, hi=hi)], tag="empty", **tol)


for key, fn, lo, hi in [
    ("neg", torch.neg, -2, 2), ("abs", torch.abs, -2, 2), ("sign", torch.sign, -2, 2),
    ("exp", torch.exp, -3, 3), ("expm1", torch.expm1, -3, 3), ("log", torch.log, 0.01, 5),
    ("log1p", torch.log1p, -0.9, 5), ("log2", torch.log2, 0.01, 5), ("sqrt", torch.sqrt, 0, 5), ("rsqrt", torch.rsqrt, 0.1, 5),
    ("recip", torch.reciprocal, 0.1, 5), ("sin", torch.sin, -4, 4), ("cos", torch.cos, -4, 4),
    ("tan", torch.tan, -1.4, 1.4), ("asin", torch.asin, -0.99, 0.99),
    ("acos", torch.acos, -0.99, 0.99), ("atan", torch.atan, -4, 4), ("sinh", torch.sinh, -3, 3),
    ("cosh", torch.cosh, -3, 3), ("tanh", torch.tanh, -3, 3), ("asinh", torch.asinh, -3, 3),
    ("acosh", torch.acosh, 1, 5), ("atanh", torch.atanh, -0.99, 0.99), ("erf", torch.erf, -3, 3),
    ("sigmoid", torch.sigmoid, -6, 6), ("floor", torch.floor, -5, 5), ("ceil", torch.ceil, -5, 5),
    ("round", torch.round, -5, 5), ("trunc", torch.trunc, -5, 5),
    ("square", torch.square, -3, 3)]:
    unary(key, fn, lo, hi, fd=key not in ("floor", "ceil", "round", "trunc", "sign"))
case("round", torch.round, [In(6, values=[0.5, 1.5, 2.5, -0.5, -1.5, 2.4])], tag="half_even", fd=False)
case("is_nan", torch.isnan, [In(5, values=[0.0, float("nan"), float("inf"), -1.0, float("nan")])])
case("is_inf", torch.isinf, [In(5, values=[0.0, float("nan"), float("inf"), -1.0, float("-inf")])])
case("exp", torch.exp, [In(4, 5, dtype="f64", lo=-3, hi=3)], tag="f64", rtol=1e-12)
case("exp", torch.exp, [In(4, 5, dtype="f16", lo=-3, hi=3)], tag="f16", rtol=1e-3, atol=1e-3)
case("exp", torch.exp, [In(4, 5, dtype="bf16", lo=-3, hi=3)], tag="bf16", rtol=1e-2, atol=1e-2)
case("neg", torch.neg, [I(3, 4)], tag="i64")
case("abs", torch.abs, [I(3, 4, dtype="i32")], tag="i32")
case("sign", torch.sign, [I(3, 4, dtype="i8")], tag="i8")
case("bitwise_not", torch.bitwise_not, [I(3, 4)])
case("bool_not", torch.logical_not, [Bo(3, 4)])


def binary(key, fn, a=(-2, 2), b=(-2, 2), dtype="f32", **tol):
    case(key, fn, [In(3, 4, dtype=dtype, lo=a[0], hi=a[1]), In(3, 4, dtype=dtype, lo=b[0], hi=b[1])], **tol)
    case(key, fn, [In(2, 3, 4, dtype=dtype, lo=a[0], hi=a[1]), In(1, 3, 1, dtype=dtype, lo=b[0], hi=b[1])],
         tag="broadcast", **tol)
    case(key, fn, [In(2, 4, 3, dtype=dtype, lo=a[0], hi=a[1], layout="transposed"),
                   In(2, 4, 3, dtype=dtype, lo=b[0], hi=b[1])], tag="noncontig", **tol)
    case(key, fn, [In(0, 4, dtype=dtype, lo=a[0], hi=a[1]), In(1, 4, dtype=dtype, lo=b[0], hi=b[1])],
         tag="empty", **tol)


binary("add", torch.add)
binary("sub", torch.sub)
binary("mul", torch.mul)
binary("div", torch.div, b=(0.5, 3))
binary("remainder", torch.remainder, a=(-5, 5), b=(0.5, 3), fd=False)
binary("pow", torch.pow, a=(0.1, 3), b=(-2, 2))
binary("max_pair", torch.maximum)
binary("min_pair", torch.minimum)
binary("atan2", torch.atan2)
case("add", torch.add, [In(3, 4, dtype="f16"), In(3, 4, dtype="f16")], tag="f16", rtol=1e-3, atol=1e-3)
case("add", torch.add, [I(3, 4, dtype="i32"), I(3, 4, dtype="i32")], tag="i32")
case("mul", torch.mul, [I(3, 4, dtype="u8", lo=0, hi=40), I(3, 4, dtype="u8", lo=0, hi=40)], tag="u8_wrap")
case("div", lambda a, b: torch.div(a, b, rounding_mode="trunc"), [I(3, 4, lo=-20, hi=20), I(3, 4, lo=1, hi=6)], tag="i64_trunc")
case("remainder", torch.remainder, [I(3, 4, lo=-20, hi=20), I(3, 4, lo=1, hi=6)], tag="i64")
case("remainder", torch.remainder, [I(3, 4, lo=-20, hi=20), I(3, 4, lo=-6, hi=-1)], tag="i64_negdiv")
case("pow", torch.pow, [I(3, 4, lo=-3, hi=3), I(3, 4, lo=0, hi=5)], tag="i64")
case("max_pair", torch.maximum, [I(3, 4), I(3, 4)], tag="i64")
for key, fn in [("bitwise_and", torch.bitwise_and), ("bitwise_or", torch.bitwise_or),
                ("bitwise_xor", torch.bitwise_xor)]:
    case(key, fn, [I(3, 4, lo=-50, hi=50), I(3, 4, lo=-50, hi=50)])
case("bitwise_left_shift", torch.bitwise_left_shift, [I(3, 4, lo=-50, hi=50), I(3, 4, lo=0, hi=6)])
case("bitwise_right_shift", torch.bitwise_right_shift, [I(3, 4, lo=-50, hi=50), I(3, 4, lo=0, hi=6)])
for key, fn in [("bool_and", torch.logical_and), ("bool_or", torch.logical_or),
                ("bool_xor", torch.logical_xor)]:
    case(key, fn, [Bo(3, 4), Bo(3, 4)])
case("add_scalar", lambda x, s: x + s, [In(3, 4)], {"s": 1.5})
case("sub_scalar", lambda x, s: x - s, [In(3, 4)], {"s": 1.5})
case("mul_scalar", lambda x, s: x * s, [In(3, 4)], {"s": -2.5})
case("div_scalar", lambda x, s: x / s, [In(3, 4)], {"s": 4.0})
case("rsub_scalar", lambda x, s: s - x, [In(3, 4)], {"s": 1.0})
case("rdiv_scalar", lambda x, s: s / x, [In(3, 4, lo=0.5, hi=2)], {"s": 3.0})
case("pow_scalar", lambda x, s: x ** s, [In(3, 4, lo=0.1, hi=3)], {"s": 2.5})
case("powi_scalar", lambda x, s: x ** s, [In(3, 4)], {"s": 3})
case("clamp", lambda x, lo, hi: x.clamp(lo, hi), [In(3, 4)], {"lo": -0.5, "hi": 0.75})
case("clamp_min", lambda x, lo: x.clamp(min=lo), [In(3, 4)], {"lo": 0.0})
case("clamp_max", lambda x, hi: x.clamp(max=hi), [In(3, 4)], {"hi": 0.0})
case("add_scalar", lambda x, s: x + s, [I(3, 4)], {"s": 7}, tag="i64")
case("bitwise_and_scalar", lambda x, s: x & s, [I(3, 4, lo=-50, hi=50)], {"s": 12})
case("bitwise_left_shift_scalar", lambda x, s: x << s, [I(3, 4, lo=-50, hi=50)], {"s": 2})

for key, fn in [("equal", torch.eq), ("not_equal", torch.ne), ("greater", torch.gt),
                ("greater_equal", torch.ge), ("lower", torch.lt), ("lower_equal", torch.le)]:
    case(key, fn, [In(3, 4, values=[float(v % 3) for v in range(12)]),
                   In(3, 4, values=[float(v % 4) for v in range(12)])])
    case(key, fn, [I(2, 3, 4, lo=0, hi=3), I(1, 3, 1, lo=0, hi=3)], tag="broadcast_i64")
    case(key + "_elem", lambda x, s, fn=fn: fn(x, s), [In(3, 4, lo=-1, hi=1)], {"s": 0.25})
case("where", torch.where, [Bo(2, 3, 4), In(2, 3, 4), In(1, 3, 1)])
case("where", torch.where, [Bo(3, 1), I(1, 4), I(3, 4)], tag="broadcast_i64")
# contiguous runs, with either side one broadcast value: the vector loops and their tails
# (the where key runs rank-3 tensors)
case("where", torch.where, [Bo(2, 5, 9), In(2, 5, 9), In(2, 5, 9)], tag="contiguous")
case("where", torch.where, [Bo(2, 5, 9), In(2, 5, 9), In(1, 1, 1)], tag="scalar_other")
case("where", torch.where, [Bo(2, 5, 9), In(1, 1, 1), In(2, 5, 9)], tag="scalar_self")
case("where", torch.where, [Bo(1, 1, 41), In(1, 1, 1), In(1, 1, 1)], tag="scalars")
case("where", torch.where, [Bo(1, 3, 11), In(1, 3, 11, dtype="f64"), In(1, 1, 1, dtype="f64")], tag="f64_scalar_other")
case("mask_fill", lambda x, m, v: x.masked_fill(m, v), [In(3, 4), Bo(3, 4)], {"v": -1.0})
case("mask_where", lambda x, m, v: torch.where(m, v, x), [In(3, 4), Bo(3, 4), In(3, 4)])
case("cast_i32", lambda x: x.to(torch.int32), [In(3, 4, lo=-10, hi=10)])
case("cast_f16", lambda x: x.to(torch.float16), [In(3, 4)], rtol=1e-3, atol=1e-3)
case("cast_bf16", lambda x: x.to(torch.bfloat16), [In(3, 4)], rtol=1e-2, atol=1e-2)
case("cast_f64", lambda x: x.to(torch.float64), [I(3, 4)])
case("cast_bool", lambda x: x.to(torch.bool), [I(3, 4, lo=-1, hi=1)])
case("cast_u8", lambda x: x.to(torch.uint8), [I(3, 4, lo=0, hi=255)])

# ---- reductions ---------------------------------------------------------------------
case("sum", lambda x: x.sum().reshape(1), [R3()])
case("sum", lambda x: x.sum().reshape(1), [In(0, 3)], tag="empty")
case("sum", lambda x: x.sum().reshape(1), [I(3, 4, 5)], tag="i64")
case("sum_dim", lambda x, dim: x.sum(dim, keepdim=True), [R3()], {"dim": 1})
case("sum_dim", lambda x, dim: x.sum(dim, keepdim=True), [R3(layout="transposed")], {"dim": -1}, tag="noncontig")
case("sum_dim", lambda x, dim: x.sum(dim, keepdim=True), [R3()], {"dim": 0}, tag="outer")
case("sum_dims", lambda x, dims: x.sum(dims, keepdim=True), [R3()], {"dims": [0, 2]})
case("mean", lambda x: x.mean().reshape(1), [R3()])
case("logsumexp", lambda x, dim: x.logsumexp(dim, keepdim=True), [R3(lo=-50, hi=50)], {"dim": 1})
case("logsumexp", lambda x, dim: x.logsumexp(dim, keepdim=True), [In(2, 3, values=[float("-inf")] * 3 + [1.0, 2.0, 3.0])], {"dim": 1}, tag="all_neg_inf", fd=False)
case("mean_dim", lambda x, dim: x.mean(dim, keepdim=True), [R3()], {"dim": 2})
case("prod", lambda x: x.prod().reshape(1), [In(3, 4, lo=0.5, hi=1.5)])
case("prod_dim", lambda x, dim: x.prod(dim, keepdim=True), [R3(lo=0.5, hi=1.5)], {"dim": 1})
case("max", lambda x: x.max().reshape(1), [R3()])
case("max", lambda x: x.max().reshape(1), [In(4, values=[1.0, float("nan"), 3.0, 2.0])], tag="nan", fd=False)
case("max_dim", lambda x, dim: x.max(dim, keepdim=True).values, [R3()], {"dim": 1})
case("max_dim", lambda x, dim: x.max(dim, keepdim=True).values, [I(3, 4, 5)], {"dim": 2}, tag="i64")
case("min", lambda x: x.min().reshape(1), [R3()])
case("min_dim", lambda x, dim: x.min(dim, keepdim=True).values, [R3(layout="transposed")], {"dim": 0})
case("argmax", lambda x, dim: x.argmax(dim, keepdim=True), [R3()], {"dim": 1})
case("argmax", lambda x, dim: x.argmax(dim, keepdim=True), [I(4, 6, lo=0, hi=2)], {"dim": 1}, tag="ties")
case("argmin", lambda x, dim: x.argmin(dim, keepdim=True), [R3()], {"dim": 2})
case("var", lambda x, dim: x.var(dim, keepdim=True), [R3()], {"dim": 1})
case("var_bias", lambda x, dim: x.var(dim, unbiased=False, keepdim=True), [R3()], {"dim": 2})
case("any", lambda x: x.any().reshape(1), [Bo(3, 4)])
case("all", lambda x: x.all().reshape(1), [Bo(3, 4)])
case("any_dim", lambda x, dim: x.any(dim, keepdim=True), [Bo(3, 4)], {"dim": 1})
case("all_dim", lambda x, dim: x.all(dim, keepdim=True), [In(3, 4, values=[float(v % 5) for v in range(12)])], {"dim": 0})
case("cumsum", lambda x, dim: x.cumsum(dim), [R3()], {"dim": 1})
case("cumsum", lambda x, dim: x.cumsum(dim), [I(3, 4)], {"dim": 1}, tag="i64")
case("cumprod", lambda x, dim: x.cumprod(dim), [R3(lo=0.5, hi=1.5)], {"dim": 2})
case("cummax", lambda x, dim: x.cummax(dim).values, [R3()], {"dim": 0})
case("cummin", lambda x, dim: x.cummin(dim).values, [R3()], {"dim": 2})
case("sort", lambda x, dim: x.sort(dim=dim, stable=True).values, [R3()], {"dim": 1})
case("sort_descending", lambda x, dim: x.sort(dim=dim, descending=True, stable=True).values, [R3()], {"dim": 2})
case("argsort", lambda x, dim: x.argsort(dim=dim, stable=True), [I(3, 8, lo=0, hi=3)], {"dim": 1})
case("argsort_descending", lambda x, dim: x.sort(dim=dim, descending=True, stable=True).indices, [R3()], {"dim": 0})
case("topk", lambda x, k, dim: x.topk(k, dim).values, [R3()], {"k": 2, "dim": 2})
case("matmul", torch.matmul, [In(3, 4), In(4, 5)])
case("matmul", torch.matmul, [In(2, 3, 4), In(1, 4, 5)], tag="broadcast")
case("matmul", torch.matmul, [In(2, 4, 3, layout="transposed"), In(2, 3, 5, layout="transposed")], tag="noncontig")
case("matmul", torch.matmul, [In(3, 0), In(0, 5)], tag="k0")
case("matmul", torch.matmul, [In(3, 4, dtype="f64"), In(4, 5, dtype="f64")], tag="f64", rtol=1e-12)
case("matmul", torch.matmul, [I(3, 4), I(4, 5)], tag="i64")
case("matmul", torch.matmul, [In(3, 4, dtype="f16"), In(4, 5, dtype="f16")], tag="f16", rtol=2e-3, atol=2e-3)

# ---- shape and movement -------------------------------------------------------------
case("reshape", lambda x: x.reshape(4, -1), [R3()])
case("reshape", lambda x: x.reshape(4, -1), [R3(layout="transposed")], tag="noncontig")
case("flatten", lambda x: x.flatten(1, 2), [R3()])
case("permute", lambda x: x.permute(2, 0, 1), [R3()])
case("transpose", lambda x: x.transpose(-1, -2), [R3()])
case("swap_dims", lambda x: x.transpose(0, 2), [R3()])
case("movedim", lambda x: x.movedim(0, 2), [R3()])
case("unsqueeze_dim", lambda x: x.unsqueeze(1), [In(3, 4)])
case("squeeze", lambda x: x.squeeze(1), [In(3, 1, 4)])
case("expand", lambda x: x.expand(2, 3, 4), [In(3, 1)])
case("repeat", lambda x: x.repeat(2, 1, 3), [In(2, 3, 2)])
case("flip", lambda x: x.flip(0, 2), [R3()])
case("roll_dim", lambda x, shift, dim: x.roll(shift, dim), [In(3, 5)], {"shift": 2, "dim": 1})
case("roll_dim", lambda x, shift, dim: x.roll(shift, dim), [In(3, 5)], {"shift": -7, "dim": 1}, tag="negative")
case("narrow", lambda x: x.narrow(1, 1, 2), [R3()])
case("slice", lambda x: x[0:2, ::2, 1:-1], [R3()])
case("slice", lambda x: x[-2:, 1::3], [In(5, 7)], tag="negative_start")
case("slice_reversed", lambda x: x[:, 1:4].flip(1), [In(3, 6)])
case("slice_assign", lambda x, v: x.index_put((torch.arange(0, 2).reshape(2, 1), torch.arange(1, 5, 2)), v),
     [In(3, 5), In(2, 2)])
case("cat", lambda a, b: torch.cat([a, b], 1), [In(2, 3, 4), In(2, 1, 4)])
case("cat", lambda a, b: torch.cat([a, b], 0), [I(2, 3), I(0, 3)], tag="i64_empty")
case("stack", lambda a, b: torch.stack([a, b], 1), [In(2, 3), In(2, 3)])
case("chunk1", lambda x: x.chunk(3, 1)[1], [In(2, 7)])
case("split_last", lambda x: x.split(3, 0)[-1], [In(7, 2)])
case("gather", lambda x, i: x.gather(1, i), [In(3, 4), I(3, 6, lo=0, hi=3)])
case("scatter", lambda x, i, v: x.scatter(1, i, v), [In(3, 5), I(3, 1, lo=0, hi=4), In(3, 1)])
case("scatter_add", lambda x, i, v: x.scatter_add(0, i, v), [In(3, 4), I(5, 4, lo=0, hi=2), In(5, 4)])
case("select", lambda x, i, dim: x.index_select(dim, i), [In(3, 4), I(5, lo=0, hi=3)], {"dim": 1})
case("select", lambda x, i, dim: x.index_select(dim, i), [I(4, 2), I(3, lo=0, hi=3)], {"dim": 0}, tag="i64")
case("select_assign", lambda x, i, v: x.index_add(0, i, v), [In(4, 3), I(5, lo=0, hi=3), In(5, 3)])
case("gather_nd", lambda x, i: x[i[..., 0], i[..., 1]], [In(3, 4, 2), I(5, 2, lo=0, hi=2)])
case("mask_select", lambda x, m: x.masked_select(m), [In(3, 4), Bo(3, 4)])
case("one_hot", lambda x: F.one_hot(x, 5).float(), [I(4, lo=0, hi=4)])
case("tril", lambda x: x.tril(0), [In(2, 4, 5)])
case("triu", lambda x: x.triu(1), [In(4, 5)])
case("pad", lambda x: F.pad(x, (1, 2, 0, 1), value=0.5), [In(2, 3, 4)])
case("unfold", lambda x: x.unfold(1, 3, 2), [In(2, 7, 3)])
case("is_finite", torch.isfinite, [In(5, values=[0.0, float("nan"), float("inf"), -1.0, float("-inf")])])
case("is_close", lambda a, b: torch.isclose(a, b, rtol=1e-3, atol=1e-4),
     [In(6, values=[1.0, 1.0, 0.0, 100.0, float("nan"), float("inf")]),
      In(6, values=[1.0005, 1.01, 5e-5, 100.09, float("nan"), float("inf")])])
case("dot", lambda a, b: torch.dot(a, b).reshape(1), [In(7), In(7)])
case("cross", lambda a, b: torch.cross(a, b, dim=1), [In(4, 3), In(4, 3)])
case("cov", lambda x: torch.cov(x), [In(3, 8)])
case("one_hot_fill", lambda x: (F.one_hot(x, 4).float() * 2.0 - 0.5).movedim(-1, 0), [I(2, 3, lo=0, hi=3)])
case("tril_mask", lambda: torch.ones(3, 5, dtype=torch.bool).tril(1).logical_not(), [])
case("triu_mask", lambda: torch.ones(3, 5, dtype=torch.bool).triu(0).logical_not(), [])
case("diag_mask", lambda: (torch.eye(3, 5) == 0), [])
case("eye", lambda: torch.eye(4), [])
case("arange", lambda: torch.arange(2, 11, 3), [])
case("arange_f", lambda: torch.arange(0.5, 2.0, 0.25), [])
case("full", lambda: torch.full((2, 3), 1.25), [])
case("zeros_like", torch.zeros_like, [In(2, 3)])

# ---- activations --------------------------------------------------------------------
A = lambda: In(3, 7, lo=-4, hi=4)
for key, fn in [("relu", F.relu), ("gelu", F.gelu), ("gelu_tanh", lambda x: F.gelu(x, approximate="tanh")),
                ("silu", F.silu), ("mish", F.mish), ("elu", F.elu), ("celu", F.celu), ("selu", F.selu),
                ("hard_sigmoid", F.hardsigmoid), ("hard_swish", F.hardswish),
                ("log_sigmoid", F.logsigmoid), ("leaky_relu", F.leaky_relu),
                ("softplus", F.softplus)]:
    case(key, fn, [A()])
case("softmax", lambda x, dim: F.softmax(x, dim), [A()], {"dim": 1})
case("softmax", lambda x, dim: F.softmax(x, dim), [In(3, 7, lo=-80, hi=80)], {"dim": 0}, tag="large")
case("log_softmax", lambda x, dim: F.log_softmax(x, dim), [A()], {"dim": 1})
case("log_softmax", lambda x, dim: F.log_softmax(x, dim), [In(3, 7, lo=-80, hi=80)], {"dim": 0}, tag="large")
case("softmin", lambda x, dim: F.softmin(x, dim), [A()], {"dim": 1})
case("softplus_beta", lambda x: F.softplus(x, 2.0, 3.0), [A()])
case("prelu", lambda x, w: F.prelu(x, w), [In(2, 3, 4), In(3)])

# ---- nn ops: conv, pooling, interpolation, unfold/fold (ember/tensor/nn_ops.h) ----------
# One key per op family; the input's rank picks 1-d, 2-d or 3-d on both sides.
def conv_nd(x, w, stride, padding, dilation, groups):
    f = {3: F.conv1d, 4: F.conv2d, 5: F.conv3d}[x.dim()]
    return f(x, w, None, stride, padding, dilation, groups)


def conv_transpose_nd(x, w, stride, padding, output_padding, dilation, groups):
    f = {3: F.conv_transpose1d, 4: F.conv_transpose2d, 5: F.conv_transpose3d}[x.dim()]
    return f(x, w, None, stride, padding, output_padding, groups, dilation)


def max_pool_nd(x, kernel, stride, padding, dilation, ceil_mode):
    f = {3: F.max_pool1d, 4: F.max_pool2d, 5: F.max_pool3d}[x.dim()]
    return f(x, kernel, stride, padding, dilation, ceil_mode)


def avg_pool_nd(x, kernel, stride, padding, ceil_mode, count_include_pad):
    f = {3: F.avg_pool1d, 4: F.avg_pool2d, 5: F.avg_pool3d}[x.dim()]
    return f(x, kernel, stride, padding, ceil_mode, count_include_pad)


def adaptive_avg_pool_nd(x, size):
    f = {3: F.adaptive_avg_pool1d, 4: F.adaptive_avg_pool2d, 5: F.adaptive_avg_pool3d}[x.dim()]
    return f(x, size)


def conv_case(x, w, tag, stride=None, padding=None, dilation=None, groups=1, **kw):
    r = len(x.shape) - 2
    a = {"stride": stride or [1] * r, "padding": padding or [0] * r,
         "dilation": dilation or [1] * r, "groups": groups}
    kw.setdefault("atol", 1e-5)  # f32 sums over C_in * prod(kernel) terms, in another order
    case("conv", conv_nd, [x, w], a, tag=tag, **kw)


conv_case(In(2, 4, 9), In(6, 4, 3), "1d")
conv_case(In(2, 4, 11), In(6, 2, 3), "1d_stride_pad_dilation_groups", [2], [2], [2], 2)
conv_case(In(2, 3, 6, 6), In(4, 3, 3, 3), "2d_pad", padding=[1, 1])
conv_case(In(4, 3, 7, 8), In(4, 3, 2, 3), "2d_stride_nonsquare_dilation", [2, 2], [1, 0], [1, 2])
conv_case(In(4, 4, 5, 5), In(6, 2, 3, 3), "2d_groups", padding=[1, 1], groups=2)
conv_case(In(2, 4, 6, 6), In(4, 1, 3, 3), "2d_depthwise", [2, 2], [1, 1], groups=4)
conv_case(In(2, 4, 5, 5), In(8, 1, 3, 3), "2d_depthwise_multiplier", padding=[1, 1], groups=4)
conv_case(In(2, 3, 13), In(6, 1, 4), "1d_depthwise_stride3_pad_dilation", [3], [2], [2], 3)
conv_case(In(2, 1, 7, 6), In(4, 1, 3, 2), "2d_one_input_channel", [2, 1], [1, 1], [1, 2])
conv_case(In(8, 4, 6, 6), In(4, 1, 3, 3), "2d_depthwise_batch8", padding=[1, 1], groups=4)
conv_case(In(2, 5, 4, 4), In(3, 5, 1, 1), "2d_1x1")
conv_case(In(2, 5, 5, 5), In(3, 5, 1, 1), "2d_1x1_stride", [2, 2])
conv_case(In(2, 3, 5, 6, layout="transposed"), In(4, 3, 3, 3), "2d_noncontig", padding=[1, 1])
conv_case(In(2, 2, 4, 5, 5), In(3, 2, 2, 3, 3), "3d", [1, 2, 1], [1, 1, 0])
conv_case(In(3, 2, 4, 4, 4), In(4, 1, 3, 3, 3), "3d_groups_dilation", [2, 1, 1], [1, 2, 2], [1, 2, 2], 2)
conv_case(In(2, 3, 6, 6, dtype="f64"), In(4, 3, 3, 3, dtype="f64"), "2d_f64", padding=[1, 1], rtol=1e-12, atol=1e-12)
conv_case(In(2, 3, 6, 6, dtype="f16"), In(4, 3, 3, 3, dtype="f16"), "2d_f16", padding=[1, 1], rtol=1e-2, atol=1e-2)
conv_case(In(2, 3, 6, 6, dtype="bf16"), In(4, 3, 3, 3, dtype="bf16"), "2d_bf16", padding=[1, 1], rtol=2e-2, atol=2e-2)
conv_case(In(0, 3, 6, 6), In(4, 3, 3, 3), "2d_empty_batch", padding=[1, 1])
conv_case(In(8, 8, 12, 12), In(8, 8, 3, 3), "2d_batch8", padding=[1, 1], rtol=1e-4, atol=1e-4, fd=False)
# stride 1 with one input channel per group: the "flat" depthwise path (wide rows, padding,
# dilation, 3-d, f64), long enough for its vector loops and their tails
# batches of small images in the wide layout: dilation without padding, and 3-d with padding
conv_case(In(4, 3, 9, 10), In(5, 3, 3, 2), "2d_wide_dilation", dilation=[2, 3])
conv_case(In(3, 2, 3, 4, 5), In(3, 2, 2, 2, 3), "3d_wide_pad", padding=[1, 0, 1])
conv_case(In(3, 1, 12, 11), In(8, 1, 3, 3), "2d_one_input_channel_flat")
conv_case(In(2, 2, 9, 10), In(4, 1, 3, 2), "2d_depthwise_flat_pad_dilation", padding=[2, 1],
          dilation=[2, 3], groups=2)
conv_case(In(2, 2, 4, 5, 6), In(2, 1, 2, 3, 3), "3d_depthwise_flat", padding=[1, 1, 1], groups=2)
conv_case(In(2, 1, 10, 10, dtype="f64"), In(3, 1, 3, 3, dtype="f64"), "2d_one_input_channel_flat_f64",
          padding=[1, 1], rtol=1e-12, atol=1e-12)


def conv_weight_grad_nd(x, g, kernel, stride, padding, dilation, groups):
    """conv's weight gradient for input x and output gradient g, itself differentiable."""
    w = torch.zeros(g.shape[1], x.shape[1] // groups, *kernel, dtype=x.dtype, requires_grad=True)
    y = conv_nd(x, w, stride, padding, dilation, groups)
    return torch.autograd.grad(y, w, g, create_graph=True)[0]


# conv_weight_grad as an op: its own gradient is what second derivatives of conv go through.
case("conv_weight_grad", conv_weight_grad_nd, [In(2, 4, 7, 7), In(2, 6, 4, 2)],
     {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 0], "dilation": [1, 2], "groups": 2},
     tag="2d", atol=1e-5)
case("conv_weight_grad", conv_weight_grad_nd, [In(3, 2, 9), In(3, 3, 9)],
     {"kernel": [3], "stride": [1], "padding": [1], "dilation": [1], "groups": 1}, tag="1d", atol=1e-5)


def conv_transpose_case(x, w, tag, stride=None, padding=None, output_padding=None, dilation=None,
                        groups=1, **kw):
    r = len(x.shape) - 2
    a = {"stride": stride or [1] * r, "padding": padding or [0] * r,
         "output_padding": output_padding or [0] * r, "dilation": dilation or [1] * r,
         "groups": groups}
    kw.setdefault("atol", 1e-5)
    case("conv_transpose", conv_transpose_nd, [x, w], a, tag=tag, **kw)


conv_transpose_case(In(2, 4, 5), In(4, 3, 3), "1d_stride_pad_outpad", [2], [1], [1])
conv_transpose_case(In(2, 4, 4, 5), In(4, 3, 3, 2), "2d_nonsquare", [2, 1], [1, 0], [1, 0], [1, 2])
conv_transpose_case(In(2, 4, 3, 3), In(4, 2, 3, 3), "2d_groups", [2, 2], groups=2)
conv_transpose_case(In(4, 4, 3, 4), In(4, 1, 3, 3), "2d_depthwise", [2, 2], [1, 1], [1, 1], groups=4)
conv_transpose_case(In(1, 2, 4, 4), In(2, 3, 3, 3), "2d_outpad_below_dilation", [1, 1], [1, 1], [1, 1], [2, 2])
conv_transpose_case(In(2, 3, 5), In(3, 2, 4), "1d_depthwise_multiplier", [3], [1], [2], [2], 3)
conv_transpose_case(In(2, 1, 3, 4), In(1, 3, 3, 3), "2d_one_input_channel", [2, 2], [1, 0], [0, 1])
conv_transpose_case(In(2, 3, 4, 4), In(3, 2, 1, 1), "2d_1x1")
conv_transpose_case(In(1, 2, 3, 3, 3), In(2, 2, 2, 2, 2), "3d", [2, 2, 2])
conv_transpose_case(In(2, 3, 4, 4, dtype="f64"), In(3, 2, 3, 3, dtype="f64"), "2d_f64", [2, 2], [1, 1], rtol=1e-12, atol=1e-12)


def max_pool_case(x, kernel, tag, stride=None, padding=None, dilation=None, ceil_mode=False, **kw):
    r = len(x.shape) - 2
    a = {"kernel": kernel, "stride": stride or kernel, "padding": padding or [0] * r,
         "dilation": dilation or [1] * r, "ceil_mode": ceil_mode}
    case("max_pool", max_pool_nd, [x], a, tag=tag, **kw)


max_pool_case(In(2, 3, 10), [3], "1d_stride_pad", [2], [1])
max_pool_case(In(2, 3, 10), [3], "1d_ceil", [2], ceil_mode=True)
max_pool_case(In(2, 3, 8, 8), [2, 2], "2d")
max_pool_case(In(2, 3, 9, 9), [3, 2], "2d_nonsquare_dilation", [2, 1], [1, 1], [1, 2])
max_pool_case(In(2, 2, 7, 7), [3, 3], "2d_ceil_pad", [2, 2], [1, 1], ceil_mode=True)
max_pool_case(In(2, 2, 6, 6, lo=0, hi=2, values=[float(v % 3) for v in range(144)]), [2, 2], "2d_ties", [1, 1], fd=False)
max_pool_case(In(1, 2, 4, 5, 4), [2, 2, 2], "3d", [2, 2, 1])
max_pool_case(In(1, 2, 5, 5, values=[float('nan') if v in (5, 40) else float('-inf') if v in (12, 13, 18, 19) else float((v * 7) % 11) for v in range(50)]), [2, 2], "2d_nan_neg_inf", [2, 2], [1, 1], fd=False)
max_pool_case(In(2, 3, 8, 8, dtype="f64"), [3, 3], "2d_f64", [2, 2], [1, 1], rtol=1e-12, atol=1e-12)
# tiling windows (kernel == stride, no padding): the fast path, with leftover rows and
# columns, ties, NaN and all -inf windows, 1-d, 3-d, a 3x3 and f64
max_pool_case(In(2, 3, 11, 9), [2, 2], "2d_tiles_odd")
max_pool_case(In(2, 2, 6, 6, lo=0, hi=2, values=[float(v % 3) for v in range(144)]), [2, 2], "2d_tiles_ties", fd=False)
max_pool_case(In(1, 2, 4, 6, values=[float('nan') if v in (3, 9, 30) else float('-inf') if v in (12, 13, 18, 19) else float((v * 5) % 7) for v in range(48)]), [2, 2], "2d_tiles_nan_neg_inf", fd=False)
max_pool_case(In(2, 3, 9), [3], "1d_tiles")
max_pool_case(In(1, 2, 4, 5, 6), [2, 2, 3], "3d_tiles")
max_pool_case(In(2, 2, 7, 9), [3, 3], "2d_tiles_3x3")
max_pool_case(In(2, 3, 8, 8, dtype="f64"), [2, 2], "2d_tiles_f64", rtol=1e-12, atol=1e-12)
# rows of 2x2 windows wide enough for the vector loops (and their tails)
max_pool_case(In(2, 2, 6, 37), [2, 2], "2d_tiles_wide")
max_pool_case(In(2, 2, 4, 34, lo=0, hi=2, values=[float(v % 3) for v in range(544)]), [2, 2], "2d_tiles_wide_ties", fd=False)
max_pool_case(In(1, 1, 4, 36, values=[float('nan') if v % 13 == 5 or v % 17 == 3 else float('-inf') if v % 11 == 4 else float((v * 5) % 7) for v in range(144)]), [2, 2], "2d_tiles_wide_nan_neg_inf", fd=False)
max_pool_case(In(2, 2, 4, 20, dtype="f64", lo=0, hi=2, values=[float(v % 3) for v in range(320)]), [2, 2], "2d_tiles_wide_ties_f64", fd=False, rtol=1e-12, atol=1e-12)


def avg_pool_case(x, kernel, tag, stride=None, padding=None, ceil_mode=False, count_include_pad=True, **kw):
    r = len(x.shape) - 2
    a = {"kernel": kernel, "stride": stride or kernel, "padding": padding or [0] * r,
         "ceil_mode": ceil_mode, "count_include_pad": count_include_pad}
    case("avg_pool", avg_pool_nd, [x], a, tag=tag, **kw)


avg_pool_case(In(2, 3, 10), [3], "1d_stride_pad", [2], [1])
avg_pool_case(In(2, 3, 10), [3], "1d_exclude_pad", [2], [1], count_include_pad=False)
avg_pool_case(In(2, 3, 8, 8), [2, 2], "2d")
avg_pool_case(In(2, 2, 8, 8), [3, 3], "2d_ceil_exclude_pad", [2, 2], [1, 1], True, False)
avg_pool_case(In(2, 2, 7, 7), [3, 2], "2d_nonsquare_ceil", [1, 2], [1, 0], True, True)
avg_pool_case(In(1, 2, 5, 4, 6), [2, 2, 3], "3d_pad", [2, 1, 2], [1, 0, 1], count_include_pad=False)

case("adaptive_avg_pool", adaptive_avg_pool_nd, [In(2, 3, 10)], {"size": [4]}, tag="1d")
case("adaptive_avg_pool", adaptive_avg_pool_nd, [In(2, 3, 7, 9)], {"size": [3, 4]}, tag="2d")
case("adaptive_avg_pool", adaptive_avg_pool_nd, [In(2, 2, 3, 3)], {"size": [5, 4]}, tag="2d_up")
case("adaptive_avg_pool", adaptive_avg_pool_nd, [In(2, 4, 6, 6)], {"size": [1, 1]}, tag="2d_global")
case("adaptive_avg_pool", adaptive_avg_pool_nd, [In(1, 2, 5, 6, 4)], {"size": [2, 3, 2]}, tag="3d")


def interp_case(x, size, mode, tag, align_corners=None, **kw):
    a = {"size": size, "mode": mode}
    if align_corners is not None:
        a["align_corners"] = align_corners
    kw.setdefault("atol", 1e-5)  # cubic weights summed in another order than PyTorch's
    case("interpolate", lambda x, size, mode, align_corners=None: F.interpolate(x, size=size, mode=mode, align_corners=align_corners),
         [x], a, tag=tag, **kw)


interp_case(In(2, 3, 4, 5), [7, 9], "nearest", "nearest_up")
interp_case(In(2, 3, 8, 7), [3, 5], "nearest", "nearest_down")
interp_case(In(2, 3, 4, 5), [8, 10], "nearest", "nearest_double")
interp_case(In(2, 3, 7), [12], "nearest", "nearest_1d")
interp_case(In(1, 2, 3, 4, 5), [5, 3, 7], "nearest", "nearest_3d")
for ac in (False, True):
    t = "_align" if ac else ""
    interp_case(In(2, 3, 4, 5), [7, 9], "bilinear", "bilinear_up" + t, ac)
    interp_case(In(2, 3, 8, 7), [3, 5], "bilinear", "bilinear_down" + t, ac)
    interp_case(In(2, 3, 7), [12], "linear", "linear_1d_up" + t, ac)
    interp_case(In(2, 3, 9), [4], "linear", "linear_1d_down" + t, ac)
    interp_case(In(2, 3, 4, 5), [7, 9], "bicubic", "bicubic_up" + t, ac)
    interp_case(In(2, 3, 8, 7), [3, 5], "bicubic", "bicubic_down" + t, ac)
    interp_case(In(1, 2, 3, 4, 3), [5, 3, 6], "trilinear", "trilinear" + t, ac)
interp_case(In(2, 3, 4, 5), [1, 1], "bilinear", "bilinear_to_1x1_align", True)
interp_case(In(2, 3, 5, 5), [5, 5], "bicubic", "bicubic_same")
interp_case(In(2, 3, 6, 6, dtype="f64"), [9, 4], "bicubic", "bicubic_f64", rtol=1e-12, atol=1e-12)


# The backward ops themselves (their own gradients are the forward ops): each is the
# vector-Jacobian product of the forward op at an input of shape `in_shape`.
def vjp_of(fwd, in_shape):
    def fn(g, **a):
        x = torch.zeros(*in_shape, dtype=g.dtype, requires_grad=True)
        return torch.autograd.grad(fwd(x, **a), x, g, create_graph=True)[0]
    return fn


case("avg_pool_backward", lambda g, size, **a: vjp_of(avg_pool_nd, (2, 2, *size))(g, **a), [In(2, 2, 5, 5)],
     {"kernel": [3, 3], "stride": [2, 2], "padding": [1, 1], "ceil_mode": True,
      "count_include_pad": False, "size": [8, 8]})
case("adaptive_avg_pool_backward", lambda g, size: vjp_of(adaptive_avg_pool_nd, (2, 3, 7, 9))(g, size=[3, 4]),
     [In(2, 3, 3, 4)], {"size": [7, 9]})
case("interpolate_backward",
     lambda g, size, mode, align_corners: vjp_of(lambda x: F.interpolate(x, size=[7, 9], mode=mode, align_corners=align_corners), (2, 3, 4, 5))(g),
     [In(2, 3, 7, 9)], {"size": [4, 5], "mode": "bicubic", "align_corners": True}, tag="bicubic_align", atol=1e-5)
case("interpolate_backward",
     lambda g, size, mode, align_corners: vjp_of(lambda x: F.interpolate(x, size=[3, 5], mode=mode, align_corners=align_corners), (2, 3, 8, 7))(g),
     [In(2, 3, 3, 5)], {"size": [8, 7], "mode": "bilinear", "align_corners": False}, tag="bilinear_down", atol=1e-5)


def unfold_case(x, kernel, tag, dilation=None, padding=None, stride=None, **kw):
    r = len(x.shape) - 2
    a = {"kernel": kernel, "dilation": dilation or [1] * r, "padding": padding or [0] * r,
         "stride": stride or [1] * r}
    case("nn_unfold", lambda x, kernel, dilation, padding, stride: F.unfold(x, kernel, dilation, padding, stride),
         [x], a, tag=tag, **kw)


def fold_case(c, size, kernel, tag, dilation=None, padding=None, stride=None, n=2, **kw):
    r = len(size)
    a = {"size": size, "kernel": kernel, "dilation": dilation or [1] * r, "padding": padding or [0] * r,
         "stride": stride or [1] * r}
    blocks = 1
    for i in range(r):
        blocks *= (size[i] + 2 * a["padding"][i] - a["dilation"][i] * (kernel[i] - 1) - 1) // a["stride"][i] + 1
    k = math.prod(kernel)
    case("nn_fold", lambda x, size, kernel, dilation, padding, stride: F.fold(x, size, kernel, dilation, padding, stride),
         [In(n, c * k, blocks)], a, tag=tag, **kw)


unfold_case(In(2, 3, 5, 6), [2, 3], "basic")
unfold_case(In(2, 3, 6, 7), [2, 3], "stride_pad", padding=[1, 0], stride=[2, 1])
unfold_case(In(2, 2, 7, 7), [3, 2], "dilation", dilation=[2, 1], padding=[1, 1], stride=[1, 2])
fold_case(3, [5, 6], [2, 2], "basic")
fold_case(2, [6, 7], [3, 2], "stride_pad_dilation", dilation=[1, 2], padding=[1, 1], stride=[2, 1])


# ---- scaled dot-product attention (ember::scaled_dot_product_attention) ------------------
def attention_ref(q, k, v, mask=None, causal=False, scale=None):
    """softmax(q k^T scale + mask) v in f64; rows with every key masked give 0 (not NaN)."""
    s = scale if scale is not None else 1 / math.sqrt(q.shape[-1])
    q64, k64, v64 = q.double(), k.double(), v.double()
    scores = q64 @ k64.transpose(-1, -2) * s
    lq, lk = scores.shape[-2], scores.shape[-1]
    masked = None
    if mask is not None:
        masked = mask.expand(scores.shape)
    if causal:
        c = torch.ones(lq, lk, dtype=torch.bool).triu(lk - lq + 1)
        masked = c.expand(scores.shape) if masked is None else masked | c
    if masked is None:
        p = torch.softmax(scores, -1)
    else:
        none = masked.all(-1, keepdim=True)
        scores = scores.masked_fill(masked, -math.inf).masked_fill(none, 0.0)
        p = torch.softmax(scores, -1).masked_fill(none, 0.0)
    return (p @ v64).to(q.dtype)


def attention_case(tag, q, k, v, mask=None, causal=False, scale=None, **kw):
    a = {"causal": causal}
    if scale is not None:
        a["scale"] = scale
    kw.setdefault("rtol", 1e-4)
    kw.setdefault("atol", 1e-5)
    case("attention", attention_ref, [q, k, v] + ([mask] if mask is not None else []), a, tag=tag, **kw)


def mask_rows(shape, full_rows=(), p=0.3):
    """A bool mask of `shape` with about p of it true, and the listed rows (index tuples into
    the leading dims and the query dim) all true."""
    g = torch.Generator().manual_seed(len(CASES))
    m = torch.rand(shape, generator=g) < p
    for r in full_rows:
        m[r] = True
    return Bo(*shape, values=m.reshape(-1).tolist())


attention_case("basic_rank4", In(2, 3, 5, 4), In(2, 3, 7, 4), In(2, 3, 7, 4))
attention_case("rank3_dv", In(3, 6, 8), In(3, 4, 8), In(3, 4, 5))
attention_case("scale", In(2, 4, 6), In(2, 5, 6), In(2, 5, 3), scale=0.7)
attention_case("mask_over_heads", In(2, 3, 4, 4), In(2, 3, 6, 4), In(2, 3, 6, 5),
               mask_rows((2, 1, 4, 6)))
attention_case("mask_full", In(2, 2, 4, 3), In(2, 2, 5, 3), In(2, 2, 5, 3),
               mask_rows((2, 2, 4, 5)))
attention_case("mask_masked_row", In(2, 2, 4, 3), In(2, 2, 5, 3), In(2, 2, 5, 3),
               mask_rows((2, 1, 4, 5), [(0, 0, 1), (1, 0, 3)]))
attention_case("causal", In(2, 2, 6, 4), In(2, 2, 6, 4), In(2, 2, 6, 4), causal=True)
attention_case("causal_cache", In(2, 2, 3, 4), In(2, 2, 7, 4), In(2, 2, 7, 5), causal=True)
attention_case("causal_decode", In(2, 2, 1, 4), In(2, 2, 5, 4), In(2, 2, 5, 4), causal=True)
attention_case("causal_more_queries", In(1, 2, 5, 4), In(1, 2, 3, 4), In(1, 2, 3, 4), causal=True)
attention_case("causal_and_mask", In(2, 5, 4), In(2, 5, 4), In(2, 5, 4),
               mask_rows((2, 1, 5), p=0.0, full_rows=[(0, 0, 3), (1, 0, 0)]), causal=True)
attention_case("long", In(2, 5, 8), In(2, 300, 8), In(2, 300, 6), atol=2e-5)
attention_case("long_causal_mask", In(1, 2, 70, 8), In(1, 2, 300, 8), In(1, 2, 300, 8),
               mask_rows((1, 1, 1, 300), p=0.1), causal=True, fd=False, atol=2e-5)
attention_case("noncontig", In(2, 4, 3, layout="transposed"), In(2, 5, 3, layout="transposed"),
               In(2, 5, 4))
attention_case("f64", In(2, 2, 5, 4, dtype="f64"), In(2, 2, 9, 4, dtype="f64"),
               In(2, 2, 9, 3, dtype="f64"), mask_rows((1, 1, 5, 9), [(0, 0, 2)]), causal=True,
               rtol=1e-12, atol=1e-12)
attention_case("bf16", In(2, 4, 8, dtype="bf16"), In(2, 6, 8, dtype="bf16"),
               In(2, 6, 8, dtype="bf16"), rtol=2e-2, atol=2e-2)
attention_case("empty_queries", In(2, 0, 4), In(2, 3, 4), In(2, 3, 4))

# ---- layer norm and RMS norm over the trailing dims gamma has ----------------------------
def layer_norm_ref(x, w, b, eps):
    return F.layer_norm(x, w.shape, w, b, eps)


def rms_norm_ref(x, w, eps):  # torch.nn.functional.rms_norm, which torch 1.13 lacks
    dims = tuple(range(x.dim() - w.dim(), x.dim()))
    return x * torch.rsqrt((x * x).mean(dims, keepdim=True) + eps) * w


def norm_case(key, x, tag, eps=1e-5, **kw):
    """layer_norm or rms_norm of x over the trailing dims of `shape` (kw), gamma near 1."""
    shape, dt = kw.pop("shape", x.shape[-1:]), x.dtype
    ins = [x, In(*shape, dtype=dt, lo=0.5, hi=1.5)]
    if key == "layer_norm":
        ins.append(In(*shape, dtype=dt, lo=-1, hi=1))
    fn = layer_norm_ref if key == "layer_norm" else rms_norm_ref
    case(key, fn, ins, {"eps": eps}, tag=tag, **kw)


for key in ("layer_norm", "rms_norm"):
    norm_case(key, In(4, 6), "plain")
    norm_case(key, In(2, 3, 5), "rank3", eps=1e-3)
    norm_case(key, In(2, 3, 4), "two_dims", shape=(3, 4))
    norm_case(key, In(2, 5, 4, layout="transposed"), "noncontig")
    norm_case(key, In(3, 4, 6, layout="transposed"), "noncontig_two_dims", shape=(4, 6))
    norm_case(key, In(5), "rank1")
    norm_case(key, In(3, 37), "odd_row")
    norm_case(key, In(2, 1000), "long_row", rtol=1e-4, atol=1e-5)
    norm_case(key, In(3, 16, lo=10, hi=12), "offset", rtol=1e-4, atol=1e-4)
    norm_case(key, In(3, 7, dtype="f64"), "f64", rtol=1e-12, atol=1e-12)
    norm_case(key, In(2, 3, 4, dtype="f64"), "f64_two_dims", shape=(3, 4), rtol=1e-12, atol=1e-12)
    norm_case(key, In(4, 64, dtype="f16"), "f16", rtol=2e-3, atol=2e-3)
    norm_case(key, In(4, 64, dtype="bf16"), "bf16", rtol=2e-2, atol=2e-2)
    norm_case(key, In(0, 4), "empty")


# the API-breadth keys (golden_breadth.cpp), after these: the cases above keep their inputs
gen_goldens_breadth.add_cases(interp_case)

# int_matmul: 8-bit operands, exact i32 sums (after the breadth keys, so that theirs keep their
# inputs). Shapes cross the CPU kernel's edges: k not a multiple of 4, rows and columns past a
# tile, the largest magnitudes of each sign, batch dims broadcast, transposed operands.
def int_mm(a, b):
    return torch.matmul(a.to(torch.int32), b.to(torch.int32))


case("int_matmul", int_mm, [I(3, 4, dtype="u8", lo=0, hi=255), I(4, 5, dtype="i8", lo=-128, hi=127)])
case("int_matmul", int_mm, [I(13, 70, dtype="i8", lo=-128, hi=127), I(70, 37, dtype="i8", lo=-128, hi=127)], tag="i8_i8")
case("int_matmul", int_mm, [I(29, 67, dtype="u8", lo=0, hi=255), I(67, 45, dtype="u8", lo=0, hi=255)], tag="u8_u8")
case("int_matmul", int_mm, [I(25, 132, dtype="u8", lo=0, hi=255), I(132, 70, dtype="i8", lo=-128, hi=127)], tag="u8_i8_tiles")
case("int_matmul", int_mm, [I(6, 8, dtype="i8", values=[-128] * 48), I(8, 3, dtype="i8", values=[-128] * 24)], tag="extremes")
case("int_matmul", int_mm, [I(6, 8, dtype="u8", values=[255] * 48), I(8, 3, dtype="i8", values=[-128] * 24)], tag="extremes_u8")
case("int_matmul", int_mm, [I(2, 5, 19, dtype="u8", lo=0, hi=255), I(1, 19, 33, dtype="i8", lo=-128, hi=127)], tag="broadcast")
case("int_matmul", int_mm, [I(17, 9, dtype="i8", lo=-128, hi=127, layout="transposed"),
                            I(9, 35, dtype="u8", lo=0, hi=255, layout="transposed")], tag="noncontig")
case("int_matmul", int_mm, [I(3, 0, dtype="u8", lo=0, hi=255), I(0, 5, dtype="i8", lo=-128, hi=127)], tag="k0")

# int_conv: 8-bit operands, exact i32 sums, as conv (after int_matmul, so that the cases above
# keep their inputs). f64 holds every sum exactly. Shapes cross the CPU path's routes: a 1x1
# window read in place, im2col's columns of one image and of several side by side, groups,
# padding (zeros), strides, dilation, 1-d and 3-d, the largest magnitudes, a transposed input.
def int_conv_nd(x, w, stride, padding, dilation, groups):
    return conv_nd(x.double(), w.double(), stride, padding, dilation, groups).to(torch.int32)


def int_conv_case(x, w, tag, stride=None, padding=None, dilation=None, groups=1):
    r = len(x.shape) - 2
    a = {"stride": stride or [1] * r, "padding": padding or [0] * r,
         "dilation": dilation or [1] * r, "groups": groups}
    case("int_conv", int_conv_nd, [x, w], a, tag=tag)


U8 = dict(dtype="u8", lo=0, hi=255)
S8 = dict(dtype="i8", lo=-128, hi=127)
int_conv_case(I(2, 5, 4, 4, **U8), I(3, 5, 1, 1, **S8), "1x1")
int_conv_case(I(1, 64, 6, 7, **U8), I(40, 64, 1, 1, **S8), "1x1_deep")
int_conv_case(I(2, 6, 9, 8, **U8), I(19, 6, 3, 3, **S8), "3x3_pad", padding=[1, 1])
int_conv_case(I(5, 3, 7, 7, **S8), I(8, 3, 3, 3, **S8), "i8_i8_batched", [2, 2], [1, 1])
int_conv_case(I(2, 4, 9, 9, **U8), I(6, 2, 3, 2, **U8), "u8_u8_groups_dilation", [1, 2], [2, 1], [2, 1], 2)
int_conv_case(I(2, 4, 6, 6, **U8), I(4, 1, 3, 3, **S8), "depthwise", padding=[1, 1], groups=4)
int_conv_case(I(3, 4, 11, **U8), I(5, 4, 4, **S8), "1d_stride", [3], [2])
int_conv_case(I(1, 2, 4, 5, 5, **U8), I(3, 2, 2, 3, 3, **S8), "3d", padding=[1, 0, 1])
int_conv_case(I(1, 16, 5, 5, dtype="u8", values=[255] * 400), I(4, 16, 3, 3, dtype="i8", values=[-128] * 576),
              "extremes", padding=[1, 1])
int_conv_case(I(2, 3, 5, 6, layout="transposed", **U8), I(4, 3, 3, 3, **S8), "noncontig", padding=[1, 1])
# rows of 16 bytes and more (the direct kernel's interleaving a vector at a time, and its tail)
int_conv_case(I(1, 8, 5, 40, **U8), I(20, 8, 3, 3, **S8), "wide_rows", padding=[1, 1])
int_conv_case(I(2, 5, 3, 37, **U8), I(4, 5, 1, 3, **S8), "wide_rows_1x3", padding=[0, 1])
int_conv_case(I(2, 6, 7, 20, **S8), I(14, 6, 3, 3, **S8), "i8_i8_pad", padding=[1, 1])
# depthwise through the f32 loops: the largest magnitudes, 5x5 stride 2, a channel multiplier
int_conv_case(I(1, 8, 9, 9, dtype="u8", values=[255] * 648), I(16, 1, 5, 5, dtype="i8", values=[-128] * 400),
              "depthwise_s2_extremes", [2, 2], [2, 2], groups=8)
# past f32's exact range: 289 taps of 255 x 255 sum to 18792225 (odd, above 2^24)
int_conv_case(I(1, 2, 17, 17, dtype="u8", values=[255] * 578), I(2, 1, 17, 17, dtype="u8", values=[255] * 578),
              "depthwise_past_f32", groups=2)

out = {"generator": "tools/gen_goldens.py", "torch": torch.__version__, "cases": CASES}
path = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "ops", "goldens.json")
with open(path, "w") as f:
    json.dump(out, f, separators=(",", ":"))
print(f"wrote {len(CASES)} cases to {os.path.normpath(path)}", file=sys.stderr)
