// The Learner on a small synthetic classification task: it learns, resumes exactly from
// epoch and mid-epoch checkpoints, stops early, prunes checkpoints, and a process killed
// while saving never leaves a corrupt checkpoint behind.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>

#include "ember/ember.h"
#include "ember/nn/layers/dropout.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss.h"
#include "ember/optim.h"
#include "ember/train/learner.h"
#include "ember/train/output.h"
#include "tests/train/blobs.h"

namespace ember::train {
namespace {

namespace fs = std::filesystem;
using AD = Autodiff<Dispatch>;
using ember::test::Batch;
using ember::test::blobs;

template <Backend B>
struct Net {
  nn::Linear<B> fc1, fc2;
  nn::Dropout drop{0.2};
  EMBER_MODULE(Net, fc1, fc2, drop)

  ClassificationOutput<B> step(const Batch<B>& b) const {
    auto logits = fc2.forward(drop.forward(activation::relu(fc1.forward(b.x))));
    return {nn::CrossEntropyLossConfig{}.init().forward(logits, b.y), logits, b.y};
  }
};

double g_drop = 0.2;
Net<AD> make_net() {
  ember::seed(7);
  Net<AD> n{nn::LinearConfig{4, 16}.init<AD>(), nn::LinearConfig{16, 3}.init<AD>()};
  n.drop.prob = g_drop;
  return n;
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("ember_learner_" + std::to_string(::getpid()));
  TempDir() { fs::remove_all(dir), fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

auto make_learner(LearnerConfig c) {
  Learner l(std::move(c), make_net(), optim::AdamConfig{}.init<AD>(),
            optim::StepLrConfig{.lr = 0.01, .step_size = 5, .gamma = 0.5}.init());
  l.with_metric(std::make_unique<Accuracy>()).with_renderer(null_renderer());
  return l;
}

std::vector<float> weights(const Net<AD>& m) {
  auto w = m.fc1.weight.val().inner().to_vec<float>();
  auto w2 = m.fc2.weight.val().inner().to_vec<float>();
  w.insert(w.end(), w2.begin(), w2.end());
  return w;
}

TEST(Learner, LearnsAndLogs) {
  TempDir t;
  auto train = blobs<AD>(20, 1);
  auto valid = blobs<Dispatch>(5, 2);
  auto l = make_learner({.num_epochs = 4, .dir = t.dir.string()});
  l.fit(train, valid);
  auto& h = l.history().epochs;
  ASSERT_EQ(h.at("valid").at("accuracy").size(), 4u);
  EXPECT_GT(h.at("valid").at("accuracy").back(), 0.8);  // chance is 1/3
  EXPECT_LT(h.at("train").at("loss").back(), h.at("train").at("loss").front());
  EXPECT_TRUE(fs::exists(t.dir / "metrics.jsonl"));
  EXPECT_TRUE(fs::exists(t.dir / "metrics.csv"));
  CheckpointDir ck(t.dir / "checkpoints");
  // keep_last 2, plus the best epoch when it is older.
  EXPECT_LE(ck.list().size(), 3u);
  EXPECT_EQ(ck.latest(), 4);
}

TEST(Learner, ResumeFromEpochCheckpointMatchesUninterrupted) {
  TempDir t1, t2;
  auto train = blobs<AD>(10, 1);
  auto valid = blobs<Dispatch>(3, 2);
  auto full = make_learner({.num_epochs = 4, .dir = (t1.dir / "a").string()});
  auto a = full.fit(train, valid);

  auto first = make_learner({.num_epochs = 2, .dir = (t2.dir / "b").string()});
  first.fit(train, valid);
  auto second = make_learner({.num_epochs = 4, .dir = (t2.dir / "b").string()});
  second.resume();
  auto b = second.fit(train, valid);
  EXPECT_EQ(weights(a), weights(b));  // bit-exact: same data order, RNG and optimizer state
  EXPECT_EQ(full.history().epochs, second.history().epochs);
}

/// Asks to stop after a given number of steps (what the dashboard's quit key does).
class StopAt final : public Renderer {
 public:
  explicit StopAt(int64_t n) : n_(n) {}
  void update(const Progress&, const std::vector<MetricValue>&) override { ++seen_; }
  void epoch_end(const Progress&, const std::vector<MetricValue>&) override {}
  void log(const std::string&) override {}
  void finish(const History&) override {}
  StopRequest poll() override {
    return seen_ == n_ ? StopRequest::StopAfterStep : StopRequest::None;
  }

 private:
  int64_t n_, seen_ = 0;
};

TEST(Learner, StopMidEpochThenResumeMatchesUninterrupted) {
  TempDir t1, t2;
  auto train = blobs<AD>(10, 1);
  auto valid = blobs<Dispatch>(3, 2);
  auto full = make_learner({.num_epochs = 3, .dir = (t1.dir / "a").string()});
  auto a = full.fit(train, valid);

  auto first = make_learner({.num_epochs = 3, .dir = (t2.dir / "b").string()});
  first.with_renderer(std::make_unique<StopAt>(14));  // epoch 2, step 4
  first.fit(train, valid);
  EXPECT_TRUE(first.stopped());
  auto second = make_learner({.num_epochs = 3, .dir = (t2.dir / "b").string()});
  second.resume();
  auto b = second.fit(train, valid);
  EXPECT_EQ(weights(a), weights(b));
}

/// Counts the training steps of one epoch.
class CountSteps final : public Renderer {
 public:
  CountSteps(int64_t epoch, int64_t* n) : epoch_(epoch), n_(n) {}
  void update(const Progress& p, const std::vector<MetricValue>&) override {
    if (p.split == "train" && p.epoch == epoch_) ++*n_;
  }
  void epoch_end(const Progress&, const std::vector<MetricValue>&) override {}
  void log(const std::string&) override {}
  void finish(const History&) override {}
  StopRequest poll() override { return StopRequest::None; }

 private:
  int64_t epoch_, *n_;
};

TEST(Learner, ReadOnlyRanksResumeFromTheWritersCheckpointOnAnotherWorldSize) {
  // A data-parallel run of 2 ranks stops at step 6 of epoch 2 (12 rank-batches done). Its
  // checkpoint resumes on 3 ranks at step 4 and on 4 ranks at step 3; 5 ranks cannot take
  // it. A rank that does not write leaves the folder as it was.
  TempDir t;
  auto train = blobs<AD>(10, 1);
  auto valid = blobs<Dispatch>(3, 2);
  const std::string dir = (t.dir / "run").string();
  auto first = make_learner({.num_epochs = 3, .dir = dir, .world_size = 2});
  first.with_renderer(std::make_unique<StopAt>(19));  // 13 updates in epoch 1; epoch 2, step 6
  first.fit(train, valid);
  ASSERT_TRUE(first.stopped());
  auto listing = [&] {
    std::vector<std::string> v;
    for (auto& e : fs::recursive_directory_iterator(dir))
      v.push_back(e.path().string() + ":" +
                  (e.is_regular_file() ? std::to_string(fs::file_size(e.path())) : "dir"));
    std::sort(v.begin(), v.end());
    return v;
  };
  const auto before = listing();
  for (auto [ranks, done] : {std::pair{3, 4}, std::pair{4, 3}}) {
    int64_t steps = 0;
    auto reader = make_learner({.num_epochs = 2, .dir = dir, .world_size = ranks, .write = false});
    reader.with_renderer(std::make_unique<CountSteps>(2, &steps));
    reader.resume();
    reader.fit(train, valid);
    EXPECT_EQ(steps, int64_t(train.size()) - done) << ranks << " ranks";
    EXPECT_EQ(listing(), before) << ranks << " ranks";
  }
  auto five = make_learner({.num_epochs = 3, .dir = dir, .world_size = 5, .write = false});
  five.resume();
  EXPECT_THROW(five.fit(train, valid), ValueError);
}

TEST(Learner, EarlyStoppingWithPatience) {
  TempDir t;
  auto train = blobs<AD>(10, 1);
  auto valid = blobs<Dispatch>(3, 2);
  // min_delta so large nothing counts as an improvement after the first epoch.
  auto l = make_learner({.num_epochs = 10, .dir = t.dir.string(), .patience = 2, .min_delta = 100});
  l.fit(train, valid);
  EXPECT_EQ(l.history().epochs.at("valid").at("loss").size(), 3u);
  EXPECT_EQ(l.best_epoch(), 1);
  CheckpointDir ck(t.dir / "checkpoints");
  auto ids = ck.list();
  EXPECT_NE(std::find(ids.begin(), ids.end(), 1), ids.end());  // the best is kept
}

TEST(Checkpoint, KilledWhileSavingLeavesCompleteCheckpoints) {
  TempDir t;
  CheckpointDir dir(t.dir);
  // On the CPU backend itself: the child of fork() must not touch a GPU the parent opened.
  auto big = nn::LinearConfig{512, 512}.init<Cpu>();
  for (int round = 0; round < 5; ++round) {
    pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {  // the child saves checkpoints until it is killed
      for (int64_t id = 100 * round;; ++id) {
        auto tmp = dir.begin_write(id);
        nn::save_module(big, tmp / "model.safetensors");
        write_text_atomic(tmp / "learner.json", "{\"epoch\": " + std::to_string(id) + "}");
        dir.commit(id);
      }
    }
    ::usleep(static_cast<useconds_t>(20000 + 17000 * round));
    ::kill(pid, SIGKILL);
    int status = 0;
    ::waitpid(pid, &status, 0);
    // Every listed checkpoint is complete and loads.
    for (int64_t id : dir.list()) {
      auto m = nn::LinearConfig{512, 512}.init<Cpu>();
      EXPECT_NO_THROW(nn::load_module(m, dir.path(id) / "model.safetensors")) << id;
      EXPECT_TRUE(fs::exists(dir.path(id) / "learner.json")) << id;
    }
    dir.clean_partial();
  }
  EXPECT_FALSE(dir.list().empty());
}

TEST(Learner, DeterministicRuns) {
  auto train = blobs<AD>(10, 1);
  auto valid = blobs<Dispatch>(3, 2);
  auto a = make_learner({.num_epochs = 3}).fit(train, valid);
  auto b = make_learner({.num_epochs = 3}).fit(train, valid);
  EXPECT_EQ(weights(a), weights(b));
}
}  // namespace
}  // namespace ember::train
