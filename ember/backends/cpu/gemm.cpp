// Blocked GEMM in the style of BLIS/GotoBLAS: B is packed into KC x NR panels shared by all
// threads, each thread packs its own MC x KC block of A into MR x KC panels, and an MR x NR
// micro-kernel keeps the C tile in registers across the whole KC loop. The micro-kernel and
// its blocking come in variants per instruction set, chosen at run time (cpu/isa.h).
#include "ember/backends/cpu/gemm.h"

#include <algorithm>
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
// 12, written once as a macro and expanded inside each variant's function below, so that every
// operation in it is compiled for that variant's instruction set (a helper function would be
// compiled for the file's level first: its vectors split into pieces, or refused inlining).
// V: the vector type, W: its lanes, BCAST(p): every lane = *p, from memory (a load-port op,
// where a register broadcast would take a shuffle slot from the FMA pipes). The accumulators
// are named variables, not an array: GCC kept an array's rows in memory and stored them back
// on every step of the loop.
#define EMBER_GEMM_ROWS(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)
#define EMBER_GEMM_DECL(i) V c##i##0 {}, c##i##1 {};
#define EMBER_GEMM_ROWS_WITH(X, B) \
  X(0, B) X(1, B) X(2, B) X(3, B) X(4, B) X(5, B) X(6, B) X(7, B) X(8, B) X(9, B) X(10, B) X(11, B)
#define EMBER_GEMM_STEP(i, BCAST) \
  if constexpr (i < MR) {         \
    a = BCAST(ap + i);            \
    c##i##0 += a * b0;            \
    c##i##1 += a * b1;            \
  }
#define EMBER_GEMM_OUT(i)                      \
  if constexpr (i < MR) {                      \
    T* row = c + i * ldc;                      \
    if (accumulate) {                          \
      V lo, hi;                                \
      std::memcpy(&lo, row, sizeof(V));        \
      std::memcpy(&hi, row + W, sizeof(V));    \
      c##i##0 += lo;                           \
      c##i##1 += hi;                           \
    }                                          \
    std::memcpy(row, &c##i##0, sizeof(V));     \
    std::memcpy(row + W, &c##i##1, sizeof(V)); \
  }
// The C tile is fetched (for writing) while the loop runs: its rows are ldc apart and rarely
// still cached, and waiting for them after the loop cost several percent of a large GEMM.
#define EMBER_GEMM_PREFETCH(i)                         \
  if constexpr (i < MR) {                              \
    __builtin_prefetch(c + i * ldc, 1, 3);             \
    __builtin_prefetch(c + i * ldc + W - 1, 1, 3);     \
    __builtin_prefetch(c + i * ldc + 2 * W - 1, 1, 3); \
  }
#define EMBER_GEMM_MICRO(T_, V_, MR_, BCAST_)                  \
  {                                                            \
    using T = T_;                                              \
    using V = V_;                                              \
    constexpr int W = int(sizeof(V) / sizeof(T));              \
    constexpr int MR = MR_;                                    \
    EMBER_GEMM_ROWS(EMBER_GEMM_PREFETCH)                       \
    EMBER_GEMM_ROWS(EMBER_GEMM_DECL)                           \
    _Pragma("GCC unroll 4") for (int64_t p = 0; p < kc; ++p) { \
      V b0, b1, a;                                             \
      std::memcpy(&b0, bp, sizeof(V));                         \
      std::memcpy(&b1, bp + W, sizeof(V));                     \
      EMBER_GEMM_ROWS_WITH(EMBER_GEMM_STEP, BCAST_)            \
      ap += MR;                                                \
      bp += 2 * W;                                             \
    }                                                          \
    EMBER_GEMM_ROWS(EMBER_GEMM_OUT)                            \
  }

// The variants (cpu/isa.h): 32-byte vectors in the instructions the library is compiled for;
// AVX2 + FMA; AVX-512 with 64-byte vectors and 12 rows (24 of its 32 registers hold C).
typedef float vf32_portable __attribute__((vector_size(32)));
typedef double vf64_portable __attribute__((vector_size(32)));
#define EMBER_BCAST_GENERIC(p) (*(p)-V{})  // x - 0 is x for every x (x + 0 is not: -0.0)
void micro_portable_f32(int64_t kc, const float* __restrict ap, const float* __restrict bp,
                        float* c, int64_t ldc, bool accumulate) {
#if defined(__AVX__)
#define EMBER_BCAST_256PS(p) _mm256_broadcast_ss(p)
  EMBER_GEMM_MICRO(float, __m256, 6, EMBER_BCAST_256PS)
#else
  EMBER_GEMM_MICRO(float, vf32_portable, 6, EMBER_BCAST_GENERIC)
#endif
}
void micro_portable_f64(int64_t kc, const double* __restrict ap, const double* __restrict bp,
                        double* c, int64_t ldc, bool accumulate) {
#if defined(__AVX__)
#define EMBER_BCAST_256PD(p) _mm256_broadcast_sd(p)
  EMBER_GEMM_MICRO(double, __m256d, 6, EMBER_BCAST_256PD)
#else
  EMBER_GEMM_MICRO(double, vf64_portable, 6, EMBER_BCAST_GENERIC)
#endif
}
#if defined(__x86_64__)
#define EMBER_TARGET_AVX2 __attribute__((target("avx2,fma")))
#define EMBER_TARGET_AVX512 __attribute__((target("avx512f,avx512vl,avx512bw,avx512dq,avx2,fma")))
EMBER_TARGET_AVX2 void micro_avx2_f32(int64_t kc, const float* __restrict ap,
                                      const float* __restrict bp, float* c, int64_t ldc,
                                      bool accumulate){
    EMBER_GEMM_MICRO(float, __m256, 6, _mm256_broadcast_ss)} EMBER_TARGET_AVX2
    void micro_avx2_f64(int64_t kc, const double* __restrict ap, const double* __restrict bp,
                        double* c, int64_t ldc,
                        bool accumulate){EMBER_GEMM_MICRO(double, __m256d, 6, _mm256_broadcast_sd)}
#define EMBER_BCAST_512PS(p) _mm512_set1_ps(*(p))
#define EMBER_BCAST_512PD(p) _mm512_set1_pd(*(p))
EMBER_TARGET_AVX512
    void micro_avx512_f32(int64_t kc, const float* __restrict ap, const float* __restrict bp,
                          float* c, int64_t ldc, bool accumulate){
        EMBER_GEMM_MICRO(float, __m512, 12, EMBER_BCAST_512PS)} EMBER_TARGET_AVX512
    void micro_avx512_f64(int64_t kc, const double* __restrict ap, const double* __restrict bp,
                          double* c, int64_t ldc, bool accumulate) {
  EMBER_GEMM_MICRO(double, __m512d, 12, EMBER_BCAST_512PD)
}
#endif

// A variant: its blocking and micro-kernel.
template <class T, class Bk, void (*Micro)(int64_t, const T*, const T*, T*, int64_t, bool)>
struct Variant : Bk {
  static constexpr auto micro = Micro;
};
template <class T>
struct Variants;
template <>
struct Variants<float> {
  using Portable = Variant<float, Blocking<float, 32, 6, 320, 120>, micro_portable_f32>;
#if defined(__x86_64__)
  using Avx2 = Variant<float, Blocking<float, 32, 6, 320, 120>, micro_avx2_f32>;
  using Avx512 = Variant<float, Blocking<float, 64, 12, 512, 120>, micro_avx512_f32>;
#endif
};
template <>
struct Variants<double> {
  using Portable = Variant<double, Blocking<double, 32, 6, 320, 120>, micro_portable_f64>;
#if defined(__x86_64__)
  using Avx2 = Variant<double, Blocking<double, 32, 6, 320, 120>, micro_avx2_f64>;
  using Avx512 = Variant<double, Blocking<double, 64, 12, 192, 240>, micro_avx512_f64>;
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
      for (int64_t i = 0; i < rows; ++i) {
        const T* src = a.p + (ic + i0 + i) * a.rs + pc;
        for (int64_t p = 0; p < kc; ++p) dst[p * MR + i] = src[p];
      }
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

// Packs B[pc.., j..] (kc x cols<=width) into one panel `width` wide, zero-padded.
template <class T>
void pack_b_panel(MatRef<T> b, int64_t pc, int64_t j, int64_t kc, int64_t cols, int64_t width,
                  T* dst) {
  if (b.rs == 1 && b.cs != 1) {  // column-major B (a transposed weight): down its columns
    for (int64_t q = 0; q < cols; ++q) {
      const T* src = b.p + pc + (j + q) * b.cs;
      for (int64_t p = 0; p < kc; ++p) dst[p * width + q] = src[p];
    }
    for (int64_t p = 0; p < kc; ++p)
      for (int64_t q = cols; q < width; ++q) dst[p * width + q] = T(0);
    return;
  }
  for (int64_t p = 0; p < kc; ++p) {
    const T* src = b.p + (pc + p) * b.rs + j * b.cs;
    if (b.cs == 1 && cols == width) {
      copy_panel_row(dst, src, width);
    } else {
      for (int64_t q = 0; q < cols; ++q) dst[q] = src[q * b.cs];
      for (int64_t q = cols; q < width; ++q) dst[q] = T(0);
    }
    dst += width;
  }
}

template <class T>
struct Aligned {
  explicit Aligned(size_t n)
      : p(static_cast<T*>(::operator new (n * sizeof(T), std::align_val_t{64}))) {}
  ~Aligned() { ::operator delete (p, std::align_val_t{64}); }
  Aligned(const Aligned&) = delete;
  Aligned& operator=(const Aligned&) = delete;
  T* p;
};

// pack_b(pc, j, kc, cols, NR, dst) packs B[pc.., j..] (kc x cols) into one NR-column panel.
template <class Bk, class T, class PackB>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b, T* c, int64_t ldc,
          bool add_to_c, bool parallel) {
  constexpr int MR = Bk::kMR, NR = Bk::kNR;
  if (m == 0 || n == 0) return;
  if (k == 0) {
    if (!add_to_c)
      for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, T(0));
    return;
  }
  auto for_range = [parallel](int64_t count, int64_t grain, auto&& f) {
    if (parallel)
      parallel_for(count, grain, f);
    else if (count > 0)
      f(int64_t{0}, count);
  };
  const int64_t threads = parallel ? num_threads() : 1;
  const int64_t nc_max = std::min<int64_t>(Bk::kNC, (n + NR - 1) / NR * NR);
  const int64_t kc_max = std::min<int64_t>(Bk::kKC, k);
  // With few blocks of rows, each work item packs the B panels it uses right where it uses
  // them (into a panel that stays in L1) instead of all threads packing a shared buffer first:
  // packing a panel up to 4 times costs less than the extra round of the thread pool (a 256^3
  // product on 2 threads: 0.134 -> 0.110 ms).
  // A is then packed once for all of them, by all threads, before the work items start:
  // packed per item, as the larger products do, the same rows were packed by every item of
  // their block (16 times over at 64 x 784 x 256, a third of its time).
  const int64_t mblocks = (m + Bk::kMC - 1) / Bk::kMC;
  const bool lazy_b = mblocks <= 4;
  static_assert(Bk::kMC % MR == 0);
  const int64_t mpanels = (m + MR - 1) / MR;
  Aligned<T> bpack(lazy_b ? 0 : static_cast<size_t>(nc_max * kc_max));
  Aligned<T> ashared(lazy_b ? static_cast<size_t>(mpanels * MR * kc_max) : 0);
  for (int64_t jc = 0; jc < n; jc += Bk::kNC) {
    int64_t nc = std::min<int64_t>(Bk::kNC, n - jc);
    int64_t npanels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < k; pc += Bk::kKC) {
      int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
      bool accumulate = add_to_c || pc > 0;
      if (!lazy_b)
        for_range(npanels, 8, [&](int64_t b0, int64_t b1) {
          for (int64_t jp = b0; jp < b1; ++jp)
            pack_b(pc, jc + jp * NR, kc, std::min<int64_t>(NR, nc - jp * NR), int64_t(NR),
                   bpack.p + jp * NR * kc);
        });
      else
        for_range(mpanels, 4, [&](int64_t r0, int64_t r1) {
          for (int64_t r = r0; r < r1; ++r)
            pack_a<T, MR>(a, r * MR, pc, std::min<int64_t>(MR, m - r * MR), kc,
                          ashared.p + r * MR * kc);
        });
      // Work items: (MC block of rows) x (group of B panels), at least 8 per thread where
      // there are panels enough, so that row blocks that do not divide among the threads
      // (3 blocks of a 256-row product on 2) still share the work evenly.
      int64_t pgroups = std::clamp<int64_t>((8 * threads + mblocks - 1) / mblocks, 1, npanels);
      int64_t per_group = (npanels + pgroups - 1) / pgroups;
      for_range(mblocks * pgroups, 1, [&](int64_t w0, int64_t w1) {
        Aligned<T> apack(lazy_b ? 0 : static_cast<size_t>(Bk::kMC * kc));
        Aligned<T> bpanel(lazy_b ? static_cast<size_t>(NR * kc) : 0);
        alignas(64) T tile[MR * NR] = {};
        int64_t packed_block = -1;
        for (int64_t w = w0; w < w1; ++w) {
          int64_t mb = w / pgroups, g = w % pgroups;
          int64_t ic = mb * Bk::kMC, mc = std::min<int64_t>(Bk::kMC, m - ic);
          const T* ablock = lazy_b ? ashared.p + ic * kc : apack.p;
          if (!lazy_b && packed_block != mb) {
            pack_a<T, MR>(a, ic, pc, mc, kc, apack.p);
            packed_block = mb;
          }
          int64_t p_end = std::min(npanels, (g + 1) * per_group);
          for (int64_t jp = g * per_group; jp < p_end; ++jp) {
            int64_t j = jc + jp * NR, cols = std::min<int64_t>(NR, n - j);
            const T* bp = bpack.p + jp * NR * kc;
            if (lazy_b) {
              pack_b(pc, j, kc, cols, int64_t(NR), bpanel.p);
              bp = bpanel.p;
            }
            for (int64_t i0 = 0; i0 < mc; i0 += MR) {
              int64_t rows = std::min<int64_t>(MR, mc - i0);
              T* cp = c + (ic + i0) * ldc + j;
              const T* ap = ablock + i0 * kc;
              if (rows == MR && cols == NR) {
                Bk::micro(kc, ap, bp, cp, ldc, accumulate);
              } else {  // edge tile: compute into a buffer, copy the valid part
                for (int64_t i = 0; i < rows && accumulate; ++i)
                  std::memcpy(tile + i * NR, cp + i * ldc, cols * sizeof(T));
                Bk::micro(kc, ap, bp, tile, NR, accumulate);
                for (int64_t i = 0; i < rows; ++i)
                  std::memcpy(cp + i * ldc, tile + i * NR, cols * sizeof(T));
              }
            }
          }
        }
      });
    }
  }
}

// The variant for the CPU's instruction set (cpu_isa()).
template <class T, class PackB>
void dispatch(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b, T* c, int64_t ldc,
              bool accumulate, bool parallel) {
  using V = Variants<T>;
#if defined(__x86_64__)
  switch (cpu_isa()) {
    case CpuIsa::Avx512:
      return gemm<typename V::Avx512>(m, n, k, a, pack_b, c, ldc, accumulate, parallel);
    case CpuIsa::Avx2:
      return gemm<typename V::Avx2>(m, n, k, a, pack_b, c, ldc, accumulate, parallel);
    default:
      break;
  }
#endif
  gemm<typename V::Portable>(m, n, k, a, pack_b, c, ldc, accumulate, parallel);
}

template <class T>
void gemm_matrix(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
                 bool accumulate, bool parallel) {
  auto pack = [b](int64_t pc, int64_t j, int64_t kc, int64_t cols, int64_t width, T* dst) {
    pack_b_panel(b, pc, j, kc, cols, width, dst);
  };
  dispatch<T>(m, n, k, a, pack, c, ldc, accumulate, parallel);
}

}  // namespace

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
  dispatch<float>(m, n, k, a, b, c, ldc, accumulate, parallel);
}
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, const PackB<double>& b, double* c,
              int64_t ldc, bool accumulate, bool parallel) {
  dispatch<double>(m, n, k, a, b, c, ldc, accumulate, parallel);
}

}  // namespace ember::cpu
