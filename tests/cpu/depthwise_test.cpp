// The CPU's depthwise convolutions against a loop in doubles: AVX2's 3x3 kernel (read in place,
// rows of 8 positions or more) on rows that are and are not multiples of 8, paddings 0 and 1
// apart on rows and columns, planes one to a few rows high, and several output channels per
// input channel; and the conv2d op with groups, which takes it.
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/ember.h"
#include "tests/support/conv_reference.h"
#include "tests/support/expect_near.h"

using namespace ember;

namespace {

struct Case {
  int64_t n, c_in, per_group, h, w, ph, pw;
  int64_t ho() const { return h + 2 * ph - 2; }
  int64_t wo() const { return w + 2 * pw - 2; }
  std::string name() const {
    return std::to_string(n) + "x" + std::to_string(c_in) + "x" + std::to_string(h) + "x" +
           std::to_string(w) + " x" + std::to_string(per_group) + " pads " + std::to_string(ph) +
           "," + std::to_string(pw);
  }
};

// Calls f(xi, yi, wi) for every product of case c's convolution: the indices into x [n, c_in, h,
// w], y [n, c_out, ho, wo] and w [c_out, 3, 3] of each output position and tap inside the input
// (output channel co reads input channel co / per_group). The forward, its input gradient and
// its weight gradient are sums of these products.
template <class F>
void for_each_product(const Case& c, F&& f) {
  const int64_t c_out = c.c_in * c.per_group;
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t co = 0; co < c_out; ++co)
      for (int64_t i = 0; i < c.ho(); ++i)
        for (int64_t j = 0; j < c.wo(); ++j)
          for (int64_t a = 0; a < 3; ++a)
            for (int64_t b = 0; b < 3; ++b) {
              const int64_t r = i + a - c.ph, q = j + b - c.pw;
              if (r < 0 || r >= c.h || q < 0 || q >= c.w) continue;
              f(size_t(((n * c.c_in + co / c.per_group) * c.h + r) * c.w + q),
                size_t(((n * c_out + co) * c.ho() + i) * c.wo() + j), size_t((co * 3 + a) * 3 + b));
            }
}

// y[n][co][i][j] = sum over a, b of x[n][co / per_group][i + a - ph][j + b - pw] w[co][a][b].
std::vector<double> reference(const Case& c, const std::vector<float>& x,
                              const std::vector<float>& w) {
  std::vector<double> y(size_t(c.n * c.c_in * c.per_group * c.ho() * c.wo()), 0.0);
  for_each_product(c, [&](size_t xi, size_t yi, size_t wi) { y[yi] += double(x[xi]) * w[wi]; });
  return y;
}

void expect_near(const std::vector<float>& got, const std::vector<double>& want,
                 const std::string& what) {
  test::expect_near(got, want, 2e-6 * 9, what);  // 9 products summed
}

const Case kCases[] = {
    {2, 3, 1, 6, 8, 1, 1},   {1, 2, 1, 5, 9, 1, 1},   {1, 4, 1, 3, 16, 1, 1},
    {2, 2, 1, 7, 17, 1, 1},  {1, 3, 1, 4, 24, 1, 1},  {1, 2, 2, 9, 33, 1, 1},
    {2, 5, 1, 12, 56, 1, 1}, {1, 2, 1, 6, 10, 0, 0},  {1, 3, 1, 5, 26, 0, 0},
    {1, 2, 1, 6, 20, 1, 0},  {1, 2, 1, 6, 20, 0, 1},  {1, 3, 3, 1, 12, 1, 1},
    {1, 2, 1, 2, 40, 1, 1},  {3, 1, 8, 28, 28, 0, 0},
};

}  // namespace

TEST(CpuDepthwise, Avx2KernelMatchesALoopInDoubles) {
  if (cpu::cpu_isa() < cpu::CpuIsa::Avx2) GTEST_SKIP() << "this CPU lacks AVX2";
  for (const Case& c : kCases) {
    cpu::Geom g;
    g.in[1] = c.h, g.in[2] = c.w, g.out[1] = c.ho(), g.out[2] = c.wo();
    g.k[1] = g.k[2] = 3;
    g.p[1] = c.ph, g.p[2] = c.pw;
    ASSERT_TRUE(cpu::depthwise3x3_avx2_fits(g)) << c.name();
    const int64_t c_out = c.c_in * c.per_group;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 31 + c.w));
    auto w = test::uniform_floats(size_t(c_out * 9), uint32_t(c.w + 7));
    std::vector<float> y(size_t(c.n * c_out * c.ho() * c.wo()), NAN);
    cpu::depthwise3x3_avx2(x.data(), w.data(), y.data(), c.n, c.c_in, c.per_group, g);
    expect_near(y, reference(c, x, w), c.name());
  }
}

TEST(CpuDepthwise, TakenOnlyWhereItApplies) {
  cpu::Geom g;
  g.in[1] = g.in[2] = g.out[1] = g.out[2] = 12;
  g.k[1] = g.k[2] = 3;
  g.p[1] = g.p[2] = 1;
  EXPECT_EQ(cpu::depthwise3x3_avx2_fits(g), cpu::cpu_isa() >= cpu::CpuIsa::Avx2);
  cpu::Geom narrow = g;
  narrow.in[2] = narrow.out[2] = 7;  // rows under a vector
  EXPECT_FALSE(cpu::depthwise3x3_avx2_fits(narrow));
  cpu::Geom strided = g;
  strided.s[2] = 2;
  strided.out[2] = 6;
  EXPECT_FALSE(cpu::depthwise3x3_avx2_fits(strided));
  cpu::Geom padded = g;
  padded.p[2] = 2;
  padded.out[2] = 14;
  EXPECT_FALSE(cpu::depthwise3x3_avx2_fits(padded));
  cpu::Geom five = g;
  five.k[1] = five.k[2] = 5;
  five.out[1] = five.out[2] = 10;
  EXPECT_FALSE(cpu::depthwise3x3_avx2_fits(five));
}

TEST(CpuDepthwise, TheGroupedConvOpMatches) {
  // conv2d with groups = channels (and twice as many outputs), on every path the CPU has.
  for (const Case& c : kCases) {
    const int64_t c_out = c.c_in * c.per_group;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 13 + c.w));
    auto w = test::uniform_floats(size_t(c_out * 9), uint32_t(c.w + 3));
    auto tx = Tensor<Cpu, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w}));
    auto tw = Tensor<Cpu, 4>::from_data(TensorData::from<float>(w, {c_out, 1, 3, 3}));
    auto y = conv2d(tx, tw, {.padding = {c.ph, c.pw}, .groups = c.c_in});
    expect_near(y.to_data().to_vec<float>(), reference(c, x, w), c.name());
  }
}

TEST(CpuDepthwise, TheTransposedConvOpMatches) {
  // conv_transpose2d with groups = channels (a depthwise conv's input gradient): with padding 1
  // it is the depthwise conv of its input with the windows turned around (AVX2's kernel where
  // the rows are 8 or more); with padding 0, and with a row of padding 1 and a column of 0 or
  // the other way round, it keeps the scatter loops. dx[r][q] = sum of gy[i][j] w[a][b] over
  // r = i + a - ph, q = j + b - pw.
  for (const Case& c : kCases) {
    if (c.per_group != 1) continue;
    auto gy = test::uniform_floats(size_t(c.n * c.c_in * c.ho() * c.wo()), uint32_t(c.w * 7));
    auto wt = test::uniform_floats(size_t(c.c_in * 9), uint32_t(c.h + 5));
    std::vector<double> want(size_t(c.n * c.c_in * c.h * c.w), 0.0);
    for_each_product(c,
                     [&](size_t xi, size_t yi, size_t wi) { want[xi] += double(gy[yi]) * wt[wi]; });
    auto tg = Tensor<Cpu, 4>::from_data(TensorData::from<float>(gy, {c.n, c.c_in, c.ho(), c.wo()}));
    auto tw = Tensor<Cpu, 4>::from_data(TensorData::from<float>(wt, {c.c_in, 1, 3, 3}));
    auto dx = conv_transpose2d(tg, tw, {.padding = {c.ph, c.pw}, .groups = c.c_in});
    expect_near(dx.to_data().to_vec<float>(), want, c.name() + " transposed");
  }
}

TEST(CpuDepthwise, TheWeightGradientMatches) {
  // Through Autodiff<Cpu>: the gradient of sum(conv2d(x, w, groups = channels) * gy) with
  // respect to w, dw[co][a][b] = sum of gy[co][i][j] x[co / per_group][i + a - ph][j + b - pw],
  // on the kernel's cases (rows whose last vector overlaps the one before count each position
  // once) and several outputs per input channel.
  using AD = Autodiff<Cpu>;
  for (const Case& c : kCases) {
    const int64_t c_out = c.c_in * c.per_group;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 3 + c.w));
    auto w = test::uniform_floats(size_t(c_out * 9), uint32_t(c.w + 11));
    auto gy = test::uniform_floats(size_t(c.n * c_out * c.ho() * c.wo()), uint32_t(c.h + 17));
    std::vector<double> want(size_t(c_out * 9), 0.0);
    for_each_product(c,
                     [&](size_t xi, size_t yi, size_t wi) { want[wi] += double(gy[yi]) * x[xi]; });
    auto tx = Tensor<AD, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w}));
    auto tw = Tensor<AD, 4>::from_data(TensorData::from<float>(w, {c_out, 1, 3, 3})).require_grad();
    auto tg = Tensor<AD, 4>::from_data(TensorData::from<float>(gy, {c.n, c_out, c.ho(), c.wo()}));
    auto grads =
        (conv2d(tx, tw, {.padding = {c.ph, c.pw}, .groups = c.c_in}) * tg).sum().backward();
    const auto got = tw.grad(grads)->to_data().to_vec<float>();
    ASSERT_EQ(got.size(), want.size()) << c.name();
    int64_t bad = 0;
    const double tol = 2e-6 * double(c.n * c.ho() * c.wo());
    for (size_t i = 0; i < want.size(); ++i)
      if (!(std::abs(double(got[i]) - want[i]) <= tol) && bad++ < 5)
        ADD_FAILURE() << c.name() << " weight gradient at " << i << ": " << got[i] << " vs "
                      << want[i];
    EXPECT_EQ(bad, 0) << c.name();
  }
}
