// Activation functions on float tensors (ember::activation).
//
//   using namespace ember::activation;
//   auto h = relu(x);  auto p = softmax(logits, 1);  auto g = gelu(x);
#pragma once
#include <cmath>

#include "ember/tensor/tensor.h"

namespace ember::activation {

namespace detail {
template <Backend B, int D>
Tensor<B, D> composite(OpCode c, const Tensor<B, D>& x, OpAttrs a = {}) {
  std::array<typename B::Handle, 1> in{x.handle()};
  return Tensor<B, D>(apply<B>(Op{c, std::move(a)}, std::span<typename B::Handle>(in)));
}
}  // namespace detail

template <Backend B, int D>
Tensor<B, D> relu(const Tensor<B, D>& x) {
  return detail::composite(OpCode::Relu, x);
}
/// Exact (erf) GELU.
template <Backend B, int D>
Tensor<B, D> gelu(const Tensor<B, D>& x) {
  return detail::composite(OpCode::Gelu, x);
}
/// GELU with the tanh approximation.
template <Backend B, int D>
Tensor<B, D> gelu_tanh(const Tensor<B, D>& x) {
  constexpr double k = 0.7978845608028654;  // sqrt(2 / pi)
  auto inner = (x + x * x * x * 0.044715) * k;
  return x * 0.5 * (inner.tanh() + 1.0);
}
template <Backend B, int D>
Tensor<B, D> silu(const Tensor<B, D>& x) {
  return detail::composite(OpCode::Silu, x);
}
template <Backend B, int D>
Tensor<B, D> sigmoid(const Tensor<B, D>& x) {
  return x.sigmoid();
}
template <Backend B, int D>
Tensor<B, D> tanh(const Tensor<B, D>& x) {
  return x.tanh();
}
template <Backend B, int D>
Tensor<B, D> softmax(const Tensor<B, D>& x, int64_t dim) {
  OpAttrs a;
  a.dim = dim;
  return detail::composite(OpCode::Softmax, x, a);
}
template <Backend B, int D>
Tensor<B, D> log_softmax(const Tensor<B, D>& x, int64_t dim) {
  OpAttrs a;
  a.dim = dim;
  return detail::composite(OpCode::LogSoftmax, x, a);
}
template <Backend B, int D>
Tensor<B, D> softmin(const Tensor<B, D>& x, int64_t dim) {
  return softmax(x.neg(), dim);
}
/// Softmax whose weights may all be zero: exp(x - max) / (1 + sum), as in "quiet" attention.
template <Backend B, int D>
Tensor<B, D> quiet_softmax(const Tensor<B, D>& x, int64_t dim) {
  auto e = (x - x.max_dim(dim)).exp();
  return e / (e.sum_dim(dim) + 1.0);
}
/// log(1 + exp(beta x)) / beta, linear above `threshold` (torch.nn.functional.softplus).
template <Backend B, int D>
Tensor<B, D> softplus(const Tensor<B, D>& x, double beta = 1.0, double threshold = 20.0) {
  OpAttrs a;
  a.scalar = beta;
  a.scalar2 = threshold;
  return detail::composite(OpCode::Softplus, x, a);
}
template <Backend B, int D>
Tensor<B, D> mish(const Tensor<B, D>& x) {
  return x * softplus(x).tanh();
}
template <Backend B, int D>
Tensor<B, D> leaky_relu(const Tensor<B, D>& x, double slope = 0.01) {
  return x.mask_where(x.lower_elem(0.0), x * slope);
}
/// x > 0 ? x : alpha (exp(x) - 1)
template <Backend B, int D>
Tensor<B, D> elu(const Tensor<B, D>& x, double alpha = 1.0) {
  return x.mask_where(x.lower_equal_elem(0.0), x.expm1() * alpha);
}
template <Backend B, int D>
Tensor<B, D> celu(const Tensor<B, D>& x, double alpha = 1.0) {
  return x.mask_where(x.lower_equal_elem(0.0), (x / alpha).expm1() * alpha);
}
template <Backend B, int D>
Tensor<B, D> selu(const Tensor<B, D>& x) {
  constexpr double alpha = 1.6732632423543772, scale = 1.0507009873554805;
  return elu(x, alpha) * scale;
}
/// clamp(alpha x + beta, 0, 1); PyTorch's hardsigmoid is alpha = 1/6, beta = 0.5.
template <Backend B, int D>
Tensor<B, D> hard_sigmoid(const Tensor<B, D>& x, double alpha = 1.0 / 6.0, double beta = 0.5) {
  return (x * alpha + beta).clamp(0.0, 1.0);
}
template <Backend B, int D>
Tensor<B, D> hard_swish(const Tensor<B, D>& x) {
  return x * hard_sigmoid(x);
}
/// log(sigmoid(x)), computed stably as -softplus(-x).
template <Backend B, int D>
Tensor<B, D> log_sigmoid(const Tensor<B, D>& x) {
  return softplus(x.neg()).neg();
}
/// x > 0 ? x : weight * x, `weight` broadcast (one value or one per channel in dim 1).
template <Backend B, int D>
Tensor<B, D> prelu(const Tensor<B, D>& x, const Tensor<B, D>& weight) {
  return x.mask_where(x.lower_elem(0.0), x * weight);
}

/// clamp(x, min, max) (torch.nn.functional.hardtanh).
template <Backend B, int D>
Tensor<B, D> hardtanh(const Tensor<B, D>& x, double min = -1.0, double max = 1.0) {
  return x.clamp(min, max);
}
/// clamp(x, 0, 6).
template <Backend B, int D>
Tensor<B, D> relu6(const Tensor<B, D>& x) {
  return x.clamp(0.0, 6.0);
}
/// x > threshold ? x : value (torch.nn.functional.threshold).
template <Backend B, int D>
Tensor<B, D> threshold(const Tensor<B, D>& x, double threshold, double value) {
  return x.mask_fill(x.lower_equal_elem(threshold), value);
}
/// x - tanh(x).
template <Backend B, int D>
Tensor<B, D> tanhshrink(const Tensor<B, D>& x) {
  return x - x.tanh();
}
/// x / (1 + |x|).
template <Backend B, int D>
Tensor<B, D> softsign(const Tensor<B, D>& x) {
  return x / (x.abs() + 1.0);
}
/// |x| > lambda ? x : 0.
template <Backend B, int D>
Tensor<B, D> hardshrink(const Tensor<B, D>& x, double lambda = 0.5) {
  return x.mask_fill(x.abs().lower_equal_elem(lambda), 0.0);
}
/// x - lambda above lambda, x + lambda below -lambda, 0 between.
template <Backend B, int D>
Tensor<B, D> softshrink(const Tensor<B, D>& x, double lambda = 0.5) {
  if (!(lambda >= 0.0))
    throw ValueError("[softshrink] lambda must be >= 0, got " + std::to_string(lambda));
  return (x - x.clamp(-lambda, lambda));
}
/// The gated linear unit: a * sigmoid(b), with a and b the two halves of x along `dim`.
template <Backend B, int D>
Tensor<B, D> glu(const Tensor<B, D>& x, int64_t dim = -1) {
  dim = wrap_dim(dim, D, "glu");
  const int64_t n = x.dim(dim);
  if (n % 2 != 0)
    throw ShapeError("[glu] dim " + std::to_string(dim) + " must have an even size, got " +
                     x.shape().to_string());
  return x.narrow(dim, 0, n / 2) * x.narrow(dim, n / 2, n / 2).sigmoid();
}

}  // namespace ember::activation
