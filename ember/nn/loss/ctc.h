// Connectionist temporal classification (PyTorch's ctc_loss): the negative log-likelihood of
// a label sequence summed over every alignment of it to the input frames.
//
//   auto ctc = nn::CtcLossConfig{}.with_blank(0).with_zero_infinity(true).init();
//   auto log_probs = activation::log_softmax(logits, 2);          // [T, N, C]
//   Tensor<B, 0> l = ctc.forward(log_probs, targets, {50, 42}, {12, 7});
//   // targets [N, S] (Int, padded); input lengths <= T; target lengths <= S
//
// The forward (alpha) recursion runs in log space over the extended labels (blank, l1,
// blank, l2, ..., blank), one step per frame, vectorized over the batch and the 2S + 1
// label positions with tensor ops, so autodiff gives the gradient. Impossible alignments
// (a target too long for its input) give an infinite loss, or 0 with zero_infinity (and
// then no gradient). Mean divides each sample's loss by its target length (at least 1) and
// averages over the batch. Inputs are f32 or f64.
//
// PyTorch's own backward returns, for log_probs, the gradient with respect to the logits
// before a log_softmax (it adds exp(log_probs)); the true gradient with respect to
// log_probs, which this computes, differs from it by that term but gives the same gradient
// for the logits. Feed log_softmax outputs, as PyTorch expects.
#pragma once
#include <algorithm>
#include <limits>

#include "ember/nn/loss/reduction.h"
#include "ember/tensor/ops.h"

namespace ember::nn {

class CtcLoss;

struct CtcLossConfig {
  /// The blank class.
  int64_t blank = 0;
  /// Infinite losses (impossible alignments) become 0, with no gradient.
  bool zero_infinity = false;
  Reduction reduction = Reduction::Mean;
  EMBER_CONFIG(CtcLossConfig, blank, zero_infinity, reduction)
  CtcLoss init() const;
};

class CtcLoss {
 public:
  static constexpr const char* kName = "ctc_loss";
  explicit CtcLoss(CtcLossConfig c = {}) : c_(c) {
    if (c_.blank < 0) loss_detail::value_error(kName, "blank must be >= 0");
  }
  const CtcLossConfig& config() const { return c_; }

  /// log_probs [T, N, C]; targets [N, S] padded; one input and one target length per sample.
  template <Backend B>
  Tensor<B, 0> forward(const Tensor<B, 3>& log_probs, const Tensor<B, 2, Int>& targets,
                       const std::vector<int64_t>& input_lengths,
                       const std::vector<int64_t>& target_lengths) const {
    auto nll = forward_no_reduction(log_probs, targets, input_lengths, target_lengths);
    if (c_.reduction != Reduction::Mean) return loss_detail::reduce(kName, nll, c_.reduction);
    std::vector<double> len(target_lengths.size());
    for (size_t i = 0; i < len.size(); ++i) len[i] = std::max<int64_t>(1, target_lengths[i]);
    return loss_detail::rank0((nll / loss_detail::vector_like(len, nll)).mean());
  }
  template <Backend B>
  Tensor<B, 0> forward(const Tensor<B, 3>& log_probs, const Tensor<B, 2, Int>& targets,
                       const Tensor<B, 1, Int>& input_lengths,
                       const Tensor<B, 1, Int>& target_lengths) const {
    return forward(log_probs, targets, input_lengths.template to_vec<int64_t>(),
                   target_lengths.template to_vec<int64_t>());
  }
  /// One loss per sample, [N].
  template <Backend B>
  Tensor<B, 1> forward_no_reduction(const Tensor<B, 3>& log_probs, const Tensor<B, 2, Int>& targets,
                                    const std::vector<int64_t>& input_lengths,
                                    const std::vector<int64_t>& target_lengths) const;
  template <Backend B>
  Tensor<B, 1> forward_no_reduction(const Tensor<B, 3>& log_probs, const Tensor<B, 2, Int>& targets,
                                    const Tensor<B, 1, Int>& input_lengths,
                                    const Tensor<B, 1, Int>& target_lengths) const {
    return forward_no_reduction(log_probs, targets, input_lengths.template to_vec<int64_t>(),
                                target_lengths.template to_vec<int64_t>());
  }

 private:
  template <Backend B>
  void check(const Tensor<B, 3>& log_probs, const Tensor<B, 2, Int>& targets,
             const std::vector<int64_t>& il, const std::vector<int64_t>& tl) const;

  CtcLossConfig c_;
};

template <Backend B>
void CtcLoss::check(const Tensor<B, 3>& log_probs, const Tensor<B, 2, Int>& targets,
                    const std::vector<int64_t>& il, const std::vector<int64_t>& tl) const {
  loss_detail::check_float(kName, log_probs.dtype());
  auto [t, n, c] = log_probs.dims();
  const int64_t s = targets.dim(1);
  auto shapes = " (log_probs " + log_probs.shape().to_string() + ", targets " +
                targets.shape().to_string() + ")";
  if (targets.dim(0) != n)
    loss_detail::shape_error(kName, "targets need one row per sample" + shapes);
  if (static_cast<int64_t>(il.size()) != n || static_cast<int64_t>(tl.size()) != n)
    loss_detail::shape_error(kName, std::to_string(il.size()) + " input lengths and " +
                                        std::to_string(tl.size()) + " target lengths for " +
                                        std::to_string(n) + " samples" + shapes);
  if (c_.blank >= c)
    throw IndexError("[" + std::string(kName) + "] blank " + std::to_string(c_.blank) +
                     " out of range for " + std::to_string(c) + " classes" + shapes);
  auto labels = targets.template to_vec<int64_t>();
  for (int64_t i = 0; i < n; ++i) {
    if (il[i] < 0 || il[i] > t)
      loss_detail::value_error(kName, "input length " + std::to_string(il[i]) + " of sample " +
                                          std::to_string(i) + " is not in [0, " +
                                          std::to_string(t) + "]" + shapes);
    if (tl[i] < 0 || tl[i] > s)
      loss_detail::value_error(kName, "target length " + std::to_string(tl[i]) + " of sample " +
                                          std::to_string(i) + " is not in [0, " +
                                          std::to_string(s) + "]" + shapes);
    for (int64_t k = 0; k < tl[i]; ++k) {
      int64_t l = labels[i * s + k];
      if (l < 0 || l >= c || l == c_.blank)
        throw IndexError("[" + std::string(kName) + "] target " + std::to_string(l) +
                         " of sample " + std::to_string(i) +
                         " is not a class other than the blank " + std::to_string(c_.blank) +
                         shapes);
    }
  }
}

template <Backend B>
Tensor<B, 1> CtcLoss::forward_no_reduction(const Tensor<B, 3>& log_probs,
                                           const Tensor<B, 2, Int>& targets,
                                           const std::vector<int64_t>& input_lengths,
                                           const std::vector<int64_t>& target_lengths) const {
  check(log_probs, targets, input_lengths, target_lengths);
  using I1 = Tensor<B, 1, Int>;
  using I2 = Tensor<B, 2, Int>;
  using F2 = Tensor<B, 2>;
  // plain variables, not a structured binding: lambdas below capture them (clang < 16)
  const int64_t t_max = log_probs.dim(0), n = log_probs.dim(1);
  const int64_t s = targets.dim(1), sp = 2 * s + 1;
  const Device dev = log_probs.device();
  const DType ft = log_probs.dtype();
  // "Minus infinity" that stays finite: log-sum-exp over it keeps gradients free of NaNs, and
  // any loss above half its size is an impossible alignment.
  constexpr double neg = -1e30;
  auto il = I1::from_values(input_lengths, Shape{n}, dev).template unsqueeze_dim<2>(1);   // [N, 1]
  auto tl = I1::from_values(target_lengths, Shape{n}, dev).template unsqueeze_dim<2>(1);  // [N, 1]

  // Extended labels [N, 2S + 1]: blank, l1, blank, l2, ..., blank. Padding beyond a target's
  // length becomes blank, so whatever it held is never used as an index.
  auto pos = I1::arange(int64_t{0}, s, int64_t{1}, dev).template unsqueeze_dim<2>(0);
  auto labels = targets.int_(DType::I64).mask_fill(pos.greater_equal(tl), c_.blank);
  auto blanks = I2::full(Shape{n, s}, c_.blank, dev, DType::I64);
  auto ext =
      cat<B, 2, Int>({stack<3>(std::vector<I2>{blanks, labels}, 2).template reshape<2>({n, 2 * s}),
                      I2::full(Shape{n, 1}, c_.blank, dev, DType::I64)},
                     1);
  // shifts x [N, 2S + 1] right by k along the labels, filling with `fill`
  auto shift = [&](const auto& x, int64_t k, Scalar fill) {
    using T = std::decay_t<decltype(x)>;
    if (k >= sp) return T::full(Shape{n, sp}, fill, dev, x.dtype());
    return cat<B, 2, typename T::kind_type>(
        {T::full(Shape{n, k}, fill, dev, x.dtype()), x.narrow(1, 0, sp - k)}, 1);
  };
  // A path may skip the blank between two labels only if they differ.
  auto no_skip = ext.equal_elem(c_.blank).bool_or(ext.equal(shift(ext, 2, c_.blank)));
  // Emissions: log_probs of each extended label, [T, N, 2S + 1].
  auto emit =
      log_probs.gather(2, ext.template unsqueeze_dim<3>(0).template expand<3>({t_max, n, sp}));
  auto frame = [&](int64_t t) { return emit.narrow(0, t, 1).template squeeze<2>(0); };

  auto label_pos = I1::arange(int64_t{0}, sp, int64_t{1}, dev).template unsqueeze_dim<2>(0);
  // Before any frame only the empty labelling is possible, with probability 1.
  auto empty =
      F2::zeros(Shape{n, sp}, dev, ft).mask_fill(label_pos.greater_equal_elem(int64_t{1}), neg);
  int64_t longest = 0, shortest = t_max;
  for (int64_t l : input_lengths) longest = std::max(longest, l), shortest = std::min(shortest, l);
  F2 alpha = empty;
  if (longest > 0) {
    alpha = frame(0).mask_fill(label_pos.greater_equal_elem(int64_t{2}), neg);
    if (shortest == 0) alpha = alpha.mask_where(il.equal_elem(int64_t{0}), empty);
  }
  for (int64_t t = 1; t < longest; ++t) {
    auto two_back = shift(alpha, 2, neg).mask_fill(no_skip, neg);
    auto merged = stack<3>(std::vector<F2>{alpha, shift(alpha, 1, neg), two_back}, 2)
                      .logsumexp(2)
                      .template squeeze<2>(2);
    alpha = alpha.mask_where(il.greater_elem(t), merged + frame(t));
  }
  // A path ends on the last label or on the blank after it.
  auto end = tl * int64_t{2};
  auto last = alpha.gather(1, end);
  auto before = alpha.gather(1, (end - int64_t{1}).clamp_min(int64_t{0}))
                    .mask_fill(tl.equal_elem(int64_t{0}), neg);
  auto nll = cat<B, 2, Float>({last, before}, 1).logsumexp(1).template squeeze<1>(1).neg();
  auto impossible = nll.greater_elem(-neg / 2);
  return nll.mask_fill(impossible,
                       c_.zero_infinity ? 0.0 : std::numeric_limits<double>::infinity());
}

inline CtcLoss CtcLossConfig::init() const { return CtcLoss(*this); }

}  // namespace ember::nn
