// The inference layers of the freestanding build, with the host's names, configs, fields and
// parameter paths (ember/nn/layers/*.h), so a model's source and its host record both carry
// over. A config's init declares the parameters' shapes; load_module (record.h) binds them.
//
//   auto fc = nn::LinearConfig{784, 256}.init<Micro>();
//   auto conv = nn::Conv2dConfig{{1, 8}, {3, 3}}.init<Micro>();
//   auto pool = nn::MaxPool2dConfig{{2, 2}}.init();     // also 1-d, and AvgPool1d/2d
//   nn::load_module(model, weights::record);         // before the first forward
//   Tensor<Micro, 4> y = pool.forward(conv.forward(x));
#pragma once
#include <array>
#include <optional>

#include "ember/micro/record.h"

namespace ember::micro::nn {

// ---- Linear --------------------------------------------------------------------------------

template <Backend B>
struct Linear {
  Param<Tensor<B, 2>> weight;               // [d_input, d_output]
  std::optional<Param<Tensor<B, 1>>> bias;  // [d_output]
  EMBER_MODULE(Linear, weight, bias)

  /// [..., d_input] -> [..., d_output].
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    const int64_t din = weight.dim(0), dout = weight.dim(1);
    if (x.dim(-1) != din) {
      char a[64];
      fail("[linear] input %s does not end in d_input %d",
           ember::micro::detail::format_dims(a, sizeof a, x.dims().data(), D), int(din));
    }
    std::array<int64_t, D> out = x.dims();
    out[D - 1] = dout;
    auto y = Tensor<B, D>::uninit(out, "linear");
    const float* b = bias ? bias->val().data() : nullptr;
    const int32_t rows = int32_t(x.numel() / din);
    if (weight.q8())  // int8 weights from the record (tools/micro_weights.py --int8)
      kernels::linear_q8(x.data(), weight.q8(), weight.q8_scale(), b, y.mut(), rows, int32_t(din),
                         int32_t(dout));
    else
      kernels::linear(x.data(), weight.val().data(), b, y.mut(), rows, int32_t(din), int32_t(dout));
    return y;
  }
};

struct LinearConfig {
  int64_t d_input = 0;
  int64_t d_output = 0;
  bool bias = true;
  template <Backend B>
  Linear<B> init(Device = B::default_device()) const {
    if (d_input <= 0 || d_output <= 0)
      fail("[linear] sizes must be positive, got d_input %d, d_output %d", int(d_input),
           int(d_output));
    Linear<B> m;
    m.weight = Param<Tensor<B, 2>>({d_input, d_output});
    if (bias) m.bias.emplace(std::array<int64_t, 1>{d_output});
    return m;
  }
};

// ---- Conv1d, Conv2d ------------------------------------------------------------------------

template <Backend B, int N>
struct Conv {
  static_assert(N == 1 || N == 2, "ember::micro has Conv1d and Conv2d");
  Param<Tensor<B, N + 2>> weight;           // [C_out, C_in / groups, *kernel]
  std::optional<Param<Tensor<B, 1>>> bias;  // [C_out]
  std::array<int64_t, N> stride{}, padding{}, dilation{};
  int64_t groups = 1;
  EMBER_MODULE(Conv, weight, bias, stride, padding, dilation, groups)

  /// [batch, C_in, *spatial] -> [batch, C_out, *spatial_out].
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    const auto& wd = weight.dims();
    if (x.dim(1) != wd[1] * groups) {
      char a[64], b[64];
      fail("[conv] input %s has not the %d channels of weight %s",
           ember::micro::detail::format_dims(a, sizeof a, x.dims().data(), N + 2),
           int(wd[1] * groups), ember::micro::detail::format_dims(b, sizeof b, wd.data(), N + 2));
    }
    kernels::Window2d g{};
    g.n = int32_t(x.dim(0));
    g.c = int32_t(x.dim(1));
    g.h = N == 2 ? int32_t(x.dim(2)) : 1;
    g.w = int32_t(x.dim(-1));
    g.kh = N == 2 ? int32_t(wd[2]) : 1;
    g.kw = int32_t(wd[N + 1]);
    g.sh = N == 2 ? int32_t(stride[0]) : 1;
    g.sw = int32_t(stride[N - 1]);
    g.ph = N == 2 ? int32_t(padding[0]) : 0;
    g.pw = int32_t(padding[N - 1]);
    g.dh = N == 2 ? int32_t(dilation[0]) : 1;
    g.dw = int32_t(dilation[N - 1]);
    if (g.out_h() <= 0 || g.out_w() <= 0) fail("[conv] the input is smaller than the kernel");
    std::array<int64_t, N + 2> out{};
    out[0] = g.n;
    out[1] = wd[0];
    if constexpr (N == 2) out[2] = g.out_h();
    out[N + 1] = g.out_w();
    auto y = Tensor<B, N + 2>::uninit(out, "conv");
    kernels::conv2d(x.data(), weight.val().data(), bias ? bias->val().data() : nullptr, y.mut(), g,
                    int32_t(wd[0]), int32_t(groups));
    return y;
  }
};
template <Backend B>
using Conv1d = Conv<B, 1>;
template <Backend B>
using Conv2d = Conv<B, 2>;

namespace detail {
template <int N>
constexpr std::array<int64_t, N> ones() {
  std::array<int64_t, N> a{};
  for (auto& v : a) v = 1;
  return a;
}
}  // namespace detail

template <int N>
struct ConvConfig {
  std::array<int64_t, 2> channels{};  // {C_in, C_out}
  std::array<int64_t, N> kernel_size{};
  std::array<int64_t, N> stride = detail::ones<N>();
  std::array<int64_t, N> dilation = detail::ones<N>();
  std::array<int64_t, N> padding{};
  int64_t groups = 1;
  bool bias = true;
  ConvConfig with_stride(std::array<int64_t, N> s) const { return set(&ConvConfig::stride, s); }
  ConvConfig with_padding(std::array<int64_t, N> p) const { return set(&ConvConfig::padding, p); }
  ConvConfig with_dilation(std::array<int64_t, N> d) const { return set(&ConvConfig::dilation, d); }
  ConvConfig with_groups(int64_t g) const {
    ConvConfig c = *this;
    c.groups = g;
    return c;
  }
  ConvConfig with_bias(bool b) const {
    ConvConfig c = *this;
    c.bias = b;
    return c;
  }
  template <Backend B>
  Conv<B, N> init(Device = B::default_device()) const {
    const auto [cin, cout] = channels;
    if (cin <= 0 || cout <= 0 || groups <= 0 || cin % groups || cout % groups)
      fail("[conv] channels %d -> %d must be positive and divisible by groups %d", int(cin),
           int(cout), int(groups));
    Conv<B, N> m;
    m.stride = stride;
    m.padding = padding;
    m.dilation = dilation;
    m.groups = groups;
    std::array<int64_t, N + 2> ws{};
    ws[0] = cout;
    ws[1] = cin / groups;
    for (int i = 0; i < N; ++i) ws[i + 2] = kernel_size[i];
    m.weight = Param<Tensor<B, N + 2>>(ws);
    if (bias) m.bias.emplace(std::array<int64_t, 1>{cout});
    return m;
  }

 private:
  ConvConfig set(std::array<int64_t, N> ConvConfig::*field, std::array<int64_t, N> v) const {
    ConvConfig c = *this;
    c.*field = v;
    return c;
  }
};
using Conv1dConfig = ConvConfig<1>;
using Conv2dConfig = ConvConfig<2>;

// ---- pooling -------------------------------------------------------------------------------

namespace detail {
/// Pooling over the last N (1 or 2) dims of x [batch, C, *spatial]; a 1-d window is a 2-d
/// one of height 1.
template <bool kMax, int N, Backend B>
Tensor<B, N + 2> pool(const Tensor<B, N + 2>& x, const std::array<int64_t, N>& k,
                      const std::array<int64_t, N>& s, const std::array<int64_t, N>& p) {
  kernels::Window2d g{};
  g.n = int32_t(x.dim(0));
  g.c = int32_t(x.dim(1));
  g.h = N == 2 ? int32_t(x.dim(2)) : 1;
  g.w = int32_t(x.dim(-1));
  g.kh = N == 2 ? int32_t(k[0]) : 1;
  g.kw = int32_t(k[N - 1]);
  g.sh = N == 2 ? int32_t(s[0] ? s[0] : k[0]) : 1;
  g.sw = int32_t(s[N - 1] ? s[N - 1] : k[N - 1]);
  g.ph = N == 2 ? int32_t(p[0]) : 0;
  g.pw = int32_t(p[N - 1]);
  if (g.out_h() <= 0 || g.out_w() <= 0) fail("[pool] the input is smaller than the window");
  std::array<int64_t, N + 2> out{};
  out[0] = g.n;
  out[1] = g.c;
  if constexpr (N == 2) out[2] = g.out_h();
  out[N + 1] = g.out_w();
  auto y = Tensor<B, N + 2>::uninit(out, kMax ? "max_pool" : "avg_pool");
  if (kMax)
    kernels::max_pool2d(x.data(), y.mut(), g);
  else
    kernels::avg_pool2d(x.data(), y.mut(), g);
  return y;
}
}  // namespace detail

/// Max pooling over 1 or 2 spatial dims (stride 0 = the kernel).
template <int N>
struct MaxPool {
  static_assert(N == 1 || N == 2, "ember::micro has MaxPool1d and MaxPool2d");
  std::array<int64_t, N> kernel_size{}, stride{}, padding{};
  EMBER_MODULE(MaxPool, kernel_size, stride, padding)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    return detail::pool<true, N>(x, kernel_size, stride, padding);
  }
};
/// Average pooling over 1 or 2 spatial dims, padding counted as zeros.
template <int N>
struct AvgPool {
  static_assert(N == 1 || N == 2, "ember::micro has AvgPool1d and AvgPool2d");
  std::array<int64_t, N> kernel_size{}, stride{}, padding{};
  EMBER_MODULE(AvgPool, kernel_size, stride, padding)
  template <Backend B>
  Tensor<B, N + 2> forward(const Tensor<B, N + 2>& x) const {
    return detail::pool<false, N>(x, kernel_size, stride, padding);
  }
};
template <int N, template <int> class M>
struct PoolConfig {
  std::array<int64_t, N> kernel_size{};
  std::array<int64_t, N> stride{};  // empty: the kernel
  std::array<int64_t, N> padding{};
  M<N> init() const { return {kernel_size, stride, padding}; }
};
using MaxPool1d = MaxPool<1>;
using AvgPool1d = AvgPool<1>;
using MaxPool1dConfig = PoolConfig<1, MaxPool>;
using AvgPool1dConfig = PoolConfig<1, AvgPool>;
using MaxPool2d = MaxPool<2>;
using AvgPool2d = AvgPool<2>;
using MaxPool2dConfig = PoolConfig<2, MaxPool>;
using AvgPool2dConfig = PoolConfig<2, AvgPool>;

// ---- LayerNorm -----------------------------------------------------------------------------

template <Backend B>
struct LayerNorm {
  std::optional<Param<Tensor<B, 1>>> gamma, beta;
  int64_t d_model = 0;
  double epsilon = 1e-5;
  EMBER_MODULE(LayerNorm, gamma, beta, d_model, epsilon)

  /// Normalizes over the last dim.
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    if (x.dim(-1) != d_model) fail("[layer_norm] input does not end in %d", int(d_model));
    auto y = Tensor<B, D>::uninit(x.dims(), "layer_norm");
    kernels::layer_norm_rows(
        x.data(), gamma ? gamma->val().data() : nullptr, beta ? beta->val().data() : nullptr,
        y.mut(), int32_t(x.numel() / d_model), int32_t(d_model), static_cast<float>(epsilon));
    return y;
  }
};
struct LayerNormConfig {
  int64_t d_model = 0;
  double epsilon = 1e-5;
  bool elementwise_affine = true;
  bool bias = true;
  template <Backend B>
  LayerNorm<B> init(Device = B::default_device()) const {
    LayerNorm<B> m;
    m.d_model = d_model;
    m.epsilon = epsilon;
    if (elementwise_affine) m.gamma.emplace(std::array<int64_t, 1>{d_model});
    if (elementwise_affine && bias) m.beta.emplace(std::array<int64_t, 1>{d_model});
    return m;
  }
};

// ---- BatchNorm -----------------------------------------------------------------------------

/// Batch norm at inference: the running statistics of the host record.
template <Backend B>
struct BatchNorm {
  std::optional<Param<Tensor<B, 1>>> gamma, beta;
  Buffer<Tensor<B, 1>> running_mean, running_var;
  double momentum = 0.1;
  double epsilon = 1e-5;
  EMBER_MODULE(BatchNorm, gamma, beta, running_mean, running_var, momentum, epsilon)

  /// [N, C, ...].
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    static_assert(D >= 2, "batch norm needs [N, C, ...]");
    const int64_t c = running_mean.dim(0);
    if (x.dim(1) != c) fail("[batch_norm] input has %d channels, not %d", int(x.dim(1)), int(c));
    auto y = Tensor<B, D>::uninit(x.dims(), "batch_norm");
    kernels::batch_norm(x.data(), running_mean.val().data(), running_var.val().data(),
                        gamma ? gamma->val().data() : nullptr, beta ? beta->val().data() : nullptr,
                        y.mut(), int32_t(x.dim(0)), int32_t(c), int32_t(x.numel() / x.dim(0) / c),
                        static_cast<float>(epsilon));
    return y;
  }
};
struct BatchNormConfig {
  int64_t num_features = 0;
  double epsilon = 1e-5;
  double momentum = 0.1;
  bool affine = true;
  template <Backend B>
  BatchNorm<B> init(Device = B::default_device()) const {
    if (num_features <= 0) fail("[batch_norm] num_features must be positive");
    BatchNorm<B> m;
    const std::array<int64_t, 1> c{num_features};
    if (affine) m.gamma.emplace(c), m.beta.emplace(c);
    m.running_mean = Buffer<Tensor<B, 1>>(c);
    m.running_var = Buffer<Tensor<B, 1>>(c);
    m.momentum = momentum;
    m.epsilon = epsilon;
    return m;
  }
};

// ---- Embedding -----------------------------------------------------------------------------

/// A lookup table of n_embedding vectors of size d_model. This build has no integer tensors:
/// the indices come as int32_t values with their dims (the host takes a Tensor<B, D, Int>).
template <Backend B>
struct Embedding {
  Param<Tensor<B, 2>> weight;  // [n_embedding, d_model]
  EMBER_MODULE(Embedding, weight)

  /// indices [d0, ..., dk] -> [d0, ..., dk, d_model].
  template <int D>
  Tensor<B, D + 1> forward(const int32_t* indices, std::array<int64_t, D> dims) const {
    const int64_t rows = weight.dim(0), d = weight.dim(1);
    std::array<int64_t, D + 1> out{};
    int64_t n = 1;
    for (int i = 0; i < D; ++i) n *= out[i] = dims[i];
    out[D] = d;
    auto y = Tensor<B, D + 1>::uninit(out, "embedding");
    for (int64_t i = 0; i < n; ++i) {
      if (indices[i] < 0 || indices[i] >= rows)
        fail("[embedding] index %d out of range for %d rows", int(indices[i]), int(rows));
      const float* src = weight.val().data() + indices[i] * d;
      for (int64_t j = 0; j < d; ++j) y.mut()[i * d + j] = src[j];
    }
    return y;
  }
};
struct EmbeddingConfig {
  int64_t n_embedding = 0;
  int64_t d_model = 0;
  template <Backend B>
  Embedding<B> init(Device = B::default_device()) const {
    if (n_embedding <= 0 || d_model <= 0) fail("[embedding] sizes must be positive");
    Embedding<B> m;
    m.weight = Param<Tensor<B, 2>>({n_embedding, d_model});
    return m;
  }
};

}  // namespace ember::micro::nn
