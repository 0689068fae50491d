// 8-bit integer GEMM on AMX tiles or AVX-512 VNNI: C (i32) = A B for A and B of 8-bit integers
// (each i8 or u8), every product exact and the sums in i32, wrapping where they pass it as the
// product of the operands widened to i32 does (int_matmul, ONNX's MatMulInteger). AMX (below)
// where cpu_has_amx_int8(), else VNNI:
//
// VPDPBUSD adds to each 32-bit lane the four products of an unsigned byte of its first operand
// with a signed byte of its second. A takes the unsigned role and B the signed one, or (swapped)
// the other way round: u8 x i8 and i8 x u8 need nothing moved. Otherwise an operand in the
// wrong role is moved, i8 to u8 by adding 128 and u8 to i8 by subtracting 128 (its top bit
// flipped), and the sums are corrected by the other operand's row or column sums:
//
//   sum_k a b = sum_k (a' + da)(b' + db)
//             = sum_k a' b' + db * sum_k a'[i, k] + da * sum_k b'[k, j] + k * da * db
//
// with da, db = -128 (an i8 moved), 128 (a u8 moved) or 0; of two ways to move one operand,
// the one whose sums are over the smaller operand. The corrections start each C tile's
// registers (the row term plus the column term), so the kernel's loop is VPDPBUSD alone; the
// arithmetic is modulo 2^32 throughout, so the result is exact wherever the true sum fits i32.
//
// Both operands are packed, zero-padded (k to a multiple of 4): A in panels of 12 rows as [k/4]
// [12 rows][4 bytes], a row's four bytes of a step one 32-bit broadcast; B in panels of 32
// columns as [k/4][32 columns][4 bytes], two 64-byte registers a step. The micro-kernel keeps 12
// x 32 of C in 24 registers (kernels of 8 and 4 rows take a product's last rows). Per block of
// kKC of k, all of A is packed (with the first block of columns), and B per block of columns
// of about 512 KiB (half an L2: kNC columns at kKC, more where k is short), shared by the
// threads; the work items are a 12-row panel of A (12 KiB at kKC, in L1) against a run of B's
// panels.
#include <algorithm>
#include <cstring>
#include <vector>

#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/vnni.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

#if defined(EMBER_HAVE_VNNI_KERNELS)

namespace {

constexpr int64_t kMR = 12;    // rows of a C tile
constexpr int64_t kNR = 32;    // columns of a C tile (two registers of 16 i32)
constexpr int64_t kKC = 1024;  // k per packed block (a multiple of 4)
constexpr int64_t kNC = 512;   // columns per packed block of B

// Byte (i, j) of an operand, its top bit flipped where `flip` is 0x80.
struct Bytes {
  const uint8_t* p;
  int64_t rs, cs;
  uint8_t flip;
  uint8_t at(int64_t i, int64_t j) const { return p[i * rs + j * cs] ^ flip; }
};

// Four rows of A (rows rs apart), 16 bytes each, as four steps of k of those rows: a 4 x 4
// transpose of 32-bit words, each step's 16 bytes kMR * 4 apart in dst (SSE2: every x86-64).
void words_of_rows(const uint8_t* src, int64_t rs, __m128i flip, uint8_t* dst) {
  auto row = [&](int64_t t) {
    return _mm_xor_si128(_mm_loadu_si128(reinterpret_cast<const __m128i*>(src + t * rs)), flip);
  };
  const __m128i x0 = row(0), x1 = row(1), x2 = row(2), x3 = row(3);
  const __m128i lo01 = _mm_unpacklo_epi32(x0, x1), lo23 = _mm_unpacklo_epi32(x2, x3);
  const __m128i hi01 = _mm_unpackhi_epi32(x0, x1), hi23 = _mm_unpackhi_epi32(x2, x3);
  auto out = [&](int64_t q, __m128i v) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(dst + q * kMR * 4), v);
  };
  out(0, _mm_unpacklo_epi64(lo01, lo23));
  out(1, _mm_unpackhi_epi64(lo01, lo23));
  out(2, _mm_unpacklo_epi64(hi01, hi23));
  out(3, _mm_unpackhi_epi64(hi01, hi23));
}

// Rows [i0, i0 + rows) of A, k in [pc, pc + kc), into a panel [kc/4][kMR][4], zero-padded. A
// row-major A four rows by four steps at a time (words_of_rows), a column-major one four bytes
// of a row at a time from four columns, the rest a byte at a time.
void pack_a_panel(const Bytes& a, int64_t i0, int64_t rows, int64_t pc, int64_t kc, uint8_t* dst) {
  const int64_t kq = (kc + 3) / 4, whole = kc / 4;
  const uint8_t* base = a.p + i0 * a.rs + pc * a.cs;
  if (rows < kMR || kc % 4 != 0 || (a.cs != 1 && a.rs != 1))
    std::memset(dst, 0, static_cast<size_t>(kq * kMR * 4));
  int64_t r0 = 0, q0 = 0;  // rows [0, r0) and steps [0, q0) of every row are done
  if (a.cs == 1) {
    const __m128i flip = _mm_set1_epi8(static_cast<char>(a.flip));
    const int64_t steps = whole / 4 * 4;
    for (; r0 + 4 <= rows; r0 += 4)
      for (int64_t q = 0; q < steps; q += 4)
        words_of_rows(base + r0 * a.rs + 4 * q, a.rs, flip, dst + q * kMR * 4 + r0 * 4);
    q0 = steps;
  } else if (a.rs == 1) {  // column-major: a row's four bytes of a step from four columns
    for (int64_t q = 0; q < whole; ++q) {
      const uint8_t* c0 = base + 4 * q * a.cs;
      uint8_t* out = dst + q * kMR * 4;
      for (int64_t r = 0; r < rows; ++r)
        for (int64_t t = 0; t < 4; ++t) out[r * 4 + t] = c0[t * a.cs + r] ^ a.flip;
    }
    r0 = rows;
    q0 = whole;
  }
  // what is left: rows [r0, rows) at every step, and steps [q0, kq) of rows [0, r0)
  auto byte_at = [&](int64_t r, int64_t p) { return base[r * a.rs + p * a.cs] ^ a.flip; };
  for (int64_t r = 0; r < rows; ++r)
    for (int64_t p = r < r0 ? 4 * q0 : 0; p < kc; ++p)
      dst[p / 4 * kMR * 4 + r * 4 + p % 4] = byte_at(r, p);
}

// Four rows of 32 bytes (rows rs apart, each byte's top bit flipped by `flip`) as 32 columns of
// four bytes: two rounds of byte and word interleaving within 128-bit lanes, then the lanes
// put in column order.
EMBER_TARGET_AVX2 void quads_of_rows(const uint8_t* src, int64_t rs, uint8_t flip_byte,
                                     uint8_t* dst) {
  // (no lambdas here: a lambda's body is not compiled for its function's target)
  const __m256i flip = _mm256_set1_epi8(static_cast<char>(flip_byte));
  const __m256i r0 =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src)), flip);
  const __m256i r1 =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + rs)), flip);
  const __m256i r2 =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 2 * rs)), flip);
  const __m256i r3 =
      _mm256_xor_si256(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(src + 3 * rs)), flip);
  const __m256i lo01 = _mm256_unpacklo_epi8(r0, r1), hi01 = _mm256_unpackhi_epi8(r0, r1);
  const __m256i lo23 = _mm256_unpacklo_epi8(r2, r3), hi23 = _mm256_unpackhi_epi8(r2, r3);
  // per 128-bit lane: q0 columns 0-3 (16-19), q1 4-7 (20-23), q2 8-11 (24-27), q3 12-15 (28-31)
  const __m256i q0 = _mm256_unpacklo_epi16(lo01, lo23), q1 = _mm256_unpackhi_epi16(lo01, lo23);
  const __m256i q2 = _mm256_unpacklo_epi16(hi01, hi23), q3 = _mm256_unpackhi_epi16(hi01, hi23);
  auto* out = reinterpret_cast<__m256i*>(dst);
  _mm256_storeu_si256(out, _mm256_permute2x128_si256(q0, q1, 0x20));
  _mm256_storeu_si256(out + 1, _mm256_permute2x128_si256(q2, q3, 0x20));
  _mm256_storeu_si256(out + 2, _mm256_permute2x128_si256(q0, q1, 0x31));
  _mm256_storeu_si256(out + 3, _mm256_permute2x128_si256(q2, q3, 0x31));
}

// Columns [j0, j0 + cols) of B, k in [pc, pc + kc), into a panel [kc/4][kNR][4], zero-padded. A
// row-major B's whole panels four rows at a time (quads_of_rows), a transposed B's four bytes of
// a column at a time, the rest a byte at a time.
void pack_b_panel(const Bytes& b, int64_t j0, int64_t cols, int64_t pc, int64_t kc, uint8_t* dst) {
  const int64_t kq = (kc + 3) / 4, whole = kc / 4;
  const uint8_t* base = b.p + pc * b.rs + j0 * b.cs;
  int64_t q = 0;
  if (b.cs == 1 && cols == kNR) {
    for (; q < whole; ++q) quads_of_rows(base + 4 * q * b.rs, b.rs, b.flip, dst + q * kNR * 4);
  } else if (b.rs == 1) {
    const uint32_t flip4 = b.flip * 0x01010101u;
    std::memset(dst, 0, static_cast<size_t>(whole * kNR * 4));
    for (int64_t j = 0; j < cols; ++j)
      for (int64_t t = 0; t < whole; ++t) {
        uint32_t w;
        std::memcpy(&w, base + j * b.cs + 4 * t, 4);
        w ^= flip4;
        std::memcpy(dst + (t * kNR + j) * 4, &w, 4);
      }
    q = whole;
  }
  // the rest: zeros, then the bytes inside B
  std::memset(dst + q * kNR * 4, 0, static_cast<size_t>((kq - q) * kNR * 4));
  for (int64_t p = 4 * q; p < kc; ++p) {
    uint8_t* out = dst + p / 4 * kNR * 4 + p % 4;
    for (int64_t j = 0; j < cols; ++j) out[j * 4] = base[p * b.rs + j * b.cs] ^ b.flip;
  }
}

// B's panels [jp0, jp1) of the block of columns from jc (nc of them), k in [pc, pc + kc), each
// into dst at its place (panel jp at jp times a panel's bytes). A row-major B's whole panels go
// step by step across the panels, so that each line of B's rows, which two panels share, is read
// once; the others panel by panel.
void pack_b_panels(const Bytes& b, int64_t jc, int64_t nc, int64_t jp0, int64_t jp1, int64_t pc,
                   int64_t kc, uint8_t* dst) {
  const int64_t kq = (kc + 3) / 4, whole = kc / 4, panel_bytes = kq * kNR * 4;
  const int64_t full_end = std::min(jp1, nc / kNR);  // whole panels end there
  int64_t jp = jp0;
  if (b.cs == 1 && whole == kq && jp < full_end) {
    const uint8_t* base = b.p + pc * b.rs + jc;
    for (int64_t q = 0; q < kq; ++q)
      for (int64_t j = jp; j < full_end; ++j)
        quads_of_rows(base + 4 * q * b.rs + j * kNR, b.rs, b.flip,
                      dst + j * panel_bytes + q * kNR * 4);
    jp = full_end;
  }
  for (; jp < jp1; ++jp)
    pack_b_panel(b, jc + jp * kNR, std::min(kNR, nc - jp * kNR), pc, kc, dst + jp * panel_bytes);
}

// C tile (R x kNR, rows ldc apart) = (first ? row[i] + col[j] : C) + the products of kq steps
// of the packed panels (A's panel kMR rows wide). row: R terms, col: kNR terms.
template <int R, bool kSwap>
EMBER_TARGET_VNNI void micro(int64_t kq, const uint8_t* ap, const uint8_t* bp, int32_t* c,
                             int64_t ldc, bool first, const int32_t* row, const int32_t* col) {
#define EMBER_VNNI_DECL(i) __m512i c##i##0, c##i##1;
  EMBER_VNNI_ROWS(EMBER_VNNI_DECL)
#undef EMBER_VNNI_DECL
  if (first) {
    const __m512i t0 = _mm512_loadu_si512(col), t1 = _mm512_loadu_si512(col + 16);
#define EMBER_VNNI_INIT(i)                       \
  if constexpr (i < R) {                         \
    const __m512i r = _mm512_set1_epi32(row[i]); \
    c##i##0 = _mm512_add_epi32(t0, r);           \
    c##i##1 = _mm512_add_epi32(t1, r);           \
  }
    EMBER_VNNI_ROWS(EMBER_VNNI_INIT)
#undef EMBER_VNNI_INIT
  } else {
#define EMBER_VNNI_LOAD(i)                          \
  if constexpr (i < R) {                            \
    c##i##0 = _mm512_loadu_si512(c + i * ldc);      \
    c##i##1 = _mm512_loadu_si512(c + i * ldc + 16); \
  }
    EMBER_VNNI_ROWS(EMBER_VNNI_LOAD)
#undef EMBER_VNNI_LOAD
  }
#pragma GCC unroll 2
  for (int64_t q = 0; q < kq; ++q) {
    const __m512i b0 = _mm512_loadu_si512(bp), b1 = _mm512_loadu_si512(bp + 64);
    EMBER_VNNI_ROWS(EMBER_VNNI_TILE_STEP)
    ap += kMR * 4;
    bp += kNR * 4;
  }
  EMBER_VNNI_ROWS(EMBER_VNNI_TILE_STORE)
}

// One tile of C at (i0, j0), rows x cols of it inside C: the kernel of 4, 8 or 12 rows that
// covers the rows, in place where it covers them exactly and the columns are whole, else
// through a buffer whose valid part is copied back.
template <bool kSwap>
void tile(int64_t kq, const uint8_t* ap, const uint8_t* bp, int32_t* c, int64_t ldc, int64_t rows,
          int64_t cols, bool first, const int32_t* row, const int32_t* col) {
  const int64_t covered = rows <= 4 ? 4 : rows <= 8 ? 8 : kMR;
  const auto kernel = covered == 4   ? &micro<4, kSwap>
                      : covered == 8 ? &micro<8, kSwap>
                                     : &micro<kMR, kSwap>;
  if (rows == covered && cols == kNR) return kernel(kq, ap, bp, c, ldc, first, row, col);
  alignas(64) int32_t buf[kMR * kNR];
  if (!first)
    for (int64_t i = 0; i < rows; ++i)
      std::memcpy(buf + i * kNR, c + i * ldc, static_cast<size_t>(cols) * sizeof(int32_t));
  kernel(kq, ap, bp, buf, kNR, first, row, col);
  for (int64_t i = 0; i < rows; ++i)
    std::memcpy(c + i * ldc, buf + i * kNR, static_cast<size_t>(cols) * sizeof(int32_t));
}

// da and db: what was added to A's and B's stored bytes to move them into their roles (a = a' +
// da, b = b' + db; -128, 0 or 128); kSwap: A takes the signed role and B the unsigned one.
template <bool kSwap>
void gemm_vnni(int64_t m, int64_t n, int64_t k, const Bytes& a, const Bytes& b, int32_t* c,
               int64_t ldc, int32_t da, int32_t db) {
  // each operand's stored byte as the number VPDPBUSD reads: signed in the signed role
  const auto a_value = [](uint8_t v) {
    return static_cast<uint32_t>(kSwap ? int32_t(int8_t(v)) : int32_t(v));
  };
  const auto b_value = [](uint8_t v) {
    return static_cast<uint32_t>(kSwap ? int32_t(v) : int32_t(int8_t(v)));
  };
  // the correction terms, modulo 2^32 (unsigned: no overflow in C++ terms); zero past m and n
  std::vector<int32_t> row_term(static_cast<size_t>(round_up_to(m, kMR)), 0);
  std::vector<int32_t> col_term(static_cast<size_t>(round_up_to(n, kNR)), 0);
  if (db != 0)
    parallel_for(m, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(k, 1)),
                 [&](int64_t i0, int64_t i1) {
                   for (int64_t i = i0; i < i1; ++i) {
                     uint32_t s = 0;
                     for (int64_t p = 0; p < k; ++p) s += a_value(a.at(i, p));
                     row_term[static_cast<size_t>(i)] = static_cast<int32_t>(uint32_t(db) * s);
                   }
                 });
  if (da != 0) {
    const uint32_t both = static_cast<uint32_t>(k) * uint32_t(da) * uint32_t(db);
    parallel_for(n, std::max<int64_t>(1, (int64_t{1} << 15) / std::max<int64_t>(k, 1)),
                 [&](int64_t j0, int64_t j1) {
                   std::vector<uint32_t> s(static_cast<size_t>(j1 - j0), 0);
                   for (int64_t p = 0; p < k; ++p)  // along B's rows: a row-major B's order
                     for (int64_t j = j0; j < j1; ++j)
                       s[static_cast<size_t>(j - j0)] += b_value(b.at(p, j));
                   for (int64_t j = j0; j < j1; ++j)
                     col_term[static_cast<size_t>(j)] =
                         static_cast<int32_t>(uint32_t(da) * s[static_cast<size_t>(j - j0)] + both);
                 });
  }
  const int64_t threads = num_threads();
  const int64_t mpanels = (m + kMR - 1) / kMR;
  const int64_t kc_max = round_up_to(std::min(k, kKC), 4);
  // packed A for one block of k (all rows) and B for one block of k and columns; not zeroed:
  // the packing writes every byte of them
  Aligned<uint8_t> apack(static_cast<size_t>(mpanels * kMR * kc_max));
  // B's blocks of columns: 512 KiB, so that a short k (a 1x1 convolution's 64 channels) takes
  // few blocks, each a round of the threads for its packing and one for its products (one image
  // of 64 -> 256 on 56x56 had run 7 blocks of 512 columns)
  const int64_t nc_max = std::max(kNC, kNC * kKC / kc_max / kNR * kNR);
  Aligned<uint8_t> bpack(static_cast<size_t>(kc_max * round_up_to(std::min(n, nc_max), kNR)));
  for (int64_t pc = 0; pc < k; pc += kKC) {
    const int64_t kc = std::min(kKC, k - pc), kq = (kc + 3) / 4;
    const int64_t a_bytes = kq * kMR * 4, b_bytes = kq * kNR * 4;  // a panel's
    for (int64_t jc = 0; jc < n; jc += nc_max) {
      const int64_t nc = std::min(nc_max, n - jc), npanels = (nc + kNR - 1) / kNR;
      // B's panels of this block, and with the first block all of A's panels of this k block
      const int64_t apanels = jc == 0 ? mpanels : 0;
      parallel_for(apanels + npanels, 1, [&](int64_t p0, int64_t p1) {
        for (int64_t p = p0; p < std::min(p1, apanels); ++p)
          pack_a_panel(a, p * kMR, std::min(kMR, m - p * kMR), pc, kc, apack.p + p * a_bytes);
        const int64_t jp0 = std::max(p0, apanels) - apanels, jp1 = p1 - apanels;
        if (jp0 < jp1) pack_b_panels(b, jc, nc, jp0, jp1, pc, kc, bpack.p);
      });
      // items: a panel of A against a run of B's panels, runs enough for 4 items a thread
      const int64_t groups = std::clamp<int64_t>((4 * threads + mpanels - 1) / mpanels, 1, npanels);
      parallel_for(mpanels * groups, 1, [&](int64_t w0, int64_t w1) {
        for (int64_t w = w0; w < w1; ++w) {
          const int64_t ip = w / groups, g = w % groups;
          const int64_t i0 = ip * kMR, rows = std::min(kMR, m - i0);
          const int64_t jp1 = (g + 1) * npanels / groups;
          for (int64_t jp = g * npanels / groups; jp < jp1; ++jp) {
            const int64_t j0 = jc + jp * kNR;
            tile<kSwap>(kq, apack.p + ip * a_bytes, bpack.p + jp * b_bytes, c + i0 * ldc + j0, ldc,
                        rows, std::min(kNR, n - j0), pc == 0, row_term.data() + i0,
                        col_term.data() + j0);
          }
        }
      });
    }
  }
}

// ---- AMX: TDPB[SU][SU]D on tiles of 16 rows x 64 bytes ---------------------------------------
//
// A in blocks of 32 rows as [k/64][32 rows][64 bytes], B in the 32-column panels above ([k/4]
// [32 columns][4 bytes]: a B tile is 16 steps of 16 columns, its rows 128 bytes apart), both
// zero-padded to whole groups of 64 of k; a 32 x 32 block of C is four tiles, per group two
// tiles of A and two of B for four products. AMX has the products of every pairing of signed
// and unsigned bytes, so nothing is flipped or corrected.

constexpr int64_t kTileK = 64;  // k per tile product (bytes in a row of A's tile)

// Rows [i0, i0 + rows) of A, all of k, into a block [kp/64][32][64], zero-padded.
void pack_a_tiles(const Bytes& a, int64_t i0, int64_t rows, int64_t k, int64_t kp, uint8_t* dst) {
  if (rows < 32 || k != kp) std::memset(dst, 0, static_cast<size_t>(32 * kp));
  for (int64_t r = 0; r < rows; ++r) {
    const uint8_t* src = a.p + (i0 + r) * a.rs;
    if (a.cs == 1) {
      for (int64_t p = 0; p < k; p += kTileK)
        std::memcpy(dst + p / kTileK * 32 * kTileK + r * kTileK, src + p,
                    static_cast<size_t>(std::min(kTileK, k - p)));
    } else {
      for (int64_t p = 0; p < k; ++p)
        dst[p / kTileK * 32 * kTileK + r * kTileK + p % kTileK] = src[p * a.cs];
    }
  }
}

// C block (32 x 32 i32, rows ldc apart) = the products of `groups` groups of 64 of k of the
// packed A block and B panel, one function for each of AMX's four signedness pairings.

#define EMBER_AMX_BLOCK(NAME, DP)                                                      \
  __attribute__((target("amx-tile,amx-int8"))) void NAME(                              \
      const uint8_t* ap, const uint8_t* bp, int64_t groups, int32_t* c, int64_t ldc) { \
    const int64_t cs = ldc * int64_t(sizeof(int32_t));                                 \
    _tile_zero(0);                                                                     \
    _tile_zero(1);                                                                     \
    _tile_zero(2);                                                                     \
    _tile_zero(3);                                                                     \
    for (int64_t g = 0; g < groups; ++g, ap += 32 * kTileK, bp += 32 * kTileK) {       \
      _tile_loadd(4, ap, kTileK);               /* rows 0..15 of A, 64 k each */       \
      _tile_loadd(5, ap + 16 * kTileK, kTileK); /* rows 16..31 */                      \
      _tile_loadd(6, bp, kNR * 4);              /* columns 0..15: 16 steps of 4 k */   \
      _tile_loadd(7, bp + 64, kNR * 4);         /* columns 16..31 */                   \
      DP(0, 4, 6);                                                                     \
      DP(1, 4, 7);                                                                     \
      DP(2, 5, 6);                                                                     \
      DP(3, 5, 7);                                                                     \
    }                                                                                  \
    _tile_stored(0, c, cs);                                                            \
    _tile_stored(1, c + 16, cs);                                                       \
    _tile_stored(2, c + 16 * ldc, cs);                                                 \
    _tile_stored(3, c + 16 * ldc + 16, cs);                                            \
  }
EMBER_AMX_BLOCK(amx_u8i8, _tile_dpbusd)
EMBER_AMX_BLOCK(amx_i8i8, _tile_dpbssd)
EMBER_AMX_BLOCK(amx_u8u8, _tile_dpbuud)
EMBER_AMX_BLOCK(amx_i8u8, _tile_dpbsud)
#undef EMBER_AMX_BLOCK

// This thread's tiles configured while it lives (and released, also when a work item throws).
struct Tiles {
  Tiles() { amx_load_tile_config(); }
  ~Tiles() { amx_release_tiles(); }
  Tiles(const Tiles&) = delete;
  Tiles& operator=(const Tiles&) = delete;
};

void gemm_amx(int64_t m, int64_t n, int64_t k, const Bytes& a, bool a_signed, const Bytes& b,
              bool b_signed, int32_t* c, int64_t ldc) {
  const auto block =
      a_signed ? (b_signed ? &amx_i8i8 : &amx_i8u8) : (b_signed ? &amx_u8i8 : &amx_u8u8);
  const int64_t kp = round_up_to(k, kTileK), groups = kp / kTileK, kq = kp / 4;
  const int64_t mblocks = (m + 31) / 32, npanels = (n + kNR - 1) / kNR;
  const int64_t panel_bytes = kq * kNR * 4;
  // all of B, packed once: its panels, their steps past k zero
  Aligned<uint8_t> bpack(static_cast<size_t>(npanels * panel_bytes));
  parallel_for(npanels, 1, [&](int64_t p0, int64_t p1) {
    for (int64_t jp = p0; jp < p1; ++jp) {
      uint8_t* dst = bpack.p + jp * panel_bytes;
      pack_b_panel(b, jp * kNR, std::min(kNR, n - jp * kNR), 0, k, dst);
      const int64_t written = (k + 3) / 4 * kNR * 4;
      std::memset(dst + written, 0, static_cast<size_t>(panel_bytes - written));
    }
  });
  // items: (32-row block, panel), row blocks outermost, so a thread packs few blocks of A
  parallel_for(mblocks * npanels, 1, [&](int64_t w0, int64_t w1) {
    const Tiles tiles;
    Aligned<uint8_t> apack(static_cast<size_t>(32 * kp));
    int64_t packed = -1;
    alignas(64) int32_t buf[32 * 32];
    for (int64_t w = w0; w < w1; ++w) {
      const int64_t ib = w / npanels, jp = w % npanels;
      const int64_t i0 = ib * 32, rows = std::min<int64_t>(32, m - i0);
      const int64_t j0 = jp * kNR, cols = std::min(kNR, n - j0);
      if (packed != ib) {
        pack_a_tiles(a, i0, rows, k, kp, apack.p);
        packed = ib;
      }
      const uint8_t* bp = bpack.p + jp * panel_bytes;
      if (rows == 32 && cols == kNR) {
        block(apack.p, bp, groups, c + i0 * ldc + j0, ldc);
        continue;
      }
      block(apack.p, bp, groups, buf, 32);
      for (int64_t i = 0; i < rows; ++i)
        std::memcpy(c + (i0 + i) * ldc + j0, buf + i * 32,
                    static_cast<size_t>(cols) * sizeof(int32_t));
    }
  });
}

}  // namespace

bool gemm_int8(int64_t m, int64_t n, int64_t k, Int8Ref a, Int8Ref b, int32_t* c, int64_t ldc) {
  if (!cpu_has_avx512_vnni()) return false;
  if (m == 0 || n == 0) return true;
  if (k == 0) {
    for (int64_t i = 0; i < m; ++i) std::fill(c + i * ldc, c + i * ldc + n, 0);
    return true;
  }
  if (cpu_has_amx_int8()) {
    gemm_amx(m, n, k, Bytes{a.p, a.rs, a.cs, 0}, a.is_signed, Bytes{b.p, b.rs, b.cs, 0},
             b.is_signed, c, ldc);
    return true;
  }
  // The roles: A unsigned and B signed, or (swapped) B unsigned and A signed, whichever needs
  // fewer operands moved, and of two equal ones the cheaper sums: moving A costs B's column
  // sums (n k), moving B A's row sums (m k).
  const bool a_moves = a.is_signed, b_moves = !b.is_signed;  // in the first roles
  // (both or neither move: swapping moves neither or both; one: the other role moves the other
  // operand, B's column sums against A's row sums)
  const bool swap = a_moves == b_moves ? a_moves : a_moves ? m <= n : n < m;
  // flipping a byte's top bit moves i8 to u8 by adding 128, u8 to i8 by subtracting it
  const auto move = [](bool moves, bool is_signed) { return moves ? (is_signed ? -128 : 128) : 0; };
  const bool a_flips = swap ? !a.is_signed : a.is_signed;
  const bool b_flips = swap ? b.is_signed : !b.is_signed;
  const Bytes ab{a.p, a.rs, a.cs, static_cast<uint8_t>(a_flips ? 0x80 : 0)};
  const Bytes bb{b.p, b.rs, b.cs, static_cast<uint8_t>(b_flips ? 0x80 : 0)};
  const int32_t da = move(a_flips, a.is_signed), db = move(b_flips, b.is_signed);
  if (swap)
    gemm_vnni<true>(m, n, k, ab, bb, c, ldc, da, db);
  else
    gemm_vnni<false>(m, n, k, ab, bb, c, ldc, da, db);
  return true;
}

#else

bool gemm_int8(int64_t, int64_t, int64_t, Int8Ref, Int8Ref, int32_t*, int64_t) { return false; }

#endif

}  // namespace ember::cpu
