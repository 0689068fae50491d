// Binary cross-entropy, on probabilities or (numerically stable) on logits, with per-class
// weights and positive-class weights (PyTorch's binary_cross_entropy and
// binary_cross_entropy_with_logits).
//
//   auto bce = nn::BinaryCrossEntropyLossConfig{}.with_logits(true).with_pos_weights({3.0}).init();
//   Tensor<B, 0> loss = bce.forward(scores, labels);    // both [N, 1] (Float, labels in [0, 1])
//
// On probabilities p: -w (y log p + (1 - y) log(1 - p)), each log clamped at -100 like
// PyTorch, so p = 0 or 1 gives a finite loss; p outside [0, 1] is a ValueError.
// On logits x: w ((1 - y) x + (1 + (pw - 1) y) softplus(-x)), which never overflows.
// `weights` and `pos_weights` hold one value per element of the last dim (per class); Mean
// is the plain mean of the weighted per-element losses.
#pragma once
#include "ember/nn/loss/reduction.h"

namespace ember::nn {

class BinaryCrossEntropyLoss;

struct BinaryCrossEntropyLossConfig {
  /// The inputs are logits (apply a sigmoid inside, stably) rather than probabilities.
  bool logits = false;
  /// One rescaling weight per element of the last dim (empty: all 1).
  std::vector<double> weights;
  /// One weight of the positive term per element of the last dim (logits only; empty: 1).
  std::vector<double> pos_weights;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(BinaryCrossEntropyLossConfig, logits, weights, pos_weights, reduction)
  BinaryCrossEntropyLoss init() const;
};

class BinaryCrossEntropyLoss {
 public:
  static constexpr const char* kName = "binary_cross_entropy";

  explicit BinaryCrossEntropyLoss(BinaryCrossEntropyLossConfig c = {}) : c_(std::move(c)) {
    if (!c_.pos_weights.empty() && !c_.logits)
      loss_detail::value_error(kName, "pos_weights needs logits = true");
  }
  const BinaryCrossEntropyLossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    Tensor<B, D> per = c_.logits ? with_logits(input, target) : on_probs(input, target);
    if (!c_.weights.empty())
      per = per * loss_detail::last_dim_vector(kName, "weights", c_.weights, input);
    return per;
  }
  /// With per-element weights (torch's `weight` tensor), broadcast to the input's shape; they
  /// multiply the per-element losses, after the config's per-class weights.
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D>& target,
                       const Tensor<B, D>& weight) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target, weight), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input, const Tensor<B, D>& target,
                                    const Tensor<B, D>& weight) const {
    if (broadcast_shapes(input.shape(), weight.shape(), kName) != input.shape())
      loss_detail::shape_error(kName, "weight " + weight.shape().to_string() +
                                          " does not broadcast to input " +
                                          input.shape().to_string());
    return forward_no_reduction(input, target) * weight;
  }

 private:
  template <Backend B, int D>
  Tensor<B, D> on_probs(const Tensor<B, D>& p, const Tensor<B, D>& y) const {
    if (p.numel() > 0) {
      double lo = p.min().template into_scalar<double>(),
             hi = p.max().template into_scalar<double>();
      if (!(lo >= 0 && hi <= 1))
        loss_detail::value_error(kName, "probabilities " + p.shape().to_string() +
                                            " must lie in [0, 1] (found " +
                                            std::to_string(lo < 0 || lo != lo ? lo : hi) +
                                            "); for logits set logits = true");
    }
    auto log_p = p.log().clamp_min(-100.0);
    auto log_q = (1.0 - p).log().clamp_min(-100.0);
    return (y * log_p + (1.0 - y) * log_q).neg();
  }

  template <Backend B, int D>
  Tensor<B, D> with_logits(const Tensor<B, D>& x, const Tensor<B, D>& y) const {
    auto sp = activation::softplus(x.neg());  // -log(sigmoid(x)), linear where it would overflow
    if (c_.pos_weights.empty()) return (1.0 - y) * x + sp;
    auto pw = loss_detail::last_dim_vector(kName, "pos_weights", c_.pos_weights, x);
    return (1.0 - y) * x + (y * (pw - 1.0) + 1.0) * sp;
  }

  BinaryCrossEntropyLossConfig c_;
};

inline BinaryCrossEntropyLoss BinaryCrossEntropyLossConfig::init() const {
  return BinaryCrossEntropyLoss(*this);
}

}  // namespace ember::nn
