// The Learner: epochs of training and validation for any module whose `step(batch)` returns
// one of the outputs of output.h, with metrics, gradient accumulation, the LR schedule,
// checkpoints (keep last N, keep best), exact resume, early stopping, and a renderer (the
// live dashboard, or plain lines).
//
//   train::Learner learner(train::LearnerConfig{.num_epochs = 3, .dir = "runs/mnist"},
//                          model, optim::AdamConfig{}.init<B>(),
//                          optim::ConstantLrConfig{1e-3}.init());
//   learner.with_metric(std::make_unique<train::Accuracy>());
//   auto trained = learner.fit(train_loader, valid_loader);   // Model<B>
//   if (learner.status().finished()) save(trained);           // not stopped or aborted
//
// With a `dir`, the run folder is checked (created, a probe file written) before the first
// step, every write is flushed and checked (a failure throws ValueError naming the file and
// leaves the earlier checkpoints intact), and each checkpoint holds the metric files' lines:
// a resume rewrites metrics.jsonl and metrics.csv to what the checkpoint covers, so epochs
// logged by a killed run after its last checkpoint do not appear twice.
//
// The model's `step` is called on the training backend (Autodiff<I>) with training batches,
// and on `nn::valid(model)` (backend I, no graph: Dropout off, BatchNorm on its running
// statistics) with validation batches. A loader is anything a range-for can walk; if it has
// `set_epoch(e)` it is told the epoch (per-epoch shuffles), a resumable loader (position() and
// restore(), like data::DataLoader) is placed at the epoch and batch to run, and `size()` or
// `len()` gives the progress bar its length.
#pragma once
#include <chrono>
#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ember/nn/record.h"
#include "ember/optim/accumulator.h"
#include "ember/optim/grads.h"
#include "ember/optim/optimizer.h"
#include "ember/train/checkpoint.h"
#include "ember/train/learner_core.h"

namespace ember::train {

/// Runs `model.step(batch)` over a loader (no gradients) and returns the metrics' values.
template <class Model, class Loader>
std::vector<MetricValue> evaluate(const Model& model, Loader& loader,
                                  const std::vector<Metric*>& metrics) {
  for (auto* m : metrics) m->reset();
  for (auto&& batch : loader) {
    MetricInput in = model.step(batch).metric_input();
    for (auto* m : metrics) m->update(in);
  }
  std::vector<MetricValue> out;
  for (auto* m : metrics) out.push_back({m->name(), m->last(), m->value(), m->higher_is_better()});
  return out;
}

template <nn::Module Model, class Optim, class Sched>
class Learner {
 public:
  using B = nn::backend_t<Model>;
  static_assert(AutodiffBackend<B>, "the Learner trains on an Autodiff backend");
  using Clock = std::chrono::steady_clock;

  Learner(LearnerConfig config, Model model, Optim optim, Sched sched)
      : core_(std::move(config)),
        model_(std::move(model)),
        optim_(std::move(optim)),
        sched_(std::move(sched)) {}

  /// Adds a metric for both splits (each split gets its own copy).
  Learner& with_metric(std::unique_ptr<Metric> m) {
    core_.add_metric(std::move(m));
    return *this;
  }
  Learner& with_renderer(std::unique_ptr<Renderer> r) {
    core_.set_renderer(std::move(r));
    return *this;
  }
  /// Called on every step's gradients (after accumulation) before the optimizer's step:
  /// data-parallel training averages them over the ranks here (docs/distributed.md).
  Learner& with_grad_sync(std::function<void(optim::GradientsParams<B>&)> sync) {
    sync_ = std::move(sync);
    return *this;
  }
  /// Applied to every metric's value at the end of an epoch, before it is shown and recorded:
  /// data-parallel training averages the ranks' values here.
  Learner& with_metric_sync(std::function<double(double)> sync) {
    core_.set_value_sync(std::move(sync));
    return *this;
  }
  /// Continue from the newest checkpoint in `dir`, if there is one.
  Learner& resume(bool on = true) {
    core_.set_resume(on);
    return *this;
  }

  /// Trains. Every file the run writes is checked (a full disk, a read-only folder): a failed
  /// write throws ValueError naming the file, and the checkpoints written before stay intact.
  template <class TrainLoader, class ValidLoader>
  Model fit(TrainLoader& train, ValidLoader& valid) {
    const detail::LearnerState st = state();
    auto [first_epoch, skip] = core_.begin_fit(st);
    for (int64_t epoch = first_epoch; epoch <= core_.config().num_epochs; ++epoch) {
      const int64_t done = train_epoch(train, epoch, skip);
      skip = 0;
      if (core_.stop_request() != StopRequest::None) {
        core_.interrupted(epoch, done, st);
        break;
      }
      valid_epoch(valid, epoch);
      if (core_.epoch_complete(epoch, st)) break;
    }
    core_.finish();
    return model_;
  }

  const History& history() const { return core_.history(); }
  const Model& model() const { return model_; }
  const Optim& optim() const { return optim_; }
  std::optional<int64_t> best_epoch() const { return core_.best_epoch(); }
  bool stopped() const { return core_.stop_request() != StopRequest::None; }
  /// How the last fit() ended: completed, early stop, stopped or aborted at (epoch, step).
  const FitStatus& status() const { return core_.status(); }

 private:
  // The model-, optimizer- and schedule-specific parts of a checkpoint.
  detail::LearnerState state() {
    return {[this](const std::filesystem::path& d) {
              nn::save_module(model_, d / "model.safetensors");
              optim::save(optim_, model_, d / "optim.safetensors");
            },
            [this](const std::filesystem::path& d) {
              nn::load_module(model_, d / "model.safetensors");
              optim::load(optim_, model_, d / "optim.safetensors");
            },
            [this] { return sched_.to_record(); },
            [this](const std::map<std::string, std::string>& r) { sched_.load_record(r); }};
  }

  template <class L>
  static int64_t loader_size(const L& l) {
    if constexpr (requires { l.size(); })
      return static_cast<int64_t>(l.size());
    else if constexpr (requires { l.len(); })
      return static_cast<int64_t>(l.len());
    else
      return 0;
  }

  // An optimizer with a step over slots (optim::Optimizer) takes them; any other the model.
  void optim_step(double lr, const std::vector<nn::Slot>& params, optim::GradientsParams<B>& g) {
    if (sync_) sync_(g);
    if constexpr (requires { optim_.step(lr, params, g); })
      optim_.step(lr, params, g);
    else
      optim_.step(lr, model_, g);
  }

  template <class L>
  int64_t train_epoch(L& loader, int64_t epoch, int64_t skip) {
    Progress p = core_.begin_epoch("train", epoch, loader_size(loader));
    if constexpr (requires { loader.set_epoch(epoch); }) loader.set_epoch(epoch);
    if constexpr (requires { loader.restore(loader.position()); }) {
      // A resumable loader (data::DataLoader) is put at (epoch, batch) directly: the same
      // order and remaining batches as the interrupted run, without loading the skipped ones.
      using P = decltype(loader.position());
      loader.restore(P{static_cast<uint64_t>(epoch - 1), static_cast<size_t>(skip)});
      p.iteration = skip;
      skip = 0;
    }
    const int64_t accumulate = core_.config().grad_accumulation;
    optim::GradientsAccumulator<B> acc;
    // The model's parameters, walked once per epoch: gradients and steps work on these.
    const std::vector<nn::Slot> params = nn::slots<B>(model_);
    const auto t0 = Clock::now();
    double lr = sched_.lr();
    // The loop by hand, to time the waits for the next batch (the loader's share of the epoch)
    auto tw = Clock::now();
    for (auto it = std::begin(loader); it != std::end(loader); tw = Clock::now(), ++it) {
      auto&& batch = *it;
      const double wait = detail::LearnerCore::seconds(tw);
      if (p.iteration < skip) {  // resuming mid-epoch: these batches were trained on
        ++p.iteration;
        p.data_wait_s += wait;
        continue;
      }
      auto out = model_.step(batch);
      auto gp = optim::GradientsParams<B>::from_grads(out.loss.backward(), params);
      MetricInput in = out.metric_input();
      if (accumulate > 1) {
        acc.accumulate(gp);
        if (acc.count() == accumulate) {
          auto sum = acc.grads();
          lr = sched_.step();
          optim_step(lr, params, sum);
        }
      } else {
        lr = sched_.step();
        optim_step(lr, params, gp);
      }
      in.lr = lr;
      if (core_.batch_done(p, in, wait, t0)) return p.iteration;
    }
    if (accumulate > 1 && !acc.empty()) {  // a last partial accumulation
      auto sum = acc.grads();
      optim_step(sched_.step(), params, sum);
    }
    core_.end_epoch(p, t0);
    return p.iteration;
  }

  template <class L>
  void valid_epoch(L& loader, int64_t epoch) {
    if constexpr (requires { loader.set_epoch(epoch); }) loader.set_epoch(epoch);
    auto vm = nn::valid(model_);
    Progress p = core_.begin_epoch("valid", epoch, loader_size(loader));
    const auto t0 = Clock::now();
    auto tw = Clock::now();
    for (auto it = std::begin(loader); it != std::end(loader); tw = Clock::now(), ++it) {
      auto&& batch = *it;
      const double wait = detail::LearnerCore::seconds(tw);
      core_.batch_done(p, vm.step(batch).metric_input(), wait, t0);
    }
    core_.end_epoch(p, t0);
  }

  detail::LearnerCore core_;
  Model model_;
  Optim optim_;
  Sched sched_;
  std::function<void(optim::GradientsParams<B>&)> sync_;
};

}  // namespace ember::train
