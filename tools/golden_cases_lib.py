"""The shared part of the op goldens' generators (tools/gen_goldens.py): input specs, the
case recorder with PyTorch's gradients, and the case list they fill, in one random stream."""
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
import golden_json  # noqa: E402


torch.manual_seed(0)
DT = {"f32": torch.float32, "f64": torch.float64, "f16": torch.float16, "bf16": torch.bfloat16,
      "i64": torch.int64, "i32": torch.int32, "i16": torch.int16, "i8": torch.int8,
      "u8": torch.uint8, "bool": torch.bool}
NAME = {v: k for k, v in DT.items()}
CASES = []


class In:
    """An input spec: shape, dtype, value range, layout ('transposed' = non-contiguous)."""

    def __init__(self, *shape, dtype="f32", lo=-2.0, hi=2.0, layout="contiguous", values=None):
        self.shape, self.dtype, self.lo, self.hi = shape, dtype, lo, hi
        self.layout, self.values = layout, values

    def make(self):
        t = DT[self.dtype]
        if self.values is not None:
            return torch.tensor(self.values, dtype=t).reshape(self.shape)
        if t == torch.bool:
            return torch.rand(self.shape) < 0.5
        if t.is_floating_point:
            x = torch.rand(self.shape, dtype=torch.float64) * (self.hi - self.lo) + self.lo
            return x.to(t)
        return torch.randint(int(self.lo), int(self.hi) + 1, self.shape, dtype=t)


def I(*shape, lo=-5, hi=5, dtype="i64", **kw):
    return In(*shape, dtype=dtype, lo=lo, hi=hi, **kw)


def Bo(*shape, **kw):
    return In(*shape, dtype="bool", **kw)


def tensor_json(t, layout="contiguous"):
    """golden_json's encoding, stored transposed for the "transposed" layout."""
    stored = t.transpose(-1, -2) if layout == "transposed" else t
    return {**golden_json.tensor_json(stored), "layout": layout}


FULL = (torch.float32, torch.float64)


def case(key, fn, inputs, attrs=None, tag="", rtol=1e-5, atol=1e-6, fd=True):
    """One golden case. Float cases also get the gradients of sum(out * grad_out) with
    respect to each float input (for the autodiff suite); fd=False marks cases whose inputs
    sit where the op is not smooth, so finite differences are skipped."""
    xs = [i.make() for i in inputs]
    half = [x.dtype for x in xs if x.dtype in (torch.float16, torch.bfloat16)]
    if half:  # ember computes halves in f32 and rounds the result; so does the oracle
        out = fn(*[x.float() if x.dtype == half[0] else x for x in xs], **(attrs or {})).to(half[0])
    else:
        out = fn(*xs, **(attrs or {}))
    c = {
        "id": key + ("/" + tag if tag else ""),
        "op": key,
        "inputs": [tensor_json(x, i.layout) for x, i in zip(xs, inputs)],
        "attrs": attrs or {},
        "expected": tensor_json(out.contiguous()),
        "rtol": rtol, "atol": atol,
    }
    leaves = [x.clone().requires_grad_(True) if x.dtype in FULL else x for x in xs]
    if not half and out.dtype in FULL and any(x.dtype in FULL for x in xs) and out.numel() > 0:
        y = fn(*leaves, **(attrs or {}))
        if y.requires_grad:
            gout = torch.rand(y.shape, dtype=y.dtype) * 2 - 1
            wrt = [x for x in leaves if x.requires_grad]
            gs = iter(torch.autograd.grad(y, wrt, gout, allow_unused=True))
            grads = []
            for x in leaves:
                gx = next(gs) if x.requires_grad else None
                if x.requires_grad and gx is None:
                    gx = torch.zeros_like(x)
                grads.append(tensor_json(gx.contiguous()) if gx is not None else None)
            c["grad_out"] = tensor_json(gout)
            c["grads"] = grads
            c["fd"] = fd
    CASES.append(c)




R3 = lambda **kw: In(3, 4, 5, **kw)  # noqa: E731
