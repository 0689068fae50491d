// SGD with momentum, dampening, Nesterov momentum and weight decay (torch.optim.SGD).
//
//   auto opt = optim::SgdConfig{}.with_momentum(0.9).with_nesterov(true).init<B>();
//   opt.step(0.1, model, grads);
//
// With g the gradient (plus weight_decay · p): the momentum buffer starts as g and then
// b = momentum · b + (1 - dampening) · g; the step is g + momentum · b (Nesterov) or b.
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

template <Backend B>
class Sgd;

struct SgdConfig {
  double momentum = 0;
  double dampening = 0;
  bool nesterov = false;
  double weight_decay = 0;
  bool maximize = false;
  GradientClipping grad_clipping;
  EMBER_CONFIG(SgdConfig, momentum, dampening, nesterov, weight_decay, maximize, grad_clipping)

  template <Backend B>
  Sgd<B> init() const {
    return Sgd<B>(*this);
  }
};

template <Backend B>
class Sgd : public Optimizer<Sgd<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "Sgd";

  explicit Sgd(SgdConfig c) : c_(std::move(c)) {
    if (c_.momentum < 0 || c_.weight_decay < 0)
      throw ValueError("[Sgd] momentum and weight_decay must be >= 0");
    if (c_.nesterov && (c_.momentum <= 0 || c_.dampening != 0))
      throw ValueError("[Sgd] Nesterov momentum needs momentum > 0 and dampening 0");
  }
  const SgdConfig& config() const { return c_; }

  std::vector<std::string> slots(const Shape&, std::string_view) const {
    if (c_.momentum != 0) return {"momentum_buffer"};
    return {};
  }

  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, Tensor<Inner, D> g, ParamState<Inner>& st,
                          const ParamContext& ctx) const {
    if (c_.maximize) g = -g;
    if (ctx.weight_decay != 0) g = g + x * ctx.weight_decay;
    if (c_.momentum != 0) {
      auto prev = st.template get<D>("momentum_buffer");
      Tensor<Inner, D> buf = prev ? *prev * c_.momentum + g * (1 - c_.dampening) : g;
      st.set("momentum_buffer", buf);
      g = c_.nesterov ? g + buf * c_.momentum : buf;
    }
    return x - g * ctx.lr;
  }

 private:
  SgdConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<Sgd<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
