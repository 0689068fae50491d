// Gradient clipping, as a config field of every optimizer (applied to the gradients before
// the update) and as free functions on GradientsParams.
//
//   auto opt = optim::AdamConfig{}
//                  .with_grad_clipping(optim::GradientClipping::global_norm(1.0))
//                  .init<B>();
//   optim::clip_grad_value(grads, 0.5);        // each element into [-0.5, 0.5]
//   optim::clip_grad_norm(grads, 1.0);         // each tensor's L2 norm at most 1
//   auto total = optim::clip_grad_global_norm(grads, 1.0);   // all together, like
//                                              // torch.nn.utils.clip_grad_norm_
//
// Norm clipping multiplies by min(1, max_norm / (norm + 1e-6)), PyTorch's formula.
#pragma once

#include "ember/nn/config.h"
#include "ember/optim/grads.h"

namespace ember::optim {

enum class ClipKind { None, Value, Norm, GlobalNorm };
EMBER_CONFIG_ENUM(ClipKind, {ClipKind::None, "none"}, {ClipKind::Value, "value"},
                  {ClipKind::Norm, "norm"}, {ClipKind::GlobalNorm, "global_norm"})

/// Each element into [-threshold, threshold] (torch.nn.utils.clip_grad_value_).
template <Backend B>
void clip_grad_value(GradientsParams<B>& grads, double threshold) {
  if (!(threshold >= 0))
    throw ValueError("[clip_grad_value] threshold must be >= 0, got " + std::to_string(threshold));
  grads.clamp(-threshold, threshold);
}

namespace detail {
template <Backend I>
Tensor<I, 1> clip_coef(const Tensor<I, 1>& norm, double max_norm) {
  return (norm + 1e-6).recip().mul_scalar(max_norm).clamp_max(1.0);
}
inline void check_max_norm(const char* what, double max_norm) {
  if (!(max_norm >= 0))
    throw ValueError(std::string("[") + what + "] max_norm must be >= 0, got " +
                     std::to_string(max_norm));
}
}  // namespace detail

/// Each gradient scaled so that its own L2 norm is at most `max_norm`.
template <Backend B>
void clip_grad_norm(GradientsParams<B>& grads, double max_norm) {
  detail::check_max_norm("clip_grad_norm", max_norm);
  for (nn::ParamId id : grads.ids()) grads.mul(id, detail::clip_coef(grads.norm(id), max_norm));
}

/// All gradients scaled together so that their joint L2 norm is at most `max_norm`.
/// Returns the norm before clipping (a one-element tensor; no host round trip).
template <Backend B>
Tensor<typename B::Inner, 1> clip_grad_global_norm(GradientsParams<B>& grads, double max_norm) {
  detail::check_max_norm("clip_grad_global_norm", max_norm);
  auto total = grads.global_norm();
  grads.mul(detail::clip_coef(total, max_norm));
  return total;
}

/// How an optimizer clips gradients before its update; `kind` None (the default) leaves
/// them alone.
struct GradientClipping {
  ClipKind kind = ClipKind::None;
  double threshold = 0;
  EMBER_CONFIG(GradientClipping, kind, threshold)

  static GradientClipping none() { return {}; }
  static GradientClipping value(double v) { return {ClipKind::Value, v}; }
  static GradientClipping norm(double max_norm) { return {ClipKind::Norm, max_norm}; }
  static GradientClipping global_norm(double max_norm) { return {ClipKind::GlobalNorm, max_norm}; }
  bool enabled() const { return kind != ClipKind::None; }

  template <Backend B>
  void apply(GradientsParams<B>& grads) const {
    switch (kind) {
      case ClipKind::None:
        return;
      case ClipKind::Value:
        return clip_grad_value(grads, threshold);
      case ClipKind::Norm:
        return clip_grad_norm(grads, threshold);
      case ClipKind::GlobalNorm:
        clip_grad_global_norm(grads, threshold);
        return;
    }
  }
};

}  // namespace ember::optim
