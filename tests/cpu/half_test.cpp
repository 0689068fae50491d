// f16 and bf16 elementwise ops and casts on the CPU: contiguous halves go through float a chunk
// at a time (F16C's 8-wide conversions for f16 where the build has them), one operand of a
// binary op may be a single broadcast value. Every result against the op done here in float on
// the same half values and rounded by the scalar conversion (`ember::f16(float)`, checked
// against IEEE's tables in tests/core/dtype_test.cpp), or for the transcendentals against the
// f32 op rounded once, bit for bit (NaN for NaN): sizes around the 8-wide steps, the 512-value
// chunks and the threads' split, values past the halves' range, subnormals, -0, infinities and
// NaNs.
#include <gtest/gtest.h>

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "ember/ember.h"

using namespace ember;

namespace {

using T1 = Tensor<Cpu, 1>;

// n floats: normal values of varied scale, and every 13th a special one.
std::vector<float> sample(int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::uniform_int_distribution<int> scale(-30, 20);
  const float specials[] = {0.0f,  -0.0f,  INFINITY, -INFINITY, NAN,  65504.0f, 65520.0f,
                            1e-7f, -6e-8f, 3e38f,    -1e-40f,   1e5f, 2.5f,     -0.33f};
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[size_t(i)] = i % 13 == 5 ? specials[(i / 13) % std::size(specials)]
                               : std::ldexp(normal(rng), scale(rng));
  }
  return v;
}

template <class H>
std::vector<H> to_half(const std::vector<float>& v) {
  std::vector<H> h(v.size());
  for (size_t i = 0; i < v.size(); ++i) h[i] = H(v[i]);
  return h;
}

template <class H, class Tn>
std::vector<H> values_of(const Tn& t) {
  return t.to_data().template to_vec<H>();
}

// n samples, finite: clamped to [-lim, lim], infinities and NaNs made `fill`.
std::vector<float> finite_sample(int64_t n, uint32_t seed, float lim, float fill) {
  std::vector<float> v = sample(n, seed);
  for (float& x : v) x = std::isfinite(x) ? std::clamp(x, -lim, lim) : fill;
  return v;
}

// "f16 3x77" (the dtype and the sizes of a case, for failure messages)
std::string label(DType dt, std::initializer_list<int64_t> sizes) {
  std::string s(ember::name(dt));
  const char* sep = " ";
  for (int64_t v : sizes) {
    s += sep + std::to_string(v);
    sep = "x";
  }
  return s;
}

template <class H>
void expect_same(const std::vector<H>& got, const std::vector<H>& want, const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < got.size(); ++i) {
    const float g = static_cast<float>(got[i]), w = static_cast<float>(want[i]);
    if (std::isnan(w)) {
      ASSERT_TRUE(std::isnan(g)) << what << " at " << i << ": " << g;
      continue;
    }
    ASSERT_EQ(got[i].bits, want[i].bits) << what << " at " << i << ": " << g << " for " << w;
  }
}

const int64_t kSizes[] = {1, 7, 8, 9, 511, 512, 513, 1031, 40000};

template <class H>
void binary_ops_match() {
  const DType dt = dtype_of<H>();
  using Fn = std::function<float(float, float)>;
  using Op = std::function<T1(const T1&, const T1&)>;
  const std::vector<std::pair<std::string, std::pair<Op, Fn>>> ops = {
      {"add", {[](const T1& a, const T1& b) { return a + b; }, std::plus<float>()}},
      {"sub", {[](const T1& a, const T1& b) { return a - b; }, std::minus<float>()}},
      {"mul", {[](const T1& a, const T1& b) { return a * b; }, std::multiplies<float>()}},
      {"div", {[](const T1& a, const T1& b) { return a / b; }, std::divides<float>()}},
  };
  for (int64_t n : kSizes) {
    const auto a = to_half<H>(sample(n, 1)), b = to_half<H>(sample(n, 2));
    const T1 ta = T1::from_values<H>(a, {n}), tb = T1::from_values<H>(b, {n});
    const T1 one = T1::from_values<H>({b[0]}, {1});
    for (const auto& [name, op] : ops) {
      std::vector<H> both(a.size()), right(a.size()), left(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        both[i] = H(op.second(float(a[i]), float(b[i])));
        right[i] = H(op.second(float(a[i]), float(b[0])));
        left[i] = H(op.second(float(b[0]), float(a[i])));
      }
      const std::string what = name + " " + label(dt, {n});
      expect_same(values_of<H>(op.first(ta, tb)), both, what);
      expect_same(values_of<H>(op.first(ta, one)), right, what + " (a value on the right)");
      expect_same(values_of<H>(op.first(one, ta)), left, what + " (a value on the left)");
    }
    // a temporary operand (its buffer reused for the output), and a transposed (strided) one
    {
      std::vector<H> want(a.size());
      for (size_t i = 0; i < a.size(); ++i) {
        const H sum = H(float(a[i]) + float(b[i]));
        want[i] = H(float(sum) * float(a[i]));
      }
      expect_same(values_of<H>((ta + tb) * ta), want, "in place " + label(dt, {n}));
    }
    // a comparison: bool out of halves
    const auto lower = ta.lower(tb).to_data().template to_vec<bool>();
    for (size_t i = 0; i < a.size(); ++i)
      ASSERT_EQ(lower[i], float(a[i]) < float(b[i])) << "lower n=" << n << " at " << i;
  }
}

// A [r, c] operand against a [r, 1] one (a value per row) and against a transposed view.
template <class H>
void broadcast_and_strided_match() {
  using T2 = Tensor<Cpu, 2>;
  const DType dt = dtype_of<H>();
  for (auto [r, c] : {std::array<int64_t, 2>{1, 1}, {7, 9}, {33, 600}}) {
    const auto a = to_half<H>(sample(r * c, 11)), col = to_half<H>(sample(r, 12));
    const auto at = to_half<H>(sample(c * r, 13));  // stored [c, r], used transposed
    const T2 ta = T2::from_values<H>(a, {r, c}), tcol = T2::from_values<H>(col, {r, 1});
    const T2 tt = T2::from_values<H>(at, {c, r}).transpose();
    std::vector<H> by_row(a.size()), by_view(a.size());
    for (int64_t i = 0; i < r; ++i)
      for (int64_t j = 0; j < c; ++j) {
        const size_t k = size_t(i * c + j);
        by_row[k] = H(float(a[k]) - float(col[size_t(i)]));
        by_view[k] = H(float(a[k]) * float(at[size_t(j * r + i)]));
      }
    const std::string what = label(dt, {r, c});
    expect_same(values_of<H>(ta - tcol), by_row, "a value per row " + what);
    expect_same(values_of<H>(ta * tt), by_view, "a transposed operand " + what);
  }
}

TEST(CpuHalf, F16BroadcastRowsAndStridedOperands) { broadcast_and_strided_match<f16>(); }
TEST(CpuHalf, Bf16BroadcastRowsAndStridedOperands) { broadcast_and_strided_match<bf16>(); }

template <class H>
void unary_ops_and_casts_match() {
  const DType dt = dtype_of<H>();
  for (int64_t n : kSizes) {
    const auto f = sample(n, 3);
    const auto h = to_half<H>(f);
    const T1 th = T1::from_values<H>(h, {n});
    std::vector<H> neg(h.size()), abs(h.size()), square(h.size());
    for (size_t i = 0; i < h.size(); ++i) {
      neg[i] = H(-float(h[i]));
      abs[i] = H(std::fabs(float(h[i])));
      square[i] = H(float(h[i]) * float(h[i]));
    }
    const std::string what = label(dt, {n});
    expect_same(values_of<H>(th.neg()), neg, "neg " + what);
    expect_same(values_of<H>(th.abs()), abs, "abs " + what);
    expect_same(values_of<H>(th.square()), square, "square " + what);
    // casts both ways: floats to the half type rounded as the scalar conversion, and back exact
    const T1 tf = T1::from_values<float>(f, {n});
    expect_same(values_of<H>(tf.cast(dt)), h, "cast from f32 " + what);
    const auto back = th.cast(DType::F32).to_data().template to_vec<float>();
    for (size_t i = 0; i < h.size(); ++i) {
      const float want = float(h[i]);
      if (std::isnan(want))
        ASSERT_TRUE(std::isnan(back[i])) << "cast to f32 " << what << " at " << i;
      else
        ASSERT_EQ(std::bit_cast<uint32_t>(back[i]), std::bit_cast<uint32_t>(want))
            << "cast to f32 " << what << " at " << i;
    }
  }
}

// The vectorized transcendentals on halves: the f32 op (its accuracy against libm is
// cpu_vmath_test's) on the widened values, rounded once, bit for bit.
template <class H>
void transcendentals_match() {
  const DType dt = dtype_of<H>();
  using Op = std::function<T1(const T1&)>;
  const std::vector<std::pair<std::string, Op>> ops = {
      {"exp", [](const T1& t) { return t.exp(); }},
      {"log", [](const T1& t) { return t.log(); }},
      {"tanh", [](const T1& t) { return t.tanh(); }},
      {"sigmoid", [](const T1& t) { return activation::sigmoid(t); }},
      {"erf", [](const T1& t) { return t.erf(); }},
      {"sin", [](const T1& t) { return t.sin(); }},
  };
  for (int64_t n : kSizes) {
    const T1 th = T1::from_values<H>(to_half<H>(sample(n, 4)), {n});
    for (const auto& [name, op] : ops) {
      const std::string what = name + " " + label(dt, {n});
      expect_same(values_of<H>(op(th)), values_of<H>(op(th.cast(DType::F32)).cast(dt)), what);
    }
  }
}

// matmul of halves (no product instruction below AVX-512 BF16 / for f16): the f32 matmul of the
// widened operands, rounded once; a transposed operand widened as it is stored.
template <class H>
void matmul_matches() {
  using T2 = Tensor<Cpu, 2>;
  const DType dt = dtype_of<H>();
  for (auto [m, k, n] : {std::array<int64_t, 3>{1, 1, 1}, {33, 17, 45}, {64, 300, 129}}) {
    auto a = T2::from_values<H>(to_half<H>(sample(m * k, 5)), {m, k});
    auto bt = T2::from_values<H>(to_half<H>(sample(n * k, 6)), {n, k});
    for (auto& t : {std::ref(a), std::ref(bt)})  // no NaN or infinity in the sums
      t.get() = t.get().cast(DType::F32).clamp(-4.0f, 4.0f).cast(dt);
    const T2 b = bt.transpose();  // a view: k x n, stored transposed
    const auto want = values_of<H>(a.cast(DType::F32).matmul(b.cast(DType::F32)).cast(dt));
    const auto got = values_of<H>(a.matmul(b));
    expect_same(got, want, "matmul " + label(dt, {m, k, n}));
  }
}

TEST(CpuHalf, F16MatmulIsTheF32MatmulRoundedOnce) { matmul_matches<f16>(); }
// softmax, log_softmax, gelu and layer_norm of halves: the f32 kernels on the widened operands,
// rounded once (each rounded intermediate would show: a softmax row's sum of rounded exps).
template <class H>
void row_ops_match() {
  using T2 = Tensor<Cpu, 2>;
  const DType dt = dtype_of<H>();
  for (auto [rows, cols] : {std::array<int64_t, 2>{1, 1}, {3, 77}, {64, 1030}}) {
    const T2 x =
        T2::from_values<H>(to_half<H>(finite_sample(rows * cols, 7, 60.0f, 1.0f)), {rows, cols});
    const T2 x32 = x.cast(DType::F32);
    const auto g = Tensor<Cpu, 1>::from_values<H>(to_half<H>(sample(cols, 8)), {cols});
    const auto b = Tensor<Cpu, 1>::from_values<H>(to_half<H>(sample(cols, 9)), {cols});
    const auto clean = [](const Tensor<Cpu, 1>& t) {  // finite weights
      return t.cast(DType::F32).clamp(-3.0f, 3.0f).cast(t.dtype());
    };
    const auto gc = clean(g), bc = clean(b);
    const std::string what = label(dt, {rows, cols});
    const auto half = [](const T2& t) { return values_of<H>(t); };
    expect_same(half(activation::softmax(x, 1)), half(activation::softmax(x32, 1).cast(dt)),
                "softmax " + what);
    expect_same(half(activation::softmax(x, 0)), half(activation::softmax(x32, 0).cast(dt)),
                "softmax over dim 0 " + what);
    expect_same(half(activation::log_softmax(x, 1)), half(activation::log_softmax(x32, 1).cast(dt)),
                "log_softmax " + what);
    expect_same(half(activation::gelu(x)), half(activation::gelu(x32).cast(dt)), "gelu " + what);
    expect_same(half(layer_norm(x, gc, bc)),
                half(layer_norm(x32, gc.cast(DType::F32), bc.cast(DType::F32)).cast(dt)),
                "layer_norm " + what);
  }
}

// Reductions over halves (each block widened at once): max and argmax exactly those of the
// widened values, sums within one half step of the f32 sum of them (summed in another order),
// rows longer than a block (4096) too.
template <class H>
void reductions_match() {
  using T2 = Tensor<Cpu, 2>;
  const DType dt = dtype_of<H>();
  for (auto [rows, cols] : {std::array<int64_t, 2>{1, 1}, {5, 333}, {3, 9000}}) {
    const T2 x =
        T2::from_values<H>(to_half<H>(finite_sample(rows * cols, 10, 8.0f, 0.5f)), {rows, cols});
    const T2 x32 = x.cast(DType::F32);
    const std::string what = label(dt, {rows, cols});
    expect_same(values_of<H>(x.max_dim(1)), values_of<H>(x32.max_dim(1).cast(dt)), "max " + what);
    EXPECT_EQ(x.argmax(1).to_data().template to_vec<int64_t>(),
              x32.argmax(1).to_data().template to_vec<int64_t>())
        << "argmax " << what;
    const auto got = values_of<H>(x.sum_dim(1));
    const auto want = x32.sum_dim(1).to_data().template to_vec<float>();
    for (size_t r = 0; r < got.size(); ++r) {
      const H w = H(want[r]);
      const float step = std::fabs(float(H::from_bits(uint16_t(w.bits + 1))) - float(w));
      EXPECT_LE(std::fabs(float(got[r]) - float(w)), step) << "sum " << what << " row " << r;
    }
  }
}

TEST(CpuHalf, F16ReductionsMatchTheWidenedValues) { reductions_match<f16>(); }
TEST(CpuHalf, Bf16ReductionsMatchTheWidenedValues) { reductions_match<bf16>(); }
TEST(CpuHalf, F16RowOpsAreTheF32KernelsRoundedOnce) { row_ops_match<f16>(); }
TEST(CpuHalf, Bf16RowOpsAreTheF32KernelsRoundedOnce) { row_ops_match<bf16>(); }
TEST(CpuHalf, F16TranscendentalsAreTheF32OpsRoundedOnce) { transcendentals_match<f16>(); }
TEST(CpuHalf, Bf16TranscendentalsAreTheF32OpsRoundedOnce) { transcendentals_match<bf16>(); }
TEST(CpuHalf, F16BinaryOpsMatchFloatRoundedOnce) { binary_ops_match<f16>(); }
TEST(CpuHalf, Bf16BinaryOpsMatchFloatRoundedOnce) { binary_ops_match<bf16>(); }
TEST(CpuHalf, F16UnaryOpsAndCastsMatch) { unary_ops_and_casts_match<f16>(); }
TEST(CpuHalf, Bf16UnaryOpsAndCastsMatch) { unary_ops_and_casts_match<bf16>(); }

}  // namespace
