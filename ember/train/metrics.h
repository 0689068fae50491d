// Training metrics, computed on the host from each batch's outputs and aggregated per epoch.
// Every metric sees the same `MetricInput` (loss, scores, targets, learning rate), so a model
// output type only has to say how it fills one.
//
//   train::Accuracy acc;
//   acc.update({.batch_size = 2, .scores = {0.1f, 0.9f, 0.8f, 0.2f}, .num_classes = 2,
//               .targets = {1, 1}});
//   acc.value();          // 0.5 over the epoch so far
//   acc.reset();          // at the start of the next epoch
//
// Classification metrics take scores [N, C] (logits or probabilities, row-major) and integer
// targets [N]; multi-label ones take scores [N, C] and 0/1 targets [N, C].
#pragma once
#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ember/core/export.h"

namespace ember::train {

struct MetricInput {
  int64_t batch_size = 0;
  double loss = 0;            // the batch's mean loss
  std::vector<float> scores;  // [N, C] row-major (C = num_classes)
  int64_t num_classes = 0;
  std::vector<int64_t> targets;  // [N] class ids, or [N, C] 0/1 for multi-label
  bool multi_label = false;
  double lr = 0;       // the learning rate of this step
  int64_t tokens = 0;  // items that count for perplexity (default: batch_size)
};

class EMBER_API Metric {
 public:
  virtual ~Metric() = default;
  virtual std::string name() const = 0;
  virtual void update(const MetricInput& in) = 0;
  /// The value over everything seen since the last reset (the epoch so far).
  virtual double value() const = 0;
  /// The value of the last batch alone (what the dashboard plots per iteration).
  virtual double last() const { return value(); }
  virtual void reset() = 0;
  virtual bool higher_is_better() const { return true; }
  virtual std::unique_ptr<Metric> clone() const = 0;
};

/// Mean loss, weighted by batch size.
class EMBER_API LossMetric final : public Metric {
 public:
  std::string name() const override { return "loss"; }
  void update(const MetricInput& in) override;
  double value() const override { return n_ ? sum_ / static_cast<double>(n_) : 0; }
  double last() const override { return last_; }
  void reset() override { sum_ = 0, n_ = 0; }
  bool higher_is_better() const override { return false; }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<LossMetric>(*this); }

 private:
  double sum_ = 0, last_ = 0;
  int64_t n_ = 0;
};

/// Top-k accuracy (k = 1: accuracy). Targets equal to `ignore_index` are not counted.
class EMBER_API Accuracy final : public Metric {
 public:
  explicit Accuracy(int k = 1, int64_t ignore_index = -100) : k_(k), ignore_(ignore_index) {}
  std::string name() const override {
    return k_ == 1 ? "accuracy" : "top" + std::to_string(k_) + "_accuracy";
  }
  void update(const MetricInput& in) override;
  double value() const override {
    return n_ ? static_cast<double>(hit_) / static_cast<double>(n_) : 0;
  }
  double last() const override { return last_; }
  void reset() override { hit_ = 0, n_ = 0; }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<Accuracy>(*this); }

 private:
  int k_;
  int64_t ignore_;
  int64_t hit_ = 0, n_ = 0;
  double last_ = 0;
};

enum class Averaging { Macro, Micro };

/// Precision, recall and F-beta from the epoch's confusion counts. Multi-class: the argmax
/// is the prediction; multi-label: scores above `threshold` (on probabilities; logits are
/// compared with the threshold's logit).
class EMBER_API ClassificationScore final : public Metric {
 public:
  enum class Kind { Precision, Recall, FBeta };
  ClassificationScore(Kind kind, Averaging avg = Averaging::Macro, double beta = 1,
                      double threshold = 0.5, bool scores_are_logits = true);
  std::string name() const override;
  void update(const MetricInput& in) override;
  double value() const override;
  void reset() override { tp_.clear(), fp_.clear(), fn_.clear(); }
  std::unique_ptr<Metric> clone() const override {
    return std::make_unique<ClassificationScore>(*this);
  }

 private:
  Kind kind_;
  Averaging avg_;
  double beta_, threshold_;
  bool logits_;
  std::vector<int64_t> tp_, fp_, fn_;
};

EMBER_API std::unique_ptr<Metric> precision(Averaging avg = Averaging::Macro);
EMBER_API std::unique_ptr<Metric> recall(Averaging avg = Averaging::Macro);
EMBER_API std::unique_ptr<Metric> fbeta(double beta = 1, Averaging avg = Averaging::Macro);

/// Area under the ROC curve over the epoch: binary (C = 2 uses the score of class 1, or
/// C = 1 a single score), or the macro average of one-vs-rest AUCs. Ties count one half.
class EMBER_API Auroc final : public Metric {
 public:
  std::string name() const override { return "auroc"; }
  void update(const MetricInput& in) override;
  double value() const override;
  void reset() override { scores_.clear(), targets_.clear(); }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<Auroc>(*this); }

 private:
  int64_t c_ = 0;
  std::vector<float> scores_;
  std::vector<int64_t> targets_;
};

/// Counts [target][prediction] over the epoch; value() is the accuracy it implies.
class EMBER_API ConfusionMatrix final : public Metric {
 public:
  std::string name() const override { return "confusion"; }
  void update(const MetricInput& in) override;
  double value() const override;
  void reset() override { counts_.clear(); }
  std::unique_ptr<Metric> clone() const override {
    return std::make_unique<ConfusionMatrix>(*this);
  }
  int64_t num_classes() const { return c_; }
  /// counts()[t * C + p]: items of class t predicted as p.
  const std::vector<int64_t>& counts() const { return counts_; }

 private:
  int64_t c_ = 0;
  std::vector<int64_t> counts_;
};

/// exp(mean loss per token), the loss being a per-token cross-entropy.
class EMBER_API Perplexity final : public Metric {
 public:
  std::string name() const override { return "perplexity"; }
  void update(const MetricInput& in) override;
  double value() const override;
  double last() const override { return last_; }
  void reset() override { sum_ = 0, n_ = 0; }
  bool higher_is_better() const override { return false; }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<Perplexity>(*this); }

 private:
  double sum_ = 0, last_ = 0;
  int64_t n_ = 0;
};

/// The learning rate of the last step.
class EMBER_API LearningRate final : public Metric {
 public:
  std::string name() const override { return "lr"; }
  void update(const MetricInput& in) override { lr_ = in.lr; }
  double value() const override { return lr_; }
  void reset() override {}
  std::unique_ptr<Metric> clone() const override { return std::make_unique<LearningRate>(*this); }

 private:
  double lr_ = 0;
};

/// Items per second since the last reset.
class EMBER_API IterationSpeed final : public Metric {
 public:
  std::string name() const override { return "items_per_s"; }
  void update(const MetricInput& in) override;
  double value() const override;
  double last() const override { return last_; }
  void reset() override;
  std::unique_ptr<Metric> clone() const override { return std::make_unique<IterationSpeed>(*this); }

 private:
  using Clock = std::chrono::steady_clock;
  Clock::time_point start_ = Clock::now(), prev_ = start_;
  int64_t items_ = 0;
  double last_ = 0;
};

/// This process's CPU use (percent of one core) and resident memory (MiB), from /proc.
class EMBER_API CpuUse final : public Metric {
 public:
  std::string name() const override { return "cpu_percent"; }
  void update(const MetricInput&) override;
  double value() const override { return value_; }
  void reset() override {}
  std::unique_ptr<Metric> clone() const override { return std::make_unique<CpuUse>(*this); }

 private:
  double value_ = 0, prev_cpu_ = -1, prev_wall_ = 0;
};
class EMBER_API CpuMemory final : public Metric {
 public:
  std::string name() const override { return "memory_mib"; }
  void update(const MetricInput&) override;
  double value() const override { return value_; }
  void reset() override {}
  bool higher_is_better() const override { return false; }
  std::unique_ptr<Metric> clone() const override { return std::make_unique<CpuMemory>(*this); }

 private:
  double value_ = 0;
};

}  // namespace ember::train
