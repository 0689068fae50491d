// The CPU's depthwise convolutions off AVX2's 3x3 stride-1 kernel (the wide and phase layouts,
// the row loops, depthwise.cpp; small planes with the channels in the vector lanes,
// depthwise_lanes.cpp, and under EMBER_CPU_ISA=portable the plane loops for them): the forward, the
// transposed conv (the input gradient) and the weight gradient of conv2d with groups = channels
// against sums in doubles, for strides of 2 and 3 (and 2 along one dim only), windows of 3x3, 5x5,
// 3x5 and 7x7, dilations of 1 and 2, paddings from 0 to beyond half the window, rows narrower and
// wider than a vector, in f32 and f64, with one and two outputs per input channel; and one 3-d
// case.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "ember/ember.h"
#include "tests/support/conv_reference.h"
#include "tests/support/expect_near.h"

using namespace ember;

namespace {

struct Case {
  int64_t n, c_in, per_group, h, w, kh, kw, sh, sw, ph, pw, d;
  int64_t ho() const { return (h + 2 * ph - d * (kh - 1) - 1) / sh + 1; }
  int64_t wo() const { return (w + 2 * pw - d * (kw - 1) - 1) / sw + 1; }
  int64_t c_out() const { return c_in * per_group; }
  std::string name() const {
    return std::to_string(n) + "x" + std::to_string(c_in) + "x" + std::to_string(h) + "x" +
           std::to_string(w) + " x" + std::to_string(per_group) + " k" + std::to_string(kh) + "x" +
           std::to_string(kw) + " s" + std::to_string(sh) + "," + std::to_string(sw) + " p" +
           std::to_string(ph) + "," + std::to_string(pw) + " d" + std::to_string(d);
  }
};

// f(xi, yi, wi) for every product of the convolution inside the input: output channel co reads
// input channel co / per_group, output (i, j) tap (a, b) reads x[i * sh + a * d - ph][j * sw +
// b * d - pw].
template <class F>
void for_each_product(const Case& c, F&& f) {
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t co = 0; co < c.c_out(); ++co)
      for (int64_t i = 0; i < c.ho(); ++i)
        for (int64_t j = 0; j < c.wo(); ++j)
          for (int64_t a = 0; a < c.kh; ++a)
            for (int64_t b = 0; b < c.kw; ++b) {
              const int64_t r = i * c.sh + a * c.d - c.ph, q = j * c.sw + b * c.d - c.pw;
              if (r < 0 || r >= c.h || q < 0 || q >= c.w) continue;
              f(size_t(((n * c.c_in + co / c.per_group) * c.h + r) * c.w + q),
                size_t(((n * c.c_out() + co) * c.ho() + i) * c.wo() + j),
                size_t((co * c.kh + a) * c.kw + b));
            }
}

const Case kCases[] = {
    // n, c_in, per_group, h, w, kh, kw, sh, sw, ph, pw, d
    {2, 3, 1, 12, 12, 3, 3, 2, 2, 1, 1, 1},  // MobileNet's downsampling 3x3
    {1, 2, 1, 11, 37, 3, 3, 2, 2, 1, 1, 1},  // odd sizes, rows over several vectors
    {1, 2, 2, 9, 9, 5, 5, 2, 2, 2, 2, 1},    // 5x5 stride 2, two outputs per channel
    {1, 3, 1, 14, 40, 5, 5, 1, 2, 2, 2, 1},  // stride 2 along w only
    {1, 2, 1, 16, 13, 3, 5, 2, 1, 1, 2, 1},  // 3x5, stride 2 along h only
    {2, 2, 1, 15, 15, 7, 7, 2, 2, 3, 3, 1},  // 7x7
    {1, 2, 1, 10, 21, 3, 3, 2, 2, 2, 2, 2},  // dilation 2
    {1, 2, 1, 13, 50, 3, 3, 3, 3, 1, 0, 1},  // stride 3
    {1, 2, 1, 8, 8, 3, 3, 2, 2, 0, 0, 1},    // no padding
    {1, 2, 1, 6, 34, 3, 3, 2, 2, 2, 1, 1},   // a padding of 2 on a 3x3
    {1, 1, 1, 2, 2, 3, 3, 2, 2, 1, 1, 1},    // a single output
    {1, 2, 1, 9, 9, 5, 5, 1, 1, 0, 3, 1},    // stride 1 with padding past half on one side
    {3, 4, 1, 7, 7, 3, 3, 2, 2, 1, 1, 1},    // narrow rows (7)
    {2, 3, 1, 11, 19, 5, 5, 1, 1, 2, 2, 1},  // 5x5 stride 1 (its transposed conv turned around)
    {1, 2, 1, 12, 12, 7, 3, 1, 1, 3, 0, 1},  // 7x3 stride 1, no column padding
    {1, 2, 1, 9, 30, 3, 3, 1, 1, 1, 1, 2},   // stride 1, dilation 2
    {1, 2, 1, 32, 29, 5, 5, 2, 2, 2, 2, 1},  // 5x5 stride 2, 16 rows of 15: blocks of rows
    // channels in the lanes (depthwise_lanes.cpp, AVX2): blocks of 8 channels and a short last
    // one, planes under 8 positions, dilation and no padding
    {2, 19, 1, 14, 14, 5, 5, 2, 2, 2, 2, 1},  // EfficientNet's 5x5 stride 2 on 14^2
    {3, 12, 1, 7, 7, 5, 5, 1, 1, 2, 2, 1},    // 5x5 on 7^2 (and its transposed conv)
    {2, 9, 1, 2, 3, 3, 3, 1, 1, 1, 1, 1},     // planes of 6 positions
    {1, 16, 1, 11, 9, 3, 5, 2, 3, 0, 1, 2},   // dilation 2, strides 2 and 3, no row padding
};

template <class T>
std::vector<T> to(const std::vector<float>& v) {
  return std::vector<T>(v.begin(), v.end());
}

template <class T>
void check_forward(const Case& c) {
  const auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 7 + c.w));
  const auto w = test::uniform_floats(size_t(c.c_out() * c.kh * c.kw), uint32_t(c.kw + 5));
  std::vector<double> want(size_t(c.n * c.c_out() * c.ho() * c.wo()), 0.0);
  for_each_product(c, [&](size_t xi, size_t yi, size_t wi) { want[yi] += double(x[xi]) * w[wi]; });
  auto tx = Tensor<Cpu, 4>::from_data(TensorData::from<T>(to<T>(x), {c.n, c.c_in, c.h, c.w}));
  auto tw = Tensor<Cpu, 4>::from_data(TensorData::from<T>(to<T>(w), {c.c_out(), 1, c.kh, c.kw}));
  const auto y =
      conv2d(tx, tw,
             {.stride = {c.sh, c.sw}, .padding = {c.ph, c.pw}, .dilation = {c.d}, .groups = c.c_in})
          .to_data()
          .template to_vec<T>();
  test::expect_near(y, want, (sizeof(T) == 4 ? 2e-6 : 1e-13) * double(c.kh * c.kw), c.name());
}

template <class T>
void check_weight_grad(const Case& c) {
  using AD = Autodiff<Cpu>;
  const auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), uint32_t(c.h * 3 + c.w));
  const auto w = test::uniform_floats(size_t(c.c_out() * c.kh * c.kw), uint32_t(c.w + 11));
  const auto gy =
      test::uniform_floats(size_t(c.n * c.c_out() * c.ho() * c.wo()), uint32_t(c.h + 17));
  std::vector<double> want(w.size(), 0.0);
  for_each_product(c, [&](size_t xi, size_t yi, size_t wi) { want[wi] += double(gy[yi]) * x[xi]; });
  auto tx = Tensor<AD, 4>::from_data(TensorData::from<T>(to<T>(x), {c.n, c.c_in, c.h, c.w}));
  auto tw = Tensor<AD, 4>::from_data(TensorData::from<T>(to<T>(w), {c.c_out(), 1, c.kh, c.kw}))
                .require_grad();
  auto tg =
      Tensor<AD, 4>::from_data(TensorData::from<T>(to<T>(gy), {c.n, c.c_out(), c.ho(), c.wo()}));
  auto y = conv2d(
      tx, tw,
      {.stride = {c.sh, c.sw}, .padding = {c.ph, c.pw}, .dilation = {c.d}, .groups = c.c_in});
  const auto grads = (y * tg).sum().backward();
  const auto got = tw.grad(grads)->to_data().template to_vec<T>();
  test::expect_near(got, want, (sizeof(T) == 4 ? 2e-6 : 1e-13) * double(c.n * c.ho() * c.wo()),
                    c.name() + " weight gradient");
}

// conv_transpose2d of gy with the conv's weights: dx[xi] = the sum of gy[yi] w[wi] over the
// conv's products (output_padding gives back the rows and columns the conv's stride dropped).
template <class T>
void check_transposed(const Case& c) {
  if (c.per_group != 1) return;
  const auto gy =
      test::uniform_floats(size_t(c.n * c.c_out() * c.ho() * c.wo()), uint32_t(c.w * 7 + 1));
  const auto w = test::uniform_floats(size_t(c.c_out() * c.kh * c.kw), uint32_t(c.h + 5));
  std::vector<double> want(size_t(c.n * c.c_in * c.h * c.w), 0.0);
  for_each_product(c, [&](size_t xi, size_t yi, size_t wi) { want[xi] += double(gy[yi]) * w[wi]; });
  const int64_t oph = c.h - ((c.ho() - 1) * c.sh - 2 * c.ph + c.d * (c.kh - 1) + 1);
  const int64_t opw = c.w - ((c.wo() - 1) * c.sw - 2 * c.pw + c.d * (c.kw - 1) + 1);
  auto tg =
      Tensor<Cpu, 4>::from_data(TensorData::from<T>(to<T>(gy), {c.n, c.c_out(), c.ho(), c.wo()}));
  auto tw = Tensor<Cpu, 4>::from_data(TensorData::from<T>(to<T>(w), {c.c_out(), 1, c.kh, c.kw}));
  const auto dx = conv_transpose2d(tg, tw,
                                   {.stride = {c.sh, c.sw},
                                    .padding = {c.ph, c.pw},
                                    .output_padding = {oph, opw},
                                    .dilation = {c.d},
                                    .groups = c.c_in})
                      .to_data()
                      .template to_vec<T>();
  test::expect_near(dx, want, (sizeof(T) == 4 ? 2e-6 : 1e-13) * double(c.kh * c.kw),
                    c.name() + " transposed");
}

}  // namespace

TEST(CpuDepthwiseStrided, TheTransposedConvMatchesSumsInDoubles) {
  for (const Case& c : kCases) {
    check_transposed<float>(c);
    check_transposed<double>(c);
  }
}

TEST(CpuDepthwiseStrided, TheForwardMatchesSumsInDoubles) {
  for (const Case& c : kCases) {
    check_forward<float>(c);
    check_forward<double>(c);
  }
}

TEST(CpuDepthwiseStrided, TheWeightGradientMatchesSumsInDoubles) {
  for (const Case& c : kCases) {
    check_weight_grad<float>(c);
    check_weight_grad<double>(c);
  }
}

TEST(CpuDepthwiseStrided, ThreeDimsMatchSumsInDoubles) {
  // conv3d with groups = channels, strides (2, 1, 2), a 3 x 2 x 5 window, paddings (1, 0, 2), and
  // its transposed conv: the phase layout along the depth too.
  const int64_t n = 2, c = 3, D = 7, H = 6, W = 11, kd = 3, kh = 2, kw = 5;
  const int64_t sd = 2, sh = 1, sw = 2, pd = 1, ph = 0, pw = 2;
  const int64_t od = (D + 2 * pd - kd) / sd + 1, oh = (H + 2 * ph - kh) / sh + 1,
                ow = (W + 2 * pw - kw) / sw + 1;
  const auto x = test::uniform_floats(size_t(n * c * D * H * W), 41);
  const auto w = test::uniform_floats(size_t(c * kd * kh * kw), 43);
  const auto gy = test::uniform_floats(size_t(n * c * od * oh * ow), 47);
  std::vector<double> y(gy.size(), 0.0), dx(x.size(), 0.0);
  for (int64_t b = 0; b < n; ++b)
    for (int64_t ch = 0; ch < c; ++ch)
      for (int64_t i = 0; i < od; ++i)
        for (int64_t j = 0; j < oh; ++j)
          for (int64_t l = 0; l < ow; ++l)
            for (int64_t a = 0; a < kd; ++a)
              for (int64_t e = 0; e < kh; ++e)
                for (int64_t f = 0; f < kw; ++f) {
                  const int64_t z = i * sd + a - pd, r = j * sh + e - ph, q = l * sw + f - pw;
                  if (z < 0 || z >= D || r < 0 || r >= H || q < 0 || q >= W) continue;
                  const size_t xi = size_t((((b * c + ch) * D + z) * H + r) * W + q);
                  const size_t yi = size_t((((b * c + ch) * od + i) * oh + j) * ow + l);
                  const size_t wi = size_t(((ch * kd + a) * kh + e) * kw + f);
                  y[yi] += double(x[xi]) * w[wi];
                  dx[xi] += double(gy[yi]) * w[wi];
                }
  auto tx = Tensor<Cpu, 5>::from_data(TensorData::from<float>(x, {n, c, D, H, W}));
  auto tw = Tensor<Cpu, 5>::from_data(TensorData::from<float>(w, {c, 1, kd, kh, kw}));
  auto tg = Tensor<Cpu, 5>::from_data(TensorData::from<float>(gy, {n, c, od, oh, ow}));
  const auto got = conv3d(tx, tw, {.stride = {sd, sh, sw}, .padding = {pd, ph, pw}, .groups = c});
  test::expect_near(got.to_data().to_vec<float>(), y, 2e-6 * double(kd * kh * kw), "conv3d");
  const int64_t opd = D - ((od - 1) * sd - 2 * pd + kd), opw = W - ((ow - 1) * sw - 2 * pw + kw);
  const auto back = conv_transpose3d(tg, tw,
                                     {.stride = {sd, sh, sw},
                                      .padding = {pd, ph, pw},
                                      .output_padding = {opd, 0, opw},
                                      .groups = c});
  test::expect_near(back.to_data().to_vec<float>(), dx, 2e-6 * double(kd * kh * kw),
                    "conv_transpose3d");
}

TEST(CpuDepthwiseStrided, ADepthOfOneOverItsPaddingIsZero) {
  // conv3d of one depth slice with depth padding 1 and depth stride 3: the one output depth
  // reads depth -1, the padding, so every output is 0 (the 2-d kernels, which see one depth,
  // must not take it); 3x3 (AVX2's kernel) and 5x5 on a small plane (the lanes kernel).
  for (const int64_t k : {3, 5}) {
    const int64_t c = 9, H = 10, W = 12;
    const auto x = test::uniform_floats(size_t(c * H * W), 51);
    const auto w = test::uniform_floats(size_t(c * k * k), 53);
    auto tx = Tensor<Cpu, 5>::from_data(TensorData::from<float>(x, {1, c, 1, H, W}));
    auto tw = Tensor<Cpu, 5>::from_data(TensorData::from<float>(w, {c, 1, 1, k, k}));
    const auto y = conv3d(tx, tw, {.stride = {3, 1, 1}, .padding = {1, k / 2, k / 2}, .groups = c});
    ASSERT_EQ(y.shape()[2], 1);
    test::expect_near(y.to_data().to_vec<float>(), std::vector<double>(size_t(c * H * W), 0.0), 0.0,
                      "k" + std::to_string(k));
  }
}
