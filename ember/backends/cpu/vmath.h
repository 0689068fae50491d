// Internal: vectorized float math on contiguous arrays (exp, log and what builds on them),
// written once as templates over the vector type so it becomes AVX2/AVX-512, NEON or
// WebAssembly SIMD; the array functions take 16 lanes where the CPU has AVX-512 (vmath.cpp,
// cpu/isa.h) and 8 otherwise.
// Accuracy, checked against double-precision libm over dense sweeps (tests/cpu/vmath_test.cpp):
// exp within 2 ulp over the normal range, log within 2 ulp over all positive floats (subnormals
// too); overflow gives inf, NaN stays NaN, log of 0 is -inf and of a negative NaN. log1p, erf,
// gelu (the erf form), sin and cos have their bounds in that test.
#pragma once
#include <cmath>
#include <cstdint>
#include <cstring>

namespace ember::cpu::vmath {

typedef float vf8 __attribute__((vector_size(32)));
typedef int32_t vi8 __attribute__((vector_size(32)));
typedef double vd8 __attribute__((vector_size(64)));
typedef int64_t vl8 __attribute__((vector_size(64)));

inline vf8 load8(const float* p) {
  vf8 v;
  std::memcpy(&v, p, sizeof v);
  return v;
}
inline void store8(float* p, vf8 v) { std::memcpy(p, &v, sizeof v); }

/// The largest of x[0, n): -inf for n = 0, and NaN passed over (each step is `a > b ? a : b`).
inline float max_f32(const float* x, int64_t n) {
  vf8 acc[2] = {vf8{} - INFINITY, vf8{} - INFINITY};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int k = 0; k < 2; ++k) {
      const vf8 a = load8(x + i + 8 * k);
      acc[k] = a > acc[k] ? a : acc[k];
    }
  float best = -INFINITY;
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  for (const vf8& a : acc)
    for (int j = 0; j < 8; ++j) best = a[j] > best ? a[j] : best;
  return best;
}

/// The sum of x[0, n) in 32 float lanes, which are added in double at the end (after the
/// elements past the last 32).
inline double sum_f32(const float* x, int64_t n) {
  vf8 lanes[4] = {};
  int64_t i = 0;
  for (; i + 32 <= n; i += 32)
    for (int k = 0; k < 4; ++k) lanes[k] += load8(x + i + 8 * k);
  double sum = 0;
  for (; i < n; ++i) sum += x[i];
  for (const vf8& l : lanes)
    for (int j = 0; j < 8; ++j) sum += l[j];
  return sum;
}

/// exp: 2^n * P(r), r = x - n ln2 (Cody-Waite split), P a degree-6 polynomial. VF: a vector of
/// floats, VI: of int32 with as many lanes. kNonPositive: every x is 0 or below, or NaN (a
/// softmax's x - max), so that nothing overflows: the checks for it are left out, and a NaN
/// goes through the arithmetic (a fifth of the operations; softmax 4096 x 1024 on an AVX2 CPU,
/// alternating binaries: 3.65 -> 3.15 ms on one thread, 1.89 -> 1.65 on two).
template <class VF, class VI, bool kNonPositive = false>
[[gnu::always_inline]] inline VF exp_v(VF x) {
  const VF hi = VF{} + 88.7228391f, lo = VF{} + -103.972084f;
  VF xc = x;
  if constexpr (!kNonPositive) xc = x > hi ? hi : x;
  xc = xc < lo ? lo : xc;
  VF fx = xc * 1.44269504088896341f;
  // n = fx rounded to nearest: adding 1.5 * 2^23 leaves n in the sum's low mantissa bits (|fx|
  // < 2^22), with no conversion between float and int either way.
  VF t = fx + 12582912.0f;
  VF nf = t - 12582912.0f;
  VI n;
  std::memcpy(&n, &t, sizeof n);
  n = n - 0x4b400000;
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
  if constexpr (kNonPositive) return y;
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

/// Whether any lane of a comparison's mask is set.
template <class VI>
[[gnu::always_inline]] inline bool any_lane(VI m) {
  uint64_t w[sizeof(VI) / 8];
  std::memcpy(w, &m, sizeof m);
  uint64_t o = 0;
  for (uint64_t v : w) o |= v;
  return o != 0;
}

/// log1p: log(u) * x / (u - 1) with u = 1 + x (the rounding of u cancels out); x where u == 1.
template <class VF, class VI>
[[gnu::always_inline]] inline VF log1p_v(VF x) {
  VF u = 1.0f + x;
  VF d = u - 1.0f;
  VF r = log_v<VF, VI>(u) * (x / (d == 0.0f ? VF{} + 1.0f : d));
  r = d == 0.0f ? x : r;
  r = x == INFINITY ? x : r;
  return x != x ? x : r;
}

/// erfc(z) for z >= 1 (0 past 10) as exp(-s w^2) S(1/z) / z, where s w^2 = z^2 (erf: w = z,
/// s = 1; gelu: w = |x|, s = 1/2, so that the rounding of x / sqrt 2 does not enter the
/// exponent). S is a degree-12 polynomial (least squares on [1, 10]); exp(-s w^2) is
/// exp(-s h^2) exp(-s (w - h)(w + h)) with h = w to 12 bits, so h^2 is exact.
template <class VF, class VI>
[[gnu::always_inline]] inline VF erfc_tail_v(VF z, VF w, float scale) {
  VF u = 1.0f / z;
  VF t = (u - 0.55f) * (2.0f / 0.9f);
  VF p = VF{} + -1.0229990814437544e-05f;
  p = p * t + 1.796327829312831e-05f;
  p = p * t + 1.4196504230446185e-05f;
  p = p * t + -7.190442984389096e-05f;
  p = p * t + 1.4345488506448627e-04f;
  p = p * t + -2.2633222154391102e-04f;
  p = p * t + 9.781082443968429e-05f;
  p = p * t + 9.200374410668853e-04f;
  p = p * t + -3.978216375193152e-03f;
  p = p * t + 8.962862480234705e-03f;
  p = p * t + -4.123687517887203e-03f;
  p = p * t + -7.651580456617675e-02f;
  p = p * t + 5.023534233340593e-01f;
  VI bits;
  std::memcpy(&bits, &w, sizeof bits);
  bits &= int32_t(0xfffff000);
  VF h;
  std::memcpy(&h, &bits, sizeof h);
  VF e = exp_v<VF, VI>(-scale * (h * h)) * exp_v<VF, VI>(-scale * ((w - h) * (w + h)));
  return z > 10.0f ? VF{} : e * (p * u);
}

/// erfc(a / sqrt 2) for 1/sqrt 2 <= a <= sqrt 2 (gelu's erfc(|z|) for 1/2 <= |z| <= 1, from
/// |x| itself): a degree-8 polynomial in u = (a - 1.0625) 2, which is exact (a and 1.0625 are
/// within a factor of 2), so that neither the rounding of x / sqrt 2 nor of a shift enters it
/// (least squares of the relative error; 1.8e-7 at most in float), no exp.
template <class VF>
[[gnu::always_inline]] inline VF gelu_erfc_mid_v(VF a) {
  VF u = (a - 1.0625f) * 2.0f;
  VF p = VF{} + -5.024857482399396e-07f;
  p = p * u + -1.2392811282124772e-05f;
  p = p * u + 5.210769835527207e-05f;
  p = p * u + 2.9516108597334514e-04f;
  p = p * u + -2.3490468946588475e-03f;
  p = p * u + -1.2185083627687388e-03f;
  p = p * u + 6.026152608056257e-02f;
  p = p * u + -2.2686692746673753e-01f;
  return p * u + 2.880087580236851e-01f;
}

/// erf(x) for |x| < 1: x P(x^2), P of degree 6 (least squares on [0, 1]).
template <class VF>
[[gnu::always_inline]] inline VF erf_small_v(VF x) {
  VF s = x * x;
  VF p = VF{} + 8.006234776964707e-05f;
  p = p * s + -8.053582325594142e-04f;
  p = p * s + 5.192941355553342e-03f;
  p = p * s + -2.685606223099482e-02f;
  p = p * s + 1.1283634489555502e-01f;
  p = p * s + -3.7612629756883836e-01f;
  p = p * s + 1.1283791662315183f;
  return x * p;
}

/// erf: erf_small_v below |x| = 1, 1 - erfc(|x|) above (1 past 4), with the sign of x.
template <class VF, class VI>
[[gnu::always_inline]] inline VF erf_v(VF x) {
  VF a = x < 0 ? -x : x;
  VF small = erf_small_v(x);
  VI far = a >= 1.0f;
  VF r = small;
  if (any_lane(far)) {  // the tail's two exps only where a lane needs them
    VF ab = far ? a : VF{} + 1.0f;
    VF big = 1.0f - erfc_tail_v<VF, VI>(ab, ab, 1.0f);
    big = a >= 4.0f ? VF{} + 1.0f : big;
    big = x < 0 ? -big : big;
    r = far ? big : small;
  }
  return x != x ? x : r;
}

/// gelu(x) = x/2 (1 + erf(z)), z = x / sqrt 2: x/2 (1 + erf_small_v(z)) for -1/2 < z < 1;
/// below, x/2 erfc(|z|) (which keeps the small negative values accurate: gelu_erfc_mid_v down to
/// -1), and from 1 on, x - x/2 erfc(z). Past |z| = 1 one erfc_tail_v (two exps) a vector where
/// some lane needs it, for both sides. The interval of gelu_erfc_mid_v had taken the tail's exps
/// too: gelu of 16M floats uniform in [-1, 1), where 3 of 4 vectors of 8 have a lane below
/// z = -1/2, ran 4.5 times as long as erf's.
template <class VF, class VI>
[[gnu::always_inline]] inline VF gelu_v(VF x) {
  VF z = x * 0.70710678118654752f;
  VF r = 0.5f * x * (1.0f + erf_small_v(z));
  VI neg = z <= -0.5f;
  if (any_lane(neg)) r = neg ? 0.5f * x * gelu_erfc_mid_v(-x) : r;
  VI below = z <= -1.0f, far = z >= 1.0f;
  VI tail = below | far;
  if (any_lane(tail)) {
    VF az = z < 0 ? -z : z, ax = x < 0 ? -x : x;
    VF c = erfc_tail_v<VF, VI>(tail ? az : VF{} + 1.0f, tail ? ax : VF{} + 1.41421356f, 0.5f);
    VF hc = 0.5f * x * c;
    r = below ? hc : r;
    r = far ? x - hc : r;
  }
  return x != x ? x : r;
}

/// sin and cos: r = x - n pi/2 in double, with pi/2 in three parts (the first two of 32 bits,
/// so n times them is exact for |x| < 8192), then the quadrant's polynomial on [-pi/4, pi/4]
/// in double, rounded once to float. VD, VL: double and int64 vectors of as many lanes. Lanes
/// past 8192 are left to the caller (scalar libm).
template <class VF, class VD, class VL>
[[gnu::always_inline]] inline VF sincos_v(VF x, int shift) {
  VD d = __builtin_convertvector(x, VD);
  VD a = d < 0 ? -d : d;
  d = a > 8192.0 ? VD{} : d;  // those lanes are replaced by the caller
  // n = fn rounded to an integer by adding and taking away 1.5 * 2^52, whose low mantissa
  // bits then hold n itself: no conversion between double and int64, which AVX2 lacks (it
  // would run lane by lane). A tie may round either way; both leave |r| <= pi/4.
  VD t = d * 0.6366197723675814 + 6755399441055744.0;
  VL n;
  std::memcpy(&n, &t, sizeof n);
  VD nd = t - 6755399441055744.0;
  VD r = ((d - nd * 1.5707963267341256) - nd * 6.077100506303966e-11) - nd * 2.0222662487959506e-21;
  VD r2 = r * r;
  VD sp = VD{} + -1.9515295891e-4;
  sp = sp * r2 + 8.3321608736e-3;
  sp = sp * r2 + -1.6666654611e-1;
  VD sv = r + r * r2 * sp;
  VD cp = VD{} + 2.443315711809948e-5;
  cp = cp * r2 + -1.388731625493765e-3;
  cp = cp * r2 + 4.166664568298827e-2;
  VD cv = 1.0 - 0.5 * r2 + r2 * r2 * cp;
  VL q = (n + shift) & 3;  // sin: shift 0; cos(x) = sin(x + pi/2): shift 1
  VD v = (q & 1) != 0 ? cv : sv;
  v = (q & 2) != 0 ? -v : v;
  VF y = __builtin_convertvector(v, VF);
  VF xa = x < 0 ? -x : x;
  return x != x || xa == INFINITY ? VF{} + NAN : y;
}

/// sincos_v with lanes past 8192 (rare) computed by libm in double.
template <class VF, class VI, class VD, class VL>
[[gnu::always_inline]] inline VF sincos_full_v(VF x, int shift) {
  VF r = sincos_v<VF, VD, VL>(x, shift);
  VI big = (x > 8192.0f) | (x < -8192.0f);
  if (any_lane(big))
    for (size_t l = 0; l < sizeof(VF) / sizeof(float); ++l)
      if (big[l] && std::abs(x[l]) != INFINITY)
        r[l] = float(shift ? std::cos(double(x[l])) : std::sin(double(x[l])));
  return r;
}

/// c[0] x^(N-1) + ... + c[N-1] by Horner's rule (coefficients from the highest power).
template <class V, size_t N>
[[gnu::always_inline]] inline V horner(V x, const double (&c)[N]) {
  V r = V{} + c[0];
  for (size_t i = 1; i < N; ++i) r = r * x + c[i];
  return r;
}

/// pow(x, y) for x > 0 and finite, y finite, as exp2(y log2 x) in double and rounded once to
/// float: log2 x = e + log(m) / ln 2 with m in [sqrt(1/2), sqrt(2)) and log(m) = 2 atanh(s),
/// s = (m - 1) / (m + 1), to s^17; exp2(t) = 2^n e^(f ln 2), n = t rounded, Taylor to degree 11.
/// Both are within about 1e-13 relative, so the double result is that close to pow's and the
/// float rounds as the exact value does but in the rarest near-ties. Other lanes (x <= 0,
/// infinities, NaN) are left to the caller (libm). VD, VL: double and int64 vectors of as many
/// lanes; no conversion between int64 and double (AVX2 has none): exponents go through the
/// 2^52 bit tricks.
template <class VF, class VD, class VL>
[[gnu::always_inline]] inline VF pow_v(VF x, VF y) {
  constexpr int64_t kMagicBits = 0x4338000000000000;  // 1.5 * 2^52: its low bits hold an integer
  constexpr double kMagic = 6755399441055744.0;
  VD xd = __builtin_convertvector(x, VD), yd = __builtin_convertvector(y, VD);
  VL bits;
  std::memcpy(&bits, &xd, sizeof bits);
  VL e = ((bits >> 52) & 0x7ff) - 1023;
  VL mbits = (bits & 0xfffffffffffff) | (int64_t{1023} << 52);
  VD m;
  std::memcpy(&m, &mbits, sizeof m);
  VL big = m > 1.4142135623730951;  // all ones where m is past sqrt 2
  m = big != 0 ? m * 0.5 : m;
  e -= big;  // -(-1)
  VL ebits = e + kMagicBits;
  VD ed;
  std::memcpy(&ed, &ebits, sizeof ed);
  ed -= kMagic;
  VD sv = (m - 1.0) / (m + 1.0), s2 = sv * sv;
  static constexpr double kAtanh[] = {1.0 / 17, 1.0 / 15, 1.0 / 13, 1.0 / 11, 1.0 / 9,
                                      1.0 / 7,  1.0 / 5,  1.0 / 3,  1.0};
  VD q = horner(s2, kAtanh);
  VD t = yd * (ed + (2.0 * 1.4426950408889634) * sv * q);  // y (e + log(m) / ln 2)
  t = t > 200.0 ? VD{} + 200.0 : t;                        // past float's range either way
  t = t < -200.0 ? VD{} - 200.0 : t;
  VD tn = t + kMagic;
  VL n;
  std::memcpy(&n, &tn, sizeof n);
  n -= kMagicBits;
  VD u = (t - (tn - kMagic)) * 0.6931471805599453;  // f ln 2, |f| <= 1/2
  static constexpr double kExp[] = {1.0 / 39916800, 1.0 / 3628800, 1.0 / 362880, 1.0 / 40320,
                                    1.0 / 5040,     1.0 / 720,     1.0 / 120,    1.0 / 24,
                                    1.0 / 6,        0.5,           1.0,          1.0};
  VD p = horner(u, kExp);
  VL scale_bits = (n + 1023) << 52;
  VD scale;
  std::memcpy(&scale, &scale_bits, sizeof scale);
  return __builtin_convertvector(p * scale, VF);
}

/// pow_v where it applies; libm's powf on the other lanes (x <= 0, infinities, NaN), so the
/// IEEE special cases are libm's.
template <class VF, class VI, class VD, class VL>
[[gnu::always_inline]] inline VF pow_full_v(VF x, VF y) {
  VF r = pow_v<VF, VD, VL>(x, y);
  VF ya = y < 0 ? -y : y;
  VI other = (x <= 0) | (x != x) | (x == INFINITY) | (y != y) | (ya == INFINITY);
  if (any_lane(other))
    for (size_t l = 0; l < sizeof(VF) / sizeof(float); ++l)
      if (other[l]) r[l] = std::pow(x[l], y[l]);
  return r;
}

#ifndef EMBER_VMATH_TEMPLATES_ONLY  // (vmath_avx512.cpp takes the templates alone)
// The functions on arrays, y[i] = f(x[i]) (exp_shifted: exp(x[i] - m) for an m at least every
// x[i], a softmax's row maximum), with the widest vectors the CPU has (cpu/isa.h: 16 lanes with
// AVX-512, 8 otherwise); vmath.cpp.
void exp_f32(const float* x, float* y, int64_t n);
void exp_shifted_f32(const float* x, float* y, int64_t n, float m);
void log_f32(const float* x, float* y, int64_t n);
void sigmoid_f32(const float* x, float* y, int64_t n);
void tanh_f32(const float* x, float* y, int64_t n);
void log1p_f32(const float* x, float* y, int64_t n);
void erf_f32(const float* x, float* y, int64_t n);
void gelu_f32(const float* x, float* y, int64_t n);
void sin_f32(const float* x, float* y, int64_t n);
void cos_f32(const float* x, float* y, int64_t n);
/// out[i] = pow(x[i], y[i * y_step]) (y_step 0: one exponent for all).
void pow_f32(const float* x, const float* y, int64_t y_step, float* out, int64_t n);
#endif

}  // namespace ember::cpu::vmath
