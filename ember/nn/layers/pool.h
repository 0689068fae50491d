// Pooling, interpolation and unfold/fold layers: stateless modules over the ops of
// ember/tensor/nn_ops.h, with configs for models that describe them in JSON.
//
//   auto pool = nn::MaxPool2dConfig{{2, 2}}.init();          // stride defaults to the kernel
//   auto gap = nn::AdaptiveAvgPool2dConfig{{1, 1}}.init();    // global average pooling
//   auto up = nn::InterpolateConfig{{64, 64}, nn::InterpMode::Cubic}.init();
//   Tensor<B, 4> y = up.forward(pool.forward(x));
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/module.h"
#include "ember/tensor/nn_ops.h"
#include "ember/tensor/pool_indices.h"

namespace ember {
EMBER_CONFIG_ENUM(InterpMode, {InterpMode::Nearest, "nearest"}, {InterpMode::Linear, "linear"},
                  {InterpMode::Cubic, "cubic"}, {InterpMode::NearestExact, "nearest_exact"},
                  {InterpMode::Area, "area"})
}  // namespace ember

namespace ember::nn {

using ember::InterpMode;

namespace detail {
template <size_t N>
Dims dims_of(const std::array<int64_t, N>& a) {
  return Dims(a.begin(), a.end());
}
}  // namespace detail

/// Max pooling over N spatial dims (stride empty = the kernel).
template <int N>
struct MaxPool {
  std::array<int64_t, N> kernel_size{}, stride{}, padding{}, dilation{};
  bool ceil_mode = false;
  EMBER_MODULE(MaxPool, kernel_size, stride, padding, dilation, ceil_mode)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    return max_pool(
        x, detail::dims_of(kernel_size),
        {detail::dims_of(stride), detail::dims_of(padding), detail::dims_of(dilation), ceil_mode});
  }
};

/// Average pooling over N spatial dims.
template <int N>
struct AvgPool {
  std::array<int64_t, N> kernel_size{}, stride{}, padding{};
  bool ceil_mode = false;
  bool count_include_pad = true;
  EMBER_MODULE(AvgPool, kernel_size, stride, padding, ceil_mode, count_include_pad)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    return avg_pool(
        x, detail::dims_of(kernel_size),
        {detail::dims_of(stride), detail::dims_of(padding), {}, ceil_mode, count_include_pad});
  }
};

/// Average pooling to a fixed output size.
template <int N>
struct AdaptiveAvgPool {
  std::array<int64_t, N> output_size{};
  EMBER_MODULE(AdaptiveAvgPool, output_size)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    return adaptive_avg_pool(x, detail::dims_of(output_size));
  }
};

/// Max pooling to a fixed output size.
template <int N>
struct AdaptiveMaxPool {
  std::array<int64_t, N> output_size{};
  EMBER_MODULE(AdaptiveMaxPool, output_size)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    return adaptive_max_pool(x, detail::dims_of(output_size));
  }
};

/// The inverse of max pooling: values back at the indices max_pool_with_indices gave, zeros
/// elsewhere, in planes of output_size.
template <int N>
struct MaxUnpool {
  std::array<int64_t, N> output_size{};
  EMBER_MODULE(MaxUnpool, output_size)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x, const Tensor<B, N + 2, Int>& indices) const {
    return max_unpool(x, indices, detail::dims_of(output_size));
  }
};

/// Pads the last N dims: {before, after} for the last dim, then the one before, ... (the
/// PyTorch modules ConstantPad*d, ZeroPad2d, ReflectionPad*d, ReplicationPad*d, CircularPad*d).
template <int N>
struct Pad {
  std::array<int64_t, 2 * N> padding{};
  PadMode mode = PadMode::Constant;
  double value = 0;
  EMBER_MODULE(Pad, padding, mode, value)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return x.pad(std::vector<int64_t>(padding.begin(), padding.end()), mode, value);
  }
};
using Pad1d = Pad<1>;
using Pad2d = Pad<2>;
using Pad3d = Pad<3>;

template <int N>
struct MaxPoolConfig {
  std::array<int64_t, N> kernel_size{};
  std::array<int64_t, N> stride{};  // zeros: the kernel size
  std::array<int64_t, N> padding{};
  std::array<int64_t, N> dilation = [] {
    std::array<int64_t, N> a;
    a.fill(1);
    return a;
  }();
  bool ceil_mode = false;
  EMBER_CONFIG(MaxPoolConfig, kernel_size, stride, padding, dilation, ceil_mode)
  MaxPool<N> init() const {
    auto s = stride == std::array<int64_t, N>{} ? kernel_size : stride;
    return {kernel_size, s, padding, dilation, ceil_mode};
  }
};

template <int N>
struct AvgPoolConfig {
  std::array<int64_t, N> kernel_size{};
  std::array<int64_t, N> stride{};  // zeros: the kernel size
  std::array<int64_t, N> padding{};
  bool ceil_mode = false;
  bool count_include_pad = true;
  EMBER_CONFIG(AvgPoolConfig, kernel_size, stride, padding, ceil_mode, count_include_pad)
  AvgPool<N> init() const {
    auto s = stride == std::array<int64_t, N>{} ? kernel_size : stride;
    return {kernel_size, s, padding, ceil_mode, count_include_pad};
  }
};

template <int N>
struct AdaptiveAvgPoolConfig {
  std::array<int64_t, N> output_size{};
  EMBER_CONFIG(AdaptiveAvgPoolConfig, output_size)
  AdaptiveAvgPool<N> init() const { return {output_size}; }
};

using MaxPool1d = MaxPool<1>;
using MaxPool2d = MaxPool<2>;
using AvgPool1d = AvgPool<1>;
using AvgPool2d = AvgPool<2>;
using AdaptiveAvgPool1d = AdaptiveAvgPool<1>;
using AdaptiveAvgPool2d = AdaptiveAvgPool<2>;
using AdaptiveAvgPool3d = AdaptiveAvgPool<3>;
using MaxPool1dConfig = MaxPoolConfig<1>;
using MaxPool2dConfig = MaxPoolConfig<2>;
using AvgPool1dConfig = AvgPoolConfig<1>;
using AvgPool2dConfig = AvgPoolConfig<2>;
using AdaptiveAvgPool1dConfig = AdaptiveAvgPoolConfig<1>;
using AdaptiveAvgPool2dConfig = AdaptiveAvgPoolConfig<2>;
using AdaptiveAvgPool3dConfig = AdaptiveAvgPoolConfig<3>;
using AdaptiveMaxPool1d = AdaptiveMaxPool<1>;
using AdaptiveMaxPool2d = AdaptiveMaxPool<2>;
using AdaptiveMaxPool3d = AdaptiveMaxPool<3>;
using MaxUnpool1d = MaxUnpool<1>;
using MaxUnpool2d = MaxUnpool<2>;
using MaxUnpool3d = MaxUnpool<3>;

// ---- Interpolate, Unfold, Fold -------------------------------------------------------------

/// Resizes [N, C, *spatial] to `output_size` (nearest, (bi/tri)linear or bicubic).
struct Interpolate {
  std::vector<int64_t> output_size;
  InterpMode mode = InterpMode::Nearest;
  bool align_corners = false;
  EMBER_MODULE(Interpolate, output_size, mode, align_corners)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return interpolate(x, Dims(output_size.begin(), output_size.end()), mode, align_corners);
  }
};
struct InterpolateConfig {
  std::vector<int64_t> output_size;
  InterpMode mode = InterpMode::Nearest;
  bool align_corners = false;
  EMBER_CONFIG(InterpolateConfig, output_size, mode, align_corners)
  Interpolate init() const { return {output_size, mode, align_corners}; }
};

/// Sliding blocks as columns (im2col): [N, C, H, W] -> [N, C * kh * kw, L].
struct Unfold {
  std::vector<int64_t> kernel_size, stride, padding, dilation;
  EMBER_MODULE(Unfold, kernel_size, stride, padding, dilation)
  template <Backend B, int D>
  Tensor<B, 3> forward(const Tensor<B, D>& x) const {
    auto d = [](const std::vector<int64_t>& v) { return Dims(v.begin(), v.end()); };
    return unfold(x, d(kernel_size), {d(dilation), d(padding), d(stride)});
  }
};
/// Columns back to an image, summing overlaps (col2im): the adjoint of Unfold.
struct Fold {
  std::vector<int64_t> output_size, kernel_size, stride, padding, dilation;
  EMBER_MODULE(Fold, output_size, kernel_size, stride, padding, dilation)
  template <int D = 4, Backend B>
  Tensor<B, D> forward(const Tensor<B, 3>& x) const {
    auto d = [](const std::vector<int64_t>& v) { return Dims(v.begin(), v.end()); };
    return fold<D>(x, d(output_size), d(kernel_size), {d(dilation), d(padding), d(stride)});
  }
};

}  // namespace ember::nn
