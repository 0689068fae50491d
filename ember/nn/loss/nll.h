// Negative log-likelihood of log-probabilities against class indices, with class weights and
// an ignored class index (PyTorch's nll_loss); cross_entropy is this loss after a log_softmax.
//
//   auto nll = nn::NllLossConfig{}.with_weights({1, 2, 1}).init();
//   auto logp = activation::log_softmax(logits, 1);
//   Tensor<B, 0> l = nll.forward(logp, classes);   // logp [N, C, d...], classes [N, d...]
//
// Each element's loss is -w[y] logp[y] (0 where y is the ignored index); Mean divides the sum
// by the sum of the weights w[y] of the elements that are not ignored.
#pragma once
#include <optional>
#include <vector>

#include "ember/nn/loss/reduction.h"
#include "ember/tensor/activation.h"

namespace ember::nn {

namespace loss_detail {

template <Backend B, int D>
struct ClassNll {
  Tensor<B, D - 1> per;            // -w[y] logp[y], the ignored elements not yet zeroed
  Tensor<B, 1> denom;              // the Mean denominator: the weights of the kept elements
  Tensor<B, D - 1, Bool> ignored;  // where the target is the ignored index
};

/// The class terms shared by nll_loss and cross_entropy: checks the targets' shape and range
/// against logp [N, C, d...], picks -logp[y] and weighs it by class.
template <Backend B, int D>
ClassNll<B, D> class_nll(const char* name, const Tensor<B, D>& logp,
                         const Tensor<B, D - 1, Int>& targets, const std::vector<double>& weights,
                         int64_t ignore_index) {
  static_assert(D >= 2, "class losses take [N, C] or [N, C, d1, ...]");
  const int64_t c = logp.dim(1);
  if (c == 0) shape_error(name, "input " + logp.shape().to_string() + " has no classes");
  Dims want = logp.shape().dims();
  want.erase(1);
  if (targets.shape() != Shape(want))
    shape_error(name, "input " + logp.shape().to_string() + " needs class targets " +
                          Shape(want).to_string() + ", got " + targets.shape().to_string());
  if (!weights.empty() && static_cast<int64_t>(weights.size()) != c)
    shape_error(name, "weights has " + std::to_string(weights.size()) + " values for " +
                          std::to_string(c) + " classes (input " + logp.shape().to_string() + ")");
  auto ignored = targets.equal_elem(ignore_index);
  auto safe = targets.mask_fill(ignored, int64_t{0});
  auto check_range = [&] {
    int64_t lo = safe.min().template into_scalar<int64_t>();
    int64_t hi = safe.max().template into_scalar<int64_t>();
    if (lo < 0 || hi >= c)
      throw IndexError("[" + std::string(name) + "] class target " +
                       std::to_string(lo < 0 ? lo : hi) + " out of range for " + std::to_string(c) +
                       " classes (input " + logp.shape().to_string() + ", targets " +
                       targets.shape().to_string() + ")");
  };
  // The gather checks the targets against [0, C) itself, so the values are read back only when
  // it finds one outside (on a GPU, reading them up front would wait for the device twice a
  // step), and its error is then told in the loss's terms. A device that raises such errors
  // later (remote) has them read here.
  if (safe.numel() > 0 && !reports_data_errors_at_call(logp.device())) check_range();
  Tensor<B, D> picked = [&] {
    try {
      return logp.gather(1, safe.template unsqueeze_dim<D>(1));
    } catch (const IndexError&) {
      check_range();
      throw;
    }
  }();
  Tensor<B, D - 1> per = picked.template squeeze<D - 1>(1).neg();
  Tensor<B, D - 1> kept = ignored.bool_not().float_(logp.dtype());
  Tensor<B, 1> denom = kept.sum();
  if (!weights.empty()) {
    auto w = vector_like(weights, logp);
    auto wt = w.select(0, safe.template reshape<1>({-1})).template reshape<D - 1>(safe.shape());
    per = per * wt;
    denom = (wt * kept).sum();
  }
  return {per, denom, ignored};
}

}  // namespace loss_detail

class NllLoss;

struct NllLossConfig {
  /// Elements whose class target is this index contribute nothing.
  int64_t ignore_index = -100;
  /// One rescaling weight per class (empty: all 1).
  std::vector<double> weights;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(NllLossConfig, ignore_index, weights, reduction)
  NllLoss init() const;
};

class NllLoss {
 public:
  static constexpr const char* kName = "nll_loss";
  explicit NllLoss(NllLossConfig c = {}) : c_(std::move(c)) {}
  const NllLossConfig& config() const { return c_; }

  /// Log-probabilities [N, C, d...] against class indices [N, d...].
  template <Backend B, int D>
  Tensor<B, 0> forward(const Tensor<B, D>& logp, const Tensor<B, D - 1, Int>& targets) const {
    auto t = loss_detail::class_nll(kName, logp, targets, c_.weights, c_.ignore_index);
    auto per = t.per.mask_fill(t.ignored, 0.0);
    if (c_.reduction == Reduction::Mean) return loss_detail::rank0(per.sum() / t.denom);
    return loss_detail::reduce(kName, per, c_.reduction);
  }
  /// Per-element losses [N, d...] (ignored elements are 0).
  template <Backend B, int D>
  Tensor<B, D - 1> forward_no_reduction(const Tensor<B, D>& logp,
                                        const Tensor<B, D - 1, Int>& targets) const {
    auto t = loss_detail::class_nll(kName, logp, targets, c_.weights, c_.ignore_index);
    return t.per.mask_fill(t.ignored, 0.0);
  }

 private:
  NllLossConfig c_;
};

inline NllLoss NllLossConfig::init() const { return NllLoss(*this); }

}  // namespace ember::nn
