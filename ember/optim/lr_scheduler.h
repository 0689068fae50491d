// Learning-rate schedules. Every scheduler has the same interface: `step()` returns the lr
// for this optimizer step and advances, `lr()` is what the next step() returns, and a record
// (string key/values) saves and restores the position.
//
//   auto sched = optim::LinearLrConfig{.lr = 0.1, .start_factor = 0.1, .total_iters = 10}.init();
//   for (int i = 0; i < steps; ++i) opt.step(sched.step(), model, grads);
//
// Step i (from 0) gets the lr PyTorch's scheduler of the same name shows after i calls of
// its step(): Constant, Linear (LinearLR), Exponential (ExponentialLR), Step (StepLR), Noam
// (Vaswani et al.: lr · d_model^-½ · min(t^-½, t · warmup^-1.5), t = i + 1). Cosine
// annealing is in lr_scheduler_cosine.h, Sequential and Composed in lr_scheduler_compose.h.
#pragma once
#include <cmath>
#include <map>
#include <memory>
#include <string>

#include "ember/core/error.h"
#include "ember/core/export.h"
#include "ember/nn/config.h"

namespace ember::optim {

class LinearLr;
class ExponentialLr;
class StepLr;
class NoamLr;

/// A scheduler's position, for saving with the optimizer's record.
using SchedulerRecord = std::map<std::string, std::string>;

/// The interface of every schedule: a pure function of the step index, and a position.
class EMBER_API LrScheduler {
 public:
  virtual ~LrScheduler() = default;
  /// The lr for this step; advances to the next.
  double step() { return lr_at(step_++); }
  /// The lr the next step() returns.
  double lr() const { return lr_at(step_); }
  /// The number of step() calls so far.
  int64_t position() const { return step_; }
  /// The lr of step index `i` (0 for the first step).
  virtual double lr_at(int64_t i) const = 0;
  /// The kind, with the kinds of any inner schedulers: "Sequential(Linear,CosineAnnealing)".
  virtual std::string signature() const = 0;

  SchedulerRecord to_record() const;
  /// Restores the position; throws ValueError if the record is another kind of schedule.
  void load_record(const SchedulerRecord& r);

 private:
  int64_t step_ = 0;
};

namespace detail {
inline void check_positive(const char* who, const char* what, double v) {
  if (!(v > 0))
    throw ValueError(std::string("[") + who + "] " + what + " must be > 0, got " +
                     std::to_string(v));
}
}  // namespace detail

/// The same lr at every step.
class ConstantLr : public LrScheduler {
 public:
  explicit ConstantLr(double lr) : lr_(lr) {}
  double lr_at(int64_t) const override { return lr_; }
  std::string signature() const override { return "Constant"; }

 private:
  double lr_;
};
struct ConstantLrConfig {
  double lr = 1e-3;
  EMBER_CONFIG(ConstantLrConfig, lr)
  ConstantLr init() const { return ConstantLr(lr); }
};

/// lr · factor, the factor going linearly from start_factor to end_factor over total_iters
/// steps and staying there (torch.optim.lr_scheduler.LinearLR).
struct LinearLrConfig {
  double lr = 1e-3;
  double start_factor = 1.0 / 3;
  double end_factor = 1.0;
  int64_t total_iters = 5;
  EMBER_CONFIG(LinearLrConfig, lr, start_factor, end_factor, total_iters)
  LinearLr init() const;
};
class LinearLr : public LrScheduler {
 public:
  explicit LinearLr(LinearLrConfig c) : c_(c) {
    if (!(c_.start_factor > 0 && c_.start_factor <= 1 && c_.end_factor >= 0 && c_.end_factor <= 1))
      throw ValueError("[LinearLr] start_factor must be in (0, 1] and end_factor in [0, 1]");
    if (c_.total_iters < 1) throw ValueError("[LinearLr] total_iters must be >= 1");
  }
  double lr_at(int64_t i) const override {
    const double frac =
        static_cast<double>(std::min(i, c_.total_iters)) / static_cast<double>(c_.total_iters);
    return c_.lr * (c_.start_factor + (c_.end_factor - c_.start_factor) * frac);
  }
  std::string signature() const override { return "Linear"; }

 private:
  LinearLrConfig c_;
};
inline LinearLr LinearLrConfig::init() const { return LinearLr(*this); }

/// lr · gamma^i (torch.optim.lr_scheduler.ExponentialLR).
struct ExponentialLrConfig {
  double lr = 1e-3;
  double gamma = 0.99;
  EMBER_CONFIG(ExponentialLrConfig, lr, gamma)
  ExponentialLr init() const;
};
class ExponentialLr : public LrScheduler {
 public:
  explicit ExponentialLr(ExponentialLrConfig c) : c_(c) {
    detail::check_positive("ExponentialLr", "gamma", c_.gamma);
  }
  double lr_at(int64_t i) const override {
    return c_.lr * std::pow(c_.gamma, static_cast<double>(i));
  }
  std::string signature() const override { return "Exponential"; }

 private:
  ExponentialLrConfig c_;
};
inline ExponentialLr ExponentialLrConfig::init() const { return ExponentialLr(*this); }

/// lr · gamma^(i / step_size), integer division (torch.optim.lr_scheduler.StepLR).
struct StepLrConfig {
  double lr = 1e-3;
  int64_t step_size = 1;
  double gamma = 0.1;
  EMBER_CONFIG(StepLrConfig, lr, step_size, gamma)
  StepLr init() const;
};
class StepLr : public LrScheduler {
 public:
  explicit StepLr(StepLrConfig c) : c_(c) {
    if (c_.step_size < 1) throw ValueError("[StepLr] step_size must be >= 1");
  }
  double lr_at(int64_t i) const override {
    return c_.lr * std::pow(c_.gamma, static_cast<double>(i / c_.step_size));
  }
  std::string signature() const override { return "Step"; }

 private:
  StepLrConfig c_;
};
inline StepLr StepLrConfig::init() const { return StepLr(*this); }

/// The Transformer schedule: lr · d_model^-½ · min(t^-½, t · warmup_steps^-1.5), t = i + 1:
/// a linear warmup to its peak at t = warmup_steps, then inverse square root decay.
struct NoamLrConfig {
  double lr = 1.0;
  int64_t warmup_steps = 4000;
  int64_t d_model = 512;
  EMBER_CONFIG(NoamLrConfig, lr, warmup_steps, d_model)
  NoamLr init() const;
};
class NoamLr : public LrScheduler {
 public:
  explicit NoamLr(NoamLrConfig c) : c_(c) {
    if (c_.warmup_steps < 1 || c_.d_model < 1)
      throw ValueError("[NoamLr] warmup_steps and d_model must be >= 1");
  }
  double lr_at(int64_t i) const override {
    const double t = static_cast<double>(i + 1), w = static_cast<double>(c_.warmup_steps);
    return c_.lr / std::sqrt(static_cast<double>(c_.d_model)) *
           std::min(1.0 / std::sqrt(t), t * std::pow(w, -1.5));
  }
  std::string signature() const override { return "Noam"; }

 private:
  NoamLrConfig c_;
};
inline NoamLr NoamLrConfig::init() const { return NoamLr(*this); }

}  // namespace ember::optim
