// Internal: transposes in vector registers, for kernels that are compiled with target attributes
// and called only where cpu_isa() has the instructions: 16 x 16 in AVX-512 registers (the direct
// convolution's lanes kernels, the bf16 GEMM's packing of a transposed A), 8 x 8 in AVX ones (the
// f32 GEMM's packers, AVX2's direct convolution).
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

/// r[i] (lane j) becomes r[j] (lane i): an 8 x 8 transpose of floats in 8 AVX registers.
__attribute__((target("avx"))) inline void transpose8x8(__m256 (&r)[8]) {
  __m256 t[8], u[8];
  for (int i = 0; i < 8; i += 2) {
    t[i] = _mm256_unpacklo_ps(r[i], r[i + 1]);
    t[i + 1] = _mm256_unpackhi_ps(r[i], r[i + 1]);
  }
  for (int h = 0; h < 8; h += 4) {  // rows h..h+3 of each 128-bit half
    u[h] = _mm256_shuffle_ps(t[h], t[h + 2], 0x44);
    u[h + 1] = _mm256_shuffle_ps(t[h], t[h + 2], 0xee);
    u[h + 2] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0x44);
    u[h + 3] = _mm256_shuffle_ps(t[h + 1], t[h + 3], 0xee);
  }
  for (int i = 0; i < 4; ++i) {
    r[i] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x20);
    r[i + 4] = _mm256_permute2f128_ps(u[i], u[i + 4], 0x31);
  }
}

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace ember::cpu

#endif
