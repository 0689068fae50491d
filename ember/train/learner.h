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
#include <fstream>
#include <memory>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/core/parse.h"
#include "ember/core/rng.h"
#include "ember/nn/record.h"
#include "ember/optim.h"
#include "ember/train/checkpoint.h"
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
  EMBER_CONFIG(LearnerConfig, num_epochs, grad_accumulation, dir, keep_last, best_metric, patience,
               min_delta, seed)
};

/// How fit() ended, and where.
struct FitStatus {
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
  std::string to_string() const {
    const auto n = std::to_string(num_epochs), e = std::to_string(epoch);
    const std::string at = " at epoch " + e + " of " + n + ", step " + std::to_string(step);
    switch (end) {
      case End::Completed:
        return "completed " + n + (num_epochs == 1 ? " epoch" : " epochs");
      case End::EarlyStopped:
        return "early stop after epoch " + e + " of " + n;
      case End::Stopped:
        return "stopped" + at;
      case End::Aborted:
        return "aborted" + at;
    }
    return {};
  }
};

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
      : cfg_(std::move(config)),
        model_(std::move(model)),
        optim_(std::move(optim)),
        sched_(std::move(sched)),
        renderer_(make_renderer(RendererKind::Auto)) {
    if (cfg_.num_epochs < 1 || cfg_.grad_accumulation < 1)
      throw ValueError("[learner] num_epochs and grad_accumulation must be >= 1");
    add(std::make_unique<LossMetric>());
  }

  /// Adds a metric for both splits (each split gets its own copy).
  Learner& with_metric(std::unique_ptr<Metric> m) {
    add(std::move(m));
    return *this;
  }
  Learner& with_renderer(std::unique_ptr<Renderer> r) {
    renderer_ = std::move(r);
    return *this;
  }
  /// Continue from the newest checkpoint in `dir`, if there is one.
  Learner& resume(bool on = true) {
    resume_ = on;
    return *this;
  }

  /// Trains. Every file the run writes is checked (a full disk, a read-only folder): a failed
  /// write throws ValueError naming the file, and the checkpoints written before stay intact.
  template <class TrainLoader, class ValidLoader>
  Model fit(TrainLoader& train, ValidLoader& valid) {
    ember::seed(cfg_.seed);
    int64_t first_epoch = 1, skip = 0;
    status_ = FitStatus{};
    status_.num_epochs = cfg_.num_epochs;
    jsonl_.clear(), csv_.clear();
    if (!cfg_.dir.empty()) {
      // A run folder that cannot be written fails here, before the first step.
      prepare_run_dir(cfg_.dir, "learner");
      if (resume_) std::tie(first_epoch, skip) = restore();
      // The metric files hold what the checkpoint covers (nothing for a fresh run): epochs
      // logged after it by a run that was killed are dropped, so each epoch appears once.
      write_text_atomic(run_file("metrics.jsonl"), join(jsonl_));
      write_text_atomic(run_file("metrics.csv"), kCsvHeader + join(csv_));
    }
    status_.epoch = first_epoch - 1;
    start_ = Clock::now();
    stop_ = StopRequest::None;
    for (int64_t epoch = first_epoch; epoch <= cfg_.num_epochs; ++epoch) {
      const int64_t done = train_epoch(train, epoch, skip);
      skip = 0;
      if (stop_ != StopRequest::None) {
        status_.epoch = epoch, status_.step = done;
        if (stop_ == StopRequest::StopAfterStep) {
          status_.end = FitStatus::End::Stopped;
          if (!cfg_.dir.empty()) save_checkpoint(epoch, done);
          renderer_->log("stopped after step " + std::to_string(done) + " of epoch " +
                         std::to_string(epoch) + (cfg_.dir.empty() ? "" : "; checkpoint written"));
        } else {
          status_.end = FitStatus::End::Aborted;
          renderer_->log(status_.to_string() + "; this epoch is not saved" +
                         (status_.checkpoint
                              ? "; newest checkpoint: " + status_.checkpoint->string()
                              : std::string()));
        }
        break;
      }
      valid_epoch(valid, epoch);
      if (!cfg_.dir.empty()) save_checkpoint(epoch, 0);
      status_.epoch = epoch;
      if (early_stop(epoch)) {
        status_.end = FitStatus::End::EarlyStopped;
        renderer_->log("early stop: no " + cfg_.best_metric + " improvement in " +
                       std::to_string(cfg_.patience) + " epochs");
        break;
      }
    }
    renderer_->finish(history_);
    return model_;
  }

  const History& history() const { return history_; }
  const Model& model() const { return model_; }
  const Optim& optim() const { return optim_; }
  std::optional<int64_t> best_epoch() const { return best_epoch_; }
  bool stopped() const { return stop_ != StopRequest::None; }
  /// How the last fit() ended: completed, early stop, stopped or aborted at (epoch, step).
  const FitStatus& status() const { return status_; }

 private:
  void add(std::unique_ptr<Metric> m) {
    history_.higher_is_better[m->name()] = m->higher_is_better();
    valid_metrics_.push_back(m->clone());
    train_metrics_.push_back(std::move(m));
  }

  static std::vector<MetricValue> values(const std::vector<std::unique_ptr<Metric>>& ms) {
    std::vector<MetricValue> out;
    for (const auto& m : ms)
      out.push_back({m->name(), m->last(), m->value(), m->higher_is_better()});
    return out;
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

  template <class L>
  int64_t train_epoch(L& loader, int64_t epoch, int64_t skip) {
    Progress p{"train", epoch, cfg_.num_epochs, 0, loader_size(loader)};
    if constexpr (requires { loader.set_epoch(epoch); }) loader.set_epoch(epoch);
    if constexpr (requires { loader.restore(loader.position()); }) {
      // A resumable loader (data::DataLoader) is put at (epoch, batch) directly: the same
      // order and remaining batches as the interrupted run, without loading the skipped ones.
      using P = decltype(loader.position());
      loader.restore(P{static_cast<uint64_t>(epoch - 1), static_cast<size_t>(skip)});
      p.iteration = skip;
      skip = 0;
    }
    for (auto& m : train_metrics_) m->reset();
    optim::GradientsAccumulator<B> acc;
    const auto t0 = Clock::now();
    double lr = sched_.lr();
    // The loop by hand, to time the waits for the next batch (the loader's share of the epoch)
    auto tw = Clock::now();
    for (auto it = std::begin(loader); it != std::end(loader); tw = Clock::now(), ++it) {
      auto&& batch = *it;
      p.data_wait_s += seconds(tw);
      if (p.iteration < skip) {  // resuming mid-epoch: these batches were trained on
        ++p.iteration;
        continue;
      }
      auto out = model_.step(batch);
      auto gp = optim::GradientsParams<B>::from_grads(out.loss.backward(), model_);
      MetricInput in = out.metric_input();
      if (cfg_.grad_accumulation > 1) {
        acc.accumulate(gp);
        if (acc.count() == cfg_.grad_accumulation) {
          auto sum = acc.grads();
          lr = sched_.step();
          optim_.step(lr, model_, sum);
        }
      } else {
        lr = sched_.step();
        optim_.step(lr, model_, gp);
      }
      in.lr = lr;
      for (auto& m : train_metrics_) m->update(in);
      ++p.iteration;
      p.items += in.batch_size;
      p.elapsed_s = seconds(t0);
      p.total_elapsed_s = seconds(start_);
      renderer_->update(p, values(train_metrics_));
      stop_ = renderer_->poll();
      if (stop_ != StopRequest::None) return p.iteration;
    }
    if (cfg_.grad_accumulation > 1 && !acc.empty()) {  // a last partial accumulation
      auto sum = acc.grads();
      optim_.step(sched_.step(), model_, sum);
    }
    p.elapsed_s = seconds(t0);
    end_epoch(p, train_metrics_);
    return p.iteration;
  }

  template <class L>
  void valid_epoch(L& loader, int64_t epoch) {
    if constexpr (requires { loader.set_epoch(epoch); }) loader.set_epoch(epoch);
    auto vm = nn::valid(model_);
    for (auto& m : valid_metrics_) m->reset();
    Progress p{"valid", epoch, cfg_.num_epochs, 0, loader_size(loader)};
    const auto t0 = Clock::now();
    auto tw = Clock::now();
    for (auto it = std::begin(loader); it != std::end(loader); tw = Clock::now(), ++it) {
      auto&& batch = *it;
      p.data_wait_s += seconds(tw);
      MetricInput in = vm.step(batch).metric_input();
      for (auto& m : valid_metrics_) m->update(in);
      ++p.iteration;
      p.items += in.batch_size;
      p.elapsed_s = seconds(t0);
      p.total_elapsed_s = seconds(start_);
      renderer_->update(p, values(valid_metrics_));
    }
    p.elapsed_s = seconds(t0);
    end_epoch(p, valid_metrics_);
  }

  void end_epoch(const Progress& p, const std::vector<std::unique_ptr<Metric>>& ms) {
    auto vs = values(ms);
    renderer_->epoch_end(p, vs);
    nlohmann::json line{{"split", p.split},
                        {"epoch", p.epoch},
                        {"seconds", p.elapsed_s},
                        {"data_seconds", p.data_wait_s}};
    for (const auto& v : vs) {
      history_.epochs[p.split][v.name].push_back(v.epoch);
      line[v.name] = v.epoch;
    }
    if (!cfg_.dir.empty()) {
      std::ostringstream csv;
      for (const auto& v : vs)
        csv << p.split << ',' << p.epoch << ',' << v.name << ',' << v.epoch << "\n";
      // Appended and flushed; a failed write (a full disk) stops training here.
      append_text(run_file("metrics.jsonl"), line.dump() + "\n", "learner");
      append_text(run_file("metrics.csv"), csv.str(), "learner");
      jsonl_.push_back(line.dump() + "\n");
      csv_.push_back(csv.str());
    }
  }

  std::filesystem::path run_file(const char* name) const {
    return std::filesystem::path(cfg_.dir) / name;
  }
  static std::string join(const std::vector<std::string>& parts) {
    std::string s;
    for (const auto& p : parts) s += p;
    return s;
  }
  /// The lines of a metric file of epochs up to `last` (for checkpoints of older versions,
  /// which do not hold the lines): a JSON line's "epoch", a CSV row's second field.
  static std::vector<std::string> file_lines(const std::filesystem::path& p, bool csv,
                                             int64_t last) {
    std::vector<std::string> lines;
    std::ifstream f(p);
    for (std::string l; std::getline(f, l);) {
      std::optional<int64_t> e;
      if (csv) {
        const auto a = l.find(','), b = l.find(',', a + 1);
        if (a != std::string::npos && b != std::string::npos)
          e = to_int(std::string_view(l).substr(a + 1, b - a - 1));
      } else if (auto j = nlohmann::json::parse(l, nullptr, false);
                 j.is_object() && j.contains("epoch") && j["epoch"].is_number_integer()) {
        e = j["epoch"].get<int64_t>();
      }
      if (e && *e <= last) lines.push_back(l + "\n");
    }
    return lines;
  }

  double current_best_value() const {
    auto& v = history_.epochs.at("valid").at(cfg_.best_metric);
    return v.back();
  }

  /// Tracks the best epoch; true when training should stop.
  bool early_stop(int64_t epoch) {
    auto s = history_.epochs.find("valid");
    if (s == history_.epochs.end() || !s->second.count(cfg_.best_metric)) return false;
    const double v = current_best_value();
    const bool higher = history_.higher_is_better[cfg_.best_metric];
    const bool better = !best_value_ || (higher ? v > *best_value_ + cfg_.min_delta
                                                : v < *best_value_ - cfg_.min_delta);
    if (better) {
      best_value_ = v;
      best_epoch_ = epoch;
      bad_epochs_ = 0;
    } else {
      ++bad_epochs_;
    }
    if (!cfg_.dir.empty()) {
      CheckpointDir dir(std::filesystem::path(cfg_.dir) / "checkpoints");
      dir.keep_last(cfg_.keep_last, best_epoch_);
    }
    return cfg_.patience > 0 && bad_epochs_ >= cfg_.patience;
  }

  void save_checkpoint(int64_t epoch, int64_t iteration) {
    CheckpointDir dir(std::filesystem::path(cfg_.dir) / "checkpoints");
    auto tmp = dir.begin_write(epoch);
    try {
      nn::save_module(model_, tmp / "model.safetensors");
      optim::save(optim_, model_, tmp / "optim.safetensors");
      const RngState rs = rng_state();
      nlohmann::json st{{"epoch", epoch},
                        {"iteration", iteration},
                        {"scheduler", sched_.to_record()},
                        {"rng_seed", rs.seed},
                        {"rng_counter", rs.counter},
                        {"history", history_.epochs},
                        {"bad_epochs", bad_epochs_},
                        {"metrics_jsonl", jsonl_},
                        {"metrics_csv", csv_}};
      if (best_value_) st["best_value"] = *best_value_;
      if (best_epoch_) st["best_epoch"] = *best_epoch_;
      write_text_atomic(tmp / "learner.json", st.dump(1));
      dir.commit(epoch);
    } catch (const Error& e) {
      std::error_code ec;
      std::filesystem::remove_all(tmp, ec);
      throw ValueError("[learner] checkpoint " + dir.path(epoch).string() +
                       " was not written: " + e.what() + "; newest complete checkpoint: " +
                       (status_.checkpoint ? status_.checkpoint->string() : "none"));
    }
    status_.checkpoint = dir.path(epoch);
    renderer_->log("checkpoint: " + dir.path(epoch).string());
  }

  /// Loads the newest checkpoint; returns (first epoch to run, batches of it to skip).
  std::pair<int64_t, int64_t> restore() {
    CheckpointDir dir(std::filesystem::path(cfg_.dir) / "checkpoints");
    dir.clean_partial();
    auto id = dir.latest();
    if (!id) return {1, 0};
    auto path = dir.path(*id);
    nlohmann::json st;
    try {
      st = nlohmann::json::parse(read_text(path / "learner.json"));
    } catch (const nlohmann::json::exception& e) {
      throw ValueError("[learner] bad checkpoint " + path.string() + ": " + e.what());
    }
    nn::load_module(model_, path / "model.safetensors");
    optim::load(optim_, model_, path / "optim.safetensors");
    sched_.load_record(st.at("scheduler").get<optim::SchedulerRecord>());
    set_rng_state({st.at("rng_seed").get<uint64_t>(), st.at("rng_counter").get<uint64_t>()});
    history_.epochs = st.at("history").get<decltype(history_.epochs)>();
    bad_epochs_ = st.at("bad_epochs").get<int64_t>();
    if (st.contains("best_value")) best_value_ = st["best_value"].get<double>();
    if (st.contains("best_epoch")) best_epoch_ = st["best_epoch"].get<int64_t>();
    const int64_t epoch = st.at("epoch"), iteration = st.at("iteration");
    if (st.contains("metrics_jsonl")) {
      jsonl_ = st["metrics_jsonl"].get<std::vector<std::string>>();
      csv_ = st.at("metrics_csv").get<std::vector<std::string>>();
    } else {  // an older checkpoint: the files' lines of the epochs it covers
      const int64_t last = iteration > 0 ? epoch - 1 : epoch;
      jsonl_ = file_lines(run_file("metrics.jsonl"), false, last);
      csv_ = file_lines(run_file("metrics.csv"), true, last);
    }
    status_.checkpoint = path;
    renderer_->log("resumed from " + path.string());
    return iteration > 0 ? std::pair{epoch, iteration} : std::pair{epoch + 1, int64_t{0}};
  }

  static double seconds(Clock::time_point t0) {
    return std::chrono::duration<double>(Clock::now() - t0).count();
  }

  LearnerConfig cfg_;
  Model model_;
  Optim optim_;
  Sched sched_;
  std::unique_ptr<Renderer> renderer_;
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
  static constexpr const char* kCsvHeader = "split,epoch,metric,value\n";
};

}  // namespace ember::train
