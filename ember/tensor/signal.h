// Window functions for spectral analysis (ember::signal), as torch.*_window: periodic windows
// by default (for an FFT of that length), symmetric ones with periodic = false.
//
//   auto w = ember::signal::hann_window<ember::Cpu>(400);                   // [400], f32
//   auto h = ember::signal::hamming_window<ember::Cpu>(64, false, dev, DType::F64);
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember::signal {

namespace detail {
/// 2 pi k / N for k in [0, n): N = n for a periodic window, n - 1 for a symmetric one.
template <Backend B>
Tensor<B, 1> phase(int64_t n, bool periodic, Device dev, DType t) {
  if (n < 0) throw ValueError("[window] length must be >= 0, got " + std::to_string(n));
  if (!is_float(t)) throw DTypeError("[window] needs a float dtype, got " + std::string(name(t)));
  const double den = static_cast<double>(periodic ? n : n - 1);
  auto k = Tensor<B, 1>::arange(0.0, static_cast<double>(n), 1.0, dev, t);
  return k * (den > 0 ? 2.0 * M_PI / den : 0.0);
}
/// a0 - a1 cos(p) + a2 cos(2p): the cosine-sum windows.
template <Backend B>
Tensor<B, 1> cosine_sum(int64_t n, bool periodic, Device dev, DType t, double a0, double a1,
                        double a2) {
  auto p = phase<B>(n, periodic, dev, t);
  auto w = a0 - p.cos() * a1;
  if (a2 != 0) w = w + (p * 2.0).cos() * a2;
  return n == 1 ? Tensor<B, 1>::ones({1}, dev, t) : w;
}
}  // namespace detail

/// 0.5 - 0.5 cos(2 pi k / N).
template <Backend B>
Tensor<B, 1> hann_window(int64_t n, bool periodic = true, Device dev = B::default_device(),
                         DType t = DType::F32) {
  return detail::cosine_sum<B>(n, periodic, dev, t, 0.5, 0.5, 0.0);
}
/// 0.54 - 0.46 cos(2 pi k / N).
template <Backend B>
Tensor<B, 1> hamming_window(int64_t n, bool periodic = true, Device dev = B::default_device(),
                            DType t = DType::F32) {
  return detail::cosine_sum<B>(n, periodic, dev, t, 0.54, 0.46, 0.0);
}
/// 0.42 - 0.5 cos(2 pi k / N) + 0.08 cos(4 pi k / N).
template <Backend B>
Tensor<B, 1> blackman_window(int64_t n, bool periodic = true, Device dev = B::default_device(),
                             DType t = DType::F32) {
  return detail::cosine_sum<B>(n, periodic, dev, t, 0.42, 0.5, 0.08);
}
/// 1 - |2 k / N - 1|, the triangle.
template <Backend B>
Tensor<B, 1> bartlett_window(int64_t n, bool periodic = true, Device dev = B::default_device(),
                             DType t = DType::F32) {
  if (n == 1) return Tensor<B, 1>::ones({1}, dev, t);
  auto p = detail::phase<B>(n, periodic, dev, t);  // 2 pi k / N
  return 1.0 - (p * (1.0 / M_PI) - 1.0).abs();
}

/// I0(beta sqrt(1 - (2 k / N - 1)^2)) / I0(beta), the Kaiser window (I0 the modified Bessel
/// function of order 0, summed on the host).
template <Backend B>
Tensor<B, 1> kaiser_window(int64_t n, bool periodic = true, double beta = 12.0,
                           Device dev = B::default_device(), DType t = DType::F32) {
  if (n < 0) throw ValueError("[window] length must be >= 0, got " + std::to_string(n));
  if (n == 1) return Tensor<B, 1>::ones({1}, dev, t);
  auto i0 = [](double x) {  // sum_k ((x / 2)^k / k!)^2
    double sum = 1, term = 1;
    for (int k = 1; k < 200 && term > 1e-17 * sum; ++k) {
      term *= (x / (2.0 * k)) * (x / (2.0 * k));
      sum += term;
    }
    return sum;
  };
  const double den = static_cast<double>(periodic ? n : n - 1);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) {
    const double r = 2.0 * static_cast<double>(k) / den - 1.0;
    v[static_cast<size_t>(k)] = i0(beta * std::sqrt(std::max(0.0, 1.0 - r * r))) / i0(beta);
  }
  return Tensor<B, 1>::template from_values<double>(v, Shape{n}, dev).cast(t);
}

}  // namespace ember::signal
