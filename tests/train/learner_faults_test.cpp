// The Learner when things go wrong, in this process: a full disk under the metric files
// (/dev/full behind them), a run folder that cannot be written, an abort or a stop from the
// renderer, and resumes after runs that logged epochs their checkpoint does not cover.
// (Killed and file-size-limited child processes: learner_kill_test.cpp.)
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include <nlohmann/json.hpp>
#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss.h"

#include "ember/optim.h"
#include "ember/train/learner.h"
#include "ember/train/output.h"
#include "tests/train/blobs.h"
#include "tests/train/child_process.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
using AD = Autodiff<Dispatch>;
using ember::test::Batch;
using ember::test::blobs;
using ember::test::read_text_file;
using ember::test::TempFolder;

template <Backend B>
struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)
  ClassificationOutput<B> step(const Batch<B>& b) const {
    auto logits = fc2.forward(activation::relu(fc1.forward(b.x)));
    return {nn::CrossEntropyLossConfig{}.init().forward(logits, b.y), logits, b.y};
  }
};

/// A renderer whose epoch ends and polls run the test's code.
class Hooks final : public Renderer {
 public:
  std::function<void(const Progress&)> on_epoch_end = [](const Progress&) {};
  std::function<StopRequest(int64_t steps)> on_poll = [](int64_t) { return StopRequest::None; };
  int64_t steps = 0;
  std::vector<std::string> logs;

  void update(const Progress&, const std::vector<MetricValue>&) override { ++steps; }
  void epoch_end(const Progress& p, const std::vector<MetricValue>&) override { on_epoch_end(p); }
  void log(const std::string& line) override { logs.push_back(line); }
  void finish(const History&) override {}
  StopRequest poll() override { return on_poll(steps); }
};

auto make_learner(LearnerConfig c, Hooks* hooks = nullptr) {
  ember::seed(7);
  Net<AD> net{nn::LinearConfig{4, 16}.init<AD>(), nn::LinearConfig{16, 3}.init<AD>()};
  Learner l(std::move(c), std::move(net), optim::AdamConfig{}.init<AD>(),
            optim::ConstantLrConfig{0.01}.init());
  l.with_metric(std::make_unique<Accuracy>());
  if (hooks != nullptr) {
    // The Learner owns its renderer: a forwarding one keeps the test's Hooks readable.
    struct Forward final : Renderer {
      Hooks* h;
      explicit Forward(Hooks* h) : h(h) {}
      void update(const Progress& p, const std::vector<MetricValue>& m) override {
        h->update(p, m);
      }
      void epoch_end(const Progress& p, const std::vector<MetricValue>& m) override {
        h->epoch_end(p, m);
      }
      void log(const std::string& line) override { h->log(line); }
      void finish(const History& hh) override { h->finish(hh); }
      StopRequest poll() override { return h->poll(); }
    };
    l.with_renderer(std::make_unique<Forward>(hooks));
  } else {
    l.with_renderer(null_renderer());
  }
  return l;
}

std::string message_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "(no ember::Error)";
}

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

/// (split, epoch) of each metrics.jsonl line; a line that is not JSON fails the test.
std::vector<std::string> logged_epochs(const fs::path& dir) {
  std::vector<std::string> out;
  std::ifstream f(dir / "metrics.jsonl");
  for (std::string line; std::getline(f, line);) {
    auto j = nlohmann::json::parse(line, nullptr, false);
    EXPECT_TRUE(j.is_object()) << "not a JSON line: " << line;
    if (j.is_object())
      out.push_back(j.value("split", "?") + " " + std::to_string(j.value("epoch", -1)));
  }
  return out;
}
/// (split, epoch, metric) of each metrics.csv row after the header.
std::vector<std::string> logged_rows(const fs::path& dir) {
  std::vector<std::string> out;
  std::ifstream f(dir / "metrics.csv");
  std::string line;
  std::getline(f, line);
  EXPECT_EQ(line, "split,epoch,metric,value");
  while (std::getline(f, line)) out.push_back(line.substr(0, line.rfind(',')));
  return out;
}

std::vector<std::string> epochs_once(int64_t n) {
  std::vector<std::string> v;
  for (int64_t e = 1; e <= n; ++e)
    v.push_back("train " + std::to_string(e)), v.push_back("valid " + std::to_string(e));
  return v;
}
std::vector<std::string> rows_once(int64_t n) {
  std::vector<std::string> v;
  for (int64_t e = 1; e <= n; ++e)
    for (const char* s : {"train", "valid"})
      for (const char* m : {"loss", "accuracy"})
        v.push_back(std::string(s) + "," + std::to_string(e) + "," + m);
  return v;
}

bool no_partial_checkpoints(const fs::path& ck) {
  for (const auto& e : fs::directory_iterator(ck))
    if (e.path().filename().string().starts_with(".partial")) return false;
  return true;
}

TEST(LearnerFaults, MetricsOnAFullDiskStopTrainingAndKeepTheCheckpoint) {
  for (const char* file : {"metrics.jsonl", "metrics.csv"}) {
    TempFolder t("learner_full");
    auto train = blobs<AD>(4, 1);
    auto valid = blobs<Dispatch>(2, 2);
    Hooks hooks;
    // When epoch 2's training ends, the metric file is moved onto a full disk (/dev/full:
    // every write fails with ENOSPC), just before the Learner appends to it.
    hooks.on_epoch_end = [&](const Progress& p) {
      if (p.split == "train" && p.epoch == 2) {
        fs::remove(t.dir / file);
        fs::create_symlink("/dev/full", t.dir / file);
      }
    };
    auto l = make_learner({.num_epochs = 3, .dir = t.dir.string()}, &hooks);
    const std::string msg = message_of([&] { l.fit(train, valid); });
    EXPECT_TRUE(has(msg, "cannot write " + (t.dir / file).string())) << msg;
    EXPECT_TRUE(has(msg, "No space left on device")) << msg;
    EXPECT_EQ(hooks.steps, 4 + 2 + 4);  // stopped at the end of epoch 2's training
    // The checkpoint of epoch 1 is intact and nothing half-written is left.
    CheckpointDir ck(t.dir / "checkpoints");
    EXPECT_EQ(ck.list(), std::vector<int64_t>{1});
    EXPECT_TRUE(no_partial_checkpoints(t.dir / "checkpoints"));
    auto m = Net<Dispatch>{nn::LinearConfig{4, 16}.init<Dispatch>(),
                           nn::LinearConfig{16, 3}.init<Dispatch>()};
    EXPECT_NO_THROW(nn::load_module(m, ck.path(1) / "model.safetensors"));
    // A resume on a working disk logs each epoch once.
    fs::remove(t.dir / file);
    auto again = make_learner({.num_epochs = 3, .dir = t.dir.string()});
    again.resume().fit(train, valid);
    EXPECT_EQ(logged_epochs(t.dir), epochs_once(3));
    EXPECT_EQ(logged_rows(t.dir), rows_once(3));
  }
}

TEST(LearnerFaults, RunFolderIsCheckedBeforeTheFirstStep) {
  TempFolder t("learner_dir");
  std::ofstream(t.dir / "a_file") << "x";
  auto train = blobs<AD>(2, 1);
  auto valid = blobs<Dispatch>(1, 2);
  struct Case {
    fs::path dir;
    std::string says;
  };
  std::vector<Case> cases = {
      {t.dir / "a_file", "it exists and is not a folder"},
      {t.dir / "a_file" / "run", "cannot create the run folder " + (t.dir / "a_file/run").string()},
      // /proc takes no new files, even from root.
      {"/proc", "cannot write in the run folder /proc"},
  };
  if (::geteuid() != 0) {  // permission bits do not hold for root (see mnist_cli_test)
    fs::create_directories(t.dir / "ro");
    fs::permissions(t.dir / "ro", fs::perms(0555));
    cases.push_back({t.dir / "ro", "cannot write in the run folder"});
    cases.push_back({t.dir / "ro" / "run", "Permission denied"});
  }
  for (const auto& c : cases) {
    Hooks hooks;
    auto l = make_learner({.num_epochs = 2, .dir = c.dir.string()}, &hooks);
    const std::string msg = message_of([&] { l.fit(train, valid); });
    EXPECT_TRUE(has(msg, "[learner] ")) << msg;
    EXPECT_TRUE(has(msg, c.says)) << c.dir << ": " << msg;
    EXPECT_EQ(hooks.steps, 0) << c.dir;  // before any training
  }
}

TEST(LearnerFaults, AbortAndStopSayWhereTheyEnded) {
  auto train = blobs<AD>(10, 1);
  auto valid = blobs<Dispatch>(3, 2);
  {
    TempFolder t("learner_abort");
    Hooks hooks;
    hooks.on_poll = [](int64_t steps) {  // epoch 2, step 4
      return steps == 10 + 3 + 4 ? StopRequest::Abort : StopRequest::None;
    };
    auto l = make_learner({.num_epochs = 3, .dir = t.dir.string()}, &hooks);
    l.fit(train, valid);
    const FitStatus& s = l.status();
    EXPECT_EQ(s.end, FitStatus::End::Aborted);
    EXPECT_EQ(s.epoch, 2);
    EXPECT_EQ(s.step, 4);
    EXPECT_FALSE(s.finished());
    EXPECT_EQ(s.to_string(), "aborted at epoch 2 of 3, step 4");
    // No checkpoint of the partial epoch; the one before stays and the status names it.
    CheckpointDir ck(t.dir / "checkpoints");
    EXPECT_EQ(ck.list(), std::vector<int64_t>{1});
    EXPECT_EQ(s.checkpoint, ck.path(1));
    EXPECT_EQ(logged_epochs(t.dir), epochs_once(1));
    ASSERT_FALSE(hooks.logs.empty());
    EXPECT_TRUE(has(hooks.logs.back(), "aborted at epoch 2 of 3, step 4")) << hooks.logs.back();
  }
  {
    TempFolder t("learner_stop");
    Hooks hooks;
    hooks.on_poll = [](int64_t steps) {
      return steps == 10 + 3 + 4 ? StopRequest::StopAfterStep : StopRequest::None;
    };
    auto l = make_learner({.num_epochs = 3, .dir = t.dir.string()}, &hooks);
    l.fit(train, valid);
    EXPECT_EQ(l.status().end, FitStatus::End::Stopped);
    EXPECT_EQ(l.status().to_string(), "stopped at epoch 2 of 3, step 4");
    CheckpointDir ck(t.dir / "checkpoints");
    EXPECT_EQ(ck.latest(), 2);  // the mid-epoch checkpoint
    EXPECT_EQ(l.status().checkpoint, ck.path(2));
  }
  {
    TempFolder t("learner_done");
    auto l = make_learner({.num_epochs = 2, .dir = t.dir.string()});
    l.fit(train, valid);
    EXPECT_EQ(l.status().end, FitStatus::End::Completed);
    EXPECT_TRUE(l.status().finished());
    EXPECT_EQ(l.status().epoch, 2);
    EXPECT_EQ(l.status().to_string(), "completed 2 epochs");
    auto e = make_learner({.num_epochs = 9, .patience = 1, .min_delta = 100});
    e.fit(train, valid);
    EXPECT_EQ(e.status().to_string(), "early stop after epoch 2 of 9");
  }
}

/// Appends lines for an epoch the newest checkpoint does not cover: what a run killed after
/// logging epoch 3 but before its checkpoint was complete leaves behind.
void log_epoch_past_the_checkpoint(const fs::path& dir) {
  std::ofstream(dir / "metrics.jsonl", std::ios::app)
      << R"({"split":"train","epoch":3,"loss":1,"accuracy":0.5,"seconds":1,"data_seconds":0})"
      << "\n{\"split\":\"valid\",\"epo";  // cut off by the kill
  std::ofstream(dir / "metrics.csv", std::ios::app)
      << "train,3,loss,1\ntrain,3,accuracy,0.5\nvalid,3,lo";
}

TEST(LearnerFaults, ResumeDropsMetricLinesTheCheckpointDoesNotCover) {
  auto train = blobs<AD>(6, 1);
  auto valid = blobs<Dispatch>(2, 2);
  TempFolder full_run("learner_full_run"), t("learner_resume_lines");
  make_learner({.num_epochs = 4, .dir = full_run.dir.string()}).fit(train, valid);
  make_learner({.num_epochs = 2, .dir = t.dir.string()}).fit(train, valid);
  log_epoch_past_the_checkpoint(t.dir);
  make_learner({.num_epochs = 4, .dir = t.dir.string()}).resume().fit(train, valid);
  EXPECT_EQ(logged_epochs(t.dir), epochs_once(4));
  EXPECT_EQ(logged_rows(t.dir), rows_once(4));
  // The values are the uninterrupted run's (the CSV holds no timings: byte for byte).
  EXPECT_EQ(read_text_file(t.dir / "metrics.csv"), read_text_file(full_run.dir / "metrics.csv"));
}

TEST(LearnerFaults, ResumeFromAnOlderCheckpointKeepsTheLinesItCovers) {
  auto train = blobs<AD>(6, 1);
  auto valid = blobs<Dispatch>(2, 2);
  TempFolder full_run("learner_full_run"), t("learner_old_ck");
  make_learner({.num_epochs = 3, .dir = full_run.dir.string()}).fit(train, valid);
  make_learner({.num_epochs = 2, .dir = t.dir.string()}).fit(train, valid);
  // A checkpoint written before the checkpoints held the metric lines.
  for (int64_t id : CheckpointDir(t.dir / "checkpoints").list()) {
    const fs::path p = CheckpointDir(t.dir / "checkpoints").path(id) / "learner.json";
    auto j = nlohmann::json::parse(read_text_file(p));
    j.erase("metrics_jsonl"), j.erase("metrics_csv");
    write_text_atomic(p, j.dump(1));
  }
  log_epoch_past_the_checkpoint(t.dir);
  make_learner({.num_epochs = 3, .dir = t.dir.string()}).resume().fit(train, valid);
  EXPECT_EQ(logged_epochs(t.dir), epochs_once(3));
  EXPECT_EQ(read_text_file(t.dir / "metrics.csv"), read_text_file(full_run.dir / "metrics.csv"));
}

TEST(LearnerFaults, AFreshRunStartsNewMetricFiles) {
  auto train = blobs<AD>(4, 1);
  auto valid = blobs<Dispatch>(2, 2);
  TempFolder t("learner_fresh");
  make_learner({.num_epochs = 2, .dir = t.dir.string()}).fit(train, valid);
  make_learner({.num_epochs = 2, .dir = t.dir.string()}).fit(train, valid);  // no resume
  EXPECT_EQ(logged_epochs(t.dir), epochs_once(2));
  EXPECT_EQ(logged_rows(t.dir), rows_once(2));
}

TEST(LearnerFaults, AppendTextReportsAFullDisk) {
  TempFolder t("append_full");
  fs::create_symlink("/dev/full", t.dir / "full");
  const std::string msg = message_of([&] { append_text(t.dir / "full", "line\n", "metrics"); });
  EXPECT_EQ(msg,
            "[metrics] cannot write " + (t.dir / "full").string() + ": No space left on device");
  // A working file gets the text, flushed.
  append_text(t.dir / "ok", "a\n", "metrics");
  append_text(t.dir / "ok", "b\n", "metrics");
  EXPECT_EQ(read_text_file(t.dir / "ok"), "a\nb\n");
  EXPECT_TRUE(has(message_of([&] { append_text(t.dir / "no/such/dir/f", "x", "m"); }),
                  "No such file or directory"));
}

}  // namespace
}  // namespace ember::train
