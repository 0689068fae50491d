// The CPU's vectorized float math (cpu/vmath.h) against double-precision libm rounded to
// float, over dense sweeps: the largest error in ulps stays within each function's stated
// bound, and special values (zeros, infinities, NaN, subnormals) come out as IEEE says.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <string>
#include <vector>

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/vmath.h"

using namespace ember::cpu;

namespace {

// Distance in representable floats between a and b (finite, same sign or zero).
double ulps(float got, double want) {
  float w = static_cast<float>(want);
  if (got == w) return 0;
  if (std::isinf(w) || std::isinf(got)) return std::isinf(w) && got == w ? 0 : 1e9;
  // The spacing of floats at the reference's magnitude.
  int e;
  std::frexp(w == 0 ? std::numeric_limits<float>::min() : w, &e);
  double ulp = std::ldexp(1.0, std::max(e - 24, -149));
  return std::abs(double(got) - want) / ulp;
}

struct Result {
  double max_ulps = 0;
  float worst = 0;
};

// The worst of every instruction-set level the machine has (8 lanes, and 16 with AVX-512).
Result sweep(const std::vector<float>& xs, void (*f)(const float*, float*, int64_t),
             double (*ref)(double)) {
  std::vector<double> want(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) want[i] = ref(double(xs[i]));
  Result r;
  for (CpuIsa isa : {CpuIsa::Portable, CpuIsa::Avx512}) {
    if (isa > cpu_isa_available()) continue;
    set_cpu_isa_cap(isa);
    std::vector<float> y(xs.size());
    f(xs.data(), y.data(), int64_t(xs.size()));
    for (size_t i = 0; i < xs.size(); ++i) {
      double u = ulps(y[i], want[i]);
      if (u > r.max_ulps) r = {u, xs[i]};
    }
  }
  set_cpu_isa_cap(std::nullopt);
  return r;
}

// Floats in [lo, hi], every `every`-th representable one, in order of value (a negative
// float's bit pattern counts down to -0).
std::vector<float> dense(float lo, float hi, int64_t every) {
  auto key = [](float f) {
    uint32_t b;
    std::memcpy(&b, &f, 4);
    return (b & 0x80000000u) ? -int64_t(b & 0x7fffffffu) : int64_t(b);
  };
  std::vector<float> v;
  for (int64_t k = key(lo); k <= key(hi); k += every) {
    uint32_t b = k < 0 ? (0x80000000u | uint32_t(-k)) : uint32_t(k);
    float f;
    std::memcpy(&f, &b, 4);
    v.push_back(f);
  }
  return v;
}

}  // namespace

TEST(VectorMath, LogWithinTwoUlpsOfEveryPositiveFloat) {
  std::vector<float> xs = dense(1e-45f, 3.4e38f, 97);  // subnormals to the largest floats
  Result r = sweep(xs, vmath::log_f32, [](double x) { return std::log(x); });
  EXPECT_LE(r.max_ulps, 2.0) << "at " << r.worst;
  RecordProperty("log_max_ulps", std::to_string(r.max_ulps));
  EXPECT_GT(xs.size(), 10000000u);
  float special[] = {0.0f, -0.0f, -1.0f, INFINITY, -INFINITY, NAN, 1.0f};
  float out[7];
  vmath::log_f32(special, out, 7);
  EXPECT_EQ(out[0], -INFINITY);
  EXPECT_EQ(out[1], -INFINITY);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], INFINITY);
  EXPECT_TRUE(std::isnan(out[4]));
  EXPECT_TRUE(std::isnan(out[5]));
  EXPECT_EQ(out[6], 0.0f);
}

TEST(VectorMath, ExpWithinTwoUlpsOverTheNormalRange) {
  // exp(x) is a normal float for x in [-87.3, 88.7].
  Result r = sweep(dense(-87.3f, 88.7f, 131), vmath::exp_f32, [](double x) { return std::exp(x); });
  EXPECT_LE(r.max_ulps, 2.0) << "at " << r.worst;
  RecordProperty("exp_max_ulps", std::to_string(r.max_ulps));
  float special[] = {-INFINITY, INFINITY, NAN, 100.0f, 0.0f};
  float out[5];
  vmath::exp_f32(special, out, 5);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_EQ(out[1], INFINITY);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], INFINITY);
  EXPECT_EQ(out[4], 1.0f);
}

TEST(VectorMath, ExpShiftedWithinTwoUlpsBelowItsShift) {
  // exp(x - m) for x at most m (a softmax's row maximum): the variant without the overflow
  // checks, over every level, with m = 0 so that x - m is exact.
  Result r = sweep(
      dense(-103.9f, 0.0f, 131),
      [](const float* x, float* y, int64_t n) { vmath::exp_shifted_f32(x, y, n, 0.0f); },
      [](double x) { return std::exp(x); });
  EXPECT_LE(r.max_ulps, 2.0) << "at " << r.worst;
  RecordProperty("exp_shifted_max_ulps", std::to_string(r.max_ulps));
  // A row's maximum gives 1, -inf (a masked score) 0, NaN NaN; 8 and 16 lanes and the tail.
  std::vector<float> x(37, 3.5f), y(37);
  x[0] = -INFINITY, x[9] = NAN, x[20] = -INFINITY, x[36] = NAN;
  vmath::exp_shifted_f32(x.data(), y.data(), 37, 3.5f);
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::isnan(x[i]))
      EXPECT_TRUE(std::isnan(y[i])) << i;
    else
      EXPECT_EQ(y[i], std::isinf(x[i]) ? 0.0f : 1.0f) << i;
  }
}

TEST(VectorMath, TanhAndSigmoidWithinBoundsEverywhere) {
  std::vector<float> xs = dense(-20.0f, 20.0f, 997);
  Result t = sweep(xs, vmath::tanh_f32, [](double x) { return std::tanh(x); });
  EXPECT_LE(t.max_ulps, 4.0) << "tanh at " << t.worst;
  Result s = sweep(xs, vmath::sigmoid_f32, [](double x) { return 1.0 / (1.0 + std::exp(-x)); });
  EXPECT_LE(s.max_ulps, 4.0) << "sigmoid at " << s.worst;
  RecordProperty("tanh_max_ulps", std::to_string(t.max_ulps));
  RecordProperty("sigmoid_max_ulps", std::to_string(s.max_ulps));
}

TEST(VectorMath, Log1pWithinThreeUlpsFromMinusOneToTheLargestFloats) {
  std::vector<float> xs = dense(-0.99999994f, 3.4e38f, 211);  // crosses tiny |x| on both sides
  Result r = sweep(xs, vmath::log1p_f32, [](double x) { return std::log1p(x); });
  EXPECT_LE(r.max_ulps, 3.0) << "at " << r.worst;
  RecordProperty("log1p_max_ulps", std::to_string(r.max_ulps));
  float special[] = {0.0f, -0.0f, -1.0f, -2.0f, INFINITY, NAN, 1e-30f};
  float out[7];
  vmath::log1p_f32(special, out, 7);
  EXPECT_EQ(out[0], 0.0f);
  EXPECT_TRUE(std::signbit(out[1]));
  EXPECT_EQ(out[2], -INFINITY);
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_EQ(out[4], INFINITY);
  EXPECT_TRUE(std::isnan(out[5]));
  EXPECT_EQ(out[6], 1e-30f);
}

TEST(VectorMath, ErfAndGeluWithinBoundsOverTheirRange) {
  std::vector<float> xs = dense(-12.0f, 12.0f, 67);
  Result e = sweep(xs, vmath::erf_f32, [](double x) { return std::erf(x); });
  EXPECT_LE(e.max_ulps, 3.0) << "erf at " << e.worst;
  // gelu down to x = -14, where it is about 1e-44 (its values below are subnormal or 0).
  std::vector<float> gs = dense(-14.0f, 12.0f, 67);
  Result g =
      sweep(gs, vmath::gelu_f32, [](double x) { return 0.5 * x * std::erfc(-x / std::sqrt(2.0)); });
  EXPECT_LE(g.max_ulps, 6.0) << "gelu at " << g.worst;
  RecordProperty("erf_max_ulps", std::to_string(e.max_ulps));
  RecordProperty("gelu_max_ulps", std::to_string(g.max_ulps));
  float special[] = {INFINITY, -INFINITY, NAN, 0.0f, -100.0f};
  float out[5];
  vmath::erf_f32(special, out, 5);
  EXPECT_EQ(out[0], 1.0f);
  EXPECT_EQ(out[1], -1.0f);
  EXPECT_TRUE(std::isnan(out[2]));
  EXPECT_EQ(out[3], 0.0f);
  vmath::gelu_f32(special, out, 5);
  EXPECT_EQ(out[0], INFINITY);
  EXPECT_EQ(out[4], 0.0f);
  EXPECT_TRUE(std::isnan(out[2]));
}

TEST(VectorMath, SinAndCosWithinTwoUlpsAndLibmPastTheReductionRange) {
  std::vector<float> xs = dense(-8192.0f, 8192.0f, 101);
  Result s = sweep(xs, vmath::sin_f32, [](double x) { return std::sin(x); });
  Result c = sweep(xs, vmath::cos_f32, [](double x) { return std::cos(x); });
  // Near a zero of sin or cos an ulp of the result is tiny: there the error is bounded
  // against the argument's own rounding instead (the absolute error stays under 2^-24).
  EXPECT_LE(s.max_ulps, 2.0) << "sin at " << s.worst;
  EXPECT_LE(c.max_ulps, 2.0) << "cos at " << c.worst;
  RecordProperty("sin_max_ulps", std::to_string(s.max_ulps));
  RecordProperty("cos_max_ulps", std::to_string(c.max_ulps));
  float big[] = {1e5f, -3e7f, 1e38f, INFINITY, NAN, 0.0f, -0.0f, 8192.5f, 9000.25f};
  float out[9];
  vmath::sin_f32(big, out, 9);
  for (int i : {0, 1, 2, 7, 8}) EXPECT_EQ(out[i], float(std::sin(double(big[i])))) << big[i];
  EXPECT_TRUE(std::isnan(out[3]));
  EXPECT_TRUE(std::isnan(out[4]));
  EXPECT_EQ(out[5], 0.0f);
  vmath::cos_f32(big, out, 9);
  for (int i : {0, 1, 2, 7, 8}) EXPECT_EQ(out[i], float(std::cos(double(big[i])))) << big[i];
  EXPECT_EQ(out[5], 1.0f);
}

// pow over dense positive bases (subnormals to the largest floats) against pow in double, at
// exponents that keep the result anywhere from float's subnormals past its largest (overflow
// to inf, underflow to 0 and subnormals checked as such); an array of exponents and a single
// one; and the special cases (bases <= 0, infinities, NaN) exactly as libm's powf gives them.
TEST(VectorMath, PowWithinOneUlpAndLibmsSpecialCases) {
  const std::vector<float> xs = dense(1e-45f, 3.4e38f, 4099);
  const float exponents[] = {0.0f,  1.0f,   -1.0f,  2.0f,  0.5f,    -0.5f, 3.0f,  1.0f / 3,
                             7.25f, -2.75f, 0.013f, 31.5f, -100.0f, 1e-7f, 150.0f};
  double worst = 0;
  float worst_x = 0, worst_y = 0;
  for (CpuIsa isa : {CpuIsa::Portable, CpuIsa::Avx512}) {
    if (isa > cpu_isa_available()) continue;
    set_cpu_isa_cap(isa);
    std::vector<float> ys(xs.size()), out(xs.size()), out1(xs.size());
    for (float e : exponents) {
      std::fill(ys.begin(), ys.end(), e);
      vmath::pow_f32(xs.data(), ys.data(), 1, out.data(), int64_t(xs.size()));
      vmath::pow_f32(xs.data(), &e, 0, out1.data(), int64_t(xs.size()));
      for (size_t i = 0; i < xs.size(); ++i) {
        const double want = std::pow(double(xs[i]), double(e));
        const double u = ulps(out[i], want);
        if (u > worst) worst = u, worst_x = xs[i], worst_y = e;
        ASSERT_EQ(out[i], out1[i]) << xs[i] << "^" << e;  // one exponent for all: the same
      }
    }
  }
  set_cpu_isa_cap(std::nullopt);
  EXPECT_LE(worst, 1.0) << "at " << worst_x << "^" << worst_y;
  RecordProperty("pow_max_ulps", std::to_string(worst));

  const float bases[] = {0.0f, -0.0f, -2.0f, -8.0f, INFINITY, -INFINITY, NAN, 1.0f, 2.0f, 0.5f};
  const float pows[] = {0.0f, -0.0f, 1.0f,     -1.0f,     2.0f, 3.0f,
                        0.5f, -3.0f, INFINITY, -INFINITY, NAN,  1e30f};
  std::vector<float> x, y;
  for (float b : bases)
    for (float p : pows) x.push_back(b), y.push_back(p);
  std::vector<float> out(x.size());
  vmath::pow_f32(x.data(), y.data(), 1, out.data(), int64_t(x.size()));
  for (size_t i = 0; i < x.size(); ++i) {
    const float want = std::pow(x[i], y[i]);
    if (std::isnan(want)) {
      EXPECT_TRUE(std::isnan(out[i])) << x[i] << "^" << y[i];
    } else {
      EXPECT_EQ(out[i], want) << x[i] << "^" << y[i];
      EXPECT_EQ(std::signbit(out[i]), std::signbit(want)) << x[i] << "^" << y[i];
    }
  }
}
