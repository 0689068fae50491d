// Recurrent layers of the freestanding build: Gru and Lstm with the host's equations, gate
// order, parameter paths (layers.K.fwd.ih.weight, ...) and results (ember/nn/layers/rnn.h),
// stacked up to kMaxRecurrentLayers, one direction. The state lives in the arena; each step
// runs the two projections of one (time, batch) row and the cell.
//
//   auto gru = nn::GruConfig{8, 16}.with_num_layers(2).init<Micro>();
//   nn::load_module(gru, weights::record);
//   auto [y, h_n] = gru.forward(x);                 // x: [seq, batch, 8] -> y: [seq, batch, 16]
#pragma once
#include <optional>
#include <type_traits>

#include "ember/micro/layers.h"

namespace ember::micro::nn {

inline constexpr size_t kMaxRecurrentLayers = 4;

template <Backend B>
struct RecurrentDirection {
  Linear<B> ih;  // [d_in, G * d_hidden]
  Linear<B> hh;  // [d_hidden, G * d_hidden]
  EMBER_MODULE(RecurrentDirection, ih, hh)
};
template <Backend B>
struct RecurrentLayer {
  RecurrentDirection<B> fwd;
  std::optional<RecurrentDirection<B>> rev;  // always empty here: one direction
  EMBER_MODULE(RecurrentLayer, fwd, rev)
};
template <Backend B>
using RecurrentLayers = StaticVec<RecurrentLayer<B>, kMaxRecurrentLayers>;

template <Backend B>
struct RnnOutput {
  Tensor<B, 3> output;  // [seq, batch, d_hidden] (batch first if configured)
  Tensor<B, 3> h_n;     // [num_layers, batch, d_hidden]
};
template <Backend B>
struct LstmOutput {
  Tensor<B, 3> output;
  Tensor<B, 3> h_n;
  Tensor<B, 3> c_n;
};
template <Backend B>
struct LstmState {
  Tensor<B, 3> h;
  Tensor<B, 3> c;
};

namespace detail {

/// Runs the stack; `c_n` (Lstm) is null for a Gru.
template <Backend B>
Tensor<B, 3> run_recurrent(const char* op, const RecurrentLayers<B>& layers, int64_t hidden,
                           bool batch_first, const Tensor<B, 3>& x,
                           std::type_identity_t<const Tensor<B, 3>*> h_0,
                           std::type_identity_t<const Tensor<B, 3>*> c_0, Tensor<B, 3>& h_n,
                           std::type_identity_t<Tensor<B, 3>*> c_n) {
  const bool lstm = c_n != nullptr;
  const int32_t steps = int32_t(x.dim(batch_first ? 1 : 0));
  const int32_t batch = int32_t(x.dim(batch_first ? 0 : 1));
  const int32_t H = int32_t(hidden), G = lstm ? 4 : 3;
  const int32_t L = int32_t(layers.size());
  const std::array<int64_t, 3> state{L, batch, H};
  for (const Tensor<B, 3>* s : {h_0, c_0})
    if (s && s->dims() != state)
      fail("[%s] the initial state is not [%d, %d, %d]", op, int(L), int(batch), int(H));
  h_n = h_0 ? Tensor<B, 3>::from_values(h_0->data(), state) : Tensor<B, 3>::zeros(state);
  if (lstm) *c_n = c_0 ? Tensor<B, 3>::from_values(c_0->data(), state) : Tensor<B, 3>::zeros(state);
  auto gi = Tensor<B, 1>::uninit({G * H}, op), gh = Tensor<B, 1>::uninit({G * H}, op);
  // The row of (time t, batch b) in a [seq, batch, d] or [batch, seq, d] tensor.
  auto row = [&](int32_t t, int32_t b) { return batch_first ? b * steps + t : t * batch + b; };
  Tensor<B, 3> in = x;
  for (int32_t k = 0; k < L; ++k) {
    const RecurrentDirection<B>& d = layers[size_t(k)].fwd;
    const int32_t din = int32_t(in.dim(-1));
    if (din != d.ih.weight.dim(0))
      fail("[%s] layer %d takes %d inputs, not %d", op, int(k), int(d.ih.weight.dim(0)), int(din));
    auto out = Tensor<B, 3>::uninit({in.dim(0), in.dim(1), H}, op);
    float* h = h_n.mut() + k * batch * H;
    float* c = lstm ? c_n->mut() + k * batch * H : nullptr;
    const float* bi = d.ih.bias ? d.ih.bias->val().data() : nullptr;
    const float* bh = d.hh.bias ? d.hh.bias->val().data() : nullptr;
    for (int32_t t = 0; t < steps; ++t)
      for (int32_t b = 0; b < batch; ++b) {
        kernels::linear(in.data() + row(t, b) * din, d.ih.weight.val().data(), bi, gi.mut(), 1, din,
                        G * H);
        kernels::linear(h + b * H, d.hh.weight.val().data(), bh, gh.mut(), 1, H, G * H);
        if (lstm)
          kernels::lstm_cell(gi.data(), gh.data(), h + b * H, c + b * H, H);
        else
          kernels::gru_cell(gi.data(), gh.data(), h + b * H, H);
        for (int32_t j = 0; j < H; ++j) out.mut()[row(t, b) * H + j] = h[b * H + j];
      }
    in = out;
  }
  return in;
}

template <Backend B>
RecurrentLayers<B> make_layers(const char* op, int64_t gates, int64_t d_input, int64_t hidden,
                               int64_t num_layers, bool bias, bool bidirectional) {
  if (bidirectional) fail("[%s] bidirectional layers are not in ember::micro", op);
  if (num_layers < 1 || num_layers > int64_t(kMaxRecurrentLayers))
    fail("[%s] %d layers: ember::micro has 1 to %d", op, int(num_layers), int(kMaxRecurrentLayers));
  RecurrentLayers<B> layers;
  for (int64_t k = 0; k < num_layers; ++k) {
    RecurrentLayer<B> l;
    l.fwd.ih = LinearConfig{k == 0 ? d_input : hidden, gates * hidden, bias}.init<B>();
    l.fwd.hh = LinearConfig{hidden, gates * hidden, bias}.init<B>();
    layers.push_back(l);
  }
  return layers;
}

}  // namespace detail

template <Backend B>
struct Gru {
  static constexpr const char* kOp = "gru";
  static constexpr int64_t kGates = 3;  // r, z, n
  RecurrentLayers<B> layers;
  int64_t d_hidden = 0;
  bool batch_first = false;
  double dropout = 0;
  EMBER_MODULE(Gru, layers, d_hidden, batch_first, dropout)

  /// x: [seq, batch, d_input] ([batch, seq, d_input] when batch_first); h_0 as h_n.
  RnnOutput<B> forward(const Tensor<B, 3>& x,
                       const std::optional<Tensor<B, 3>>& h_0 = std::nullopt) const {
    RnnOutput<B> r;
    r.output = detail::run_recurrent(kOp, layers, d_hidden, batch_first, x, h_0 ? &*h_0 : nullptr,
                                     nullptr, r.h_n, nullptr);
    return r;
  }
};

template <Backend B>
struct Lstm {
  static constexpr const char* kOp = "lstm";
  static constexpr int64_t kGates = 4;  // i, f, g, o
  RecurrentLayers<B> layers;
  int64_t d_hidden = 0;
  bool batch_first = false;
  double dropout = 0;
  EMBER_MODULE(Lstm, layers, d_hidden, batch_first, dropout)

  /// x: [seq, batch, d_input] ([batch, seq, d_input] when batch_first); the state defaults
  /// to zeros.
  LstmOutput<B> forward(const Tensor<B, 3>& x,
                        const std::optional<LstmState<B>>& state = std::nullopt) const {
    LstmOutput<B> r;
    r.output =
        detail::run_recurrent(kOp, layers, d_hidden, batch_first, x, state ? &state->h : nullptr,
                              state ? &state->c : nullptr, r.h_n, &r.c_n);
    return r;
  }
};

/// GruConfig and LstmConfig: the host's fields and with_* setters.
template <template <class> class M>
struct RecurrentConfig {
  int64_t d_input = 0;
  int64_t d_hidden = 0;
  int64_t num_layers = 1;
  bool bias = true;
  bool batch_first = false;
  double dropout = 0;  // training only: ignored here
  bool bidirectional = false;
  RecurrentConfig with_num_layers(int64_t n) const { return with(&RecurrentConfig::num_layers, n); }
  RecurrentConfig with_bias(bool b) const { return with(&RecurrentConfig::bias, b); }
  RecurrentConfig with_batch_first(bool b) const { return with(&RecurrentConfig::batch_first, b); }
  RecurrentConfig with_bidirectional(bool b) const {
    return with(&RecurrentConfig::bidirectional, b);
  }
  template <Backend B>
  M<B> init(Device = B::default_device()) const {
    return {detail::make_layers<B>(M<B>::kOp, M<B>::kGates, d_input, d_hidden, num_layers, bias,
                                   bidirectional),
            d_hidden, batch_first, dropout};
  }

 private:
  template <class V>
  RecurrentConfig with(V RecurrentConfig::*field, V v) const {
    RecurrentConfig c = *this;
    c.*field = v;
    return c;
  }
};
using GruConfig = RecurrentConfig<Gru>;
using LstmConfig = RecurrentConfig<Lstm>;

}  // namespace ember::micro::nn
