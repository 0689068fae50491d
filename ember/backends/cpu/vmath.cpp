// The vector math on arrays, per instruction set (cpu/isa.h): 8 lanes of the library's own
// instructions, or 16 lanes of AVX-512 from vmath_avx512.cpp, a file compiled for x86-64-v4
// (the bodies are vmath.h's templates, instantiated there with the intrinsics' vector types:
// see docs/cpu.md, "Adding a variant").
#include "ember/backends/cpu/vmath.h"

#include <cmath>

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/vmath_wide.h"

namespace ember::cpu::vmath {

namespace {

// y[i] = f(x[i]) in 8-lane vectors, scalar g on the tail.
template <class F8, class F1>
void map8(const float* x, float* y, int64_t n, F8 f8, F1 f1) {
  int64_t i = 0;
  for (; i + 8 <= n; i += 8) store8(y + i, f8(load8(x + i)));
  for (; i < n; ++i) y[i] = f1(x[i]);
}

#if defined(__x86_64__)
bool wide() { return cpu_isa() >= CpuIsa::Avx512; }
using namespace wide16;
#else
bool wide() { return false; }
// Never called (wide() is false): the AVX-512 variants exist on x86-64 only.
int64_t exp16(const float*, float*, int64_t) { return 0; }
int64_t exp_shifted16(const float*, float*, int64_t, float) { return 0; }
int64_t log16(const float*, float*, int64_t) { return 0; }
int64_t sigmoid16(const float*, float*, int64_t) { return 0; }
int64_t tanh16(const float*, float*, int64_t) { return 0; }
int64_t log1p16(const float*, float*, int64_t) { return 0; }
int64_t erf16(const float*, float*, int64_t) { return 0; }
int64_t gelu16(const float*, float*, int64_t) { return 0; }
int64_t sin8d(const float*, float*, int64_t) { return 0; }
int64_t cos8d(const float*, float*, int64_t) { return 0; }
int64_t pow8d(const float*, const float*, int64_t, float*, int64_t) { return 0; }
#endif

}  // namespace

void log1p_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? log1p16(x, y, n) : 0;
  map8(
      x + i, y + i, n - i, [](vf8 v) { return log1p_v<vf8, vi8>(v); },
      [](float v) { return std::log1p(v); });
}
void erf_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? erf16(x, y, n) : 0;
  map8(
      x + i, y + i, n - i, [](vf8 v) { return erf_v<vf8, vi8>(v); },
      [](float v) { return std::erf(v); });
}
void gelu_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? gelu16(x, y, n) : 0;
  map8(
      x + i, y + i, n - i, [](vf8 v) { return gelu_v<vf8, vi8>(v); },
      [](float v) { return float(0.5 * v * std::erfc(-double(v) * 0.70710678118654752)); });
}
// sin and cos reduce in double. Without AVX-512 they take 4 lanes, whose doubles fill one
// 32-byte register: 8 lanes of doubles would be a type the compiler splits, converting and
// comparing them lane by lane.
namespace {
typedef float vf4 __attribute__((vector_size(16)));
typedef int32_t vi4 __attribute__((vector_size(16)));
typedef double vd4 __attribute__((vector_size(32)));
typedef int64_t vl4 __attribute__((vector_size(32)));
template <int Shift>
void sincos4(const float* x, float* y, int64_t n) {
  int64_t i = 0;
  for (; i + 4 <= n; i += 4) {
    vf4 v;
    std::memcpy(&v, x + i, sizeof v);
    vf4 r = sincos_full_v<vf4, vi4, vd4, vl4>(v, Shift);
    std::memcpy(y + i, &r, sizeof r);
  }
  for (; i < n; ++i) y[i] = float(Shift ? std::cos(double(x[i])) : std::sin(double(x[i])));
}
}  // namespace
void sin_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? sin8d(x, y, n) : 0;
  sincos4<0>(x + i, y + i, n - i);
}
void cos_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? cos8d(x, y, n) : 0;
  sincos4<1>(x + i, y + i, n - i);
}
// pow works in double too: 4 lanes below AVX-512, as sin and cos.
void pow_f32(const float* x, const float* y, int64_t y_step, float* out, int64_t n) {
  int64_t i = wide() ? pow8d(x, y, y_step, out, n) : 0;
  for (; i + 4 <= n; i += 4) {
    vf4 a, b;
    std::memcpy(&a, x + i, sizeof a);
    if (y_step)
      std::memcpy(&b, y + i, sizeof b);
    else
      b = vf4{} + y[0];
    vf4 r = pow_full_v<vf4, vi4, vd4, vl4>(a, b);
    std::memcpy(out + i, &r, sizeof r);
  }
  for (; i < n; ++i) out[i] = std::pow(x[i], y[i * y_step]);
}

void exp_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? exp16(x, y, n) : 0;
  map8(x + i, y + i, n - i, exp8, [](float v) { return std::exp(v); });
}
void exp_shifted_f32(const float* x, float* y, int64_t n, float m) {
  int64_t i = wide() ? exp_shifted16(x, y, n, m) : 0;
  map8(
      x + i, y + i, n - i, [m](vf8 v) { return exp_v<vf8, vi8, true>(v - m); },
      [m](float v) { return std::exp(v - m); });
}
void log_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? log16(x, y, n) : 0;
  map8(x + i, y + i, n - i, log8, [](float v) { return std::log(v); });
}
void sigmoid_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? sigmoid16(x, y, n) : 0;
  map8(
      x + i, y + i, n - i, [](vf8 v) { return sigmoid_v<vf8, vi8>(v); },
      [](float v) { return 1.0f / (1.0f + std::exp(-v)); });
}
void tanh_f32(const float* x, float* y, int64_t n) {
  int64_t i = wide() ? tanh16(x, y, n) : 0;
  map8(
      x + i, y + i, n - i, [](vf8 v) { return tanh_v<vf8, vi8>(v); },
      [](float v) { return std::tanh(v); });
}

}  // namespace ember::cpu::vmath
