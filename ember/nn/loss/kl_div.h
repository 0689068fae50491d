// Kullback-Leibler divergence of a target distribution from a predicted one given as
// log-probabilities (PyTorch's kl_div).
//
//   auto kl = nn::KLDivLossConfig{}.with_reduction(nn::KLDivReduction::BatchMean).init();
//   Tensor<B, 0> l = kl.forward(activation::log_softmax(logits, 1), probs);   // [N, C] each
//
// Per element: t (log t - x), with 0 where t = 0; with log_target the target is given as
// log t and the term is exp(t) (t - x). BatchMean divides the sum by the size of dim 0,
// which is the true KL divergence per sample; Mean (PyTorch's default, kept here) divides by
// the element count instead.
#pragma once
#include "ember/nn/loss/reduction.h"

namespace ember::nn {

class KLDivLoss;

/// Reduction plus BatchMean (sum / size of dim 0), which only KL divergence has.
enum class KLDivReduction { Mean, Sum, None, BatchMean };

EMBER_CONFIG_ENUM(KLDivReduction, {KLDivReduction::Mean, "mean"}, {KLDivReduction::Sum, "sum"},
                  {KLDivReduction::None, "none"}, {KLDivReduction::BatchMean, "batchmean"})

struct KLDivLossConfig {
  /// The target holds log-probabilities rather than probabilities.
  bool log_target = false;
  KLDivReduction reduction = KLDivReduction::Mean;
  EMBER_CONFIG(KLDivLossConfig, log_target, reduction)
  KLDivLoss init() const;
};

class KLDivLoss {
 public:
  static constexpr const char* kName = "kl_div";
  explicit KLDivLoss(KLDivLossConfig c = {}) : c_(c) {}
  const KLDivLossConfig& config() const { return c_; }

  /// `input` holds log-probabilities; `target` probabilities (or log-probabilities).
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    auto per = forward_no_reduction(input, target);
    switch (c_.reduction) {
      case KLDivReduction::Mean:
        return loss_detail::reduce(kName, per, Reduction::Mean);
      case KLDivReduction::Sum:
        return loss_detail::reduce(kName, per, Reduction::Sum);
      case KLDivReduction::None:
        return loss_detail::reduce(kName, per, Reduction::None);
      case KLDivReduction::BatchMean:
        break;
    }
    auto sum = loss_detail::rank0(per.sum());
    if constexpr (D == 0)
      return sum;
    else
      return sum / static_cast<double>(input.dim(0));
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    if (c_.log_target) return target.exp() * (target - input);
    // t log t with 0 at t = 0; log(1) there keeps the unused branch (and its gradient) finite
    auto zero = target.equal_elem(0.0);
    auto safe = target.mask_fill(zero, 1.0);
    auto tlogt = (target * safe.log()).mask_fill(zero, 0.0);
    return tlogt - target * input;
  }

 private:
  KLDivLossConfig c_;
};

inline KLDivLoss KLDivLossConfig::init() const { return KLDivLoss(*this); }

}  // namespace ember::nn
