// Internal: vectorized float math on contiguous arrays (exp, log and what builds on them),
// written once as templates over the vector type so it becomes AVX2/AVX-512, NEON or
// WebAssembly SIMD; the array functions take 16 lanes where the CPU has AVX-512 (vmath.cpp,
// cpu/isa.h) and 8 otherwise.
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

/// exp: 2^n * P(r), r = x - n ln2 (Cody-Waite split), P a degree-6 polynomial. VF: a vector of
/// floats, VI: of int32 with as many lanes.
template <class VF, class VI>
[[gnu::always_inline]] inline VF exp_v(VF x) {
  const VF hi = VF{} + 88.7228391f, lo = VF{} + -103.972084f;
  VF xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  VF fx = xc * 1.44269504088896341f;
  VF half = fx >= 0 ? VF{} + 0.5f : VF{} - 0.5f;
  VI n = __builtin_convertvector(fx + half, VI);  // round to nearest
  VF nf = __builtin_convertvector(n, VF);
  VF r = xc - nf * 0.693359375f;
  r = r - nf * -2.12194440e-4f;
  VF p = VF{} + 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  // 2^n as two factors, so n down to -150 (subnormal results) stays representable
  VI n1 = n >> 1, n2 = n - n1;
  VF s1, s2;
  VI b1 = (n1 + 127) << 23, b2 = (n2 + 127) << 23;
  std::memcpy(&s1, &b1, sizeof s1);
  std::memcpy(&s2, &b2, sizeof s2);
  VF y = p * s1 * s2;
  y = x > hi ? VF{} + INFINITY : y;
  return x != x ? x : y;  // NaN in, NaN out
}
inline vf8 exp8(vf8 x) { return exp_v<vf8, vi8>(x); }

/// log: x = m 2^e with m in [sqrt(1/2), sqrt(2)), log x = e ln2 + log1p(f) for
/// f = m - 1, log1p(f) = f - f^2/2 + f^3 P(f) with P a degree-8 polynomial (minimax on that
/// interval), ln2 in two parts. Subnormal inputs are scaled by 2^23 first.
template <class VF, class VI>
[[gnu::always_inline]] inline VF log_v(VF x) {
  VI tiny = x < 1.17549435e-38f;  // subnormal (or zero, negative: fixed below)
  VF xs = tiny ? x * 8388608.0f : x;
  VI bits;
  std::memcpy(&bits, &xs, sizeof bits);
  VI e = ((bits >> 23) & 0xff) - 126;
  VI mb = (bits & 0x007fffff) | 0x3f000000;  // mantissa in [0.5, 1)
  VF m;
  std::memcpy(&m, &mb, sizeof m);
  VI below = m < 0.707106781186547524f;
  e = below ? e - 1 : e;
  VF f = below ? m + m - 1.0f : m - 1.0f;
  e = tiny ? e - 23 : e;
  VF ef = __builtin_convertvector(e, VF);
  VF z = f * f;
  VF p = VF{} + 7.0376836292e-2f;
  p = p * f - 1.1514610310e-1f;
  p = p * f + 1.1676998740e-1f;
  p = p * f - 1.2420140846e-1f;
  p = p * f + 1.4249322787e-1f;
  p = p * f - 1.6668057665e-1f;
  p = p * f + 2.0000714765e-1f;
  p = p * f - 2.4999993993e-1f;
  p = p * f + 3.3333331174e-1f;
  VF y = p * f * z;
  y = y + ef * -2.12194440e-4f;
  y = y - 0.5f * z;
  VF r = f + y + ef * 0.693359375f;
  r = x == 0.0f ? VF{} - INFINITY : r;
  r = x < 0.0f ? VF{} + NAN : r;
  r = x == INFINITY ? x : r;
  return x != x ? x : r;  // NaN in, NaN out
}
inline vf8 log8(vf8 x) { return log_v<vf8, vi8>(x); }

template <class VF, class VI>
[[gnu::always_inline]] inline VF sigmoid_v(VF v) {
  return 1.0f / (1.0f + exp_v<VF, VI>(-v));
}
// tanh(|v|) = (1 - t) / (1 + t) with t = exp(-2|v|); below 0.25 the odd Taylor series
// (to v^11) keeps the relative accuracy the subtraction would lose.
template <class VF, class VI>
[[gnu::always_inline]] inline VF tanh_v(VF v) {
  VF a = v < 0 ? -v : v;
  VF t = exp_v<VF, VI>(-2.0f * a);
  VF big = (1.0f - t) / (1.0f + t);
  VF a2 = a * a;
  VF p = VF{} + -0.00886323552990220f;  // -1382/155925
  p = p * a2 + 0.0218694885361552f;     // 62/2835
  p = p * a2 + -0.0539682539682540f;    // -17/315
  p = p * a2 + 0.133333333333333f;      // 2/15
  p = p * a2 + -0.333333333333333f;
  VF small = a + a * a2 * p;
  VF r = a < 0.25f ? small : big;
  return v < 0 ? -r : r;
}

// The functions on arrays, y[i] = f(x[i]) (exp_shifted: exp(x[i] - m)), with the widest
// vectors the CPU has (cpu/isa.h: 16 lanes with AVX-512, 8 otherwise); vmath.cpp.
void exp_f32(const float* x, float* y, int64_t n);
void exp_shifted_f32(const float* x, float* y, int64_t n, float m);
void log_f32(const float* x, float* y, int64_t n);
void sigmoid_f32(const float* x, float* y, int64_t n);
void tanh_f32(const float* x, float* y, int64_t n);

}  // namespace ember::cpu::vmath
