// The GLSL math library of rendered kernels (glsl_math.h): helpers GLSL lacks or gets wrong,
// and the function each math instruction of the IR becomes.
#include "ember/kernel/codegen/glsl_math.h"

#include <cmath>
#include <cstdio>

namespace ember::kernel::glsl {

namespace {

// Helpers for f32, i32 and u32 (always), then those for f64 and i64 (only where used, so a
// kernel without them needs neither capability).
// Division's residual a - q * b, rounded once (prelude() says which).
const char* kResidualDekker = R"GLSL(
// [2^-100, 2^100]: the residual (about 2^-24 of a) and its quotient stay normal, and the
// Veltkamp splits (4097 q, 4097 b) finite. Dekker's terms scale with a (q b is about a): one a
// subnormal flush drops is under 2^-124, far below the 2^-123 of a by which the residuals of
// neighbouring quotients differ, so flushing does not change the answer.
bool ember_div_range(float x) { return abs(x) >= 7.88860905e-31 && abs(x) <= 1.26765060e30; }
float ember_residual(float a, float b, float q) {
  precise float p = q * b;
  precise float cq = 4097.0 * q, qh = cq - (cq - q), ql = q - qh;
  precise float cb = 4097.0 * b, bh = cb - (cb - b), bl = b - bh;
  precise float e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl;
  precise float r = (a - p) - e;
  return r;
}
)GLSL";
const char* kResidualFma = R"GLSL(
// [2^-100, 2^126]: the residual (about 2^-23 of a) and its quotient stay normal.
bool ember_div_range(float x) { return abs(x) >= 7.88860905e-31 && abs(x) <= 8.50705917e37; }
float ember_residual(float a, float b, float q) { return fma(-q, b, a); }
)GLSL";

const char* kPrelude = R"GLSL(
// The address of element i of `size` bytes from `base` (i may be negative: views with negative
// strides), in 32-bit arithmetic with carry.
uvec2 ember_at(uvec2 base, int i, int size) {
  int hi, lo;
  imulExtended(i, size, hi, lo);
  uint carry;
  uint l = uaddCarry(base.x, uint(lo), carry);
  return uvec2(l, base.y + uint(hi) + carry);
}
float ember_rf16(float x) { return unpackHalf2x16(packHalf2x16(vec2(x, 0.0))).x; }
float ember_rbf16(float x) {
  uint u = floatBitsToUint(x);
  if (isnan(x)) return uintBitsToFloat(u | 0x00400000u);
  u += 0x7fffu + ((u >> 16) & 1u);
  return uintBitsToFloat(u & 0xffff0000u);
}
float ember_f16(uint bits) { return unpackHalf2x16(bits).x; }
uint ember_f16_bits(float x) { return packHalf2x16(vec2(x, 0.0)) & 0xffffu; }
float ember_bf16(uint bits) { return uintBitsToFloat(bits << 16); }
uint ember_bf16_bits(float x) { return floatBitsToUint(x) >> 16; }
int ember_i8(int x) { return (x << 24) >> 24; }
int ember_i16(int x) { return (x << 16) >> 16; }
uint ember_u8(uint x) { return x & 0xffu; }
float ember_max(float a, float b) { return (isnan(a) || a > b) ? a : b; }
float ember_min(float a, float b) { return (isnan(a) || a < b) ? a : b; }
int ember_max(int a, int b) { return max(a, b); }
int ember_min(int a, int b) { return min(a, b); }
uint ember_max(uint a, uint b) { return max(a, b); }
uint ember_min(uint a, uint b) { return min(a, b); }
bool ember_max(bool a, bool b) { return a || b; }
bool ember_min(bool a, bool b) { return a && b; }
float ember_tanh(float x) { return abs(x) > 9.0 ? sign(x) : tanh(x); }
float ember_sinh(float x) {
  if (abs(x) < 1e-2) return x + x * x * x * (1.0 / 6.0);
  if (abs(x) > 20.0) return sign(x) * exp(abs(x) - 0.693147180559945);
  return sinh(x);
}
float ember_expm1(float x) {
  if (abs(x) < 1e-2) return x + x * x * (0.5 + x * (1.0 / 6.0 + x * (1.0 / 24.0)));
  return exp(x) - 1.0;
}
float ember_log1p(float x) {
  if (isinf(x) && x > 0.0) return x;
  float u = 1.0 + x;
  if (u == 1.0) return x;
  return log(u) * (x / (u - 1.0));
}
float ember_erf(float x) {
  float z = abs(x);
  float e;
  if (z < 0.5) {
    float z2 = z * z;
    e = z * (1.1283791671 + z2 * (-0.3761263890 + z2 * (0.1128379167 + z2 * (-0.0268661706 +
        z2 * (0.0052239776 + z2 * -0.0008548325)))));
  } else {
    float t = 1.0 / (1.0 + 0.5 * z);
    e = 1.0 - t * exp(-z * z - 1.26551223 + t * (1.00002368 + t * (0.37409196 + t * (0.09678418 +
        t * (-0.18628806 + t * (0.27886807 + t * (-1.13520398 + t * (1.48851587 +
        t * (-0.82215223 + t * 0.17087277)))))))));
  }
  return x < 0.0 ? -e : e;
}
// asin and acos through atan (drivers' own are as coarse as the spec allows: 1e-4 on lavapipe).
float ember_asin(float x) { return atan(x, sqrt((1.0 - x) * (1.0 + x))); }
float ember_acos(float x) { return atan(sqrt((1.0 - x) * (1.0 + x)), x); }
// a / b correctly rounded, as the CPU and CUDA divide (Vulkan lets a driver's division be 2.5
// ulp off: NVIDIA's is): the driver's quotient corrected by its residual to within an ulp,
// then the neighbour toward the true quotient taken where its residual is smaller (exact:
// a quotient of floats is never within the residuals' rounding of a tie). Where an operand or
// the quotient is outside ember_div_range (zeros, infinities, NaN included) the driver's.
float ember_div(float a, float b) {
  float q = a / b;
  if (!(ember_div_range(a) && ember_div_range(b) && ember_div_range(q))) return q;
  precise float q1 = q + ember_residual(a, b, q) / b;
  float r = ember_residual(a, b, q1);
  bool up = (r > 0.0) == (b > 0.0);  // the quotient is above q1
  uint bits = floatBitsToUint(q1);
  float q2 = uintBitsToFloat(up == (q1 > 0.0) ? bits + 1u : bits - 1u);
  return abs(ember_residual(a, b, q2)) < abs(r) ? q2 : q1;
}
// fmod: the sign of a and |r| < |b|, also where a / b rounds across an integer (drivers'
// division may be off by ulps: NVIDIA's is).
float ember_rem(float a, float b) {
  if (isinf(b) && !isinf(a)) return a;
  float r = fma(-b, trunc(a / b), a);
  if (abs(r) >= abs(b)) r -= sign(r) * abs(b);
  if (r != 0.0 && sign(r) != sign(a)) r += sign(a) * abs(b);
  return r == 0.0 ? a * 0.0 : r;  // a zero keeps a's sign
}
bool ember_neg_zero(float x) { return x == 0.0 && (floatBitsToUint(x) >> 31) != 0u; }
// pow with C's special cases (GLSL leaves a negative base and 0^0 undefined).
float ember_pow(float x, float y) {
  if (y == 0.0 || x == 1.0) return 1.0;
  if (isnan(x) || isnan(y)) return x + y;
  bool yint = trunc(y) == y, odd = yint && mod(abs(y), 2.0) == 1.0;
  if (isinf(y)) {
    float ax = abs(x);
    if (ax == 1.0) return 1.0;
    return (ax > 1.0) == (y > 0.0) ? uintBitsToFloat(0x7f800000u) : 0.0;
  }
  if (x == 0.0 || isinf(x)) {
    bool big = (x == 0.0) == (y < 0.0);  // 0^-y and inf^y are infinite
    float r = big ? uintBitsToFloat(0x7f800000u) : 0.0;
    bool negative = odd && (x < 0.0 || ember_neg_zero(x));
    return negative ? -r : r;
  }
  if (x > 0.0) return pow(x, y);
  if (!yint) return uintBitsToFloat(0x7fc00000u);
  float r = pow(-x, y);
  return odd ? -r : r;
}
float ember_atan2(float y, float x) {
  if (isnan(x) || isnan(y)) return x + y;
  const float pi = 3.14159265358979;
  float s = (y < 0.0 || ember_neg_zero(y)) ? -1.0 : 1.0;
  if (y == 0.0) return (x < 0.0 || ember_neg_zero(x)) ? s * pi : s * 0.0;
  if (isinf(x)) {
    if (isinf(y)) return s * (x > 0.0 ? pi / 4.0 : 3.0 * pi / 4.0);
    return x > 0.0 ? s * 0.0 : s * pi;
  }
  if (isinf(y) || x == 0.0) return s * pi / 2.0;
  return atan(y, x);
}
float ember_cosh(float x) {
  float ax = abs(x);
  return ax > 20.0 ? exp(ax - 0.693147180559945) : 0.5 * (exp(ax) + exp(-ax));
}
float ember_asinh(float x) {
  float ax = abs(x), z = ax * ax;
  float r = ax > 1e18 ? log(ax) + 0.693147180559945
                      : ember_log1p(ax + z / (1.0 + sqrt(1.0 + z)));
  return x < 0.0 ? -r : r;
}
float ember_acosh(float x) {
  if (x > 1e18) return log(x) + 0.693147180559945;
  float t = x - 1.0;
  return ember_log1p(t + sqrt(t * (x + 1.0)));
}
float ember_atanh(float x) { return 0.5 * ember_log1p(2.0 * x / (1.0 - x)); }
int ember_rem(int a, int b) { return a - (a / b) * b; }
uint ember_rem(uint a, uint b) { return a % b; }
uint ember_mulhi(uint a, uint b) { uint hi, lo; umulExtended(a, b, hi, lo); return hi; }
int ember_mulhi(int a, int b) { int hi, lo; imulExtended(a, b, hi, lo); return hi; }
)GLSL";

const char* kPreludeF64 = R"GLSL(
// f64 exp, log, sin and cos (GLSL has none for doubles): range reduction and polynomials, to a
// few ulps over the ranges ember's kernels use.
double ember_dexp(double x) {
  if (isnan(x)) return x;
  if (x > 709.782712893384lf) return packDouble2x32(uvec2(0u, 0x7ff00000u));
  if (x < -745.2) return 0.0lf;
  double n = roundEven(x * 1.4426950408889634lf);
  double r = fma(-n, 6.93147180369123816490e-01lf, x);
  r = fma(-n, 1.90821492927058770002e-10lf, r);
  double p = 1.0lf / 479001600.0lf;
  p = fma(p, r, 1.0lf / 39916800.0lf);
  p = fma(p, r, 1.0lf / 3628800.0lf);
  p = fma(p, r, 1.0lf / 362880.0lf);
  p = fma(p, r, 1.0lf / 40320.0lf);
  p = fma(p, r, 1.0lf / 5040.0lf);
  p = fma(p, r, 1.0lf / 720.0lf);
  p = fma(p, r, 1.0lf / 120.0lf);
  p = fma(p, r, 1.0lf / 24.0lf);
  p = fma(p, r, 1.0lf / 6.0lf);
  p = fma(p, r, 0.5lf);
  p = fma(p, r, 1.0lf);
  p = fma(p, r, 1.0lf);
  int e = int(n);  // 2^e in two steps: e may be below the normal range
  return ldexp(ldexp(p, e / 2), e - e / 2);
}
double ember_dlog(double x) {
  if (isnan(x) || x < 0.0lf) return packDouble2x32(uvec2(0u, 0x7ff80000u));
  if (x == 0.0lf) return packDouble2x32(uvec2(0u, 0xfff00000u));
  if (isinf(x)) return x;
  double bias = 0.0lf;
  if (x < 2.2250738585072014e-308lf) {  // subnormal: scaled up first (frexp may not take it)
    x *= 18014398509481984.0lf;         // 2^54
    bias = -54.0lf;
  }
  int e;
  double m = frexp(x, e);  // m in [0.5, 1)
  if (m < 0.70710678118654752lf) { m *= 2.0lf; e -= 1; }
  double s = (m - 1.0lf) / (m + 1.0lf), z = s * s;
  double p = 2.0lf / 23.0lf;
  p = fma(p, z, 2.0lf / 21.0lf);
  p = fma(p, z, 2.0lf / 19.0lf);
  p = fma(p, z, 2.0lf / 17.0lf);
  p = fma(p, z, 2.0lf / 15.0lf);
  p = fma(p, z, 2.0lf / 13.0lf);
  p = fma(p, z, 2.0lf / 11.0lf);
  p = fma(p, z, 2.0lf / 9.0lf);
  p = fma(p, z, 2.0lf / 7.0lf);
  p = fma(p, z, 2.0lf / 5.0lf);
  p = fma(p, z, 2.0lf / 3.0lf);
  p = fma(p, z, 2.0lf);
  double de = double(e) + bias;
  return fma(de, 6.93147180369123816490e-01lf, fma(de, 1.90821492927058770002e-10lf, s * p));
}
// sin (q = 0) or cos (q = 1) of x: x - k pi/2 in three parts, then the quadrant's polynomial.
double ember_dsincos(double x, int q) {
  if (isnan(x) || isinf(x)) return packDouble2x32(uvec2(0u, 0x7ff80000u));
  double k = roundEven(x * 0.63661977236758134lf);
  double r = fma(-k, 1.57079632673412561417e+00lf, x);
  r = fma(-k, 6.07710050650619224932e-11lf, r);
  r = fma(-k, 2.02226624879595063154e-21lf, r);
  int quadrant = (int(mod(k, 4.0lf)) + q) & 3;
  double z = r * r;
  double sn = -1.0lf / 1307674368000.0lf;
  sn = fma(sn, z, 1.0lf / 6227020800.0lf);
  sn = fma(sn, z, -1.0lf / 39916800.0lf);
  sn = fma(sn, z, 1.0lf / 362880.0lf);
  sn = fma(sn, z, -1.0lf / 5040.0lf);
  sn = fma(sn, z, 1.0lf / 120.0lf);
  sn = fma(sn, z, -1.0lf / 6.0lf);
  sn = fma(sn * z, r, r);
  double cs = 1.0lf / 87178291200.0lf;
  cs = fma(cs, z, -1.0lf / 479001600.0lf);
  cs = fma(cs, z, 1.0lf / 3628800.0lf);
  cs = fma(cs, z, -1.0lf / 40320.0lf);
  cs = fma(cs, z, 1.0lf / 720.0lf);
  cs = fma(cs, z, -1.0lf / 24.0lf);
  cs = fma(cs, z, 0.5lf);
  cs = fma(-cs, z, 1.0lf);
  if (quadrant == 0) return sn;
  if (quadrant == 1) return cs;
  if (quadrant == 2) return -sn;
  return -cs;
}
double ember_dexpm1(double x) {
  if (abs(x) >= 0.5lf) return ember_dexp(x) - 1.0lf;
  double p = 1.0lf / 87178291200.0lf;  // x + x^2/2! + ... + x^14/14!
  p = fma(p, x, 1.0lf / 6227020800.0lf);
  p = fma(p, x, 1.0lf / 479001600.0lf);
  p = fma(p, x, 1.0lf / 39916800.0lf);
  p = fma(p, x, 1.0lf / 3628800.0lf);
  p = fma(p, x, 1.0lf / 362880.0lf);
  p = fma(p, x, 1.0lf / 40320.0lf);
  p = fma(p, x, 1.0lf / 5040.0lf);
  p = fma(p, x, 1.0lf / 720.0lf);
  p = fma(p, x, 1.0lf / 120.0lf);
  p = fma(p, x, 1.0lf / 24.0lf);
  p = fma(p, x, 1.0lf / 6.0lf);
  p = fma(p, x, 0.5lf);
  return fma(p * x, x, x);
}
// 2 atanh(s) = 2 (s + s^3/3 + ...) for |s| <= 0.2.
double ember_d2atanh(double s) {
  double z = s * s, p = 2.0lf / 27.0lf;
  for (int k = 25; k >= 1; k -= 2) p = fma(p, z, 2.0lf / double(k));
  return s * p;
}
double ember_dlog1p(double x) {
  if (isnan(x) || x < -1.0lf) return packDouble2x32(uvec2(0u, 0x7ff80000u));
  if (abs(x) < 0.5lf) return ember_d2atanh(x / (2.0lf + x));
  return ember_dlog(1.0lf + x);
}
double ember_dtanh(double x) {
  if (abs(x) > 20.0lf) return sign(x);
  double e = ember_dexpm1(2.0lf * x);
  return e / (e + 2.0lf);
}
double ember_dsinh(double x) {
  if (abs(x) < 0.5lf) {
    double e = ember_dexpm1(x);
    return 0.5lf * (e + e / (e + 1.0lf));  // (e^x - e^-x) / 2 without the cancellation
  }
  if (abs(x) > 40.0lf) return sign(x) * ember_dexp(abs(x) - 0.69314718055994531lf);
  double e = ember_dexp(abs(x));
  return sign(x) * 0.5lf * (e - 1.0lf / e);
}
double ember_dcosh(double x) {
  if (abs(x) > 40.0lf) return ember_dexp(abs(x) - 0.69314718055994531lf);
  double e = ember_dexp(abs(x));
  return 0.5lf * (e + 1.0lf / e);
}
// atan: |x| > 1 through 1/x, |x| > tan(pi/12) through pi/6, then the series.
double ember_datan(double x) {
  if (isnan(x)) return x;
  double ax = abs(x), off = 0.0lf;
  bool inv = ax > 1.0lf;
  if (inv) ax = 1.0lf / ax;
  if (ax > 0.26794919243112270lf) {
    ax = (ax * 1.7320508075688772lf - 1.0lf) / (ax + 1.7320508075688772lf);
    off = 0.52359877559829887lf;
  }
  double z = ax * ax, p = 1.0lf / 29.0lf;
  for (int k = 27; k >= 1; k -= 2) p = fma(p, z, (((k - 1) / 2) % 2 == 1 ? -1.0lf : 1.0lf) / double(k));
  double r = off + ax * p;
  if (inv) r = 1.5707963267948966lf - r;
  return x < 0.0lf ? -r : r;
}
double ember_datan2(double y, double x) {
  if (isnan(x) || isnan(y)) return x + y;
  const double pi = 3.1415926535897932lf;
  if (x == 0.0lf) {
    if (y == 0.0lf) return (floatBitsToUint(float(x)) >> 31) != 0u ? (y < 0.0lf || (floatBitsToUint(float(y)) >> 31) != 0u ? -pi : pi) : y;
    return y > 0.0lf ? pi / 2.0lf : -pi / 2.0lf;
  }
  if (isinf(x) || isinf(y)) {
    double s = (y < 0.0lf || (floatBitsToUint(float(y)) >> 31) != 0u) ? -1.0lf : 1.0lf;
    if (isinf(x) && isinf(y)) return s * (x > 0.0lf ? pi / 4.0lf : 3.0lf * pi / 4.0lf);
    if (isinf(x)) return x > 0.0lf ? s * 0.0lf : s * pi;
    return s * pi / 2.0lf;
  }
  double a = ember_datan(y / x);
  if (x > 0.0lf) return a;
  return (y >= 0.0lf && (floatBitsToUint(float(y)) >> 31) == 0u) ? a + pi : a - pi;
}
double ember_dasin(double x) { return ember_datan2(x, sqrt((1.0lf - x) * (1.0lf + x))); }
double ember_dacos(double x) { return ember_datan2(sqrt((1.0lf - x) * (1.0lf + x)), x); }
double ember_dasinh(double x) {
  double ax = abs(x), z = ax * ax;
  double r = ax > 1e150lf ? ember_dlog(ax) + 0.69314718055994531lf
                          : ember_dlog1p(ax + z / (1.0lf + sqrt(1.0lf + z)));
  return x < 0.0lf ? -r : r;
}
double ember_dacosh(double x) {
  if (x > 1e150lf) return ember_dlog(x) + 0.69314718055994531lf;
  double t = x - 1.0lf;
  return ember_dlog1p(t + sqrt(t * (x + 1.0lf)));
}
double ember_datanh(double x) { return 0.5lf * ember_dlog1p(2.0lf * x / (1.0lf - x)); }
// erf: the series below 2.5, erfc's continued fraction above (1 for |x| > 6).
double ember_derf(double x) {
  double ax = abs(x);
  if (isnan(x)) return x;
  if (ax > 6.0lf) return sign(x);
  double r;
  if (ax < 2.5lf) {
    double z = ax * ax, term = ax, sum = ax;
    for (int n = 1; n < 60; ++n) {
      term *= -z / double(n);
      double add = term / double(2 * n + 1);
      sum += add;
      if (abs(add) < 1e-17lf * abs(sum)) break;
    }
    r = sum * 1.1283791670955126lf;
  } else {  // erfc(x) = exp(-x^2)/sqrt(pi) * 1/(x + 1/2/(x + 1/(x + 3/2/(x + ...)))) (Lentz)
    double f = ax, c = ax, d = 0.0lf;
    for (int n = 1; n < 200; ++n) {
      double an = 0.5lf * double(n);
      d = ax + an * d;
      d = 1.0lf / d;
      c = ax + an / c;
      double delta = c * d;
      f *= delta;
      if (abs(delta - 1.0lf) < 1e-16lf) break;
    }
    r = 1.0lf - ember_dexp(-ax * ax) / (f * 1.7724538509055160lf);
  }
  return x < 0.0lf ? -r : r;
}
double ember_dpow(double x, double y) {
  if (y == 0.0lf || x == 1.0lf) return 1.0lf;
  if (isnan(x) || isnan(y)) return x + y;
  bool odd = !isinf(y) && trunc(y) == y && mod(abs(y), 2.0lf) == 1.0lf;
  if (isinf(y)) {
    double ax = abs(x);
    if (ax == 1.0lf) return 1.0lf;
    return (ax > 1.0lf) == (y > 0.0lf) ? packDouble2x32(uvec2(0u, 0x7ff00000u)) : 0.0lf;
  }
  if (isinf(x)) {
    double r = (y > 0.0lf) ? packDouble2x32(uvec2(0u, 0x7ff00000u)) : 0.0lf;
    return (x < 0.0lf && odd) ? -r : r;
  }
  if (x > 0.0lf) return ember_dexp(y * ember_dlog(x));
  if (x == 0.0lf) return y > 0.0lf ? (odd ? x : 0.0lf) : (odd && (floatBitsToUint(float(x)) >> 31) != 0u ? -1.0lf / 0.0lf : 1.0lf / 0.0lf);
  if (trunc(y) != y) return packDouble2x32(uvec2(0u, 0x7ff80000u));
  double r = ember_dexp(y * ember_dlog(-x));
  return odd ? -r : r;
}
double ember_dexp2(double x) { return ember_dexp(x * 0.69314718055994531lf); }
double ember_dlog2(double x) { return ember_dlog(x) * 1.4426950408889634lf; }
double ember_dsin(double x) { return ember_dsincos(x, 0); }
double ember_dcos(double x) { return ember_dsincos(x, 1); }
double ember_dtan(double x) { return ember_dsincos(x, 0) / ember_dsincos(x, 1); }
double ember_max(double a, double b) { return (isnan(a) || a > b) ? a : b; }
double ember_min(double a, double b) { return (isnan(a) || a < b) ? a : b; }
double ember_residual(double a, double b, double q) {  // as the f32 ones
  precise double p = q * b;
  precise double cq = 134217729.0lf * q, qh = cq - (cq - q), ql = q - qh;
  precise double cb = 134217729.0lf * b, bh = cb - (cb - b), bl = b - bh;
  precise double e = ((qh * bh - p) + qh * bl + ql * bh) + ql * bl;
  precise double r = (a - p) - e;
  return r;
}
bool ember_div_range(double x) { return abs(x) >= 3.0549363634996047e-151lf && abs(x) <= 3.273390607896142e150lf; }
double ember_div(double a, double b) {
  double q = a / b;
  if (!(ember_div_range(a) && ember_div_range(b) && ember_div_range(q))) return q;
  precise double q1 = q + ember_residual(a, b, q) / b;
  double r = ember_residual(a, b, q1);
  bool up = (r > 0.0lf) == (b > 0.0lf);
  uvec2 w = unpackDouble2x32(q1);  // (low, high) words
  if (up == (q1 > 0.0lf)) {
    w.x += 1u;
    if (w.x == 0u) w.y += 1u;
  } else {
    if (w.x == 0u) w.y -= 1u;
    w.x -= 1u;
  }
  double q2 = packDouble2x32(w);
  return abs(ember_residual(a, b, q2)) < abs(r) ? q2 : q1;
}
double ember_rem(double a, double b) {
  double r = fma(-b, trunc(a / b), a);
  if (abs(r) >= abs(b)) r -= sign(r) * abs(b);
  if (r != 0.0lf && sign(r) != sign(a)) r += sign(a) * abs(b);
  return r;
}
)GLSL";

const char* kPreludeI64 = R"GLSL(
int64_t ember_max(int64_t a, int64_t b) { return a > b ? a : b; }
int64_t ember_min(int64_t a, int64_t b) { return a < b ? a : b; }
int64_t ember_rem(int64_t a, int64_t b) { return a - (a / b) * b; }
)GLSL";

}  // namespace

// The type a value of `s` lives in.
std::string reg(ScalarType s) {
  switch (s) {
    case ScalarType::Void:
      return "void";
    case ScalarType::Bool:
      return "bool";
    case ScalarType::I8:
    case ScalarType::I16:
    case ScalarType::I32:
      return "int";
    case ScalarType::U8:
    case ScalarType::U32:
      return "uint";
    case ScalarType::I64:
      return "int64_t";
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::F32:
      return "float";
    case ScalarType::F64:
      return "double";
  }
  return "void";
}

// The type an element of `s` is stored as in a buffer.
std::string storage(ScalarType s) {
  switch (s) {
    case ScalarType::Bool:
    case ScalarType::U8:
      return "uint8_t";
    case ScalarType::I8:
      return "int8_t";
    case ScalarType::I16:
      return "int16_t";
    case ScalarType::F16:
    case ScalarType::BF16:
      return "uint16_t";
    default:
      return reg(s);
  }
}

// The type a scalar parameter of `s` is passed as in the parameter buffer.
ScalarType passed_as(ScalarType s) {
  switch (s) {
    case ScalarType::Bool:
    case ScalarType::U8:
      return ScalarType::U32;
    case ScalarType::I8:
    case ScalarType::I16:
      return ScalarType::I32;
    case ScalarType::F16:
    case ScalarType::BF16:
      return ScalarType::F32;
    default:
      return s;
  }
}

// `x`, a register value of `s`, made a valid value of `s` again (rounded, narrowed).
std::string fix(ScalarType s, const std::string& x) {
  switch (s) {
    case ScalarType::F16:
      return "ember_rf16(" + x + ")";
    case ScalarType::BF16:
      return "ember_rbf16(" + x + ")";
    case ScalarType::I8:
      return "ember_i8(" + x + ")";
    case ScalarType::I16:
      return "ember_i16(" + x + ")";
    case ScalarType::U8:
      return "ember_u8(" + x + ")";
    default:
      return x;
  }
}

std::string zero(ScalarType s) {
  switch (s) {
    case ScalarType::Bool:
      return "false";
    case ScalarType::U8:
    case ScalarType::U32:
      return "0u";
    case ScalarType::I64:
      return "0l";
    case ScalarType::F64:
      return "0.0lf";
    case ScalarType::F16:
    case ScalarType::BF16:
    case ScalarType::F32:
      return "0.0";
    default:
      return "0";
  }
}

std::string float_literal(double v, ScalarType s) {
  bool f64 = s == ScalarType::F64;
  if (std::isnan(v))
    return f64 ? "packDouble2x32(uvec2(0u, 0x7ff80000u))" : "uintBitsToFloat(0x7fc00000u)";
  if (std::isinf(v)) {
    if (f64)
      return v > 0 ? "packDouble2x32(uvec2(0u, 0x7ff00000u))"
                   : "packDouble2x32(uvec2(0u, 0xfff00000u))";
    return v > 0 ? "uintBitsToFloat(0x7f800000u)" : "uintBitsToFloat(0xff800000u)";
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, f64 ? "%.17g" : "%.9g", f64 ? v : static_cast<float>(v));
  std::string lit = buf;
  if (lit.find_first_of(".en") == std::string::npos) lit += ".0";
  if (f64) return "double(" + lit + "lf)";
  return fix(s, lit);
}

std::string int_literal(int64_t v, ScalarType s) {
  switch (s) {
    case ScalarType::Bool:
      return v ? "true" : "false";
    case ScalarType::I64:
      if (v == INT64_MIN) return "(-9223372036854775807l - 1l)";
      return std::to_string(v) + "l";
    case ScalarType::U8:
    case ScalarType::U32:
      return std::to_string(static_cast<uint32_t>(v)) + "u";
    default:
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return std::to_string(static_cast<int32_t>(v));
  }
}

std::string prelude(bool f64, bool i64, bool exact_fma) {
  // a - q * b rounded once (division's residual): where the device's fma rounds once, that;
  // else q * b as p + e exactly (Dekker's product on Veltkamp's halves), a - p exact where q is
  // near a / b.
  std::string s = exact_fma ? kResidualFma : kResidualDekker;
  s += kPrelude;
  if (f64) s += kPreludeF64;
  if (i64) s += kPreludeI64;
  return s;
}

const char* math_function(Op op, ScalarType type) {
  // f64: GLSL has sqrt, inversesqrt, floor, ceil, roundEven and trunc; the rest is ember's own.
  const bool d = type == ScalarType::F64;
  switch (op) {
    case Op::Exp:
      return d ? "ember_dexp" : "exp";
    case Op::Exp2:
      return d ? "ember_dexp2" : "exp2";
    case Op::Log:
      return d ? "ember_dlog" : "log";
    case Op::Log2:
      return d ? "ember_dlog2" : "log2";
    case Op::Sqrt:
      return "sqrt";
    case Op::Rsqrt:
      return "inversesqrt";
    case Op::Sin:
      return d ? "ember_dsin" : "sin";
    case Op::Cos:
      return d ? "ember_dcos" : "cos";
    case Op::Tan:
      return d ? "ember_dtan" : "tan";
    case Op::Tanh:
      return d ? "ember_dtanh" : "ember_tanh";
    case Op::Erf:
      return d ? "ember_derf" : "ember_erf";
    case Op::Floor:
      return "floor";
    case Op::Ceil:
      return "ceil";
    case Op::Round:
      return "roundEven";
    case Op::Trunc:
      return "trunc";
    case Op::Pow:
      return d ? "ember_dpow" : "ember_pow";
    case Op::Expm1:
      return d ? "ember_dexpm1" : "ember_expm1";
    case Op::Log1p:
      return d ? "ember_dlog1p" : "ember_log1p";
    case Op::Asin:
      return d ? "ember_dasin" : "ember_asin";
    case Op::Acos:
      return d ? "ember_dacos" : "ember_acos";
    case Op::Atan:
      return d ? "ember_datan" : "atan";
    case Op::Sinh:
      return d ? "ember_dsinh" : "ember_sinh";
    case Op::Cosh:
      return d ? "ember_dcosh" : "ember_cosh";
    case Op::Asinh:
      return d ? "ember_dasinh" : "ember_asinh";
    case Op::Acosh:
      return d ? "ember_dacosh" : "ember_acosh";
    case Op::Atanh:
      return d ? "ember_datanh" : "ember_atanh";
    case Op::Atan2:
      return d ? "ember_datan2" : "ember_atan2";
    default:
      return "?";
  }
}

}  // namespace ember::kernel::glsl
