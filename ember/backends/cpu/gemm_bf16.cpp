// bf16 GEMM in hardware: C (f32 or bf16) = A * B with bf16 A and B, products exact and sums in
// f32, as the f32 GEMM computes them on widened inputs. Two kernels for a 32 x 32 block of C over
// the same packed operands (cpu/isa.h):
//
// - CpuIsa::Amx: a tile register holds 16 rows of 64 bytes. One TDPBF16PS multiplies a
//   16 x 32 bf16 tile of A by a 32 x 16 tile of B, stored as 16 rows of 16 (even k, odd k)
//   pairs, into a 16 x 16 f32 tile of C. The block is four C tiles; per 32 values of k it loads
//   two tiles of A and two of B (2 KiB each, contiguous in the packed copies) for four products.
// - CpuIsa::Avx512Bf16 (no tiles: Cooper Lake, AMD Zen 4): VDPBF16PS adds the two products of
//   16 (even k, odd k) pairs of B with one pair of A broadcast, into 16 f32 lanes. The block is
//   run 12, 12 and 8 rows at a time, each row's 32 columns in two registers (24 for C), per
//   pair of k one row of the packed B panel (two registers) and a broadcast of A per row.
//
// Both operands are packed, zero-padded to whole blocks: A as [32-row block][32-k group][32
// rows][32 k] (by each thread for itself, gemm_own_a, or once for all), B as [32-column panel]
// [32-k group][16 k pairs][32 columns][2]. A work item is up to 128 rows x 256 columns of C in
// f32 (128 KiB, in L2): per 256 values of k (KC) it runs each 32-row block of A (16 KiB, kept in
// L1) against each of its panels of B (16 KiB from L2), loading and storing C once per KC.
// Packed B for 256 columns x KC (128 KiB) is read once per 32-row block.
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <memory>

#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/transpose16.h"
#include "ember/core/thread_pool.h"

#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
#include <immintrin.h>
#define EMBER_HAVE_BF16_KERNELS 1
#endif

namespace ember::cpu {

#if defined(EMBER_HAVE_BF16_KERNELS)

namespace {

constexpr int64_t kKC = 256;         // k per pass over a C block (8 groups of 32)
constexpr int64_t kBlockRows = 128;  // rows of C per work item (4 blocks of 32)
constexpr int64_t kBlockCols = 256;  // columns of C per work item (8 panels of 32)
constexpr int64_t kGroup = 32 * 32;  // elements of one packed 32-k group of a block or panel

int64_t round_up(int64_t x, int64_t to) { return (x + to - 1) / to * to; }

// C block (32 x 32 f32, row stride ldc floats) = (accumulate ? C : 0) + A block * B panel over
// `groups` packed 32-k groups.
__attribute__((target("amx-tile,amx-bf16"))) void tile_block(const bf16* ap, const bf16* bp,
                                                             int64_t groups, float* c, int64_t ldc,
                                                             bool accumulate) {
  const int64_t cs = ldc * int64_t(sizeof(float));
  if (accumulate) {
    _tile_loadd(0, c, cs);
    _tile_loadd(1, c + 16, cs);
    _tile_loadd(2, c + 16 * ldc, cs);
    _tile_loadd(3, c + 16 * ldc + 16, cs);
  } else {
    _tile_zero(0);
    _tile_zero(1);
    _tile_zero(2);
    _tile_zero(3);
  }
  for (int64_t g = 0; g < groups; ++g, ap += kGroup, bp += kGroup) {
    _tile_loadd(4, ap, 64);        // rows 0..15 of A, 32 k each
    _tile_loadd(5, ap + 512, 64);  // rows 16..31
    _tile_loadd(6, bp, 128);       // columns 0..15: 16 k pairs x 16 columns
    _tile_loadd(7, bp + 32, 128);  // columns 16..31
    _tile_dpbf16ps(0, 4, 6);
    _tile_dpbf16ps(1, 4, 7);
    _tile_dpbf16ps(2, 5, 6);
    _tile_dpbf16ps(3, 5, 7);
  }
  _tile_stored(0, c, cs);
  _tile_stored(1, c + 16, cs);
  _tile_stored(2, c + 16 * ldc, cs);
  _tile_stored(3, c + 16 * ldc + 16, cs);
}

// Rows [r0, r0 + R) of a C block (32 columns, row stride ldc) = (accumulate ? C : 0) + those
// rows of the A block * the B panel over `groups` packed 32-k groups, with VDPBF16PS.
template <int R>
__attribute__((target("avx512f,avx512bf16"))) void dp_rows(const bf16* ap, const bf16* bp,
                                                           int64_t groups, float* c, int64_t ldc,
                                                           bool accumulate) {
  __m512 lo[R], hi[R];
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    lo[r] = accumulate ? _mm512_loadu_ps(c + r * ldc) : _mm512_setzero_ps();
    hi[r] = accumulate ? _mm512_loadu_ps(c + r * ldc + 16) : _mm512_setzero_ps();
  }
  for (int64_t g = 0; g < groups; ++g, ap += kGroup, bp += kGroup)
    for (int kk = 0; kk < 16; ++kk) {
      const __m512bh b0 = (__m512bh)_mm512_loadu_si512(bp + kk * 64);
      const __m512bh b1 = (__m512bh)_mm512_loadu_si512(bp + kk * 64 + 32);
#pragma GCC unroll 12
      for (int r = 0; r < R; ++r) {
        int32_t pair;
        std::memcpy(&pair, ap + r * 32 + 2 * kk, sizeof pair);
        const __m512bh a = (__m512bh)_mm512_set1_epi32(pair);
        lo[r] = _mm512_dpbf16_ps(lo[r], a, b0);
        hi[r] = _mm512_dpbf16_ps(hi[r], a, b1);
      }
    }
#pragma GCC unroll 12
  for (int r = 0; r < R; ++r) {
    _mm512_storeu_ps(c + r * ldc, lo[r]);
    _mm512_storeu_ps(c + r * ldc + 16, hi[r]);
  }
}

// A 32 x 32 block of C as tile_block computes it, on AVX-512 BF16: rows 0-11, 12-23, 24-31.
void dp_block(const bf16* ap, const bf16* bp, int64_t groups, float* c, int64_t ldc,
              bool accumulate) {
  dp_rows<12>(ap, bp, groups, c, ldc, accumulate);
  dp_rows<12>(ap + 12 * 32, bp, groups, c + 12 * ldc, ldc, accumulate);
  dp_rows<8>(ap + 24 * 32, bp, groups, c + 24 * ldc, ldc, accumulate);
}

// The kernel of a 32 x 32 block of C, and whether it runs on tiles.
struct BlockKernel {
  void (*block)(const bf16*, const bf16*, int64_t, float*, int64_t, bool);
  bool tiles;
};

// While it lives, this thread's tiles are configured for the kernel (and released after, also
// when a work item throws).
struct TileScope {
  explicit TileScope(const BlockKernel& k) : tiles(k.tiles) {
    if (tiles) amx_load_tile_config();
  }
  ~TileScope() {
    if (tiles) amx_release_tiles();
  }
  TileScope(const TileScope&) = delete;
  TileScope& operator=(const TileScope&) = delete;
  bool tiles;
};

// Two rows of 32 bf16 as 32 (x0[q], x1[q]) pairs: pairs 0-15 in lo, 16-31 in hi.
__attribute__((target("avx512f,avx512bw"))) inline void interleave(__m512i x0, __m512i x1,
                                                                   __m512i& lo, __m512i& hi) {
  const __m512i first = _mm512_set_epi16(47, 15, 46, 14, 45, 13, 44, 12, 43, 11, 42, 10, 41, 9, 40,
                                         8, 39, 7, 38, 6, 37, 5, 36, 4, 35, 3, 34, 2, 33, 1, 32, 0);
  lo = _mm512_permutex2var_epi16(x0, first, x1);
  hi = _mm512_permutex2var_epi16(x0, _mm512_add_epi16(first, _mm512_set1_epi16(16)), x1);
}

// Rows [p0, p1) (p0, p1 even, p1 <= k) of 32 columns of a row-major B into a panel: each two
// rows interleaved into (even k, odd k) pairs.
__attribute__((target("avx512f,avx512bw"))) void interleave_rows(const bf16* b, int64_t ld,
                                                                 int64_t p0, int64_t p1,
                                                                 bf16* dst) {
  for (int64_t p = p0; p < p1; p += 2) {
    bf16* out = dst + (p / 32) * kGroup + (p % 32) / 2 * 64;
    __m512i lo, hi;
    interleave(_mm512_loadu_si512(b + p * ld), _mm512_loadu_si512(b + (p + 1) * ld), lo, hi);
    _mm512_storeu_si512(out, lo);
    _mm512_storeu_si512(out + 32, hi);
  }
}

// One 32 x 32 group of a transposed A (k along its rows, ld apart) into its block's
// [32 rows][32 k]: pairs of k rows interleaved into (even k, odd k) words for 32 rows of A,
// then 16 x 16 word transposes put each row's 16 words together.
__attribute__((target("avx512f,avx512bw"))) void pack_a_group_transposed(const bf16* src,
                                                                         int64_t ld, bf16* out) {
  __m512 lo[16], hi[16];  // [k pair]: the rows 0-15, 16-31
  for (int kk = 0; kk < 16; ++kk) {
    __m512i l, h;
    interleave(_mm512_loadu_si512(src + 2 * kk * ld), _mm512_loadu_si512(src + (2 * kk + 1) * ld),
               l, h);
    lo[kk] = _mm512_castsi512_ps(l);
    hi[kk] = _mm512_castsi512_ps(h);
  }
  transpose16(lo);  // now [row]: its 16 k pairs
  transpose16(hi);
  for (int r = 0; r < 16; ++r) {
    _mm512_storeu_si512(out + r * 32, _mm512_castps_si512(lo[r]));
    _mm512_storeu_si512(out + (16 + r) * 32, _mm512_castps_si512(hi[r]));
  }
}

// Packs rows [i0, i0 + 32) of A (rows past m and k past its end as zeros) into one block:
// [group][32 rows][32 k].
void pack_a_block(MatRef<bf16> a, int64_t m, int64_t k, int64_t i0, int64_t kp, bf16* dst) {
  const int64_t rows = std::min<int64_t>(32, m - i0);
  for (int64_t g = 0; g < kp / 32; ++g) {
    bf16* out = dst + g * kGroup;
    const int64_t k0 = g * 32, kn = std::min<int64_t>(32, k - k0);
    if (a.rs == 1 && a.cs != 1 && rows == 32 && kn == 32) {  // A transposed (x^T of x^T g)
      pack_a_group_transposed(a.p + i0 + k0 * a.cs, a.cs, out);
      continue;
    }
    for (int64_t r = 0; r < 32; ++r, out += 32) {
      if (r >= rows || kn <= 0) {  // (k = 0: no A at all, maybe not even a pointer)
        std::fill(out, out + 32, bf16{});
        continue;
      }
      const bf16* src = a.p + (i0 + r) * a.rs + k0 * a.cs;
      if (a.cs == 1 && kn == 32)
        std::memcpy(out, src, 64);  // a constant size: a move, not a call
      else if (a.cs == 1)
        std::memcpy(out, src, size_t(kn) * sizeof(bf16));
      else
        for (int64_t q = 0; q < kn; ++q) out[q] = src[q * a.cs];
      std::fill(out + kn, out + 32, bf16{});
    }
  }
}

// out[kk * 64 + q] (32 bits) = src[q * ld + 2 kk] (32 bits) for 16 x 16 words: 16 columns of a
// B stored transposed (k along its rows), each (even k, odd k) pair one word, into a panel's rows.
__attribute__((target("avx512f"))) void transpose_pairs16(const bf16* src, int64_t ld, bf16* out) {
  __m512 r[16];
  for (int i = 0; i < 16; ++i) r[i] = _mm512_castsi512_ps(_mm512_loadu_si512(src + i * ld));
  transpose16(r);
  for (int i = 0; i < 16; ++i) _mm512_storeu_si512(out + i * 64, _mm512_castps_si512(r[i]));
}

// Packs rows [p0, p1) (multiples of 32; p1 <= kp, past k as zeros) of columns [j0, j0 + 32) of B
// into its panel: [group][16 k pairs][32 columns][2].
void pack_b_panel(MatRef<bf16> b, int64_t n, int64_t k, int64_t j0, int64_t p0, int64_t p1,
                  bf16* panel) {
  const int64_t cols = std::min<int64_t>(32, n - j0);
  int64_t p = p0;
  if (b.rs == 1 && b.cs != 1 && cols == 32)  // B transposed: whole groups by word transposes
    for (; p + 32 <= std::min(k, p1); p += 32)
      for (int h = 0; h < 2; ++h)
        transpose_pairs16(b.p + (j0 + 16 * h) * b.cs + p, b.cs, panel + p / 32 * kGroup + 32 * h);
  if (b.cs == 1 && cols == 32) {  // row-major B: pairs of whole rows
    const int64_t pairs_end = std::max(p, std::min(k, p1) / 2 * 2);
    if (pairs_end > p) interleave_rows(b.p + j0, b.rs, p, pairs_end, panel);
    p = pairs_end;
  }
  for (; p < p1; p += 2) {
    bf16* out = panel + (p / 32) * kGroup + (p % 32) / 2 * 64;
    const bool has1 = p + 1 < k;
    if (p >= k) {  // the padding past k
      std::fill(out, out + 64, bf16{});
      continue;
    }
    for (int64_t q = 0; q < 32; ++q) {
      const bool col = q < cols;
      out[2 * q] = col ? b.p[p * b.rs + (j0 + q) * b.cs] : bf16{};
      out[2 * q + 1] = col && has1 ? b.p[(p + 1) * b.rs + (j0 + q) * b.cs] : bf16{};
    }
  }
}

// d[j] = bf16(s[j]) for j < n, rounded to nearest even, NaN kept quiet (as ember::bf16 does), by
// VCVTNEPS2BF16. It reads a subnormal as zero where ember::bf16 keeps it, but no s[j] is one:
// each is a sum of VDPBF16PS or of the tiles, which flush subnormal results to zero. One
// instruction a vector where the rounding by integer steps took eight: x^T g in bf16 (784 x 64
// x 256, 200 704 results) 0.0915 -> 0.0845 ms on a Zen 4, 2 threads, alternating runs.
__attribute__((target("avx512f,avx512vl,avx512bw,avx512bf16"))) void round_to_bf16(const float* s,
                                                                                   bf16* d,
                                                                                   int64_t n) {
  for (int64_t j = 0; j < n; j += 16) {
    const __mmask16 m = n - j >= 16 ? __mmask16(0xffff) : __mmask16((1u << (n - j)) - 1);
    const __m256i r = (__m256i)_mm512_cvtneps_pbh(_mm512_maskz_loadu_ps(m, s + j));
    _mm256_mask_storeu_epi16(d + j, m, r);
  }
}

template <class Out>
void store_out(const float* src, int64_t ld, int64_t rows, int64_t cols, Out* c, int64_t ldc) {
  for (int64_t i = 0; i < rows; ++i) {
    if constexpr (std::is_same_v<Out, float>)
      std::memcpy(c + i * ldc, src + i * ld, size_t(cols) * sizeof(float));
    else
      round_to_bf16(src + i * ld, c + i * ldc, cols);
  }
}

// Scratch kept by each thread between calls and grown as needed, one per use (kScratchA, B and
// C), up to 32 MiB each; larger ones are fresh and freed after. Fresh buffers of 128 KiB and
// more come from mmap and go back with munmap: at 256² that paging and the other core's TLB
// flushes took most of the call.
enum { kScratchA, kScratchB, kScratchC, kScratchSlots };
template <class T>
class Scratch {
 public:
  Scratch(int slot, int64_t n) {
    const size_t bytes = size_t(n) * sizeof(T);
    if (bytes > (size_t{32} << 20)) {
      own_ = std::make_unique<Aligned<std::byte>>(bytes);
      p = reinterpret_cast<T*>(own_->p);
      return;
    }
    thread_local struct Kept {
      std::unique_ptr<Aligned<std::byte>> buf;
      size_t bytes = 0;
    } kept[kScratchSlots];
    Kept& k = kept[slot];
    if (k.bytes < bytes) k.buf = std::make_unique<Aligned<std::byte>>(k.bytes = bytes);
    p = reinterpret_cast<T*>(k.buf->p);
  }
  T* p;

 private:
  std::unique_ptr<Aligned<std::byte>> own_;
};

// One work item: C[rows, cols] (rows <= kBlockRows, cols <= kBlockCols) from packed A blocks
// (ap, 32 * kp apart) and B panels (bp, likewise), summed in acc and stored into c a 32 x 32
// block at a time as its last pass over k ends, while the block is still in L1 (stored after
// the whole item, the sums came back from L2: rounding them to bf16 took a fifth of x^T g's
// 784 x 64 x 256 on a Zen 4).
template <class Out>
void run_item(const BlockKernel& kern, const bf16* ap, const bf16* bp, int64_t kp, int64_t rows,
              int64_t cols, float* acc, Out* c, int64_t ldc) {
  const int64_t rb = (rows + 31) / 32, cb = (cols + 31) / 32;
  for (int64_t p0 = 0; p0 < kp; p0 += kKC) {
    const int64_t groups = std::min(kKC, kp - p0) / 32;
    const bool last = p0 + kKC >= kp;
    for (int64_t i = 0; i < rb; ++i)
      for (int64_t j = 0; j < cb; ++j) {
        float* block = acc + i * 32 * kBlockCols + j * 32;
        kern.block(ap + i * 32 * kp + p0 * 32, bp + j * 32 * kp + p0 * 32, groups, block,
                   kBlockCols, p0 > 0);
        if (last)
          store_out(block, kBlockCols, std::min<int64_t>(32, rows - i * 32),
                    std::min<int64_t>(32, cols - j * 32), c + i * 32 * ldc + j * 32, ldc);
      }
  }
}

// One round: each thread packs all of A for itself and its share of B's columns as it uses
// them, so that neither crosses to the other core's cache and no round of the pool goes to
// packing alone. A packed once per thread costs threads / n of the products.
template <class Out>
void gemm_own_a(const BlockKernel& kern, int64_t m, int64_t n, int64_t k, MatRef<bf16> a,
                MatRef<bf16> b, Out* c, int64_t ldc, int64_t kp) {
  const int64_t mblocks = (m + 31) / 32, npanels = (n + 31) / 32;
  const int64_t parts = std::min<int64_t>(num_threads(), npanels);
  parallel_for(parts, 1, [&](int64_t t0, int64_t t1) {
    Scratch<bf16> ap(kScratchA, mblocks * 32 * kp), bp(kScratchB, kBlockCols * kp);
    Scratch<float> acc(kScratchC, kBlockRows * kBlockCols);
    for (int64_t i = 0; i < mblocks; ++i) pack_a_block(a, m, k, i * 32, kp, ap.p + i * 32 * kp);
    const TileScope tiles(kern);
    for (int64_t t = t0; t < t1; ++t) {
      const int64_t j_end = (t + 1) * npanels / parts;
      for (int64_t j0 = t * npanels / parts; j0 < j_end; j0 += kBlockCols / 32) {
        const int64_t panels = std::min(kBlockCols / 32, j_end - j0);
        for (int64_t j = 0; j < panels; ++j)
          pack_b_panel(b, n, k, (j0 + j) * 32, 0, kp, bp.p + j * 32 * kp);
        for (int64_t r0 = 0; r0 < m; r0 += kBlockRows)
          run_item(kern, ap.p + r0 * kp, bp.p, kp, std::min(kBlockRows, m - r0),
                   std::min(panels * 32, n - j0 * 32), acc.p, c + r0 * ldc + j0 * 32, ldc);
      }
    }
  });
}

template <class Out>
void gemm_blocks(const BlockKernel& kern, int64_t m, int64_t n, int64_t k, MatRef<bf16> a,
                 MatRef<bf16> b, Out* c, int64_t ldc) {
  const int64_t kp = round_up(std::max<int64_t>(k, 1), 32);
  // Each thread packing A for itself (gemm_own_a) ran 512², 1024² and 2048² on 2 threads in 0.21,
  // 1.47 and 11.1 ms, against 0.26, 1.82 and 12.6 packing both once for all: taken for few rows
  // (the skinny products of training), and wherever every thread gets two panels of B and its
  // copy of A is at most 16 MiB.
  const int64_t mblocks = (m + 31) / 32, npanels = (n + 31) / 32;
  if (m <= kBlockRows ||
      (npanels >= 2 * num_threads() && mblocks * 32 * kp * int64_t(sizeof(bf16)) <= (16 << 20)))
    return gemm_own_a(kern, m, n, k, a, b, c, ldc, kp);
  // Otherwise both operands packed once, shared by the threads, then work items of up to
  // kBlockRows x kBlockCols, smaller (columns first, down to one block) until every thread has
  // about four.
  Scratch<bf16> ap(kScratchA, mblocks * 32 * kp), bp(kScratchB, npanels * 32 * kp);
  // B by bands of KC rows across all its panels: a row-major B's rows are often a page each,
  // and a panel packed alone down all of k touched a page per row pair (a TLB miss each).
  const int64_t bands = (kp + kKC - 1) / kKC;
  parallel_for(mblocks + bands, 1, [&](int64_t t0, int64_t t1) {
    for (int64_t t = t0; t < t1; ++t) {
      if (t < mblocks) {
        pack_a_block(a, m, k, t * 32, kp, ap.p + t * 32 * kp);
        continue;
      }
      const int64_t p0 = (t - mblocks) * kKC, p1 = std::min(kp, p0 + kKC);
      for (int64_t j = 0; j < npanels; ++j)
        pack_b_panel(b, n, k, j * 32, p0, p1, bp.p + j * 32 * kp);
    }
  });
  int64_t block_rows = kBlockRows, block_cols = kBlockCols;
  auto items = [&] {
    return (m + block_rows - 1) / block_rows * ((n + block_cols - 1) / block_cols);
  };
  while (items() < 4 * num_threads() && (block_cols > 32 || block_rows > 32))
    (block_cols > 32 ? block_cols : block_rows) /= 2;
  const int64_t col_items = (n + block_cols - 1) / block_cols;
  parallel_for(items(), 1, [&](int64_t w0, int64_t w1) {
    const TileScope tiles(kern);
    Scratch<float> acc(kScratchC, kBlockRows * kBlockCols);
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t r0 = w / col_items * block_rows, c0 = w % col_items * block_cols;
      run_item(kern, ap.p + r0 * kp, bp.p + c0 * kp, kp, std::min(block_rows, m - r0),
               std::min(block_cols, n - c0), acc.p, c + r0 * ldc + c0, ldc);
    }
  });
}

template <class Out>
bool gemm_bf16_any(int64_t m, int64_t n, int64_t k, MatRef<bf16> a, MatRef<bf16> b, Out* c,
                   int64_t ldc) {
  const CpuIsa isa = cpu_isa();
  if (isa < CpuIsa::Avx512Bf16) return false;
  const BlockKernel kern =
      isa >= CpuIsa::Amx ? BlockKernel{tile_block, true} : BlockKernel{dp_block, false};
  if (m > 0 && n > 0) gemm_blocks(kern, m, n, k, a, b, c, ldc);
  return true;
}

}  // namespace

bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatRef<bf16> a, MatRef<bf16> b, float* c,
               int64_t ldc) {
  return gemm_bf16_any(m, n, k, a, b, c, ldc);
}
bool gemm_bf16(int64_t m, int64_t n, int64_t k, MatRef<bf16> a, MatRef<bf16> b, bf16* c,
               int64_t ldc) {
  return gemm_bf16_any(m, n, k, a, b, c, ldc);
}

#else

bool gemm_bf16(int64_t, int64_t, int64_t, MatRef<bf16>, MatRef<bf16>, float*, int64_t) {
  return false;
}
bool gemm_bf16(int64_t, int64_t, int64_t, MatRef<bf16>, MatRef<bf16>, bf16*, int64_t) {
  return false;
}

#endif

}  // namespace ember::cpu
