// Random property cases: random shapes (rank 0 to 4, zero-size dims, broadcast dims) and
// non-contiguous views, checked against naive reference loops written here in double.
#include <gtest/gtest.h>

#include <random>

#include "ember/ember.h"
#include "ember/nn/loss.h"

namespace ember {
namespace {

using B = Dispatch;
using T3 = Tensor<B, 3>;

std::mt19937_64 rng_(1234);

int64_t rand_int(int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
}

Shape random_shape(size_t rank, bool allow_zero) {
  Dims d;
  for (size_t i = 0; i < rank; ++i) d.push_back(rand_int(allow_zero ? 0 : 1, 5));
  return Shape(d);
}

std::vector<double> values(const T3& t) { return t.to_data().to_vec<double>(); }

// The element of a row-major [s0, s1, s2] buffer at (i, j, k), broadcasting size-1 dims.
double at(const std::vector<double>& v, const Shape& s, int64_t i, int64_t j, int64_t k) {
  i = s[0] == 1 ? 0 : i;
  j = s[1] == 1 ? 0 : j;
  k = s[2] == 1 ? 0 : k;
  return v[(i * s[1] + j) * s[2] + k];
}

TEST(Property, BroadcastBinaryMatchesNaive) {
  for (int trial = 0; trial < 200; ++trial) {
    Shape out = random_shape(3, trial % 10 == 0);
    Shape sa = out, sb = out;
    for (size_t d = 0; d < 3; ++d) {
      if (rand_int(0, 2) == 0) sa[d] = 1;
      if (rand_int(0, 2) == 0) sb[d] = 1;
    }
    auto a = T3::random(sa, Distribution::uniform(-2, 2));
    // b is a permuted (non-contiguous) view holding shape sb
    auto bt = T3::random({sb[2], sb[1], sb[0]}, Distribution::uniform(-2, 2));
    auto b = bt.permute({2, 1, 0});
    auto va = values(a), vb = values(b);
    Shape so = broadcast_shapes(sa, sb);
    for (auto [code, fn] : std::vector<std::pair<int, double (*)(double, double)>>{
             {0, [](double x, double y) { return x + y; }},
             {1, [](double x, double y) { return x * y; }},
             {2, [](double x, double y) { return std::max(x, y); }}}) {
      T3 r = code == 0 ? a + b : code == 1 ? a * b : a.max_pair(b);
      ASSERT_EQ(r.shape(), so);
      auto vr = values(r);
      for (int64_t i = 0; i < so[0]; ++i)
        for (int64_t j = 0; j < so[1]; ++j)
          for (int64_t k = 0; k < so[2]; ++k) {
            double want = static_cast<float>(fn(at(va, sa, i, j, k), at(vb, sb, i, j, k)));
            ASSERT_NEAR(vr[(i * so[1] + j) * so[2] + k], want, 1e-5)
                << "trial " << trial << " op " << code << " " << sa.to_string() << " "
                << sb.to_string();
          }
    }
  }
}

TEST(Property, ReductionsMatchNaive) {
  for (int trial = 0; trial < 200; ++trial) {
    Shape s = random_shape(3, false);
    auto base = T3::random({s[1], s[0], s[2]}, Distribution::uniform(-3, 3));
    auto x = trial % 2 ? base.swap_dims(0, 1) : base.swap_dims(0, 1).add_scalar(0.0);
    auto v = values(x);
    int64_t dim = rand_int(-3, 2), d = dim < 0 ? dim + 3 : dim;
    auto sum = values(x.sum_dim(dim)), mx = values(x.max_dim(dim));
    auto am = x.argmax(dim).to_data().to_vec<int64_t>();
    Dims os = s.dims();
    os[d] = 1;
    for (int64_t i = 0; i < os[0]; ++i)
      for (int64_t j = 0; j < os[1]; ++j)
        for (int64_t k = 0; k < os[2]; ++k) {
          double acc = 0, best = -INFINITY;
          int64_t best_at = 0;
          for (int64_t r = 0; r < s[d]; ++r) {
            int64_t ii = d == 0 ? r : i, jj = d == 1 ? r : j, kk = d == 2 ? r : k;
            double e = v[(ii * s[1] + jj) * s[2] + kk];
            acc += e;
            if (e > best) best = e, best_at = r;
          }
          int64_t o = (i * os[1] + j) * os[2] + k;
          ASSERT_NEAR(sum[o], acc, 1e-4) << trial;
          ASSERT_EQ(mx[o], best) << trial;
          ASSERT_EQ(am[o], best_at) << trial;
        }
  }
}

// Long float and double sums: the CPU reads several rows, or several parts of one long run,
// side by side, each in 4096-element blocks, and cuts long columns' sums among the threads;
// lengths that leave a short tail everywhere.
TEST(Property, LongSumsMatchDouble) {
  for (DType dt : {DType::F32, DType::F64}) {
    for (int64_t cols : {int64_t{1}, int64_t{4095}, int64_t{16384}, int64_t{70001}}) {
      const int64_t rows = 7;
      std::uniform_real_distribution<double> u(-1, 1);
      std::vector<double> v(static_cast<size_t>(rows * cols));
      for (double& e : v) e = dt == DType::F32 ? double(float(u(rng_))) : u(rng_);
      auto x =
          Tensor<B, 2>::from_data(TensorData::from<double>(v, Shape({rows, cols})).convert(dt));
      const auto by_row = x.sum_dim(1).to_data().to_vec<double>();
      const double all = x.sum().to_data().to_vec<double>()[0];
      const auto column = x.reshape<2>({rows * cols, 1}).sum_dim(0).to_data().to_vec<double>();
      const auto by_col = x.sum_dim(0).to_data().to_vec<double>();
      for (int64_t c = 0; c < cols; ++c) {
        long double want = 0;
        for (int64_t r = 0; r < rows; ++r) want += v[static_cast<size_t>(r * cols + c)];
        ASSERT_NEAR(by_col[static_cast<size_t>(c)], double(want), 1e-5) << cols << " " << c;
      }
      const double tol = dt == DType::F32 ? 2e-4 : 1e-9;
      long double total = 0;
      for (int64_t r = 0; r < rows; ++r) {
        long double want = 0;
        for (int64_t c = 0; c < cols; ++c) want += v[static_cast<size_t>(r * cols + c)];
        total += want;
        ASSERT_NEAR(by_row[static_cast<size_t>(r)], double(want), tol) << cols << " " << r;
      }
      EXPECT_NEAR(all, double(total), tol * rows) << cols;
      EXPECT_NEAR(column[0], double(total), tol * rows) << cols;
    }
  }
}

TEST(Property, ViewsMatchNaive) {
  for (int trial = 0; trial < 200; ++trial) {
    Shape s = random_shape(3, trial % 7 == 0);
    auto x = T3::random(s, Distribution::uniform(-1, 1));
    auto v = values(x);
    // a random slice with steps, then a flip, then a reshape to one dim
    std::vector<Slice> sl;
    std::vector<int64_t> st(3), sp(3), n(3);
    for (int d = 0; d < 3; ++d) {
      st[d] = rand_int(0, std::max<int64_t>(0, s[d] - 1));
      sp[d] = rand_int(1, 3);
      int64_t end = rand_int(st[d], s[d]);
      n[d] = end > st[d] ? (end - st[d] + sp[d] - 1) / sp[d] : 0;
      sl.emplace_back(st[d], end, sp[d]);
    }
    auto y = x.slice(sl).flip({1}).reshape<1>({-1});
    auto vy = values(y.reshape<3>({1, 1, -1}));
    ASSERT_EQ(static_cast<int64_t>(vy.size()), n[0] * n[1] * n[2]);
    size_t at_ = 0;
    for (int64_t i = 0; i < n[0]; ++i)
      for (int64_t j = n[1]; j-- > 0;)
        for (int64_t k = 0; k < n[2]; ++k) {
          double want =
              v[((st[0] + i * sp[0]) * s[1] + st[1] + j * sp[1]) * s[2] + st[2] + k * sp[2]];
          ASSERT_EQ(vy[at_++], want) << trial;
        }
  }
}

TEST(Property, MatmulMatchesNaive) {
  for (int trial = 0; trial < 50; ++trial) {
    int64_t b = rand_int(1, 3), m = rand_int(0, 9), k = rand_int(0, 9), n = rand_int(0, 9);
    auto x = T3::random({b, m, k}, Distribution::uniform(-1, 1));
    auto y = T3::random({1, n, k}, Distribution::uniform(-1, 1)).transpose();  // [1, k, n] view
    auto vx = values(x), vy = values(y), vr = values(x.matmul(y));
    for (int64_t bi = 0; bi < b; ++bi)
      for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < n; ++j) {
          double acc = 0;
          for (int64_t p = 0; p < k; ++p) acc += vx[(bi * m + i) * k + p] * vy[p * n + j];
          ASSERT_NEAR(vr[(bi * m + i) * n + j], acc, 1e-4) << trial;
        }
  }
}

TEST(Property, RandomIsSeededAndBackendIndependent) {
  seed(99);
  auto a = T3::random({2, 3, 4}, Distribution::normal(0, 1));
  seed(99);
  auto b = T3::random({2, 3, 4}, Distribution::normal(0, 1));
  EXPECT_EQ(a.to_data(), b.to_data());
  // moments of a large sample
  auto u = Tensor<B, 1>::random({200000}, Distribution::uniform(2, 4));
  EXPECT_NEAR(u.mean().into_scalar(), 3.0, 0.01);
  auto g = Tensor<B, 1>::random({200000}, Distribution::normal(1, 2));
  EXPECT_NEAR(g.mean().into_scalar(), 1.0, 0.02);
  EXPECT_NEAR(g.var(0).sqrt().into_scalar(), 2.0, 0.02);
  auto p = Tensor<B, 1>::random({200000}, Distribution::bernoulli(0.3));
  EXPECT_NEAR(p.mean().into_scalar(), 0.3, 0.005);
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// The vectorized f32 exp/sigmoid/tanh against the C library in double, over a wide range
// including overflow, underflow, subnormal results and NaN.
TEST(Property, VectorizedTranscendentalsMatchLibm) {
  std::vector<float> xs;
  for (int i = -200000; i <= 200000; ++i) xs.push_back(static_cast<float>(i) * 5.5e-4f);
  for (float v : {-105.0f, -103.9f, -95.0f, -87.5f, 88.7f, 88.8f, 1e-30f, -1e-30f, 0.0f})
    xs.push_back(v);
  xs.push_back(NAN);
  auto x = Tensor<Cpu, 1>::from_values(xs, Shape{int64_t(xs.size())});
  auto e = x.exp().to_vec<float>(), s = x.sigmoid().to_vec<float>(), t = x.tanh().to_vec<float>();
  for (size_t i = 0; i < xs.size(); ++i) {
    double v = xs[i];
    auto close = [](double got, double exact) {
      double want = static_cast<float>(exact);  // the correctly rounded float result
      if (std::isnan(want)) return std::isnan(got);
      if (std::isinf(want)) return got == want;
      return std::abs(got - want) <= 3e-7 * std::abs(want) + 1e-38;
    };
    ASSERT_TRUE(close(e[i], std::exp(v))) << "exp(" << v << ") = " << e[i];
    ASSERT_TRUE(close(s[i], 1 / (1 + std::exp(-v)))) << "sigmoid(" << v << ") = " << s[i];
    if (std::isnan(v)) {
      ASSERT_TRUE(std::isnan(t[i]));
      continue;
    }
    ASSERT_NEAR(t[i], std::tanh(v), 4e-7 * std::abs(std::tanh(v)) + 1e-38) << "tanh(" << v << ")";
  }
}

}  // namespace
}  // namespace ember

namespace ember {
namespace {

// softmax over rows whose logits lie 2000 apart, the largest anywhere in the row (a vector's
// lanes, the row's tail): a max found wrong by more than ~88 overflows exp or zeroes the row.
// A row of all -inf gives NaN (0 / 0, as PyTorch), a NaN spreads over its row.
TEST(Property, SoftmaxOfFarApartLogitsMatchesLongDouble) {
  using T2 = Tensor<Dispatch, 2>;
  std::mt19937_64 gen(11);
  for (int64_t cols : {int64_t{5}, int64_t{16}, int64_t{37}, int64_t{1000}}) {
    const int64_t rows = 11;
    std::vector<float> x(static_cast<size_t>(rows * cols));
    for (auto& v : x) v = static_cast<float>(std::uniform_real_distribution<>(-1000, 900)(gen));
    for (int64_t r = 0; r < rows; ++r)  // the max at column (r * 7) % cols
      x[static_cast<size_t>(r * cols + r * 7 % cols)] = 1000.0f;
    for (int64_t c = 0; c < cols; ++c) x[static_cast<size_t>(9 * cols + c)] = -INFINITY;
    x[static_cast<size_t>(10 * cols + cols - 1)] = NAN;
    auto got = activation::softmax(T2::from_values(x, {rows, cols}), 1).to_data().to_vec<float>();
    for (int64_t r = 0; r < rows; ++r) {
      long double m = -INFINITY, sum = 0;
      for (int64_t c = 0; c < cols; ++c) m = std::max<long double>(m, x[r * cols + c]);
      for (int64_t c = 0; c < cols; ++c) sum += std::exp((long double)x[r * cols + c] - m);
      for (int64_t c = 0; c < cols; ++c) {
        const float g = got[static_cast<size_t>(r * cols + c)];
        if (r >= 9) {
          EXPECT_TRUE(std::isnan(g)) << cols << " row " << r << " col " << c;
        } else {
          const long double want = std::exp((long double)x[r * cols + c] - m) / sum;
          ASSERT_NEAR(g, (double)want, 1e-6 * std::max(1e-30, (double)want) + 1e-38)
              << cols << " row " << r << " col " << c;
        }
      }
    }
  }
}

// layer_norm and rms_norm over rows of 5 to 1000 floats or doubles (a vector's lanes and the
// row's tail), one row offset by 1000 (a variance taken as E[x^2] - E[x]^2 would lose it),
// against the formulas in long double on the same inputs.
TEST(Property, NormsMatchLongDouble) {
  std::mt19937_64 gen(13);
  for (DType dt : {DType::F32, DType::F64}) {
    for (int64_t cols : {int64_t{5}, int64_t{16}, int64_t{37}, int64_t{1000}}) {
      const int64_t rows = 9;
      std::uniform_real_distribution<double> u(-2, 2);
      auto round = [&](double v) { return dt == DType::F32 ? double(float(v)) : v; };
      std::vector<double> x(static_cast<size_t>(rows * cols)), g(cols), b(cols);
      for (int64_t i = 0; i < rows * cols; ++i)
        x[static_cast<size_t>(i)] = round(u(gen) + (i / cols == 3 ? 1000.0 : 0.0));
      for (auto& v : g) v = round(u(gen));
      for (auto& v : b) v = round(u(gen));
      auto make = [&](const std::vector<double>& v, Shape sh) {
        return TensorData::from<double>(v, std::move(sh)).convert(dt);
      };
      auto xt = Tensor<B, 2>::from_data(make(x, Shape({rows, cols})));
      auto gt = Tensor<B, 1>::from_data(make(g, Shape({cols})));
      auto bt = Tensor<B, 1>::from_data(make(b, Shape({cols})));
      const auto ln = layer_norm(xt, gt, bt, 1e-5).to_data().to_vec<double>();
      const auto rn = rms_norm(xt, gt, 1e-5).to_data().to_vec<double>();
      const double tol = dt == DType::F32 ? 2e-5 : 1e-12;
      for (int64_t r = 0; r < rows; ++r) {
        long double mean = 0, var = 0, ms = 0;
        for (int64_t c = 0; c < cols; ++c) mean += x[static_cast<size_t>(r * cols + c)];
        mean /= cols;
        for (int64_t c = 0; c < cols; ++c) {
          const long double v = x[static_cast<size_t>(r * cols + c)];
          var += (v - mean) * (v - mean);
          ms += v * v;
        }
        const long double rstd = 1 / std::sqrt(var / cols + 1e-5L);
        const long double rrms = 1 / std::sqrt(ms / cols + 1e-5L);
        for (int64_t c = 0; c < cols; ++c) {
          const size_t i = static_cast<size_t>(r * cols + c);
          const long double want = (x[i] - mean) * rstd * g[c] + b[c];
          const long double want_rms = x[i] * rrms * g[c];
          // the row offset by 1000 keeps the precision of x - mean: 1000 ulps of 1 over std
          const double t = r != 3 ? tol : dt == DType::F32 ? 2e-4 : 1e-10;
          ASSERT_NEAR(ln[i], double(want), t * std::max(1.0, std::abs(double(want))))
              << cols << " row " << r << " col " << c;
          ASSERT_NEAR(rn[i], double(want_rms), tol * std::max(1.0, std::abs(double(want_rms))))
              << cols << " row " << r << " col " << c;
        }
      }
    }
  }
}

// log_softmax and cross_entropy at large logits, against the same formulas in long double on
// the same f32 inputs: the result near the max must keep f32's relative precision whatever
// the logits' magnitude (a max + log(sum) folded into one float lost it: ~5e-4 at 1e4).
TEST(Property, LogSoftmaxKeepsPrecisionAtLargeLogits) {
  using T2 = Tensor<Dispatch, 2>;
  std::mt19937_64 gen(7);
  for (double mag : {1.0, 1e2, 1e4, 1e6, -1e6, 3e7}) {
    const int64_t rows = 16, cols = 37;
    std::vector<float> x(rows * cols);
    for (auto& v : x) v = static_cast<float>(mag + std::uniform_real_distribution<>(-4, 4)(gen));
    for (int dim_last = 0; dim_last < 2; ++dim_last) {
      // dim 1 runs the row kernel; dim 0 on the transposed data the strided one
      std::vector<float> xt(x.size());
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t c = 0; c < cols; ++c) xt[c * rows + r] = x[r * cols + c];
      T2 t = dim_last ? T2::from_values(x, {rows, cols}) : T2::from_values(xt, {cols, rows});
      auto got = activation::log_softmax(t, dim_last ? 1 : 0).to_data().to_vec<float>();
      for (int64_t r = 0; r < rows; ++r) {
        long double m = -INFINITY, sum = 0;
        for (int64_t c = 0; c < cols; ++c) m = std::max<long double>(m, x[r * cols + c]);
        for (int64_t c = 0; c < cols; ++c) sum += std::exp((long double)x[r * cols + c] - m);
        for (int64_t c = 0; c < cols; ++c) {
          long double want = (long double)x[r * cols + c] - m - std::log(sum);
          float g = dim_last ? got[r * cols + c] : got[c * rows + r];
          ASSERT_NEAR(g, (double)want, 2e-6 * std::max(1.0, std::abs((double)want)))
              << "magnitude " << mag << ", row " << r << ", col " << c;
        }
      }
    }
    // cross_entropy picks log_softmax at the target: at par with the f64 formula
    std::vector<int64_t> target(rows);
    long double want = 0;
    for (int64_t r = 0; r < rows; ++r) {
      target[r] = (r * 5) % cols;
      long double m = -INFINITY, sum = 0;
      for (int64_t c = 0; c < cols; ++c) m = std::max<long double>(m, x[r * cols + c]);
      for (int64_t c = 0; c < cols; ++c) sum += std::exp((long double)x[r * cols + c] - m);
      want += -((long double)x[r * cols + target[r]] - m - std::log(sum)) / rows;
    }
    float loss = nn::CrossEntropyLossConfig{}
                     .init()
                     .forward(T2::from_values(x, {rows, cols}),
                              Tensor<Dispatch, 1, Int>::from_values(target, {rows}))
                     .into_scalar();
    EXPECT_NEAR(loss, (double)want, 2e-6 * std::max(1.0, std::abs((double)want)))
        << "magnitude " << mag;
  }
}

}  // namespace
}  // namespace ember
