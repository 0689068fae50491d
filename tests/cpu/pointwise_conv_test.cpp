// 1x1 convolutions through the CPU's GEMM against sums in double precision: forward, and both
// gradients through Autodiff<Cpu>, over the three ways the images reach the GEMM: several small
// images side by side in one column matrix, one small image a GEMM read and written in place
// (where a batch would hold one image), and one large image a GEMM; on one thread and on every
// thread (one GEMM on all of them, or the images spread over them).
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ember/ember.h"
#include "tests/support/conv_reference.h"
#include "tests/support/expect_near.h"

using namespace ember;

namespace {

using Case = test::ConvCase;
using AD = Autodiff<Cpu>;

using test::expect_near;

// dx[n][c][p] = sum over o of w[o][c] gy[n][o][p]: a 1x1 window's input gradient
std::vector<double> input_grad_reference(const Case& c, const std::vector<float>& w,
                                         const std::vector<float>& gy) {
  const int64_t L = c.h * c.w;
  std::vector<double> dx(size_t(c.n * c.c_in * L), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t ci = 0; ci < c.c_in; ++ci)
      for (int64_t p = 0; p < L; ++p) {
        double s = 0;
        for (int64_t o = 0; o < c.c_out; ++o)
          s += double(w[size_t(o * c.c_in + ci)]) * double(gy[size_t((n * c.c_out + o) * L + p)]);
        dx[size_t((n * c.c_in + ci) * L + p)] = s;
      }
  return dx;
}

void check(const Case& c) {
  const std::string what = std::to_string(c.n) + "x" + std::to_string(c.c_in) + "->" +
                           std::to_string(c.c_out) + " " + std::to_string(c.h) + "x" +
                           std::to_string(c.w) + " on " + std::to_string(num_threads()) +
                           " threads: ";
  auto x = test::uniform_floats(size_t(c.n * c.c_in * c.h * c.w), 11);
  auto w = test::uniform_floats(size_t(c.c_out * c.c_in), 12);
  auto gy = test::uniform_floats(size_t(c.n * c.c_out * c.h * c.w), 13);
  auto tx =
      Tensor<AD, 4>::from_data(TensorData::from<float>(x, {c.n, c.c_in, c.h, c.w})).require_grad();
  auto tw =
      Tensor<AD, 4>::from_data(TensorData::from<float>(w, {c.c_out, c.c_in, 1, 1})).require_grad();
  auto tg = Tensor<AD, 4>::from_data(TensorData::from<float>(gy, {c.n, c.c_out, c.h, c.w}));
  auto y = conv2d(tx, tw);
  const double sum_tol = 1e-6;  // per product summed
  expect_near(y.to_data().to_vec<float>(), test::conv2d_reference(c, x, w),
              sum_tol * double(c.c_in) + 1e-5, what + "forward");
  auto grads = (y * tg).sum().backward();
  expect_near(tw.grad(grads)->to_data().to_vec<float>(),
              test::conv2d_weight_grad_reference(c, x, gy),
              sum_tol * double(c.n * c.h * c.w) + 1e-5, what + "weight gradient");
  expect_near(tx.grad(grads)->to_data().to_vec<float>(), input_grad_reference(c, w, gy),
              sum_tol * double(c.c_out) + 1e-5, what + "input gradient");
}

// {n, c_in, c_out, h, w, k = 1, pad = 0}
const Case kCases[] = {
    {8, 16, 24, 6, 6, 1, 0},    // small images, several to a batch
    {4, 300, 20, 8, 8, 1, 0},   // small images with many channels: one a batch, so in place
    {5, 20, 300, 7, 9, 1, 0},   // the same for the input gradient's 300 rows
    {2, 24, 40, 20, 21, 1, 0},  // large images: a GEMM per image
    {1, 40, 72, 50, 48, 1, 0},  // one image: one GEMM on all the threads, B's columns split
};

}  // namespace

TEST(CpuPointwiseConv, MatchesSumsInDouble) {
  for (const Case& c : kCases) check(c);
}

TEST(CpuPointwiseConv, OnOneThreadMatchesSumsInDouble) {
  const int threads = num_threads();
  set_num_threads(1);
  for (const Case& c : kCases) check(c);
  set_num_threads(threads);
}
