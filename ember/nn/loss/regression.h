// Regression losses: mean squared error, L1, Huber and smooth L1 (PyTorch's mse_loss, l1_loss,
// huber_loss, smooth_l1_loss). Input and target have the same shape, any rank; gradients flow into
// both.
//
//   auto mse = nn::MseLossConfig{}.init();
//   Tensor<B, 0> l = mse.forward(pred, target);
//   auto huber = nn::HuberLossConfig{}.with_delta(0.5).init();
//   auto each = huber.forward_no_reduction(pred, target);      // same shape as pred
//
// With d = input - target:
//   Huber(delta):   0.5 d^2 where |d| < delta, else delta (|d| - 0.5 delta)
//   SmoothL1(beta): 0.5 d^2 / beta where |d| < beta, else |d| - 0.5 beta   (beta = 0: |d|)
// so SmoothL1(beta) = Huber(beta) / beta for beta > 0.
#pragma once
#include "ember/backend/extern.h"
#include "ember/nn/loss/reduction.h"

namespace ember::nn {

class MseLoss;
class L1Loss;
class HuberLoss;
class SmoothL1Loss;

struct MseLossConfig {
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(MseLossConfig, reduction)
  MseLoss init() const;
};

struct L1LossConfig {
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(L1LossConfig, reduction)
  L1Loss init() const;
};

struct HuberLossConfig {
  /// Where the loss turns from quadratic to linear (> 0).
  double delta = 1.0;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(HuberLossConfig, delta, reduction)
  HuberLoss init() const;
};

struct SmoothL1LossConfig {
  /// Where the loss turns from quadratic to linear (>= 0; 0 is plain L1).
  double beta = 1.0;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(SmoothL1LossConfig, beta, reduction)
  SmoothL1Loss init() const;
};

class MseLoss {
 public:
  static constexpr const char* kName = "mse_loss";
  explicit MseLoss(MseLossConfig c = {}) : c_(c) {}
  const MseLossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const;
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    return (input - target).square();
  }

 private:
  MseLossConfig c_;
};

template <Backend B, int D>
Tensor<B, 0> MseLoss::forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
  return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
}

// Compiled once in the library for the Dispatch stacks (ember/nn/instantiate.cpp).
#define EMBER_DETAIL_MSE_INSTANCES(ext, B)                                  \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 0> MseLoss::forward<B, 1>( \
      const Tensor<B, 1>&, const Tensor<B, 1>&) const;                      \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 0> MseLoss::forward<B, 2>( \
      const Tensor<B, 2>&, const Tensor<B, 2>&) const;
EMBER_DETAIL_MSE_INSTANCES(extern, Dispatch)
EMBER_DETAIL_MSE_INSTANCES(extern, AutodiffDispatch)

namespace loss_detail {
// 0.5 d^2 where |d| < k, else k (|d| - 0.5 k)
template <Backend B, int D>
Tensor<B, D> huber(const Tensor<B, D>& d, double k) {
  auto a = d.abs();
  auto quad = d.square() * 0.5;
  auto lin = (a - 0.5 * k) * k;
  return lin.mask_where(a.lower_elem(k), quad);
}
}  // namespace loss_detail

/// |input - target| (torch.nn.functional.l1_loss).
class L1Loss {
 public:
  static constexpr const char* kName = "l1_loss";
  explicit L1Loss(L1LossConfig c = {}) : c_(c) {}
  const L1LossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    return (input - target).abs();
  }

 private:
  L1LossConfig c_;
};

class HuberLoss {
 public:
  static constexpr const char* kName = "huber_loss";
  explicit HuberLoss(HuberLossConfig c = {}) : c_(c) {
    if (!(c_.delta > 0))
      loss_detail::value_error(kName, "delta must be positive, got " + std::to_string(c_.delta));
  }
  const HuberLossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    return loss_detail::huber(input - target, c_.delta);
  }

 private:
  HuberLossConfig c_;
};

class SmoothL1Loss {
 public:
  static constexpr const char* kName = "smooth_l1_loss";
  explicit SmoothL1Loss(SmoothL1LossConfig c = {}) : c_(c) {
    if (!(c_.beta >= 0))
      loss_detail::value_error(kName, "beta must be >= 0, got " + std::to_string(c_.beta));
  }
  const SmoothL1LossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    auto d = input - target;
    if (c_.beta == 0) return d.abs();
    auto a = d.abs();
    return (a - 0.5 * c_.beta).mask_where(a.lower_elem(c_.beta), d.square() * (0.5 / c_.beta));
  }

 private:
  SmoothL1LossConfig c_;
};

inline MseLoss MseLossConfig::init() const { return MseLoss(*this); }
inline L1Loss L1LossConfig::init() const { return L1Loss(*this); }
inline HuberLoss HuberLossConfig::init() const { return HuberLoss(*this); }
inline SmoothL1Loss SmoothL1LossConfig::init() const { return SmoothL1Loss(*this); }

}  // namespace ember::nn
