// Margin losses on pairs and triplets: cosine embedding, margin ranking and triplet margin
// (PyTorch's cosine_embedding_loss, margin_ranking_loss, triplet_margin_loss).
//
//   auto cos = nn::CosineEmbeddingLossConfig{}.with_margin(0.2).init();
//   Tensor<B, 0> l = cos.forward(a, b, same);        // a, b [N, E]; same [N] (Int, 1 or -1)
//   auto rank = nn::MarginRankingLossConfig{}.with_margin(0.1).init();
//   rank.forward(score1, score2, first_wins);         // all [N]; first_wins 1 or -1
//   auto tri = nn::TripletMarginLossConfig{}.with_swap(true).init();
//   tri.forward(anchor, positive, negative);          // each [N, E]
//
// Targets of the pair losses are Int tensors of 1 and -1 (anything else is a ValueError).
//   CosineEmbedding: 1 - cos(a, b) where y = 1, max(0, cos(a, b) - margin) where y = -1, with
//                    cos = a.b / sqrt((|a|^2 + 1e-12) (|b|^2 + 1e-12)) over the last dim.
//   MarginRanking:   max(0, -y (x1 - x2) + margin).
//   TripletMargin:   max(0, d(a, p) - d(a, n) + margin), d(u, v) = |u - v + eps|_p over the
//                    last dim; with swap, d(a, n) becomes min(d(a, n), d(p, n)).
#pragma once
#include <cmath>
#include <limits>

#include "ember/nn/loss/reduction.h"

namespace ember::nn {

class CosineEmbeddingLoss;
class MarginRankingLoss;
class TripletMarginLoss;

struct CosineEmbeddingLossConfig {
  double margin = 0;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(CosineEmbeddingLossConfig, margin, reduction)
  CosineEmbeddingLoss init() const;
};

struct MarginRankingLossConfig {
  double margin = 0;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(MarginRankingLossConfig, margin, reduction)
  MarginRankingLoss init() const;
};

struct TripletMarginLossConfig {
  double margin = 1.0;
  /// The norm's order (> 0; 1, 2 and infinity have exact forms).
  double p = 2.0;
  /// Added to the differences before the norm, so equal points have a finite gradient.
  double eps = 1e-6;
  /// Use the smaller of d(anchor, negative) and d(positive, negative).
  bool swap = false;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(TripletMarginLossConfig, margin, p, eps, swap, reduction)
  TripletMarginLoss init() const;
};

class CosineEmbeddingLoss {
 public:
  static constexpr const char* kName = "cosine_embedding_loss";
  explicit CosineEmbeddingLoss(CosineEmbeddingLossConfig c = {}) : c_(c) {}
  const CosineEmbeddingLossConfig& config() const { return c_; }

  /// a, b: [N, E] (or [E]); target: [N] (or rank 0) of 1 and -1.
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& a, const Tensor<B, D>& b,
                       const Tensor<B, D - 1, Int>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(a, b, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D - 1> forward_no_reduction(const Tensor<B, D>& a, const Tensor<B, D>& b,
                                        const Tensor<B, D - 1, Int>& target) const {
    static_assert(D >= 1, "cosine_embedding_loss takes vectors along the last dim");
    loss_detail::same_shape(kName, "input1", a, "input2", b);
    Dims want = a.shape().dims();
    want.pop_back();
    if (target.shape() != Shape(want))
      loss_detail::shape_error(kName, "inputs " + a.shape().to_string() + " need target " +
                                          Shape(want).to_string() + ", got " +
                                          target.shape().to_string());
    loss_detail::check_signs(kName, target);
    auto along = [](const Tensor<B, D>& t) { return t.sum_dim(-1).template squeeze<D - 1>(-1); };
    auto dot = along(a * b);
    auto norms = ((along(a.square()) + 1e-12) * (along(b.square()) + 1e-12)).sqrt();
    auto cos = dot / norms;
    auto similar = 1.0 - cos;
    auto dissimilar = (cos - c_.margin).clamp_min(0.0);
    return similar.mask_where(target.equal_elem(int64_t{-1}), dissimilar);
  }

 private:
  CosineEmbeddingLossConfig c_;
};

class MarginRankingLoss {
 public:
  static constexpr const char* kName = "margin_ranking_loss";
  explicit MarginRankingLoss(MarginRankingLossConfig c = {}) : c_(c) {}
  const MarginRankingLossConfig& config() const { return c_; }

  /// x1, x2 and target (1: x1 should rank higher, -1: x2 should) of the same shape.
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& x1, const Tensor<B, D>& x2,
                       const Tensor<B, D, Int>& target) const {
    return loss_detail::reduce(kName, forward_no_reduction(x1, x2, target), c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D> forward_no_reduction(const Tensor<B, D>& x1, const Tensor<B, D>& x2,
                                    const Tensor<B, D, Int>& target) const {
    loss_detail::same_shape(kName, "input1", x1, "input2", x2);
    loss_detail::same_shape(kName, "input1", x1, "target", target);
    loss_detail::check_signs(kName, target);
    auto y = target.float_(x1.dtype());
    return ((x1 - x2) * y.neg() + c_.margin).clamp_min(0.0);
  }

 private:
  MarginRankingLossConfig c_;
};

class TripletMarginLoss {
 public:
  static constexpr const char* kName = "triplet_margin_loss";
  explicit TripletMarginLoss(TripletMarginLossConfig c = {}) : c_(c) {
    if (!(c_.p > 0))
      loss_detail::value_error(kName, "p must be positive, got " + std::to_string(c_.p));
  }
  const TripletMarginLossConfig& config() const { return c_; }

  /// anchor, positive, negative: [N, E] (or [E]); distances along the last dim.
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& anchor, const Tensor<B, D>& positive,
                       const Tensor<B, D>& negative) const {
    return loss_detail::reduce(kName, forward_no_reduction(anchor, positive, negative),
                               c_.reduction);
  }
  template <Backend B, int D>
  Tensor<B, D - 1> forward_no_reduction(const Tensor<B, D>& anchor, const Tensor<B, D>& positive,
                                        const Tensor<B, D>& negative) const {
    static_assert(D >= 1, "triplet_margin_loss takes vectors along the last dim");
    loss_detail::same_shape(kName, "anchor", anchor, "positive", positive);
    loss_detail::same_shape(kName, "anchor", anchor, "negative", negative);
    auto pos = distance(anchor, positive);
    auto neg = distance(anchor, negative);
    if (c_.swap) neg = neg.min_pair(distance(positive, negative));
    return (pos - neg + c_.margin).clamp_min(0.0);
  }

  /// |u - v + eps|_p along the last dim (PyTorch's pairwise_distance).
  template <Backend B, int D>
  Tensor<B, D - 1> distance(const Tensor<B, D>& u, const Tensor<B, D>& v) const {
    auto d = u - v + c_.eps;
    Tensor<B, D> r = [&] {
      if (c_.p == 2) return d.square().sum_dim(-1).sqrt();
      if (c_.p == 1) return d.abs().sum_dim(-1);
      if (std::isinf(c_.p)) return d.abs().max_dim(-1);
      return d.abs().pow_scalar(c_.p).sum_dim(-1).pow_scalar(1.0 / c_.p);
    }();
    return r.template squeeze<D - 1>(-1);
  }

 private:
  TripletMarginLossConfig c_;
};

inline CosineEmbeddingLoss CosineEmbeddingLossConfig::init() const {
  return CosineEmbeddingLoss(*this);
}
inline MarginRankingLoss MarginRankingLossConfig::init() const { return MarginRankingLoss(*this); }
inline TripletMarginLoss TripletMarginLossConfig::init() const { return TripletMarginLoss(*this); }

}  // namespace ember::nn
