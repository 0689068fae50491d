// Internal: vectorized float math on contiguous arrays (exp and what builds on it), written
// with portable vector types so it becomes AVX2/AVX-512, NEON or WebAssembly SIMD. Accuracy
// is within 2 ulp of std::exp over the normal range; overflow gives inf, NaN stays NaN.
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
