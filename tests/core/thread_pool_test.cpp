#include <gtest/gtest.h>

#include <atomic>
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
  EXPECT_THROW(parallel_for(100000, 10, [&](int64_t b, int64_t) {
                 if (b > 50000) throw ValueError("boom");
               }),
               ValueError);
  // the pool still works afterwards
  std::atomic<int64_t> sum{0};
  parallel_for(1000, 10, [&](int64_t b, int64_t e) { sum += e - b; });
  EXPECT_EQ(sum.load(), 1000);
}
