"""Helpers for layer goldens: a case is a layer's config, its parameters in ember's layout,
inputs, PyTorch's output and the gradients of sum(output * grad_out) w.r.t. the float inputs
and every parameter. Used by tools/gen_nn_goldens.py (and other layer generators)."""
import json
import os
import sys

import torch

sys.path.insert(0, os.path.dirname(__file__))
from golden_json import enc, tensor_json  # noqa: E402,F401

class Cases:
    def __init__(self):
        self.cases = []

    def add(self, key, config, params, inputs, forward, tag="", buffers=None, grads=True,
            rtol=1e-4, atol=1e-5, extra=None):
        """params: list of (ember_path, torch_tensor_leaf, to_ember) where to_ember maps a
        PyTorch tensor (value or gradient) to ember's layout. buffers: list of (path, fn)
        returning the buffer tensor (read before and after the forward pass)."""
        ins = [x.clone().requires_grad_(x.dtype.is_floating_point) for x in inputs]
        c = {"id": key + ("/" + tag if tag else ""), "key": key, "config": config,
             "params": {p: tensor_json(f(t)) for p, t, f in params},
             "inputs": [tensor_json(x) for x in inputs], "rtol": rtol, "atol": atol}
        if buffers:
            c["buffers"] = {p: tensor_json(fn()) for p, fn in buffers}
        out = forward(*ins)
        c["output"] = tensor_json(out)
        if buffers:
            c["buffers_after"] = {p: tensor_json(fn()) for p, fn in buffers}
        if extra:
            c.update(extra)
        if grads and out.requires_grad:
            gout = torch.rand(out.shape, dtype=out.dtype) * 2 - 1
            wrt = [x for x in ins if x.requires_grad] + [t for _, t, _ in params]
            gs = torch.autograd.grad(out, wrt, gout, allow_unused=True)
            g = {}
            k = 0
            for i, x in enumerate(ins):
                if x.requires_grad:
                    gi = gs[k] if gs[k] is not None else torch.zeros_like(x)
                    g["input%d" % i] = tensor_json(gi)
                    k += 1
            for (p, t, f), gp in zip(params, gs[k:]):
                g[p] = tensor_json(f(gp if gp is not None else torch.zeros_like(t)))
            c["grad_out"] = tensor_json(gout)
            c["grads"] = g
        self.cases.append(c)

    def write(self, path):
        with open(path, "w") as f:
            json.dump({"cases": self.cases}, f, separators=(",", ":"))
        print("wrote", len(self.cases), "cases to", path)


def same(t):
    return t


def transposed(t):
    return t.t()
