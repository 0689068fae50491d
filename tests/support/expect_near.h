// Element-wise comparison of a kernel's floats (or doubles) with an oracle's doubles, for the CPU
// kernel tests: every element within `tol`, the first five misses reported with their index.
//
//   test::expect_near(y.to_data().to_vec<float>(), want, 1e-5, "conv2d forward");
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

namespace ember::test {

template <class T>
void expect_near(const std::vector<T>& got, const std::vector<double>& want, double tol,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::abs(double(got[i]) - want[i]) <= tol) && bad++ < 5)
      ADD_FAILURE() << what << " at " << i << ": " << got[i] << " vs " << want[i];
  EXPECT_EQ(bad, 0) << what;
}

}  // namespace ember::test
