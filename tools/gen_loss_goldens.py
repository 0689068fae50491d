#!/usr/bin/env python3
"""Writes tests/nn/loss_goldens.json: inputs, PyTorch's losses and PyTorch's gradients for
ember's losses (ember/nn/loss/).

Run with Debian's python3-torch:  /usr/bin/python3 tools/gen_loss_goldens.py
Each case names a loss, its ember config (the JSON that nn::config_from_json reads), named
inputs, the expected result and the gradients of sum(result * grad_out) (the loss itself
for rank-0 results) with respect to the inputs listed in "grads". CTC cases feed
log_softmax(logits, 2) to the loss and differentiate with respect to the logits, because
PyTorch's ctc_loss backward returns the logits' gradient in place of the log_probs' one.
"""
import json
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from golden_json import enc, tensor_json  # noqa: E402

torch.manual_seed(0)
CASES = []
RED = ["mean", "sum", "none"]


tj = tensor_json


def rand(*shape, lo=-2.0, hi=2.0, dtype=torch.float32):
    return (torch.rand(shape, dtype=torch.float64) * (hi - lo) + lo).to(dtype)


def case(cid, loss, config, inputs, fn, grads=(), rtol=1e-5, atol=1e-6):
    """fn(**inputs) runs PyTorch; `grads` names the float inputs to differentiate."""
    leaves = {k: (v.clone().requires_grad_(True) if k in grads else v) for k, v in inputs.items()}
    out = fn(**leaves)
    c = {"id": cid, "loss": loss, "config": config,
         "inputs": {k: tj(v) for k, v in inputs.items()},
         "expected": tj(out), "rtol": rtol, "atol": atol}
    if grads:
        gout = torch.ones_like(out) if out.dim() == 0 else rand(*out.shape, lo=-1, hi=1, dtype=out.dtype)
        gs = torch.autograd.grad(out, [leaves[k] for k in grads], gout)
        if out.dim() > 0:
            c["grad_out"] = tj(gout)
        c["grads"] = {k: tj(g) for k, g in zip(grads, gs)}
    CASES.append(c)


def each_reduction(cid, loss, config, inputs, fn, reductions=RED, **kw):
    for r in reductions:
        case(f"{cid}/{r}", loss, dict(config, reduction=r), inputs,
             lambda r=r, **a: fn(reduction=r, **a), **kw)


# ---- cross-entropy --------------------------------------------------------------------
def ce(smoothing=0.0, ignore_index=-100, weights=None):
    w = None if weights is None else torch.tensor(weights, dtype=torch.float64)

    def fn(input, target, reduction):
        ww = None if w is None else w.to(input.dtype)
        return F.cross_entropy(input, target, weight=ww, ignore_index=ignore_index,
                               reduction=reduction, label_smoothing=smoothing)
    cfg = {"smoothing": smoothing, "ignore_index": ignore_index, "weights": weights or []}
    return cfg, fn


def classes(*shape, c, ignore=None, ignore_index=-100):
    t = torch.randint(0, c, shape)
    if ignore is not None:
        t = t.masked_fill(torch.tensor(ignore).reshape(shape), ignore_index)
    return t


W4 = [0.5, 2.0, 1.0, 3.0]
for tag, kw in [("plain", {}), ("weights", {"weights": W4}), ("smoothing", {"smoothing": 0.1}),
                ("ignore", {}), ("ignore_class", {"ignore_index": 2}),
                ("weights_ignore_smoothing", {"weights": W4, "smoothing": 0.2})]:
    cfg, fn = ce(**kw)
    ign = [False, True, False, False, True, False] if "ignore" in tag else None
    t = classes(6, c=4, ignore=ign, ignore_index=kw.get("ignore_index", -100))
    if tag == "ignore_class":
        t[1] = 2
    each_reduction(f"ce/{tag}", "cross_entropy", cfg, {"input": rand(6, 4, lo=-3, hi=3), "target": t},
                   fn, grads=["input"])
cfg, fn = ce(weights=W4, smoothing=0.15)
ign = torch.rand(2, 3, 2) < 0.3
each_reduction("ce/spatial_weights_ignore_smoothing", "cross_entropy", cfg,
               {"input": rand(2, 4, 3, 2, lo=-3, hi=3),
                "target": classes(2, 3, 2, c=4).masked_fill(ign, -100)}, fn, grads=["input"])
for tag, kw in [("plain", {}), ("weights_smoothing", {"weights": W4, "smoothing": 0.1})]:
    cfg, fn = ce(**kw)
    each_reduction(f"ce/all_ignored/{tag}", "cross_entropy", cfg,
                   {"input": rand(3, 4), "target": torch.full((3,), -100)}, fn, grads=["input"])
for tag, kw in [("plain", {}), ("weights_smoothing", {"weights": W4, "smoothing": 0.2})]:
    cfg, fn = ce(**kw)
    each_reduction(f"ce/probs/{tag}", "cross_entropy", cfg,
                   {"input": rand(5, 4, lo=-3, hi=3), "target": rand(5, 4).softmax(1)}, fn,
                   grads=["input", "target"])
cfg, fn = ce(smoothing=0.1)
each_reduction("ce/probs/spatial", "cross_entropy", cfg,
               {"input": rand(2, 4, 3), "target": rand(2, 4, 3).softmax(1)}, fn,
               grads=["input", "target"])
cfg, fn = ce(weights=[1.0, 2.0, 0.5], smoothing=0.1)
each_reduction("ce/f64", "cross_entropy", cfg,
               {"input": rand(4, 3, dtype=torch.float64),
                "target": torch.tensor([0, 2, -100, 1])}, fn, grads=["input"], rtol=1e-12, atol=1e-14)
cfg, fn = ce()
each_reduction("ce/empty_batch", "cross_entropy", cfg,
               {"input": rand(0, 4), "target": torch.zeros(0, dtype=torch.int64)}, fn)


# ---- binary cross-entropy --------------------------------------------------------------
def bce(logits=False, weights=None, pos_weights=None):
    def fn(input, target, reduction):
        w = None if weights is None else torch.tensor(weights, dtype=input.dtype)
        if logits:
            pw = None if pos_weights is None else torch.tensor(pos_weights, dtype=input.dtype)
            return F.binary_cross_entropy_with_logits(input, target, weight=w, pos_weight=pw,
                                                      reduction=reduction)
        return F.binary_cross_entropy(input, target, weight=w, reduction=reduction)
    return {"logits": logits, "weights": weights or [], "pos_weights": pos_weights or []}, fn


W3 = [1.0, 0.5, 2.0]
labels = (torch.rand(6, 3) < 0.5).float()
for tag, kw in [("probs", {}), ("probs_weights", {"weights": W3})]:
    cfg, fn = bce(**kw)
    each_reduction(f"bce/{tag}", "binary_cross_entropy", cfg,
                   {"input": rand(6, 3, lo=0.02, hi=0.98), "target": labels}, fn,
                   grads=["input", "target"])
cfg, fn = bce()
each_reduction("bce/probs_soft_targets", "binary_cross_entropy", cfg,
               {"input": rand(4, 5, lo=0.05, hi=0.95), "target": rand(4, 5, lo=0, hi=1)}, fn,
               grads=["input", "target"])
cfg, fn = bce()  # log clamped at -100: finite at exactly 0 and 1 (values only)
each_reduction("bce/probs_saturated", "binary_cross_entropy", cfg,
               {"input": torch.tensor([0.0, 1.0, 0.0, 1.0, 0.5]),
                "target": torch.tensor([1.0, 0.0, 0.0, 1.0, 1.0])}, fn)
for tag, kw in [("logits", {"logits": True}),
                ("logits_weights_pos", {"logits": True, "weights": W3, "pos_weights": [3.0, 0.5, 1.5]})]:
    cfg, fn = bce(**kw)
    each_reduction(f"bce/{tag}", "binary_cross_entropy", cfg,
                   {"input": rand(6, 3, lo=-4, hi=4), "target": labels}, fn,
                   grads=["input", "target"])
cfg, fn = bce(logits=True, pos_weights=[2.0])
each_reduction("bce/logits_extreme", "binary_cross_entropy", cfg,
               {"input": torch.tensor([[-100.0], [-30.0], [0.0], [30.0], [100.0], [-1e4]]),
                "target": torch.tensor([[1.0], [0.0], [1.0], [0.0], [1.0], [1.0]])}, fn,
               grads=["input"])
cfg, fn = bce(logits=True, pos_weights=[2.0, 1.0, 0.5])
each_reduction("bce/logits_f64", "binary_cross_entropy", cfg,
               {"input": rand(4, 3, lo=-5, hi=5, dtype=torch.float64),
                "target": rand(4, 3, lo=0, hi=1, dtype=torch.float64)}, fn,
               grads=["input", "target"], rtol=1e-12, atol=1e-14)

# ---- regression ------------------------------------------------------------------------
for tag, shape in [("2d", (4, 5)), ("3d", (2, 3, 4)), ("rank0", ())]:
    each_reduction(f"mse/{tag}", "mse", {}, {"input": rand(*shape), "target": rand(*shape)},
                   lambda input, target, reduction: F.mse_loss(input, target, reduction=reduction),
                   grads=["input", "target"])
for delta in [1.0, 0.5, 2.5]:
    each_reduction(f"huber/delta_{delta}", "huber", {"delta": delta},
                   {"input": rand(5, 6, lo=-3, hi=3), "target": rand(5, 6, lo=-3, hi=3)},
                   lambda input, target, reduction, d=delta: F.huber_loss(input, target, reduction=reduction, delta=d),
                   grads=["input", "target"])
for beta in [1.0, 0.3, 0.0]:
    each_reduction(f"smooth_l1/beta_{beta}", "smooth_l1", {"beta": beta},
                   {"input": rand(5, 6, lo=-3, hi=3), "target": rand(5, 6, lo=-3, hi=3)},
                   lambda input, target, reduction, b=beta: F.smooth_l1_loss(input, target, reduction=reduction, beta=b),
                   grads=["input", "target"])
each_reduction("huber/f64", "huber", {"delta": 0.7},
               {"input": rand(3, 4, dtype=torch.float64), "target": rand(3, 4, dtype=torch.float64)},
               lambda input, target, reduction: F.huber_loss(input, target, reduction=reduction, delta=0.7),
               grads=["input", "target"], rtol=1e-12, atol=1e-14)

# ---- KL divergence ---------------------------------------------------------------------
KL_RED = ["mean", "sum", "none", "batchmean"]
logq = rand(4, 5, lo=-3, hi=3).log_softmax(1)
p = rand(4, 5, lo=-3, hi=3).softmax(1)
each_reduction("kl/probs", "kl_div", {"log_target": False}, {"input": logq, "target": p},
               lambda input, target, reduction: F.kl_div(input, target, reduction=reduction),
               reductions=KL_RED, grads=["input", "target"])
each_reduction("kl/log_target", "kl_div", {"log_target": True}, {"input": logq, "target": p.log()},
               lambda input, target, reduction: F.kl_div(input, target, reduction=reduction, log_target=True),
               reductions=KL_RED, grads=["input", "target"])
pz = p.clone()
pz[0, 1] = 0.0
pz[2, 3] = 0.0
each_reduction("kl/zero_targets", "kl_div", {"log_target": False}, {"input": logq, "target": pz},
               lambda input, target, reduction: F.kl_div(input, target, reduction=reduction),
               reductions=KL_RED, grads=["input"])
each_reduction("kl/3d", "kl_div", {}, {"input": rand(2, 3, 4).log_softmax(2), "target": rand(2, 3, 4).softmax(2)},
               lambda input, target, reduction: F.kl_div(input, target, reduction=reduction),
               reductions=KL_RED, grads=["input", "target"])

# ---- margin losses ---------------------------------------------------------------------
signs = torch.tensor([1, -1, -1, 1, -1, 1])
for margin in [0.0, 0.3]:
    x1, x2 = rand(6, 5), rand(6, 5)
    x2[0] = x1[0] * 0.5 + 0.1  # some similar pairs so both branches are active
    x2[2] = x1[2] * 1.5
    each_reduction(f"cosine/margin_{margin}", "cosine_embedding", {"margin": margin},
                   {"input1": x1, "input2": x2, "target": signs},
                   lambda input1, input2, target, reduction, m=margin: F.cosine_embedding_loss(
                       input1, input2, target, margin=m, reduction=reduction),
                   grads=["input1", "input2"])
for sign in [1, -1]:
    x1 = rand(7)
    each_reduction(f"cosine/unbatched_{sign}", "cosine_embedding", {"margin": -0.5},
                   {"input1": x1, "input2": rand(7), "target": torch.tensor(sign)},
                   lambda input1, input2, target, reduction: F.cosine_embedding_loss(
                       input1, input2, target, margin=-0.5, reduction=reduction),
                   reductions=["mean", "sum"], grads=["input1", "input2"])
for margin in [0.0, 0.5]:
    each_reduction(f"ranking/margin_{margin}", "margin_ranking", {"margin": margin},
                   {"input1": rand(8), "input2": rand(8), "target": torch.tensor([1, -1, 1, 1, -1, -1, 1, -1])},
                   lambda input1, input2, target, reduction, m=margin: F.margin_ranking_loss(
                       input1, input2, target, margin=m, reduction=reduction),
                   grads=["input1", "input2"])
each_reduction("ranking/2d", "margin_ranking", {"margin": 0.2},
               {"input1": rand(3, 4), "input2": rand(3, 4), "target": torch.randint(0, 2, (3, 4)) * 2 - 1},
               lambda input1, input2, target, reduction: F.margin_ranking_loss(
                   input1, input2, target, margin=0.2, reduction=reduction),
               grads=["input1", "input2"])
for tag, kw in [("p2", {}), ("p1", {"p": 1.0}), ("p3", {"p": 3.0}), ("swap", {"swap": True}),
                ("margin_0.2_swap_p1", {"margin": 0.2, "swap": True, "p": 1.0}), ("eps", {"eps": 0.1})]:
    cfg = {"margin": 1.0, "p": 2.0, "eps": 1e-6, "swap": False}
    cfg.update(kw)
    a = rand(6, 5)
    pos = a + rand(6, 5, lo=-0.6, hi=0.6)
    neg = a + rand(6, 5, lo=-1.5, hi=1.5)
    neg[3] = pos[3] * 0.9  # a negative closer to the positive than to the anchor (swap matters)
    each_reduction(f"triplet/{tag}", "triplet_margin", cfg, {"anchor": a, "positive": pos, "negative": neg},
                   lambda anchor, positive, negative, reduction, c=cfg: F.triplet_margin_loss(
                       anchor, positive, negative, margin=c["margin"], p=c["p"], eps=c["eps"],
                       swap=c["swap"], reduction=reduction),
                   grads=["anchor", "positive", "negative"])
each_reduction("triplet/unbatched", "triplet_margin", {"margin": 2.0},
               {"anchor": rand(5), "positive": rand(5), "negative": rand(5)},
               lambda anchor, positive, negative, reduction: F.triplet_margin_loss(
                   anchor, positive, negative, margin=2.0, reduction=reduction),
               reductions=["mean", "sum"], grads=["anchor", "positive", "negative"])


# ---- CTC -------------------------------------------------------------------------------
def ctc(cid, t, c, targets, il, tl, blank=0, zero_infinity=False, dtype=torch.float32,
        grads=True, reductions=RED, **kw):
    n = len(il)
    logits = rand(t, n, c, lo=-2, hi=2, dtype=dtype)

    def fn(logits, targets, input_lengths, target_lengths, reduction):
        return F.ctc_loss(logits.log_softmax(2), targets, input_lengths, target_lengths,
                          blank=blank, reduction=reduction, zero_infinity=zero_infinity)
    each_reduction(cid, "ctc", {"blank": blank, "zero_infinity": zero_infinity},
                   {"logits": logits, "targets": torch.tensor(targets),
                    "input_lengths": torch.tensor(il), "target_lengths": torch.tensor(tl)},
                   fn, reductions=reductions, grads=["logits"] if grads else [], **kw)


ctc("ctc/lengths", 12, 5, [[1, 2, 3, 4], [2, 2, 0, 0], [4, 1, 4, 0]], [12, 9, 10], [4, 2, 3])
ctc("ctc/repeats", 10, 4, [[1, 1, 2, 2], [3, 3, 3, 1]], [10, 8], [4, 4])
ctc("ctc/blank_last", 9, 6, [[0, 4, 2], [1, 0, 3]], [9, 7], [3, 3], blank=5)
ctc("ctc/empty_target", 6, 4, [[1, 2], [3, 1]], [6, 4], [0, 2])
ctc("ctc/tight", 7, 4, [[1, 1, 2, 3]], [5], [4])  # 1,_,1,2,3: exactly 5 frames
ctc("ctc/zero_infinity", 8, 5, [[1, 1, 1, 1], [2, 3, 0, 0]], [5, 8], [4, 2], zero_infinity=True)
ctc("ctc/infinite", 8, 5, [[1, 1, 1, 1], [2, 3, 0, 0]], [5, 8], [4, 2], grads=False)
ctc("ctc/long", 40, 8, [[1, 2, 3, 4, 5, 6, 7, 1, 2, 3], [7, 7, 6, 6, 5, 0, 0, 0, 0, 0]],
    [40, 31], [10, 5], rtol=2e-5, atol=2e-6)
ctc("ctc/f64", 10, 5, [[1, 2, 2], [3, 4, 0]], [10, 6], [3, 2], dtype=torch.float64,
    rtol=1e-11, atol=1e-13)

# ---- API breadth: NLL, L1, Poisson and Gaussian NLL, hinge losses, BCE element weights ----
# (appended after the other cases, so that theirs keep their random inputs)
logp = F.log_softmax(rand(6, 4), 1).detach()
for tag, cfg in [("plain", {}), ("weights", {"weights": W4}), ("ignore", {"ignore_index": 1}),
                 ("weights_ignore", {"weights": W4, "ignore_index": 2})]:
    full = {"ignore_index": -100, "weights": [], **cfg}
    w = torch.tensor(full["weights"]) if full["weights"] else None
    each_reduction(f"nll/{tag}", "nll", full, {"input": logp, "target": torch.tensor([0, 1, 2, 3, 1, 2])},
                   lambda input, target, reduction, w=w, ii=full["ignore_index"]: F.nll_loss(
                       input, target, weight=w, ignore_index=ii, reduction=reduction), grads=["input"])
each_reduction("nll/spatial", "nll", {"ignore_index": -100, "weights": []},
               {"input": F.log_softmax(rand(2, 3, 4), 1).detach(), "target": torch.randint(0, 3, (2, 4))},
               lambda input, target, reduction: F.nll_loss(input, target, reduction=reduction),
               grads=["input"])
each_reduction("l1", "l1", {}, {"input": rand(3, 5), "target": rand(3, 5)},
               lambda input, target, reduction: F.l1_loss(input, target, reduction=reduction),
               grads=["input", "target"])
for tag, cfg in [("log_input", {"log_input": True, "full": False}),
                 ("rate", {"log_input": False, "full": False}),
                 ("full", {"log_input": True, "full": True})]:
    x = rand(4, 5, lo=-1, hi=1.5) if cfg["log_input"] else rand(4, 5, lo=0.1, hi=4)
    y = torch.randint(0, 6, (4, 5)).float()
    each_reduction(f"poisson/{tag}", "poisson_nll", {**cfg, "eps": 1e-8}, {"input": x, "target": y},
                   lambda input, target, reduction, c=cfg: F.poisson_nll_loss(
                       input, target, log_input=c["log_input"], full=c["full"], reduction=reduction),
                   grads=["input"])
for tag, var, full in [("same_shape", rand(4, 3, lo=0.5, hi=2), False),
                       ("last_dim_1", rand(4, 1, lo=0.5, hi=2), False),
                       ("full", rand(4, 3, lo=0.5, hi=2), True)]:
    each_reduction(f"gaussian/{tag}", "gaussian_nll", {"full": full, "eps": 1e-6},
                   {"input": rand(4, 3), "target": rand(4, 3), "var": var},
                   lambda input, target, var, reduction, f=full: F.gaussian_nll_loss(
                       input, target, var, full=f, reduction=reduction),
                   grads=["input", "target", "var"])
tgt = torch.tensor([1, -1, -1, 1, -1, 1, 1, -1, -1, 1]).reshape(2, 5)
for margin in (1.0, 0.5):
    each_reduction(f"hinge_embedding/margin_{margin}", "hinge_embedding", {"margin": margin},
                   {"input": rand(2, 5), "target": tgt},
                   lambda input, target, reduction, m=margin: F.hinge_embedding_loss(
                       input, target.float(), margin=m, reduction=reduction), grads=["input"])
for tag, cfg in [("p1", {"p": 1, "margin": 1.0}), ("p2", {"p": 2, "margin": 1.0}),
                 ("margin_weights", {"p": 1, "margin": 0.5, "weights": W4})]:
    full = {"weights": [], **cfg}
    w = torch.tensor(full["weights"]) if full["weights"] else None
    each_reduction(f"multi_margin/{tag}", "multi_margin", full,
                   {"input": rand(5, 4, lo=-1, hi=1), "target": torch.tensor([0, 3, 1, 2, 3])},
                   lambda input, target, reduction, c=full, w=w: F.multi_margin_loss(
                       input, target, p=c["p"], margin=c["margin"], weight=w, reduction=reduction),
                   grads=["input"])
for tag, cfg in [("plain", {}), ("weights", {"weights": W4})]:
    full = {"weights": [], **cfg}
    w = torch.tensor(full["weights"]) if full["weights"] else None
    each_reduction(f"multilabel_soft_margin/{tag}", "multilabel_soft_margin", full,
                   {"input": rand(3, 4, lo=-3, hi=3), "target": torch.randint(0, 2, (3, 4)).float()},
                   lambda input, target, reduction, w=w: F.multilabel_soft_margin_loss(
                       input, target, weight=w, reduction=reduction), grads=["input"])
for tag, logits in [("probs", False), ("logits", True)]:
    x = rand(3, 4) if logits else rand(3, 4, lo=0.05, hi=0.95)
    fn = F.binary_cross_entropy_with_logits if logits else F.binary_cross_entropy
    each_reduction(f"bce_element_weights/{tag}", "binary_cross_entropy_weighted",
                   {"logits": logits, "weights": [], "pos_weights": []},
                   {"input": x, "target": torch.rand(3, 4), "weight": rand(3, 1, lo=0, hi=2)},
                   lambda input, target, weight, reduction, fn=fn: fn(
                       input, target, weight=weight, reduction=reduction), grads=["input"])

out = os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "loss_goldens.json")
with open(out, "w") as f:
    json.dump({"generator": "tools/gen_loss_goldens.py", "torch": torch.__version__,
               "cases": CASES}, f, separators=(",", ":"))
    f.write("\n")
print(f"{len(CASES)} cases -> {os.path.normpath(out)}")
