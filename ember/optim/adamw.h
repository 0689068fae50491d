// AdamW (torch.optim.AdamW): Adam with decoupled weight decay, p *= 1 - lr·weight_decay
// before the Adam step (default weight_decay 0.01).
//
//   auto opt = optim::AdamWConfig{}.with_weight_decay(0.1).init<B>();
//   opt.set_group("norm", {.weight_decay = 0});    // no decay on normalization params
//   opt.step(3e-4, model, grads);
#pragma once
#include "ember/optim/adam.h"

namespace ember::optim {

template <Backend B>
class AdamW;

struct AdamWConfig {
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.01;
  bool amsgrad = false;
  bool maximize = false;
  GradientClipping grad_clipping;
  EMBER_CONFIG(AdamWConfig, beta1, beta2, eps, weight_decay, amsgrad, maximize, grad_clipping)

  template <Backend B>
  AdamW<B> init() const {
    return AdamW<B>(*this);
  }
};

template <Backend B>
class AdamW : public Optimizer<AdamW<B>, B> {
 public:
  using Inner = typename B::Inner;
  static constexpr const char* kName = "AdamW";

  explicit AdamW(AdamWConfig c) : c_(std::move(c)) {
    if (!(c_.beta1 >= 0 && c_.beta1 < 1 && c_.beta2 >= 0 && c_.beta2 < 1))
      throw ValueError("[AdamW] betas must be in [0, 1)");
    if (!(c_.eps >= 0 && c_.weight_decay >= 0))
      throw ValueError("[AdamW] eps and weight_decay must be >= 0");
  }
  const AdamWConfig& config() const { return c_; }
  std::vector<std::string> slots(const Shape&, std::string_view) const {
    return detail::adam_slots(c_.amsgrad);
  }
  template <int D>
  Tensor<Inner, D> update(const Tensor<Inner, D>& x, const Tensor<Inner, D>& g,
                          ParamState<Inner>& st, const ParamContext& ctx) const {
    return detail::adam_update<Inner, D>(x, g, st, ctx.lr, ctx.weight_decay, true, c_.beta1,
                                         c_.beta2, c_.eps, c_.amsgrad, c_.maximize);
  }

 private:
  AdamWConfig c_;
};

// Compiled once in the library for Autodiff<Dispatch> (ember/optim/instantiate.cpp).
extern template class EMBER_API Optimizer<AdamW<AutodiffDispatch>, AutodiffDispatch>;

}  // namespace ember::optim
