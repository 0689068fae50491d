// Internal: a 16 x 16 transpose in AVX-512 registers, for kernels that are compiled with
// target attributes and called only where cpu_isa() has AVX-512 (the direct convolution's
// lanes kernels, the AMX GEMM's packing of a transposed B).
#pragma once

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>

namespace ember::cpu {

// GCC 12's unpack and shuffle intrinsics pass an undefined vector as the unused merge source,
// which -Wmaybe-uninitialized (or -Wuninitialized) reports once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif
/// r[i] (lane j) becomes r[j] (lane i): a 16 x 16 transpose of 32-bit values in 16 AVX-512
/// registers (floats; integers through _mm512_castsi512_ps).
__attribute__((target("avx512f"))) inline void transpose16(__m512 r[16]) {
  __m512 a[16], b[16];
  for (int i = 0; i < 16; i += 2) {
    a[i] = _mm512_unpacklo_ps(r[i], r[i + 1]);
    a[i + 1] = _mm512_unpackhi_ps(r[i], r[i + 1]);
  }
  // b[4g + k]: in 128-bit lane L, element 4L + k of rows 4g .. 4g + 3.
  for (int g = 0; g < 16; g += 4) {
    b[g] = _mm512_shuffle_ps(a[g], a[g + 2], 0x44);
    b[g + 1] = _mm512_shuffle_ps(a[g], a[g + 2], 0xee);
    b[g + 2] = _mm512_shuffle_ps(a[g + 1], a[g + 3], 0x44);
    b[g + 3] = _mm512_shuffle_ps(a[g + 1], a[g + 3], 0xee);
  }
  for (int k = 0; k < 4; ++k) {
    const __m512 lo0 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0x88);  // elements k, 8 + k; rows 0-7
    const __m512 hi0 = _mm512_shuffle_f32x4(b[k], b[4 + k], 0xdd);  // 4 + k, 12 + k; rows 0-7
    const __m512 lo1 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0x88);  // rows 8-15
    const __m512 hi1 = _mm512_shuffle_f32x4(b[8 + k], b[12 + k], 0xdd);
    r[k] = _mm512_shuffle_f32x4(lo0, lo1, 0x88);
    r[8 + k] = _mm512_shuffle_f32x4(lo0, lo1, 0xdd);
    r[4 + k] = _mm512_shuffle_f32x4(hi0, hi1, 0x88);
    r[12 + k] = _mm512_shuffle_f32x4(hi0, hi1, 0xdd);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace ember::cpu

#endif
