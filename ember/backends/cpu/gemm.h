// Internal: ember's own f32/f64 GEMM (C = A * B, row-major C), blocked for caches with packed
// panels and a register-tiled micro-kernel written with portable vector types, so the same
// source becomes AVX2/AVX-512 on x86, NEON on ARM and SIMD128 on WebAssembly.
#pragma once
#include <cstdint>

namespace ember::cpu {

/// A matrix operand: element (i, j) is at p[i * rs + j * cs].
template <class T>
struct MatRef {
  const T* p;
  int64_t rs, cs;
};

/// C[m, n] (row stride ldc) = A[m, k] * B[k, n]. Multithreaded on the worker pool.
void gemm_f32(int64_t m, int64_t n, int64_t k, MatRef<float> a, MatRef<float> b, float* c,
              int64_t ldc);
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, MatRef<double> b, double* c,
              int64_t ldc);

}  // namespace ember::cpu
