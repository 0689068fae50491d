#!/usr/bin/env python3
"""Writes tests/optim/optim_goldens.json: optimizer trajectories and LR schedules.

Run with Debian's python3-torch:  /usr/bin/python3 tools/gen_optim_goldens.py

The problem: a tiny MLP on fixed data, with parameters of ranks 2, 1 and 0 and one parameter
the loss does not use (it has no gradient):

    out  = (tanh(x @ fc1.weight + fc1.bias) @ fc2.weight + fc2.bias) * temperature
    loss = mean((out - y)^2)

Weights are stored [d_input, d_output], as ember's Linear does. Every value in the problem is
exactly representable in float32, so the float32 and float64 runs start from the same point.

For each case the parameters are recorded after every step, once in float64 and once in
float32. SGD, Adam, AdamW, RMSprop, Adagrad and LBFGS run on torch.optim (only the options a
case changes are passed, so ember's defaults are checked against PyTorch's). torch 1.13 has
no Adan and no Muon: their trajectories come from the reference implementations below,
written from the papers' algorithms ("reference": "independent ..." in the JSON).

Schedules: the lr of 30+ consecutive steps from torch.optim.lr_scheduler (Noam from its
formula).
"""
import inspect
import json
import math
import os
import warnings

import numpy as np
import torch

warnings.filterwarnings("ignore")
torch.set_num_threads(1)
OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "optim",
                   "optim_goldens.json")
STEPS = 6
DTYPES = {"f64": torch.float64, "f32": torch.float32}

# ---- the problem ---------------------------------------------------------------------------
rng = np.random.RandomState(1234)


def f32_values(shape, scale):
    """Values rounded to float32 (so both dtypes start from the same numbers)."""
    return (rng.standard_normal(shape) * scale).astype(np.float32).astype(np.float64)


X = f32_values((6, 3), 1.0)
Y = f32_values((6, 2), 0.8)
PARAMS = [
    ("fc1.weight", f32_values((3, 4), 0.6)),
    ("fc1.bias", f32_values((4,), 0.3)),
    ("fc2.weight", f32_values((4, 2), 0.6)),
    ("fc2.bias", f32_values((2,), 0.3)),
    ("temperature", np.array(1.25)),
    ("unused", f32_values((3,), 0.5)),
]
PATHS = [p for p, _ in PARAMS]
MICRO_BATCHES = [(0, 3), (3, 6)]


def make_params(dt):
    return [torch.tensor(v, dtype=dt, requires_grad=True) for _, v in PARAMS]


def loss_fn(ps, lo=0, hi=6):
    w1, b1, w2, b2, temp, _unused = ps
    dt = w1.dtype
    x = torch.tensor(X[lo:hi], dtype=dt)
    y = torch.tensor(Y[lo:hi], dtype=dt)
    out = (torch.tanh(x @ w1 + b1) @ w2 + b2) * temp
    return ((out - y) ** 2).mean()


def compute_grads(ps, accumulate):
    """Sets p.grad: the full-batch gradient, or the sum over micro-batches."""
    for p in ps:
        p.grad = None
    if accumulate == 1:
        loss_fn(ps).backward()
    else:
        for lo, hi in MICRO_BATCHES:
            loss_fn(ps, lo, hi).backward()


def clip(ps, c):
    if not c or c["kind"] == "none":
        return
    with_grad = [p for p in ps if p.grad is not None]
    if c["kind"] == "value":
        torch.nn.utils.clip_grad_value_(with_grad, c["threshold"])
    elif c["kind"] == "norm":
        for p in with_grad:
            torch.nn.utils.clip_grad_norm_([p], c["threshold"])
    elif c["kind"] == "global_norm":
        torch.nn.utils.clip_grad_norm_(with_grad, c["threshold"])
    else:
        raise ValueError(c)


def group_of(path, groups):
    """The index of the longest matching group prefix, or None."""
    best, best_len = None, -1
    for i, g in enumerate(groups):
        pre = g["prefix"]
        if path == pre or path.startswith(pre + ".") or pre == "":
            if len(pre) >= best_len:
                best, best_len = i, len(pre)
    return best


def flat(ps):
    return [p.detach().to(torch.float64).reshape(-1).tolist() for p in ps]


# ---- torch.optim cases ---------------------------------------------------------------------
def torch_kwargs(kind, config):
    """ember config keys -> torch keyword arguments (only the ones the case sets)."""
    kw = {}
    for k, v in config.items():
        if k == "grad_clipping":
            continue
        if k in ("beta1", "beta2"):
            continue
        if kind == "Lbfgs" and k == "line_search":
            kw["line_search_fn"] = None if v == "none" else v
        elif kind == "Lbfgs" and k == "max_eval":
            kw["max_eval"] = None if v == 0 else v
        else:
            kw[k] = v
    if "beta1" in config or "beta2" in config:
        defaults = inspect.signature(TORCH[kind].__init__).parameters["betas"].default
        kw["betas"] = (config.get("beta1", defaults[0]), config.get("beta2", defaults[1]))
    return kw


TORCH = {
    "Sgd": torch.optim.SGD,
    "Adam": torch.optim.Adam,
    "AdamW": torch.optim.AdamW,
    "RmsProp": torch.optim.RMSprop,
    "AdaGrad": torch.optim.Adagrad,
    "Lbfgs": torch.optim.LBFGS,
}


def run_torch(case, dt):
    kind, config = case["optimizer"], case["config"]
    ps = make_params(dt)
    kw = torch_kwargs(kind, config)
    lrs = case["lrs"]
    groups = case.get("groups", [])
    if groups:
        buckets = {}
        for path, p in zip(PATHS, ps):
            buckets.setdefault(group_of(path, groups), []).append(p)
        param_groups = []
        for gi, plist in buckets.items():
            d = {"params": plist, "lr": lrs[0] * (groups[gi]["lr_scale"] if gi is not None else 1)}
            if gi is not None and "weight_decay" in groups[gi]:
                d["weight_decay"] = groups[gi]["weight_decay"]
            d["_scale"] = groups[gi]["lr_scale"] if gi is not None else 1.0
            param_groups.append(d)
        scales = [d.pop("_scale") for d in param_groups]
        opt = TORCH[kind](param_groups, lr=lrs[0], **kw)
    else:
        scales = [1.0]
        opt = TORCH[kind](ps, lr=lrs[0], **kw)
    trajectory, losses = [], []
    for step in range(STEPS):
        for g, s in zip(opt.param_groups, scales):
            g["lr"] = lrs[step] * s
        if kind == "Lbfgs":
            def closure():
                opt.zero_grad(set_to_none=True)
                loss = loss_fn(ps)
                loss.backward()
                clip(ps, config.get("grad_clipping"))
                return loss
            losses.append(float(opt.step(closure)))
        else:
            compute_grads(ps, case.get("accumulate", 1))
            clip(ps, config.get("grad_clipping"))
            opt.step()
        trajectory.append(flat(ps))
    return trajectory, losses


# ---- independent references (float64 and float32, plain torch ops) -------------------------
# Adan, from Xie et al. 2022 (Algorithm 1) with the bias correction of the authors' code; the
# betas here are decay rates (the paper's beta_k is 1 - beta_k here).
ADAN_DEFAULTS = dict(beta1=0.98, beta2=0.92, beta3=0.99, eps=1e-8, weight_decay=0.0,
                     no_prox=False)
# Muon, from Jordan et al. 2024 and PyTorch's later torch.optim.Muon documentation.
MUON_DEFAULTS = dict(momentum=0.95, nesterov=True, weight_decay=0.1, ns_steps=5, ns_a=3.4445,
                     ns_b=-4.7750, ns_c=2.0315, eps=1e-7, adjust_lr="original", adamw_params=[],
                     adamw_lr_scale=1.0, adamw_beta1=0.9, adamw_beta2=0.999, adamw_eps=1e-8)


def adan_reference(p, g, st, lr, wd, c):
    """One Adan step on tensor p (returns the new value); st holds this parameter's state."""
    b1, b2, b3 = c["beta1"], c["beta2"], c["beta3"]
    st["k"] = st.get("k", 0) + 1
    k = st["k"]
    diff = g - st["prev"] if "prev" in st else torch.zeros_like(g)
    st["m"] = b1 * st.get("m", torch.zeros_like(g)) + (1 - b1) * g
    st["v"] = b2 * st.get("v", torch.zeros_like(g)) + (1 - b2) * diff
    st["n"] = b3 * st.get("n", torch.zeros_like(g)) + (1 - b3) * (g + b2 * diff) ** 2
    st["prev"] = g.clone()
    m_hat = st["m"] / (1 - b1 ** k)
    v_hat = st["v"] / (1 - b2 ** k)
    n_hat_sqrt = st["n"].sqrt() / math.sqrt(1 - b3 ** k)
    step = (m_hat + b2 * v_hat) / (n_hat_sqrt + c["eps"])
    if c["no_prox"]:
        return p * (1 - lr * wd) - lr * step
    return (p - lr * step) / (1 + lr * wd)


def orthogonalize(m, c):
    """Quintic Newton-Schulz iteration towards the nearest semi-orthogonal matrix."""
    a, b, cc = c["ns_a"], c["ns_b"], c["ns_c"]
    transpose = m.shape[0] > m.shape[1]
    x = m.T if transpose else m
    x = x / torch.clamp(torch.linalg.norm(x), min=c["eps"])
    for _ in range(c["ns_steps"]):
        gram = x @ x.T
        x = a * x + (b * gram + cc * (gram @ gram)) @ x
    return x.T if transpose else x


def muon_reference(path, p, g, st, lr, wd, c):
    st["k"] = st.get("k", 0) + 1
    muon = p.dim() == 2 and not any(path == q or path.startswith(q + ".")
                                    for q in c["adamw_params"])
    if muon:
        mu = c["momentum"]
        st["buf"] = mu * st.get("buf", torch.zeros_like(g)) + (1 - mu) * g
        upd = (1 - mu) * g + mu * st["buf"] if c["nesterov"] else st["buf"]
        o = orthogonalize(upd, c)
        d_in, d_out = p.shape  # ember layout [d_input, d_output]
        if c["adjust_lr"] == "original":
            scale = math.sqrt(max(1.0, d_out / d_in))
        else:
            scale = 0.2 * math.sqrt(max(d_in, d_out))
        return p * (1 - lr * wd) - lr * scale * o
    # AdamW for everything else
    lr = lr * c["adamw_lr_scale"]
    b1, b2, k = c["adamw_beta1"], c["adamw_beta2"], st["k"]
    p = p * (1 - lr * wd)
    st["m"] = b1 * st.get("m", torch.zeros_like(g)) + (1 - b1) * g
    st["v"] = b2 * st.get("v", torch.zeros_like(g)) + (1 - b2) * g * g
    denom = st["v"].sqrt() / math.sqrt(1 - b2 ** k) + c["adamw_eps"]
    return p - (lr / (1 - b1 ** k)) * st["m"] / denom


def run_reference(case, dt):
    kind = case["optimizer"]
    c = dict(ADAN_DEFAULTS if kind == "Adan" else MUON_DEFAULTS)
    c.update({k: v for k, v in case["config"].items() if k != "grad_clipping"})
    ps = make_params(dt)
    groups = case.get("groups", [])
    states = [dict() for _ in ps]
    trajectory = []
    for step in range(STEPS):
        compute_grads(ps, case.get("accumulate", 1))
        clip(ps, case["config"].get("grad_clipping"))
        with torch.no_grad():
            for i, (path, p) in enumerate(zip(PATHS, ps)):
                if p.grad is None:
                    continue
                gi = group_of(path, groups)
                lr = case["lrs"][step] * (groups[gi]["lr_scale"] if gi is not None else 1)
                wd = c["weight_decay"]
                if gi is not None and "weight_decay" in groups[gi]:
                    wd = groups[gi]["weight_decay"]
                g = p.grad.detach()
                if kind == "Adan":
                    new = adan_reference(p.detach(), g, states[i], lr, wd, c)
                else:
                    new = muon_reference(path, p.detach(), g, states[i], lr, wd, c)
                p.copy_(new)
        trajectory.append(flat(ps))
    return trajectory


# ---- the cases -----------------------------------------------------------------------------
CASES = []


def case(name, optimizer, lr, config=None, **extra):
    lrs = extra.pop("lrs", [lr] * STEPS)
    CASES.append(dict(name=name, optimizer=optimizer, config=config or {}, lrs=lrs, **extra))


CLIPS = {
    "clip_value": {"kind": "value", "threshold": 0.05},
    "clip_norm": {"kind": "norm", "threshold": 0.1},
    "clip_global_norm": {"kind": "global_norm", "threshold": 0.2},
}

# SGD
case("sgd", "Sgd", 0.1)
case("sgd_momentum", "Sgd", 0.1, {"momentum": 0.9})
case("sgd_momentum_dampening", "Sgd", 0.1, {"momentum": 0.9, "dampening": 0.3})
case("sgd_nesterov", "Sgd", 0.1, {"momentum": 0.9, "nesterov": True})
case("sgd_weight_decay", "Sgd", 0.1, {"weight_decay": 0.1})
case("sgd_nesterov_weight_decay", "Sgd", 0.1, {"momentum": 0.8, "nesterov": True,
                                                "weight_decay": 0.05})
case("sgd_maximize", "Sgd", 0.05, {"momentum": 0.5, "maximize": True})
case("sgd_varying_lr", "Sgd", 0, {"momentum": 0.9}, lrs=[0.2, 0.15, 0.1, 0.05, 0.02, 0.01])
# Adam / AdamW
case("adam", "Adam", 0.01)
case("adam_amsgrad", "Adam", 0.01, {"amsgrad": True})
case("adam_weight_decay", "Adam", 0.01, {"weight_decay": 0.1})
case("adam_amsgrad_weight_decay", "Adam", 0.01, {"amsgrad": True, "weight_decay": 0.1})
case("adam_betas_eps", "Adam", 0.02, {"beta1": 0.8, "beta2": 0.9, "eps": 1e-3})
case("adam_maximize", "Adam", 0.01, {"maximize": True})
case("adamw", "AdamW", 0.01)
case("adamw_weight_decay_amsgrad", "AdamW", 0.01, {"weight_decay": 0.3, "amsgrad": True})
case("adamw_betas_eps", "AdamW", 0.02, {"beta1": 0.7, "beta2": 0.95, "eps": 1e-4})
# RMSprop
case("rmsprop", "RmsProp", 0.01)
case("rmsprop_centered", "RmsProp", 0.01, {"centered": True})
case("rmsprop_momentum", "RmsProp", 0.01, {"momentum": 0.9})
case("rmsprop_centered_momentum_weight_decay", "RmsProp", 0.01,
     {"centered": True, "momentum": 0.5, "weight_decay": 0.1})
case("rmsprop_alpha_eps", "RmsProp", 0.01, {"alpha": 0.9, "eps": 1e-4})
case("rmsprop_maximize", "RmsProp", 0.01, {"maximize": True})
# Adagrad
case("adagrad", "AdaGrad", 0.1)
case("adagrad_lr_decay", "AdaGrad", 0.1, {"lr_decay": 0.1})
case("adagrad_initial_accumulator", "AdaGrad", 0.1, {"initial_accumulator_value": 0.5})
case("adagrad_weight_decay_eps", "AdaGrad", 0.1, {"weight_decay": 0.1, "eps": 1e-3})
case("adagrad_maximize", "AdaGrad", 0.1, {"maximize": True})
# Adan (independent reference)
case("adan", "Adan", 0.01)
case("adan_weight_decay_prox", "Adan", 0.01, {"weight_decay": 0.2})
case("adan_weight_decay_no_prox", "Adan", 0.01, {"weight_decay": 0.2, "no_prox": True})
case("adan_betas_eps", "Adan", 0.02, {"beta1": 0.9, "beta2": 0.8, "beta3": 0.95, "eps": 1e-4})
# Muon (independent reference)
case("muon", "Muon", 0.02)
case("muon_no_nesterov", "Muon", 0.02, {"nesterov": False, "momentum": 0.9})
case("muon_match_rms_adamw", "Muon", 0.02, {"adjust_lr": "match_rms_adamw", "weight_decay": 0})
case("muon_adamw_params", "Muon", 0.02, {"adamw_params": ["fc2"], "adamw_lr_scale": 0.5,
                                        "ns_steps": 3})
# L-BFGS
case("lbfgs", "Lbfgs", 0.5, {"max_iter": 5, "history_size": 3})
case("lbfgs_strong_wolfe", "Lbfgs", 1.0, {"max_iter": 5, "history_size": 3,
                                          "line_search": "strong_wolfe"})
case("lbfgs_tolerance", "Lbfgs", 0.5, {"max_iter": 8, "max_eval": 6, "tolerance_change": 1e-3})
case("lbfgs_defaults", "Lbfgs", 0.3)

# every optimizer with every clipping mode
BASE = {
    "Sgd": (0.1, {"momentum": 0.9}),
    "Adam": (0.01, {}),
    "AdamW": (0.01, {}),
    "RmsProp": (0.01, {}),
    "AdaGrad": (0.1, {}),
    "Adan": (0.01, {}),
    "Muon": (0.02, {}),
    "Lbfgs": (0.2, {"max_iter": 3, "history_size": 3}),
}
# L-BFGS's curvature pairs come from clipped gradients: thresholds that clip only early on
# keep it stable (tighter ones make both PyTorch and ember diverge)
LBFGS_CLIPS = {
    "clip_value": {"kind": "value", "threshold": 0.3},
    "clip_norm": {"kind": "norm", "threshold": 0.5},
    "clip_global_norm": {"kind": "global_norm", "threshold": 1.2},
}
for opt_name, (lr, cfg) in BASE.items():
    for clip_name, c in (LBFGS_CLIPS if opt_name == "Lbfgs" else CLIPS).items():
        case(f"{opt_name.lower()}_{clip_name}", opt_name, lr, dict(cfg, grad_clipping=c))
# every optimizer (but L-BFGS) with gradient accumulation over two micro-batches
for opt_name, (lr, cfg) in BASE.items():
    if opt_name != "Lbfgs":
        case(f"{opt_name.lower()}_accumulate", opt_name, lr, dict(cfg), accumulate=2)
case("adam_accumulate_clip_global_norm", "Adam", 0.01,
     {"grad_clipping": CLIPS["clip_global_norm"]}, accumulate=2)
# parameter groups: lr scale and weight decay by path prefix
case("sgd_groups", "Sgd", 0.1, {"momentum": 0.9, "weight_decay": 0.1},
     groups=[{"prefix": "fc1", "lr_scale": 0.1, "weight_decay": 0.0},
             {"prefix": "fc2.bias", "lr_scale": 3.0}])
case("adamw_groups", "AdamW", 0.01, {"weight_decay": 0.2},
     groups=[{"prefix": "fc2", "lr_scale": 0.5}, {"prefix": "temperature", "lr_scale": 1.0,
                                                  "weight_decay": 0.0}])
case("adan_groups", "Adan", 0.01, {"weight_decay": 0.1},
     groups=[{"prefix": "fc1", "lr_scale": 2.0, "weight_decay": 0.0}])
case("muon_groups", "Muon", 0.02, {},
     groups=[{"prefix": "fc1", "lr_scale": 0.5, "weight_decay": 0.0}])


# ---- schedules -----------------------------------------------------------------------------
def torch_schedule(make, base_lr, n):
    p = torch.zeros(1, requires_grad=True)
    opt = torch.optim.SGD([p], lr=base_lr)
    sched = make(opt)
    out = []
    for _ in range(n):
        out.append(opt.param_groups[0]["lr"])
        opt.step()
        sched.step()
    return out


S = torch.optim.lr_scheduler
SCHEDULES = []


def schedule(name, spec, lrs, reference):
    SCHEDULES.append(dict(name=name, scheduler=spec, lrs=lrs, reference=reference))


schedule("constant", {"kind": "Constant", "config": {"lr": 0.03}},
         torch_schedule(lambda o: S.LambdaLR(o, lambda e: 1.0), 0.03, 32), "torch LambdaLR(1)")
schedule("linear", {"kind": "Linear", "config": {"lr": 0.1, "start_factor": 0.25,
                                                 "end_factor": 0.9, "total_iters": 12}},
         torch_schedule(lambda o: S.LinearLR(o, start_factor=0.25, end_factor=0.9,
                                             total_iters=12), 0.1, 32), "torch LinearLR")
schedule("linear_defaults", {"kind": "Linear", "config": {"lr": 0.1}},
         torch_schedule(lambda o: S.LinearLR(o), 0.1, 32), "torch LinearLR")
schedule("exponential", {"kind": "Exponential", "config": {"lr": 0.05, "gamma": 0.9}},
         torch_schedule(lambda o: S.ExponentialLR(o, gamma=0.9), 0.05, 40), "torch ExponentialLR")
schedule("step", {"kind": "Step", "config": {"lr": 0.1, "step_size": 4, "gamma": 0.5}},
         torch_schedule(lambda o: S.StepLR(o, step_size=4, gamma=0.5), 0.1, 35), "torch StepLR")
schedule("cosine", {"kind": "CosineAnnealing", "config": {"lr": 0.1, "num_iters": 32,
                                                          "min_lr": 0.001}},
         torch_schedule(lambda o: S.CosineAnnealingLR(o, T_max=32, eta_min=0.001), 0.1, 33),
         "torch CosineAnnealingLR")
schedule("cosine_warmup", {"kind": "CosineAnnealing",
                           "config": {"lr": 0.1, "num_iters": 35, "min_lr": 0.002,
                                      "warmup_iters": 5, "warmup_start_factor": 0.1}},
         torch_schedule(lambda o: S.SequentialLR(
             o, [S.LinearLR(o, start_factor=0.1, end_factor=1.0, total_iters=5),
                 S.CosineAnnealingLR(o, T_max=30, eta_min=0.002)], milestones=[5]), 0.1, 36),
         "torch SequentialLR(LinearLR, CosineAnnealingLR)")
noam = dict(lr=2.0, warmup_steps=10, d_model=64)
schedule("noam", {"kind": "Noam", "config": noam},
         [noam["lr"] * noam["d_model"] ** -0.5 * min((i + 1) ** -0.5,
                                                      (i + 1) * noam["warmup_steps"] ** -1.5)
          for i in range(40)], "formula (Vaswani et al. 2017)")
schedule("sequential",
         {"kind": "Sequential", "milestones": [6, 15], "children": [
             {"kind": "Linear", "config": {"lr": 0.1, "start_factor": 0.2, "end_factor": 1.0,
                                           "total_iters": 4}},
             {"kind": "Exponential", "config": {"lr": 0.1, "gamma": 0.9}},
             {"kind": "Step", "config": {"lr": 0.1, "step_size": 3, "gamma": 0.5}}]},
         torch_schedule(lambda o: S.SequentialLR(
             o, [S.LinearLR(o, start_factor=0.2, end_factor=1.0, total_iters=4),
                 S.ExponentialLR(o, gamma=0.9), S.StepLR(o, step_size=3, gamma=0.5)],
             milestones=[6, 15]), 0.1, 35), "torch SequentialLR")
schedule("composed",
         {"kind": "Composed", "children": [
             {"kind": "Exponential", "config": {"lr": 0.1, "gamma": 0.95}},
             {"kind": "Step", "config": {"lr": 1.0, "step_size": 5, "gamma": 0.5}},
             {"kind": "Linear", "config": {"lr": 1.0, "start_factor": 0.5, "end_factor": 1.0,
                                           "total_iters": 8}}]},
         torch_schedule(lambda o: S.ChainedScheduler(
             [S.ExponentialLR(o, gamma=0.95), S.StepLR(o, step_size=5, gamma=0.5),
              S.LinearLR(o, start_factor=0.5, end_factor=1.0, total_iters=8)]), 0.1, 35),
         "torch ChainedScheduler")


# ---- write ---------------------------------------------------------------------------------
def main():
    out_cases = []
    for c in CASES:
        runner = run_reference if c["optimizer"] in ("Adan", "Muon") else run_torch
        rec = dict(c)
        rec["reference"] = ("independent reference in tools/gen_optim_goldens.py (paper)"
                            if runner is run_reference
                            else f"torch.optim.{TORCH[c['optimizer']].__name__} {torch.__version__}")
        rec["results"] = {}
        for dname, dt in DTYPES.items():
            if runner is run_reference:
                rec["results"][dname] = run_reference(c, dt)
            else:
                traj, losses = run_torch(c, dt)
                rec["results"][dname] = traj
                if losses:
                    rec.setdefault("losses", {})[dname] = losses
        out_cases.append(rec)
    doc = {
        "about": "Written by tools/gen_optim_goldens.py; see its docstring.",
        "problem": {
            "x": {"shape": list(X.shape), "values": X.reshape(-1).tolist()},
            "y": {"shape": list(Y.shape), "values": Y.reshape(-1).tolist()},
            "params": [{"path": p, "shape": list(v.shape), "values": v.reshape(-1).tolist()}
                       for p, v in PARAMS],
            "micro_batches": [list(b) for b in MICRO_BATCHES],
            "steps": STEPS,
        },
        "cases": out_cases,
        "schedules": SCHEDULES,
    }
    with open(OUT, "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
        f.write("\n")
    print(f"wrote {len(out_cases)} optimizer cases and {len(SCHEDULES)} schedules to "
          f"{os.path.relpath(OUT)}")


if __name__ == "__main__":
    main()
