// The CPU's strided copies (a transposed or permuted view made dense): every element lands at
// its index, bit for bit, against the index arithmetic itself. 4-byte elements of a 2-d
// transpose take 8 x 8 vector transposes inside 32 x 32 tiles, the rest element by element:
// sizes that are and are not multiples of 8 and 32, NaN payloads and -0, batched transposes,
// a permutation whose last two dims are not swapped, doubles, and expanded (broadcast) views.
#include <gtest/gtest.h>

#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "ember/ember.h"

using namespace ember;

namespace {

// Distinct bit patterns: element i of x is i as a float, every 7th a NaN with payload i, every
// 11th -0.
std::vector<float> patterned(int64_t n) {
  std::vector<float> x(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    float v = float(i) - float(n / 2);
    if (i % 7 == 3) v = std::bit_cast<float>(uint32_t(0x7fc00000u | uint32_t(i)));
    if (i % 11 == 5) v = -0.0f;
    x[size_t(i)] = v;
  }
  return x;
}

void expect_bits(const std::vector<float>& got, const std::vector<float>& want,
                 const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i)
    ASSERT_EQ(std::bit_cast<uint32_t>(got[i]), std::bit_cast<uint32_t>(want[i]))
        << what << " at " << i;
}

TEST(CpuCopy, TransposeMovesEveryElementBitForBit) {
  for (auto [r, c] : {std::pair<int64_t, int64_t>{67, 45},
                      {32, 32},
                      {8, 200},
                      {130, 33},
                      {256, 264},
                      {5, 3},
                      {31, 96}}) {
    const std::vector<float> x = patterned(r * c);
    auto t = Tensor<Cpu, 2>::from_data(TensorData::from<float>(x, {r, c}));
    auto y = t.transpose().reshape<1>({r * c});
    std::vector<float> want(x.size());
    for (int64_t i = 0; i < c; ++i)
      for (int64_t j = 0; j < r; ++j) want[size_t(i * r + j)] = x[size_t(j * c + i)];
    expect_bits(y.to_data().to_vec<float>(), want, std::to_string(r) + "x" + std::to_string(c));
  }
}

TEST(CpuCopy, BatchedTransposesAndOtherPermutations) {
  const std::array<int64_t, 3> dims = {3, 40, 37};
  const int64_t n = dims[0] * dims[1] * dims[2];
  const std::vector<float> x = patterned(n);
  auto t = Tensor<Cpu, 3>::from_data(TensorData::from<float>(x, {dims[0], dims[1], dims[2]}));
  // 0 2 1: a transpose per batch entry; 2 0 1: the source's contiguous dim moves to the front;
  // 1 0 2: rows kept contiguous, their order changed
  for (std::array<int64_t, 3> order : {std::array<int64_t, 3>{0, 2, 1}, {2, 0, 1}, {1, 0, 2}}) {
    std::vector<float> want;
    std::array<int64_t, 3> o{}, src{};  // an output index, and the source index it reads
    for (o[0] = 0; o[0] < dims[size_t(order[0])]; ++o[0])
      for (o[1] = 0; o[1] < dims[size_t(order[1])]; ++o[1])
        for (o[2] = 0; o[2] < dims[size_t(order[2])]; ++o[2]) {
          for (size_t k = 0; k < 3; ++k) src[size_t(order[k])] = o[k];
          want.push_back(x[size_t((src[0] * dims[1] + src[1]) * dims[2] + src[2])]);
        }
    expect_bits(
        t.permute(order).reshape<1>({n}).to_data().to_vec<float>(), want,
        std::to_string(order[0]) + " " + std::to_string(order[1]) + " " + std::to_string(order[2]));
  }
}

TEST(CpuCopy, TransposeOfDoubles) {
  const int64_t r = 45, c = 70;
  std::vector<double> x(size_t(r * c));
  for (size_t i = 0; i < x.size(); ++i) x[i] = double(i) * 0.5 - 7.0;
  auto t = Tensor<Cpu, 2>::from_data(TensorData::from<double>(x, {r, c}));
  const auto got = t.transpose().reshape<1>({r * c}).to_data().to_vec<double>();
  for (int64_t i = 0; i < c; ++i)
    for (int64_t j = 0; j < r; ++j) ASSERT_EQ(got[size_t(i * r + j)], x[size_t(j * c + i)]);
}

}  // namespace

// An expanded (broadcast) view made dense (to_data copies it): a column expanded along the rows
// repeats each value across a row, a row expanded down the columns repeats the row, and one
// value expanded fills the whole (a fill, its source stride 0).
TEST(CpuCopy, ExpandedViewsRepeatTheirValues) {
  const int64_t r = 40, c = 37;
  const std::vector<float> col = patterned(r), row = patterned(c);
  auto tc = Tensor<Cpu, 2>::from_data(TensorData::from<float>(col, {r, 1}));
  auto tr = Tensor<Cpu, 2>::from_data(TensorData::from<float>(row, {1, c}));
  std::vector<float> want_c, want_r;
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j) {
      want_c.push_back(col[size_t(i)]);
      want_r.push_back(row[size_t(j)]);
    }
  expect_bits(tc.expand<2>({r, c}).to_data().to_vec<float>(), want_c, "column");
  expect_bits(tr.expand<2>({r, c}).to_data().to_vec<float>(), want_r, "row");
  // one value everywhere (the gradient of a sum, as a convolution's backward receives it)
  const float nan_payload = std::bit_cast<float>(uint32_t(0x7fc01234u));
  auto one = Tensor<Cpu, 2>::from_data(TensorData::from<float>({nan_payload}, {1, 1}));
  expect_bits(one.expand<2>({r, c}).to_data().to_vec<float>(),
              std::vector<float>(size_t(r * c), nan_payload), "scalar");
}
