// Hinge-type losses: hinge embedding, multi-class margin and multi-label soft margin
// (PyTorch's hinge_embedding_loss, multi_margin_loss, multilabel_soft_margin_loss).
//
//   auto hinge = nn::HingeEmbeddingLossConfig{}.with_margin(1.0).init();
//   hinge.forward(distances, similar);                 // same shape; similar 1 or -1 (Int)
//   auto mm = nn::MultiMarginLossConfig{}.with_p(2).init();
//   mm.forward(scores, classes);                       // scores [N, C]; classes [N] (Int)
//   auto ml = nn::MultiLabelSoftMarginLossConfig{}.init();
//   ml.forward(logits, labels);                        // [N, C], labels 0 or 1 (float)
//
//   HingeEmbedding:       x where y = 1, max(0, margin - x) where y = -1.
//   MultiMargin:          sum over i != y of max(0, margin - x[y] + x[i])^p w[y], over C.
//   MultiLabelSoftMargin: -mean over c of w[c] (y log sigmoid(x) + (1 - y) log sigmoid(-x)).
// MultiMargin and MultiLabelSoftMargin give one loss per sample ([N]); Mean averages them.
#pragma once
#include <vector>

#include "ember/nn/loss/reduction.h"
#include "ember/tensor/activation.h"

namespace ember::nn {

class HingeEmbeddingLoss;
class MultiMarginLoss;
class MultiLabelSoftMarginLoss;

struct HingeEmbeddingLossConfig {
  double margin = 1.0;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(HingeEmbeddingLossConfig, margin, reduction)
  HingeEmbeddingLoss init() const;
};

struct MultiMarginLossConfig {
  /// The exponent of the hinge: 1 or 2.
  int64_t p = 1;
  double margin = 1.0;
  /// One weight per class (empty: all 1), applied by the target's class.
  std::vector<double> weights;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(MultiMarginLossConfig, p, margin, weights, reduction)
  MultiMarginLoss init() const;
};

struct MultiLabelSoftMarginLossConfig {
  /// One weight per class (empty: all 1).
  std::vector<double> weights;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(MultiLabelSoftMarginLossConfig, weights, reduction)
  MultiLabelSoftMarginLoss init() const;
};

class HingeEmbeddingLoss {
 public:
  static constexpr const char* kName = "hinge_embedding_loss";
  explicit HingeEmbeddingLoss(HingeEmbeddingLossConfig c = {}) : c_(c) {}
  const HingeEmbeddingLossConfig& config() const { return c_; }

  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& input, const Tensor<B, D, Int>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& input,
                                    const Tensor<B, D, Int>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    loss_detail::check_signs(kName, target);
    auto apart = (c_.margin - input).clamp_min(0.0);
    return input.mask_where(target.equal_elem(int64_t{-1}), apart);
  }

 private:
  HingeEmbeddingLossConfig c_;
};

class MultiMarginLoss {
 public:
  static constexpr const char* kName = "multi_margin_loss";
  explicit MultiMarginLoss(MultiMarginLossConfig c = {}) : c_(std::move(c)) {
    if (c_.p != 1 && c_.p != 2)
      loss_detail::value_error(kName, "p must be 1 or 2, got " + std::to_string(c_.p));
  }
  const MultiMarginLossConfig& config() const { return c_; }

  /// scores [N, C] against class indices [N].
  template <Backend B>
  Tensor<B, 0> forward(const Tensor<B, 2>& input, const Tensor<B, 1, Int>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B>
  Tensor<B, 1> forward_no_reduction(const Tensor<B, 2>& input,
                                    const Tensor<B, 1, Int>& target) const {
    const int64_t n = input.dim(0), c = input.dim(1);
    if (target.shape() != Shape{n})
      loss_detail::shape_error(kName, "input " + input.shape().to_string() + " needs target [" +
                                          std::to_string(n) + "], got " +
                                          target.shape().to_string());
    if (!c_.weights.empty() && static_cast<int64_t>(c_.weights.size()) != c)
      loss_detail::shape_error(kName, "weights has " + std::to_string(c_.weights.size()) +
                                          " values for " + std::to_string(c) + " classes");
    check_classes(target, c, input);
    auto idx = target.template unsqueeze_dim<2>(1);
    auto xy = input.gather(1, idx);                    // [N, 1]
    auto h = (input - xy + c_.margin).clamp_min(0.0);  // [N, C]
    if (c_.p == 2) h = h.square();
    if (!c_.weights.empty())
      h = h * loss_detail::vector_like(c_.weights, input)
                  .select(0, target)
                  .template unsqueeze_dim<2>(1);
    // the target's own term (margin^p w[y]) is left out
    auto own = target.template one_hot<2, Bool>(c);
    h = h.mask_fill(own, 0.0);
    return (h.sum_dim(1) / static_cast<double>(c)).template squeeze<1>(1);
  }

 private:
  template <Backend B>
  static void check_classes(const Tensor<B, 1, Int>& t, int64_t c, const Tensor<B, 2>& input) {
    if (t.numel() == 0) return;
    int64_t lo = t.min().template into_scalar<int64_t>(),
            hi = t.max().template into_scalar<int64_t>();
    if (lo < 0 || hi >= c)
      throw IndexError("[" + std::string(kName) + "] class target " +
                       std::to_string(lo < 0 ? lo : hi) + " out of range for " + std::to_string(c) +
                       " classes (input " + input.shape().to_string() + ")");
  }
  MultiMarginLossConfig c_;
};

class MultiLabelSoftMarginLoss {
 public:
  static constexpr const char* kName = "multilabel_soft_margin_loss";
  explicit MultiLabelSoftMarginLoss(MultiLabelSoftMarginLossConfig c = {}) : c_(std::move(c)) {}
  const MultiLabelSoftMarginLossConfig& config() const { return c_; }

  /// logits [N, C] against labels [N, C] (0 or 1, or soft labels in [0, 1]).
  template <Backend B>
  Tensor<B, 0> forward(const Tensor<B, 2>& input, const Tensor<B, 2>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(input, target), c_.reduction);
  }
  template <Backend B>
  Tensor<B, 1> forward_no_reduction(const Tensor<B, 2>& input, const Tensor<B, 2>& target) const {
    loss_detail::same_shape(kName, "input", input, "target", target);
    auto per = (target * activation::log_sigmoid(input) +
                (1.0 - target) * activation::log_sigmoid(input.neg()))
                   .neg();
    if (!c_.weights.empty())
      per = per * loss_detail::last_dim_vector(kName, "weights", c_.weights, input);
    return per.mean_dim(1).template squeeze<1>(1);
  }

 private:
  MultiLabelSoftMarginLossConfig c_;
};

inline HingeEmbeddingLoss HingeEmbeddingLossConfig::init() const {
  return HingeEmbeddingLoss(*this);
}
inline MultiMarginLoss MultiMarginLossConfig::init() const { return MultiMarginLoss(*this); }
inline MultiLabelSoftMarginLoss MultiLabelSoftMarginLossConfig::init() const {
  return MultiLabelSoftMarginLoss(*this);
}

}  // namespace ember::nn
