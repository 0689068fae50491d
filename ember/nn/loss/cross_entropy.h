// Cross-entropy of logits against class indices or class probabilities, with label
// smoothing, class weights and an ignored class index (PyTorch's cross_entropy).
//
//   auto ce = nn::CrossEntropyLossConfig{}.with_smoothing(0.1).with_weights({1, 2, 1}).init();
//   Tensor<B, 0> loss = ce.forward(logits, classes);     // logits [N, C], classes [N] (Int)
//   auto grads = loss.backward();                        // on Tensor<Autodiff<...>>
//   ce.forward(logits, probs);                           // probs [N, C] (Float) targets
//   ce.forward_no_reduction(logits, classes);            // [N]
//
// Logits are [N, C] or [N, C, d1, ...] (classes in dim 1, like PyTorch); class targets are
// [N, d1, ...]. With class targets, each element's loss is
//   w[y] * ((1 - s) * -log p[y]) + (s / C) * sum_c w[c] * -log p[c]
// (s = smoothing, p = softmax over the classes), and Mean divides the sum by the summed
// weights w[y] of the elements that are not ignored: a batch whose targets are all
// ignore_index gives NaN, as in PyTorch. Probability targets are smoothed to
// t * (1 - s) + s / C, ignore_index does not apply, and Mean divides by the element count.
#pragma once
#include "ember/backend/extern.h"
#include "ember/nn/loss/nll.h"

namespace ember::nn {

class CrossEntropyLoss;

struct CrossEntropyLossConfig {
  /// Label smoothing in [0, 1].
  double smoothing = 0;
  /// Elements whose class target is this index contribute nothing (class targets only).
  int64_t ignore_index = -100;
  /// One rescaling weight per class (empty: all 1).
  std::vector<double> weights;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(CrossEntropyLossConfig, smoothing, ignore_index, weights, reduction)
  CrossEntropyLoss init() const;
};

class CrossEntropyLoss {
 public:
  static constexpr const char* kName = "cross_entropy";

  explicit CrossEntropyLoss(CrossEntropyLossConfig c = {}) : c_(std::move(c)) {
    if (!(c_.smoothing >= 0 && c_.smoothing <= 1))
      loss_detail::value_error(kName,
                               "smoothing must be in [0, 1], got " + std::to_string(c_.smoothing));
  }
  const CrossEntropyLossConfig& config() const { return c_; }

  /// Logits [N, C, d...] against class indices [N, d...].
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& logits, const Tensor<B, D - 1, Int>& targets) const;
  /// Logits [N, C, d...] against class probabilities of the same shape.
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& logits, const Tensor<B, D>& targets) const;
  /// Per-element losses [N, d...] (ignored elements are 0).
  template <Backend B, int D>
  Tensor<B, D - 1> forward_no_reduction(const Tensor<B, D>& logits,
                                        const Tensor<B, D - 1, Int>& targets) const;
  template <Backend B, int D>
  Tensor<B, D - 1> forward_no_reduction(const Tensor<B, D>& logits,
                                        const Tensor<B, D>& targets) const;

 private:
  // Weights shaped [1, C, 1, ...] to broadcast over the logits.
  template <Backend B, int D>
  Tensor<B, D> class_weights(const Tensor<B, D>& logits) const {
    int64_t c = logits.dim(1);
    if (static_cast<int64_t>(c_.weights.size()) != c)
      loss_detail::shape_error(kName, "weights has " + std::to_string(c_.weights.size()) +
                                          " values for " + std::to_string(c) + " classes (logits " +
                                          logits.shape().to_string() + ")");
    std::array<int64_t, D> s{};
    s.fill(1);
    s[1] = c;
    return loss_detail::vector_like(c_.weights, logits).template reshape<D>(s);
  }

  template <Backend B, int D>
  static void check_logits(const Tensor<B, D>& logits) {
    static_assert(D >= 2, "cross_entropy takes logits [N, C] or [N, C, d1, ...]");
    if (logits.dim(1) == 0)
      loss_detail::shape_error(kName, "logits " + logits.shape().to_string() + " have no classes");
  }

  // (per-element losses, the Mean denominator)
  template <Backend B, int D>
  std::pair<Tensor<B, D - 1>, Tensor<B, 1>> class_terms(
      const Tensor<B, D>& logits, const Tensor<B, D - 1, Int>& targets) const {
    check_logits(logits);
    auto logp = activation::log_softmax(logits, 1);
    auto t = loss_detail::class_nll(kName, logp, targets, c_.weights, c_.ignore_index);
    if (c_.smoothing > 0) {
      const int64_t c = logits.dim(1);
      auto all = c_.weights.empty() ? logp : logp * class_weights(logits);
      auto smooth = all.sum_dim(1).template squeeze<D - 1>(1).neg();
      t.per = t.per * (1.0 - c_.smoothing) + smooth * (c_.smoothing / static_cast<double>(c));
    }
    return {t.per.mask_fill(t.ignored, 0.0), t.denom};
  }

  template <Backend B, int D>
  Tensor<B, D - 1> prob_terms(const Tensor<B, D>& logits, const Tensor<B, D>& targets) const {
    check_logits(logits);
    loss_detail::same_shape(kName, "logits", logits, "probability targets", targets);
    const double c = static_cast<double>(logits.dim(1));
    auto t = c_.smoothing > 0 ? targets * (1.0 - c_.smoothing) + c_.smoothing / c : targets;
    if (!c_.weights.empty()) t = t * class_weights(logits);
    auto logp = activation::log_softmax(logits, 1);
    return (logp * t).sum_dim(1).template squeeze<D - 1>(1).neg();
  }

  CrossEntropyLossConfig c_;
};

inline CrossEntropyLoss CrossEntropyLossConfig::init() const { return CrossEntropyLoss(*this); }

template <Backend B, int D>
Tensor<B, 0> CrossEntropyLoss::forward(const Tensor<B, D>& logits,
                                       const Tensor<B, D - 1, Int>& targets) const {
  auto [per, denom] = class_terms(logits, targets);
  if (c_.reduction == Reduction::Mean) return loss_detail::rank0(per.sum() / denom);
  return loss_detail::reduce(kName, per, c_.reduction);
}
template <Backend B, int D>
Tensor<B, 0> CrossEntropyLoss::forward(const Tensor<B, D>& logits,
                                       const Tensor<B, D>& targets) const {
  return loss_detail::reduce(kName, prob_terms(logits, targets), c_.reduction);
}
template <Backend B, int D>
Tensor<B, D - 1> CrossEntropyLoss::forward_no_reduction(
    const Tensor<B, D>& logits, const Tensor<B, D - 1, Int>& targets) const {
  return class_terms(logits, targets).first;
}
template <Backend B, int D>
Tensor<B, D - 1> CrossEntropyLoss::forward_no_reduction(const Tensor<B, D>& logits,
                                                        const Tensor<B, D>& targets) const {
  return prob_terms(logits, targets);
}

// Compiled once in the library for the Dispatch stacks and [N, C] logits
// (ember/nn/instantiate.cpp).
#define EMBER_DETAIL_CROSS_ENTROPY_INSTANCES(ext, B)                                              \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 0> CrossEntropyLoss::forward<B, 2>(              \
      const Tensor<B, 2>&, const Tensor<B, 1, Int>&) const;                                       \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 0> CrossEntropyLoss::forward<B, 2>(              \
      const Tensor<B, 2>&, const Tensor<B, 2>&) const;                                            \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 1> CrossEntropyLoss::forward_no_reduction<B, 2>( \
      const Tensor<B, 2>&, const Tensor<B, 1, Int>&) const;                                       \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 1> CrossEntropyLoss::forward_no_reduction<B, 2>( \
      const Tensor<B, 2>&, const Tensor<B, 2>&) const;
EMBER_DETAIL_CROSS_ENTROPY_INSTANCES(extern, Dispatch)
EMBER_DETAIL_CROSS_ENTROPY_INSTANCES(extern, AutodiffDispatch)

}  // namespace ember::nn
