// Cosine annealing with an optional linear warmup.
//
//   auto sched = optim::CosineAnnealingLrConfig{.lr = 3e-4, .num_iters = 10000,
//                                               .min_lr = 1e-5, .warmup_iters = 500}.init();
//   opt.step(sched.step(), model, grads);
//
// Over num_iters steps in all: during the first warmup_iters, lr · (s + (1 - s) · i / w) with
// s = warmup_start_factor; then min_lr + (lr - min_lr) · (1 + cos(π k / T)) / 2 over the
// remaining T = num_iters - warmup_iters steps (k counts from the end of the warmup), which
// is torch.optim.lr_scheduler.CosineAnnealingLR (after LinearLR in a SequentialLR when there
// is a warmup). After num_iters the lr stays at min_lr (PyTorch's keeps following the cosine
// back up).
#pragma once
#include <numbers>

#include "ember/optim/lr_scheduler.h"

namespace ember::optim {

class CosineAnnealingLr;

struct CosineAnnealingLrConfig {
  double lr = 1e-3;
  int64_t num_iters = 100;
  double min_lr = 0;
  int64_t warmup_iters = 0;
  double warmup_start_factor = 0;
  EMBER_CONFIG(CosineAnnealingLrConfig, lr, num_iters, min_lr, warmup_iters, warmup_start_factor)
  CosineAnnealingLr init() const;
};

class CosineAnnealingLr : public LrScheduler {
 public:
  explicit CosineAnnealingLr(CosineAnnealingLrConfig c) : c_(c) {
    if (c_.warmup_iters < 0 || c_.num_iters <= c_.warmup_iters)
      throw ValueError("[CosineAnnealingLr] needs 0 <= warmup_iters < num_iters, got " +
                       std::to_string(c_.warmup_iters) + " and " + std::to_string(c_.num_iters));
    if (!(c_.warmup_start_factor >= 0 && c_.warmup_start_factor <= 1))
      throw ValueError("[CosineAnnealingLr] warmup_start_factor must be in [0, 1]");
  }
  double lr_at(int64_t i) const override {
    if (i < c_.warmup_iters) {
      const double s = c_.warmup_start_factor;
      return c_.lr * (s + (1 - s) * static_cast<double>(i) / static_cast<double>(c_.warmup_iters));
    }
    const int64_t k = i - c_.warmup_iters, total = c_.num_iters - c_.warmup_iters;
    if (k >= total) return c_.min_lr;
    const double phase = std::numbers::pi * static_cast<double>(k) / static_cast<double>(total);
    return c_.min_lr + (c_.lr - c_.min_lr) * (1 + std::cos(phase)) / 2;
  }
  std::string signature() const override { return "CosineAnnealing"; }

 private:
  CosineAnnealingLrConfig c_;
};
inline CosineAnnealingLr CosineAnnealingLrConfig::init() const { return CosineAnnealingLr(*this); }

}  // namespace ember::optim
