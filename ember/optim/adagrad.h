// AdaGrad (torch.optim.Adagrad), with lr decay and an initial accumulator value.
//
//   auto opt = optim::AdaGradConfig{}.with_lr_decay(0.01).init<B>();
//   opt.step(1e-2, model, grads);
//
// s += g² (s starts at initial_accumulator_value); p -= lr / (1 + (t-1)·lr_decay) ·
// g / (sqrt(s) + eps), t the parameter's step count.
#pragma once
#include "ember/optim/optimizer.h"

namespace ember::optim {

template <Backend B>
class AdaGrad;

struct AdaGradConfig {
  double lr_decay = 0;
  double weight_decay = 0;
  double initial_accumulator_value = 0;
  double eps = 1e-10;
  bool maximize = false;
  GradientClipping grad_clipping;
  EMBER_CONFIG(AdaGradConfig, lr_decay, weight_decay, initial_accumulator_value, eps, maximize,
               grad_clipping)

  template <Backend B>
  AdaGrad<B> init() const {
    return AdaGrad<B>(*this);
  }
};

template <Backend B>
class AdaGrad : public Optimizer<AdaGrad<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "AdaGrad";

  explicit AdaGrad(AdaGradConfig c) : c_(std::move(c)) {
    if (!(c_.lr_decay >= 0 && c_.weight_decay >= 0 && c_.initial_accumulator_value >= 0 &&
          c_.eps >= 0))
      throw ValueError(
          "[AdaGrad] lr_decay, weight_decay, initial_accumulator_value and eps must be >= 0");
  }
  const AdaGradConfig& config() const { return c_; }
  std::vector<std::string> slots(const Shape&, std::string_view) const { return {"sum"}; }

  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, Tensor<Inner, D> g, ParamState<Inner>& st,
                          const ParamContext& ctx) const {
    if (c_.maximize) g = -g;
    if (ctx.weight_decay != 0) g = g + x * ctx.weight_decay;
    auto s0 = st.template get<D>("sum");
    Tensor<Inner, D> s = (s0 ? *s0 : g.full_like(c_.initial_accumulator_value)).addcmul(g, g);
    st.set("sum", s);
    double clr = ctx.lr / (1 + static_cast<double>(st.step - 1) * c_.lr_decay);
    return x.adaptive_step(g, s, clr, c_.eps);
  }

 private:
  AdaGradConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<AdaGrad<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
