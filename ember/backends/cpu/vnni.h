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

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_HAVE_VNNI_KERNELS 1
#define EMBER_TARGET_VNNI __attribute__((target("avx512f,avx512bw,avx512vnni")))
#endif

#define EMBER_VNNI_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

namespace ember::cpu {

/// x rounded up to a multiple of `to`.
inline int64_t round_up_to(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

}  // namespace ember::cpu
