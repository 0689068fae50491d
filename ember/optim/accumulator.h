// GradientsAccumulator<B>: sums the gradients of several backward passes (micro-batches)
// before one optimizer step.
//
//   optim::GradientsAccumulator<B> acc;
//   for (auto& batch : micro_batches) {
//     auto loss = model.forward(batch.x).sub(batch.y).square().mean();
//     acc.accumulate(optim::GradientsParams<B>::from_grads(loss.backward(), model));
//   }
//   auto grads = acc.grads();                // the sum; the accumulator starts over
//   opt.step(lr, model, grads);
//
// The sum is what PyTorch's `.grad` holds after several `backward()` calls; divide the loss
// (or call grads.scale(1.0 / n)) for a mean.
#pragma once
#include "ember/optim/grads.h"

namespace ember::optim {

template <Backend B>
class GradientsAccumulator {
 public:
  void accumulate(const GradientsParams<B>& g) {
    sum_.add(g);
    ++count_;
  }
  /// The number of GradientsParams accumulated since the last grads().
  int64_t count() const { return count_; }
  bool empty() const { return count_ == 0; }
  /// The accumulated sum; the accumulator is empty afterwards.
  GradientsParams<B> grads() {
    GradientsParams<B> out = std::move(sum_);
    sum_ = {};
    count_ = 0;
    return out;
  }

 private:
  GradientsParams<B> sum_;
  int64_t count_ = 0;
};

}  // namespace ember::optim
