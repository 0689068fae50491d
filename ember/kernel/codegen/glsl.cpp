// IR -> GLSL 4.50 compute shader (Vulkan). Half types live in f32 registers and are rounded
// after every operation (as the CUDA renderer and the CPU do); 8- and 16-bit integers live in
// 32-bit registers, narrowed after every operation; storage keeps their real widths.
#include "ember/kernel/codegen/glsl.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <set>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/validate.h"

namespace ember::kernel {

namespace {

// Helpers for f32, i32 and u32 (always), then those for f64 and i64 (only where used, so a
// kernel without them needs neither capability).
const char* kPrelude = R"GLSL(
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
double ember_max(double a, double b) { return (isnan(a) || a > b) ? a : b; }
double ember_min(double a, double b) { return (isnan(a) || a < b) ? a : b; }
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

const char* math_name(Op op) {
  switch (op) {
    case Op::Exp:
      return "exp";
    case Op::Exp2:
      return "exp2";
    case Op::Log:
      return "log";
    case Op::Log2:
      return "log2";
    case Op::Sqrt:
      return "sqrt";
    case Op::Rsqrt:
      return "inversesqrt";
    case Op::Sin:
      return "sin";
    case Op::Cos:
      return "cos";
    case Op::Tan:
      return "tan";
    case Op::Tanh:
      return "ember_tanh";
    case Op::Erf:
      return "ember_erf";
    case Op::Floor:
      return "floor";
    case Op::Ceil:
      return "ceil";
    case Op::Round:
      return "roundEven";
    case Op::Trunc:
      return "trunc";
    case Op::Pow:
      return "ember_pow";
    case Op::Expm1:
      return "ember_expm1";
    case Op::Log1p:
      return "ember_log1p";
    case Op::Asin:
      return "ember_asin";
    case Op::Acos:
      return "ember_acos";
    case Op::Atan:
      return "atan";
    case Op::Sinh:
      return "ember_sinh";
    case Op::Cosh:
      return "ember_cosh";
    case Op::Asinh:
      return "ember_asinh";
    case Op::Acosh:
      return "ember_acosh";
    case Op::Atanh:
      return "ember_atanh";
    case Op::Atan2:
      return "ember_atan2";
    default:
      return "?";
  }
}
// The math GLSL has for doubles; the rest is computed in f32.
bool f64_native(Op op) {
  return op == Op::Sqrt || op == Op::Rsqrt || op == Op::Floor || op == Op::Ceil ||
         op == Op::Round || op == Op::Trunc;
}

const char* binary_symbol(Op op, ScalarType s) {
  switch (op) {
    case Op::Add:
      return "+";
    case Op::Sub:
      return "-";
    case Op::Mul:
      return "*";
    case Op::Div:
      return "/";
    case Op::And:
      return s == ScalarType::Bool ? "&&" : "&";
    case Op::Or:
      return s == ScalarType::Bool ? "||" : "|";
    case Op::Xor:
      return s == ScalarType::Bool ? "!=" : "^";
    case Op::Shl:
      return "<<";
    case Op::Shr:
      return ">>";
    case Op::Eq:
      return "==";
    case Op::Ne:
      return "!=";
    case Op::Lt:
      return "<";
    case Op::Le:
      return "<=";
    case Op::Gt:
      return ">";
    case Op::Ge:
      return ">=";
    default:
      return "?";
  }
}

[[noreturn]] void cannot(const Kernel& k, const std::string& what) {
  throw ValueError("[kernel " + k.name + "] no GLSL for " + what);
}

// Buffers whose atomics GLSL lacks for their type: compare-and-swap loops on a u32 view.
std::vector<char> u32_views(const Kernel& k) {
  std::vector<char> alias(k.params.size(), 0);
  for (const Inst& i : k.body) {
    if ((info(i.op).form != Form::Atomic && info(i.op).form != Form::AtomicCas) ||
        i.space != Space::Global)
      continue;
    ScalarType s = k.params[i.ref].type.scalar;
    bool native = s == ScalarType::I32 || s == ScalarType::U32 || s == ScalarType::I64 ||
                  (s == ScalarType::F32 && i.op == Op::AtomicAdd);
    if (native) continue;
    if (s != ScalarType::F32 && s != ScalarType::F16 && s != ScalarType::BF16 &&
        s != ScalarType::F64)
      cannot(k, "atomic " + std::string(name(i.op)) + " on " + std::string(name(s)));
    if ((is_half(s) || s == ScalarType::F64) && i.op != Op::AtomicAdd)
      cannot(k, "atomic " + std::string(name(i.op)) + " on " + std::string(name(s)));
    alias[i.ref] = 1;
  }
  return alias;
}

class Renderer {
 public:
  explicit Renderer(const Kernel& k) : k_(k), types_(k.num_values), alias_(u32_views(k)) {
    for (const Inst& i : k.body)
      if (i.result != kNoValue) types_[i.result] = i.type;
  }

  std::string run() {
    bool f64 = false, i64 = false, s16 = false, s8 = false, sub = false, shuf = false;
    bool ballot = false, fatomic = false, i64atomic = false;
    auto note = [&](Type t) {
      f64 = f64 || t.scalar == ScalarType::F64;
      i64 = i64 || t.scalar == ScalarType::I64;
    };
    for (const Param& p : k_.params) {
      note(p.type);
      if (p.kind == Param::Buffer) {
        int bytes = byte_size(p.type.scalar);
        s16 = s16 || bytes == 2;
        s8 = s8 || bytes == 1;
      }
    }
    for (const SharedArray& s : k_.shared) note(s.type);
    for (const LocalVar& v : k_.vars) note(v.type);
    for (const Inst& i : k_.body) {
      note(i.type);
      for (ValueId a : i.args) note(types_[a]);
      if (i.op == Op::Cast && types_[i.args[0]].scalar == ScalarType::F64 &&
          (i.type.scalar == ScalarType::U8 || i.type.scalar == ScalarType::U32))
        i64 = true;  // through int64_t (below)
      Form f = info(i.op).form;
      sub =
          sub || f == Form::SubgroupReduce || i.op == Op::SubgroupLane || i.op == Op::SubgroupSize;
      shuf = shuf || f == Form::Shuffle || f == Form::SubgroupReduce;
      ballot = ballot || f == Form::Ballot;
      if (f == Form::Atomic && i.space == Space::Shared &&
          k_.shared[i.ref].type.scalar == ScalarType::F32)
        fatomic = true;
      if (f == Form::Atomic && i.space == Space::Global) {
        ScalarType s = k_.params[i.ref].type.scalar;
        fatomic = fatomic || (s == ScalarType::F32 && !alias_[i.ref]);
        i64atomic = i64atomic || s == ScalarType::I64 || s == ScalarType::F64;
        if (s == ScalarType::F64) i64 = true;
      }
    }
    std::string s = "// kernel " + k_.name + " (generated by ember)\n#version 450\n";
    s += "#extension GL_EXT_buffer_reference : require\n";
    bool views = false;
    for (const Inst& i : k_.body)
      if ((i.op == Op::Load || i.op == Op::Store) && i.space == Space::Global &&
          (i.op == Op::Load ? i.type.width : types_[i.args[1]].width) > 1)
        views = true;
    if (i64 || views) s += "#extension GL_EXT_shader_explicit_arithmetic_types_int64 : require\n";
    if (s16) s += "#extension GL_EXT_shader_16bit_storage : require\n";
    if (s8) s += "#extension GL_EXT_shader_8bit_storage : require\n";
    if (s16 || s8) {
      s += "#extension GL_EXT_shader_explicit_arithmetic_types_int16 : require\n";
      s += "#extension GL_EXT_shader_explicit_arithmetic_types_int8 : require\n";
    }
    if (sub || shuf || ballot) s += "#extension GL_KHR_shader_subgroup_basic : require\n";
    if (shuf) s += "#extension GL_KHR_shader_subgroup_shuffle : require\n";
    if (shuf && i64) s += "#extension GL_EXT_shader_subgroup_extended_types_int64 : require\n";
    if (ballot) s += "#extension GL_KHR_shader_subgroup_ballot : require\n";
    if (fatomic) s += "#extension GL_EXT_shader_atomic_float : require\n";
    if (i64atomic) s += "#extension GL_EXT_shader_atomic_int64 : require\n";
    s += "layout(local_size_x = " + std::to_string(k_.workgroup[0]) +
         ", local_size_y = " + std::to_string(k_.workgroup[1]) +
         ", local_size_z = " + std::to_string(k_.workgroup[2]) + ") in;\n";
    // Buffers are device addresses (buffer references) held, with the scalars, in the
    // argument block at binding 0; each is copied to a local at the start.
    GlslLayout L = glsl_layout(k_);
    std::string block, locals;
    for (const GlslLayout::Arg& ar : L.args) {
      const Param& p = k_.params[ar.param];
      if (!ar.address) {
        block += "  " + reg(ar.as) + " e_" + p.name + ";\n";
        continue;
      }
      bool aliased = alias_[ar.param];
      std::string q = p.access == Access::Read    ? "readonly "
                      : p.access == Access::Write ? "writeonly "
                                                  : "";
      if (aliased) q = "";  // read and written through its u32 view
      bool f64view = aliased && p.type.scalar == ScalarType::F64;
      std::string elem = f64view                              ? "uint64_t"
                         : aliased && !is_half(p.type.scalar) ? "uint"
                                                              : storage(p.type.scalar);
      int align = f64view ? 8 : aliased ? 4 : byte_size(p.type.scalar);
      std::string ref = "ember_r_" + p.name;
      s += "layout(buffer_reference, std430, buffer_reference_align = " + std::to_string(align) +
           ") " + q + "buffer " + ref + " { " + elem + " v[]; };\n";
      block += "  " + ref + " e_" + p.name + ";\n";
      locals += "  " + ref + " e_" + p.name + " = ember_p.e_" + p.name + ";\n";
      if (ar.word_offset != GlslLayout::kNone) {
        // 16-bit elements: compare-and-swap on the 32-bit words holding them.
        s += "layout(buffer_reference, std430, buffer_reference_align = 4) buffer " + ref +
             "_w { uint v[]; };\n";
        block += "  " + ref + "_w e_" + p.name + "_w;\n";
        locals += "  " + ref + "_w e_" + p.name + "_w = ember_p.e_" + p.name + "_w;\n";
      }
    }
    // Vector accesses of 4, 8 or 16 bytes: one load or store of words through a view of the
    // buffer with that alignment (the IR promises an aligned index; the host an aligned base).
    for (const Inst& i : k_.body) {
      if ((i.op != Op::Load && i.op != Op::Store) || i.space != Space::Global) continue;
      int w = i.op == Op::Load ? i.type.width : types_[i.args[1]].width;
      int bytes = w * byte_size(k_.params[i.ref].type.scalar);
      if (w == 1 || alias_[i.ref] || (bytes != 4 && bytes != 8 && bytes != 16)) continue;
      std::string view = "e_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
      if (views_.count(view)) continue;
      views_.insert(view);
      std::string ref = "ember_r_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
      std::string words = bytes == 4 ? "uint" : bytes == 8 ? "uvec2" : "uvec4";
      // A buffer only read may say so; none says restrict (a kernel may get one buffer as two
      // parameters: an op written into its input's buffer).
      bool read_only = k_.params[i.ref].access == Access::Read;
      s += "layout(buffer_reference, std430, buffer_reference_align = " + std::to_string(bytes) +
           ") " + (read_only ? "readonly " : "") + "buffer " + ref + " { " + words + " v[]; };\n";
      locals += "  " + ref + " " + view + " = " + ref + "(uint64_t(ember_p.e_" +
                k_.params[i.ref].name + "));\n";
      i64 = true;
    }
    if (block.empty()) block = "  uint ember_unused;\n";
    s += "layout(std430, binding = 0) readonly buffer ember_args {\n" + block + "} ember_p;\n";
    for (const SharedArray& sh : k_.shared)
      s += "shared " + reg(sh.type.scalar) + " e_" + sh.name + "[" + std::to_string(sh.count) +
           "];\n";
    s += kPrelude;
    if (f64) s += kPreludeF64;
    if (i64) s += kPreludeI64;
    s += "\nvoid main() {\n" + locals;
    for (const LocalVar& v : k_.vars)
      s += "  " + decl(v.type, "e_" + v.name) + " = " + zero_of(v.type) + ";\n";
    out_ = std::move(s);
    for (const Inst& i : k_.body) inst(i);
    out_ += "}\n";
    return std::move(out_);
  }

 private:
  static std::string val(ValueId v) { return "_v" + std::to_string(v); }
  // An element index (GLSL indexes with 32 bits: buffers hold fewer than 2^32 elements), plus l.
  std::string index(ValueId v, int l = 0) const {
    std::string x = types_[v].scalar == ScalarType::I64 ? "uint(" + val(v) + ")" : val(v);
    return l ? "(" + x + " + " + std::to_string(l) + ")" : x;
  }
  std::string lane(ValueId v, int l) const {
    return types_[v].width == 1 ? val(v) : val(v) + "[" + std::to_string(l) + "]";
  }
  static std::string decl(Type t, const std::string& n) {
    return reg(t.scalar) + " " + n + (t.width > 1 ? "[" + std::to_string(t.width) + "]" : "");
  }
  static std::string zero_of(Type t) {
    if (t.width == 1) return zero(t.scalar);
    std::string s = reg(t.scalar) + "[" + std::to_string(t.width) + "](";
    for (int l = 0; l < t.width; ++l) s += (l ? ", " : "") + zero(t.scalar);
    return s + ")";
  }
  void line(const std::string& s) { out_ += std::string(2 * depth_, ' ') + s + "\n"; }

  template <class F>
  void lanes(const Inst& i, F&& expr) {
    if (i.type.width == 1) {
      line(decl(i.type, val(i.result)) + " = " + expr(0) + ";");
      return;
    }
    line(decl(i.type, val(i.result)) + ";");
    for (int l = 0; l < i.type.width; ++l)
      line(val(i.result) + "[" + std::to_string(l) + "] = " + expr(l) + ";");
  }

  // A buffer element as a register value, and a register value as a buffer element.
  std::string from_storage(ScalarType s, const std::string& x, bool aliased) const {
    if (aliased && s == ScalarType::F32) return "uintBitsToFloat(" + x + ")";
    if (aliased && s == ScalarType::F64) return "uint64BitsToDouble(" + x + ")";
    switch (s) {
      case ScalarType::Bool:
        return "(uint(" + x + ") != 0u)";
      case ScalarType::I8:
      case ScalarType::I16:
        return "int(" + x + ")";
      case ScalarType::U8:
        return "uint(" + x + ")";
      case ScalarType::F16:
        return "ember_f16(uint(" + x + "))";
      case ScalarType::BF16:
        return "ember_bf16(uint(" + x + "))";
      default:
        return x;
    }
  }
  std::string to_storage(ScalarType s, const std::string& x, bool aliased) const {
    if (aliased && s == ScalarType::F32) return "floatBitsToUint(" + x + ")";
    if (aliased && s == ScalarType::F64) return "doubleBitsToUint64(" + x + ")";
    switch (s) {
      case ScalarType::Bool:
        return "uint8_t(" + x + " ? 1u : 0u)";
      case ScalarType::I8:
        return "int8_t(" + x + ")";
      case ScalarType::I16:
        return "int16_t(" + x + ")";
      case ScalarType::U8:
        return "uint8_t(" + x + ")";
      case ScalarType::F16:
        return "uint16_t(ember_f16_bits(" + x + "))";
      case ScalarType::BF16:
        return "uint16_t(ember_bf16_bits(" + x + "))";
      default:
        return x;
    }
  }

  // Lane l (of elements of `s`) of the words `w` (a uint, uvec2 or uvec4 of `bytes`).
  std::string lane_from_words(ScalarType s, const std::string& w, int l, int bytes) const {
    int size = byte_size(s);
    auto word = [&](int k) { return bytes == 4 ? w : w + "[" + std::to_string(k) + "]"; };
    if (size == 8) {
      std::string pair = "uvec2(" + word(2 * l) + ", " + word(2 * l + 1) + ")";
      return s == ScalarType::F64 ? "packDouble2x32(" + pair + ")"
                                  : "int64_t(packUint2x32(" + pair + "))";
    }
    int k = l * size / 4, shift = (l * size % 4) * 8;
    std::string bits = word(k);
    if (size < 4) {
      std::string mask = size == 2 ? "0xffffu" : "0xffu";
      bits = "((" + bits + " >> " + std::to_string(shift) + "u) & " + mask + ")";
    }
    switch (s) {
      case ScalarType::F32:
        return "uintBitsToFloat(" + bits + ")";
      case ScalarType::I32:
        return "int(" + bits + ")";
      case ScalarType::F16:
        return "ember_f16(" + bits + ")";
      case ScalarType::BF16:
        return "ember_bf16(" + bits + ")";
      case ScalarType::I16:
        return "ember_i16(int(" + bits + "))";
      case ScalarType::I8:
        return "ember_i8(int(" + bits + "))";
      case ScalarType::Bool:
        return "(" + bits + " != 0u)";
      default:  // u32, u8
        return bits;
    }
  }
  // The words (a uint, uvec2 or uvec4 of `bytes`) holding the w lanes of value v.
  std::string words_from_lanes(ScalarType s, ValueId v, int w, int bytes) const {
    int size = byte_size(s);
    int n = bytes / 4;
    std::vector<std::string> words(static_cast<size_t>(n), std::string());
    for (int l = 0; l < w; ++l) {
      std::string x = lane(v, l);
      if (size == 8) {
        std::string pair = s == ScalarType::F64 ? "unpackDouble2x32(" + x + ")"
                                                : "unpackUint2x32(uint64_t(" + x + "))";
        words[2 * size_t(l)] = pair + ".x";
        words[2 * size_t(l) + 1] = pair + ".y";
        continue;
      }
      std::string bits;
      switch (s) {
        case ScalarType::F32:
          bits = "floatBitsToUint(" + x + ")";
          break;
        case ScalarType::F16:
          bits = "ember_f16_bits(" + x + ")";
          break;
        case ScalarType::BF16:
          bits = "ember_bf16_bits(" + x + ")";
          break;
        case ScalarType::Bool:
          bits = "(" + x + " ? 1u : 0u)";
          break;
        default:
          bits = "uint(" + x + ")";
      }
      if (size < 4)
        bits = "((" + bits + " & " + (size == 2 ? "0xffffu" : "0xffu") + ") << " +
               std::to_string(l * size % 4 * 8) + "u)";
      std::string& word = words[size_t(l * size / 4)];
      word = word.empty() ? bits : word + " | " + bits;
    }
    if (n == 1) return words[0];
    std::string r = (n == 2 ? "uvec2(" : "uvec4(");
    for (int k = 0; k < n; ++k) r += (k ? ", " : "") + words[size_t(k)];
    return r + ")";
  }

  std::string geometry(const Inst& i) const {
    static const char* axis[] = {"x", "y", "z"};
    std::string a = axis[i.ref % 3];
    switch (i.op) {
      case Op::GlobalId:
        return "gl_GlobalInvocationID." + a;
      case Op::LocalId:
        return "gl_LocalInvocationID." + a;
      case Op::GroupId:
        return "gl_WorkGroupID." + a;
      case Op::LocalSize:
        return "gl_WorkGroupSize." + a;
      case Op::NumGroups:
        return "gl_NumWorkGroups." + a;
      case Op::SubgroupLane:
        return "gl_SubgroupInvocationID";
      default:
        return "gl_SubgroupSize";
    }
  }

  // A compare-and-swap loop on the u32 word at `word` of the view `view`: `next(old)` gives the
  // new word from the old one; the result is the old word.
  void cas_loop(const std::string& view, const std::string& word, const std::string& old_name,
                const std::function<std::string(const std::string&)>& next,
                const std::string& word_type = "uint") {
    line(word_type + " " + old_name + " = " + view + "[" + word + "];");
    line("for (;;) {");
    ++depth_;
    line(word_type + " ember_want = " + next(old_name) + ";");
    line("if (ember_want == " + old_name + ") break;");
    line(word_type + " ember_seen = atomicCompSwap(" + view + "[" + word + "], " + old_name +
         ", ember_want);");
    line("if (ember_seen == " + old_name + ") break;");
    line(old_name + " = ember_seen;");
    --depth_;
    line("}");
  }

  void atomic(const Inst& i) {
    std::string r = val(i.result);
    std::string idx = index(i.args[0]), v = val(i.args[1]);
    if (i.space == Space::Shared) {
      const SharedArray& sh = k_.shared[i.ref];
      ScalarType s = sh.type.scalar;
      if (s != ScalarType::I32 && s != ScalarType::U32 &&
          !(s == ScalarType::F32 && i.op == Op::AtomicAdd))
        cannot(k_, "a shared atomic on " + std::string(name(s)));
      std::string at = "e_" + sh.name + "[" + idx + "]";
      const char* fn = i.op == Op::AtomicAdd    ? "atomicAdd("
                       : i.op == Op::AtomicMin  ? "atomicMin("
                       : i.op == Op::AtomicMax  ? "atomicMax("
                       : i.op == Op::AtomicExch ? "atomicExchange("
                                                : "atomicCompSwap(";
      std::string extra = i.op == Op::AtomicCas ? ", " + val(i.args[2]) : "";
      line(decl(i.type, r) + " = " + fn + at + ", " + v + extra + ");");
      return;
    }
    const Param& p = k_.params[i.ref];
    ScalarType s = p.type.scalar;
    if (!alias_[i.ref]) {
      std::string at = "e_" + p.name + ".v[" + idx + "]";
      const char* fn = i.op == Op::AtomicAdd    ? "atomicAdd("
                       : i.op == Op::AtomicMin  ? "atomicMin("
                       : i.op == Op::AtomicMax  ? "atomicMax("
                       : i.op == Op::AtomicExch ? "atomicExchange("
                                                : "atomicCompSwap(";
      std::string extra = i.op == Op::AtomicCas ? ", " + val(i.args[2]) : "";
      line(decl(i.type, r) + " = " + fn + at + ", " + v + extra + ");");
      return;
    }
    std::string old = "ember_old" + std::to_string(i.result);
    if (s == ScalarType::F32) {
      auto next = [&](const std::string& o) -> std::string {
        std::string cur = "uintBitsToFloat(" + o + ")";
        switch (i.op) {
          case Op::AtomicMin:
            return "floatBitsToUint(ember_min(" + cur + ", " + v + "))";
          case Op::AtomicMax:
            return "floatBitsToUint(ember_max(" + cur + ", " + v + "))";
          case Op::AtomicCas:
            return "(" + cur + " == " + v + " ? floatBitsToUint(" + val(i.args[2]) + ") : " + o +
                   ")";
          case Op::AtomicExch:
            return "floatBitsToUint(" + v + ")";
          default:
            return "floatBitsToUint(" + cur + " + " + v + ")";
        }
      };
      cas_loop("e_" + p.name + ".v", idx, old, next);
      line("float " + r + " = uintBitsToFloat(" + old + ");");
      return;
    }
    if (s == ScalarType::F64) {  // add, on the buffer's u64 view
      cas_loop(
          "e_" + p.name + ".v", idx, old,
          [&](const std::string& o) {
            return "doubleBitsToUint64(uint64BitsToDouble(" + o + ") + " + v + ")";
          },
          "uint64_t");
      line("double " + r + " = uint64BitsToDouble(" + old + ");");
      return;
    }
    // f16/bf16 add: the 16-bit half of a 32-bit word.
    std::string shift = "((uint(" + idx + ") & 1u) * 16u)";
    std::string word = "(uint(" + idx + ") >> 1)";
    std::string to = s == ScalarType::F16 ? "ember_f16" : "ember_bf16";
    std::string bits = s == ScalarType::F16 ? "ember_f16_bits" : "ember_bf16_bits";
    std::string rnd = s == ScalarType::F16 ? "ember_rf16" : "ember_rbf16";
    cas_loop("e_" + p.name + "_w.v", word, old, [&](const std::string& o) {
      std::string cur = to + "((" + o + " >> " + shift + ") & 0xffffu)";
      return "((" + o + " & ~(0xffffu << " + shift + ")) | (" + bits + "(" + rnd + "(" + cur +
             " + " + v + ")) << " + shift + "))";
    });
    line("float " + r + " = " + to + "((" + old + " >> " + shift + ") & 0xffffu);");
  }

  void inst(const Inst& i) {
    const OpInfo& in = info(i.op);
    ScalarType rs = i.type.scalar;
    ScalarType as = i.args.empty() ? ScalarType::Void : types_[i.args[0]].scalar;
    auto a = [&](size_t j, int l) { return lane(i.args[j], types_[i.args[j]].width == 1 ? 0 : l); };
    switch (in.form) {
      case Form::Leaf:
        if (i.op == Op::Param) {
          const Param& p = k_.params[i.ref];
          std::string x = "ember_p.e_" + p.name;
          if (rs == ScalarType::Bool) x = "(" + x + " != 0u)";
          line(decl(i.type, val(i.result)) + " = " + fix(rs, x) + ";");
        } else {
          std::string c = is_float(rs) ? float_literal(i.fimm, rs) : int_literal(i.imm, rs);
          lanes(i, [&](int) { return c; });
        }
        break;
      case Form::Geometry:
        line("uint " + val(i.result) + " = " + geometry(i) + ";");
        break;
      case Form::Unary:
        lanes(i, [&](int l) {
          std::string x = a(0, l);
          if (i.op == Op::Neg) return fix(rs, "-" + x);
          if (rs == ScalarType::U8 || rs == ScalarType::U32 || rs == ScalarType::Bool) return x;
          if (rs == ScalarType::I64) return "(" + x + " < 0l ? -" + x + " : " + x + ")";
          return fix(rs, "abs(" + x + ")");
        });
        break;
      case Form::Logic1:
        lanes(i, [&](int l) {
          return rs == ScalarType::Bool ? "!" + a(0, l) : fix(rs, "~" + a(0, l));
        });
        break;
      case Form::Math:
      case Form::Math2:
        lanes(i, [&](int l) {
          bool f64 = rs == ScalarType::F64;
          std::string args = a(0, l) + (i.args.size() > 1 ? ", " + a(1, l) : "");
          if (f64 && !f64_native(i.op)) {  // GLSL has no f64 math: ember's own
            std::string x = a(0, l);
            switch (i.op) {
              case Op::Exp:
                return "ember_dexp(" + x + ")";
              case Op::Exp2:
                return "ember_dexp(" + x + " * 0.69314718055994531lf)";
              case Op::Log:
                return "ember_dlog(" + x + ")";
              case Op::Log2:
                return "(ember_dlog(" + x + ") * 1.4426950408889634lf)";
              case Op::Sin:
                return "ember_dsincos(" + x + ", 0)";
              case Op::Cos:
                return "ember_dsincos(" + x + ", 1)";
              case Op::Tan:
                return "(ember_dsincos(" + x + ", 0) / ember_dsincos(" + x + ", 1))";
              case Op::Tanh:
                return "ember_dtanh(" + x + ")";
              case Op::Sinh:
                return "ember_dsinh(" + x + ")";
              case Op::Cosh:
                return "ember_dcosh(" + x + ")";
              case Op::Expm1:
                return "ember_dexpm1(" + x + ")";
              case Op::Log1p:
                return "ember_dlog1p(" + x + ")";
              case Op::Erf:
                return "ember_derf(" + x + ")";
              case Op::Atan:
                return "ember_datan(" + x + ")";
              case Op::Asin:
                return "ember_dasin(" + x + ")";
              case Op::Acos:
                return "ember_dacos(" + x + ")";
              case Op::Asinh:
                return "ember_dasinh(" + x + ")";
              case Op::Acosh:
                return "ember_dacosh(" + x + ")";
              case Op::Atanh:
                return "ember_datanh(" + x + ")";
              case Op::Atan2:
                return "ember_datan2(" + x + ", " + a(1, l) + ")";
              case Op::Pow:
                return "ember_dpow(" + x + ", " + a(1, l) + ")";
              default:
                break;
            }
          }
          if (f64 && !f64_native(i.op)) {
            args = "float(" + a(0, l) + ")" + (i.args.size() > 1 ? ", float(" + a(1, l) + ")" : "");
            return "double(" + std::string(math_name(i.op)) + "(" + args + "))";
          }
          return fix(rs, std::string(math_name(i.op)) + "(" + args + ")");
        });
        break;
      case Form::Test:
        lanes(i, [&](int l) {
          return std::string(i.op == Op::IsNan ? "isnan(" : "isinf(") + a(0, l) + ")";
        });
        break;
      case Form::Arith:
      case Form::Logic2:
      case Form::Shift:
      case Form::Compare:
        lanes(i, [&](int l) {
          std::string x = a(0, l), y = a(1, l);
          std::string e;
          if (i.op == Op::MulHi)
            e = "ember_mulhi(" + x + ", " + y + ")";
          else if (i.op == Op::Min || i.op == Op::Max)
            e = std::string(i.op == Op::Min ? "ember_min(" : "ember_max(") + x + ", " + y + ")";
          else if (i.op == Op::Rem)
            e = "ember_rem(" + x + ", " + y + ")";
          else
            e = "(" + x + " " + binary_symbol(i.op, as) + " " + y + ")";
          if (in.form == Form::Compare) return e;
          return fix(rs, e);
        });
        break;
      case Form::Fma:
        lanes(i, [&](int l) {
          return fix(rs, "fma(" + a(0, l) + ", " + a(1, l) + ", " + a(2, l) + ")");
        });
        break;
      case Form::Select:
        lanes(i, [&](int l) { return "(" + a(0, l) + " ? " + a(1, l) + " : " + a(2, l) + ")"; });
        break;
      case Form::Cast:
        lanes(i, [&](int l) {
          std::string x = a(0, l);
          if (rs == ScalarType::Bool) return "(" + x + " != " + zero(as) + ")";
          if (as == ScalarType::Bool) return fix(rs, reg(rs) + "(" + x + ")");
          if (is_float(as) && (rs == ScalarType::U8 || rs == ScalarType::U32))
            return fix(rs, "uint(" + x + ")");  // in range: the IR saturates before a cast
          return fix(rs, reg(rs) + "(" + x + ")");
        });
        break;
      case Form::Bitcast: {
        std::string x = val(i.args[0]);
        std::string e;
        if (rs == ScalarType::F32 && as == ScalarType::U32)
          e = "uintBitsToFloat(" + x + ")";
        else if (rs == ScalarType::F32 && as == ScalarType::I32)
          e = "intBitsToFloat(" + x + ")";
        else if (rs == ScalarType::U32 && as == ScalarType::F32)
          e = "floatBitsToUint(" + x + ")";
        else if (rs == ScalarType::I32 && as == ScalarType::F32)
          e = "floatBitsToInt(" + x + ")";
        else if (rs == ScalarType::F64 && as == ScalarType::I64)
          e = "int64BitsToDouble(" + x + ")";
        else if (rs == ScalarType::I64 && as == ScalarType::F64)
          e = "doubleBitsToInt64(" + x + ")";
        else if ((rs == ScalarType::I32 && as == ScalarType::U32) ||
                 (rs == ScalarType::U32 && as == ScalarType::I32))
          e = reg(rs) + "(" + x + ")";
        else
          cannot(k_, "bitcast " + std::string(name(as)) + " -> " + std::string(name(rs)));
        line(decl(i.type, val(i.result)) + " = " + e + ";");
        break;
      }
      case Form::Vec: {
        std::string s = decl(i.type, val(i.result)) + " = " + reg(rs) + "[" +
                        std::to_string(i.type.width) + "](";
        for (size_t j = 0; j < i.args.size(); ++j) s += (j ? ", " : "") + val(i.args[j]);
        line(s + ");");
        break;
      }
      case Form::Extract:
        line(decl(i.type, val(i.result)) + " = " + lane(i.args[0], i.ref) + ";");
        break;
      case Form::Load: {
        bool shared = i.space == Space::Shared;
        std::string m = shared ? "e_" + k_.shared[i.ref].name : "e_" + k_.params[i.ref].name + ".v";
        ScalarType es = shared ? k_.shared[i.ref].type.scalar : k_.params[i.ref].type.scalar;
        bool aliased = !shared && alias_[i.ref];
        int wv = i.type.width;
        int bytes = wv * byte_size(es);
        std::string view =
            shared ? "" : "e_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
        if (!shared && views_.count(view)) {
          // One access of `bytes`; the lanes are cut out of its words.
          std::string wn = "ember_w" + std::to_string(i.result);
          std::string words = bytes == 4 ? "uint" : bytes == 8 ? "uvec2" : "uvec4";
          line(words + " " + wn + " = " + view + ".v[" + index(i.args[0]) + " / " +
               std::to_string(wv) + "];");
          lanes(i, [&](int l) { return lane_from_words(es, wn, l, bytes); });
          break;
        }
        auto at = [&](int l) {
          std::string e = m + "[" + index(i.args[0], l) + "]";
          return shared ? e : from_storage(es, e, aliased);
        };
        lanes(i, at);
        break;
      }
      case Form::Store: {
        bool shared = i.space == Space::Shared;
        std::string m = shared ? "e_" + k_.shared[i.ref].name : "e_" + k_.params[i.ref].name + ".v";
        ScalarType es = shared ? k_.shared[i.ref].type.scalar : k_.params[i.ref].type.scalar;
        bool aliased = !shared && alias_[i.ref];
        int w = types_[i.args[1]].width;
        int bytes = w * byte_size(es);
        std::string view =
            shared ? "" : "e_" + k_.params[i.ref].name + "_w" + std::to_string(bytes);
        if (!shared && views_.count(view)) {
          line(view + ".v[" + index(i.args[0]) + " / " + std::to_string(w) +
               "] = " + words_from_lanes(es, i.args[1], w, bytes) + ";");
          break;
        }
        for (int l = 0; l < w; ++l) {
          std::string v = lane(i.args[1], l);
          line(m + "[" + index(i.args[0], l) + "] = " + (shared ? v : to_storage(es, v, aliased)) +
               ";");
        }
        break;
      }
      case Form::Atomic:
      case Form::AtomicCas:
        atomic(i);
        break;
      case Form::VarRead:
        line(decl(i.type, val(i.result)) + " = e_" + k_.vars[i.ref].name + ";");
        break;
      case Form::VarWrite:
        line("e_" + k_.vars[i.ref].name + " = " + val(i.args[0]) + ";");
        break;
      case Form::If:
        line("if (" + val(i.args[0]) + ") {");
        ++depth_;
        break;
      case Form::Else:
        --depth_;
        line("} else {");
        ++depth_;
        break;
      case Form::End:
        --depth_;
        line("}");
        break;
      case Form::For:
        line("for (" + decl(i.type, val(i.result)) + " = " + val(i.args[0]) + "; " + val(i.result) +
             " < " + val(i.args[1]) + "; " + val(i.result) + " += " + val(i.args[2]) + ") {");
        ++depth_;
        break;
      case Form::Barrier:
        line("memoryBarrierShared();");
        line("barrier();");
        break;
      case Form::Shuffle:
        lanes(i, [&](int l) {
          std::string x = a(0, l);
          std::string fn = i.op == Op::Shuffle ? "subgroupShuffle(" : "subgroupShuffleXor(";
          return fn + x + ", " + val(i.args[1]) + ")";
        });
        break;
      case Form::SubgroupReduce: {
        std::string x = val(i.args[0]);
        std::string r = val(i.result);
        // A butterfly over the subgroup with the IR's own min/max (NaN wins) and add.
        line(decl(i.type, r) + " = " + x + ";");
        line("for (uint ember_o = gl_SubgroupSize / 2u; ember_o > 0u; ember_o >>= 1u)");
        std::string other = "subgroupShuffleXor(" + r + ", ember_o)";
        std::string e = i.op == Op::SubgroupAdd   ? fix(rs, r + " + " + other)
                        : i.op == Op::SubgroupMax ? "ember_max(" + r + ", " + other + ")"
                                                  : "ember_min(" + r + ", " + other + ")";
        line("  " + r + " = " + e + ";");
        break;
      }
      case Form::Ballot:
        line("uint " + val(i.result) + " = subgroupBallot(" + val(i.args[0]) + ").x;");
        break;
    }
  }

  const Kernel& k_;
  std::vector<Type> types_;
  std::vector<char> alias_;      // buffers accessed through a u32 view (compare-and-swap atomics)
  std::set<std::string> views_;  // vector views declared ("e_x_w16")
  std::string out_;
  int depth_ = 1;
};

}  // namespace

GlslLayout glsl_layout(const Kernel& k) {
  GlslLayout L;
  std::vector<char> views = u32_views(k);
  uint32_t at = 0;
  auto place = [&](uint32_t size) {
    at = (at + size - 1) / size * size;
    uint32_t o = at;
    at += size;
    return o;
  };
  for (size_t p = 0; p < k.params.size(); ++p) {
    const Param& pa = k.params[p];
    GlslLayout::Arg a;
    a.param = p;
    if (pa.kind == Param::Buffer) {
      a.address = true;
      a.as = ScalarType::I64;
      a.offset = place(8);
      if (views[p] && is_half(pa.type.scalar)) a.word_offset = place(8);
    } else {
      a.as = passed_as(pa.type.scalar);
      a.offset = place(static_cast<uint32_t>(byte_size(a.as)));
    }
    L.args.push_back(a);
  }
  L.bytes = std::max<uint32_t>(16, (at + 15) / 16 * 16);
  return L;
}

std::string render_glsl(const Kernel& k) {
  validate(k);
  for (const Param& p : k.params)
    if (p.type.width > 1) cannot(k, "vector-typed parameter " + p.name);
  for (const SharedArray& s : k.shared)
    if (s.type.width > 1) cannot(k, "vector-typed shared array " + s.name);
  return Renderer(k).run();
}

}  // namespace ember::kernel
