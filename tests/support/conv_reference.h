// The tests' oracle for 2-d convolutions: y[n][o][i][j] = sum over c, a, b of
// x[n][c][i + a - pad][j + b - pad] w[o][c][a][b] in doubles, stride 1, a k x k window, zero
// padding `pad` on every side.
#pragma once
#include <cstdint>
#include <random>
#include <vector>

namespace ember::test {

/// n floats uniform in [-1, 1) from a Mersenne twister seeded with `seed`.
inline std::vector<float> uniform_floats(size_t n, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> u(-1, 1);
  std::vector<float> v(n);
  for (float& e : v) e = u(gen);
  return v;
}

struct ConvCase {
  int64_t n, c_in, c_out, h, w, k, pad;
  int64_t ho() const { return h + 2 * pad - k + 1; }
  int64_t wo() const { return w + 2 * pad - k + 1; }
};

inline std::vector<double> conv2d_reference(const ConvCase& c, const std::vector<float>& x,
                                            const std::vector<float>& w) {
  const int64_t ho = c.ho(), wo = c.wo();
  std::vector<double> y(size_t(c.n * c.c_out * ho * wo), 0.0);
  for (int64_t n = 0; n < c.n; ++n)
    for (int64_t o = 0; o < c.c_out; ++o)
      for (int64_t i = 0; i < ho; ++i)
        for (int64_t j = 0; j < wo; ++j) {
          double s = 0;
          for (int64_t ci = 0; ci < c.c_in; ++ci)
            for (int64_t a = 0; a < c.k; ++a)
              for (int64_t b = 0; b < c.k; ++b) {
                int64_t yy = i + a - c.pad, xx = j + b - c.pad;
                if (yy < 0 || yy >= c.h || xx < 0 || xx >= c.w) continue;
                s += double(x[size_t(((n * c.c_in + ci) * c.h + yy) * c.w + xx)]) *
                     double(w[size_t(((o * c.c_in + ci) * c.k + a) * c.k + b)]);
              }
          y[size_t(((n * c.c_out + o) * ho + i) * wo + j)] = s;
        }
  return y;
}

/// The weight gradient of that convolution given its output gradient gy:
/// dw[o][c][a][b] = sum over n, i, j of gy[n][o][i][j] x[n][c][i + a - pad][j + b - pad].
inline std::vector<double> conv2d_weight_grad_reference(const ConvCase& c,
                                                        const std::vector<float>& x,
                                                        const std::vector<float>& gy) {
  const int64_t ho = c.ho(), wo = c.wo();
  std::vector<double> dw(size_t(c.c_out * c.c_in * c.k * c.k), 0.0);
  for (int64_t o = 0; o < c.c_out; ++o)
    for (int64_t ci = 0; ci < c.c_in; ++ci)
      for (int64_t a = 0; a < c.k; ++a)
        for (int64_t b = 0; b < c.k; ++b) {
          double s = 0;
          for (int64_t n = 0; n < c.n; ++n)
            for (int64_t i = 0; i < ho; ++i)
              for (int64_t j = 0; j < wo; ++j) {
                int64_t yy = i + a - c.pad, xx = j + b - c.pad;
                if (yy < 0 || yy >= c.h || xx < 0 || xx >= c.w) continue;
                s += double(gy[size_t(((n * c.c_out + o) * ho + i) * wo + j)]) *
                     double(x[size_t(((n * c.c_in + ci) * c.h + yy) * c.w + xx)]);
              }
          dw[size_t(((o * c.c_in + ci) * c.k + a) * c.k + b)] = s;
        }
  return dw;
}

}  // namespace ember::test
