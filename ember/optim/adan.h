// Adan: adaptive Nesterov momentum (Xie et al., "Adan: Adaptive Nesterov Momentum Algorithm
// for Faster Optimizing Deep Models", 2022), with bias correction as in the authors'
// implementation. β's here are the decay rates (close to 1): the paper's β_k is 1 - β here.
//
//   auto opt = optim::AdanConfig{}.with_weight_decay(0.02).init<B>();
//   opt.step(1e-3, model, grads);
//
// With d = g - g_prev (0 at the first step) and t the step count:
//   m = β1·m + (1-β1)·g;   v = β2·v + (1-β2)·d;   n = β3·n + (1-β3)·(g + β2·d)²
//   u = (m / (1-β1^t) + β2 · v / (1-β2^t)) / (sqrt(n / (1-β3^t)) + eps)
//   p = (p - lr·u) / (1 + lr·weight_decay)           (the paper's proximal step), or
//   p = p·(1 - lr·weight_decay) - lr·u               (no_prox: decoupled, like AdamW)
#pragma once
#include <cmath>

#include "ember/optim/optimizer.h"

namespace ember::optim {

template <Backend B>
class Adan;

struct AdanConfig {
  double beta1 = 0.98;
  double beta2 = 0.92;
  double beta3 = 0.99;
  double eps = 1e-8;
  double weight_decay = 0;
  bool no_prox = false;
  GradientClipping grad_clipping;
  EMBER_CONFIG(AdanConfig, beta1, beta2, beta3, eps, weight_decay, no_prox, grad_clipping)

  template <Backend B>
  Adan<B> init() const {
    return Adan<B>(*this);
  }
};

template <Backend B>
class Adan : public Optimizer<Adan<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "Adan";

  explicit Adan(AdanConfig c) : c_(std::move(c)) {
    for (double b : {c_.beta1, c_.beta2, c_.beta3})
      if (!(b >= 0 && b < 1)) throw ValueError("[Adan] betas must be in [0, 1)");
    if (!(c_.eps >= 0 && c_.weight_decay >= 0))
      throw ValueError("[Adan] eps and weight_decay must be >= 0");
  }
  const AdanConfig& config() const { return c_; }
  std::vector<std::string> slots(const Shape&, std::string_view) const {
    return {"exp_avg", "exp_avg_diff", "exp_avg_sq", "prev_grad"};
  }

  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, const Tensor<Inner, D>& g,
                          ParamState<Inner>& st, const ParamContext& ctx) const {
    using T = Tensor<Inner, D>;
    auto prev = st.template get<D>("prev_grad");
    T d = prev ? g - *prev : g.zeros_like();
    auto m0 = st.template get<D>("exp_avg");
    auto v0 = st.template get<D>("exp_avg_diff");
    auto n0 = st.template get<D>("exp_avg_sq");
    T m = (m0 ? *m0 : g.zeros_like()) * c_.beta1 + g * (1 - c_.beta1);
    T v = (v0 ? *v0 : g.zeros_like()) * c_.beta2 + d * (1 - c_.beta2);
    T u = g + d * c_.beta2;
    T n = (n0 ? *n0 : g.zeros_like()) * c_.beta3 + u * u * (1 - c_.beta3);
    st.set("exp_avg", m);
    st.set("exp_avg_diff", v);
    st.set("exp_avg_sq", n);
    st.set("prev_grad", g);
    const double t = static_cast<double>(st.step);
    const double bc1 = 1 - std::pow(c_.beta1, t), bc2 = 1 - std::pow(c_.beta2, t),
                 bc3 = 1 - std::pow(c_.beta3, t);
    T denom = n.sqrt() / std::sqrt(bc3) + c_.eps;
    T upd = (m / bc1 + v * (c_.beta2 / bc2)) / denom;
    const double lr = ctx.lr, wd = ctx.weight_decay;
    if (c_.no_prox) return (wd != 0 ? x * (1 - lr * wd) : x) - upd * lr;
    T y = x - upd * lr;
    return wd != 0 ? y / (1 + lr * wd) : y;
  }

 private:
  AdanConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<Adan<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
