// Schedulers made of schedulers: one after another (SequentialLr, like
// torch.optim.lr_scheduler.SequentialLR) and multiplied together (ComposedLr, like
// ChainedScheduler).
//
//   // 5 warmup steps rising to 0.1, then exponential decay from 0.1
//   optim::SequentialLr warm({5}, optim::LinearLrConfig{.lr = 0.1, .start_factor = 0.2}.init(),
//                            optim::ExponentialLrConfig{.lr = 0.1, .gamma = 0.95}.init());
//   // 0.1 · 0.9^i · 0.5^(i / 10): give one scheduler the base lr, the others lr = 1
//   optim::ComposedLr both(optim::ExponentialLrConfig{.lr = 0.1, .gamma = 0.9}.init(),
//                          optim::StepLrConfig{.lr = 1, .step_size = 10, .gamma = 0.5}.init());
//
// In SequentialLr the scheduler that takes over at a milestone starts from its own first
// step. The inner schedulers' own positions are not used: these schedules evaluate them at
// the index they need.
#pragma once
#include <algorithm>
#include <concepts>
#include <vector>

#include "ember/optim/lr_scheduler.h"

namespace ember::optim {

class SequentialLr : public LrScheduler {
 public:
  /// schedulers[k] runs from milestones[k-1] (0 for k = 0) to milestones[k].
  SequentialLr(std::vector<std::shared_ptr<const LrScheduler>> schedulers,
               std::vector<int64_t> milestones)
      : s_(std::move(schedulers)), m_(std::move(milestones)) {
    if (s_.empty() || m_.size() + 1 != s_.size())
      throw ValueError("[SequentialLr] needs one milestone fewer than schedulers, got " +
                       std::to_string(s_.size()) + " schedulers and " + std::to_string(m_.size()) +
                       " milestones");
    for (size_t i = 0; i < m_.size(); ++i)
      if (m_[i] < 1 || (i > 0 && m_[i] <= m_[i - 1]))
        throw ValueError("[SequentialLr] milestones must be increasing and >= 1");
    for (const auto& s : s_)
      if (!s) throw ValueError("[SequentialLr] null scheduler");
  }
  template <std::derived_from<LrScheduler>... S>
  explicit SequentialLr(std::vector<int64_t> milestones, S... schedulers)
      : SequentialLr({std::make_shared<const S>(std::move(schedulers))...}, std::move(milestones)) {
  }

  double lr_at(int64_t i) const override {
    const size_t k = std::upper_bound(m_.begin(), m_.end(), i) - m_.begin();
    return s_[k]->lr_at(k == 0 ? i : i - m_[k - 1]);
  }
  std::string signature() const override {
    std::string s = "Sequential[";
    for (size_t i = 0; i < m_.size(); ++i) s.append(i ? "," : "").append(std::to_string(m_[i]));
    s += "](";
    for (size_t i = 0; i < s_.size(); ++i) s.append(i ? "," : "").append(s_[i]->signature());
    return s + ")";
  }

 private:
  std::vector<std::shared_ptr<const LrScheduler>> s_;
  std::vector<int64_t> m_;
};

class ComposedLr : public LrScheduler {
 public:
  /// The product of the schedulers' lrs at every step.
  explicit ComposedLr(std::vector<std::shared_ptr<const LrScheduler>> schedulers)
      : s_(std::move(schedulers)) {
    if (s_.empty()) throw ValueError("[ComposedLr] needs at least one scheduler");
    for (const auto& s : s_)
      if (!s) throw ValueError("[ComposedLr] null scheduler");
  }
  template <std::derived_from<LrScheduler>... S>
  explicit ComposedLr(S... schedulers)
      : ComposedLr(std::vector<std::shared_ptr<const LrScheduler>>{
            std::make_shared<const S>(std::move(schedulers))...}) {}

  double lr_at(int64_t i) const override {
    double lr = 1;
    for (const auto& s : s_) lr *= s->lr_at(i);
    return lr;
  }
  std::string signature() const override {
    std::string s = "Composed(";
    for (size_t i = 0; i < s_.size(); ++i) s.append(i ? "," : "").append(s_[i]->signature());
    return s + ")";
  }

 private:
  std::vector<std::shared_ptr<const LrScheduler>> s_;
};

}  // namespace ember::optim
