#include "ember/train/learner_core.h"

#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

#include "ember/core/parse.h"
#include "ember/core/rng.h"
#include "ember/train/checkpoint.h"

namespace ember::train {

std::string FitStatus::to_string() const {
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

namespace detail {

namespace {

constexpr const char* kCsvHeader = "split,epoch,metric,value\n";

std::vector<MetricValue> values(const std::vector<std::unique_ptr<Metric>>& ms) {
  std::vector<MetricValue> out;
  for (const auto& m : ms) out.push_back({m->name(), m->last(), m->value(), m->higher_is_better()});
  return out;
}

std::string join(const std::vector<std::string>& parts) {
  std::string s;
  for (const auto& p : parts) s += p;
  return s;
}

/// The lines of a metric file of epochs up to `last` (for checkpoints of older versions, which
/// do not hold the lines): a JSON line's "epoch", a CSV row's second field.
std::vector<std::string> file_lines(const std::filesystem::path& p, bool csv, int64_t last) {
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

}  // namespace

LearnerCore::LearnerCore(LearnerConfig config)
    : cfg_(std::move(config)), renderer_(make_renderer(RendererKind::Auto)) {
  if (cfg_.num_epochs < 1 || cfg_.grad_accumulation < 1)
    throw ValueError("[learner] num_epochs and grad_accumulation must be >= 1");
  add_metric(std::make_unique<LossMetric>());
}
LearnerCore::LearnerCore(LearnerCore&&) noexcept = default;
LearnerCore& LearnerCore::operator=(LearnerCore&&) noexcept = default;
LearnerCore::~LearnerCore() = default;

void LearnerCore::add_metric(std::unique_ptr<Metric> m) {
  history_.higher_is_better[m->name()] = m->higher_is_better();
  valid_metrics_.push_back(m->clone());
  train_metrics_.push_back(std::move(m));
}

std::filesystem::path LearnerCore::run_file(const char* name) const {
  return std::filesystem::path(cfg_.dir) / name;
}

std::pair<int64_t, int64_t> LearnerCore::begin_fit(const LearnerState& state) {
  ember::seed(cfg_.seed);
  std::pair<int64_t, int64_t> first{1, 0};
  status_ = FitStatus{};
  status_.num_epochs = cfg_.num_epochs;
  jsonl_.clear(), csv_.clear();
  if (!cfg_.dir.empty() && !cfg_.write) {  // a data-parallel rank above 0: reads only
    if (resume_) first = restore(state);
  } else if (!cfg_.dir.empty()) {
    // A run folder that cannot be written fails here, before the first step.
    prepare_run_dir(cfg_.dir, "learner");
    if (resume_) first = restore(state);
    // The metric files hold what the checkpoint covers (nothing for a fresh run): epochs
    // logged after it by a run that was killed are dropped, so each epoch appears once.
    write_text_atomic(run_file("metrics.jsonl"), join(jsonl_));
    write_text_atomic(run_file("metrics.csv"), kCsvHeader + join(csv_));
  }
  status_.epoch = first.first - 1;
  start_ = Clock::now();
  stop_ = StopRequest::None;
  return first;
}

Progress LearnerCore::begin_epoch(const std::string& split, int64_t epoch, int64_t batches) {
  for (auto& m : split == "train" ? train_metrics_ : valid_metrics_) m->reset();
  return Progress{split, epoch, cfg_.num_epochs, 0, batches};
}

bool LearnerCore::batch_done(Progress& p, const MetricInput& in, double data_wait_s,
                             Clock::time_point t0) {
  const bool train = p.split == "train";
  auto& ms = train ? train_metrics_ : valid_metrics_;
  for (auto& m : ms) m->update(in);
  ++p.iteration;
  p.items += in.batch_size;
  p.data_wait_s += data_wait_s;
  p.elapsed_s = seconds(t0);
  p.total_elapsed_s = seconds(start_);
  renderer_->update(p, values(ms));
  if (!train) return false;
  stop_ = renderer_->poll();
  return stop_ != StopRequest::None;
}

void LearnerCore::end_epoch(Progress& p, Clock::time_point t0) {
  p.elapsed_s = seconds(t0);
  auto vs = values(p.split == "train" ? train_metrics_ : valid_metrics_);
  if (value_sync_)
    for (auto& v : vs) v.epoch = value_sync_(v.epoch);
  renderer_->epoch_end(p, vs);
  nlohmann::json line{{"split", p.split},
                      {"epoch", p.epoch},
                      {"seconds", p.elapsed_s},
                      {"data_seconds", p.data_wait_s}};
  for (const auto& v : vs) {
    history_.epochs[p.split][v.name].push_back(v.epoch);
    line[v.name] = v.epoch;
  }
  if (writes()) {
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

void LearnerCore::interrupted(int64_t epoch, int64_t done, const LearnerState& state) {
  status_.epoch = epoch, status_.step = done;
  if (stop_ == StopRequest::StopAfterStep) {
    status_.end = FitStatus::End::Stopped;
    if (writes()) save_checkpoint(epoch, done, state);
    renderer_->log("stopped after step " + std::to_string(done) + " of epoch " +
                   std::to_string(epoch) + (writes() ? "; checkpoint written" : ""));
  } else {
    status_.end = FitStatus::End::Aborted;
    renderer_->log(status_.to_string() + "; this epoch is not saved" +
                   (status_.checkpoint ? "; newest checkpoint: " + status_.checkpoint->string()
                                       : std::string()));
  }
}

bool LearnerCore::epoch_complete(int64_t epoch, const LearnerState& state) {
  if (writes()) save_checkpoint(epoch, 0, state);
  status_.epoch = epoch;
  if (!early_stop(epoch)) return false;
  status_.end = FitStatus::End::EarlyStopped;
  renderer_->log("early stop: no " + cfg_.best_metric + " improvement in " +
                 std::to_string(cfg_.patience) + " epochs");
  return true;
}

bool LearnerCore::early_stop(int64_t epoch) {
  auto s = history_.epochs.find("valid");
  if (s == history_.epochs.end() || !s->second.count(cfg_.best_metric)) return false;
  const double v = s->second.at(cfg_.best_metric).back();
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
  if (writes()) {
    CheckpointDir dir(std::filesystem::path(cfg_.dir) / "checkpoints");
    dir.keep_last(cfg_.keep_last, best_epoch_);
  }
  return cfg_.patience > 0 && bad_epochs_ >= cfg_.patience;
}

void LearnerCore::save_checkpoint(int64_t epoch, int64_t iteration, const LearnerState& state) {
  CheckpointDir dir(std::filesystem::path(cfg_.dir) / "checkpoints");
  auto tmp = dir.begin_write(epoch);
  try {
    state.save(tmp);
    const RngState rs = rng_state();
    nlohmann::json st{{"epoch", epoch},
                      {"iteration", iteration},
                      {"scheduler", state.schedule()},
                      {"rng_seed", rs.seed},
                      {"rng_counter", rs.counter},
                      {"history", history_.epochs},
                      {"bad_epochs", bad_epochs_},
                      {"world_size", cfg_.world_size},
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

std::pair<int64_t, int64_t> LearnerCore::restore(const LearnerState& state) {
  CheckpointDir dir(std::filesystem::path(cfg_.dir) / "checkpoints");
  if (cfg_.write) dir.clean_partial();
  auto id = dir.latest();
  if (!id) return {1, 0};
  auto path = dir.path(*id);
  int64_t epoch = 0, iteration = 0;
  try {
    nlohmann::json st = nlohmann::json::parse(read_text(path / "learner.json"));
    state.load(path);
    state.load_schedule(st.at("scheduler").get<std::map<std::string, std::string>>());
    set_rng_state({st.at("rng_seed").get<uint64_t>(), st.at("rng_counter").get<uint64_t>()});
    history_.epochs = st.at("history").get<decltype(history_.epochs)>();
    bad_epochs_ = st.at("bad_epochs").get<int64_t>();
    if (st.contains("best_value")) best_value_ = st["best_value"].get<double>();
    if (st.contains("best_epoch")) best_epoch_ = st["best_epoch"].get<int64_t>();
    epoch = st.at("epoch").get<int64_t>(), iteration = st.at("iteration").get<int64_t>();
    // Mid-epoch on another number of ranks: the same items done, in this world's batches.
    const int64_t was = st.value("world_size", int64_t{1}),
                  now = std::max<int64_t>(1, cfg_.world_size);
    if (iteration > 0 && was != now) {
      if (iteration * was % now != 0)
        throw ValueError("[learner] checkpoint " + path.string() + " stopped at step " +
                         std::to_string(iteration) + " of epoch " + std::to_string(epoch) + " on " +
                         std::to_string(was) + " ranks: " + std::to_string(iteration * was) +
                         " rank-batches do not divide among " + std::to_string(now) + " ranks");
      iteration = iteration * was / now;
    }
    if (st.contains("metrics_jsonl")) {
      jsonl_ = st["metrics_jsonl"].get<std::vector<std::string>>();
      csv_ = st.at("metrics_csv").get<std::vector<std::string>>();
    } else {  // an older checkpoint: the files' lines of the epochs it covers
      const int64_t last = iteration > 0 ? epoch - 1 : epoch;
      jsonl_ = file_lines(run_file("metrics.jsonl"), false, last);
      csv_ = file_lines(run_file("metrics.csv"), true, last);
    }
  } catch (const nlohmann::json::exception& e) {
    throw ValueError("[learner] bad checkpoint " + path.string() + ": " + e.what());
  }
  status_.checkpoint = path;
  renderer_->log("resumed from " + path.string());
  return iteration > 0 ? std::pair{epoch, iteration} : std::pair{epoch + 1, int64_t{0}};
}

}  // namespace detail
}  // namespace ember::train
