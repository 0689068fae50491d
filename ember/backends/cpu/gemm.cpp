// Blocked GEMM in the style of BLIS/GotoBLAS: B is packed into KC x NR panels shared by all
// threads, each thread packs its own MC x KC block of A into MR x KC panels, and an MR x NR
// micro-kernel keeps the C tile in registers across the whole KC loop. The micro-kernel and
// its blocking come in variants per instruction set, chosen at run time (cpu/isa.h).
#include "ember/backends/cpu/gemm.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/isa.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {

// How the micro-kernel reads A: packed in MR-row panels, or in place, row- or column-major.
constexpr int kPacked = 0, kRows = 1, kColumns = 2;

// The blocking of one micro-kernel variant: an MR x NR tile of C in registers (NR: two vectors
// of `Bytes`), A packed in MC x KC blocks, B in KC x NR panels. KC keeps an A and a B
// micro-panel in L1 together, MC an A block in L2.
template <class T, int Bytes, int Rows, int64_t KC, int64_t MC>
struct Blocking {
  static constexpr int kW = Bytes / int(sizeof(T));  // lanes
  static constexpr int kMR = Rows;
  static constexpr int kNR = 2 * kW;
  static constexpr int64_t kKC = KC;
  static constexpr int64_t kMC = MC;
  static constexpr int64_t kNC = 2048;
};

// The micro-kernel: C tile (MR x 2W) = (accumulate ? C : 0) + Ap * Bp over kc, for MR of 6 or
// 12, B's rows ldb apart (a packed panel's 2W, or a row-major B read in place), A packed (MR
// values per k: InA kPacked) or read in place (kRows: row-major, rows lda apart; kColumns:
// column-major, columns lda apart, the layout of a packed panel with lda for MR), written once as a
// macro and expanded inside each variant's function below, so that every operation in it is
// compiled for that variant's instruction set (a helper function would be compiled for the file's
// level first: its vectors split into pieces, or refused inlining). V: the vector type, W: its
// lanes, BCAST(p): every lane = *p, from memory (a load-port op, where a register broadcast would
// take a shuffle slot from the FMA pipes). The accumulators are named variables, not an array: GCC
// kept an array's rows in memory and stored them back on every step of the loop.
#define EMBER_GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define EMBER_GEMM_DECL(i) V c##i##0 {}, c##i##1 {};
#define EMBER_GEMM_ROWS_WITH(X, B) \
  X(0, B) X(1, B) X(2, B) X(3, B) X(4, B) X(5, B) X(6, B) X(7, B) X(8, B) X(9, B) X(10, B) X(11, B)
#define EMBER_GEMM_STEP(i, BCAST)            \
  if constexpr (i < MR) {                    \
    a = BCAST(ap + i * ars);                 \
    c##i##0 += a * b0;                       \
    if constexpr (NV > 1) c##i##1 += a * b1; \
  }
#define EMBER_GEMM_OUT(i)                                            \
  if constexpr (i < MR) {                                            \
    T* row = c + i * ldc;                                            \
    if (accumulate) {                                                \
      V lo;                                                          \
      std::memcpy(&lo, row, sizeof(V));                              \
      c##i##0 += lo;                                                 \
      if constexpr (NV > 1) {                                        \
        std::memcpy(&lo, row + W, sizeof(V));                        \
        c##i##1 += lo;                                               \
      }                                                              \
    }                                                                \
    std::memcpy(row, &c##i##0, sizeof(V));                           \
    if constexpr (NV > 1) std::memcpy(row + W, &c##i##1, sizeof(V)); \
  }
// The C tile is fetched (for writing) while the loop runs: its rows are ldc apart and rarely
// still cached, and waiting for them after the loop cost several percent of a large GEMM.
// Tiles over 1 KiB (AVX-512's 12 rows of two 64-byte vectors) are fetched one row per step of
// the loop's first MR steps: all at once before it (up to 36 lines) they took every line-fill
// buffer, and the first steps' loads of B waited behind them (on a Xeon, 2 threads, run in
// turn with oneDNN: 1024^2 from 0.85-0.90x of oneDNN to 0.97x in one call). Smaller tiles
// (AVX2's 6 rows of 32 bytes) are fetched before the loop: spread, a 1x1 conv (256 x 3136 x
// 64 per image) was 2-3% slower on an AMD EPYC.
#define EMBER_GEMM_PREFETCH(i)                   \
  __builtin_prefetch(c + i * ldc, 1, 3);         \
  __builtin_prefetch(c + i * ldc + W - 1, 1, 3); \
  if constexpr (NV > 1) __builtin_prefetch(c + i * ldc + 2 * W - 1, 1, 3);
#define EMBER_GEMM_KSTEP(BCAST_)                               \
  {                                                            \
    V b0, b1, a;                                               \
    std::memcpy(&b0, bp, sizeof(V));                           \
    if constexpr (NV > 1) std::memcpy(&b1, bp + W, sizeof(V)); \
    EMBER_GEMM_ROWS_WITH(EMBER_GEMM_STEP, BCAST_)              \
    ap += acs;                                                 \
    bp += ldb;                                                 \
  }
#define EMBER_GEMM_MICRO(T_, V_, MR_, AS_, BCAST_)                       \
  {                                                                      \
    using T = T_;                                                        \
    using V = V_;                                                        \
    constexpr int W = int(sizeof(V) / sizeof(T));                        \
    constexpr int MR = MR_;                                              \
    const int64_t ars = InA == kRows ? lda : 1;                          \
    const int64_t acs = InA == kPacked ? AS_ : InA == kRows ? 1 : lda;   \
    EMBER_GEMM_ROWS(EMBER_GEMM_DECL)                                     \
    constexpr bool spread = MR * NV * int(sizeof(V)) > 1024;             \
    const int64_t fetch = spread ? (kc < MR ? kc : MR) : 0;              \
    int64_t p = 0;                                                       \
    for (; p < fetch; ++p) {                                             \
      EMBER_GEMM_PREFETCH(p)                                             \
      EMBER_GEMM_KSTEP(BCAST_)                                           \
    }                                                                    \
    for (int64_t i = fetch; i < MR; ++i) {                               \
      EMBER_GEMM_PREFETCH(i)                                             \
    }                                                                    \
    _Pragma("GCC unroll 4") for (; p < kc; ++p) EMBER_GEMM_KSTEP(BCAST_) \
        EMBER_GEMM_ROWS(EMBER_GEMM_OUT)                                  \
  }

// The variants (cpu/isa.h): 32-byte vectors in the instructions the library is compiled for;
// AVX2 + FMA; AVX-512 with 64-byte vectors and 12 rows (24 of its 32 registers hold C).
typedef float vf32_portable __attribute__((vector_size(32)));
typedef double vf64_portable __attribute__((vector_size(32)));
#define EMBER_BCAST_GENERIC(p) (*(p)-V{})  // x - 0 is x for every x (x + 0 is not: -0.0)
// Each is a template over the rows it computes, R, and how it reads A, InA: from a panel packed MR
// (6 or 12) rows wide, R = MR for full tiles, 4 and 8 for the last rows of a product (a batch of
// 64 is 5 x 12 + 4); in place, every R up to MR.
template <int R, int InA, int NV = 2>
void micro_portable_f32(int64_t kc, const float* __restrict ap, int64_t lda,
                        const float* __restrict bp, int64_t ldb, float* c, int64_t ldc,
                        bool accumulate) {
#if defined(__AVX__)
#define EMBER_BCAST_256PS(p) _mm256_broadcast_ss(p)
  EMBER_GEMM_MICRO(float, __m256, R, 6, EMBER_BCAST_256PS)
#else
  EMBER_GEMM_MICRO(float, vf32_portable, R, 6, EMBER_BCAST_GENERIC)
#endif
}
template <int R, int InA, int NV = 2>
void micro_portable_f64(int64_t kc, const double* __restrict ap, int64_t lda,
                        const double* __restrict bp, int64_t ldb, double* c, int64_t ldc,
                        bool accumulate) {
#if defined(__AVX__)
#define EMBER_BCAST_256PD(p) _mm256_broadcast_sd(p)
  EMBER_GEMM_MICRO(double, __m256d, R, 6, EMBER_BCAST_256PD)
#else
  EMBER_GEMM_MICRO(double, vf64_portable, R, 6, EMBER_BCAST_GENERIC)
#endif
}
#if defined(__x86_64__)
#define EMBER_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
#define EMBER_BCAST_512PS(p) _mm512_set1_ps(*(p))
#define EMBER_BCAST_512PD(p) _mm512_set1_pd(*(p))
// clang-format off
template <int R, int InA, int NV = 2>
EMBER_TARGET_AVX2 void micro_avx2_f32(int64_t kc, const float* __restrict ap, int64_t lda,
                                      const float* __restrict bp, int64_t ldb, float* c,
                                      int64_t ldc, bool accumulate) {
  EMBER_GEMM_MICRO(float, __m256, R, 6, _mm256_broadcast_ss)
}
template <int R, int InA, int NV = 2>
EMBER_TARGET_AVX2 void micro_avx2_f64(int64_t kc, const double* __restrict ap, int64_t lda,
                                      const double* __restrict bp, int64_t ldb, double* c,
                                      int64_t ldc, bool accumulate) {
  EMBER_GEMM_MICRO(double, __m256d, R, 6, _mm256_broadcast_sd)
}
template <int R, int InA, int NV = 2>
EMBER_TARGET_AVX512 void micro_avx512_f32(int64_t kc, const float* __restrict ap, int64_t lda,
                                          const float* __restrict bp, int64_t ldb, float* c,
                                          int64_t ldc, bool accumulate) {
  EMBER_GEMM_MICRO(float, __m512, R, 12, EMBER_BCAST_512PS)
}
template <int R, int InA, int NV = 2>
EMBER_TARGET_AVX512 void micro_avx512_f64(int64_t kc, const double* __restrict ap, int64_t lda,
                                          const double* __restrict bp, int64_t ldb, double* c,
                                          int64_t ldc, bool accumulate) {
  EMBER_GEMM_MICRO(double, __m512d, R, 12, EMBER_BCAST_512PD)
}
// clang-format on
#endif

// A variant: its blocking and micro-kernels (K<R, kPacked> for R rows of an MR-row panel;
// K<R, kRows or kColumns> for R rows of A read in place, one for every R up to MR: past the last
// row there is no row to read).
template <class T, class Bk, template <int, int, int = 2> class K>
struct Variant : Bk {
  static constexpr auto micro = K<Bk::kMR, kPacked>::f;
  static constexpr auto micro4 = K<4, kPacked>::f;
  static constexpr auto micro8 = K<(Bk::kMR >= 8 ? 8 : Bk::kMR), kPacked>::f;
  // half[0]: 4 rows, [1]: 8, [2]: MR, of one vector's columns (NR / 2): a last panel that narrow
  static constexpr std::array half = {K<4, kPacked, 1>::f,
                                      K<(Bk::kMR >= 8 ? 8 : Bk::kMR), kPacked, 1>::f,
                                      K<Bk::kMR, kPacked, 1>::f};
  template <int InA, int... I>
  static constexpr auto in_place(std::integer_sequence<int, I...>) {
    return std::array{K<I + 1, InA>::f...};
  }
  // in_place_rows[r - 1]: r rows of a row-major A; in_place_columns: of a column-major one
  static constexpr auto in_place_rows = in_place<kRows>(std::make_integer_sequence<int, Bk::kMR>{});
  static constexpr auto in_place_columns =
      in_place<kColumns>(std::make_integer_sequence<int, Bk::kMR>{});
};
#define EMBER_GEMM_KERNEL(name)                 \
  template <int R, int InA, int NV = 2>         \
  struct K_##name {                             \
    static constexpr auto f = name<R, InA, NV>; \
  };
EMBER_GEMM_KERNEL(micro_portable_f32)
EMBER_GEMM_KERNEL(micro_portable_f64)
#if defined(__x86_64__)
EMBER_GEMM_KERNEL(micro_avx2_f32)
EMBER_GEMM_KERNEL(micro_avx2_f64)
EMBER_GEMM_KERNEL(micro_avx512_f32)
EMBER_GEMM_KERNEL(micro_avx512_f64)
#endif
template <class T>
struct Variants;
template <>
struct Variants<float> {
  using Portable = Variant<float, Blocking<float, 32, 6, 320, 120>, K_micro_portable_f32>;
#if defined(__x86_64__)
  using Avx2 = Variant<float, Blocking<float, 32, 6, 320, 120>, K_micro_avx2_f32>;
  using Avx512 = Variant<float, Blocking<float, 64, 12, 512, 120>, K_micro_avx512_f32>;
#endif
};
template <>
struct Variants<double> {
  using Portable = Variant<double, Blocking<double, 32, 6, 320, 120>, K_micro_portable_f64>;
#if defined(__x86_64__)
  using Avx2 = Variant<double, Blocking<double, 32, 6, 320, 120>, K_micro_avx2_f64>;
  using Avx512 = Variant<double, Blocking<double, 64, 12, 192, 240>, K_micro_avx512_f64>;
#endif
};

// Packs A[ic.., pc..] (mc x kc) into MR-row panels, k-major within a panel, zero-padded.
// Row-major A (the usual x of a linear layer) is read along its rows, each row written into
// its lane of the panel: reading down the columns instead touched a new cache line per element.
template <class T, int MR>
void pack_a(MatRef<T> a, int64_t ic, int64_t pc, int64_t mc, int64_t kc, T* dst) {
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    int64_t rows = std::min<int64_t>(MR, mc - i0);
    if (a.cs == 1 && a.rs != 1) {
      transpose_into(a.p + (ic + i0) * a.rs + pc, a.rs, rows, kc, dst, int64_t(MR));
      for (int64_t i = rows; i < MR; ++i)
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = T(0);
      dst += MR * kc;
      continue;
    }
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = a.p + (ic + i0) * a.rs + (pc + p) * a.cs;
      for (int64_t i = 0; i < rows; ++i) dst[i] = src[i * a.rs];
      for (int64_t i = rows; i < MR; ++i) dst[i] = T(0);
      dst += MR;
    }
  }
}

// Packs B[pc.., j..] (kc x cols<=width) into one panel `width` wide, zero-padded. A row-major
// B's full panels do not come here: gemm() reads them in place or packs them row by row
// (pack_b_rows); its last, narrower panel does.
template <class T>
void pack_b_panel(MatRef<T> b, int64_t pc, int64_t j, int64_t kc, int64_t cols, int64_t width,
                  T* dst) {
  if (b.rs == 1 && b.cs != 1) {  // column-major B (a transposed weight): down its columns
    transpose_into(b.p + pc + j * b.cs, b.cs, cols, kc, dst, width);
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t q = cols; q < width; ++q) dst[p * width + q] = T(0);
    return;
  }
  for (int64_t p = 0; p < kc; ++p, dst += width) {
    const T* src = b.p + (pc + p) * b.rs + j * b.cs;
    for (int64_t q = 0; q < cols; ++q) dst[q] = src[q * b.cs];
    for (int64_t q = cols; q < width; ++q) dst[q] = T(0);
  }
}

// Packs `count` full panels of a row-major B, B[pc.., j..] (kc x count * width), row by row:
// each row's stretch read once, in order, its pieces written to their panels. Panel by panel, B
// was read down columns of rows a row apart (512^2 on one thread of a Zen 4: 6-8% of the time,
// 2.6% this way). Four rows side by side: from memory (a 1x1 conv's input, its rows planes
// apart), a row at a time left the prefetchers one stream to follow, started over at each row's
// stretch; four at a time, packing 64 x 2048 floats from memory on a Zen 4 went from 8.1-8.7 to
// 11.2-13.0 GB/s (and from 6.0-8.0 before copy_panel_row's 32-byte moves).
template <class T>
void pack_b_rows(MatRef<T> b, int64_t pc, int64_t j, int64_t kc, int64_t count, int64_t width,
                 T* dst) {
  int64_t p = 0;
  for (; p + 4 <= kc; p += 4) {
    const T* src = b.p + (pc + p) * b.rs + j;
    for (int64_t q = 0; q < count; ++q)
      for (int64_t r = 0; r < 4; ++r)
        copy_panel_row(dst + (q * kc + p + r) * width, src + r * b.rs + q * width, width);
  }
  for (; p < kc; ++p) {
    const T* src = b.p + (pc + p) * b.rs + j;
    for (int64_t q = 0; q < count; ++q)
      copy_panel_row(dst + (q * kc + p) * width, src + q * width, width);
  }
}

// Packs panels b0..b1 of the B block at rows pc.. (kc of them) and columns jc.. (nc of them),
// panel b at dst + b * NR * kc: a row-major B's full panels (direct_b) row by row, the others
// (a narrower last one, or any B given by pack_b) by pack_b.
template <int NR, class T, class PackB>
void pack_b_block(const PackB& pack_b, MatRef<T> direct_b, int64_t pc, int64_t kc, int64_t jc,
                  int64_t nc, int64_t b0, int64_t b1, T* dst) {
  if (direct_b.p) {
    const int64_t full = std::min(b1, nc / NR);
    if (full > b0)
      pack_b_rows(direct_b, pc, jc + b0 * NR, kc, full - b0, int64_t(NR), dst + b0 * NR * kc);
    b0 = std::max(b0, full);
  }
  for (int64_t jp = b0; jp < b1; ++jp)
    pack_b(pc, jc + jp * NR, kc, std::min<int64_t>(NR, nc - jp * NR), int64_t(NR),
           dst + jp * NR * kc);
}

// Where a block of A is: packed in MR-row panels (mode kPacked), or in place (kRows, kColumns)
// at p with rows (columns) ld apart.
template <class T>
struct ABlock {
  const T* p;
  int mode;
  int64_t ld;
};
// Runs the micro-kernel down one block of A (mc rows) against one B panel (cols <= NR of C's
// columns). Edge tiles are computed into a buffer and the valid part copied.
template <class Bk, class T>
void run_panel(int64_t kc, int64_t mc, int64_t cols, ABlock<T> a, const T* bp, int64_t ldb, T* c,
               int64_t ldc, bool accumulate) {
  constexpr int MR = Bk::kMR, NR = Bk::kNR;
  alignas(64) T tile[MR * NR];
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    const int64_t rows = std::min<int64_t>(MR, mc - i0);
    T* cp = c + i0 * ldc;
    const T* ap = a.p + i0 * (a.mode == kPacked ? kc : a.mode == kRows ? a.ld : 1);
    const int64_t lda = a.ld;
    // the last rows of a product take the smallest kernel that covers them (read in place, the
    // one of exactly their count), and a last panel of NR / 2 columns or fewer a kernel of one
    // vector: 196 columns are 6 panels and 4 columns, which the two-vector kernel ran with an
    // eighth of its FMAs past the end (1024 x 256 x 196 on a Zen 4, 2 threads, paired with
    // oneDNN: 0.81x -> 0.86-0.99x). Only for a packed A: in place, every row count would need one.
    const bool half = a.mode == kPacked && cols <= NR / 2;
    const size_t size = rows <= 4 ? 0 : rows <= 8 ? 1 : 2;
    const auto micro = a.mode == kRows      ? Bk::in_place_rows[size_t(rows - 1)]
                       : a.mode == kColumns ? Bk::in_place_columns[size_t(rows - 1)]
                       : half               ? Bk::half[size]
                       : rows <= 4          ? Bk::micro4
                       : rows <= 8          ? Bk::micro8
                                            : Bk::micro;
    const int64_t covered = a.mode != kPacked ? rows : rows <= 4 ? 4 : rows <= 8 && MR > 8 ? 8 : MR;
    if (rows == covered && cols == (half ? NR / 2 : NR)) {
      micro(kc, ap, lda, bp, ldb, cp, ldc, accumulate);
    } else {
      for (int64_t i = 0; i < rows && accumulate; ++i)
        std::memcpy(tile + i * NR, cp + i * ldc, cols * sizeof(T));
      micro(kc, ap, lda, bp, ldb, tile, NR, accumulate);
      for (int64_t i = 0; i < rows; ++i) std::memcpy(cp + i * ldc, tile + i * NR, cols * sizeof(T));
    }
  }
}

// A read in place where one of its strides is 1 (ABlock at its element (0, 0)), or kPacked.
template <class T>
ABlock<T> in_place_of(MatRef<T> a) {
  if (a.cs == 1) return {a.p, kRows, std::max<int64_t>(a.rs, 1)};
  if (a.rs == 1) return {a.p, kColumns, a.cs};
  return {a.p, kPacked, 0};
}
// The block of an in-place A from its element (i, p).
template <class T>
ABlock<T> at(ABlock<T> a, int64_t i, int64_t p) {
  return {a.p + (a.mode == kRows ? i * a.ld + p : i + p * a.ld), a.mode, a.ld};
}

// Where part i of `count` things cut into `parts` near-equal parts begins.
constexpr int64_t share(int64_t i, int64_t count, int64_t parts) { return i * count / parts; }

template <class F>
void for_range(bool parallel, int64_t count, int64_t grain, F&& f) {
  if (parallel)
    parallel_for(count, grain, f);
  else if (count > 0)
    f(int64_t{0}, count);
}

// Products of few rows (up to 4 blocks of MC): the skinny GEMMs of training. One round of work
// items, each a block of rows x a group of B panels running the whole K loop with its B panels
// packed where it uses them (into a panel that stays in L1) or read in place. A round per K
// block cost 64 x 784 x 256 13% of its time.
// A row- or column-major A (one stride 1: a linear layer's x or x^T) is read in place, by kernels
// of each row count: with only these rows, packing it was not repaid (on an AVX2 CPU, 2 threads,
// 64 x 784 x 256 0.160 -> 0.145 ms, 256^3 0.204 -> 0.183; one thread 0.303 -> 0.280, 0.382 ->
// 0.358). In the blocked path below, where each packed block serves many B panels, reading A in
// place measured the same, and it keeps packing. Other strides are packed whole, every K block:
// with one block of rows, by each thread for itself (A then stays in the thread's own cache:
// read across from the other core's, 64 x 784 x 256 on 2 threads took 0.114 ms, 0.102 this
// way); with more, by the threads together first. Packing A per item (every item of a block
// packing the same rows) cost a third. B's panels are cut into one group per thread, so that
// each thread's items run along its own stretch of B's columns: items of single panels (8 a
// thread), taken in turn by the two threads of a Zen 4, had them reading neighbouring columns of
// B at once, and measured in one process with the two splits alternating, 64 x 784 x 256 took
// 0.127-0.152 ms against 0.120-0.128, 256^3 0.160 against 0.155, 64 x 512 x 512 0.160 against
// 0.154 (others within 1%, none slower).
template <class Bk, class T, class PackB>
void gemm_few_rows(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b,
                   MatRef<T> direct_b, T* c, int64_t ldc, bool add_to_c, bool parallel) {
  constexpr int MR = Bk::kMR, NR = Bk::kNR;
  static_assert(Bk::kMC % MR == 0);
  const int64_t threads = parallel ? num_threads() : 1;
  const int64_t mblocks = (m + Bk::kMC - 1) / Bk::kMC, mpanels = (m + MR - 1) / MR;
  const int64_t kblocks = (k + Bk::kKC - 1) / Bk::kKC, npanels = (n + NR - 1) / NR;
  const size_t apack_size = static_cast<size_t>(mpanels * MR * k);
  // Packs A's panels t0..t1 (K block major): K block pc's panels start at pc * mpanels * MR,
  // panel r of it r * MR * kc further.
  auto pack_a_panels = [&](T* dst, int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t r = t % mpanels, pc = t / mpanels * Bk::kKC;
      const int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
      pack_a<T, MR>(a, r * MR, pc, std::min<int64_t>(MR, m - r * MR), kc,
                    dst + pc * mpanels * MR + r * MR * kc);
    }
  };
  const ABlock<T> in_place = in_place_of(a);
  const bool a_in_place = in_place.mode != kPacked;
  const bool private_a = mblocks == 1 && !a_in_place;
  Aligned<T> shared_a(private_a || a_in_place ? 0 : apack_size);
  if (!private_a && !a_in_place)
    for_range(parallel, mpanels * kblocks, 1,
              [&](int64_t t0, int64_t t1) { pack_a_panels(shared_a.p, t0, t1); });
  const int64_t pgroups = std::min(threads, npanels);
  const int64_t per_group = (npanels + pgroups - 1) / pgroups;
  for_range(parallel, mblocks * pgroups, 1, [&](int64_t w0, int64_t w1) {
    Aligned<T> bpanel(static_cast<size_t>(NR * std::min<int64_t>(Bk::kKC, k)));
    Aligned<T> own_a(private_a ? apack_size : 0);
    if (private_a) pack_a_panels(own_a.p, 0, mpanels * kblocks);
    const T* apack = private_a ? own_a.p : shared_a.p;
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t ic = w / pgroups * Bk::kMC, mc = std::min<int64_t>(Bk::kMC, m - ic);
      const int64_t g = w % pgroups, p_end = std::min(npanels, (g + 1) * per_group);
      for (int64_t jp = g * per_group; jp < p_end; ++jp) {
        const int64_t j = jp * NR, cols = std::min<int64_t>(NR, n - j);
        for (int64_t pc = 0; pc < k; pc += Bk::kKC) {
          const int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
          const T* bp = bpanel.p;
          int64_t ldb = NR;
          if (direct_b.p && cols == NR) {  // a row-major B's panel is read where it lies
            bp = direct_b.p + pc * direct_b.rs + j;
            ldb = direct_b.rs;
          } else {
            pack_b(pc, j, kc, cols, int64_t(NR), bpanel.p);
          }
          const ABlock<T> ab = a_in_place
                                   ? at(in_place, ic, pc)
                                   : ABlock<T>{apack + pc * mpanels * MR + ic * kc, kPacked, 0};
          run_panel<Bk>(kc, mc, cols, ab, bp, ldb, c + ic * ldc + j, ldc, add_to_c || pc > 0);
        }
      }
    }
  });
}

// Whether a product of one K block runs in strips: blocks of one A panel (MR rows), each along
// all of an NC-column block of B, where the packed B block stays in a quarter of a large L2 and
// an MC-row block of C would not stay in half of it (see gemm() below).
template <class Bk, class T>
bool strips_fit(int64_t n, int64_t k) {
  constexpr int NR = Bk::kNR;
  const int64_t nc_max = std::min<int64_t>(Bk::kNC, (n + NR - 1) / NR * NR);
  const int64_t l2 = cpu_l2_bytes();
  return k <= Bk::kKC && l2 >= (int64_t{1} << 20) && nc_max * k * int64_t(sizeof(T)) <= l2 / 4 &&
         Bk::kMC * n * int64_t(sizeof(T)) > l2 / 2;
}

// Products of one K block with a wide B on several threads (a 1x1 conv of one image: 256 x 64 x
// 3136): each thread takes an equal run of B's panels and all of the work on them, packing its
// own B, up to NC columns at a time, and its own blocks of A. One parallel region, and no thread
// reads what another packed. The blocked path below packs each B block with all the threads
// (a region and a wait per block) and splits the rows, so that every thread reads all of B, half
// of it packed on the other core. On an AMD EPYC (Zen 4), 2 threads, run in turn with oneDNN's
// matmul: 256 x 64 x 3136 0.67-0.89x of it -> 0.97-0.99x, 256 x 64 x 1568 0.88-0.89x -> 0.98x,
// 576 x 64 x 3136 0.79-0.97x -> 1.00x, 128 x 32 x 12544 0.49-0.81x -> 0.96-1.01x, 512 x 128 x
// 784 0.90x -> 0.93x, 512^2 0.95x -> 0.96-0.98x; 1024 x 256 x 4096 and 2048 x 512 x 4096
// unchanged. From 8 panels a thread: with 3 or 4 (1024 x 256 x 196) it fell from 0.89x to 0.72-
// 0.76x. Not where each thread copies all of a small B for itself (x^T g, below): on AVX2, 784 x
// 64 x 256 0.95x -> 0.90x.
template <class Bk, class T, class PackB>
void gemm_columns(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b,
                  MatRef<T> direct_b, T* c, int64_t ldc, bool add_to_c, int64_t threads) {
  constexpr int MR = Bk::kMR, NR = Bk::kNR;
  const int64_t npanels = (n + NR - 1) / NR, chunk = Bk::kNC / NR;
  const int64_t block = strips_fit<Bk, T>(n, k) ? MR : Bk::kMC;  // rows of A a block
  parallel_for(threads, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t p0 = share(t, npanels, threads), p1 = share(t + 1, npanels, threads);
      Aligned<T> bpack(static_cast<size_t>(std::min(chunk, p1 - p0) * NR * k));
      Aligned<T> apack(static_cast<size_t>(std::min(block, (m + MR - 1) / MR * MR) * k));
      for (int64_t c0 = p0; c0 < p1; c0 += chunk) {
        const int64_t c1 = std::min(p1, c0 + chunk);
        pack_b_block<NR>(pack_b, direct_b, 0, k, c0 * NR, n - c0 * NR, 0, c1 - c0, bpack.p);
        for (int64_t ic = 0; ic < m; ic += block) {
          const int64_t mc = std::min(block, m - ic);
          pack_a<T, MR>(a, ic, 0, mc, k, apack.p);
          for (int64_t jp = c0; jp < c1; ++jp)
            run_panel<Bk>(k, mc, std::min<int64_t>(NR, n - jp * NR), ABlock<T>{apack.p, kPacked, 0},
                          bpack.p + (jp - c0) * NR * k, int64_t(NR), c + ic * ldc + jp * NR, ldc,
                          add_to_c);
        }
      }
    }
  });
}

// Whether C = A B (A row-major, B column-major) goes through gemm_transposed: transposing A and
// C costs at most half of transposing B, and A^T's packed panels are full or nearly and 2 MiB
// or less (each thread packs all of them).
template <class Bk, class T>
bool transposed_pays(int64_t m, int64_t n, int64_t k) {
  constexpr int64_t NR = Bk::kNR;
  const int64_t padded = (m + NR - 1) / NR * NR;
  return m >= NR && (padded - m) * 8 <= m &&
         padded * k * int64_t(sizeof(T)) <= (int64_t{2} << 20) && 2 * m * (n + k) <= k * n;
}

// C = A B for a row-major A of few rows and a column-major B (B^T row-major), computed as C^T =
// B^T A^T: B^T, the large operand, is read in place as the transposed product's A (MR of its
// rows at a time), A^T packed into the B panels, and C^T, a block of rows at a time, transposed
// into C. Packing a column-major B is a transpose of all of it (k x n); this transposes A and C
// (m x k and m x n). Each thread takes an equal run of B^T's rows, packs all of A^T for itself
// and writes its own columns of C: one parallel region. On an AMD EPYC (Zen 4), in one process
// with the two ways alternating, medians of 7: 64 x 256 x 784 (g w^T of a 784 -> 256 layer) on 2
// threads 0.140 -> 0.126 ms, one 0.262 -> 0.241 (oneDNN's: 0.258); 32 x 512 x 512 0.098 -> 0.087;
// 128 x 4096 x 1024 6.3-6.7 -> 5.5-5.7; 256 x 2048 x 2048 12.0 -> 11.0; on AVX2 likewise.
// Only where C^T's panels are full or nearly (m >= NR, an eighth or less of padding): 16 rows
// on AVX-512 ran half-empty tiles and took 1.4x as long, 8 rows 2.2x.
template <class Bk, class T>
void gemm_transposed(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> bt, T* c, int64_t ldc,
                     bool parallel) {
  constexpr int MR = Bk::kMR, NR = Bk::kNR;
  constexpr int64_t kBlock = 4 * MR;  // rows of C^T between transposes (a block stays in L1)
  const int64_t threads = parallel ? std::min<int64_t>(num_threads(), (n + MR - 1) / MR) : 1;
  const int64_t npanels = (m + NR - 1) / NR, mtiles = (n + MR - 1) / MR;
  const MatRef<T> at{a.p, 1, a.rs};
  for_range(parallel, threads, 1, [&](int64_t t0, int64_t t1) {
    Aligned<T> apack(static_cast<size_t>(npanels * NR * k));
    Aligned<T> block(static_cast<size_t>(kBlock * m));
    // K block pc's panels from pc * npanels * NR, panel jp of it jp * NR * kc further
    for (int64_t pc = 0; pc < k; pc += Bk::kKC) {
      const int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
      for (int64_t jp = 0; jp < npanels; ++jp)
        pack_b_panel(at, pc, jp * NR, kc, std::min<int64_t>(NR, m - jp * NR), int64_t(NR),
                     apack.p + pc * npanels * NR + jp * NR * kc);
    }
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t i1 = std::min(n, share(t + 1, mtiles, threads) * MR);
      for (int64_t i0 = share(t, mtiles, threads) * MR; i0 < i1; i0 += kBlock) {
        const int64_t rows = std::min(kBlock, i1 - i0);
        for (int64_t pc = 0; pc < k; pc += Bk::kKC) {
          const int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
          for (int64_t jp = 0; jp < npanels; ++jp)
            run_panel<Bk>(kc, rows, std::min<int64_t>(NR, m - jp * NR),
                          ABlock<T>{bt.p + i0 * bt.rs + pc, kRows, bt.rs},
                          apack.p + pc * npanels * NR + jp * NR * kc, int64_t(NR),
                          block.p + jp * NR, m, pc > 0);
        }
        transpose_into(block.p, m, rows, m, c + i0, ldc);
      }
    }
  });
}

// pack_b(pc, j, kc, cols, NR, dst) packs B[pc.., j..] (kc x cols) into one NR-column panel.
// direct_b: B itself when it is row-major (p null otherwise), for the few-rows path to read.
template <class Bk, class T, class PackB>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b, MatRef<T> direct_b,
          T* c, int64_t ldc, bool add_to_c, bool parallel) {
  constexpr int MR = Bk::kMR, NR = Bk::kNR;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!add_to_c)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  const int64_t mblocks = (m + Bk::kMC - 1) / Bk::kMC;
  // The few-rows path packs all of A at once: up to 16 MiB of it. It reads a row-major B in
  // place, which pays only while B's rows share pages: a page or more apart, each row of a
  // panel is a TLB miss and the prefetchers stop at the page's end. There the path below, which
  // packs B once for all rows of A, was 1.1-2x faster on an AVX2 CPU (a 1x1 conv's 256 x 3136 x
  // 64 per image 1.1-1.2x, 64 x 1024 x 1024 2x, 128 x 4096 x 512 1.6-2.2x), and slower for rows
  // under a page apart (64 x 784 x 256, 64 x 512 x 512).
  const bool b_rows_far = direct_b.p && direct_b.rs * int64_t(sizeof(T)) >= 4096;
  if (mblocks <= 4 && !b_rows_far && m * k <= (int64_t{16} << 20) / int64_t(sizeof(T)))
    return gemm_few_rows<Bk>(m, n, k, a, pack_b, direct_b, c, ldc, add_to_c, parallel);
  // Otherwise, per K block: B packed into a buffer shared by all threads, then work items of
  // (block of rows) x (group of B panels), each packing its block of A. The blocks (up to MC
  // rows, a multiple of the threads of them where there are that many) and the groups are of
  // equal size within a panel, and each thread takes an equal run of items: with MC-row blocks
  // and the last one short, taken as they came, a thread did up to a block more than the other
  // (784 x 64 x 256: 7 blocks on 2 threads). On an AVX2 CPU, 2 threads, 512^2, 1024^2 and
  // 784 x 64 x 256 (x^T g) took 4-6% less time.
  //
  // With one K block whose packed B stays in a quarter of L2, the blocks are single panels of A
  // (strips of MR rows), each running along all of B: C is then written along MR rows at a
  // time, where MC-row blocks wrote along up to 120 rows at once, more streams than the
  // prefetchers follow. B is read from L2 once per strip. On a Xeon (2 MiB L2), a 1x1 conv's 256
  // x 3136 x 64 per image (run in turn with oneDNN's 1x1 conv): 2 threads 0.74x -> 0.87x, one
  // 0.59x -> 0.83x. Not below 1 MiB of L2: on an AMD EPYC (Zen 3, 512 KiB, 32 KiB L1) strips
  // were slower however small B (x^T g of 784 x 64 x 256, 64 KiB of B: 4-10%; the 1x1 conv with
  // fewer columns per block to fit: 3%), its B panels cycling through L1 once per tile. And only
  // where an MC-row block of C would not stay in half of L2 (the 1x1 conv's 120 x 3136: 1.5 MiB;
  // not x^T g's 120 x 256, 0.12 MiB, which stays cached however many rows it is written along).
  const int64_t threads = parallel ? num_threads() : 1;
  const int64_t mpanels = (m + MR - 1) / MR;
  const int64_t nc_max = std::min<int64_t>(Bk::kNC, (n + NR - 1) / NR * NR);
  // A product of one block of B and of A (x^T g of a linear layer's weight gradient: 784 x 64
  // x 256, x^T column-major, B = g 64 KiB packed) reads a column-major A in place, its MR
  // values of a column side by side, and, where the threads' copies of B come to 256 KiB or
  // less, each thread packs all of B for itself inside the products' region: no region and wait
  // for a shared packing, no reading of the half the other core packed. On an AMD EPYC (Zen 4),
  // x^T g in one process with the variants alternating every 40 ms, 30 rounds: 2 threads 0.126
  // -> 0.120 ms (0.1235 with either change alone), one 0.241 -> 0.233.
  const bool one_block = n <= Bk::kNC && k <= Bk::kKC;
  const ABlock<T> a_columns = in_place_of(a);
  const bool a_in_place = one_block && a_columns.mode == kColumns;
  const bool own_b =
      one_block && direct_b.p && threads * nc_max * k * int64_t(sizeof(T)) <= (int64_t{256} << 10);
  // One K block, 8 panels of B or more a thread, and B too large for a copy per thread: each
  // thread its own run of B's columns (gemm_columns).
  if (threads > 1 && k <= Bk::kKC && n >= threads * 8 * NR && !own_b)
    return gemm_columns<Bk>(m, n, k, a, pack_b, direct_b, c, ldc, add_to_c, threads);
  const bool strips = strips_fit<Bk, T>(n, k);
  const int64_t nblocks =
      strips ? mpanels
             : std::min(mpanels,
                        mblocks >= threads ? (mblocks + threads - 1) / threads * threads : mblocks);
  Aligned<T> bpack(static_cast<size_t>(own_b ? 0 : nc_max * std::min<int64_t>(Bk::kKC, k)));
  for (int64_t jc = 0; jc < n; jc += Bk::kNC) {
    const int64_t nc = std::min<int64_t>(Bk::kNC, n - jc), npanels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < k; pc += Bk::kKC) {
      const int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
      // In chunks of 32 KiB or more: a fixed 8 panels left x^T g's B (784 x 64 x 256: 8 panels
      // of 8 KiB) to one thread while the other waited (2 threads on a Zen 4: the waiting
      // thread's share of the time from 7% to 3%).
      const int64_t pack_grain =
          std::max<int64_t>(1, (int64_t{32} << 10) / (kc * NR * int64_t(sizeof(T))));
      // panels b0..b1 of this block into dst
      auto pack_panels = [&](int64_t b0, int64_t b1, T* dst) {
        pack_b_block<NR>(pack_b, direct_b, pc, kc, jc, nc, b0, b1, dst);
      };
      if (!own_b)
        for_range(parallel, npanels, pack_grain,
                  [&](int64_t b0, int64_t b1) { pack_panels(b0, b1, bpack.p); });
      const int64_t pgroups =
          std::clamp<int64_t>((8 * threads + nblocks - 1) / nblocks, 1, npanels);
      const int64_t items = nblocks * pgroups;
      for_range(parallel, items, (items + threads - 1) / threads, [&](int64_t w0, int64_t w1) {
        Aligned<T> apack(static_cast<size_t>(a_in_place ? 0 : Bk::kMC * kc));
        Aligned<T> mine(static_cast<size_t>(own_b ? nc_max * kc : 0));
        if (own_b) pack_panels(0, npanels, mine.p);
        const T* bsrc = own_b ? mine.p : bpack.p;
        int64_t packed_block = -1;
        for (int64_t w = w0; w < w1; ++w) {
          const int64_t mb = w / pgroups, g = w % pgroups;
          const int64_t ic = share(mb, mpanels, nblocks) * MR;
          const int64_t mc = std::min(m, share(mb + 1, mpanels, nblocks) * MR) - ic;
          if (packed_block != mb && !a_in_place) {
            pack_a<T, MR>(a, ic, pc, mc, kc, apack.p);
            packed_block = mb;
          }
          const ABlock<T> ab = a_in_place ? at(a_columns, ic, pc) : ABlock<T>{apack.p, kPacked, 0};
          const int64_t p_end = share(g + 1, npanels, pgroups);
          for (int64_t jp = share(g, npanels, pgroups); jp < p_end; ++jp) {
            const int64_t j = jc + jp * NR;
            run_panel<Bk>(kc, mc, std::min<int64_t>(NR, n - j), ab, bsrc + jp * NR * kc,
                          int64_t(NR), c + ic * ldc + j, ldc, add_to_c || pc > 0);
          }
        }
      });
    }
  }
}

// f.template operator()<Variant>() for the variant of the CPU's instruction set (cpu_isa()).
template <class T, class F>
decltype(auto) with_variant(F&& f) {
  using V = Variants<T>;
#if defined(__x86_64__)
  const CpuIsa isa = cpu_isa();
  if (isa >= CpuIsa::Avx512) return f.template operator()<typename V::Avx512>();
  if (isa >= CpuIsa::Avx2) return f.template operator()<typename V::Avx2>();
#endif
  return f.template operator()<typename V::Portable>();
}

template <class T, class PackB>
void dispatch(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b, MatRef<T> direct_b,
              T* c, int64_t ldc, bool accumulate, bool parallel) {
  with_variant<T>(
      [&]<class Bk>() { gemm<Bk>(m, n, k, a, pack_b, direct_b, c, ldc, accumulate, parallel); });
}

template <class T>
void gemm_matrix(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
                 bool accumulate, bool parallel) {
  auto pack = [b](int64_t pc, int64_t j, int64_t kc, int64_t cols, int64_t width, T* dst) {
    pack_b_panel(b, pc, j, kc, cols, width, dst);
  };
  if (!accumulate && a.cs == 1 && b.rs == 1 && b.cs != 1) {
    const bool done = with_variant<T>([&]<class Bk>() {
      if (!transposed_pays<Bk, T>(m, n, k)) return false;
      gemm_transposed<Bk>(m, n, k, a, MatRef<T>{b.p, b.cs, 1}, c, ldc, parallel);
      return true;
    });
    if (done) return;
  }
  const MatRef<T> direct = b.cs == 1 ? b : MatRef<T>{nullptr, 0, 0};
  dispatch<T>(m, n, k, a, pack, direct, c, ldc, accumulate, parallel);
}

template <class Bk>
void panel_pack_a(const float* a, int64_t lda, int64_t m, int64_t k, float* dst) {
  pack_a<float, Bk::kMR>({a, lda, 1}, 0, 0, m, k, dst);
}
template <class Bk>
void panel_run(int64_t m, int64_t n, int64_t k, const float* ap, const float* b, int64_t ldb,
               float* c, int64_t ldc) {
  for (int64_t j = 0; j < n; j += Bk::kNR)
    run_panel<Bk>(k, m, std::min<int64_t>(Bk::kNR, n - j), {ap, kPacked, 0}, b + j, ldb, c + j, ldc,
                  false);
}
template <class Bk>
PanelGemmF32 panel_gemm() {
  return {Bk::kMR, Bk::kNR, panel_pack_a<Bk>, panel_run<Bk>};
}

}  // namespace

const PanelGemmF32& panel_gemm_f32() {
  return with_variant<float>([]<class Bk>() -> const PanelGemmF32& {
    static const PanelGemmF32 p = panel_gemm<Bk>();
    return p;
  });
}

void gemm_f32(int64_t m, int64_t n, int64_t k, MatRef<float> a, MatRef<float> b, float* c,
              int64_t ldc, bool accumulate, bool parallel) {
  gemm_matrix<float>(m, n, k, a, b, c, ldc, accumulate, parallel);
}
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, MatRef<double> b, double* c,
              int64_t ldc, bool accumulate, bool parallel) {
  gemm_matrix<double>(m, n, k, a, b, c, ldc, accumulate, parallel);
}
void gemm_f32(int64_t m, int64_t n, int64_t k, MatRef<float> a, const PackB<float>& b, float* c,
              int64_t ldc, bool accumulate, bool parallel) {
  dispatch<float>(m, n, k, a, b, MatRef<float>{nullptr, 0, 0}, c, ldc, accumulate, parallel);
}
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, const PackB<double>& b, double* c,
              int64_t ldc, bool accumulate, bool parallel) {
  dispatch<double>(m, n, k, a, b, MatRef<double>{nullptr, 0, 0}, c, ldc, accumulate, parallel);
}

}  // namespace ember::cpu
