#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/thread_pool.h"

using namespace ember;

TEST(ThreadPool, CoversRangeOnce) {
  std::vector<std::atomic<int>> hits(100000);
  parallel_for(static_cast<int64_t>(hits.size()), 1000, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i) hits[i]++;
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

TEST(ThreadPool, ErrorsReachTheCaller) {
  EXPECT_THROW(parallel_for(100000, 10,
                            [&](int64_t b, int64_t) {
                              if (b > 50000) throw ValueError("boom");
                            }),
               ValueError);
  // the pool still works afterwards
  std::atomic<int64_t> sum{0};
  parallel_for(1000, 10, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 1000);
}

// Back-to-back jobs of different sizes: every chunk of every job runs exactly once (a late
// worker must never take chunks of the next job).
TEST(ThreadPool, BackToBackJobsRunEachChunkOnce) {
  for (int job = 0; job < 20000; ++job) {
    int64_t n = 1 + job % 7;
    std::vector<std::atomic<int>> hits(n);
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      volatile int spin = 0;  // enough work that the workers join in
      for (int k = 0; k < 300; ++k) spin = spin + k;
      for (int64_t i = b; i < e; ++i) hits[i]++;
    });
    for (auto& h : hits) ASSERT_EQ(h.load(), 1) << "job " << job;
  }
}

// n near INT64_MAX: the chunk arithmetic used to overflow and loop forever.
TEST(ThreadPool, RangesNearInt64Max) {
  set_num_threads(2);
  for (int64_t n : {INT64_MAX, INT64_MAX - 1, INT64_MAX / 2 + 1}) {
    for (int64_t grain : {int64_t{1}, int64_t{1} << 15, INT64_MAX / 3}) {
      std::mutex mu;
      std::vector<std::pair<int64_t, int64_t>> runs;
      parallel_for(n, grain, [&](int64_t b, int64_t e) {
        std::lock_guard lk(mu);
        runs.emplace_back(b, e);
      });
      std::sort(runs.begin(), runs.end());
      ASSERT_FALSE(runs.empty());
      EXPECT_EQ(runs.front().first, 0);
      EXPECT_EQ(runs.back().second, n);
      for (size_t i = 0; i + 1 < runs.size(); ++i) EXPECT_EQ(runs[i].second, runs[i + 1].first);
    }
  }
}

// Workers that went to sleep between jobs (the caller paused longer than their spin) wake for
// the next one, and callers on several threads take turns: every item of every job once.
TEST(ThreadPool, JobsAfterPausesAndFromSeveralCallers) {
  set_num_threads(3);
  auto job = [](int64_t n) {
    std::vector<std::atomic<int>> hits(static_cast<size_t>(n));
    parallel_for(n, 1, [&](int64_t b, int64_t e) {
      for (int64_t i = b; i < e; ++i) hits[size_t(i)]++;
    });
    for (auto& h : hits)
      if (h.load() != 1) return false;
    return true;
  };
  for (int round = 0; round < 20; ++round) {
    std::this_thread::sleep_for(std::chrono::milliseconds(2));  // past the workers' spin
    ASSERT_TRUE(job(64 + round)) << "round " << round;
  }
  std::atomic<int> bad{0};
  std::vector<std::thread> callers;
  for (int t = 0; t < 3; ++t)
    callers.emplace_back([&, t] {
      for (int k = 0; k < 2000; ++k)
        if (!job(1 + (k + t) % 9)) ++bad;
    });
  for (auto& c : callers) c.join();
  EXPECT_EQ(bad.load(), 0);
  set_num_threads(2);
}

// A parallel_for inside a chunk of another (a kernel called from a pool job) runs on the
// chunk's thread instead of waiting for the busy pool: it finishes, every item once.
TEST(ThreadPool, NestedParallelForRunsInline) {
  set_num_threads(2);
  std::vector<std::atomic<int>> hits(64 * 1000);
  parallel_for(64, 1, [&](int64_t b, int64_t e) {
    for (int64_t i = b; i < e; ++i)
      parallel_for(1000, 10, [&](int64_t c, int64_t d) {
        for (int64_t j = c; j < d; ++j) hits[size_t(i * 1000 + j)]++;
      });
  });
  for (auto& h : hits) ASSERT_EQ(h.load(), 1);
}

#if defined(__linux__)
#include <sched.h>

// The default thread count follows the affinity mask: a process under `taskset -c 0` (or a
// container's cpuset) that started one thread per CPU of the machine would run them in turns.
TEST(ThreadPool, AvailableCpusFollowTheAffinityMask) {
  cpu_set_t saved;
  ASSERT_EQ(sched_getaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_LE(available_cpus(), CPU_COUNT(&saved));
  int first = 0;
  while (!CPU_ISSET(first, &saved)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  const int n = available_cpus();
  ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
  EXPECT_EQ(n, 1);
  if (CPU_COUNT(&saved) >= 2) {
    int second = first + 1;
    while (!CPU_ISSET(second, &saved)) ++second;
    cpu_set_t two = one;
    CPU_SET(second, &two);
    ASSERT_EQ(sched_setaffinity(0, sizeof(two), &two), 0);
    const int m = available_cpus();
    ASSERT_EQ(sched_setaffinity(0, sizeof(saved), &saved), 0);
    EXPECT_EQ(m, 2);
  }
}
#endif
