// The CPU's Winograd F(2x2, 3x3) and F(4x4, 3x3) convolutions against a direct convolution in
// double precision: odd and even sizes (partial tiles), paddings 0 to 2, channel counts that are
// not multiples of anything, several images (chunks across images), and the conv op taking the
// path; at AVX-512 (where F(4x4) is the fused form for up to 64 channels, c_out a multiple of
// 16) and at AVX2, each where the CPU has it.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <vector>

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/winograd.h"
#include "ember/ember.h"
#include "tests/support/conv_reference.h"
#include "tests/support/isa_level.h"

using namespace ember;

namespace {

struct Case {
  int64_t n, c_in, c_out, h, w, pad;
};

cpu::Geom geom(const Case& c) {
  cpu::Geom g;
  g.in[1] = c.h, g.in[2] = c.w;
  g.out[1] = c.h + 2 * c.pad - 2, g.out[2] = c.w + 2 * c.pad - 2;
  g.k[1] = g.k[2] = 3;
  g.p[1] = g.p[2] = c.pad;
  return g;
}

// The 3x3 convolution of case c in doubles.
std::vector<double> direct(const Case& c, const std::vector<float>& x,
                           const std::vector<float>& w) {
  return test::conv2d_reference({c.n, c.c_in, c.c_out, c.h, c.w, 3, c.pad}, x, w);
}

std::string describe(const Case& c) {
  return std::to_string(c.n) + "x" + std::to_string(c.c_in) + "->" + std::to_string(c.c_out) + " " +
         std::to_string(c.h) + "x" + std::to_string(c.w) + " pad " + std::to_string(c.pad);
}

// Every element of got within tol of want (NaN is not); the first few misses reported.
void expect_within(const std::vector<float>& got, const std::vector<double>& want, double tol,
                   const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double worst = 0;
  int64_t bad = 0;
  for (size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(double(got[i]) - want[i]);
    worst = std::max(worst, std::isnan(err) ? INFINITY : err);
    if (!(err <= tol) && bad++ < 5)
      ADD_FAILURE() << what << " at " << i << ": " << got[i] << " vs " << want[i];
  }
  EXPECT_EQ(bad, 0) << what << ": worst error " << worst << ", bound " << tol;
}

// conv2d's weight gradient through the op (Autodiff<Cpu>) for case c, padding 1, with the loss
// scale * sum(y), against sums in double.
void expect_op_weight_grad(const Case& c, float scale, uint32_t seed) {
  std::vector<float> x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), seed);
  std::vector<float> w = test::uniform_floats(size_t(c.c_out * c.c_in * 9), seed + 1);
  using AD = Autodiff<Cpu>;
  auto tx = Tensor<AD, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w}));
  auto tw =
      Tensor<AD, 4>::from_data(TensorData::from<float>(w, {c.c_out, c.c_in, 3, 3})).require_grad();
  auto grads = (conv2d(tx, tw, {.padding = {1}}) * scale).sum().backward();
  const auto got = tw.grad(grads)->to_data().to_vec<float>();
  std::vector<float> gy(size_t(c.n * c.c_out * c.h * c.w), scale);
  expect_within(got,
                test::conv2d_weight_grad_reference({c.n, c.c_in, c.c_out, c.h, c.w, 3, 1}, x, gy),
                1e-4, "through the op, " + describe(c));
}

// The kernels run at AVX-512 and at AVX2, each where the CPU has it (the level capped to it).
class CpuWinogradAt : public test::IsaLevel {};

}  // namespace

TEST_P(CpuWinogradAt, MatchesADirectConvolution) {
  const bool fused = GetParam() >= cpu::CpuIsa::Avx512;
  EXPECT_EQ(cpu::winograd_fused_fits(16, 32), fused);
  EXPECT_FALSE(cpu::winograd_fused_fits(16, 20));    // c_out not a multiple of 16
  EXPECT_FALSE(cpu::winograd_fused_fits(256, 144));  // more than 384 channels in and out
  EXPECT_EQ(cpu::winograd_fused_fits(192, 192), fused);
  for (Case c :
       {Case{2, 16, 20, 9, 11, 1}, Case{1, 32, 16, 8, 8, 0}, Case{3, 17, 33, 5, 14, 2},
        Case{1, 16, 16, 2, 2, 1}, Case{2, 24, 16, 31, 7, 1}, Case{1, 16, 20, 20, 45, 1},
        Case{2, 16, 16, 13, 38, 0}, Case{1, 64, 64, 56, 56, 1},
        // Rows of fewer than 8 tiles, laid end to end: the suite's 16 -> 16 on 28x28,
        // and images cut into several chunks (the last one shorter).
        Case{2, 16, 16, 28, 28, 1}, Case{1, 160, 144, 14, 13, 1}, Case{1, 64, 64, 50, 20, 1},
        // Deep channels over small images: chunks past the budget (a panel of tiles), and a
        // 7x7 image's 16 tiles of F(2x2) (half a panel of AVX-512's micro-kernel).
        Case{5, 128, 112, 9, 11, 1}, Case{3, 40, 36, 7, 7, 1},
        // The fused form: blocks of 1 to 4 vectors of 16 tiles whose runs cross tile rows and
        // images, the last block short; rows of 1 to 15 tiles (a row's last tile reads the
        // columns 4 tw and 4 tw + 1), 64 -> 48 (each also run as on a CPU of 128 KiB of L2,
        // where every block is one vector).
        Case{3, 16, 16, 7, 5, 2}, Case{7, 32, 32, 10, 3, 1}, Case{2, 64, 48, 17, 58, 1},
        Case{5, 20, 16, 23, 21, 0}}) {
    cpu::Geom g = geom(c);
    ASSERT_TRUE(cpu::winograd_fits(g, 1, c.c_in, c.c_out));
    std::mt19937 gen(uint32_t(c.h * 31 + c.c_in));
    std::uniform_real_distribution<float> u(-1, 1);
    std::vector<float> x(size_t(c.n * c.c_in * c.h * c.w)), w(size_t(c.c_out * c.c_in * 9));
    for (float& v : x) v = u(gen);
    for (float& v : w) v = u(gen);
    std::vector<double> want = direct(c, x, w);
    for (int run = 0; run < 3; ++run) {
      const int tile = run == 0 ? 2 : 4;
      if (run == 2) cpu::set_cpu_l2_bytes(128 << 10);
      std::vector<float> got(want.size(), NAN);
      cpu::winograd_conv_f32(x.data(), w.data(), got.data(), c.n, c.c_in, c.c_out, g, tile);
      cpu::set_cpu_l2_bytes(std::nullopt);
      // Sums of 9 c_in products of numbers in [-1, 1]: about 2^-24 sqrt(9 c_in) each; the
      // transforms add a few roundings (M = 4's, with its points +-2, some more).
      const double tol = (tile == 2 ? 1e-5 : 4e-5) * std::sqrt(double(9 * c.c_in));
      expect_within(got, want, tol,
                    "F(" + std::to_string(tile) + "x" + std::to_string(tile) +
                        (run == 2 ? ", small L2" : "") + ") " + describe(c));
      if (run == 2) continue;
      // The same conv from a transposed conv's weight [c_in, c_out, 3, 3] turned around (the
      // stride-1 transposed conv's path), read so by the weight transform.
      std::vector<float> wt(w.size());
      for (int64_t o = 0; o < c.c_out; ++o)
        for (int64_t i = 0; i < c.c_in; ++i)
          for (int t = 0; t < 9; ++t)
            wt[size_t((i * c.c_out + o) * 9 + 8 - t)] = w[size_t((o * c.c_in + i) * 9 + t)];
      std::fill(got.begin(), got.end(), NAN);
      cpu::winograd_conv_f32(x.data(), wt.data(), got.data(), c.n, c.c_in, c.c_out, g, tile,
                             /*transposed=*/true);
      expect_within(got, want, tol,
                    "F(" + std::to_string(tile) + "x" + std::to_string(tile) +
                        ") from a transposed conv's weight, " + describe(c));
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, CpuWinogradAt,
                         ::testing::Values(cpu::CpuIsa::Avx512, cpu::CpuIsa::Avx2),
                         test::isa_level_name);

TEST(CpuWinograd, TakenOnlyWhereItApplies) {
  cpu::Geom g = geom({1, 16, 16, 8, 8, 1});
  EXPECT_TRUE(cpu::winograd_fits(g, 1, 16, 16));
  EXPECT_FALSE(cpu::winograd_fits(g, 2, 16, 16));  // groups
  EXPECT_FALSE(cpu::winograd_fits(g, 1, 3, 32));   // few input channels: im2col
  cpu::Geom s = g;
  s.s[2] = 2;
  EXPECT_FALSE(cpu::winograd_fits(s, 1, 16, 16));  // stride
  cpu::Geom d = g;
  d.d[1] = 2;
  EXPECT_FALSE(cpu::winograd_fits(d, 1, 16, 16));  // dilation
  cpu::Geom k = g;
  k.k[1] = k.k[2] = 5;
  EXPECT_FALSE(cpu::winograd_fits(k, 1, 16, 16));  // window
  // The tile without AVX-512: F(4x4) on rows of 8 tiles or more at 32 channels, on narrower
  // ones from 16 tiles an image up to three times as many channels; else F(2x2).
  cpu::set_cpu_isa_cap(cpu::CpuIsa::Avx2);
  EXPECT_EQ(cpu::winograd_tile(geom({1, 32, 32, 32, 32, 1}), 32, 32), 4);
  EXPECT_EQ(cpu::winograd_tile(geom({1, 16, 16, 56, 56, 1}), 16, 16), 2);
  EXPECT_EQ(cpu::winograd_tile(geom({1, 16, 16, 28, 28, 1}), 16, 16), 4);
  EXPECT_EQ(cpu::winograd_tile(geom({1, 48, 48, 14, 14, 1}), 48, 48), 4);
  EXPECT_EQ(cpu::winograd_tile(geom({1, 64, 64, 14, 14, 1}), 64, 64), 2);
  EXPECT_EQ(cpu::winograd_tile(geom({1, 16, 16, 12, 12, 1}), 16, 16), 2);
  // Few outputs (the images' positions together) against the transformed weights, or images
  // of few tiles: the GEMM.
  EXPECT_FALSE(cpu::winograd_pays(geom({1, 512, 512, 7, 7, 1}), 1, 512, 512));  // 49 outputs
  EXPECT_FALSE(cpu::winograd_pays(geom({2, 256, 256, 7, 7, 1}), 2, 256, 256));  // 98
  EXPECT_FALSE(cpu::winograd_pays(geom({8, 256, 256, 5, 5, 1}), 8, 256, 256));  // 9 tiles
  EXPECT_TRUE(cpu::winograd_pays(geom({8, 256, 256, 7, 7, 1}), 8, 256, 256));   // 392, 16 tiles
  EXPECT_TRUE(cpu::winograd_pays(geom({1, 256, 256, 14, 14, 1}), 1, 256, 256));
  // With it, F(4x4) wherever the fused form fits.
  cpu::set_cpu_isa_cap(std::nullopt);
  if (cpu::cpu_isa() >= cpu::CpuIsa::Avx512) {
    EXPECT_EQ(cpu::winograd_tile(geom({1, 16, 16, 56, 56, 1}), 16, 16), 4);
    EXPECT_EQ(cpu::winograd_tile(geom({1, 64, 64, 14, 14, 1}), 64, 64), 4);
    EXPECT_EQ(cpu::winograd_tile(geom({1, 256, 256, 14, 14, 1}), 256, 256), 2);
    EXPECT_TRUE(cpu::winograd_pays(geom({1, 64, 64, 14, 14, 1}), 1, 64, 64));     // fused: 196
    EXPECT_FALSE(cpu::winograd_pays(geom({1, 128, 128, 7, 7, 1}), 1, 128, 128));  // 49
  }
}

TEST(CpuWinograd, TheConvOpMatchesTheDirectOne) {
  // Through the op: conv2d of a [4, 16, 18, 16] input with a [24, 16, 3, 3] weight, padding 1
  // (1152 outputs: Winograd pays; on AVX-512 the direct kernels take it, rows of under 8 tiles).
  Case c{4, 16, 24, 18, 16, 1};
  std::mt19937 gen(5);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(c.n * c.c_in * c.h * c.w)), w(size_t(c.c_out * c.c_in * 9));
  for (float& v : x) v = u(gen);
  for (float& v : w) v = u(gen);
  auto tx = Tensor<Cpu, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w}));
  auto tw = Tensor<Cpu, 4>::from_data(TensorData::from<float>(w, {c.c_out, c.c_in, 3, 3}));
  ConvOptions o{.padding = {1}};
  std::vector<float> got = conv2d(tx, tw, o).to_data().to_vec<float>();
  std::vector<double> want = direct(c, x, w);
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], 1e-4) << i;
}

namespace {

// conv_transpose2d of [6, 16, 15, 17] into co channels, paddings 0 to 2, against sums in double.
void check_transposed_op(int64_t co) {
  const int64_t n = 6, ci = 16, h = 15, w = 17;
  std::mt19937 gen(9);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> x(size_t(n * ci * h * w)), k(size_t(ci * co * 9));
  for (float& v : x) v = u(gen);
  for (float& v : k) v = u(gen);
  auto tx = Tensor<Cpu, 4>::from_data(TensorData::from<float>(x, {n, ci, h, w}));
  auto tk = Tensor<Cpu, 4>::from_data(TensorData::from<float>(k, {ci, co, 3, 3}));
  for (int64_t pad : {0, 1, 2}) {
    ConvTransposeOptions o{.padding = {pad}};
    std::vector<float> got = conv_transpose2d(tx, tk, o).to_data().to_vec<float>();
    const int64_t ho = h + 2 - 2 * pad, wo = w + 2 - 2 * pad;
    std::vector<double> want(size_t(n * co * ho * wo), 0.0);
    // y[i] += x[o] k[a] for i = o + a - pad.
    for (int64_t b = 0; b < n; ++b)
      for (int64_t c = 0; c < ci; ++c)
        for (int64_t d = 0; d < co; ++d)
          for (int64_t oy = 0; oy < h; ++oy)
            for (int64_t ox = 0; ox < w; ++ox)
              for (int64_t a = 0; a < 3; ++a)
                for (int64_t e = 0; e < 3; ++e) {
                  int64_t iy = oy + a - pad, ix = ox + e - pad;
                  if (iy < 0 || iy >= ho || ix < 0 || ix >= wo) continue;
                  want[size_t(((b * co + d) * ho + iy) * wo + ix)] +=
                      double(x[size_t(((b * ci + c) * h + oy) * w + ox)]) *
                      double(k[size_t(((c * co + d) * 3 + a) * 3 + e)]);
                }
    ASSERT_EQ(got.size(), want.size()) << pad;
    for (size_t i = 0; i < want.size(); ++i)
      ASSERT_NEAR(got[i], want[i], 1e-4) << co << " outputs, padding " << pad << ", at " << i;
  }
}

}  // namespace

TEST(CpuWinograd, TheTransposedConvOpMatchesTheDirectOne) {
  // conv_transpose2d with stride 1 (a convolution's input gradient) takes the path with the
  // window flipped: [6, 16, 15, 17] -> [6, 20, 17, 19] with padding 0, -> [.., 15, 17] with 1,
  // [.., 13, 15] with 2 (1170 outputs: Winograd pays, on AVX-512 with 20 outputs the direct
  // kernels), 20 and 32 outputs.
  for (const int64_t co : {20, 32}) check_transposed_op(co);
}

// The weight gradient by F(3x3, 2x2) against sums in double: paddings 0 to 2, outputs whose
// sides are odd (a tile half outside) and rows not a multiple of 8 tiles, several channel
// counts, images in several chunks (30 images of 8x8 on 24 an chunk, the last shorter), and the
// op itself (conv2d's backward) where the path applies.
// The fused F(4x4)'s weight gradient (AVX-512) against sums in double: channel counts of 16 to
// 96 (1 to 4 vectors of input channels, and 64 + 32; 6-, 4- and 2-channel blocks of output
// channels), partial
// tiles, paddings 0 to 2, blocks across images, more blocks than its 8 chunks.
TEST(CpuWinograd, FusedWeightGradientMatchesSumsInDouble) {
  if (cpu::cpu_isa() < cpu::CpuIsa::Avx512) GTEST_SKIP() << "the fused path needs AVX-512";
  for (Case c : {Case{2, 64, 64, 14, 14, 1}, Case{3, 32, 48, 9, 13, 0}, Case{1, 48, 16, 11, 17, 2},
                 Case{30, 16, 32, 8, 8, 1}, Case{2, 16, 16, 28, 28, 1}, Case{1, 64, 32, 7, 5, 1},
                 Case{1, 96, 80, 28, 28, 1}}) {
    cpu::Geom g = geom(c);
    ASSERT_TRUE(cpu::winograd_fused_weight_grad_fits(g, c.c_in, c.c_out));
    const int64_t ho = g.out[1], wo = g.out[2];
    std::vector<float> x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), 5);
    std::vector<float> gy = test::uniform_floats(size_t(c.n * c.c_out * ho * wo), 6);
    std::vector<double> want =
        test::conv2d_weight_grad_reference({c.n, c.c_in, c.c_out, c.h, c.w, 3, c.pad}, x, gy);
    for (bool small_l2 : {false, true}) {  // blocks of up to 4 vectors, then of one
      if (small_l2) cpu::set_cpu_l2_bytes(128 << 10);
      std::vector<float> got(want.size(), NAN);
      cpu::winograd_fused_weight_grad_f32(x.data(), gy.data(), got.data(), c.n, c.c_in, c.c_out, g);
      cpu::set_cpu_l2_bytes(std::nullopt);
      // sums of n ho wo products of numbers in [-1, 1], through F(4x4)'s transforms (points
      // +-2: a few more roundings than F(3x3, 2x2)'s)
      expect_within(got, want, 8e-6 * std::sqrt(double(c.n * ho * wo)),
                    describe(c) + (small_l2 ? ", small L2" : ""));
    }
  }
  EXPECT_FALSE(cpu::winograd_fused_weight_grad_fits(geom({1, 24, 32, 28, 28, 1}), 24, 32));
  // past 64 channels each, from 49 tiles an image
  EXPECT_TRUE(cpu::winograd_fused_weight_grad_fits(geom({1, 128, 128, 28, 28, 1}), 128, 128));
  EXPECT_FALSE(cpu::winograd_fused_weight_grad_fits(geom({1, 128, 128, 14, 14, 1}), 128, 128));
  // through the op: conv2d's weight gradient for 16 -> 32 channels on 10x12, padding 1
  expect_op_weight_grad({3, 16, 32, 10, 12, 1}, 0.5f, 9);
}

TEST(CpuWinograd, WeightGradientMatchesSumsInDouble) {
  for (Case c : {Case{2, 64, 64, 14, 14, 1}, Case{3, 32, 48, 9, 13, 0}, Case{1, 40, 33, 11, 17, 2},
                 Case{30, 32, 32, 8, 8, 1}, Case{2, 96, 80, 12, 30, 1}}) {
    cpu::Geom g = geom(c);
    ASSERT_TRUE(cpu::winograd_weight_grad_fits(g, 1, c.c_in, c.c_out));
    const int64_t ho = g.out[1], wo = g.out[2];
    std::vector<float> x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), 5);
    std::vector<float> gy = test::uniform_floats(size_t(c.n * c.c_out * ho * wo), 6);
    std::vector<double> want =
        test::conv2d_weight_grad_reference({c.n, c.c_in, c.c_out, c.h, c.w, 3, c.pad}, x, gy);
    std::vector<float> got(want.size(), NAN);
    cpu::winograd_weight_grad_f32(x.data(), gy.data(), got.data(), c.n, c.c_in, c.c_out, g);
    // sums of n ho wo products of numbers in [-1, 1]: about 2^-24 sqrt(n ho wo) each, and the
    // transforms' few roundings
    expect_within(got, want, 2e-6 * std::sqrt(double(c.n * ho * wo)), describe(c));
  }
  // through the op: conv2d's weight gradient for 32 -> 40 channels on 10x12, padding 1
  expect_op_weight_grad({3, 32, 40, 10, 12, 1}, 1.0f, 7);
}
