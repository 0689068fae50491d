// Internal: what the Learner does that does not depend on the model, the optimizer, the
// schedule or the loaders: metrics and history, the renderer, the run folder's files (metric
// logs, checkpoints' learner.json), resume, early stopping and how fit() ended. It is compiled
// once in the library, so a program's Learner<Model, ...> instantiates only its loops.
// learner.h is the public interface.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/export.h"
#include "ember/nn/config.h"
#include "ember/train/metrics.h"
#include "ember/train/renderer.h"

namespace ember::train {

struct LearnerConfig {
  int64_t num_epochs = 1;
  int64_t grad_accumulation = 1;     // batches per optimizer step
  std::string dir = {};              // checkpoints/ and metric logs go here; empty: none
  int64_t keep_last = 2;             // checkpoints kept (the best one is kept too)
  std::string best_metric = "loss";  // valid metric for the best checkpoint and early stop
  int64_t patience = 0;              // epochs without improvement before stopping; 0: never
  double min_delta = 0;              // what counts as an improvement
  uint64_t seed = 42;                // the global RNG seed (dropout, random init)
  // Data-parallel training (docs/distributed.md): the ranks' count, which a checkpoint records
  // (resuming on another count converts its position in the epoch), and whether this rank
  // writes the run folder (rank 0) or only reads its checkpoints to resume (the others).
  int64_t world_size = 1;
  bool write = true;
  EMBER_CONFIG(LearnerConfig, num_epochs, grad_accumulation, dir, keep_last, best_metric, patience,
               min_delta, seed, world_size, write)
};

/// How fit() ended, and where.
struct EMBER_API FitStatus {
  enum class End {
    Completed,     // every epoch ran
    EarlyStopped,  // patience ran out
    Stopped,       // asked to stop after a step: a checkpoint of that step was written
    Aborted,       // asked to abort: the partial epoch is dropped, no checkpoint of it
  };
  End end = End::Completed;
  int64_t epoch = 0;       // the last epoch run, completely or (Stopped, Aborted) partly
  int64_t step = 0;        // batches of that epoch done (Stopped, Aborted)
  int64_t num_epochs = 0;  // the configured number
  std::optional<std::filesystem::path> checkpoint;  // the newest complete checkpoint

  bool finished() const { return end == End::Completed || end == End::EarlyStopped; }
  /// "completed 3 epochs", "early stop after epoch 5 of 10", "stopped at epoch 2 of 3, step
  /// 14", "aborted at epoch 2 of 3, step 14".
  std::string to_string() const;
};

namespace detail {

/// The model-, optimizer- and schedule-specific parts of a checkpoint, as callbacks.
struct LearnerState {
  std::function<void(const std::filesystem::path& dir)> save;  // model + optimizer files
  std::function<void(const std::filesystem::path& dir)> load;
  std::function<std::map<std::string, std::string>()> schedule;  // the LR schedule's record
  std::function<void(const std::map<std::string, std::string>&)> load_schedule;
};

class EMBER_API LearnerCore {
 public:
  using Clock = std::chrono::steady_clock;

  explicit LearnerCore(LearnerConfig config);
  LearnerCore(LearnerCore&&) noexcept;
  LearnerCore& operator=(LearnerCore&&) noexcept;
  ~LearnerCore();

  const LearnerConfig& config() const { return cfg_; }
  void add_metric(std::unique_ptr<Metric> m);
  void set_renderer(std::unique_ptr<Renderer> r) { renderer_ = std::move(r); }
  void set_resume(bool on) { resume_ = on; }
  /// Applied to every metric's epoch value before it is shown or recorded (data-parallel
  /// training: the mean over the ranks).
  void set_value_sync(std::function<double(double)> f) { value_sync_ = std::move(f); }
  /// Whether this run writes its folder (a folder is set and this is not a read-only rank).
  bool writes() const { return !cfg_.dir.empty() && cfg_.write; }

  /// Seeds, probes the run folder, restores the newest checkpoint when resuming and rewrites
  /// the metric files to what it covers. Returns (first epoch, batches of it to skip).
  std::pair<int64_t, int64_t> begin_fit(const LearnerState& state);
  /// A split's epoch starts: metrics reset, a Progress for the renderer.
  Progress begin_epoch(const std::string& split, int64_t epoch, int64_t batches);
  /// One batch done: metrics updated, the renderer drawn and polled (true: stop now).
  bool batch_done(Progress& p, const MetricInput& in, double data_wait_s, Clock::time_point t0);
  /// A split's epoch ends: its metrics go to the history, the renderer and the metric files.
  void end_epoch(Progress& p, Clock::time_point t0);
  /// Training stopped or aborted at (epoch, batches done); a stop writes a checkpoint.
  void interrupted(int64_t epoch, int64_t done, const LearnerState& state);
  /// After validation: the checkpoint, the best epoch; true when early stopping ends fit().
  bool epoch_complete(int64_t epoch, const LearnerState& state);
  void finish() { renderer_->finish(history_); }

  StopRequest stop_request() const { return stop_; }
  const History& history() const { return history_; }
  std::optional<int64_t> best_epoch() const { return best_epoch_; }
  const FitStatus& status() const { return status_; }

  static double seconds(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

 private:
  std::pair<int64_t, int64_t> restore(const LearnerState& state);
  void save_checkpoint(int64_t epoch, int64_t iteration, const LearnerState& state);
  bool early_stop(int64_t epoch);
  std::filesystem::path run_file(const char* name) const;

  LearnerConfig cfg_;
  std::unique_ptr<Renderer> renderer_;
  std::function<double(double)> value_sync_;
  std::vector<std::unique_ptr<Metric>> train_metrics_, valid_metrics_;
  History history_;
  std::optional<double> best_value_;
  std::optional<int64_t> best_epoch_;
  int64_t bad_epochs_ = 0;
  bool resume_ = false;
  StopRequest stop_ = StopRequest::None;
  FitStatus status_;
  std::vector<std::string> jsonl_, csv_;  // the metric files' lines, kept in each checkpoint
  Clock::time_point start_ = Clock::now();
};

}  // namespace detail
}  // namespace ember::train
