// Internal: what the AVX-512 VNNI kernels share (gemm_int8.cpp, int_conv_vnni.cpp): the target
// of their functions, compiled for AVX-512 VNNI whatever the file's level (cpu/isa.h picks them
// at run time), and the rows of their 12 x 32 tiles of i32 sums, by which the kernels unroll
// their registers.
//
//   EMBER_TARGET_VNNI void kernel(...);            // only where EMBER_HAVE_VNNI_KERNELS
//   #define DECL(i) __m512i c##i;
//   EMBER_VNNI_ROWS(DECL)                          // c0 ... c11
#pragma once
#include <cstdint>
#include <cstring>

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_HAVE_VNNI_KERNELS 1
#define EMBER_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#endif

#define EMBER_VNNI_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

// The rows of an R x 32 tile of i32 sums held in registers c<i>0 and c<i>1 (i < R), for
// EMBER_VNNI_ROWS; each expects in scope the row count R, and for the step the packed A bytes
// `ap` (a row's four bytes of the step at ap + 4 i), B's two registers b0 and b1, and kSwap
// (true: B is VPDPBUSD's unsigned operand, else A), for the store the output c and its row
// stride ldc.
#define EMBER_VNNI_TILE_STEP(i)                      \
  if constexpr (i < R) {                             \
    int32_t w;                                       \
    std::memcpy(&w, ap + 4 * (i), 4);                \
    const __m512i a = _mm512_set1_epi32(w);          \
    if constexpr (kSwap) {                           \
      c##i##0 = _mm512_dpbusd_epi32(c##i##0, b0, a); \
      c##i##1 = _mm512_dpbusd_epi32(c##i##1, b1, a); \
    } else {                                         \
      c##i##0 = _mm512_dpbusd_epi32(c##i##0, a, b0); \
      c##i##1 = _mm512_dpbusd_epi32(c##i##1, a, b1); \
    }                                                \
  }
#define EMBER_VNNI_TILE_STORE(i)                    \
  if constexpr (i < R) {                            \
    _mm512_storeu_si512(c + (i)*ldc, c##i##0);      \
    _mm512_storeu_si512(c + (i)*ldc + 16, c##i##1); \
  }

namespace ember::cpu {

/// x rounded up to a multiple of `to`.
inline int64_t round_up_to(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace ember::cpu
