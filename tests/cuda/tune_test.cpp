// The launch-parameter tuner's decisions and its file (ember/backends/gpu/tune.h), with made-up
// timings: needs no GPU. The candidate configurations it may choose are checked against the
// kernel builders in kernels_compile_test.cpp.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <stdexcept>
#include <thread>
#include <vector>

#include "ember/backends/gpu/tune.h"

using namespace ember;
using gpu::Tuner;
using namespace std::string_literals;

namespace {

namespace fs = std::filesystem;

const char* kDevice = "Test GPU sm_90";

class TuneFile : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() /
           ("ember-tune-test-" + std::to_string(::getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    file_ = dir_ / "tune" / "gpu.txt";
  }
  void TearDown() override {
    std::error_code ec;
    fs::remove_all(dir_, ec);
  }
  // Times from a table (the tuner asks twice for each candidate); counts the calls.
  std::function<double(int64_t)> table(std::map<int64_t, double> t) {
    return [this, t](int64_t code) {
      ++calls_;
      auto it = t.find(code);
      if (it == t.end()) throw std::runtime_error("no such candidate");
      return it->second;
    };
  }
  std::string text() {
    std::ifstream f(file_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  void write(const std::string& s) {
    fs::create_directories(file_.parent_path());
    std::ofstream(file_, std::ios::trunc) << s;
  }
  fs::path dir_, file_;
  int calls_ = 0;
};

const std::vector<int64_t> kCands{5, 9, 13};

TEST_F(TuneFile, TimesOnceKeepsTheFastestAndASecondTunerReadsTheFile) {
  Tuner a(file_, kDevice);
  EXPECT_EQ(a.choose("softmax/f32/r10/s12/f1", kCands, table({{5, 3.0}, {9, 1.0}, {13, 2.0}})), 9);
  EXPECT_EQ(calls_, 6);
  EXPECT_EQ(a.stats().timings, 1);
  EXPECT_TRUE(fs::exists(file_));
  // Again: from memory, nothing timed.
  EXPECT_EQ(a.choose("softmax/f32/r10/s12/f1", kCands, table({})), 9);
  EXPECT_EQ(calls_, 6);
  EXPECT_EQ(a.stats().memory_hits, 1);
  EXPECT_EQ(a.choose("norm/f16/r14/s6/f0", kCands, table({{5, 1.0}, {9, 2.0}, {13, 3.0}})), 5);

  // Another process: both keys from the file, nothing timed.
  Tuner b(file_, kDevice);
  EXPECT_EQ(b.choose("softmax/f32/r10/s12/f1", kCands, table({})), 9);
  EXPECT_EQ(b.choose("norm/f16/r14/s6/f0", kCands, table({})), 5);
  EXPECT_EQ(calls_, 12);
  EXPECT_EQ(b.stats().timings, 0);
  EXPECT_EQ(b.stats().disk_hits, 2);
  EXPECT_EQ(b.stats().corrupt, 0);
  // The file holds the header, the entries and the checksum line, and no temporary is left.
  std::string t = text();
  EXPECT_EQ(t.rfind("ember-tune 1 Test GPU sm_90\n", 0), 0u) << t;
  EXPECT_NE(t.find("softmax/f32/r10/s12/f1 9\n"), std::string::npos) << t;
  EXPECT_NE(t.find("\nend 2 "), std::string::npos) << t;
  int files = 0;
  for (auto& e : fs::directory_iterator(file_.parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1);
}

TEST_F(TuneFile, HeuristicKeptUnlessClearlyFaster) {
  Tuner a(file_, kDevice);
  EXPECT_EQ(a.choose("k1", kCands, table({{5, 1.0}, {9, 0.99}, {13, 1.2}})), 5);
  EXPECT_EQ(a.choose("k2", kCands, table({{5, 1.0}, {9, 0.5}, {13, 0.9}})), 9);
}

TEST_F(TuneFile, StoredCodeThatIsNoCandidateTakesTheHeuristic) {
  Tuner a(file_, kDevice);
  EXPECT_EQ(a.choose("k", kCands, table({{5, 2.0}, {9, 1.0}, {13, 2.0}})), 9);
  Tuner b(file_, kDevice);
  const std::vector<int64_t> other{5, 13};
  EXPECT_EQ(b.choose("k", other, table({})), 5);
  EXPECT_EQ(b.stats().stale, 1);
  EXPECT_EQ(b.stats().timings, 0);
}

TEST_F(TuneFile, FailingCandidatesAreSkippedAndAFailingHeuristicIsKeptInMemoryOnly) {
  Tuner a(file_, kDevice);
  // 13 throws (not in the table): skipped.
  EXPECT_EQ(a.choose("k", kCands, table({{5, 2.0}, {9, 1.0}})), 9);
  EXPECT_EQ(a.stats().failures, 1);
  // The heuristic fails: it is kept, nothing written for it.
  EXPECT_EQ(a.choose("bad", kCands, table({{9, 1.0}, {13, 0.5}})), 5);
  EXPECT_EQ(a.choose("nan", kCands, table({{5, std::nan("")}, {9, 1.0}, {13, 0.5}})), 5);
  EXPECT_EQ(a.choose("bad", kCands, table({})), 5);
  Tuner b(file_, kDevice);
  EXPECT_EQ(b.choose("bad", kCands, table({{5, 1.0}, {9, 2.0}, {13, 2.0}})), 5);
  EXPECT_EQ(b.stats().timings, 1);  // timed again: the failure was not recorded on disk
  EXPECT_EQ(b.choose("k", kCands, table({})), 9);
  EXPECT_EQ(b.stats().disk_hits, 1);
  // A chosen code that fails later is demoted to the heuristic.
  b.demote("k", 5);
  EXPECT_EQ(b.choose("k", kCands, table({})), 5);
}

TEST_F(TuneFile, CorruptOrForeignFilesAreIgnoredAndRewritten) {
  const std::vector<std::string> bad = {
      "garbage\n",
      "",
      "ember-tune 1 Test GPU sm_90\nk 9\n",                    // no end line
      "ember-tune 1 Test GPU sm_90\nk 9\nend 1 0123456789\n",  // wrong checksum
      "ember-tune 1 Other GPU sm_80\nk 9\nend 1 0\n",          // another device
      "ember-tune 1 Test GPU sm_90\nk nine\nend 1 0\n",        // not a number
      "ember-tune 1 Test GPU sm_90\nk 9\0\nend 1 0\n"s,
  };
  for (const std::string& b : bad) {
    write(b);
    calls_ = 0;
    Tuner a(file_, kDevice);
    EXPECT_EQ(a.choose("k", kCands, table({{5, 1.0}, {9, 2.0}, {13, 0.25}})), 13) << b;
    EXPECT_EQ(calls_, 6) << b;  // nothing taken from the file
    EXPECT_EQ(a.stats().corrupt, 1) << b;
    Tuner c(file_, kDevice);  // rewritten: valid now
    EXPECT_EQ(c.choose("k", kCands, table({})), 13) << b;
    EXPECT_EQ(c.stats().disk_hits, 1) << b;
    EXPECT_EQ(c.stats().corrupt, 0) << b;
  }
  // A valid file with one line changed by hand fails its checksum.
  std::string t = text();
  size_t at = t.find("k 13\n");
  ASSERT_NE(at, std::string::npos);
  t.replace(at, 5, "k 9\n");
  write(t);
  Tuner d(file_, kDevice);
  EXPECT_EQ(d.choose("k", kCands, table({{5, 1.0}, {9, 2.0}, {13, 0.25}})), 13);
  EXPECT_EQ(d.stats().corrupt, 1);
  EXPECT_EQ(d.stats().timings, 1);
}

TEST_F(TuneFile, ConcurrentWritersLeaveAValidFile) {
  constexpr int kThreads = 6, kKeys = 12;
  auto key = [](int th, int k) {
    std::string s = "t";
    s.append(std::to_string(th)).append("/k").append(std::to_string(k));
    return s;
  };
  auto best = [](int th, int k) {
    return int64_t((th + k) % 3 == 0 ? 5 : (th + k) % 3 == 1 ? 9 : 13);
  };
  std::vector<std::thread> threads;
  for (int th = 0; th < kThreads; ++th)
    threads.emplace_back([&, th] {
      Tuner t(file_, kDevice);  // each its own tuner, as separate processes
      for (int k = 0; k < kKeys; ++k) {
        int64_t b = best(th, k);
        t.choose(key(th, k), kCands, [b](int64_t c) { return c == b ? 1.0 : 2.0; });
      }
    });
  for (auto& t : threads) t.join();
  Tuner r(file_, kDevice);
  int found = 0;
  for (int th = 0; th < kThreads; ++th)
    for (int k = 0; k < kKeys; ++k) {
      int64_t b = best(th, k);
      bool timed = false;
      int64_t got = r.choose(key(th, k), kCands, [&](int64_t c) {
        timed = true;
        return c == b ? 1.0 : 2.0;
      });
      EXPECT_EQ(got, b) << key(th, k);
      found += !timed;
    }
  EXPECT_EQ(r.stats().corrupt, 0);
  // Each writer merges what it reads before it writes: at least the last writer's keys.
  EXPECT_GE(found, kKeys);
  EXPECT_EQ(r.stats().disk_hits, found);
  int files = 0;
  for (auto& e : fs::directory_iterator(file_.parent_path())) files += e.is_regular_file();
  EXPECT_EQ(files, 1) << "temporary files left";
}

TEST_F(TuneFile, MemoryOnlyWritesNothing) {
  Tuner a("", kDevice);
  EXPECT_EQ(a.choose("k", kCands, table({{5, 2.0}, {9, 1.0}, {13, 2.0}})), 9);
  EXPECT_EQ(a.choose("k", kCands, table({})), 9);
  EXPECT_EQ(a.stats().timings, 1);
  EXPECT_FALSE(fs::exists(dir_));
}

// The switch and the size policy: EMBER_AUTOTUNE=0 keeps the heuristic and times nothing; so do
// small problems.
TEST_F(TuneFile, SwitchAndSizePolicy) {
  const char* old = std::getenv("EMBER_AUTOTUNE");
  std::string saved = old ? old : "";
  Tuner a(file_, kDevice);
  auto times = table({{5, 2.0}, {9, 1.0}, {13, 2.0}});
  const int64_t big = gpu::kTuneMinElements;
  ::setenv("EMBER_AUTOTUNE", "0", 1);
  EXPECT_FALSE(gpu::autotune_enabled());
  EXPECT_EQ(gpu::tuned_choice(a, "k", kCands, big, times), 5);
  ::setenv("EMBER_AUTOTUNE", "off", 1);
  EXPECT_FALSE(gpu::autotune_enabled());
  EXPECT_EQ(calls_, 0);
  ::setenv("EMBER_AUTOTUNE", "1", 1);
  EXPECT_TRUE(gpu::autotune_enabled());
  EXPECT_EQ(gpu::tuned_choice(a, "k", kCands, big - 1, times), 5);
  EXPECT_EQ(calls_, 0);
  EXPECT_EQ(gpu::tuned_choice(a, "k", kCands, big, times), 9);
  EXPECT_EQ(calls_, 6);
  // The stored choice is not used while tuning is off.
  ::setenv("EMBER_AUTOTUNE", "0", 1);
  EXPECT_EQ(gpu::tuned_choice(a, "k", kCands, big, times), 5);
  ::unsetenv("EMBER_AUTOTUNE");
  EXPECT_TRUE(gpu::autotune_enabled());
  EXPECT_EQ(gpu::tuned_choice(a, "k", kCands, big, times), 9);
  EXPECT_EQ(a.stats().timings, 1);
  // The modes: unset and "1" defer where kernels compile in the background, "now" does not.
  EXPECT_EQ(gpu::autotune_mode(), gpu::AutotuneMode::Deferred);
  ::setenv("EMBER_AUTOTUNE", "now", 1);
  EXPECT_EQ(gpu::autotune_mode(), gpu::AutotuneMode::Now);
  ::setenv("EMBER_AUTOTUNE", "1", 1);
  EXPECT_EQ(gpu::autotune_mode(), gpu::AutotuneMode::Deferred);
  ::setenv("EMBER_AUTOTUNE", "off", 1);
  EXPECT_EQ(gpu::autotune_mode(), gpu::AutotuneMode::Off);
  EXPECT_TRUE(a.known("k"));
  EXPECT_FALSE(a.known("other"));
  ::unsetenv("EMBER_AUTOTUNE");
  if (old) ::setenv("EMBER_AUTOTUNE", saved.c_str(), 1);
}

TEST_F(TuneFile, DefaultFileBesideTheKernelCache) {
  const char* old = std::getenv("EMBER_KERNEL_CACHE");
  std::string saved = old ? old : "";
  ::setenv("EMBER_KERNEL_CACHE", dir_.c_str(), 1);
  EXPECT_EQ(Tuner::default_file("NVIDIA H200", 90), dir_ / "tune" / "NVIDIA_H200_sm90.txt");
  ::setenv("EMBER_KERNEL_CACHE", "off", 1);
  EXPECT_TRUE(Tuner::default_file("NVIDIA H200", 90).empty());
  if (old)
    ::setenv("EMBER_KERNEL_CACHE", saved.c_str(), 1);
  else
    ::unsetenv("EMBER_KERNEL_CACHE");
}

}  // namespace
