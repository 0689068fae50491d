// The Learner in a child process (learner_demo.cpp) that is killed with SIGKILL at chosen
// moments (during validation, while the metric files are written, while a checkpoint is
// written) and then resumed, or that runs out of disk space (RLIMIT_FSIZE: writes past the
// limit fail with EFBIG) while writing its metric files, a checkpoint or its report. After a
// resume the metric files must hold each epoch once, with the values of an uninterrupted run.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <thread>

#include <nlohmann/json.hpp>

#include "tests/train/child_process.h"
#include "tests/train/metric_records.h"

namespace ember::test {
namespace {

namespace fs = std::filesystem;
using ember::test::metric_records;

bool has(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

std::vector<std::string> demo(const fs::path& dir, std::vector<std::string> args) {
  args.insert(args.begin(), {EMBER_LEARNER_DEMO, dir.string()});
  return args;
}

std::vector<std::string> split_epochs(const fs::path& dir) {
  std::vector<std::string> out;
  for (const auto& r : metric_records(dir)) {
    auto j = nlohmann::json::parse(r, nullptr, false);
    out.push_back(j.is_object() ? j.value("split", "?") + " " + std::to_string(j.value("epoch", -1))
                                : r);
  }
  return out;
}

std::vector<std::string> each_epoch_once(int n) {
  std::vector<std::string> v;
  for (int e = 1; e <= n; ++e)
    v.push_back("train " + std::to_string(e)), v.push_back("valid " + std::to_string(e));
  return v;
}

bool partial_checkpoint_exists(const fs::path& ck) {
  std::error_code ec;
  for (fs::directory_iterator it(ck, ec), end; !ec && it != end; it.increment(ec))
    if (it->path().filename().string().starts_with(".partial-")) return true;
  return false;
}

/// Where to kill: after the line `after` (and `delay_us`), or, with `in_checkpoint`, as soon
/// as the checkpoint's temporary folder appears after that line.
struct KillPoint {
  std::string after;
  int delay_us = 0;
  bool in_checkpoint = false;
};

std::string describe(const KillPoint& k) {
  return "kill after \"" + k.after + "\"" +
         (k.in_checkpoint ? " during the checkpoint write" : "") +
         (k.delay_us ? " +" + std::to_string(k.delay_us) + "us" : "");
}

/// Runs the demo, kills it at `k`, resumes it to the end; checks the metric files against an
/// uninterrupted run's. Returns whether the kill landed while a checkpoint was being written.
bool kill_and_resume(const KillPoint& k, const std::vector<std::string>& args,
                     const std::vector<std::string>& reference) {
  TempFolder t("learner_kill");
  const fs::path run = t.dir / "run", ck = run / "checkpoints";
  fs::create_directories(ck);
  bool in_write = false;
  {
    Child c(demo(run, args));
    EXPECT_TRUE(c.wait_for(k.after, 30)) << describe(k) << "\n" << c.output();
    if (k.in_checkpoint) {
      const auto end = std::chrono::steady_clock::now() + std::chrono::seconds(10);
      while (!partial_checkpoint_exists(ck) && std::chrono::steady_clock::now() < end)
        std::this_thread::sleep_for(std::chrono::microseconds(20));
    }
    if (k.delay_us > 0) std::this_thread::sleep_for(std::chrono::microseconds(k.delay_us));
    c.kill9();
    EXPECT_EQ(c.wait(), 128 + 9) << describe(k) << "\n" << c.output();
    in_write = partial_checkpoint_exists(ck);
  }
  auto args_resume = args;
  args_resume.push_back("--resume");
  const ChildResult r = run_child(demo(run, args_resume));
  EXPECT_EQ(r.status, 0) << describe(k) << "\n" << r.output;
  EXPECT_TRUE(has(r.output, "fit: completed")) << r.output;
  EXPECT_EQ(metric_records(run), reference) << describe(k) << "\nresumed run:\n" << r.output;
  return in_write;
}

const std::vector<std::string> kArgs = {"--epochs",         "3", "--train-batches", "6",
                                        "--valid-batches",  "4", "--delay-ms",      "2",
                                        "--valid-delay-ms", "10"};

std::vector<std::string> reference_records(const std::vector<std::string>& args) {
  TempFolder t("learner_ref");
  const ChildResult r = run_child(demo(t.dir / "run", args));
  EXPECT_EQ(r.status, 0) << r.output;
  auto rec = metric_records(t.dir / "run");
  EXPECT_EQ(split_epochs(t.dir / "run"), each_epoch_once(3));
  return rec;
}

TEST(LearnerKill, ResumeAfterKillDuringValidationHoldsEachEpochOnce) {
  const auto reference = reference_records(kArgs);
  const std::vector<KillPoint> points = {
      {"valid 1 2"},   {"valid 2 1"},         {"valid 2 3"},   {"valid 3 1"}, {"valid 3 4"},
      {"end valid 1"}, {"end valid 2", 1000}, {"end valid 3"}, {"train 2 3"},  // and once during
                                                                               // training, for
                                                                               // comparison
  };
  for (const auto& k : points) kill_and_resume(k, kArgs, reference);
}

TEST(LearnerKill, ResumeAfterKillDuringCheckpointWriteHoldsEachEpochOnce) {
  // A wide hidden layer: checkpoints of about 800 KB, so that the write takes a while.
  auto args = kArgs;
  args.insert(args.end(), {"--hidden", "8192"});
  const auto reference = reference_records(args);
  int in_write = 0, kills = 0;
  for (const char* e : {"1", "2", "3"})
    for (int delay_us : {0, 1500}) {
      in_write += kill_and_resume({std::string("end valid ") + e, delay_us, true}, args, reference);
      ++kills;
    }
  std::cout << in_write << " of " << kills << " kills landed while a checkpoint was written\n";
  EXPECT_GE(in_write, 1);
}

TEST(LearnerKill, FullDiskWhileWritingACheckpointKeepsTheLastOne) {
  TempFolder t("learner_fsize_ck");
  const fs::path run = t.dir / "run";
  auto args = kArgs;
  // From epoch 1's checkpoint on, no file may grow past 16 KiB: epoch 2's model (57 KB) fails.
  args.insert(args.end(), {"--hidden", "2048", "--limit-after-epoch", "1", "16384"});
  const ChildResult r = run_child(demo(run, args));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "error: [learner] checkpoint " +
                                (run / "checkpoints/epoch-2").string() + " was not written"))
      << r.output;
  EXPECT_TRUE(has(r.output, "model.safetensors")) << r.output;
  EXPECT_TRUE(has(r.output, "File too large")) << r.output;
  EXPECT_TRUE(
      has(r.output, "newest complete checkpoint: " + (run / "checkpoints/epoch-1").string()))
      << r.output;
  EXPECT_TRUE(fs::exists(run / "checkpoints/epoch-1/learner.json"));
  EXPECT_FALSE(fs::exists(run / "checkpoints/epoch-2"));
  EXPECT_FALSE(partial_checkpoint_exists(run / "checkpoints"));
  // With space again, the run resumes from epoch 1 and logs each epoch once.
  args.resize(args.size() - 3);
  args.push_back("--resume");
  const ChildResult again = run_child(demo(run, args));
  EXPECT_EQ(again.status, 0) << again.output;
  EXPECT_TRUE(has(again.output, "resumed from " + (run / "checkpoints/epoch-1").string()));
  EXPECT_EQ(split_epochs(run), each_epoch_once(3));
}

TEST(LearnerKill, FullDiskWhileWritingMetricsNamesTheFile) {
  TempFolder t("learner_fsize_metrics");
  const fs::path run = t.dir / "run";
  auto args = kArgs;
  // After epoch 1's checkpoint no file may grow past 100 bytes: the next metric line fails.
  args.insert(args.end(), {"--limit-after-epoch", "1", "100"});
  const ChildResult r = run_child(demo(run, args));
  EXPECT_EQ(r.status, 1) << r.output;
  EXPECT_TRUE(has(r.output, "error: [learner] cannot write " + (run / "metrics.jsonl").string() +
                                ": File too large"))
      << r.output;
  EXPECT_EQ(split_epochs(run), each_epoch_once(1));  // no partial line
  EXPECT_EQ(fs::file_size(run / "metrics.jsonl") > 0, true);
  EXPECT_TRUE(fs::exists(run / "checkpoints/epoch-1/model.safetensors"));
}

TEST(LearnerKill, FullDiskWhileWritingTheReportOrTheModel) {
  {
    TempFolder t("learner_fsize_report");
    const fs::path run = t.dir / "run";
    auto args = kArgs;
    args.insert(args.end(), {"--limit-after-fit", "8192"});  // the model fits, the report not
    const ChildResult r = run_child(demo(run, args));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(has(r.output, "error: ")) << r.output;
    EXPECT_TRUE(has(r.output, (run / "report.html").string())) << r.output;
    EXPECT_TRUE(has(r.output, "File too large")) << r.output;
    EXPECT_FALSE(fs::exists(run / "report.html"));
    for (const auto& e : fs::directory_iterator(run))  // no temporary file left behind
      EXPECT_FALSE(e.path().filename().string().starts_with("report.html.")) << e.path();
  }
  {
    TempFolder t("learner_fsize_model");
    const fs::path run = t.dir / "run";
    auto args = kArgs;
    args.insert(args.end(), {"--limit-after-fit", "256"});
    const ChildResult r = run_child(demo(run, args));
    EXPECT_EQ(r.status, 1) << r.output;
    EXPECT_TRUE(has(r.output, (run / "model.safetensors").string())) << r.output;
    EXPECT_TRUE(has(r.output, "File too large")) << r.output;
    EXPECT_FALSE(fs::exists(run / "model.safetensors"));
  }
}

}  // namespace
}  // namespace ember::test
