// Linear: y = x · W + b over the last dimension. W is [d_input, d_output] (PyTorch stores
// the transpose; the PyTorch record reader converts).
//
//   auto fc = nn::LinearConfig{784, 256}.init<B>(dev);
//   Tensor<B, 2> y = fc.forward(x);          // x: [batch, 784] -> [batch, 256]
//   Tensor<B, 3> z = fc.forward(seq);        // [batch, time, 784] -> [batch, time, 256]
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/module.h"

namespace ember::nn {

template <Backend B>
struct Linear;

struct LinearConfig {
  int64_t d_input = 0;
  int64_t d_output = 0;
  bool bias = true;
  /// PyTorch's default: uniform in ±1/sqrt(d_input).
  Initializer initializer = Initializer::kaiming_uniform(1.0 / std::sqrt(3.0));
  /// The parameters' float type (f32, f64, f16, bf16).
  DType dtype = DType::F32;
  EMBER_CONFIG(LinearConfig, d_input, d_output, bias, initializer, dtype)

  template <Backend B>
  Linear<B> init(Device dev = B::default_device()) const;
};

template <Backend B>
struct Linear {
  Param<Tensor<B, 2>> weight;               // [d_input, d_output]
  std::optional<Param<Tensor<B, 1>>> bias;  // [d_output]
  EMBER_MODULE(Linear, weight, bias)

  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const;
};

template <Backend B>
Linear<B> LinearConfig::init(Device dev) const {
  if (d_input <= 0 || d_output <= 0)
    throw ValueError("[linear] sizes must be positive, got d_input " + std::to_string(d_input) +
                     ", d_output " + std::to_string(d_output));
  Linear<B> m;
  auto ini = initializer;
  const int64_t fi = d_input, fo = d_output;
  m.weight = Param<Tensor<B, 2>>::lazy(
      {d_input, d_output}, dev,
      [ini, fi, fo](const Shape& s, Device d) { return ini.init<B, 2>(s, d, fi, fo); });
  if (bias)
    m.bias = Param<Tensor<B, 1>>::lazy({d_output}, dev, [ini, fi, fo](const Shape& s, Device d) {
      return ini.init<B, 1>(s, d, fi, fo);
    });
  return detail::in_dtype(std::move(m), dtype);
}

template <Backend B>
template <int D>
Tensor<B, D> Linear<B>::forward(const Tensor<B, D>& x) const {
  static_assert(D >= 1, "Linear needs rank >= 1");
  const int64_t din = weight.shape()[0], dout = weight.shape()[1];
  if (x.dim(-1) != din)
    throw ShapeError("[linear] input " + x.shape().to_string() + " does not end in d_input " +
                     std::to_string(din));
  detail::check_dtype("linear", x, weight.val());
  Tensor<B, 2> y = [&] {
    if constexpr (D == 2)
      return x.matmul(weight.val());
    else
      return x.template reshape<2>({-1, din}).matmul(weight.val());
  }();
  if (bias) y = y + bias->val().template unsqueeze<2>();
  if constexpr (D == 2) {
    return y;
  } else {
    Dims out = x.shape().dims();
    out.back() = dout;
    return y.template reshape<D>(Shape(out));
  }
}

// Compiled once in the library for the Dispatch stacks (ember/nn/instantiate.cpp).
#define EMBER_DETAIL_LINEAR_INSTANCES(ext, B)                                                  \
  ext template EMBER_INSTANCE_API(ext) Linear<B> LinearConfig::init<B>(Device) const;          \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 2> Linear<B>::forward<2>(const Tensor<B, 2>&) \
      const;                                                                                   \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 3> Linear<B>::forward<3>(const Tensor<B, 3>&) \
      const;
EMBER_DETAIL_LINEAR_INSTANCES(extern, Dispatch)
EMBER_DETAIL_LINEAR_INSTANCES(extern, AutodiffDispatch)

}  // namespace ember::nn
