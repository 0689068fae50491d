// Internal: ember's own f32/f64 GEMM (C = A * B, row-major C), blocked for caches with packed
// panels and a register-tiled micro-kernel written with portable vector types, so the same
// source becomes AVX2/AVX-512 on x86, NEON on ARM and SIMD128 on WebAssembly; on x86 the
// AVX2 and AVX-512 micro-kernels are chosen at run time (cpu/isa.h).
#pragma once
#include <cstdint>
#include <cstring>
#include <functional>

namespace ember::cpu {

/// A matrix operand: element (i, j) is at p[i * rs + j * cs].
template <class T>
struct MatRef {
  const T* p;
  int64_t rs, cs;
};

/// C[m, n] (row stride ldc) = A[m, k] * B[k, n], or C += A * B with `accumulate`.
/// Multithreaded on the worker pool unless `parallel` is false (for callers that are
/// already running on the pool: it takes one job at a time).
void gemm_f32(int64_t m, int64_t n, int64_t k, MatRef<float> a, MatRef<float> b, float* c,
              int64_t ldc, bool accumulate = false, bool parallel = true);
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, MatRef<double> b, double* c,
              int64_t ldc, bool accumulate = false, bool parallel = true);

/// B given by what packs it, for operands that are never stored as a matrix (conv's columns,
/// read straight from the image): pack(p0, j0, kc, cols, width, dst) writes B[p0 + p, j0 + q]
/// to dst[p * width + q] for p < kc, q < cols, and zeros for q in [cols, width); `width` is the
/// micro-kernel's column count (it depends on the instruction set chosen at run time:
/// cpu/isa.h). It is called from pool threads, for disjoint panels.
template <class T>
using PackB =
    std::function<void(int64_t p0, int64_t j0, int64_t kc, int64_t cols, int64_t width, T* dst)>;
void gemm_f32(int64_t m, int64_t n, int64_t k, MatRef<float> a, const PackB<float>& b, float* c,
              int64_t ldc, bool accumulate = false, bool parallel = true);
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, const PackB<double>& b, double* c,
              int64_t ldc, bool accumulate = false, bool parallel = true);

/// Copies one row of a B panel, `width` (the micro-kernel's NR: 64 or 128 bytes) elements:
/// with the width a constant in each branch, the copy is a few vector moves, not a call.
template <class T>
inline void copy_panel_row(T* dst, const T* src, int64_t width) {
  if (width * int64_t(sizeof(T)) == 64)
    std::memcpy(dst, src, 64);
  else if (width * int64_t(sizeof(T)) == 128)
    std::memcpy(dst, src, 128);
  else
    std::memcpy(dst, src, size_t(width) * sizeof(T));
}

/// gemm_f32 or gemm_f64 by element type.
inline void gemm_t(int64_t m, int64_t n, int64_t k, MatRef<float> a, MatRef<float> b, float* c,
                   int64_t ldc, bool accumulate = false, bool parallel = true) {
  gemm_f32(m, n, k, a, b, c, ldc, accumulate, parallel);
}
inline void gemm_t(int64_t m, int64_t n, int64_t k, MatRef<double> a, MatRef<double> b, double* c,
                   int64_t ldc, bool accumulate = false, bool parallel = true) {
  gemm_f64(m, n, k, a, b, c, ldc, accumulate, parallel);
}
inline void gemm_t(int64_t m, int64_t n, int64_t k, MatRef<float> a, const PackB<float>& b,
                   float* c, int64_t ldc, bool accumulate = false, bool parallel = true) {
  gemm_f32(m, n, k, a, b, c, ldc, accumulate, parallel);
}
inline void gemm_t(int64_t m, int64_t n, int64_t k, MatRef<double> a, const PackB<double>& b,
                   double* c, int64_t ldc, bool accumulate = false, bool parallel = true) {
  gemm_f64(m, n, k, a, b, c, ldc, accumulate, parallel);
}

}  // namespace ember::cpu
