// Internal: the vector math's AVX-512 variants (vmath_avx512.cpp, compiled for x86-64-v4), for
// vmath.cpp to call where cpu_isa() is AVX-512. Each maps whole vectors of x into y and returns
// how many elements it did (a multiple of 16, or of 8 for sin, cos and pow); the caller does the
// rest. Defined on x86-64 only.
#pragma once
#include <cstdint>

namespace ember::cpu::vmath::wide16 {

int64_t exp16(const float* x, float* y, int64_t n);
int64_t exp_shifted16(const float* x, float* y, int64_t n, float m);
int64_t log16(const float* x, float* y, int64_t n);
int64_t sigmoid16(const float* x, float* y, int64_t n);
int64_t tanh16(const float* x, float* y, int64_t n);
int64_t log1p16(const float* x, float* y, int64_t n);
int64_t erf16(const float* x, float* y, int64_t n);
int64_t gelu16(const float* x, float* y, int64_t n);
int64_t sin8d(const float* x, float* y, int64_t n);
int64_t cos8d(const float* x, float* y, int64_t n);
int64_t pow8d(const float* x, const float* y, int64_t y_step, float* out, int64_t n);

}  // namespace ember::cpu::vmath::wide16
