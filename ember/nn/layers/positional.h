// Position information and the gated feed-forward of modern transformers.
//
//   auto pe = nn::PositionalEncodingConfig{512}.init<B>(dev);
//   auto h = pe.forward(emb);                 // [batch, seq, 512] + sinusoids of positions 0..
//   auto rope = nn::RotaryEncodingConfig{64}.init<B>(dev);
//   auto q_rot = rope.forward(q);             // q: [batch, heads, seq, 64] (or [batch, seq, 64])
//   auto k_new = rope.forward(k_t, 17);       // a step while decoding: position 17
//   auto ffn = nn::SwiGluConfig{512, 1376}.init<B>(dev);
//   auto y = ffn.forward(h);                  // (silu(x W1) * x W3) W2
//
// PositionalEncoding ("Attention is all you need"): pe[p, 2i] = sin(p / 10000^(2i / d)),
// pe[p, 2i + 1] = cos(p / 10000^(2i / d)), added to the input (seq at dim -2, d_model at dim
// -1), then dropout. No parameters; the table is computed in double precision.
//
// RotaryEncoding (RoPE): each pair of features is rotated by the angle p · θ^(-2i / d) of the
// position p. Two pairings are in use and `interleaved` picks one:
//   false (default, "half-split", as GPT-NeoX and Hugging Face LLaMA): feature i pairs with
//         i + d/2:  out = [x1 cos - x2 sin, x2 cos + x1 sin] with x1, x2 the halves.
//   true  (interleaved, as RoFormer and Meta's LLaMA): feature 2i pairs with 2i + 1:
//         out[2i] = x[2i] cos - x[2i+1] sin,  out[2i+1] = x[2i+1] cos + x[2i] sin.
// d must be even; no parameters.
//
// SwiGlu: w2((silu(w1 x)) * w3 x) with Linear layers w1, w3 [d_model, d_ff] and
// w2 [d_ff, d_model], no biases by default (as in LLaMA).
#pragma once
#include <cmath>

#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/layers/dropout.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/module.h"
#include "ember/tensor/activation.h"

namespace ember::nn {

namespace detail {
/// [seq, d/2] tables of cos and sin of (start + p) · base^(-2i / d), on the host in f64.
template <Backend B>
std::pair<Tensor<B, 2>, Tensor<B, 2>> angle_tables(int64_t start, int64_t seq, int64_t d,
                                                   double base, Device dev, DType dt) {
  const int64_t h = d / 2;
  std::vector<double> c(static_cast<size_t>(seq * h)), s(c.size());
  for (int64_t p = 0; p < seq; ++p)
    for (int64_t i = 0; i < h; ++i) {
      double a = static_cast<double>(start + p) *
                 std::pow(base, -2.0 * static_cast<double>(i) / static_cast<double>(d));
      c[static_cast<size_t>(p * h + i)] = std::cos(a);
      s[static_cast<size_t>(p * h + i)] = std::sin(a);
    }
  auto make = [&](const std::vector<double>& v) {
    return Tensor<B, 2>::from_data(TensorData::from<double>(v, Shape{seq, h}).convert(dt), dev);
  };
  return {make(c), make(s)};
}
template <Backend B, int D>
void check_positions(const char* name, const Tensor<B, D>& x, int64_t d, int64_t start,
                     int64_t max_len) {
  static_assert(D >= 2, "positional encodings need [..., seq, d]");
  if (x.dim(D - 1) != d)
    throw ShapeError(std::string("[") + name + "] input " + x.shape().to_string() +
                     " does not end in d " + std::to_string(d));
  if (start < 0 || start + x.dim(D - 2) > max_len)
    throw ShapeError(std::string("[") + name + "] positions " + std::to_string(start) + ".." +
                     std::to_string(start + x.dim(D - 2)) + " of input " + x.shape().to_string() +
                     " exceed max_len " + std::to_string(max_len));
}
}  // namespace detail

// ---- PositionalEncoding ------------------------------------------------------------------

template <Backend B>
struct PositionalEncoding {
  int64_t d_model = 0;
  int64_t max_len = 5000;
  double dropout = 0;
  EMBER_MODULE(PositionalEncoding, d_model, max_len, dropout)

  /// x: [..., seq, d_model]; positions start at `start` (for decoding step by step).
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x, int64_t start = 0) const {
    detail::check_positions("positional_encoding", x, d_model, start, max_len);
    const int64_t seq = x.dim(D - 2);
    auto [c, s] = detail::angle_tables<B>(start, seq, d_model, 10000.0, x.device(), x.dtype());
    // Interleave: [seq, d/2, 2] -> [seq, d] = sin, cos, sin, cos, ...
    auto pe = stack<3>(std::vector{s, c}, 2).template reshape<2>({seq, d_model});
    return Dropout{dropout}.forward(x + pe.template unsqueeze<D>());
  }
};

struct PositionalEncodingConfig {
  int64_t d_model = 0;
  int64_t max_len = 5000;
  double dropout = 0;
  EMBER_CONFIG(PositionalEncodingConfig, d_model, max_len, dropout)

  template <Backend B>
  PositionalEncoding<B> init(Device = B::default_device()) const {
    if (d_model <= 0 || d_model % 2 != 0 || max_len <= 0)
      throw ValueError(
          "[positional_encoding] d_model must be positive and even and max_len "
          "positive, got d_model " +
          std::to_string(d_model) + ", max_len " + std::to_string(max_len));
    DropoutConfig{dropout}.init();  // validates
    return {d_model, max_len, dropout};
  }
};

// ---- RotaryEncoding ----------------------------------------------------------------------

template <Backend B>
struct RotaryEncoding {
  int64_t d = 0;
  int64_t max_len = 4096;
  double theta = 10000.0;
  bool interleaved = false;
  EMBER_MODULE(RotaryEncoding, d, max_len, theta, interleaved)

  /// x: [..., seq, d] (e.g. [batch, heads, seq, d]); positions start at `start`.
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x, int64_t start = 0) const {
    detail::check_positions("rotary_encoding", x, d, start, max_len);
    const int64_t seq = x.dim(D - 2), h = d / 2;
    auto [c2, s2] = detail::angle_tables<B>(start, seq, d, theta, x.device(), x.dtype());
    if (!interleaved) {
      auto c = c2.template unsqueeze<D>(), s = s2.template unsqueeze<D>();
      auto x1 = x.narrow(D - 1, 0, h), x2 = x.narrow(D - 1, h, h);
      return cat<B, D, Float>({x1 * c - x2 * s, x2 * c + x1 * s}, D - 1);
    }
    Dims pairs = x.shape().dims();
    pairs.back() = h;
    pairs.push_back(2);
    auto xp = x.template reshape<D + 1>(Shape(pairs));  // [..., seq, d/2, 2]
    auto c = c2.template unsqueeze_dim<3>(2).template unsqueeze<D + 1>();
    auto s = s2.template unsqueeze_dim<3>(2).template unsqueeze<D + 1>();
    auto x1 = xp.narrow(D, 0, 1), x2 = xp.narrow(D, 1, 1);
    return cat<B, D + 1, Float>({x1 * c - x2 * s, x2 * c + x1 * s}, D)
        .template reshape<D>(x.shape());
  }
};

struct RotaryEncodingConfig {
  int64_t d = 0;
  int64_t max_len = 4096;
  double theta = 10000.0;
  bool interleaved = false;
  EMBER_CONFIG(RotaryEncodingConfig, d, max_len, theta, interleaved)

  template <Backend B>
  RotaryEncoding<B> init(Device = B::default_device()) const {
    if (d <= 0 || d % 2 != 0 || max_len <= 0 || !(theta > 0))
      throw ValueError(
          "[rotary_encoding] d must be positive and even, max_len and theta "
          "positive, got d " +
          std::to_string(d) + ", max_len " + std::to_string(max_len));
    return {d, max_len, theta, interleaved};
  }
};

// ---- SwiGlu ------------------------------------------------------------------------------

template <Backend B>
struct SwiGlu {
  Linear<B> w1, w2, w3;  // w1, w3: [d_model, d_ff]; w2: [d_ff, d_model]
  EMBER_MODULE(SwiGlu, w1, w2, w3)

  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return w2.forward(activation::silu(w1.forward(x)) * w3.forward(x));
  }
};

struct SwiGluConfig {
  int64_t d_model = 0;
  int64_t d_ff = 0;
  bool bias = false;
  EMBER_CONFIG(SwiGluConfig, d_model, d_ff, bias)

  template <Backend B>
  SwiGlu<B> init(Device dev = B::default_device()) const {
    if (d_model <= 0 || d_ff <= 0)
      throw ValueError("[swiglu] sizes must be positive, got d_model " + std::to_string(d_model) +
                       ", d_ff " + std::to_string(d_ff));
    return {LinearConfig{d_model, d_ff, bias}.init<B>(dev),
            LinearConfig{d_ff, d_model, bias}.init<B>(dev),
            LinearConfig{d_model, d_ff, bias}.init<B>(dev)};
  }
};

}  // namespace ember::nn
