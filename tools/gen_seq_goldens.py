#!/usr/bin/env python3
"""Writes tests/nn/seq_goldens.json: PyTorch's outputs and gradients for ember's sequence
layers (ember/nn/layers/{rnn,attention,transformer,positional}.h).

Run with Debian's python3-torch:  /usr/bin/python3 tools/gen_seq_goldens.py
Each case names a key; tests/nn/seq_test.cpp maps the key to the ember layer. Every case
also stores PyTorch's parameter count ("torch_params") and its call options ("opts").

Recurrent layers return (output, final state); their cases compare one flat tensor:
cat(output.flatten(), h_n.flatten()[, c_n.flatten()]), so the gradients flow through both.
"""
import math
import os
import sys

import torch
import torch.nn as tnn
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(__file__))
from nn_golden_lib import Cases, same, transposed  # noqa: E402

torch.manual_seed(0)
C = Cases()


def rnd(*s, lo=-1.0, hi=1.0):
    return torch.rand(s) * (hi - lo) + lo


def count(m):
    return sum(p.numel() for p in m.parameters())


def add(key, config, params, inputs, forward, module, opts=None, tag="", **kw):
    extra = {"torch_params": count(module) if module is not None else 0, "opts": opts or {}}
    C.add(key, config, params, inputs, forward, tag=tag, extra=extra, **kw)


# ---- recurrent layers -----------------------------------------------------------------------
# ember: layers.k.{fwd,rev}.{ih,hh}.{weight [d_in, G*H], bias [G*H]}; PyTorch keeps the
# transposed weights under weight_{ih,hh}_l{k}[_reverse] with the same gate order.
def rnn_params(m):
    out = []
    dirs = 2 if m.bidirectional else 1
    for k in range(m.num_layers):
        for d in range(dirs):
            sfx = "_l%d%s" % (k, "_reverse" if d else "")
            base = "layers.%d.%s." % (k, "rev" if d else "fwd")
            for p in ("ih", "hh"):
                out.append((base + p + ".weight", getattr(m, "weight_%s%s" % (p, sfx)), transposed))
                if m.bias:
                    out.append((base + p + ".bias", getattr(m, "bias_%s%s" % (p, sfx)), same))
    return out


def flat(*ts):
    return torch.cat([t.reshape(-1) for t in ts])


def rnn_case(key, cls, cfg, shape, with_state, tag):
    kw = dict(num_layers=cfg.get("num_layers", 1), bias=cfg.get("bias", True),
              batch_first=cfg.get("batch_first", False),
              bidirectional=cfg.get("bidirectional", False))
    if key == "rnn":
        kw["nonlinearity"] = cfg.get("nonlinearity", "tanh")
    m = cls(cfg["d_input"], cfg["d_hidden"], **kw)
    dirs = 2 if kw["bidirectional"] else 1
    batch = shape[0] if kw["batch_first"] else shape[1]
    state_shape = (kw["num_layers"] * dirs, batch, cfg["d_hidden"])
    inputs = [rnd(*shape)]
    if with_state:
        inputs.append(rnd(*state_shape))
        if key == "lstm":
            inputs.append(rnd(*state_shape))

    def fwd(x, *state):
        if key == "lstm":
            y, (h, c) = m(x, (state[0], state[1]) if state else None)
            return flat(y, h, c)
        y, h = m(x, state[0] if state else None)
        return flat(y, h)

    add(key, cfg, rnn_params(m), inputs, fwd, m, opts={"state": with_state}, tag=tag)


for key, cls in [("rnn", tnn.RNN), ("lstm", tnn.LSTM), ("gru", tnn.GRU)]:
    rnn_case(key, cls, {"d_input": 4, "d_hidden": 5}, (6, 3, 4), False, "basic")
    rnn_case(key, cls, {"d_input": 4, "d_hidden": 5, "batch_first": True}, (3, 6, 4), True,
             "batch_first_state")
    rnn_case(key, cls, {"d_input": 3, "d_hidden": 4, "num_layers": 2, "bidirectional": True},
             (5, 2, 3), True, "bidir_2layers_state")
    rnn_case(key, cls, {"d_input": 3, "d_hidden": 4, "num_layers": 2, "batch_first": True,
                        "bidirectional": True}, (2, 5, 3), False, "bidir_2layers_batch_first")
    rnn_case(key, cls, {"d_input": 3, "d_hidden": 4, "bias": False}, (4, 2, 3), False, "no_bias")
rnn_case("rnn", tnn.RNN, {"d_input": 4, "d_hidden": 5, "nonlinearity": "relu", "num_layers": 2},
         (6, 3, 4), True, "relu_2layers")
rnn_case("rnn", tnn.RNN, {"d_input": 3, "d_hidden": 4, "nonlinearity": "relu",
                          "bidirectional": True, "batch_first": True}, (2, 5, 3), False,
         "relu_bidir")


# ---- multi-head attention -------------------------------------------------------------------
# ember: {query,key,value,output}.{weight [E, E] (transposed), bias [E]}; PyTorch packs the
# query/key/value weights in in_proj_weight [3E, E] (row blocks q, k, v).
def mha_params(m, prefix=""):
    E = m.embed_dim
    out = []
    for i, name in enumerate(("query", "key", "value")):
        out.append((prefix + name + ".weight", m.in_proj_weight,
                    lambda t, i=i: t[i * E:(i + 1) * E].t()))
        if m.in_proj_bias is not None:
            out.append((prefix + name + ".bias", m.in_proj_bias,
                        lambda t, i=i: t[i * E:(i + 1) * E]))
    out.append((prefix + "output.weight", m.out_proj.weight, transposed))
    if m.out_proj.bias is not None:
        out.append((prefix + "output.bias", m.out_proj.bias, same))
    return out


def perturb(m, scale=0.2):
    """Moves every parameter off its initial value (zero biases, unit norms, copied layers)."""
    with torch.no_grad():
        for p in m.parameters():
            p.add_(torch.randn(p.shape) * scale)


def causal(lq, lk):
    return torch.ones(lq, lk).triu(1 + lk - lq).bool()


def padding(batch, lk, lens):
    return torch.arange(lk).unsqueeze(0) >= torch.tensor(lens).unsqueeze(1)


def mha_case(tag, E, H, lq, lk, batch=2, bias=True, kpm=None, attn_mask=None, is_causal=False,
             self_attn=False, weights=False):
    m = tnn.MultiheadAttention(E, H, dropout=0.0, bias=bias, batch_first=True)
    perturb(m)
    inputs = [rnd(batch, lq, E)] if self_attn else [rnd(batch, lq, E), rnd(batch, lk, E),
                                                    rnd(batch, lk, E)]
    opts = {"self": self_attn, "kpm": kpm is not None, "attn_mask": attn_mask is not None,
            "causal": is_causal, "weights": weights}
    if kpm is not None:
        inputs.append(kpm)
    if attn_mask is not None:
        inputs.append(attn_mask)
    mask = causal(lq, lk) if is_causal else None

    def fwd(*xs):
        q, k, v = (xs[0], xs[0], xs[0]) if self_attn else xs[:3]
        rest = list(xs[1:] if self_attn else xs[3:])
        p = rest.pop(0) if kpm is not None else None
        a = rest.pop(0) if attn_mask is not None else mask
        y, w = m(q, k, v, key_padding_mask=p, attn_mask=a, need_weights=weights,
                 average_attn_weights=True)
        return flat(w, y) if weights else y  # the weights skip the value and output layers

    add("mha", {"d_model": E, "n_heads": H, "dropout": 0.0, "bias": bias}, mha_params(m), inputs,
        fwd, m, opts=opts, tag=tag)


mha_case("cross", 8, 2, 4, 6)
mha_case("self", 8, 2, 5, 5, self_attn=True)
mha_case("one_head", 6, 1, 3, 5)
mha_case("no_bias", 8, 4, 4, 4, bias=False)
mha_case("key_padding", 8, 2, 4, 6, batch=3, kpm=padding(3, 6, [6, 3, 1]))
am = torch.rand(5, 7) < 0.4
am[:, 0] = False  # every query keeps key 0
mha_case("attn_mask", 8, 2, 5, 7, attn_mask=am)
mha_case("both_masks", 8, 2, 5, 7, batch=2, kpm=padding(2, 7, [7, 4]), attn_mask=am)
mha_case("causal", 8, 2, 6, 6, self_attn=True, is_causal=True)
mha_case("causal_kpm", 8, 2, 6, 6, self_attn=True, is_causal=True, kpm=padding(2, 6, [6, 4]))
mha_case("weights", 8, 2, 4, 6, weights=True)
mha_case("weights_masked", 8, 2, 5, 7, batch=2, kpm=padding(2, 7, [7, 4]), attn_mask=am,
         weights=True)


# ---- feed-forward blocks ---------------------------------------------------------------------
for act in ("relu", "gelu"):
    l1, l2 = tnn.Linear(6, 10), tnn.Linear(10, 6)
    mod = tnn.Sequential(l1, l2)
    fn = F.relu if act == "relu" else F.gelu
    add("feed_forward", {"d_model": 6, "d_ff": 10, "dropout": 0.0, "activation": act},
        [("linear1.weight", l1.weight, transposed), ("linear1.bias", l1.bias, same),
         ("linear2.weight", l2.weight, transposed), ("linear2.bias", l2.bias, same)],
        [rnd(2, 3, 6)], lambda x, fn=fn, l1=l1, l2=l2: l2(fn(l1(x))), mod, tag=act)

for bias in (False, True):
    w1, w2, w3 = tnn.Linear(6, 10, bias=bias), tnn.Linear(10, 6, bias=bias), \
        tnn.Linear(6, 10, bias=bias)
    ps = []
    for n, l in (("w1", w1), ("w2", w2), ("w3", w3)):
        ps.append((n + ".weight", l.weight, transposed))
        if bias:
            ps.append((n + ".bias", l.bias, same))
    add("swiglu", {"d_model": 6, "d_ff": 10, "bias": bias}, ps, [rnd(2, 3, 6)],
        lambda x, w1=w1, w2=w2, w3=w3: w2(F.silu(w1(x)) * w3(x)), tnn.ModuleList([w1, w2, w3]),
        tag="bias" if bias else "no_bias")


# ---- transformer layers ----------------------------------------------------------------------
def ln_params(prefix, ln):
    return [(prefix + ".gamma", ln.weight, same), (prefix + ".beta", ln.bias, same)]


def enc_layer_params(layer, prefix=""):
    return (mha_params(layer.self_attn, prefix + "self_attn.") +
            [(prefix + "ff.linear1.weight", layer.linear1.weight, transposed),
             (prefix + "ff.linear1.bias", layer.linear1.bias, same),
             (prefix + "ff.linear2.weight", layer.linear2.weight, transposed),
             (prefix + "ff.linear2.bias", layer.linear2.bias, same)] +
            ln_params(prefix + "norm1", layer.norm1) + ln_params(prefix + "norm2", layer.norm2))


def dec_layer_params(layer, prefix=""):
    return (enc_layer_params(layer, prefix) +
            mha_params(layer.multihead_attn, prefix + "cross_attn.") +
            ln_params(prefix + "norm3", layer.norm3))


def tcfg(norm_first, act, **more):
    c = {"d_model": 8, "n_heads": 2, "d_ff": 12, "dropout": 0.0, "activation": act,
         "norm_first": norm_first}
    c.update(more)
    return c


src_kpm = padding(2, 5, [5, 3])
src_mask = torch.rand(5, 5) < 0.3
src_mask[:, 0] = False  # with the padding below, every query keeps a key
for norm_first in (False, True):
    for act in ("relu", "gelu"):
        tag = ("pre" if norm_first else "post") + "_norm_" + act
        layer = tnn.TransformerEncoderLayer(8, 2, 12, 0.0, act, batch_first=True,
                                            norm_first=norm_first)
        perturb(layer)
        add("encoder_layer", tcfg(norm_first, act), enc_layer_params(layer), [rnd(2, 5, 8)],
            lambda x, layer=layer: layer(x), layer, tag=tag)
        add("encoder_layer", tcfg(norm_first, act), enc_layer_params(layer),
            [rnd(2, 5, 8), src_kpm, src_mask],
            lambda x, p, a, layer=layer: layer(x, src_mask=a, src_key_padding_mask=p), layer,
            opts={"kpm": True, "mask": True}, tag=tag + "_masks")

        dlayer = tnn.TransformerDecoderLayer(8, 2, 12, 0.0, act, batch_first=True,
                                             norm_first=norm_first)
        perturb(dlayer)
        mem_kpm = padding(2, 5, [5, 2])
        add("decoder_layer", tcfg(norm_first, act), dec_layer_params(dlayer),
            [rnd(2, 4, 8), rnd(2, 5, 8)],
            lambda t, mem, dlayer=dlayer: dlayer(t, mem, tgt_mask=causal(4, 4)), dlayer,
            opts={"causal": True}, tag=tag + "_causal")
        tgt_mask = torch.rand(4, 4) < 0.3
        tgt_mask[:, 0] = False
        mem_mask = torch.rand(4, 5) < 0.3
        mem_mask[:, 0] = False
        add("decoder_layer", tcfg(norm_first, act), dec_layer_params(dlayer),
            [rnd(2, 4, 8), rnd(2, 5, 8), tgt_mask, padding(2, 4, [4, 3]), mem_mask, mem_kpm],
            lambda t, mem, tm, tp, mm, mp, dlayer=dlayer: dlayer(
                t, mem, tgt_mask=tm, tgt_key_padding_mask=tp, memory_mask=mm,
                memory_key_padding_mask=mp), dlayer,
            opts={"masks": True}, tag=tag + "_masks")

for norm_first in (False, True):
    tag = "pre_norm" if norm_first else "post_norm"
    layer = tnn.TransformerEncoderLayer(8, 2, 12, 0.0, "gelu", batch_first=True,
                                        norm_first=norm_first)
    enc = tnn.TransformerEncoder(layer, 2, norm=tnn.LayerNorm(8), enable_nested_tensor=False)
    perturb(enc)
    ps = []
    for i, l in enumerate(enc.layers):
        ps += enc_layer_params(l, "layers.%d." % i)
    ps += ln_params("norm", enc.norm)
    add("encoder", tcfg(norm_first, "gelu", n_layers=2, final_norm=True), ps,
        [rnd(2, 5, 8), src_kpm],
        lambda x, p, enc=enc: enc(x, src_key_padding_mask=p), enc, opts={"kpm": True}, tag=tag)

    dlayer = tnn.TransformerDecoderLayer(8, 2, 12, 0.0, "relu", batch_first=True,
                                         norm_first=norm_first)
    dec = tnn.TransformerDecoder(dlayer, 2, norm=tnn.LayerNorm(8))
    perturb(dec)
    ps = []
    for i, l in enumerate(dec.layers):
        ps += dec_layer_params(l, "layers.%d." % i)
    ps += ln_params("norm", dec.norm)
    add("decoder", tcfg(norm_first, "relu", n_layers=2, final_norm=True), ps,
        [rnd(2, 4, 8), rnd(2, 5, 8), padding(2, 5, [5, 2])],
        lambda t, mem, mp, dec=dec: dec(t, mem, tgt_mask=causal(4, 4),
                                        memory_key_padding_mask=mp),
        dec, opts={"causal": True}, tag=tag)


# ---- positional encodings (references in plain torch) --------------------------------------
def sinusoid_table(start, seq, d):
    pos = torch.arange(start, start + seq, dtype=torch.float64).unsqueeze(1)
    div = torch.exp(torch.arange(0, d, 2, dtype=torch.float64) * (-math.log(10000.0) / d))
    pe = torch.zeros(seq, d, dtype=torch.float64)
    pe[:, 0::2] = torch.sin(pos * div)
    pe[:, 1::2] = torch.cos(pos * div)
    return pe.float()


for start, shape in [(0, (2, 7, 8)), (5, (3, 4, 6))]:
    d = shape[-1]
    add("positional", {"d_model": d, "max_len": 50}, [], [rnd(*shape)],
        lambda x, start=start, d=d: x + sinusoid_table(start, x.shape[-2], d), None,
        opts={"start": start}, tag="start%d" % start)


def rope_angles(start, seq, d, theta):
    inv = theta ** (-torch.arange(0, d, 2, dtype=torch.float64) / d)
    return torch.outer(torch.arange(start, start + seq, dtype=torch.float64), inv)


def rope_half_split(x, start, theta):
    """GPT-NeoX / Hugging Face style: rotate_half over the two halves."""
    d = x.shape[-1]
    ang = rope_angles(start, x.shape[-2], d, theta)
    emb = torch.cat([ang, ang], dim=-1)
    cos, sin = emb.cos().float(), emb.sin().float()
    x1, x2 = x[..., :d // 2], x[..., d // 2:]
    rotated = torch.cat([-x2, x1], dim=-1)
    return x * cos + rotated * sin


def rope_interleaved(x, start, theta):
    """RoFormer / Meta LLaMA style: consecutive pairs as complex numbers."""
    d = x.shape[-1]
    ang = rope_angles(start, x.shape[-2], d, theta)
    rot = torch.polar(torch.ones_like(ang), ang).to(torch.complex64)
    xc = torch.view_as_complex(x.reshape(*x.shape[:-1], d // 2, 2).contiguous())
    return torch.view_as_real(xc * rot).reshape(x.shape)


for interleaved in (False, True):
    ref = rope_interleaved if interleaved else rope_half_split
    name = "interleaved" if interleaved else "half_split"
    for start, shape, theta in [(0, (2, 3, 5, 8), 10000.0), (7, (2, 4, 6), 500.0)]:
        add("rotary", {"d": shape[-1], "max_len": 64, "theta": theta, "interleaved": interleaved},
            [], [rnd(*shape)], lambda x, ref=ref, start=start, theta=theta: ref(x, start, theta),
            None, opts={"start": start}, tag="%s_rank%d_start%d" % (name, len(shape), start))

C.write(os.path.join(os.path.dirname(__file__), "..", "tests", "nn", "seq_goldens.json"))
