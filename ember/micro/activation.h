// Activations of the freestanding build, by the host's names (ember/tensor/activation.h).
// Each runs in place on a tensor that nobody else holds (the usual temporary):
//
//   auto h = activation::relu(fc1.forward(x));      // fc1's output is reused
//   auto p = activation::softmax(logits, 1);        // over the last dim
#pragma once
#include <math.h>

#include "ember/micro/tensor.h"

namespace ember::micro::activation {

template <Backend B, int D>
Tensor<B, D> relu(Tensor<B, D> x) {
  return std::move(x).map([](float v) { return v > 0.0f ? v : 0.0f; });
}
template <Backend B, int D>
Tensor<B, D> sigmoid(Tensor<B, D> x) {
  return std::move(x).map([](float v) { return 1.0f / (1.0f + expf(-v)); });
}
template <Backend B, int D>
Tensor<B, D> tanh(Tensor<B, D> x) {
  return std::move(x).map([](float v) { return tanhf(v); });
}
template <Backend B, int D>
Tensor<B, D> silu(Tensor<B, D> x) {
  return std::move(x).map([](float v) { return v / (1.0f + expf(-v)); });
}
/// The exact (erf) GELU, as the host's default.
template <Backend B, int D>
Tensor<B, D> gelu(Tensor<B, D> x) {
  return std::move(x).map([](float v) { return 0.5f * v * (1.0f + erff(v * 0.70710678f)); });
}
template <Backend B, int D>
Tensor<B, D> leaky_relu(Tensor<B, D> x, double slope = 0.01) {
  const float s = static_cast<float>(slope);
  return std::move(x).map([s](float v) { return v > 0.0f ? v : v * s; });
}

namespace detail {
template <Backend B, int D>
Tensor<B, D> softmax_last(const Tensor<B, D>& x, int64_t dim, bool log, const char* op) {
  if (dim != -1 && dim != D - 1) fail("[%s] only over the last dim here, got dim %d", op, int(dim));
  auto y = Tensor<B, D>::uninit(x.dims(), op);
  const int64_t n = x.dim(-1);
  kernels::softmax_rows(x.data(), y.mut(), int32_t(x.numel() / n), int32_t(n), log);
  return y;
}
}  // namespace detail

/// Softmax over `dim` (the last one in this build).
template <Backend B, int D>
Tensor<B, D> softmax(const Tensor<B, D>& x, int64_t dim) {
  return detail::softmax_last(x, dim, false, "softmax");
}
template <Backend B, int D>
Tensor<B, D> log_softmax(const Tensor<B, D>& x, int64_t dim) {
  return detail::softmax_last(x, dim, true, "log_softmax");
}

}  // namespace ember::micro::activation
