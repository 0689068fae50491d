// Blocked GEMM in the style of BLIS/GotoBLAS: B is packed into KC x NR panels shared by all
// threads, each thread packs its own MC x KC block of A into MR x KC panels, and an MR x NR
// micro-kernel keeps the C tile in registers across the whole KC loop.
#include "ember/backends/cpu/gemm.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <new>
#include <type_traits>

#if defined(__AVX__)
#include <immintrin.h>
#endif

#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {

// One vector register's worth of T (32 bytes: 8 floats or 4 doubles).
typedef float vf __attribute__((vector_size(32)));
typedef double vd __attribute__((vector_size(32)));
template <class T>
struct Vec;
template <>
struct Vec<float> {
  using type = vf;
};
template <>
struct Vec<double> {
  using type = vd;
};

template <class T>
struct Blocking {
  using V = typename Vec<T>::type;
  static constexpr int kW = sizeof(V) / sizeof(T);  // lanes
  static constexpr int kMR = 6;
  static constexpr int kNR = 2 * kW;
  static constexpr int64_t kKC = 320;
  static constexpr int64_t kMC = 120;
  static constexpr int64_t kNC = 2048;
};

template <class V, class T>
inline V load(const T* p) {
  V v;
  std::memcpy(&v, p, sizeof(V));
  return v;
}
// Broadcast straight from memory: a load-port op, where a register broadcast would take a
// shuffle slot from the FMA pipes.
template <class V, class T>
inline V broadcast(const T* p) {
#if defined(__AVX__)
  if constexpr (std::is_same_v<T, float>)
    return (V)_mm256_broadcast_ss(p);
  else
    return (V)_mm256_broadcast_sd(p);
#else
  return V{} + *p;
#endif
}
template <class V, class T>
inline void store(T* p, V v) {
  std::memcpy(p, &v, sizeof(V));
}

// C tile (kMR x kNR) = (accumulate ? C : 0) + Ap * Bp over kc. The 12 accumulators are
// named variables, not an array: GCC kept an array's rows in memory and stored them back on
// every step of the loop.
template <class T>
void micro_kernel(int64_t kc, const T* __restrict ap, const T* __restrict bp, T* c, int64_t ldc,
                  bool accumulate) {
  using Bk = Blocking<T>;
  using V = typename Bk::V;
  constexpr int W = Bk::kW;
  static_assert(Bk::kMR == 6, "the micro-kernel is written out for 6 rows");
  V c00{}, c01{}, c10{}, c11{}, c20{}, c21{}, c30{}, c31{}, c40{}, c41{}, c50{}, c51{};
#pragma GCC unroll 4
  for (int64_t p = 0; p < kc; ++p) {
    V b0 = load<V>(bp), b1 = load<V>(bp + W), a;
    a = broadcast<V>(ap + 0);
    c00 += a * b0;
    c01 += a * b1;
    a = broadcast<V>(ap + 1);
    c10 += a * b0;
    c11 += a * b1;
    a = broadcast<V>(ap + 2);
    c20 += a * b0;
    c21 += a * b1;
    a = broadcast<V>(ap + 3);
    c30 += a * b0;
    c31 += a * b1;
    a = broadcast<V>(ap + 4);
    c40 += a * b0;
    c41 += a * b1;
    a = broadcast<V>(ap + 5);
    c50 += a * b0;
    c51 += a * b1;
    ap += 6;
    bp += 2 * W;
  }
  auto out = [&](int i, V lo, V hi) {
    T* row = c + i * ldc;
    if (accumulate) {
      lo += load<V>(row);
      hi += load<V>(row + W);
    }
    store(row, lo);
    store(row + W, hi);
  };
  out(0, c00, c01);
  out(1, c10, c11);
  out(2, c20, c21);
  out(3, c30, c31);
  out(4, c40, c41);
  out(5, c50, c51);
}

// Packs A[ic.., pc..] (mc x kc) into MR-row panels, k-major within a panel, zero-padded.
template <class T>
void pack_a(MatRef<T> a, int64_t ic, int64_t pc, int64_t mc, int64_t kc, T* dst) {
  constexpr int MR = Blocking<T>::kMR;
  for (int64_t i0 = 0; i0 < mc; i0 += MR) {
    int64_t rows = std::min<int64_t>(MR, mc - i0);
    for (int64_t p = 0; p < kc; ++p) {
      const T* src = a.p + (ic + i0) * a.rs + (pc + p) * a.cs;
      for (int64_t i = 0; i < rows; ++i) dst[i] = src[i * a.rs];
      for (int64_t i = rows; i < MR; ++i) dst[i] = T(0);
      dst += MR;
    }
  }
}

// Packs B[pc.., jc + j0..] (kc x cols<=NR) into one NR-column panel, zero-padded.
template <class T>
void pack_b_panel(MatRef<T> b, int64_t pc, int64_t j, int64_t kc, int64_t cols, T* dst) {
  constexpr int NR = Blocking<T>::kNR;
  for (int64_t p = 0; p < kc; ++p) {
    const T* src = b.p + (pc + p) * b.rs + j * b.cs;
    if (b.cs == 1 && cols == NR) {
      std::memcpy(dst, src, NR * sizeof(T));
    } else {
      for (int64_t q = 0; q < cols; ++q) dst[q] = src[q * b.cs];
      for (int64_t q = cols; q < NR; ++q) dst[q] = T(0);
    }
    dst += NR;
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

// pack_b(pc, j, kc, cols, dst) packs B[pc.., j..] (kc x cols) into one NR-column panel.
template <class T, class PackB>
void gemm(int64_t m, int64_t n, int64_t k, MatRef<T> a, const PackB& pack_b, T* c, int64_t ldc,
          bool add_to_c, bool parallel) {
  using Bk = Blocking<T>;
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
  // With a single block of rows, each B panel is used by one work item only: it is packed
  // right where it is used (into a panel that stays in L1) instead of into a shared buffer.
  const int64_t mblocks = (m + Bk::kMC - 1) / Bk::kMC;
  const bool lazy_b = mblocks == 1;
  Aligned<T> bpack(lazy_b ? 0 : static_cast<size_t>(nc_max * kc_max));
  for (int64_t jc = 0; jc < n; jc += Bk::kNC) {
    int64_t nc = std::min<int64_t>(Bk::kNC, n - jc);
    int64_t npanels = (nc + NR - 1) / NR;
    for (int64_t pc = 0; pc < k; pc += Bk::kKC) {
      int64_t kc = std::min<int64_t>(Bk::kKC, k - pc);
      bool accumulate = add_to_c || pc > 0;
      if (!lazy_b)
        for_range(npanels, 8, [&](int64_t b0, int64_t b1) {
          for (int64_t jp = b0; jp < b1; ++jp)
            pack_b(pc, jc + jp * NR, kc, std::min<int64_t>(NR, nc - jp * NR),
                   bpack.p + jp * NR * kc);
        });
      // Work items: (MC block of rows) x (group of B panels), so 2+ threads share even
      // a single row block.
      int64_t pgroups = std::max<int64_t>(
          1, std::min<int64_t>(npanels, threads * 2 / std::max<int64_t>(mblocks, 1)));
      int64_t per_group = (npanels + pgroups - 1) / pgroups;
      for_range(mblocks * pgroups, 1, [&](int64_t w0, int64_t w1) {
        Aligned<T> apack(static_cast<size_t>(Bk::kMC * kc));
        Aligned<T> bpanel(lazy_b ? static_cast<size_t>(NR * kc) : 0);
        T tile[MR * NR] = {};
        int64_t packed_block = -1;
        for (int64_t w = w0; w < w1; ++w) {
          int64_t mb = w / pgroups, g = w % pgroups;
          int64_t ic = mb * Bk::kMC, mc = std::min<int64_t>(Bk::kMC, m - ic);
          if (packed_block != mb) {
            pack_a(a, ic, pc, mc, kc, apack.p);
            packed_block = mb;
          }
          int64_t p_end = std::min(npanels, (g + 1) * per_group);
          for (int64_t jp = g * per_group; jp < p_end; ++jp) {
            int64_t j = jc + jp * NR, cols = std::min<int64_t>(NR, n - j);
            const T* bp = bpack.p + jp * NR * kc;
            if (lazy_b) {
              pack_b(pc, j, kc, cols, bpanel.p);
              bp = bpanel.p;
            }
            for (int64_t i0 = 0; i0 < mc; i0 += MR) {
              int64_t rows = std::min<int64_t>(MR, mc - i0);
              T* cp = c + (ic + i0) * ldc + j;
              const T* ap = apack.p + i0 * kc;
              if (rows == MR && cols == NR) {
                micro_kernel<T>(kc, ap, bp, cp, ldc, accumulate);
              } else {  // edge tile: compute into a buffer, copy the valid part
                for (int64_t i = 0; i < rows && accumulate; ++i)
                  std::memcpy(tile + i * NR, cp + i * ldc, cols * sizeof(T));
                micro_kernel<T>(kc, ap, bp, tile, NR, accumulate);
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

template <class T>
void gemm_matrix(int64_t m, int64_t n, int64_t k, MatRef<T> a, MatRef<T> b, T* c, int64_t ldc,
                 bool accumulate, bool parallel) {
  auto pack = [b](int64_t pc, int64_t j, int64_t kc, int64_t cols, T* dst) {
    pack_b_panel(b, pc, j, kc, cols, dst);
  };
  gemm<T>(m, n, k, a, pack, c, ldc, accumulate, parallel);
}

}  // namespace

static_assert(kGemmPanelWidth<float> == Blocking<float>::kNR);
static_assert(kGemmPanelWidth<double> == Blocking<double>::kNR);

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
  gemm<float>(m, n, k, a, b, c, ldc, accumulate, parallel);
}
void gemm_f64(int64_t m, int64_t n, int64_t k, MatRef<double> a, const PackB<double>& b, double* c,
              int64_t ldc, bool accumulate, bool parallel) {
  gemm<double>(m, n, k, a, b, c, ldc, accumulate, parallel);
}

}  // namespace ember::cpu
