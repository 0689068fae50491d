// Internal: vectorized float math on contiguous arrays (exp, log and what builds on them),
// written with portable vector types so it becomes AVX2/AVX-512, NEON or WebAssembly SIMD.
// Accuracy, checked against double-precision libm over dense sweeps (tests/cpu/vmath_test.cpp):
// exp within 2 ulp over the normal range, log within 2 ulp over all positive floats (subnormals
// too); overflow gives inf, NaN stays NaN, log of 0 is -inf and of a negative NaN.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ember::cpu::vmath {

typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));

inline vf8 load8(const float* p) {
  vf8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, vf8 v) { std::memcpy(p, &v, sizeof v); }

/// exp on 8 lanes: 2^n * P(r), r = x - n ln2 (Cody-Waite split), P a degree-6 polynomial.
inline vf8 exp8(vf8 x) {
  const vf8 hi = vf8{} + 88.7228391f, lo = vf8{} + -103.972084f;
  vf8 xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  vf8 fx = xc * 1.44269504088896341f;
  vf8 half = fx >= 0 ? vf8{} + 0.5f : vf8{} - 0.5f;
  vi8 n = __builtin_convertvector(fx + half, vi8);  // round to nearest
  vf8 nf = __builtin_convertvector(n, vf8);
  vf8 r = xc - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  vf8 p = vf8{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as two factors, so n down to -150 (subnormal results) stays representable
  vi8 n1 = n >> 1, n2 = n - n1;
  vf8 s1, s2;
  vi8 b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  vf8 y = p * s1 * s2;
  y = x > hi ? vf8{} + INFINITY : y;
  return x != x ? x : y;  // NaN in, NaN out
}

/// log on 8 lanes: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log x = e ln2 + log1p(f) for
/// f = m - 1, log1p(f) = f - f^2/2 + f^3 P(f) with P a degree-8 polynomial (minimax on that
/// interval), ln2 in two parts. Subnormal inputs are scaled by 2^23 first.
inline vf8 log8(vf8 x) {
  vi8 tiny = x < 1.17549435e-38f;  // subnormal (or zero, negative: fixed below)
  vf8 xs = tiny ? x * 8388608.0f : x;
  vi8 bits;
  std::memcpy(&bits, &xs, sizeof bits);
  vi8 e = ((bits >> 23) & 0xff) - 126;
  vi8 mb = (bits & 0x007fffff) | 0x3f000000;  // mantissa in [0.5, 1)
  vf8 m;
  std::memcpy(&m, &mb, sizeof m);
  vi8 below = m < 0.707106781186547524f;
  e = below ? e - 1 : e;
  vf8 f = below ? m + m - 1.0f : m - 1.0f;
  e = tiny ? e - 23 : e;
  vf8 ef = __builtin_convertvector(e, vf8);
  vf8 z = f * f;
  vf8 p = vf8{} + 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  vf8 y = p * f * z;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  vf8 r = f + y + ef * 0.693359375f;
  r = x == 0.0f ? vf8{} - INFINITY : r;
  r = x < 0.0f ? vf8{} + NAN : r;
  r = x == INFINITY ? x : r;
  return x != x ? x : r;  // NaN in, NaN out
}

/// y[i] = f8(x[i..i+8)) over whole vectors, scalar `f1` on the tail.
template <class F8, class F1>
inline void map_f32(const float* x, float* y, int64_t n, F8 f8, F1 f1) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(y + i, f8(load8(x + i)));
  for (; i < n; ++i) y[i] = f1(x[i]);
}

inline void exp_f32(const float* x, float* y, int64_t n) {
  map_f32(x, y, n, exp8, [](float v) { return std::exp(v); });
}
inline void log_f32(const float* x, float* y, int64_t n) {
  map_f32(x, y, n, log8, [](float v) { return std::log(v); });
}
inline void sigmoid_f32(const float* x, float* y, int64_t n) {
  map_f32(
      x, y, n, [](vf8 v) { return 1.0f / (1.0f + exp8(-v)); },
      [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}
// tanh(|v|) = (1 - t) / (1 + t) with t = exp(-2|v|); below 0.25 the odd Taylor series
// (to v^11) keeps the relative accuracy the subtraction would lose.
inline void tanh_f32(const float* x, float* y, int64_t n) {
  map_f32(
      x, y, n,
      [](vf8 v) {
        vf8 a = v < 0 ? -v : v;
        vf8 t = exp8(-2.0f * a);
        vf8 big = (1.0f - t) / (1.0f + t);
        vf8 a2 = a * a;
        vf8 p = vf8{} + -0.00886323552990220f;  // -1382/155925
        p = p * a2 + 0.0218694885361552f;       // 62/2835
        p = p * a2 + -0.0539682539682540f;      // -17/315
        p = p * a2 + 0.133333333333333f;        // 2/15
        p = p * a2 + -0.333333333333333f;
        vf8 small = a + a * a2 * p;
        vf8 r = a < 0.25f ? small : big;
        return v < 0 ? -r : r;
      },
      [](float v) { return std::tanh(v); });
}

}  // namespace ember::cpu::vmath
