// Negative log-likelihood losses of distributions: Poisson and Gaussian (PyTorch's
// poisson_nll_loss and gaussian_nll_loss).
//
//   auto pois = nn::PoissonNllLossConfig{}.with_log_input(true).init();
//   Tensor<B, 0> l = pois.forward(log_rate, counts);         // same shape, any rank
//   auto gauss = nn::GaussianNllLossConfig{}.with_eps(1e-6).init();
//   Tensor<B, 0> g = gauss.forward(mean, target, var);       // var: same shape, or last dim 1
//
//   Poisson, log_input:  exp(x) - y x;   otherwise: x - y log(x + eps);   with `full`, the
//                        Stirling term y log y - y + 0.5 log(2 pi y) is added where y > 1.
//   Gaussian:            0.5 (log(max(var, eps)) + (x - y)^2 / max(var, eps)), plus
//                        0.5 log(2 pi) with `full`.
// Mean is the mean over every element. Gaussian NLL clamps var below at eps with a zero
// gradient there (PyTorch keeps the gradient of the unclamped var); the two agree wherever
// var >= eps.
#pragma once
#include <cmath>

#include "ember/nn/loss/reduction.h"

namespace ember::nn {

class PoissonNllLoss;
class GaussianNllLoss;

struct PoissonNllLossConfig {
  /// The input is the log of the rate (true) or the rate itself (false).
  bool log_input = true;
  /// Add the Stirling approximation of log(y!).
  bool full = false;
  /// Keeps log(x + eps) finite at x = 0 (log_input = false).
  double eps = 1e-8;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(PoissonNllLossConfig, log_input, full, eps, reduction)
  PoissonNllLoss init() const;
};

struct GaussianNllLossConfig {
  /// Add the constant 0.5 log(2 pi).
  bool full = false;
  /// The smallest variance used (> 0).
  double eps = 1e-6;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(GaussianNllLossConfig, full, eps, reduction)
  GaussianNllLoss init() const;
};

class PoissonNllLoss {
 public:
  static constexpr const char* kName = "poisson_nll_loss";
  explicit PoissonNllLoss(PoissonNllLossConfig c = {}) : c_(c) {}
  const PoissonNllLossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    auto per =
        c_.log_input ? input.exp() - target * input : input - target * (input + c_.eps).log();
    if (!c_.full) return per;
    // y log y - y + 0.5 log(2 pi y) where y > 1, else 0 (y is data: no gradient wanted here,
    // and none flows into a target that is not a leaf)
    auto safe = target.mask_fill(target.lower_equal_elem(1.0), 1.0);
    auto stirling = safe * safe.log() - safe + (safe * (2.0 * M_PI)).log() * 0.5;
    return per + stirling.mask_fill(target.lower_equal_elem(1.0), 0.0);
  }

 private:
  PoissonNllLossConfig c_;
};

class GaussianNllLoss {
 public:
  static constexpr const char* kName = "gaussian_nll_loss";
  explicit GaussianNllLoss(GaussianNllLossConfig c = {}) : c_(c) {
    if (!(c_.eps > 0))
      loss_detail::value_error(kName, "eps must be positive, got " + std::to_string(c_.eps));
  }
  const GaussianNllLossConfig& config() const { return c_; }

  /// input and target of the same shape; var of that shape or with a last dim of 1
  /// (one variance for the whole last dim); every var must be >= 0.
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target,
                       const Tensor<B, D>& var) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target, var), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target,
                                    const Tensor<B, D>& var) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    Dims last1 = input.shape().dims();
    if (D > 0) last1.back() = 1;
    if (var.shape() != input.shape() && (D == 0 || var.shape() != Shape(last1)))
      loss_detail::shape_error(kName,
                               "var " + var.shape().to_string() + " must have the shape of input " +
                                   input.shape().to_string() + " or " + Shape(last1).to_string());
    if (var.numel() > 0 && var.min().template into_scalar<double>() < 0)
      loss_detail::value_error(kName, "var has a negative entry");
    auto v = var.clamp_min(c_.eps);
    auto per = (v.log() + (input - target).square() / v) * 0.5;
    return c_.full ? per + 0.5 * std::log(2.0 * M_PI) : per;
  }

 private:
  GaussianNllLossConfig c_;
};

inline PoissonNllLoss PoissonNllLossConfig::init() const { return PoissonNllLoss(*this); }
inline GaussianNllLoss GaussianNllLossConfig::init() const { return GaussianNllLoss(*this); }

}  // namespace ember::nn
