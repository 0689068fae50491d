// The CPU's direct convolution for few channels against a convolution in double precision:
// windows 1 to 5, paddings 0 to k - 1, output rows shorter and longer than one 32-wide pass,
// channel counts that are not multiples of the 8-channel blocks, several images; the conv and
// transposed-conv ops taking the path; and where it is not taken. Run at AVX-512 and at AVX2,
// each skipped (saying so) where the CPU lacks it. The direct weight gradient likewise, also
// through Autodiff.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/winograd.h"
#include "ember/ember.h"
#include "tests/support/conv_reference.h"
#include "tests/support/expect_near.h"
#include "tests/support/isa_level.h"

using namespace ember;

namespace {

using Case = test::ConvCase;

cpu::Geom geom(const Case& c) {
  cpu::Geom g;
  g.in[1] = c.h, g.in[2] = c.w;
  g.out[1] = c.ho(), g.out[2] = c.wo();
  g.k[1] = g.k[2] = c.k;
  g.p[1] = g.p[2] = c.pad;
  return g;
}

using test::expect_near;

std::string describe(const Case& c) {
  return std::to_string(c.n) + "x" + std::to_string(c.c_in) + "->" + std::to_string(c.c_out) + " " +
         std::to_string(c.h) + "x" + std::to_string(c.w) + " k" + std::to_string(c.k) + " pad " +
         std::to_string(c.pad);
}

// Each test runs at AVX-512 (16 channels a vector, and the row kernels) and at AVX2 (8 channels
// a vector), each where the CPU has it: the level is capped to the one under test.
class CpuDirectConv : public test::IsaLevel {};

}  // namespace

TEST_P(CpuDirectConv, MatchesAConvolutionInDoubles) {
  for (Case c :
       {Case{2, 1, 8, 28, 28, 3, 0}, Case{3, 8, 16, 13, 13, 3, 0}, Case{2, 16, 16, 28, 28, 3, 1},
        Case{1, 3, 32, 32, 32, 3, 1}, Case{2, 5, 13, 9, 40, 5, 2}, Case{1, 32, 64, 10, 17, 1, 0},
        Case{2, 4, 7, 6, 8, 3, 1}, Case{1, 2, 9, 5, 70, 3, 2}, Case{1, 1, 1, 4, 9, 2, 1},
        // 16 output channels or more (the lanes kernel): a partial second block, runs of one
        // to three per row (57 wide: 3 x 20 with the last short), odd run lengths, 5x5, more
        // rows than a band.
        Case{2, 7, 17, 11, 57, 3, 1}, Case{1, 3, 24, 20, 9, 5, 2}, Case{2, 16, 48, 9, 29, 3, 1},
        Case{1, 10, 16, 3, 8, 1, 0}, Case{2, 9, 33, 12, 30, 3, 2},
        // read in place (3 wide, a column padding of 0 or 1, every run a kernel of its length):
        // a shorter last run (50 wide: 26 + 24), no padding (28: 14 + 14), one run at both
        // edges (8), on rows past the image's last (5 rows over 3 output rows and a band).
        Case{2, 16, 32, 10, 50, 3, 1}, Case{1, 17, 16, 6, 30, 3, 0}, Case{1, 5, 16, 9, 8, 3, 1},
        Case{3, 16, 16, 5, 12, 3, 1}}) {
    cpu::Geom g = geom(c);
    const std::string what = describe(c);
    // Winograd's F(4x4) shapes go to Winograd (on AVX-512 those of its fused form, and of the
    // others those whose rows hold 8 tiles or more); AVX2 also leaves one input channel and runs
    // under 8 positions to other paths (the kernels compute them all the same, and are checked
    // on them here too).
    const bool winograd4 = cpu::winograd_fits(g, 1, c.c_in, c.c_out) &&
                           cpu::winograd_pays(g, c.n, c.c_in, c.c_out) &&
                           cpu::winograd_tile(g, c.c_in, c.c_out) == 4 &&
                           (cpu::winograd_fused_fits(c.c_in, c.c_out) ||
                            !(avx512() && cpu::winograd_rows_end_to_end(g)));
    EXPECT_EQ(
        cpu::direct_conv_fits(g, 1, c.c_in, c.c_out, c.n),
        !winograd4 && (avx512() || (c.c_in > 1 && (cpu::direct_conv_positions_fits(g, 1, c.c_in) ||
                                                   cpu::lanes_run_length(c.wo(), c.k) >= 8))))
        << what;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 31 + c.c_in));
    auto w =
        test::uniform_floats(size_t(c.c_out * c.c_in * c.k * c.k), uint32_t(c.k * 7 + c.c_out));
    std::vector<float> got(size_t(c.n * c.c_out * c.ho() * c.wo()), NAN);
    cpu::direct_conv_f32(x.data(), w.data(), got.data(), c.n, c.c_in, c.c_out, g);
    // Sums of c_in k^2 products of numbers in [-1, 1], each rounded once in f32.
    expect_near(got, test::conv2d_reference(c, x, w), 2e-6 * double(c.c_in * c.k * c.k), what);
  }
}

TEST_P(CpuDirectConv, RowAndColumnPaddingsMayDiffer) {
  // 3x3 windows with the rows and columns padded apart (the AVX2 kernels read column paddings
  // of 0 and 1 in place, skipping window rows over the top and bottom padding): against the
  // unpadded reference on an input padded by hand.
  struct Pads {
    int64_t ph, pw;
  };
  // 3 input channels: the positions kernel on AVX2 (its band copy pads rows and columns).
  for (int64_t c_in : {5, 3})
    for (Pads p : {Pads{0, 1}, Pads{2, 1}, Pads{1, 0}, Pads{2, 0}, Pads{0, 2}}) {
      const int64_t n = 2, c_out = 19, h = 6, w = 30, hp = h + 2 * p.ph, wp = w + 2 * p.pw;
      const std::string what = std::to_string(c_in) + " channels, pads " + std::to_string(p.ph) +
                               ", " + std::to_string(p.pw);
      cpu::Geom g;
      g.in[1] = h, g.in[2] = w;
      g.out[1] = hp - 2, g.out[2] = wp - 2;
      g.k[1] = g.k[2] = 3;
      g.p[1] = p.ph, g.p[2] = p.pw;
      ASSERT_TRUE(cpu::direct_conv_fits(g, 1, c_in, c_out, n)) << what;
      auto x = test::uniform_floats(size_t(n * c_in * h * w), uint32_t(11 + p.ph * 3 + p.pw));
      auto wt = test::uniform_floats(size_t(c_out * c_in * 9), 12);
      std::vector<float> padded(size_t(n * c_in * hp * wp), 0.0f);
      for (int64_t plane = 0; plane < n * c_in; ++plane)
        for (int64_t i = 0; i < h; ++i)
          for (int64_t j = 0; j < w; ++j)
            padded[size_t((plane * hp + i + p.ph) * wp + j + p.pw)] =
                x[size_t((plane * h + i) * w + j)];
      std::vector<float> got(size_t(n * c_out * g.out[1] * g.out[2]), NAN);
      cpu::direct_conv_f32(x.data(), wt.data(), got.data(), n, c_in, c_out, g);
      expect_near(got, test::conv2d_reference({n, c_in, c_out, hp, wp, 3, 0}, padded, wt),
                  2e-6 * double(c_in * 9), what);
    }
}

TEST_P(CpuDirectConv, FewTapsPutThePositionsAcrossTheLanes) {
  // At most 27 taps (direct_conv_positions.cpp, AVX2's path for them): output channel counts
  // around its groups of 3, rows 8 to 70 wide (a last vector overlapping the one before), vector
  // counts that are not multiples of its 4, windows 1 to 5 wide, paddings 0 to 2, and rows 300
  // wide, which split an image into bands of 2 rows. The kernels are run at every level (AVX2's
  // needs AVX2 only; AVX-512's takes rows of 16 or more); the path takes them at AVX2, and at
  // AVX-512 for rows of 16 or more.
  for (Case c :
       {Case{2, 3, 1, 9, 8, 3, 1}, Case{1, 3, 2, 5, 10, 3, 0}, Case{3, 3, 4, 7, 15, 3, 1},
        Case{2, 3, 5, 6, 17, 3, 1}, Case{1, 3, 32, 11, 33, 3, 1}, Case{2, 3, 33, 4, 70, 3, 2},
        Case{1, 2, 7, 6, 20, 1, 0}, Case{1, 1, 6, 9, 12, 5, 2}, Case{2, 3, 16, 9, 300, 3, 1},
        Case{1, 27, 8, 5, 16, 1, 0}}) {
    cpu::Geom g = geom(c);
    const std::string what = describe(c);
    EXPECT_EQ(cpu::direct_conv_positions_fits(g, 1, c.c_in), !avx512() || c.wo() >= 16) << what;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.w * 13 + c.c_out));
    auto w = test::uniform_floats(size_t(c.c_out * c.c_in * c.k * c.k), uint32_t(c.k + c.c_out));
    std::vector<float> got(size_t(c.n * c.c_out * c.ho() * c.wo()), NAN);
    cpu::direct_conv_positions_f32(x.data(), w.data(), got.data(), c.n, c.c_in, c.c_out, g);
    expect_near(got, test::conv2d_reference(c, x, w), 2e-6 * double(c.c_in * c.k * c.k), what);
  }
  // 28 taps and rows under 8: the other kernels'.
  EXPECT_FALSE(cpu::direct_conv_positions_fits(geom({1, 28, 8, 5, 16, 1, 0}), 1, 28));
  EXPECT_FALSE(cpu::direct_conv_positions_fits(geom({1, 3, 8, 5, 7, 1, 0}), 1, 3));
}

TEST_P(CpuDirectConv, TakenOnlyWhereItApplies) {
  cpu::Geom g = geom({1, 16, 16, 12, 12, 3, 1});
  EXPECT_TRUE(cpu::direct_conv_fits(g, 1, 16, 24, 1));
  EXPECT_EQ(cpu::direct_conv_fits(g, 1, 16, 16, 1), !avx512());  // AVX-512: Winograd's fused F(4x4)
  EXPECT_FALSE(cpu::direct_conv_fits(g, 2, 16, 16, 1));          // groups
  EXPECT_FALSE(cpu::direct_conv_fits(g, 1, 64, 16, 1));   // 64 x 9 taps: Winograd's or im2col's
  EXPECT_FALSE(cpu::direct_conv_fits(g, 1, 16, 128, 1));  // many output channels
  cpu::Geom s = g;
  s.s[2] = 2;
  EXPECT_FALSE(cpu::direct_conv_fits(s, 1, 16, 16, 1));  // stride
  cpu::Geom d = g;
  d.d[1] = 2;
  EXPECT_FALSE(cpu::direct_conv_fits(d, 1, 16, 16, 1));  // dilation
  cpu::Geom narrow = geom({1, 16, 16, 12, 5, 3, 1});
  EXPECT_FALSE(cpu::direct_conv_fits(narrow, 1, 16, 16, 1));  // rows under 8 outputs
  // One input channel, and rows of 13 (two runs of 7 on AVX2): AVX-512 only.
  EXPECT_EQ(cpu::direct_conv_fits(geom({1, 1, 8, 28, 28, 3, 0}), 1, 1, 8, 1), avx512());
  EXPECT_EQ(cpu::direct_conv_fits(geom({1, 16, 8, 13, 13, 3, 1}), 1, 16, 8, 1), avx512());
  EXPECT_TRUE(cpu::direct_conv_fits(geom({1, 16, 8, 16, 16, 3, 1}), 1, 16, 8, 1));  // runs of 8
  // One image of 8x8, 64 outputs: too few for Winograd (winograd_pays), the direct kernels'.
  EXPECT_TRUE(cpu::direct_conv_fits(geom({1, 16, 16, 8, 8, 3, 1}), 1, 16, 16, 1));
}

TEST_P(CpuDirectConv, TheConvAndTransposedConvOpsMatch) {
  // The main job's second convolution, [4, 8, 13, 13] -> [4, 16, 11, 11], through conv2d, and
  // its input gradient's shape of transposed convolution (stride 1: a flipped window).
  Case c{4, 8, 16, 13, 13, 3, 0};
  auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), 3);
  auto w = test::uniform_floats(size_t(c.c_out * c.c_in * 9), 4);
  auto tx = Tensor<Cpu, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w}));
  auto tw = Tensor<Cpu, 4>::from_data(TensorData::from<float>(w, {c.c_out, c.c_in, 3, 3}));
  expect_near(conv2d(tx, tw, {}).to_data().to_vec<float>(), test::conv2d_reference(c, x, w), 2e-4,
              "conv2d");
  // conv_transpose2d(g [4, 16, 11, 11], w [16 -> 8]) is the convolution of g, padded by 2, with
  // the window flipped and the channel axes swapped.
  Case t{4, 16, 8, 11, 11, 3, 2};
  auto gy = test::uniform_floats(size_t(t.n * t.c_in * t.h * t.w), 5);
  std::vector<float> flipped(w.size());
  for (int64_t o = 0; o < 16; ++o)
    for (int64_t i = 0; i < 8; ++i)
      for (int64_t k = 0; k < 9; ++k)
        flipped[size_t((i * 16 + o) * 9 + k)] = w[size_t((o * 8 + i) * 9 + 8 - k)];
  auto tg = Tensor<Cpu, 4>::from_data(TensorData::from<float>(gy, {t.n, t.c_in, t.h, t.w}));
  expect_near(conv_transpose2d(tg, tw, {}).to_data().to_vec<float>(),
              test::conv2d_reference(t, gy, flipped), 4e-4, "conv_transpose2d");
}

TEST_P(CpuDirectConv, WeightGradientMatchesOneInDoubles) {
  // The main job's two, padded windows, 5x5, rows longer and shorter than a vector, odd output
  // channel counts (a last task of one channel), more images than chunks and fewer; 16 output
  // channels or more take the channels-across-lanes kernel: a partial second block of 16, input
  // channels that do not divide into threes; no images at all (a zero gradient).
  for (Case c :
       {Case{64, 1, 8, 28, 28, 3, 0}, Case{64, 8, 16, 13, 13, 3, 0}, Case{2, 16, 16, 28, 28, 3, 1},
        Case{3, 5, 13, 9, 40, 5, 2}, Case{1, 3, 7, 6, 8, 3, 1}, Case{5, 2, 9, 5, 70, 3, 2},
        Case{1, 64, 3, 7, 7, 3, 1}, Case{3, 4, 20, 10, 12, 3, 1}, Case{2, 2, 32, 7, 30, 3, 2},
        Case{0, 8, 16, 13, 13, 3, 0}, Case{0, 1, 8, 28, 28, 3, 1}}) {
    cpu::Geom g = geom(c);
    const std::string what = describe(c);
    if (c.k == 5 && !avx512()) {  // AVX2 has 3x3 kernels only
      EXPECT_FALSE(cpu::direct_weight_grad_fits(g, 1, c.c_in, c.c_out)) << what;
      continue;
    }
    ASSERT_TRUE(cpu::direct_weight_grad_fits(g, 1, c.c_in, c.c_out)) << what;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 29 + c.c_in));
    auto gy =
        test::uniform_floats(size_t(c.n * c.c_out * c.ho() * c.wo()), uint32_t(c.k * 5 + c.c_out));
    std::vector<float> got(size_t(c.c_out * c.c_in * c.k * c.k), NAN);
    cpu::direct_weight_grad_f32(x.data(), gy.data(), got.data(), c.n, c.c_in, c.c_out, g);
    // Sums of n * ho * wo products of numbers in [-1, 1], in f32 partial sums.
    expect_near(got, test::conv2d_weight_grad_reference(c, x, gy),
                2e-6 * double(c.n * c.ho() * c.wo()), what);
  }
  cpu::Geom s = geom({1, 4, 4, 12, 12, 3, 1});
  s.s[1] = 2;
  EXPECT_FALSE(cpu::direct_weight_grad_fits(s, 1, 4, 4));                              // stride
  EXPECT_FALSE(cpu::direct_weight_grad_fits(geom({1, 4, 4, 12, 12, 2, 0}), 1, 4, 4));  // 2x2
  EXPECT_FALSE(cpu::direct_weight_grad_fits(geom({1, 4, 4, 12, 12, 3, 1}), 2, 4, 4));  // groups
}

TEST_P(CpuDirectConv, TheWeightGradientOfTheConvOpMatches) {
  // Through Autodiff<Cpu>: the gradient of sum(conv2d(x, w) * gy) with respect to w.
  for (Case c : {Case{6, 1, 8, 28, 28, 3, 0}, Case{6, 8, 16, 13, 13, 3, 1}}) {
    using AD = Autodiff<Cpu>;
    auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), 7);
    auto w = test::uniform_floats(size_t(c.c_out * c.c_in * 9), 8);
    auto gy = test::uniform_floats(size_t(c.n * c.c_out * c.ho() * c.wo()), 9);
    auto tx = Tensor<AD, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w}));
    auto tw = Tensor<AD, 4>::from_data(TensorData::from<float>(w, {c.c_out, c.c_in, 3, 3}))
                  .require_grad();
    auto tg = Tensor<AD, 4>::from_data(TensorData::from<float>(gy, {c.n, c.c_out, c.ho(), c.wo()}));
    auto grads = (conv2d(tx, tw, {.padding = {c.pad}}) * tg).sum().backward();
    expect_near(tw.grad(grads)->to_data().to_vec<float>(),
                test::conv2d_weight_grad_reference(c, x, gy), 2e-6 * double(c.n * 28 * 28),
                "conv2d weight gradient");
  }
}

INSTANTIATE_TEST_SUITE_P(Levels, CpuDirectConv,
                         ::testing::Values(cpu::CpuIsa::Avx512, cpu::CpuIsa::Avx2),
                         test::isa_level_name);
