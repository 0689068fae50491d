// RMSprop (torch.optim.RMSprop), optionally centered and with momentum.
//
//   auto opt = optim::RmsPropConfig{}.with_centered(true).with_momentum(0.9).init<B>();
//   opt.step(1e-2, model, grads);
//
// s = α·s + (1-α)·g²; centered: a = α·a + (1-α)·g and the denominator is sqrt(s - a²) + eps,
// else sqrt(s) + eps; with momentum b = momentum·b + g / denom and p -= lr·b, else
// p -= lr·g / denom.
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

template <Backend B>
class RmsProp;

struct RmsPropConfig {
  double alpha = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  double momentum = 0;
  bool centered = false;
  bool maximize = false;
  GradientClipping grad_clipping;
  EMBER_CONFIG(RmsPropConfig, alpha, eps, weight_decay, momentum, centered, maximize, grad_clipping)

  template <Backend B>
  RmsProp<B> init() const {
    return RmsProp<B>(*this);
  }
};

template <Backend B>
class RmsProp : public Optimizer<RmsProp<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "RmsProp";

  explicit RmsProp(RmsPropConfig c) : c_(std::move(c)) {
    if (!(c_.alpha >= 0 && c_.eps >= 0 && c_.weight_decay >= 0 && c_.momentum >= 0))
      throw ValueError("[RmsProp] alpha, eps, weight_decay and momentum must be >= 0");
  }
  const RmsPropConfig& config() const { return c_; }
  std::vector<std::string> slots(const Shape&, std::string_view) const {
    std::vector<std::string> s{"square_avg"};
    if (c_.momentum > 0) s.push_back("momentum_buffer");
    if (c_.centered) s.push_back("grad_avg");
    return s;
  }

  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, Tensor<Inner, D> g, ParamState<Inner>& st,
                          const ParamContext& ctx) const {
    using T = Tensor<Inner, D>;
    if (c_.maximize) g = -g;
    if (ctx.weight_decay != 0) g = g + x * ctx.weight_decay;
    auto s0 = st.template get<D>("square_avg");
    T s = (s0 ? *s0 : g.zeros_like()).addcmul(g, g, 1 - c_.alpha, c_.alpha);
    st.set("square_avg", s);
    T avg = s;
    if (c_.centered) {
      auto a0 = st.template get<D>("grad_avg");
      T a = (a0 ? *a0 : g.zeros_like()).lerp(g, 1 - c_.alpha);
      st.set("grad_avg", a);
      avg = s.addcmul(a, a, -1.0);
    }
    if (c_.momentum == 0) return x.adaptive_step(g, avg, ctx.lr, c_.eps);
    auto b0 = st.template get<D>("momentum_buffer");
    T b = (b0 ? *b0 : g.zeros_like()) * c_.momentum + g / (avg.sqrt() + c_.eps);
    st.set("momentum_buffer", b);
    return x - b * ctx.lr;
  }

 private:
  RmsPropConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<RmsProp<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
