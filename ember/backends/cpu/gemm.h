// Internal: ember's own f32/f64 GEMM (C = A * B, row-major C), blocked for caches with packed
// panels and a register-tiled micro-kernel written with portable vector types, so the same
// source becomes AVX2/AVX-512 on x86, NEON on ARM and SIMD128 on WebAssembly; on x86 the
// AVX2 and AVX-512 micro-kernels are chosen at run time (cpu/isa.h).
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <functional>
#include <new>
#include <type_traits>

#include "ember/backends/cpu/transpose16.h"
#include "ember/core/half.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

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

/// C[m, n] (row stride ldc, f32 or bf16 rounded to nearest even) = A[m, k] * B[k, n] for bf16 A
/// and B in hardware (cpu/gemm_bf16.cpp): AMX tiles, or AVX-512 BF16 dot products; products
/// exact, sums in f32. Multithreaded on the worker pool. False, with C untouched, when cpu_isa()
/// is below CpuIsa::Avx512Bf16.
bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatRef<bf16> a, MatRef<bf16> b, float* c,
               int64_t ldc);
bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatRef<bf16> a, MatRef<bf16> b, bf16* c,
               int64_t ldc);

/// Configures this thread's AMX tiles as the GEMMs use them (all eight 16 rows x 64 bytes;
/// cpu/amx.cpp), and releases them. Only where cpu_isa() is CpuIsa::Amx.
void amx_load_tile_config();
void amx_release_tiles();

/// An 8-bit integer matrix: element (i, j) at p[i * rs + j * cs], i8 where `is_signed`, else u8.
struct Int8Ref {
  const uint8_t* p;
  int64_t rs, cs;
  bool is_signed;
};

/// C[m, n] (i32, row stride ldc) = A[m, k] * B[k, n] for 8-bit integer A and B, each i8 or u8
/// (cpu/gemm_int8.cpp): on AVX-512 VNNI's byte dot products, every product exact and the sums
/// modulo 2^32 (exact where they fit i32). Multithreaded on the worker pool. False, with C
/// untouched, where cpu_has_avx512_vnni() is false.
bool gemm_int8(int64_t m, int64_t n, int64_t k, Int8Ref a, Int8Ref b, int32_t* c, int64_t ldc);

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

/// Products for callers that reuse one packed A many times and lay B out themselves (Winograd's
/// transforms write their matrices where the micro-kernel reads them): the micro-kernel of the
/// instruction set in use (cpu_isa()), single-threaded, no packing of B and no blocking.
///
///   const PanelGemmF32& pg = panel_gemm_f32();
///   std::vector<float> a(5 * 3, 1.0f), b(3 * pg.nr, 2.0f), c(5 * pg.nr);
///   std::vector<float> ap(size_t((5 + pg.mr - 1) / pg.mr * pg.mr * 3));
///   pg.pack_a(a.data(), 3, 5, 3, ap.data());                          // A: 5 x 3
///   pg.run(5, pg.nr, 3, ap.data(), b.data(), pg.nr, c.data(), pg.nr);  // every c is 6
struct PanelGemmF32 {
  int64_t mr;  // A's rows a panel holds
  int64_t nr;  // C's columns a micro-kernel call computes
  /// dst = A [m, k] (rows lda apart) in panels of mr rows, k-major, zeros past row m:
  /// ceil(m / mr) * mr * k floats.
  void (*pack_a)(const float* a, int64_t lda, int64_t m, int64_t k, float* dst);
  /// C [m, n] (rows ldc apart) = A * B for A packed by pack_a and B [k, n] (rows ldb apart),
  /// read in place: its rows are read up to n rounded up to a multiple of nr (the columns past
  /// n computed and dropped), so they must be readable that far.
  void (*run)(int64_t m, int64_t n, int64_t k, const float* ap, const float* b, int64_t ldb,
              float* c, int64_t ldc);
};
const PanelGemmF32& panel_gemm_f32();

/// n elements of scratch, 64-byte aligned: the GEMMs' packed operands.
template <class T>
struct Aligned {
  explicit Aligned(size_t n)
      : p(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}))) {}
  ~Aligned() { ::operator delete (p, std::align_val_t{64}); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* p;
};

/// Copies one row of a B panel, `width` (the micro-kernel's NR: 64 or 128 bytes) elements:
/// with the width a constant in each branch, the copy is a few vector moves, not a call. With
/// AVX, 32-byte moves: a memcpy of a constant 128 bytes came out as 16-byte ones (the generic
/// tuning), and copying a 1x1 convolution's input from memory went from 6.0-8.0 to 8.1-8.7 GB/s.
template <class T>
inline void copy_panel_row(T* dst, const T* src, int64_t width) {
  const int64_t bytes = width * int64_t(sizeof(T));
#if defined(__AVX__)
  if (bytes == 64 || bytes == 128) {
    auto* d = reinterpret_cast<__m256i*>(dst);
    auto* s = reinterpret_cast<const __m256i*>(src);
    _mm256_storeu_si256(d, _mm256_loadu_si256(s));
    _mm256_storeu_si256(d + 1, _mm256_loadu_si256(s + 1));
    if (bytes == 128) {
      _mm256_storeu_si256(d + 2, _mm256_loadu_si256(s + 2));
      _mm256_storeu_si256(d + 3, _mm256_loadu_si256(s + 3));
    }
    return;
  }
#endif
  if (bytes == 64)
    std::memcpy(dst, src, 64);
  else if (bytes == 128)
    std::memcpy(dst, src, 128);
  else
    std::memcpy(dst, src, size_t(bytes));
}

/// dst[i * ldd + r] = src[r * lds + i] for an 8 x 8 block: the packers' transposes, in eight
/// loads, 24 shuffles and eight stores where element by element it took a store each. Any
/// 4-byte T (the shuffles move bits: a float's NaN payload, or an int32, comes through as is).
template <class T>
inline bool transpose8(const T* src, int64_t lds, T* dst, int64_t ldd) {
#if defined(__AVX__)
  if constexpr (sizeof(T) == 4 && std::is_trivially_copyable_v<T>) {
    __m256 r[8];
    for (int i = 0; i < 8; ++i)
      r[i] = _mm256_loadu_ps(reinterpret_cast<const float*>(src + i * lds));
    transpose8x8(r);
    for (int i = 0; i < 8; ++i) _mm256_storeu_ps(reinterpret_cast<float*>(dst + i * ldd), r[i]);
    return true;
  }
#endif
  (void)src, (void)lds, (void)dst, (void)ldd;
  return false;
}

/// dst[p * ldd + r] = src[r * lds + p] for r < R (4 or 2), p < kc: 4 columns at a time in SSE
/// registers (R = 4: a 4 x 4 transpose; R = 2: the two rows interleaved, 8 bytes per row of
/// dst), the rest element by element. The last rows of a 12-row (AVX-512) or 6-row (AVX2) panel
/// of A: with them element by element, transpose_into took 5.5% of a 512^2 GEMM on one thread of
/// a Zen 4, 3.6% this way.
template <int R, class T>
inline void transpose_few_rows(const T* src, int64_t lds, int64_t kc, T* dst, int64_t ldd) {
  int64_t p = 0;
#if defined(__SSE2__)
  if constexpr (sizeof(T) == 4 && std::is_trivially_copyable_v<T>) {
    const auto* s = reinterpret_cast<const float*>(src);
    auto* d = reinterpret_cast<float*>(dst);
    for (; p + 4 <= kc; p += 4) {
      __m128 r0 = _mm_loadu_ps(s + p), r1 = _mm_loadu_ps(s + lds + p);
      if constexpr (R == 4) {
        __m128 r2 = _mm_loadu_ps(s + 2 * lds + p), r3 = _mm_loadu_ps(s + 3 * lds + p);
        _MM_TRANSPOSE4_PS(r0, r1, r2, r3);
        _mm_storeu_ps(d + p * ldd, r0);
        _mm_storeu_ps(d + (p + 1) * ldd, r1);
        _mm_storeu_ps(d + (p + 2) * ldd, r2);
        _mm_storeu_ps(d + (p + 3) * ldd, r3);
      } else {
        const __m128 lo = _mm_unpacklo_ps(r0, r1), hi = _mm_unpackhi_ps(r0, r1);
        _mm_storel_pi(reinterpret_cast<__m64*>(d + p * ldd), lo);
        _mm_storeh_pi(reinterpret_cast<__m64*>(d + (p + 1) * ldd), lo);
        _mm_storel_pi(reinterpret_cast<__m64*>(d + (p + 2) * ldd), hi);
        _mm_storeh_pi(reinterpret_cast<__m64*>(d + (p + 3) * ldd), hi);
      }
    }
  }
#endif
  for (; p < kc; ++p)
    for (int r = 0; r < R; ++r) dst[p * ldd + r] = src[r * lds + p];
}

/// dst[p * ldd + r] = src[r * lds + p] for r < rows, p < kc: blocks of 8 x 8, then of 4 and 2
/// rows, where they fit; the rest element by element.
template <class T>
inline void transpose_into(const T* src, int64_t lds, int64_t rows, int64_t kc, T* dst,
                           int64_t ldd) {
  int64_t r0 = 0;
  for (; r0 + 8 <= rows; r0 += 8) {
    int64_t p = 0;
    for (; p + 8 <= kc && transpose8(src + r0 * lds + p, lds, dst + p * ldd + r0, ldd); p += 8) {
    }
    for (; p < kc; ++p)
      for (int64_t r = r0; r < r0 + 8; ++r) dst[p * ldd + r] = src[r * lds + p];
  }
  if (r0 + 4 <= rows) {
    transpose_few_rows<4>(src + r0 * lds, lds, kc, dst + r0, ldd);
    r0 += 4;
  }
  if (r0 + 2 <= rows) {
    transpose_few_rows<2>(src + r0 * lds, lds, kc, dst + r0, ldd);
    r0 += 2;
  }
  if (r0 < rows)
    for (int64_t p = 0; p < kc; ++p) dst[p * ldd + r0] = src[r0 * lds + p];
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
