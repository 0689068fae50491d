// Gradient rules too long for one expression in the op table (its CALL(...) entries) and the
// helpers its GRADS(...) expressions use. Every rule is written once over any backend I; run
// on an Autodiff backend, the rules are themselves recorded, which gives higher-order
// gradients.
#pragma once
#include <vector>

#include "ember/ops/decompose.h"
#include "ember/ops/dyn.h"

namespace ember::grad {

template <Backend I>
using T = detail::Dyn<I>;
template <Backend I>
using Grads = std::vector<T<I>>;

/// What a rule sees: the op, its input metas, the saved inputs and output (defined when the
/// table's save column asks for them), the gradient of the output, and which inputs' gradients
/// are used (bit i for input i: a rule may leave the others undefined instead of computing
/// them, e.g. the input gradient of a first layer, whose input is data).
template <Backend I>
struct Ctx {
  const Op& op;
  std::span<const TensorMeta> in;
  std::span<const T<I>> xs;
  T<I> y, g;
  uint64_t needs = ~uint64_t{0};
  bool needs_grad(size_t i) const { return i >= 64 || ((needs >> i) & 1) != 0; }
};

/// `t` (shaped like a reduction's output) with the reduced dims kept as size 1.
template <Backend I>
T<I> keep_dims(const T<I>& t, const Op& op, const TensorMeta& in) {
  if (op.attrs.flag) return t;
  Dims s = in.shape.dims();
  for (size_t d = 0; d < s.size(); ++d) {
    bool reduced = op.attrs.dims.empty();
    for (int64_t r : op.attrs.dims) reduced = reduced || r == static_cast<int64_t>(d);
    if (reduced) s[d] = 1;
  }
  return t.reshape(Shape(s));
}

inline double reduced_count(const Op& op, const TensorMeta& in) {
  if (op.attrs.dims.empty()) return static_cast<double>(in.shape.numel());
  double n = 1;
  for (int64_t d : op.attrs.dims) n *= static_cast<double>(in.shape[d]);
  return n;
}

inline Dims inverse_permutation(const Dims& p) {
  Dims inv(p.size());
  for (size_t i = 0; i < p.size(); ++i) inv[p[i]] = static_cast<int64_t>(i);
  return inv;
}

template <Backend I>
T<I> zeros(const TensorMeta& m, const T<I>& like) {
  return T<I>::full(m.shape, Scalar(0.0), m.dtype, like.device());
}

/// Positions 0..n-1 along `dim`, shaped to broadcast against a tensor of shape `s`.
template <Backend I>
T<I> positions(const Shape& s, int64_t dim, Device dev) {
  OpAttrs a;
  a.shape = {s[dim]};
  a.scalar = Scalar(int64_t{0});
  a.scalar2 = Scalar(int64_t{1});
  a.dtype = DType::I64;
  T<I> r(apply<I>(Op{OpCode::Arange, a}, std::span<typename I::Handle>(), dev));
  Dims shp(s.rank(), 1);
  shp[dim] = s[dim];
  return r.reshape(Shape(shp)).expand(s);
}

// d/dx x^e = e x^(e-1);  d/de x^e = x^e log x, taken as 0 where x == 0 and e >= 0 (PyTorch).
template <Backend I>
Grads<I> grad_pow(const Ctx<I>& c) {
  const T<I>&x = c.xs[0], &e = c.xs[1];
  T<I> gx = c.g * e * T<I>::run(OpCode::Pow, {x, e - 1.0});
  T<I> zero = c.g.zeros_like();
  T<I> ge = x.eq(x.scalar(0.0)).select(zero, c.g * c.y * x.log());
  return {gx, ge};
}

// Ties split the gradient evenly, as PyTorch does.
template <Backend I>
Grads<I> grad_extreme_pair(const Ctx<I>& c, bool max) {
  const T<I>&a = c.xs[0], &b = c.xs[1];
  T<I> zero = c.g.zeros_like(), half = c.g * 0.5;
  T<I> a_wins = max ? a.gt(b) : a.lt(b), b_wins = max ? b.gt(a) : b.lt(a), tie = a.eq(b);
  return {tie.select(half, a_wins.select(c.g, zero)), tie.select(half, b_wins.select(c.g, zero))};
}
template <Backend I>
Grads<I> grad_maximum(const Ctx<I>& c) {
  return grad_extreme_pair(c, true);
}
template <Backend I>
Grads<I> grad_minimum(const Ctx<I>& c) {
  return grad_extreme_pair(c, false);
}

template <Backend I>
Grads<I> grad_relu(const Ctx<I>& c) {
  return {T<I>::run(OpCode::ReluBackward, {c.g, c.xs[0]})};
}

template <Backend I>
Grads<I> grad_cast(const Ctx<I>& c) {
  if (!is_float(c.in[0].dtype)) return {T<I>{}};
  return {c.g.cast(c.in[0].dtype)};
}

// max/min over dims: the gradient goes to the elements equal to the result, split evenly.
template <Backend I>
Grads<I> grad_extremum(const Ctx<I>& c) {
  const T<I>& x = c.xs[0];
  T<I> y = keep_dims(c.y, c.op, c.in[0]);
  T<I> hit = y.isnan().select(x.isnan(), x.eq(y));  // a NaN result came from the NaNs
  T<I> mask = hit.cast(x.dtype());
  T<I> count = mask.reduce(OpCode::Sum, c.op.attrs.dims, true);
  return {mask * keep_dims(c.g, c.op, c.in[0]) / count};
}

// cummax/cummin: each output's gradient goes to the index that held the running extreme
// (the latest one on ties), found as a running max of the positions where x == y.
template <Backend I>
Grads<I> grad_cum_extremum(const Ctx<I>& c) {
  const T<I>& x = c.xs[0];
  int64_t dim = c.op.attrs.dim;
  T<I> pos = positions<I>(x.shape(), dim, x.device());
  T<I> at = x.eq(c.y).select(pos, pos.zeros_like()).with_dim(OpCode::CumMax, dim);
  OpAttrs a;
  a.dim = dim;
  a.flag = true;  // scatter-add
  return {T<I>::run(OpCode::Scatter, a, {x.zeros_like(), at, c.g})};
}

template <Backend I>
Grads<I> grad_slice(const Ctx<I>& c) {
  return {T<I>::run(OpCode::SliceAssign, c.op.attrs, {zeros(c.in[0], c.g), c.g})};
}

template <Backend I>
Grads<I> grad_cat(const Ctx<I>& c) {
  Grads<I> out;
  int64_t dim = c.op.attrs.dim, at = 0;
  for (const TensorMeta& m : c.in) {
    OpAttrs a;
    a.dims = Dims(m.shape.rank(), 0);
    a.ends = c.g.shape().dims();
    a.dims[dim] = at;
    a.ends[dim] = at + m.shape[dim];
    at += m.shape[dim];
    out.push_back(T<I>::run(OpCode::Slice, a, {c.g}));
  }
  return out;
}

template <Backend I>
Grads<I> grad_slice_assign(const Ctx<I>& c) {
  T<I> gx = T<I>::run(OpCode::SliceAssign, c.op.attrs, {c.g, zeros(c.in[1], c.g)});
  return {gx, T<I>::run(OpCode::Slice, c.op.attrs, {c.g})};
}

// gather's gradient adds g where each value came from: a scatter-add into zeros. With one
// index per row along dim (cross-entropy's pick of each row's class) it is the elementwise
// where(positions == index, g, 0): nothing to check again (the forward's gather did), fusible
// with what follows, and no wait on a GPU for the scatter's index check.
template <Backend I>
Grads<I> grad_gather(const Ctx<I>& c) {
  const Shape &xs = c.in[0].shape, &is = c.in[1].shape;
  const int64_t dim = c.op.attrs.dim;
  bool one_per_row = is.rank() == xs.rank() && is[dim] == 1;
  for (size_t d = 0; d < xs.rank(); ++d)
    one_per_row = one_per_row && (int64_t(d) == dim || is[d] == xs[d]);
  if (one_per_row) {
    T<I> idx = c.xs[1].dtype() == DType::I64 ? c.xs[1] : c.xs[1].cast(DType::I64);
    T<I> hit = positions<I>(xs, dim, c.g.device()).eq(idx);
    return {hit.select(c.g, c.g.zeros_like()), T<I>{}};
  }
  OpAttrs a;
  a.dim = c.op.attrs.dim;
  a.flag = true;
  return {T<I>::run(OpCode::Scatter, a, {zeros(c.in[0], c.g), c.xs[1], c.g}), T<I>{}};
}

template <Backend I>
Grads<I> grad_scatter(const Ctx<I>& c) {
  OpAttrs a;
  a.dim = c.op.attrs.dim;
  T<I> gv = T<I>::run(OpCode::Gather, a, {c.g, c.xs[1]});
  if (c.op.attrs.flag) return {c.g, T<I>{}, gv};
  T<I> gx = T<I>::run(OpCode::Scatter, a, {c.g, c.xs[1], zeros(c.in[2], c.g)});
  return {gx, T<I>{}, gv};
}

template <Backend I>
Grads<I> grad_index_select(const Ctx<I>& c) {
  OpAttrs a;
  a.dim = c.op.attrs.dim;
  return {T<I>::run(OpCode::IndexAdd, a, {zeros(c.in[0], c.g), c.xs[1], c.g}), T<I>{}};
}

template <Backend I>
Grads<I> grad_index_add(const Ctx<I>& c) {
  OpAttrs a;
  a.dim = c.op.attrs.dim;
  return {c.g, T<I>{}, T<I>::run(OpCode::IndexSelect, a, {c.g, c.xs[1]})};
}

template <Backend I>
Grads<I> grad_silu(const Ctx<I>& c) {
  const T<I>& x = c.xs[0];
  T<I> s = x.sigmoid();
  return {c.g * s * (x * (1.0 - s) + 1.0)};
}

// ---- spatial ops (conv, pooling, interpolation, unfold/fold) ---------------------------

/// The spatial dims of an [N, C, *spatial] shape.
inline Dims spatial_dims(const Shape& s) {
  return Dims(std::span<const int64_t>(s.dims().data() + 2, s.rank() - 2));
}

/// Attributes of a spatial op with window `w` (without output_padding) and target `shape`.
inline OpAttrs window_attrs(const Window& w, Dims shape = {}) {
  OpAttrs a;
  a.window = w;
  a.window.output_padding.clear();
  a.shape = std::move(shape);
  return a;
}

/// `t` cut, or zero-extended, at the end of each dim to the shape `want`.
template <Backend I>
T<I> fit_to(const T<I>& t, const Shape& want) {
  if (t.shape() == want) return t;
  OpAttrs a;
  a.dims = Dims(want.rank(), 0);
  for (size_t d = 0; d < want.rank(); ++d) a.ends.push_back(std::min(t.shape()[d], want[d]));
  T<I> part = a.ends == t.shape().dims() ? t : T<I>::run(OpCode::Slice, a, {t});
  if (a.ends == want.dims()) return part;
  return T<I>::run(OpCode::SliceAssign, a, {zeros(TensorMeta{want, t.dtype()}, t), part});
}

/// conv's input gradient: conv_transpose of `g` with `w`, sized back to the input shape `x`
/// (output_padding restores what the floor division of a stride dropped).
template <Backend I>
T<I> conv_input_grad(const T<I>& g, const T<I>& w, const Window& win, const Shape& x) {
  OpAttrs a = window_attrs(win);
  for (size_t i = 0; i < win.kernel.size(); ++i)
    a.window.output_padding.push_back(x[i + 2] -
                                      ((g.shape()[i + 2] - 1) * win.stride[i] - 2 * win.padding[i] +
                                       win.dilation[i] * (win.kernel[i] - 1) + 1));
  return T<I>::run(OpCode::ConvTranspose, a, {g, w});
}

template <Backend I>
Grads<I> grad_conv(const Ctx<I>& c) {
  const Window& win = c.op.attrs.window;
  return {c.needs_grad(0) ? conv_input_grad(c.g, c.xs[1], win, c.in[0].shape) : T<I>{},
          c.needs_grad(1) ? T<I>::run(OpCode::ConvWeightGrad, window_attrs(win), {c.xs[0], c.g})
                          : T<I>{}};
}

template <Backend I>
Grads<I> grad_matmul(const Ctx<I>& c) {
  const T<I>&a = c.xs[0], &b = c.xs[1];
  return {c.needs_grad(0) ? c.g.matmul(b.mT()).sum_to(c.in[0].shape) : T<I>{},
          c.needs_grad(1) ? a.mT().matmul(c.g).sum_to(c.in[1].shape) : T<I>{}};
}

// conv_transpose(., w) is the adjoint of conv(., w): the input gradient is conv(g, w), the
// weight gradient is conv's weight gradient with the input and the output's gradient
// swapped. An output_padding of a stride or more (allowed below the dilation) makes conv(g)
// longer than x: its extra positions are cut, and x is zero-extended to match.
template <Backend I>
Grads<I> grad_conv_transpose(const Ctx<I>& c) {
  const Window& win = c.op.attrs.window;
  OpAttrs a = window_attrs(win);
  const Shape& xs = c.in[0].shape;
  Dims reach = xs.dims();
  for (size_t i = 0; i < win.kernel.size(); ++i)
    reach[i + 2] += win.output_padding[i] / win.stride[i];
  T<I> gx = fit_to(T<I>::run(OpCode::Conv, a, {c.g, c.xs[1]}), xs);
  T<I> gw = T<I>::run(OpCode::ConvWeightGrad, a, {c.g, fit_to(c.xs[0], Shape(reach))});
  return {gx, gw};
}

// conv_weight_grad(x, g) is bilinear: with gw the gradient of its output (weight-shaped),
// x gets conv_transpose(g, gw) and g gets conv(x, gw).
template <Backend I>
Grads<I> grad_conv_weight_grad(const Ctx<I>& c) {
  const Window& win = c.op.attrs.window;
  return {conv_input_grad(c.xs[1], c.g, win, c.in[0].shape),
          T<I>::run(OpCode::Conv, window_attrs(win), {c.xs[0], c.g})};
}

template <Backend I>
Grads<I> grad_max_pool(const Ctx<I>& c) {
  return {T<I>::run(OpCode::MaxPoolBackward, window_attrs(c.op.attrs.window), {c.xs[0], c.g})};
}

template <Backend I>
Grads<I> grad_avg_pool(const Ctx<I>& c) {
  OpAttrs a = window_attrs(c.op.attrs.window, spatial_dims(c.in[0].shape));
  return {T<I>::run(OpCode::AvgPoolBackward, a, {c.g})};
}

template <Backend I>
Grads<I> grad_avg_pool_backward(const Ctx<I>& c) {  // linear: the forward op is its adjoint
  return {T<I>::run(OpCode::AvgPool, window_attrs(c.op.attrs.window), {c.g})};
}

template <Backend I>
Grads<I> grad_adaptive_avg_pool(const Ctx<I>& c) {
  OpAttrs a = window_attrs({}, spatial_dims(c.in[0].shape));
  return {T<I>::run(OpCode::AdaptiveAvgPoolBackward, a, {c.g})};
}

template <Backend I>
Grads<I> grad_adaptive_avg_pool_backward(const Ctx<I>& c) {
  OpAttrs a = window_attrs({}, spatial_dims(c.in[0].shape));
  return {T<I>::run(OpCode::AdaptiveAvgPool, a, {c.g})};
}

template <Backend I>
Grads<I> grad_interpolate(const Ctx<I>& c) {
  OpAttrs a = window_attrs({}, spatial_dims(c.in[0].shape));
  a.interp = c.op.attrs.interp;
  a.flag = c.op.attrs.flag;
  return {T<I>::run(OpCode::InterpolateBackward, a, {c.g})};
}

template <Backend I>
Grads<I> grad_interpolate_backward(const Ctx<I>& c) {
  OpAttrs a = window_attrs({}, spatial_dims(c.in[0].shape));
  a.interp = c.op.attrs.interp;
  a.flag = c.op.attrs.flag;
  return {T<I>::run(OpCode::Interpolate, a, {c.g})};
}

template <Backend I>
Grads<I> grad_unfold(const Ctx<I>& c) {
  return {
      T<I>::run(OpCode::Fold, window_attrs(c.op.attrs.window, spatial_dims(c.in[0].shape)), {c.g})};
}

template <Backend I>
Grads<I> grad_fold(const Ctx<I>& c) {
  return {T<I>::run(OpCode::Unfold, window_attrs(c.op.attrs.window), {c.g})};
}

// Attention: the probabilities P are recomputed from q, k (and the mask); with g the output's
// gradient, dV = P^T g, dP = g V^T, dS = P (dP - rowsum(dP P)), dQ = scale dS K,
// dK = scale dS^T Q. Masked keys and fully masked rows have P = 0, so no gradient flows
// through them; the mask gets none.
template <Backend I>
Grads<I> grad_attention(const Ctx<I>& c) {
  const T<I>&q = c.xs[0], &k = c.xs[1], &v = c.xs[2];
  const T<I> mask = detail::attention_mask<I>(c.op, q, k, c.xs.size() > 3 ? c.xs[3] : T<I>{});
  const T<I> p = detail::attention_probs<I>(c.op, q, k, mask);
  const int64_t last = q.rank() - 1;
  const double scale = c.op.attrs.scalar.f;
  T<I> dp = c.g.matmul(v.mT());
  T<I> ds = p * (dp - (dp * p).sum_keep({last}));
  Grads<I> out{ds.matmul(k) * scale, ds.mT().matmul(q) * scale, p.mT().matmul(c.g)};
  if (c.xs.size() > 3) out.emplace_back();
  return out;
}

// layer_norm and rms_norm, in the forward's compute type (f32 for halves), with xh the
// normalized x, r its rstd and gh = g * gamma: gamma gets sum(g * xh) and beta sum(g) over the
// leading dims; x gets r * (gh - mean(gh) - xh * mean(gh * xh)), without the mean(gh) term for
// rms_norm (whose xh is not centred).
template <Backend I>
Grads<I> grad_norm(const Ctx<I>& c) {
  const bool layer = c.op.code == OpCode::LayerNorm;
  const DType t = c.in[0].dtype, ct = detail::norm_compute_type(t);
  const T<I> x = c.xs[0].cast(ct), gamma = c.xs[1].cast(ct), g = c.g.cast(ct);
  auto [xh, r] = detail::norm_parts<I>(c.op, x);
  Grads<I> out(layer ? 3 : 2);
  if (c.needs_grad(0)) {
    const Dims d = detail::norm_dims(c.op, x.rank());
    T<I> gh = g * gamma;
    T<I> inner = gh - xh * (gh * xh).reduce(OpCode::Mean, d, true);
    if (layer) inner = inner - gh.reduce(OpCode::Mean, d, true);
    out[0] = (inner * r).cast(t);
  }
  if (c.needs_grad(1)) out[1] = (g * xh).sum_to(c.in[1].shape).cast(t);
  if (layer && c.needs_grad(2)) out[2] = g.sum_to(c.in[2].shape).cast(t);
  return out;
}
template <Backend I>
Grads<I> grad_layer_norm(const Ctx<I>& c) {
  return grad_norm(c);
}
template <Backend I>
Grads<I> grad_rms_norm(const Ctx<I>& c) {
  return grad_norm(c);
}

/// The gradients of op's inputs, from the op table's grad column. An undefined entry means
/// no gradient flows to that input.
template <Backend I>
Grads<I> backward_rule(const Ctx<I>& c) {
  [[maybe_unused]] const Op& op = c.op;
  [[maybe_unused]] std::span<const TensorMeta> in = c.in;
  [[maybe_unused]] const T<I>& g = c.g;
  [[maybe_unused]] const T<I>& y = c.y;
  [[maybe_unused]] T<I> x = c.xs.size() > 0 ? c.xs[0] : T<I>{};
  [[maybe_unused]] T<I> x1 = c.xs.size() > 1 ? c.xs[1] : T<I>{};
  [[maybe_unused]] T<I> x2 = c.xs.size() > 2 ? c.xs[2] : T<I>{};
  switch (op.code) {
#define NONE return {};
#define GRADS(...) return {__VA_ARGS__};
#define CALL(f) return f<I>(c);
#define DECOMPOSE return {};  // never recorded: Autodiff records the decomposition's ops
#define SKIP \
  T<I> {}
#define EMBER_OP(code, family, arity, accepts, result, save, rule) \
  case OpCode::code: {                                             \
    rule                                                           \
  }
#include "ember/ops/op_table.def"
#undef EMBER_OP
#undef NONE
#undef GRADS
#undef CALL
#undef DECOMPOSE
#undef SKIP
  }
  return {};
}

}  // namespace ember::grad
