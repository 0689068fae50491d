// Convolution layers: Conv1d/2d/3d and ConvTranspose1d/2d/3d, on the conv ops of
// ember/tensor/nn_ops.h (fast CPU kernels, gradients included).
//
//   auto conv = nn::Conv2dConfig{{3, 16}, {3, 3}}.with_padding({1, 1}).init<B>(dev);
//   Tensor<B, 4> y = conv.forward(x);                  // [N, 3, H, W] -> [N, 16, H, W]
//   auto same = nn::Conv1dConfig{{8, 8}, {5}}.with_padding_mode(nn::PaddingMode::Same);
//   auto refl = nn::Conv2dConfig{{3, 8}, {3, 3}}.with_padding({1, 1})
//                   .with_padding_fill(nn::PaddingFill::Reflect);      // PyTorch's padding_mode
//   auto up = nn::ConvTranspose2dConfig{{16, 8}, {2, 2}}.with_stride({2, 2}).init<B>(dev);
//
// Weights are laid out like PyTorch's: conv [C_out, C_in / groups, *kernel], transposed conv
// [C_in, C_out / groups, *kernel]. The default init is PyTorch's (uniform ±1/sqrt(fan_in)).
#pragma once
#include <numeric>

#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/module.h"
#include "ember/tensor/nn_ops.h"

namespace ember::nn {

/// Explicit: the `padding` values on both sides. Valid: no padding. Same: the output keeps
/// the input's size (stride 1; the padding dilation * (kernel - 1) must be even).
enum class PaddingMode { Explicit, Valid, Same };
EMBER_CONFIG_ENUM(PaddingMode, {PaddingMode::Explicit, "explicit"}, {PaddingMode::Valid, "valid"},
                  {PaddingMode::Same, "same"})

/// What the padding of a conv holds (PyTorch's padding_mode): zeros, or the input mirrored
/// about its edge, its edge repeated, or wrapped around.
enum class PaddingFill { Zeros, Reflect, Replicate, Circular };
EMBER_CONFIG_ENUM(PaddingFill, {PaddingFill::Zeros, "zeros"}, {PaddingFill::Reflect, "reflect"},
                  {PaddingFill::Replicate, "replicate"}, {PaddingFill::Circular, "circular"})

namespace detail {
template <size_t N>
Dims to_dims(const std::array<int64_t, N>& a) {
  return Dims(a.begin(), a.end());
}
template <size_t N>
std::array<int64_t, N> ones() {
  std::array<int64_t, N> a;
  a.fill(1);
  return a;
}
template <Backend B, int D>
Param<Tensor<B, D>> lazy_param(Shape s, Device dev, Initializer ini, int64_t fan_in,
                               int64_t fan_out) {
  return Param<Tensor<B, D>>::lazy(std::move(s), dev, [=](const Shape& sh, Device d) {
    return ini.template init<B, D>(sh, d, fan_in, fan_out);
  });
}
/// The bias [C] as [1, C, 1, ...] for a rank-D activation.
template <int D, Backend B>
Tensor<B, D> channel_bias(const Tensor<B, 1>& b) {
  std::array<int64_t, D> s;
  s.fill(1);
  s[1] = b.dim(0);
  return b.template reshape<D>(s);
}
/// What ConvConfig and ConvTransposeConfig share. check_conv checks the channels, groups and
/// kernel sizes of the config `c` and returns prod(kernel).
template <class C>
int64_t check_conv(const char* name, const C& c) {
  const auto [cin, cout] = c.channels;
  if (cin <= 0 || cout <= 0 || c.groups <= 0 || cin % c.groups != 0 || cout % c.groups != 0)
    throw ValueError(std::string("[") + name + "] channels " + std::to_string(cin) + " -> " +
                     std::to_string(cout) + " must be positive and divisible by groups " +
                     std::to_string(c.groups));
  int64_t k = 1;
  for (auto s : c.kernel_size) {
    if (s <= 0) throw ValueError(std::string("[") + name + "] kernel sizes must be positive");
    k *= s;
  }
  return k;
}
/// conv_params gives the module `m` the stride, dilation and groups of `c`, a weight
/// [rows, cols / groups, *kernel] (rows, cols: C_out, C_in, or C_in, C_out when `transposed`)
/// and a bias [C_out], with PyTorch's fans from the weight's shape for both: fan_in =
/// cols / groups * k, fan_out = rows / groups * k.
template <Backend B, int N, class C, class M>
void conv_params(const C& c, bool transposed, int64_t k, Device dev, M& m) {
  const auto [cin, cout] = c.channels;
  m.stride = c.stride;
  m.dilation = c.dilation;
  m.groups = c.groups;
  const int64_t rows = transposed ? cin : cout, cols = transposed ? cout : cin;
  Dims ws{rows, cols / c.groups};
  for (auto s : c.kernel_size) ws.push_back(s);
  const int64_t fan_in = cols / c.groups * k, fan_out = rows / c.groups * k;
  m.weight = lazy_param<B, N + 2>(Shape(ws), dev, c.initializer, fan_in, fan_out);
  if (c.bias) m.bias = lazy_param<B, 1>(Shape{cout}, dev, c.initializer, fan_in, fan_out);
}
}  // namespace detail

// ---- Conv ------------------------------------------------------------------------------------

template <Backend B, int N>
struct Conv {
  static_assert(N >= 1 && N <= 3, "Conv has 1 to 3 spatial dims");
  Param<Tensor<B, N + 2>> weight;           // [C_out, C_in / groups, *kernel]
  std::optional<Param<Tensor<B, 1>>> bias;  // [C_out]
  std::array<int64_t, N> stride{}, padding{}, dilation{};
  int64_t groups = 1;
  PaddingFill fill = PaddingFill::Zeros;
  EMBER_MODULE(Conv, weight, bias, stride, padding, dilation, groups, fill)

  /// [batch, C_in, *spatial] -> [batch, C_out, *spatial_out].
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    detail::check_dtype("conv", x, weight.val());
    if (fill != PaddingFill::Zeros) {  // pad first, then convolve without padding
      std::vector<int64_t> pads;
      for (int i = N - 1; i >= 0; --i) pads.insert(pads.end(), {padding[i], padding[i]});
      const PadMode mode = fill == PaddingFill::Reflect     ? PadMode::Reflect
                           : fill == PaddingFill::Replicate ? PadMode::Replicate
                                                            : PadMode::Circular;
      return conv_padded(x.pad(pads, mode), {});
    }
    return conv_padded(x, detail::to_dims(padding));
  }

 private:
  Tensor<B, N + 2> conv_padded(const Tensor<B, N + 2>& x, Dims pad) const {
    auto y = conv(x, weight.val(),
                  {detail::to_dims(stride), std::move(pad), detail::to_dims(dilation), groups});
    if (bias) y = y + detail::channel_bias<N + 2>(bias->val());
    return y;
  }
};

template <int N>
struct ConvConfig {
  std::array<int64_t, 2> channels{};  // {C_in, C_out}
  std::array<int64_t, N> kernel_size{};
  std::array<int64_t, N> stride = detail::ones<N>();
  std::array<int64_t, N> dilation = detail::ones<N>();
  std::array<int64_t, N> padding{};
  PaddingMode padding_mode = PaddingMode::Explicit;
  /// What the padding holds (PyTorch's padding_mode: zeros, reflect, replicate, circular).
  PaddingFill padding_fill = PaddingFill::Zeros;
  int64_t groups = 1;
  bool bias = true;
  Initializer initializer = Initializer::kaiming_uniform(1.0 / std::sqrt(3.0));
  /// The parameters' float type (f32, f64, f16, bf16).
  DType dtype = DType::F32;
  EMBER_CONFIG(ConvConfig, channels, kernel_size, stride, dilation, padding, padding_mode,
               padding_fill, groups, bias, initializer, dtype)

  template <Backend B>
  Conv<B, N> init(Device dev = B::default_device()) const {
    const int64_t k = detail::check_conv("conv", *this);
    Conv<B, N> m;
    m.padding = padding_mode == PaddingMode::Explicit ? padding : std::array<int64_t, N>{};
    if (padding_mode == PaddingMode::Same)
      for (int i = 0; i < N; ++i) {
        int64_t total = dilation[i] * (kernel_size[i] - 1);
        if (stride[i] != 1 || total % 2 != 0)
          throw ValueError(
              "[conv] 'same' padding needs stride 1 and an even dilation * (kernel - 1)");
        m.padding[i] = total / 2;
      }
    m.fill = padding_fill;
    detail::conv_params<B, N>(*this, false, k, dev, m);
    return detail::in_dtype(std::move(m), dtype);
  }
};

template <Backend B>
using Conv1d = Conv<B, 1>;
template <Backend B>
using Conv2d = Conv<B, 2>;
template <Backend B>
using Conv3d = Conv<B, 3>;
using Conv1dConfig = ConvConfig<1>;
using Conv2dConfig = ConvConfig<2>;
using Conv3dConfig = ConvConfig<3>;

// ---- ConvTranspose -----------------------------------------------------------------------

template <Backend B, int N>
struct ConvTranspose {
  static_assert(N >= 1 && N <= 3, "ConvTranspose has 1 to 3 spatial dims");
  Param<Tensor<B, N + 2>> weight;           // [C_in, C_out / groups, *kernel]
  std::optional<Param<Tensor<B, 1>>> bias;  // [C_out]
  std::array<int64_t, N> stride{}, padding{}, padding_out{}, dilation{};
  int64_t groups = 1;
  EMBER_MODULE(ConvTranspose, weight, bias, stride, padding, padding_out, dilation, groups)

  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    detail::check_dtype("conv_transpose", x, weight.val());
    auto y = conv_transpose(x, weight.val(),
                            {detail::to_dims(stride), detail::to_dims(padding),
                             detail::to_dims(padding_out), detail::to_dims(dilation), groups});
    if (bias) y = y + detail::channel_bias<N + 2>(bias->val());
    return y;
  }
};

template <int N>
struct ConvTransposeConfig {
  std::array<int64_t, 2> channels{};  // {C_in, C_out}
  std::array<int64_t, N> kernel_size{};
  std::array<int64_t, N> stride = detail::ones<N>();
  std::array<int64_t, N> dilation = detail::ones<N>();
  std::array<int64_t, N> padding{};
  std::array<int64_t, N> padding_out{};
  int64_t groups = 1;
  bool bias = true;
  Initializer initializer = Initializer::kaiming_uniform(1.0 / std::sqrt(3.0));
  /// The parameters' float type (f32, f64, f16, bf16).
  DType dtype = DType::F32;
  EMBER_CONFIG(ConvTransposeConfig, channels, kernel_size, stride, dilation, padding, padding_out,
               groups, bias, initializer, dtype)

  template <Backend B>
  ConvTranspose<B, N> init(Device dev = B::default_device()) const {
    const int64_t k = detail::check_conv("conv_transpose", *this);
    ConvTranspose<B, N> m;
    detail::conv_params<B, N>(*this, true, k, dev, m);
    m.padding = padding;
    m.padding_out = padding_out;
    return detail::in_dtype(std::move(m), dtype);
  }
};

template <Backend B>
using ConvTranspose1d = ConvTranspose<B, 1>;
template <Backend B>
using ConvTranspose2d = ConvTranspose<B, 2>;
template <Backend B>
using ConvTranspose3d = ConvTranspose<B, 3>;
using ConvTranspose1dConfig = ConvTransposeConfig<1>;
using ConvTranspose2dConfig = ConvTransposeConfig<2>;
using ConvTranspose3dConfig = ConvTransposeConfig<3>;

}  // namespace ember::nn
