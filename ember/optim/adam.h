// Adam (torch.optim.Adam), with AMSGrad optional. Weight decay here is L2: it is added to
// the gradient; AdamW (adamw.h) decouples it.
//
//   auto opt = optim::AdamConfig{}.with_amsgrad(true).init<B>();
//   opt.step(1e-3, model, grads);
//
// m = β1·m + (1-β1)·g;  v = β2·v + (1-β2)·g²;  v̂ = max(v̂, v) with AMSGrad;
// p -= lr / (1-β1^t) · m / (sqrt(v̂) / sqrt(1-β2^t) + eps).
#pragma once
#include <cmath>

#include "ember/optim/optimizer.h"

namespace ember::optim {

namespace detail {
/// The Adam update of one parameter; `decoupled` selects AdamW's weight decay.
template <Backend I, int D>
Tensor<I, D> adam_update(Tensor<I, D> x, Tensor<I, D> g, ParamState<I>& st, double lr,
                         double weight_decay, bool decoupled, double beta1, double beta2,
                         double eps, bool amsgrad, bool maximize) {
  if (maximize) g = -g;
  if (weight_decay != 0) {
    if (decoupled)
      x = x * (1 - lr * weight_decay);
    else
      g = g + x * weight_decay;
  }
  // Three fused passes, as torch's Adam: m lerps toward g, v takes g² with addcmul, and the
  // step divides by sqrt(v) + eps. The bias corrections fold into the step and eps:
  // m/bc1 / (sqrt(v/bc2) + eps) = (sqrt(bc2)/bc1) m / (sqrt(v) + eps sqrt(bc2)).
  auto m0 = st.template get<D>("exp_avg");
  auto v0 = st.template get<D>("exp_avg_sq");
  Tensor<I, D> m = (m0 ? *m0 : g.zeros_like()).lerp(g, 1 - beta1);
  Tensor<I, D> v = (v0 ? *v0 : g.zeros_like()).addcmul(g, g, 1 - beta2, beta2);
  st.set("exp_avg", m);
  st.set("exp_avg_sq", v);
  const double t = static_cast<double>(st.step);
  const double bc1 = 1 - std::pow(beta1, t), sqrt_bc2 = std::sqrt(1 - std::pow(beta2, t));
  Tensor<I, D> vhat = v;
  if (amsgrad) {
    auto mx = st.template get<D>("max_exp_avg_sq");
    vhat = mx ? mx->max_pair(v) : v;
    st.set("max_exp_avg_sq", vhat);
  }
  return x.adaptive_step(m, vhat, lr * sqrt_bc2 / bc1, eps * sqrt_bc2);
}
inline std::vector<std::string> adam_slots(bool amsgrad) {
  if (amsgrad) return {"exp_avg", "exp_avg_sq", "max_exp_avg_sq"};
  return {"exp_avg", "exp_avg_sq"};
}
}  // namespace detail

template <Backend B>
class Adam;

struct AdamConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0;
  bool amsgrad = false;
  bool maximize = false;
  GradientClipping grad_clipping;
  EMBER_CONFIG(AdamConfig, beta1, beta2, eps, weight_decay, amsgrad, maximize, grad_clipping)

  template <Backend B>
  Adam<B> init() const {
    return Adam<B>(*this);
  }
};

template <Backend B>
class Adam : public Optimizer<Adam<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "Adam";

  explicit Adam(AdamConfig c) : c_(std::move(c)) {
    if (!(c_.beta1 >= 0 && c_.beta1 < 1 && c_.beta2 >= 0 && c_.beta2 < 1))
      throw ValueError("[Adam] betas must be in [0, 1)");
    if (!(c_.eps >= 0 && c_.weight_decay >= 0))
      throw ValueError("[Adam] eps and weight_decay must be >= 0");
  }
  const AdamConfig& config() const { return c_; }
  std::vector<std::string> slots(const Shape&, std::string_view) const {
    return detail::adam_slots(c_.amsgrad);
  }
  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, const Tensor<Inner, D>& g,
                          ParamState<Inner>& st, const ParamContext& ctx) const {
    return detail::adam_update<Inner, D>(x, g, st, ctx.lr, ctx.weight_decay, false, c_.beta1,
                                         c_.beta2, c_.eps, c_.amsgrad, c_.maximize);
  }

 private:
  AdamConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<Adam<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
