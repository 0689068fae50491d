#!/usr/bin/env python3
"""Writes torch_surface.txt: PyTorch's public tensor/nn/loss/linalg/... surface, one
`section<TAB>name` line per entry, read from the installed torch (1.13).

    /usr/bin/python3 tools/api_parity/gen_torch_surface.py     # rewrites torch_surface.txt

What counts as an entry, and what is left out (and why):

- tensor: the public methods and attributes of torch.Tensor. A torch.* function with the same
  name (torch.add for Tensor.add) is the same op and gets no second row.
- torch: the documented torch.* functions that are not Tensor methods (creation, cat, stack,
  einsum, ...), plus torch.no_grad. Window functions go to `signal`; the torch.* bindings that
  duplicate torch.nn.functional (torch.conv2d, torch.dropout, ...) go to `nn.functional`.
- nn.functional: torch.nn.functional's functions, less its losses (folded into `loss`).
- nn: the torch.nn module classes, less the losses (in `loss`) and torch.nn.Parameter added.
- loss: the torch.nn loss modules; each functional form (F.mse_loss) is folded into its
  module's row (torch.nn.MSELoss), as one capability.
- init, optim: torch.nn.init; torch.optim's optimizers and lr_scheduler's schedulers, and
  torch.nn.utils' gradient clipping.
- linalg, fft, special: torch.linalg, torch.fft, torch.special; a torch.special function that
  torch.* also offers (torch.erf is torch.special.erf) is listed once, in `tensor` or `torch`.
- signal: the window functions (torch.hann_window, ...).

Folded or left out everywhere:
- private names (`_x`) and dunder methods (operators are the named methods: __add__ is add);
- in-place variants: `add_` is folded into `add` (a row with no plain form stays: fill_);
- aliases that torch documents as "Alias for ..." (arccos is acos, greater is gt, clip is
  clamp, swapaxes is transpose, ...): the alias is folded into the op it names;
- deprecated APIs (torch.solve, torch.eig, torch.symeig, torch.lstsq, torch.norm, ...,
  F.upsample*, F.sigmoid/F.tanh, nn.UpsamplingNearest2d/Bilinear2d, nn.NLLLoss2d, the
  non-underscore nn.init functions);
- storage, memory layout and device internals (storage, data_ptr, stride, contiguous,
  pin_memory, cuda, is_cuda, ...), sparse, quantized, named-tensor, nested-tensor, JIT and
  TorchScript, dlpack/numpy interop, autograd internals (grad_fn, output_nr, data), legacy
  constructors (new, type), and runtime configuration (threads, determinism, print options,
  RNG state; manual_seed stays);
- view-copy variants (`*_copy`), `*_with_indices` pooling variants, Lazy* and distributed
  modules (SyncBatchNorm, DataParallel), abstract bases (Module, RNNBase, Optimizer).
"""
import inspect
import os
import re
import sys

import torch
import torch.nn.functional as F

OUT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "torch_surface.txt")

# Deprecated in 1.13 (their docs say so, or point to the torch.linalg replacement).
DEPRECATED = {"chain_matmul", "cholesky", "eig", "ger", "lstsq", "lu", "lu_solve", "matrix_rank",
              "qr", "range", "solve", "svd", "symeig", "triangular_solve", "norm", "trapz"}
# Storage, layout, device, sparse, quantized, named/nested tensors, JIT, interop, autograd
# internals, legacy constructors.
INTERNAL = set("""
storage storage_offset storage_type untyped_storage data_ptr element_size is_shared share_memory_
pin_memory is_pinned record_stream cuda cpu ipu xpu is_cuda is_cpu is_ipu is_xpu is_mps is_ort
is_vulkan is_meta is_mkldnn to_mkldnn get_device layout is_distributed set_ is_set_to resize
resize_ resize_as resize_as_ resize_as_sparse_ as_strided as_strided_ as_strided_scatter stride
is_contiguous contiguous new_empty_strided
coalesce is_coalesced indices values crow_indices col_indices ccol_indices row_indices to_dense
to_sparse to_sparse_coo to_sparse_csr to_sparse_csc to_sparse_bsr to_sparse_bsc dense_dim
sparse_dim sparse_mask sparse_resize_ sparse_resize_and_clear_ smm sspaddmm is_sparse
is_sparse_csr
q_per_channel_axis q_per_channel_scales q_per_channel_zero_points q_scale q_zero_point qscheme
int_repr dequantize is_quantized
names rename rename_ refine_names align_as align_to has_names name is_nested to_padded_tensor
is_inference
apply_ map_ map2_ as_subclass reinforce volatile output_nr grad_fn data new type numpy
unsafe_chunk unsafe_split unsafe_split_with_sizes narrow_copy
""".split())
TORCH_SKIP = set("""
Callable Set Union candidate obj classproperty typename
are_deterministic_algorithms_enabled compiled_with_cxx11_abi get_default_dtype
get_deterministic_debug_mode get_float32_matmul_precision get_num_interop_threads get_num_threads
get_rng_state init_num_threads initial_seed is_deterministic_algorithms_warn_only_enabled
is_grad_enabled is_inference_mode_enabled is_storage is_warn_always_enabled read_vitals seed
set_default_dtype set_default_tensor_type set_deterministic_debug_mode
set_float32_matmul_precision set_flush_denormal set_num_interop_threads set_num_threads
set_printoptions set_rng_state set_vital set_warn_always use_deterministic_algorithms
vitals_enabled
fork wait import_ir_module import_ir_module_from_buffer merge_type_from_type_comment parse_ir
parse_schema parse_type_comment unify_type_list
from_dlpack to_dlpack from_numpy frombuffer empty_strided
sparse_bsc_tensor sparse_bsr_tensor sparse_compressed_tensor sparse_coo_tensor sparse_csc_tensor
sparse_csr_tensor hspmm quantize_per_channel quantize_per_tensor quantize_per_tensor_dynamic
quantized_batch_norm quantized_max_pool1d quantized_max_pool2d fake_quantize_per_channel_affine
fake_quantize_per_tensor_affine conv_tbc native_channel_shuffle
""".split())
F_SKIP = {"assert_int_or_pair", "boolean_dispatch", "handle_torch_function", "has_torch_function",
          "has_torch_function_unary", "has_torch_function_variadic", "multi_head_attention_forward",
          "upsample", "upsample_bilinear", "upsample_nearest", "sigmoid", "tanh", "conv_tbc",
          "native_channel_shuffle"}
NN_SKIP = {"Module", "Container", "RNNBase", "RNNCellBase", "SyncBatchNorm", "DataParallel",
           "NLLLoss2d", "UpsamplingNearest2d", "UpsamplingBilinear2d",
           "NonDynamicallyQuantizableLinear", "CrossMapLRN2d"}
WINDOWS = {"bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"}
# The functional form of each loss, folded into its module.
F_LOSSES = {"binary_cross_entropy", "binary_cross_entropy_with_logits", "cosine_embedding_loss",
            "cross_entropy", "ctc_loss", "gaussian_nll_loss", "hinge_embedding_loss", "huber_loss",
            "kl_div", "l1_loss", "margin_ranking_loss", "mse_loss", "multi_margin_loss",
            "multilabel_margin_loss", "multilabel_soft_margin_loss", "nll_loss", "poisson_nll_loss",
            "smooth_l1_loss", "soft_margin_loss", "triplet_margin_loss",
            "triplet_margin_with_distance_loss"}
ALIAS_RE = re.compile(r"[Aa]lias (?:for|of) :(?:func|meth|attr):`~?([\w.]+)")


def public(obj):
    return [n for n in dir(obj) if not n.startswith("_")]


def alias_target(*objs):
    """The name an object's docstring says it is an alias of, or None."""
    for o in objs:
        d = getattr(o, "__doc__", None)
        m = ALIAS_RE.search(d) if isinstance(d, str) else None
        if m:
            return m.group(1)
    return None


def documented(f):
    d = getattr(f, "__doc__", None)
    return isinstance(d, str) and d.strip() != ""


def is_function(f):
    return callable(f) and not inspect.isclass(f) and not inspect.ismodule(f)


def fold_inplace(names, known):
    """`x_` folded into `x` when `x` is an entry of `known`."""
    return {n for n in names if not (n.endswith("_") and n[:-1] in known)}


def tensor_and_torch():
    methods = set(public(torch.Tensor)) - INTERNAL
    funcs = {n for n in public(torch) if is_function(getattr(torch, n))
             and documented(getattr(torch, n))}
    funcs -= TORCH_SKIP | INTERNAL
    funcs -= {n for n in funcs if n.endswith("_copy")}
    funcs -= set(public(F)) | WINDOWS | {"cosine_similarity"}  # nn.functional / signal
    known = methods | funcs
    keep = set()
    for n in fold_inplace(known, known):
        base = n[:-1] if n.endswith("_") else n
        t = alias_target(getattr(torch.Tensor, n, None), getattr(torch, n, None)) or ""
        target = re.sub(r"^(torch\.)?(Tensor\.)?", "", t).rstrip("()_")
        if target and "." not in target and target != base and target in known:
            continue  # an alias within torch / Tensor: folded into its target
        if t.startswith("torch.linalg."):
            continue  # listed in `linalg`
        if base in DEPRECATED:
            continue
        keep.add(n)
    tensor = sorted(n for n in keep if n in methods)
    torch_fns = sorted(n for n in keep if n not in methods) + ["no_grad"]
    return tensor, sorted(torch_fns), known


def functional():
    out = []
    names = {n for n in public(F) if is_function(getattr(F, n))
             and getattr(getattr(F, n), "__module__", "") not in ("typing",)}
    names -= F_SKIP | F_LOSSES
    names -= {n for n in names if n.endswith("_with_indices")}
    for n in sorted(fold_inplace(names, names)):
        out.append(n)
    return out


def modules():
    nn, loss = [], []
    for n in public(torch.nn):
        c = getattr(torch.nn, n)
        if not (inspect.isclass(c) and issubclass(c, torch.nn.Module)):
            continue
        if n in NN_SKIP or n.startswith("Lazy"):
            continue
        (loss if issubclass(c, torch.nn.modules.loss._Loss) else nn).append(n)
    return sorted(nn + ["Parameter"]), sorted(loss)


def special(known):
    out = []
    for n in public(torch.special):
        f = getattr(torch.special, n)
        if not is_function(f) or not documented(f):
            continue
        top = getattr(torch, n, None)
        if n in known or alias_target(f) or alias_target(top) == "torch.special." + n:
            continue  # torch.* has it, or it is another special function's alias
        if any(alias_target(getattr(torch, t, None)) == "torch.special." + n for t in known):
            continue  # torch.sigmoid is torch.special.expit, ...
        out.append(n)
    return sorted(out)


def namespace(mod, skip=()):
    return sorted(n for n in public(mod) if is_function(getattr(mod, n))
                  and documented(getattr(mod, n)) and n not in skip)


def main():
    tensor, torch_fns, known = tensor_and_torch()
    nn, loss = modules()
    init = [n for n in namespace(torch.nn.init) if n.endswith("_") or n == "calculate_gain"]
    optim = [n for n in public(torch.optim) if inspect.isclass(getattr(torch.optim, n))
             and n not in ("Optimizer", "SparseAdam")]
    sched = [n for n in public(torch.optim.lr_scheduler)
             if inspect.isclass(getattr(torch.optim.lr_scheduler, n))
             and n not in ("Optimizer", "Counter")]
    rows = [("tensor", "torch.Tensor." + n) for n in tensor]
    rows += [("torch", "torch." + n) for n in torch_fns]
    rows += [("nn.functional", "torch.nn.functional." + n) for n in functional()]
    rows += [("nn", "torch.nn." + n) for n in nn]
    rows += [("loss", "torch.nn." + n) for n in loss]
    rows += [("init", "torch.nn.init." + n) for n in init]
    rows += [("optim", "torch.optim." + n) for n in sorted(optim)]
    rows += [("optim", "torch.optim.lr_scheduler." + n) for n in sorted(sched)]
    rows += [("optim", "torch.nn.utils." + n) for n in ("clip_grad_norm_", "clip_grad_value_")]
    rows += [("linalg", "torch.linalg." + n) for n in namespace(torch.linalg)]
    rows += [("fft", "torch.fft." + n) for n in namespace(torch.fft)]
    rows += [("special", "torch.special." + n) for n in special(known)]
    rows += [("signal", "torch." + n) for n in sorted(WINDOWS)]
    version = ".".join(torch.__version__.split(".")[:2])
    header = [
        f"# peer: PyTorch {version}",
        f"# PyTorch's public surface, generated from torch {torch.__version__} by",
        "# tools/api_parity/gen_torch_surface.py (its docstring says what is folded and left out).",
        "# One entry per line: section<TAB>name.",
    ]
    with open(OUT, "w") as f:
        f.write("\n".join(header) + "\n")
        f.writelines(f"{s}\t{n}\n" for s, n in rows)
    counts = {}
    for s, _ in rows:
        counts[s] = counts.get(s, 0) + 1
    print(f"{OUT}: {len(rows)} entries", counts, file=sys.stderr)


if __name__ == "__main__":
    main()
