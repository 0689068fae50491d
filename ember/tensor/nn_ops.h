// Convolution, pooling, interpolation and unfold/fold on [N, C, *spatial] float tensors with
// 1 to 3 spatial dims, scaled dot-product attention, and layer and RMS norm, as ops with CPU
// kernels and gradients (docs/nn-ops.md).
//
//   using T4 = ember::Tensor<ember::Cpu, 4>;
//   auto x = T4::random({8, 3, 32, 32}, ember::Distribution::normal(0, 1));
//   auto w = T4::random({16, 3, 3, 3}, ember::Distribution::normal(0, 0.1));
//   auto y = ember::conv2d(x, w, {.stride = {2}, .padding = {1}});           // [8, 16, 16, 16]
//   auto p = ember::max_pool2d(y, {2, 2});                                   // [8, 16, 8, 8]
//   auto u = ember::interpolate(p, {16, 16}, ember::InterpMode::Linear);     // bilinear
//   auto cols = ember::unfold(x, {3, 3}, {.padding = {1}});                  // [8, 27, 1024]
//
// Per-dim options take one entry per spatial dim, or one entry for all of them; empty ones
// take PyTorch's defaults. Conv has no bias input: add it with a broadcast add.
#pragma once
#include <array>
#include <cmath>
#include <optional>

#include "ember/tensor/tensor.h"

namespace ember {

struct ConvOptions {
  Dims stride = {};    // default 1
  Dims padding = {};   // default 0, on both sides
  Dims dilation = {};  // default 1
  int64_t groups = 1;
};

struct ConvTransposeOptions {
  Dims stride = {};          // default 1
  Dims padding = {};         // default 0: removed from both sides of the output
  Dims output_padding = {};  // default 0: added at the end; below the stride or the dilation
  Dims dilation = {};        // default 1
  int64_t groups = 1;
};

struct PoolOptions {
  Dims stride = {};               // default: the kernel
  Dims padding = {};              // default 0; at most half the kernel
  Dims dilation = {};             // max_pool only; default 1
  bool ceil_mode = false;         // round the output size up
  bool count_include_pad = true;  // avg_pool only: padding counts in the divisor
};

struct UnfoldOptions {
  Dims dilation = {};  // default 1
  Dims padding = {};   // default 0
  Dims stride = {};    // default 1
};

namespace detail {
template <int D2, Backend B, int D, int... Ds>
Tensor<B, D2> run_spatial(OpCode c, OpAttrs a, const Tensor<B, D>& x,
                          const Tensor<B, Ds>&... more) {
  std::array<typename B::Handle, 1 + sizeof...(Ds)> in{x.handle(), more.handle()...};
  return Tensor<B, D2>(apply<B>(Op{c, std::move(a)}, std::span<typename B::Handle>(in)));
}
template <int D>
constexpr void check_spatial_rank() {
  static_assert(D >= 3 && D <= 5, "spatial ops take [N, C, *spatial] with 1 to 3 spatial dims");
}
/// Attributes with the window's kernel, and its stride, padding and dilation from `o` (any of
/// the options above).
template <class Options>
OpAttrs spatial_attrs(const Options& o, Dims kernel = {}) {
  OpAttrs a;
  a.window.kernel = std::move(kernel);
  a.window.stride = o.stride;
  a.window.padding = o.padding;
  a.window.dilation = o.dilation;
  return a;
}
}  // namespace detail

// EMBER_SPATIAL_RANKS(op, (params), (args)) defines op1d, op2d and op3d: `op` for tensors of
// rank D = 3, 4 and 5 (1 to 3 spatial dims), taking `params` (written with B and D) and calling
// op`args`.
#define EMBER_DETAIL_SPATIAL_RANK(op, n, params, args) \
  template <Backend B, int D>                          \
  requires(D == (n) + 2) Tensor<B, D> op##n##d params { return op args; }
#define EMBER_SPATIAL_RANKS(op, params, args)    \
  EMBER_DETAIL_SPATIAL_RANK(op, 1, params, args) \
  EMBER_DETAIL_SPATIAL_RANK(op, 2, params, args) \
  EMBER_DETAIL_SPATIAL_RANK(op, 3, params, args)

/// Convolution (cross-correlation, like torch.nn.functional.conv*d) of x [N, C_in, *s] with
/// w [C_out, C_in / groups, *k]: [N, C_out, *o].
template <Backend B, int D>
Tensor<B, D> conv(const Tensor<B, D>& x, const Tensor<B, D>& w, const ConvOptions& o = {}) {
  detail::check_spatial_rank<D>();
  OpAttrs a = detail::spatial_attrs(o);
  a.window.groups = o.groups;
  return detail::run_spatial<D>(OpCode::Conv, std::move(a), x, w);
}
EMBER_SPATIAL_RANKS(conv, (const Tensor<B, D>& x, const Tensor<B, D>& w, const ConvOptions& o = {}),
                    (x, w, o))

/// Transposed convolution of x [N, C_in, *s] with w [C_in, C_out / groups, *k]: the adjoint
/// of conv, [N, C_out, (s - 1) * stride - 2 * padding + dilation * (k - 1) + output_padding + 1].
template <Backend B, int D>
Tensor<B, D> conv_transpose(const Tensor<B, D>& x, const Tensor<B, D>& w,
                            const ConvTransposeOptions& o = {}) {
  detail::check_spatial_rank<D>();
  OpAttrs a = detail::spatial_attrs(o);
  a.window.output_padding = o.output_padding;
  a.window.groups = o.groups;
  return detail::run_spatial<D>(OpCode::ConvTranspose, std::move(a), x, w);
}
EMBER_SPATIAL_RANKS(conv_transpose,
                    (const Tensor<B, D>& x, const Tensor<B, D>& w,
                     const ConvTransposeOptions& o = {}),
                    (x, w, o))

/// Max over each window (padding never wins; NaN does; the gradient goes to the first
/// maximum of a window).
template <Backend B, int D>
Tensor<B, D> max_pool(const Tensor<B, D>& x, Dims kernel, const PoolOptions& o = {}) {
  detail::check_spatial_rank<D>();
  OpAttrs a = detail::spatial_attrs(o, std::move(kernel));
  a.window.ceil_mode = o.ceil_mode;
  return detail::run_spatial<D>(OpCode::MaxPool, std::move(a), x);
}
EMBER_SPATIAL_RANKS(max_pool, (const Tensor<B, D>& x, Dims kernel, const PoolOptions& o = {}),
                    (x, std::move(kernel), o))

/// Mean over each window; padding counts in the divisor unless count_include_pad is false.
template <Backend B, int D>
Tensor<B, D> avg_pool(const Tensor<B, D>& x, Dims kernel, const PoolOptions& o = {}) {
  detail::check_spatial_rank<D>();
  OpAttrs a = detail::spatial_attrs(o, std::move(kernel));
  a.window.ceil_mode = o.ceil_mode;
  a.window.count_include_pad = o.count_include_pad;
  return detail::run_spatial<D>(OpCode::AvgPool, std::move(a), x);
}
EMBER_SPATIAL_RANKS(avg_pool, (const Tensor<B, D>& x, Dims kernel, const PoolOptions& o = {}),
                    (x, std::move(kernel), o))

/// Mean over adaptive windows giving exactly `size` outputs per spatial dim (output o of n
/// covers inputs floor(o * in / n) to ceil((o + 1) * in / n)).
template <Backend B, int D>
Tensor<B, D> adaptive_avg_pool(const Tensor<B, D>& x, Dims size) {
  detail::check_spatial_rank<D>();
  OpAttrs a;
  a.shape = std::move(size);
  return detail::run_spatial<D>(OpCode::AdaptiveAvgPool, std::move(a), x);
}
EMBER_SPATIAL_RANKS(adaptive_avg_pool, (const Tensor<B, D>& x, Dims size), (x, std::move(size)))
#undef EMBER_SPATIAL_RANKS
#undef EMBER_DETAIL_SPATIAL_RANK

/// Resizes the spatial dims to `size` like torch.nn.functional.interpolate(x, size, mode):
/// Nearest ("nearest"), NearestExact ("nearest-exact"), Linear ("linear", "bilinear",
/// "trilinear" by rank), Cubic ("bicubic", 2 spatial dims only), Area ("area": adaptive
/// average pooling); align_corners for Linear and Cubic only.
template <Backend B, int D>
Tensor<B, D> interpolate(const Tensor<B, D>& x, Dims size, InterpMode mode = InterpMode::Nearest,
                         bool align_corners = false) {
  detail::check_spatial_rank<D>();
  if (mode == InterpMode::Area) {
    if (align_corners)
      throw ValueError("[interpolate] align_corners applies to the linear and cubic modes only");
    return adaptive_avg_pool(x, std::move(size));
  }
  OpAttrs a;
  a.shape = std::move(size);
  a.interp = mode;
  a.flag = align_corners;
  return detail::run_spatial<D>(OpCode::Interpolate, std::move(a), x);
}

/// The sliding blocks of x [N, C, *s] as columns: [N, C * prod(kernel), L], L the number of
/// blocks (torch.nn.functional.unfold; im2col).
template <Backend B, int D>
Tensor<B, 3> unfold(const Tensor<B, D>& x, Dims kernel, const UnfoldOptions& o = {}) {
  detail::check_spatial_rank<D>();
  return detail::run_spatial<3>(OpCode::Unfold, detail::spatial_attrs(o, std::move(kernel)), x);
}

/// The adjoint of unfold: adds columns [N, C * prod(kernel), L] back into [N, C, *output_size]
/// (torch.nn.functional.fold; col2im). D is 2 + the number of spatial dims.
template <int D = 4, Backend B>
Tensor<B, D> fold(const Tensor<B, 3>& x, Dims output_size, Dims kernel,
                  const UnfoldOptions& o = {}) {
  detail::check_spatial_rank<D>();
  OpAttrs a = detail::spatial_attrs(o, std::move(kernel));
  a.shape = std::move(output_size);
  if (a.shape.size() == 1) a.shape = Dims(D - 2, a.shape[0]);  // one size for every dim
  return detail::run_spatial<D>(OpCode::Fold, std::move(a), x);
}

template <Backend B, int D>
struct AttentionOptions {
  std::optional<Tensor<B, D, Bool>> mask = std::nullopt;  // broadcastable to [..., Lq, Lk];
                                                          // true = masked out
  bool causal = false;  // query i sees keys j <= i + Lk - Lq (aligned to the end: a KV cache)
  std::optional<double> scale = std::nullopt;  // default 1 / sqrt(D)
};

/// Scaled dot-product attention softmax(q k^T * scale) v of q [..., Lq, D], k [..., Lk, D] and
/// v [..., Lk, Dv] with the same leading (batch, head) dims: [..., Lq, Dv]. Masked keys (the
/// mask's true entries, and with `causal` the keys after each query's position) get no weight;
/// a query whose keys are all masked gets zeros (and zero gradients) where PyTorch gives NaN.
/// The CPU backend runs it as one fused kernel with a streaming softmax over blocks of keys,
/// never storing the [Lq, Lk] scores.
///
///   using T4 = ember::Tensor<ember::Cpu, 4>;
///   auto q = T4::random({2, 8, 128, 64}, ember::Distribution::normal(0, 1));   // [N, h, L, D]
///   auto y = ember::scaled_dot_product_attention(q, q, q, {.causal = true});   // [2, 8, 128, 64]
///   ember::Tensor<ember::Cpu, 4, ember::Bool> pad = ...;                       // [2, 1, 1, 128]
///   auto z = ember::scaled_dot_product_attention(q, q, q, {.mask = pad});
template <Backend B, int D>
Tensor<B, D> scaled_dot_product_attention(const Tensor<B, D>& q, const Tensor<B, D>& k,
                                          const Tensor<B, D>& v,
                                          const AttentionOptions<B, D>& o = {}) {
  static_assert(D >= 2, "attention takes [..., L, D] tensors");
  OpAttrs a;
  a.scalar = o.scale ? *o.scale : 1.0 / std::sqrt(static_cast<double>(q.dim(D - 1)));
  a.flag = o.causal;
  std::array<typename B::Handle, 4> in{q.handle(), k.handle(), v.handle(),
                                       o.mask ? o.mask->handle() : typename B::Handle{}};
  return Tensor<B, D>(apply<B>(Op{OpCode::Attention, std::move(a)},
                               std::span<typename B::Handle>(in.data(), o.mask ? 4 : 3)));
}

/// The product of two tensors of 8-bit integers (i8 or u8, each either), as `matmul` (batch
/// dims broadcast), summed in i32: exact while the sums fit (k up to 32768 for any operands),
/// wrapping past that, as ONNX's MatMulInteger does. The CPU backend runs it on AMX's int8 tiles
/// or AVX-512 VNNI's byte dot products where the CPU has them (docs/cpu.md); elsewhere the
/// operands are widened to i32 and multiplied. Not differentiable.
///
///   using I2 = ember::Tensor<ember::Cpu, 2, ember::Int>;
///   auto a = I2::from_values<uint8_t>({1, 2, 3, 4}, {2, 2});
///   auto b = I2::from_values<int8_t>({-1, 0, 5, 1}, {2, 2});
///   auto c = ember::int_matmul(a, b);   // i32 [2, 2]: 9, 2, 17, 4
template <Backend B, int D>
Tensor<B, D, Int> int_matmul(const Tensor<B, D, Int>& a, const Tensor<B, D, Int>& b) {
  static_assert(D >= 2, "int_matmul multiplies [..., m, k] by [..., k, n]");
  std::array<typename B::Handle, 2> in{a.handle(), b.handle()};
  return Tensor<B, D, Int>(apply<B>(Op{OpCode::IntMatmul, {}}, std::span<typename B::Handle>(in)));
}

/// The convolution of two tensors of 8-bit integers (i8 or u8, each either), as `conv` (x [N,
/// C_in, *s], w [C_out, C_in / groups, *k], zero padding), summed in i32: exact while the sums
/// fit, as ONNX's ConvInteger (whose zero points the ONNX import applies around it). The CPU
/// backend runs it on AVX-512 VNNI's byte dot products where the CPU has them (docs/cpu.md);
/// elsewhere it is the input's columns (unfold) widened to i32 times the weight. Not
/// differentiable.
///
///   using I4 = ember::Tensor<ember::Cpu, 4, ember::Int>;
///   auto x = I4::from_values<uint8_t>({1, 2, 3, 4, 5, 6, 7, 8, 9}, {1, 1, 3, 3});
///   auto w = I4::from_values<int8_t>({1, -1, 2, 0}, {1, 1, 2, 2});
///   auto y = ember::int_conv(x, w);   // i32 [1, 1, 2, 2]: 7, 9, 13, 15
template <Backend B, int D>
Tensor<B, D, Int> int_conv(const Tensor<B, D, Int>& x, const Tensor<B, D, Int>& w,
                           const ConvOptions& o = {}) {
  detail::check_spatial_rank<D>();
  OpAttrs a = detail::spatial_attrs(o);
  a.window.groups = o.groups;
  std::array<typename B::Handle, 2> in{x.handle(), w.handle()};
  return Tensor<B, D, Int>(
      apply<B>(Op{OpCode::IntConv, std::move(a)}, std::span<typename B::Handle>(in)));
}

/// Layer norm of x over its last G dims, like torch.nn.functional.layer_norm with
/// normalized_shape = gamma's shape: (x - mean) / sqrt(var + epsilon) * gamma + beta, with the
/// biased variance; f16/bf16 compute in f32. gamma and beta have the shape of x's last G dims.
///
///   using T3 = ember::Tensor<ember::Cpu, 3>;
///   auto x = T3::random({8, 128, 512}, ember::Distribution::normal(0, 1));
///   auto y = ember::layer_norm(x, ember::Tensor<ember::Cpu, 1>::ones({512}),
///                              ember::Tensor<ember::Cpu, 1>::zeros({512}));   // [8, 128, 512]
template <Backend B, int D, int G>
Tensor<B, D> layer_norm(const Tensor<B, D>& x, const Tensor<B, G>& gamma, const Tensor<B, G>& beta,
                        double epsilon = 1e-5) {
  static_assert(G >= 1 && G <= D, "layer_norm normalizes 1 to D trailing dims");
  OpAttrs a;
  a.dim = D - G;
  a.scalar = epsilon;
  std::array<typename B::Handle, 3> in{x.handle(), gamma.handle(), beta.handle()};
  return Tensor<B, D>(
      apply<B>(Op{OpCode::LayerNorm, std::move(a)}, std::span<typename B::Handle>(in)));
}

/// RMS norm of x over its last G dims: x / sqrt(mean(x^2) + epsilon) * gamma, like
/// torch.nn.functional.rms_norm with normalized_shape = gamma's shape.
template <Backend B, int D, int G>
Tensor<B, D> rms_norm(const Tensor<B, D>& x, const Tensor<B, G>& gamma, double epsilon = 1e-5) {
  static_assert(G >= 1 && G <= D, "rms_norm normalizes 1 to D trailing dims");
  OpAttrs a;
  a.dim = D - G;
  a.scalar = epsilon;
  std::array<typename B::Handle, 2> in{x.handle(), gamma.handle()};
  return Tensor<B, D>(
      apply<B>(Op{OpCode::RmsNorm, std::move(a)}, std::span<typename B::Handle>(in)));
}

}  // namespace ember
