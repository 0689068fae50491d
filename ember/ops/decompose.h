// Default decompositions of the composite ops into primitive ops. Every backend gets them;
// a backend with a faster kernel lists the op in `supports` and never comes here.
#pragma once
#include <algorithm>
#include <cmath>
#include <utility>

#include "ember/ops/dyn.h"

namespace ember {

namespace detail {

/// The keys the attention op `op` masks out, as a bool tensor broadcastable to the scores
/// [..., Lq, Lk]: the mask input or'ed with the causal mask (key j is masked for query i when
/// j > i + Lk - Lq); undefined when nothing is masked.
template <Backend B>
Dyn<B> attention_mask(const Op& op, const Dyn<B>& q, const Dyn<B>& k, const Dyn<B>& mask) {
  if (!op.attrs.flag) return mask;
  const int64_t r = q.rank(), lq = q.shape()[r - 2], lk = k.shape()[r - 2];
  auto positions = [&](int64_t n, Dims shape) {
    OpAttrs a;
    a.shape = {n};
    a.scalar = Scalar(int64_t{0});
    a.scalar2 = Scalar(int64_t{1});
    a.dtype = DType::I64;
    Dyn<B> p(apply<B>(Op{OpCode::Arange, a}, std::span<typename B::Handle>(), q.device()));
    return p.reshape(Shape(shape));
  };
  Dyn<B> causal = (positions(lk, {1, lk}) - positions(lq, {lq, 1})).gt(double(lk - lq));
  if (!mask.defined()) return causal;
  return Dyn<B>::run(OpCode::LogicalOr, {mask, causal});
}

/// The attention probabilities softmax(q k^T scale) over the last dim, with masked keys left
/// out and rows whose keys are all masked all zero. `mask` as from attention_mask.
template <Backend B>
Dyn<B> attention_probs(const Op& op, const Dyn<B>& q, const Dyn<B>& k, const Dyn<B>& mask) {
  const int64_t last = q.rank() - 1;
  Dyn<B> s = q.matmul(k.mT()) * op.attrs.scalar.f;
  if (!mask.defined()) return s.with_dim(OpCode::Softmax, last);
  Dyn<B> none = mask.reduce(OpCode::Min, {mask.rank() - 1}, true);  // every key masked
  s = mask.select(s.scalar(-INFINITY), s);
  s = none.select(s.scalar(0.0), s);
  Dyn<B> p = s.with_dim(OpCode::Softmax, last);
  return none.select(p.scalar(0.0), p);
}

/// What layer_norm and rms_norm compute in: f32 for f16/bf16, the input's type otherwise.
inline DType norm_compute_type(DType t) {
  return t == DType::F16 || t == DType::BF16 ? DType::F32 : t;
}

/// The dims [dim, rank) a norm op normalizes over.
inline Dims norm_dims(const Op& op, int64_t rank) {
  Dims d;
  for (int64_t i = op.attrs.dim; i < rank; ++i) d.push_back(i);
  return d;
}

/// x (in the compute type) normalized by the norm op `op`, and the reciprocal deviation it
/// used (kept dims of size 1): layer_norm (x - mean) * rstd with rstd = 1 / sqrt(biased var +
/// eps), rms_norm x * rstd with rstd = 1 / sqrt(mean(x^2) + eps).
template <Backend B>
std::pair<Dyn<B>, Dyn<B>> norm_parts(const Op& op, const Dyn<B>& x) {
  const Dims d = norm_dims(op, x.rank());
  const double eps = op.attrs.scalar.f;
  if (op.code == OpCode::RmsNorm) {
    Dyn<B> rstd = ((x * x).reduce(OpCode::Mean, d, true) + eps).rsqrt();
    return {x * rstd, rstd};
  }
  Dyn<B> c = x - x.reduce(OpCode::Mean, d, true);
  Dyn<B> rstd = ((c * c).reduce(OpCode::Mean, d, true) + eps).rsqrt();
  return {c * rstd, rstd};
}

/// x[start:end] along dim d.
template <Backend B>
Dyn<B> slice_dim(const Dyn<B>& x, int64_t d, int64_t start, int64_t end) {
  OpAttrs a;
  a.dims = Dims(x.rank(), 0);
  a.ends = x.shape().dims();
  a.steps = Dims(x.rank(), 1);
  a.dims[d] = start;
  a.ends[d] = end;
  return Dyn<B>::run(OpCode::Slice, a, {x});
}

/// The parts joined along dim d (the empty ones left out).
template <Backend B>
Dyn<B> cat_dim(const std::vector<Dyn<B>>& parts, int64_t d) {
  std::vector<typename B::Handle> hs;
  for (const auto& p : parts)
    if (p.shape()[d] > 0) hs.push_back(p.handle());
  if (hs.empty()) return parts.at(0);
  if (hs.size() == 1) return Dyn<B>(hs[0]);
  OpAttrs a;
  a.dim = d;
  return Dyn<B>(apply<B>(Op{OpCode::Cat, a}, std::span<typename B::Handle>(hs)));
}

/// pad(x) as slices, flips and concatenations (constant mode: a filled tensor with x assigned
/// into it). Crops first, then pads one dim at a time.
template <Backend B>
Dyn<B> pad(const Op& op, Dyn<B> x, const TensorMeta& out) {
  const Dims& p = op.attrs.dims;
  const int64_t r = x.rank();
  for (int64_t d = 0; d < r; ++d) {
    const int64_t lo = std::max<int64_t>(-p[2 * d], 0), hi = std::max<int64_t>(-p[2 * d + 1], 0);
    if (lo > 0 || hi > 0) x = slice_dim(x, d, lo, x.shape()[d] - hi);
  }
  const auto mode = static_cast<PadMode>(op.attrs.dim);
  if (mode == PadMode::Constant) {
    Dyn<B> filled = Dyn<B>::full(out.shape, op.attrs.scalar, x.dtype(), x.device());
    OpAttrs a;
    for (int64_t d = 0; d < r; ++d) {
      const int64_t lo = std::max<int64_t>(p[2 * d], 0);
      a.dims.push_back(lo);
      a.ends.push_back(lo + x.shape()[d]);
      a.steps.push_back(1);
    }
    return Dyn<B>::run(OpCode::SliceAssign, a, {filled, x});
  }
  for (int64_t d = 0; d < r; ++d) {
    const int64_t lo = std::max<int64_t>(p[2 * d], 0), hi = std::max<int64_t>(p[2 * d + 1], 0);
    if (lo == 0 && hi == 0) continue;
    const int64_t n = x.shape()[d];
    // the part added before (side 0) or after (side 1), `count` long
    auto added = [&](int side, int64_t count) {
      if (mode == PadMode::Reflect)
        return (side == 0 ? slice_dim(x, d, 1, count + 1) : slice_dim(x, d, n - 1 - count, n - 1))
            .flip({d});
      if (mode == PadMode::Replicate) {
        Dims s = x.shape().dims();
        s[d] = count;
        return slice_dim(x, d, side == 0 ? 0 : n - 1, side == 0 ? 1 : n).expand(Shape(s));
      }
      return side == 0 ? slice_dim(x, d, n - count, n) : slice_dim(x, d, 0, count);  // circular
    };
    std::vector<Dyn<B>> parts;
    if (lo > 0) parts.push_back(added(0, lo));
    parts.push_back(x);
    if (hi > 0) parts.push_back(added(1, hi));
    x = cat_dim<B>(parts, d);
  }
  return x;
}

/// int_conv as im2col and a product: the input's columns (unfold, in f32: exact for 8-bit
/// values) widened to i32 and multiplied by each group's weight rows.
template <Backend B>
Dyn<B> int_conv(const Op& op, const Dyn<B>& x, const Dyn<B>& w, const TensorMeta& out) {
  OpAttrs u;
  u.window = op.attrs.window;
  u.window.groups = 1;
  const int64_t n = x.shape()[0], g = op.attrs.window.groups, co = w.shape()[0];
  const int64_t ck = w.shape().numel() / std::max<int64_t>(co, 1);
  const int64_t L = out.shape.numel() / std::max<int64_t>(n * co, 1);
  if (out.shape.numel() == 0)
    return Dyn<B>::full(out.shape, Scalar(int64_t{0}), DType::I32, x.device());
  Dyn<B> cols = Dyn<B>::run(OpCode::Unfold, std::move(u), {x.cast(DType::F32)});
  cols = cols.cast(DType::I32).reshape(Shape{n, g, ck, L});
  return w.cast(DType::I32).reshape(Shape{g, co / g, ck}).matmul(cols).reshape(out.shape);
}

}  // namespace detail

template <Backend B>
typename B::Handle decompose(const Op& op, std::span<typename B::Handle> in,
                             const TensorMeta& out) {
  using C = OpCode;
  using T = detail::Dyn<B>;
  const T x(in[0]);
  const OpAttrs& a = op.attrs;
  auto keep = [&](OpCode c, const T& t) { return t.reduce(c, {a.dim}, true); };
  switch (op.code) {
    case C::Mean: {
      double n = 1;
      if (a.dims.empty()) n = static_cast<double>(x.shape().numel());
      for (int64_t d : a.dims) n *= static_cast<double>(x.shape()[d]);
      return (x.reduce(C::Sum, a.dims, a.flag) / n).handle();
    }
    case C::Softmax: {
      T e = (x - keep(C::Max, x)).exp();
      return (e / keep(C::Sum, e)).handle();
    }
    case C::LogSoftmax: {
      T shifted = x - keep(C::Max, x);
      return (shifted - keep(C::Sum, shifted.exp()).log()).handle();
    }
    case C::Gelu:
      return (x * 0.5 * ((x * M_SQRT1_2).erf() + 1.0)).handle();
    case C::Silu:
      return (x * x.sigmoid()).handle();
    case C::Softplus: {
      double beta = a.scalar.f, threshold = a.scalar2.f;
      T bx = x * beta;
      T soft = T::run(C::Log1p, {bx.exp()}) / beta;
      return bx.gt(threshold).select(x, soft).handle();
    }
    case C::Relu:
      return T::run(C::Maximum, {x, x.scalar(0.0)}).handle();
    case C::ReluBackward:
      return T(in[1]).gt(0.0).select(x, x.scalar(0.0)).handle();
    case C::Lerp: {  // as torch.lerp: from the nearer end, so that weight 1 gives b exactly
      const double w = a.scalar.f;
      const T b(in[1]), d = b - x;
      return (w < 0.5 ? x + d * w : b - d * (1.0 - w)).handle();
    }
    case C::Addcmul: {
      const T ab = T(in[1]) * T(in[2]) * a.scalar.f;
      return (a.scalar2.f == 1.0 ? x + ab : x * a.scalar2.f + ab).handle();
    }
    case C::AdaptiveStep:
      return (x - T(in[1]) / (T(in[2]).sqrt() + a.scalar2.f) * a.scalar.f).handle();
    case C::LogSumExp: {  // max + log(sum(exp(x - max))), with an infinite max taken as 0
      T m = x.reduce(C::Max, a.dims, true);
      T finite = m.isinf().select(m.scalar(0.0), m);
      T r = (x - finite).exp().reduce(C::Sum, a.dims, true).log() + finite;
      return (a.flag ? r : r.reshape(out.shape)).handle();
    }
    case C::Attention: {  // softmax(q k^T scale, masked) v
      const T mask = detail::attention_mask<B>(op, x, T(in[1]), in.size() > 3 ? T(in[3]) : T());
      return detail::attention_probs<B>(op, x, T(in[1]), mask).matmul(T(in[2])).handle();
    }
    case C::LayerNorm:
    case C::RmsNorm: {  // in f32 for halves; gamma and beta broadcast over the leading dims
      const DType ct = detail::norm_compute_type(x.dtype());
      T y = detail::norm_parts<B>(op, x.cast(ct)).first * T(in[1]).cast(ct);
      if (op.code == C::LayerNorm) y = y + T(in[2]).cast(ct);
      return y.cast(x.dtype()).handle();
    }
    case C::Pad:
      return detail::pad<B>(op, x, out).handle();
    case C::IntMatmul:  // exact: a sum of k products of 8-bit ints fits i32 up to k = 2^16
      return x.cast(DType::I32).matmul(T(in[1]).cast(DType::I32)).handle();
    case C::IntConv:
      return detail::int_conv<B>(op, x, T(in[1]), out).handle();
    default:
      throw Error("[" + std::string(name(op.code)) + "] has no decomposition");
  }
}

}  // namespace ember
