// The vector math's AVX-512 variants (vmath.cpp chooses them at run time where the CPU has
// AVX-512): vmath.h's templates on 16 floats (sin and cos: 8 doubles), in a file compiled for
// x86-64-v4 (ember/CMakeLists.txt). A whole file rather than functions with a target attribute:
// GCC lowers a template's 512-bit vector compares and selects for the file's own instruction
// set before inlining it into such a function, which left parts of log and log1p running lane
// by lane in an x86-64-v3 build (8 times slower).
//
// vmath.h is included inside a namespace of an unnamed one, so the instantiations made here (and
// any copy of them the compiler emits) are this file's own and never stand in for the baseline ones
// of another file.
#include <cmath>
#include <cstdint>
#include <cstring>

#include "ember/backends/cpu/vmath_wide.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define EMBER_VMATH_TEMPLATES_ONLY
namespace {
namespace v4 {
#include "ember/backends/cpu/vmath.h"  // NOLINT: inside a namespace on purpose (see above)
}  // namespace v4
}  // namespace

namespace ember::cpu::vmath::wide16 {

namespace {
namespace v = v4::ember::cpu::vmath;  // this file's own copy (see above)

template <class F>
int64_t map16(const float* x, float* y, int64_t n, F f) {
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    __v16sf in;
    std::memcpy(&in, x + i, sizeof in);
    __v16sf out = f(in);
    std::memcpy(y + i, &out, sizeof out);
  }
  return i;
}
}  // namespace

int64_t exp16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::exp_v<__v16sf, __v16si>(v); });
}
int64_t exp_shifted16(const float* x, float* y, int64_t n, float m) {
  return map16(x, y, n, [m](__v16sf v) { return v::exp_v<__v16sf, __v16si, true>(v - m); });
}
int64_t log16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::log_v<__v16sf, __v16si>(v); });
}
int64_t sigmoid16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::sigmoid_v<__v16sf, __v16si>(v); });
}
int64_t tanh16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::tanh_v<__v16sf, __v16si>(v); });
}
int64_t log1p16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::log1p_v<__v16sf, __v16si>(v); });
}
int64_t erf16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::erf_v<__v16sf, __v16si>(v); });
}
int64_t gelu16(const float* x, float* y, int64_t n) {
  return map16(x, y, n, [](__v16sf v) { return v::gelu_v<__v16sf, __v16si>(v); });
}

// sin and cos reduce in double: 8 lanes of doubles fill a 512-bit register.
namespace {
template <int Shift>
int64_t sincos8(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v::vf8 in;
    std::memcpy(&in, x + i, sizeof in);
    v::vf8 out = v::sincos_full_v<v::vf8, v::vi8, v::vd8, v::vl8>(in, Shift);
    std::memcpy(y + i, &out, sizeof out);
  }
  return i;
}
}  // namespace
int64_t sin8d(const float* x, float* y, int64_t n) { return sincos8<0>(x, y, n); }
int64_t cos8d(const float* x, float* y, int64_t n) { return sincos8<1>(x, y, n); }
int64_t pow8d(const float* x, const float* y, int64_t y_step, float* out, int64_t n) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) {
    v::vf8 a, b;
    std::memcpy(&a, x + i, sizeof a);
    if (y_step)
      std::memcpy(&b, y + i, sizeof b);
    else
      b = v::vf8{} + y[0];
    v::vf8 r = v::pow_full_v<v::vf8, v::vi8, v::vd8, v::vl8>(a, b);
    std::memcpy(out + i, &r, sizeof r);
  }
  return i;
}

}  // namespace ember::cpu::vmath::wide16
#endif
