// Recurrent layers: Rnn (tanh or relu), Lstm and Gru, stacked and optionally bidirectional,
// with PyTorch's equations, gate order and (output, final state) results.
//
//   auto lstm = nn::LstmConfig{16, 32}.with_num_layers(2).with_batch_first(true).init<B>(dev);
//   auto [y, h, c] = lstm.forward(x);            // x: [batch, seq, 16] -> y: [batch, seq, 32]
//                                                // h, c: [num_layers * dirs, batch, 32]
//   auto gru = nn::GruConfig{16, 32}.with_bidirectional(true).init<B>(dev);
//   auto [out, h_n] = gru.forward(x_tm, h0);     // x_tm: [seq, batch, 16]; out: [.., 64]
//
// Parameters. Layer k holds one direction `fwd` (and `rev` when bidirectional), each two
// Linear layers in ember's [d_in, d_out] layout:
//   layers.k.fwd.ih.weight  [d_in_k, G * d_hidden]   (PyTorch's weight_ih_lk, transposed)
//   layers.k.fwd.ih.bias    [G * d_hidden]           (bias_ih_lk)
//   layers.k.fwd.hh.weight  [d_hidden, G * d_hidden] (weight_hh_lk, transposed)
//   layers.k.fwd.hh.bias    [G * d_hidden]           (bias_hh_lk)
//   layers.k.rev.*                                   (the *_reverse tensors)
// with G = 1 (Rnn), 4 (Lstm: gates i, f, g, o) or 3 (Gru: gates r, z, n), the gates side by
// side in PyTorch's order along the last dim; d_in_0 = d_input, d_in_k = d_hidden * dirs.
// Both biases are kept, as in PyTorch, so the parameter count is PyTorch's. All parameters
// start uniform in ±1/sqrt(d_hidden), PyTorch's default.
//
// Equations (per step t, h and c the previous state; x_t W + b is the `ih` projection, which
// runs as one matmul over the whole sequence; h W + b is the `hh` projection, one per step):
//   Rnn:  h' = act(x_t W_ih + b_ih + h W_hh + b_hh)
//   Lstm: i, f, g, o = σ, σ, tanh, σ of (x_t W_ih + b_ih + h W_hh + b_hh);
//         c' = f c + i g;  h' = o tanh(c')
//   Gru:  r, z = σ(x_t W_i{r,z} + b_i{r,z} + h W_h{r,z} + b_h{r,z});
//         n = tanh(x_t W_in + b_in + r (h W_hn + b_hn));  h' = (1 - z) n + z h
// Dropout (between stacked layers, not after the last) is active only while training.
#pragma once
#include <cmath>

#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/layers/dropout.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/module.h"
#include "ember/tensor/activation.h"

namespace ember::nn {

enum class RnnNonlinearity { Tanh, Relu };
EMBER_CONFIG_ENUM(RnnNonlinearity, {RnnNonlinearity::Tanh, "tanh"}, {RnnNonlinearity::Relu, "relu"})

/// One direction of one recurrent layer: the input and hidden projections.
template <Backend B>
struct RecurrentDirection {
  Linear<B> ih;  // [d_in, G * d_hidden]
  Linear<B> hh;  // [d_hidden, G * d_hidden]
  EMBER_MODULE(RecurrentDirection, ih, hh)
};

/// One recurrent layer: the forward direction and, when bidirectional, the reverse one.
template <Backend B>
struct RecurrentLayer {
  RecurrentDirection<B> fwd;
  std::optional<RecurrentDirection<B>> rev;
  EMBER_MODULE(RecurrentLayer, fwd, rev)
};

/// Rnn and Gru results: output [seq, batch, dirs * d_hidden] (batch first if configured) and
/// the last hidden state of every layer and direction [num_layers * dirs, batch, d_hidden]
/// (layer 0 forward, layer 0 reverse, layer 1 forward, ...), as PyTorch returns them.
template <Backend B>
struct RnnOutput {
  Tensor<B, 3> output;
  Tensor<B, 3> h_n;
};
/// Lstm results: the output, and the final hidden and cell states.
template <Backend B>
struct LstmOutput {
  Tensor<B, 3> output;
  Tensor<B, 3> h_n;
  Tensor<B, 3> c_n;
};
/// An Lstm's initial state: h_0 and c_0, each [num_layers * dirs, batch, d_hidden].
template <Backend B>
struct LstmState {
  Tensor<B, 3> h;
  Tensor<B, 3> c;
};

namespace detail {

enum class CellKind { RnnTanh, RnnRelu, Lstm, Gru };

inline const char* cell_name(CellKind k) {
  switch (k) {
    case CellKind::RnnTanh:
    case CellKind::RnnRelu:
      return "rnn";
    case CellKind::Lstm:
      return "lstm";
    case CellKind::Gru:
      return "gru";
  }
  return "rnn";
}
inline int64_t cell_gates(CellKind k) {
  return k == CellKind::Lstm ? 4 : k == CellKind::Gru ? 3 : 1;
}

/// One step of a cell: `gi` is the input projection at this step [batch, G * H] (with b_ih),
/// h (and c for Lstm) the previous state; updates h and c.
template <Backend B>
void cell_step(CellKind kind, const Linear<B>& hh, const Tensor<B, 2>& gi, Tensor<B, 2>& h,
               std::optional<Tensor<B, 2>>& c) {
  const int64_t H = h.dim(1);
  Tensor<B, 2> gh = hh.forward(h);
  switch (kind) {
    case CellKind::RnnTanh:
      h = (gi + gh).tanh();
      return;
    case CellKind::RnnRelu:
      h = activation::relu(gi + gh);
      return;
    case CellKind::Lstm: {
      auto g = gi + gh;
      auto i = g.narrow(1, 0, H).sigmoid();
      auto f = g.narrow(1, H, H).sigmoid();
      auto gg = g.narrow(1, 2 * H, H).tanh();
      auto o = g.narrow(1, 3 * H, H).sigmoid();
      c = f * *c + i * gg;
      h = o * c->tanh();
      return;
    }
    case CellKind::Gru: {
      auto rz = (gi.narrow(1, 0, 2 * H) + gh.narrow(1, 0, 2 * H)).sigmoid();
      auto r = rz.narrow(1, 0, H);
      auto z = rz.narrow(1, H, H);
      auto n = (gi.narrow(1, 2 * H, H) + r * gh.narrow(1, 2 * H, H)).tanh();
      h = n + z * (h - n);
      return;
    }
  }
}

/// The steps of a time-major [T, N, F] sequence as T tensors [N, F]. The sequence is halved
/// recursively: each slice's gradient is as large as the tensor it slices, so slicing every
/// step out of the whole sequence would cost O(T²) in the backward pass; halving costs
/// O(T log T).
template <Backend B>
void unbind_steps(const Tensor<B, 3>& x, std::vector<Tensor<B, 2>>& out) {
  const int64_t T = x.dim(0);
  if (T == 1) {
    out.push_back(x.template reshape<2>({x.dim(1), x.dim(2)}));
    return;
  }
  unbind_steps(x.narrow(0, 0, T / 2), out);
  unbind_steps(x.narrow(0, T / 2, T - T / 2), out);
}

/// Runs one direction over a time-major sequence x [T, N, d_in] from the state (h, c);
/// returns the hidden states [T, N, H] in time order and leaves the final state in (h, c).
template <Backend B>
Tensor<B, 3> run_direction(CellKind kind, const RecurrentDirection<B>& dir, const Tensor<B, 3>& x,
                           bool reverse, Tensor<B, 2>& h, std::optional<Tensor<B, 2>>& c) {
  const int64_t T = x.dim(0);
  // The input projection of every step at once: [T * N, d_in] x [d_in, G * H].
  std::vector<Tensor<B, 2>> gi;
  unbind_steps(dir.ih.forward(x), gi);
  std::vector<Tensor<B, 2>> outs(static_cast<size_t>(T), h);
  for (int64_t s = 0; s < T; ++s) {
    const auto t = static_cast<size_t>(reverse ? T - 1 - s : s);
    cell_step(kind, dir.hh, gi[t], h, c);
    outs[t] = h;
  }
  return stack<3>(outs, 0);
}

/// The stacked, possibly bidirectional recurrence shared by Rnn, Lstm and Gru.
template <Backend B>
std::tuple<Tensor<B, 3>, Tensor<B, 3>, std::optional<Tensor<B, 3>>> run_recurrent(
    CellKind kind, const std::vector<RecurrentLayer<B>>& layers, int64_t d_hidden, bool batch_first,
    double dropout, const Tensor<B, 3>& input, const std::optional<Tensor<B, 3>>& h0,
    const std::optional<Tensor<B, 3>>& c0) {
  const std::string name = cell_name(kind);
  if (layers.empty()) throw ValueError("[" + name + "] the layer has no recurrent layers");
  const int64_t L = static_cast<int64_t>(layers.size());
  const int64_t dirs = layers[0].rev ? 2 : 1;
  const int64_t d_input = layers[0].fwd.ih.weight.shape()[0];
  if (input.dim(2) != d_input)
    throw ShapeError("[" + name + "] input " + input.shape().to_string() +
                     " does not end in d_input " + std::to_string(d_input));
  Tensor<B, 3> x = batch_first ? input.swap_dims(0, 1) : input;  // [T, N, d_in]
  const int64_t T = x.dim(0), N = x.dim(1), H = d_hidden;
  if (T == 0)
    throw ShapeError("[" + name + "] input " + input.shape().to_string() +
                     " has an empty sequence");
  const Shape state_shape{L * dirs, N, H};
  auto check_state = [&](const std::optional<Tensor<B, 3>>& s, const char* what) {
    if (s && s->shape() != state_shape)
      throw ShapeError("[" + name + "] " + what + " " + s->shape().to_string() + " must be " +
                       "[num_layers * dirs, batch, d_hidden] = " + state_shape.to_string() +
                       " for input " + input.shape().to_string());
  };
  check_state(h0, "h_0");
  check_state(c0, "c_0");
  auto initial = [&](const std::optional<Tensor<B, 3>>& s, int64_t i) {
    return s ? s->narrow(0, i, 1).template reshape<2>({N, H})
             : Tensor<B, 2>::zeros({N, H}, input.device(), input.dtype());
  };
  std::vector<Tensor<B, 2>> hs, cs;
  for (int64_t k = 0; k < L; ++k) {
    std::vector<Tensor<B, 3>> outs;
    for (int64_t d = 0; d < dirs; ++d) {
      const auto& dir = d == 0 ? layers[k].fwd : *layers[k].rev;
      Tensor<B, 2> h = initial(h0, k * dirs + d);
      std::optional<Tensor<B, 2>> c;
      if (kind == CellKind::Lstm) c = initial(c0, k * dirs + d);
      outs.push_back(run_direction(kind, dir, x, d == 1, h, c));
      hs.push_back(h);
      if (c) cs.push_back(*c);
    }
    x = dirs == 1 ? outs[0] : cat(outs, 2);
    if (k + 1 < L && dropout > 0) x = Dropout{dropout}.forward(x);
  }
  Tensor<B, 3> y = batch_first ? x.swap_dims(0, 1) : x;
  std::optional<Tensor<B, 3>> c_n;
  if (!cs.empty()) c_n = stack<3>(cs, 0);
  return {y, stack<3>(hs, 0), c_n};
}

/// The layers of a recurrent module, each direction's parameters lazy, uniform in
/// ±1/sqrt(d_hidden).
template <Backend B>
std::vector<RecurrentLayer<B>> make_recurrent_layers(CellKind kind, int64_t d_input,
                                                     int64_t d_hidden, int64_t num_layers,
                                                     bool bias, bool bidirectional, double dropout,
                                                     Device dev) {
  const std::string name = cell_name(kind);
  if (d_input <= 0 || d_hidden <= 0)
    throw ValueError("[" + name + "] sizes must be positive, got d_input " +
                     std::to_string(d_input) + ", d_hidden " + std::to_string(d_hidden));
  if (num_layers < 1)
    throw ValueError("[" + name + "] num_layers must be at least 1, got " +
                     std::to_string(num_layers));
  if (!(dropout >= 0 && dropout <= 1))
    throw ValueError("[" + name + "] dropout must be in [0, 1], got " + std::to_string(dropout));
  const double k = 1.0 / std::sqrt(static_cast<double>(d_hidden));
  const int64_t G = cell_gates(kind), dirs = bidirectional ? 2 : 1;
  auto ini = Initializer::uniform(-k, k);
  auto direction = [&](int64_t d_in) {
    return RecurrentDirection<B>{
        LinearConfig{d_in, G * d_hidden, bias, ini}.template init<B>(dev),
        LinearConfig{d_hidden, G * d_hidden, bias, ini}.template init<B>(dev)};
  };
  std::vector<RecurrentLayer<B>> layers;
  for (int64_t l = 0; l < num_layers; ++l) {
    const int64_t d_in = l == 0 ? d_input : d_hidden * dirs;
    RecurrentLayer<B> layer{direction(d_in), std::nullopt};
    if (bidirectional) layer.rev = direction(d_in);
    layers.push_back(std::move(layer));
  }
  return layers;
}

}  // namespace detail

// ---- Rnn ---------------------------------------------------------------------------------

template <Backend B>
struct Rnn {
  std::vector<RecurrentLayer<B>> layers;
  int64_t d_hidden = 0;
  RnnNonlinearity nonlinearity = RnnNonlinearity::Tanh;
  bool batch_first = false;
  double dropout = 0;
  EMBER_MODULE(Rnn, layers, d_hidden, nonlinearity, batch_first, dropout)

  /// x: [seq, batch, d_input] ([batch, seq, d_input] when batch_first); h_0 as h_n.
  RnnOutput<B> forward(const Tensor<B, 3>& x,
                       const std::optional<Tensor<B, 3>>& h_0 = std::nullopt) const {
    auto kind = nonlinearity == RnnNonlinearity::Relu ? detail::CellKind::RnnRelu
                                                      : detail::CellKind::RnnTanh;
    auto [y, h, c] = detail::run_recurrent(kind, layers, d_hidden, batch_first, dropout, x, h_0,
                                           std::optional<Tensor<B, 3>>());
    return {y, h};
  }
};

struct RnnConfig {
  int64_t d_input = 0;
  int64_t d_hidden = 0;
  int64_t num_layers = 1;
  RnnNonlinearity nonlinearity = RnnNonlinearity::Tanh;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  EMBER_CONFIG(RnnConfig, d_input, d_hidden, num_layers, nonlinearity, bias, batch_first, dropout,
               bidirectional)

  template <Backend B>
  Rnn<B> init(Device dev = B::default_device()) const {
    auto kind = nonlinearity == RnnNonlinearity::Relu ? detail::CellKind::RnnRelu
                                                      : detail::CellKind::RnnTanh;
    return {detail::make_recurrent_layers<B>(kind, d_input, d_hidden, num_layers, bias,
                                             bidirectional, dropout, dev),
            d_hidden, nonlinearity, batch_first, dropout};
  }
};

// ---- Lstm --------------------------------------------------------------------------------

template <Backend B>
struct Lstm {
  std::vector<RecurrentLayer<B>> layers;
  int64_t d_hidden = 0;
  bool batch_first = false;
  double dropout = 0;
  EMBER_MODULE(Lstm, layers, d_hidden, batch_first, dropout)

  /// x: [seq, batch, d_input] ([batch, seq, d_input] when batch_first); the initial state
  /// defaults to zeros.
  LstmOutput<B> forward(const Tensor<B, 3>& x,
                        const std::optional<LstmState<B>>& state = std::nullopt) const {
    std::optional<Tensor<B, 3>> h0, c0;
    if (state) h0 = state->h, c0 = state->c;
    auto [y, h, c] = detail::run_recurrent(detail::CellKind::Lstm, layers, d_hidden, batch_first,
                                           dropout, x, h0, c0);
    return {y, h, *c};
  }
};

struct LstmConfig {
  int64_t d_input = 0;
  int64_t d_hidden = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  EMBER_CONFIG(LstmConfig, d_input, d_hidden, num_layers, bias, batch_first, dropout, bidirectional)

  template <Backend B>
  Lstm<B> init(Device dev = B::default_device()) const {
    return {detail::make_recurrent_layers<B>(detail::CellKind::Lstm, d_input, d_hidden, num_layers,
                                             bias, bidirectional, dropout, dev),
            d_hidden, batch_first, dropout};
  }
};

// ---- Gru ---------------------------------------------------------------------------------

template <Backend B>
struct Gru {
  std::vector<RecurrentLayer<B>> layers;
  int64_t d_hidden = 0;
  bool batch_first = false;
  double dropout = 0;
  EMBER_MODULE(Gru, layers, d_hidden, batch_first, dropout)

  /// x: [seq, batch, d_input] ([batch, seq, d_input] when batch_first); h_0 as h_n.
  RnnOutput<B> forward(const Tensor<B, 3>& x,
                       const std::optional<Tensor<B, 3>>& h_0 = std::nullopt) const {
    auto [y, h, c] = detail::run_recurrent(detail::CellKind::Gru, layers, d_hidden, batch_first,
                                           dropout, x, h_0, std::optional<Tensor<B, 3>>());
    return {y, h};
  }
};

struct GruConfig {
  int64_t d_input = 0;
  int64_t d_hidden = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;
  bool bidirectional = false;
  EMBER_CONFIG(GruConfig, d_input, d_hidden, num_layers, bias, batch_first, dropout, bidirectional)

  template <Backend B>
  Gru<B> init(Device dev = B::default_device()) const {
    return {detail::make_recurrent_layers<B>(detail::CellKind::Gru, d_input, d_hidden, num_layers,
                                             bias, bidirectional, dropout, dev),
            d_hidden, batch_first, dropout};
  }
};

}  // namespace ember::nn
