// F(4x4, 3x3) on AVX-512 with every step on one thread's small buffers (winograd.h's
// winograd_fused_fits says where): 16 tiles a vector, the tiles of all images end to end, so
// that rows of few tiles (28 wide: 7) leave no lanes idle.
//
// A block of up to kVecs vectors of tiles runs on one thread, input channel by input channel:
//   1. the vertical half of B^T d B over the padded input rows of the block's tile rows, whole
//      rows at a time (vectors along the columns), into T[i] (i: B^T's row) where tile row r's
//      columns [0, 4 tw) start at 4 tw r (`main`), and its columns [4, 4 tw + 2) a second time
//      in `shift` (window columns 4 and 5 of a row's last tile, which the next row's first
//      columns would overwrite in `main`);
//   2. the horizontal half per vector: window column j of 16 consecutive tiles is every 4th
//      float of `main` (j < 4) or `shift` (j >= 4) from 4 t + j: two permutes of four loads
//      and two lane shuffles give two of the columns (phase_pair), then B^T's 14 operations give
//      V[c][xi], 16 tiles.
// Then per vector, for each of the 36 points xi, M[xi] = U[xi] V[xi] (c_out x c_in times
// c_in x 16: 16 accumulators, U's entries broadcast from memory); and per output channel, over
// the block's vectors, A^T M A gives 4x4 outputs a tile, interleaved to rows in registers and
// stored by runs of tiles of one tile row.
//
// The weight gradient (grad_block, per block of whole tile rows) makes V the same way and Z =
// A gy A^T from the output gradient's 4x4 tiles, turns V to 16 channels a vector, and adds
// Z[xi] V[xi]^T over the block's tiles into dU, the gradient w.r.t. U = G w G^T; dw = G^T dU G
// at the end (weights_back). docs/cpu-measurements.md has the measurements.
#include <immintrin.h>

#include <algorithm>
#include <cstdint>

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/transpose16.h"
#include "ember/backends/cpu/winograd.h"
#include "ember/core/thread_pool.h"

#if defined(__x86_64__)
#define EMBER_AVX512 __attribute__((target("avx512f,avx512dq,avx512vl,avx512bw")))
#define EMBER_AVX512_INLINE EMBER_AVX512 __attribute__((always_inline)) inline
// The steps stay functions of their own: all inlined into one, 16 -> 16 on 28x28 took 4% longer
// (one thread of a Zen 4).
#define EMBER_AVX512_STEP EMBER_AVX512 __attribute__((noinline))

namespace ember::cpu {

namespace {

// GCC 12's unpack and shuffle intrinsics pass an undefined vector as the unused merge source,
// which -Wmaybe-uninitialized (or -Wuninitialized) reports once inlined.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"
#pragma GCC diagnostic ignored "-Wuninitialized"
#endif

constexpr int kL = 16;    // tiles a vector
constexpr int kVecs = 4;  // vectors a block, at most
constexpr int kNN = 36;   // points a tile

// r = B^T x for a column (or row) of 6 (winograd.cpp's bt, the same 14 operations).
EMBER_AVX512_INLINE void bt(const __m512 (&x)[6], __m512 (&r)[6]) {
  const __m512 four = _mm512_set1_ps(4), five = _mm512_set1_ps(5), two = _mm512_set1_ps(2);
  const __m512 s13 = _mm512_add_ps(x[1], x[2]), d21 = _mm512_sub_ps(x[1], x[2]);
  const __m512 s34 = _mm512_add_ps(x[3], x[4]), d43 = _mm512_sub_ps(x[4], x[3]);
  const __m512 d42 = _mm512_sub_ps(x[4], x[2]), d31 = _mm512_sub_ps(x[3], x[1]);
  r[0] = _mm512_fnmadd_ps(x[2], five, _mm512_fmadd_ps(x[0], four, x[4]));
  r[1] = _mm512_fnmadd_ps(s13, four, s34);
  r[2] = _mm512_fmadd_ps(d21, four, d43);
  r[3] = _mm512_fmadd_ps(d31, two, d42);
  r[4] = _mm512_fnmadd_ps(d31, two, d42);
  r[5] = _mm512_fnmadd_ps(x[3], five, _mm512_fmadd_ps(x[1], four, x[5]));
}

// o = A^T x for a column (or row) of 6 products.
EMBER_AVX512_INLINE void at(const __m512 (&x)[6], __m512 (&o)[4]) {
  const __m512 s12 = _mm512_add_ps(x[1], x[2]), d12 = _mm512_sub_ps(x[1], x[2]);
  const __m512 s34 = _mm512_add_ps(x[3], x[4]), d34 = _mm512_sub_ps(x[3], x[4]);
  o[0] = _mm512_add_ps(_mm512_add_ps(x[0], s12), s34);
  o[1] = _mm512_fmadd_ps(d34, _mm512_set1_ps(2), d12);
  o[2] = _mm512_fmadd_ps(s34, _mm512_set1_ps(4), s12);
  o[3] = _mm512_add_ps(_mm512_fmadd_ps(d34, _mm512_set1_ps(8), d12), x[5]);
}

// z = A g for a column (or row) of 4 output gradients: A is (A^T)^T, 6 x 4 (9 operations).
EMBER_AVX512_INLINE void a_col(const __m512 (&g)[4], __m512 (&z)[6]) {
  const __m512 s02 = _mm512_add_ps(g[0], g[2]), s13 = _mm512_add_ps(g[1], g[3]);
  const __m512 e = _mm512_fmadd_ps(g[2], _mm512_set1_ps(4), g[0]);
  const __m512 f = _mm512_fmadd_ps(g[3], _mm512_set1_ps(8), _mm512_add_ps(g[1], g[1]));
  z[0] = g[0];
  z[1] = _mm512_add_ps(s02, s13);
  z[2] = _mm512_sub_ps(s02, s13);
  z[3] = _mm512_add_ps(e, f);
  z[4] = _mm512_sub_ps(e, f);
  z[5] = g[3];
}

// Lanes [0, n) set.
EMBER_AVX512_INLINE __mmask16 first(int64_t n) {
  return n >= 16 ? __mmask16(0xFFFF) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
}

// p[j][l] = x[4 l + k + j], j < 2, l < 16: phases k and k + 1 of the 64 floats at x (k 0 or 2),
// each half of them by one permute of two vectors.
EMBER_AVX512_INLINE void phase_pair(const float* x, int k, __m512 (&p)[2]) {
  const __m512i idx =
      _mm512_add_epi32(_mm512_setr_epi32(0, 4, 8, 12, 16, 20, 24, 28, 1, 5, 9, 13, 17, 21, 25, 29),
                       _mm512_set1_epi32(k));
  const __m512 a = _mm512_permutex2var_ps(_mm512_loadu_ps(x), idx, _mm512_loadu_ps(x + 16));
  const __m512 b = _mm512_permutex2var_ps(_mm512_loadu_ps(x + 32), idx, _mm512_loadu_ps(x + 48));
  p[0] = _mm512_shuffle_f32x4(a, b, 0x44);
  p[1] = _mm512_shuffle_f32x4(a, b, 0xEE);
}

// The 64 floats of y[0..4) = (r[b][l] at 4 l + b): four vectors interleaved (4x4 transposes).
EMBER_AVX512_INLINE void interleave4(const __m512 (&r)[4], __m512* y) {
  const __m512 t0 = _mm512_unpacklo_ps(r[0], r[1]), t1 = _mm512_unpackhi_ps(r[0], r[1]);
  const __m512 t2 = _mm512_unpacklo_ps(r[2], r[3]), t3 = _mm512_unpackhi_ps(r[2], r[3]);
  // s_q: tiles q, q + 4, q + 8, q + 12, one per 128-bit lane.
  const __m512 s0 = _mm512_shuffle_ps(t0, t2, 0x44), s1 = _mm512_shuffle_ps(t0, t2, 0xEE);
  const __m512 s2 = _mm512_shuffle_ps(t1, t3, 0x44), s3 = _mm512_shuffle_ps(t1, t3, 0xEE);
  const __m512 u0 = _mm512_shuffle_f32x4(s0, s1, 0x44), u1 = _mm512_shuffle_f32x4(s0, s1, 0xEE);
  const __m512 u2 = _mm512_shuffle_f32x4(s2, s3, 0x44), u3 = _mm512_shuffle_f32x4(s2, s3, 0xEE);
  y[0] = _mm512_shuffle_f32x4(u0, u2, 0x88);
  y[1] = _mm512_shuffle_f32x4(u0, u2, 0xDD);
  y[2] = _mm512_shuffle_f32x4(u1, u3, 0x88);
  y[3] = _mm512_shuffle_f32x4(u1, u3, 0xDD);
}

// A run of tiles of one tile row within a vector (Fused::runs_of).
struct Run {
  int64_t at, from, rows, cols;
};

class Fused {
 public:
  // The convolution y = conv(x, w) (u: w transformed), or with gy (y, u null) its weight
  // gradient (grad_block).
  Fused(const float* x, const float* u, float* y, int64_t n, int64_t c_in, int64_t c_out,
        const Geom& g, const float* gy = nullptr)
      : x_(x), u_(u), y_(y), gy_(gy), c_in_(c_in), c_out_(c_out) {
    h_ = g.in[1], w_ = g.in[2], ph_ = g.p[1], pw_ = g.p[2];
    ho_ = g.out[1], wo_ = g.out[2], th_ = (ho_ + 3) / 4, tw_ = (wo_ + 3) / 4;
    tiles_ = n * th_ * tw_;
    // Vectors a block: V and M in up to 5/8 of L2, where they stay between the steps (a Zen 4's
    // 1 MiB: 640 KiB, two vectors at 64 channels, where 320 KiB allowed one: 8x64 -> 64 on
    // 56x56 3.97 -> 3.78 ms, its weight gradient 4.9 -> 4.5; by count, blocks of 16 tiles over
    // rows of 14 transform about 1.9 tile rows for each row of tiles they hold, of 32 about 1.4).
    vecs_ = std::clamp<int64_t>(cpu_l2_bytes() * 5 / 8 / ((c_in + c_out) * kNN * kL * 4), 1, kVecs);
    // Tile rows a block's tiles touch, at most (the weight gradient's blocks: whole rows).
    rows_ = (vecs_ * kL + tw_ - 2) / tw_ + 1;
    grad_rows_ = std::max<int64_t>(1, vecs_ * kL / tw_);
    grad_vecs_ = (grad_rows_ * tw_ + kL - 1) / kL;
    // T's length a row (i), with room for the phases' last loads (64 floats from 4 t + 1 of the
    // last vector) and `shift`'s start.
    t_len_ = 4 * tw_ * std::max(rows_, grad_rows_ + 1) + 4 * kL + 16;
  }
  int64_t blocks() const { return (tiles_ + vecs_ * kL - 1) / (vecs_ * kL); }
  int64_t scratch() const { return 2 * 6 * t_len_ + vecs_ * kNN * (c_in_ + c_out_) * kL; }
  // The weight gradient's blocks: whole tile rows (its products run over the tiles there are,
  // so no row is transformed twice), as many as fill vecs_ vectors, at least one.
  int64_t grad_blocks() const { return (tiles_ / tw_ + grad_rows_ - 1) / grad_rows_; }
  int64_t grad_scratch() const { return 3 * 6 * t_len_ + grad_vecs_ * kNN * (c_in_ + c_out_) * kL; }

  // du[xi][k][c] += sum over the block's tiles t of Z[xi][k][t] V[xi][c][t], where Z = A gy A^T
  // is the output gradient's tile transformed: the gradient with respect to U = G w G^T. V is
  // transposed in place to 16 channels a vector for it (c_in a multiple of 16).
  EMBER_AVX512 void grad_block(int64_t block, float* scratch, float* du) const {
    const int64_t r0 = block * grad_rows_, r1 = std::min(tiles_ / tw_, r0 + grad_rows_);
    const int64_t t0 = r0 * tw_, t1 = r1 * tw_, nv = (t1 - t0 + kL - 1) / kL;
    float* tm = scratch;
    float* ts = tm + 6 * t_len_;
    float* tg = ts + 6 * t_len_;                   // T of the output gradient (rows of A)
    float* v = tg + 6 * t_len_;                    // V[vec][c][xi][16]
    float* z = v + grad_vecs_ * kNN * c_in_ * kL;  // Z[vec][k][xi][16]
    for (int64_t c = 0; c < c_in_; ++c) {
      vertical(r0, r1, c, tm + 8, ts + 8);
      for (int64_t q = 0; q < nv; ++q) {
        const int64_t at = 8 + 4 * (t0 + q * kL - r0 * tw_);
        horizontal(tm + at, ts + at, v + (q * c_in_ + c) * kNN * kL);
      }
    }
    for (int64_t k = 0; k < c_out_; ++k) {
      vertical_gy(r0, r1, k, tg + 8);
      for (int64_t q = 0; q < nv; ++q)
        horizontal_gy(tg + 8 + 4 * (t0 + q * kL - r0 * tw_), z + (q * c_out_ + k) * kNN * kL);
    }
    for (int64_t q = 0; q < nv; ++q) transpose_v(v + q * c_in_ * kNN * kL);
    // Input channels 64 at a time (4 vectors: 24 accumulators with 6 output channels).
    for (int64_t c0 = 0; c0 < c_in_; c0 += 64) {
      switch (std::min<int64_t>(4, (c_in_ - c0) / 16)) {
        case 1:
          grad_products<1>(v, z, t1 - t0, du, c0);
          break;
        case 2:
          grad_products<2>(v, z, t1 - t0, du, c0);
          break;
        case 3:
          grad_products<3>(v, z, t1 - t0, du, c0);
          break;
        default:
          grad_products<4>(v, z, t1 - t0, du, c0);
          break;
      }
    }
  }

  EMBER_AVX512 void run(int64_t block, float* scratch) const {
    const int64_t t0 = block * vecs_ * kL, t1 = std::min(tiles_, t0 + vecs_ * kL);
    const int64_t nv = (t1 - t0 + kL - 1) / kL;
    float* tm = scratch;                      // main: 6 rows of t_len_
    float* ts = tm + 6 * t_len_;              // shift
    float* v = ts + 6 * t_len_;               // V[vec][c][xi][16]
    float* m = v + vecs_ * kNN * c_in_ * kL;  // M[vec][k][xi][16]
    const int64_t r0 = t0 / tw_, r1 = (t1 - 1) / tw_ + 1;
    // The lanes past the last tile (the last block's) read what T held: zeros at first.
    if (t1 - t0 < vecs_ * kL) std::fill(tm, tm + 12 * t_len_, 0.0f);
    for (int64_t c = 0; c < c_in_; ++c) {
      vertical(r0, r1, c, tm + 8, ts + 8);
      for (int64_t q = 0; q < nv; ++q) {
        const int64_t at = 8 + 4 * (t0 + q * kL - r0 * tw_);
        horizontal(tm + at, ts + at, v + (q * c_in_ + c) * kNN * kL);
      }
    }
    for (int64_t q = 0; q < nv; ++q) products(v + q * c_in_ * kNN * kL, m + q * c_out_ * kNN * kL);
    // Output channel by output channel, so that its stores run along the block's rows.
    Run runs[kVecs][kL];
    int64_t nseg[kVecs];
    for (int64_t q = 0; q < nv; ++q)
      nseg[q] = runs_of(t0 + q * kL, std::min<int64_t>(kL, t1 - t0 - q * kL), runs[q]);
    for (int64_t k = 0; k < c_out_; ++k)
      for (int64_t q = 0; q < nv; ++q) outputs(m + q * c_out_ * kNN * kL, k, runs[q], nseg[q]);
  }

 private:
  // Rows i of B^T (the padded input rows of channel c under tile rows [r0, r1)) into
  // tm + i t_len_, tile row r's columns [0, 4 tw) from 4 tw (r - r0), and into ts the same way
  // from column 4 (its columns [4, 4 tw + 2) from 4 tw (r - r0)).
  EMBER_AVX512_STEP void vertical(int64_t r0, int64_t r1, int64_t c, float* tm, float* ts) const {
    const int64_t width = 4 * tw_ + 2, len = t_len_, w = w_, h = h_, row = 4 * tw_;
    // Whole vectors are stored: what lands past a row's end is the next row's start (or T's
    // slack), which its own stores overwrite later (rows go in order). But the first vector goes
    // to `shift` only from column 4 on: before it are the last row's columns 4 tw and 4 tw + 1.
    int64_t img = r0 / th_, ty = r0 % th_;
    for (int64_t r = r0; r < r1; ++r, tm += row, ts += row) {
      const int64_t iy = 4 * ty - ph_;
      const float* in = x_ + (img * c_in_ + c) * h * w + iy * w - pw_;
      const bool inside = iy >= 0 && iy + 6 <= h;
      // The next channel's rows (its first 4 under this tile row) are fetched meanwhile: from
      // memory, the rows' first loads waited (8x64 -> 64 on 56x56, 2 threads of a Zen 4: 5.16 ->
      // 4.26 ms; the weight gradient's 5.5 -> 4.9).
      if (c + 1 < c_in_)
        for (int64_t a = std::max<int64_t>(0, iy) * w; a < std::min(h, iy + 4) * w; a += 16)
          _mm_prefetch(x_ + (img * c_in_ + c + 1) * h * w + a, _MM_HINT_T0);
      for (int64_t c0 = 0; c0 < width; c0 += 16) {
        // Columns c0 + l of the padded row: the image's c0 + l - pw, where inside it.
        __mmask16 valid = first(std::min(width, w + pw_) - c0);
        if (c0 < pw_) valid &= __mmask16(0xFFFF << (pw_ - c0));
        __m512 d[6], t[6];
        if (inside) {
          for (int k = 0; k < 6; ++k) d[k] = _mm512_maskz_loadu_ps(valid, in + k * w + c0);
        } else {
          for (int k = 0; k < 6; ++k)
            d[k] = iy + k >= 0 && iy + k < h ? _mm512_maskz_loadu_ps(valid, in + k * w + c0)
                                             : _mm512_setzero_ps();
        }
        bt(d, t);
        for (int i = 0; i < 6; ++i) {
          _mm512_storeu_ps(tm + i * len + c0, t[i]);
          if (c0 == 0)
            _mm512_mask_storeu_ps(ts + i * len - 4, 0xFFF0, t[i]);
          else
            _mm512_storeu_ps(ts + i * len + c0 - 4, t[i]);
        }
      }
      if (++ty == th_) ty = 0, ++img;
    }
  }

  // Rows i of A applied to the output gradient's rows under tile rows [r0, r1), channel k, into
  // tg + i t_len_ (tile row r's columns [0, 4 tw) from 4 tw (r - r0)), as `vertical` does.
  EMBER_AVX512_STEP void vertical_gy(int64_t r0, int64_t r1, int64_t k, float* tg) const {
    const int64_t width = 4 * tw_, len = t_len_, w = wo_, h = ho_;
    int64_t img = r0 / th_, ty = r0 % th_;
    for (int64_t r = r0; r < r1; ++r, tg += width) {
      const int64_t oy = 4 * ty, rows = std::min<int64_t>(4, h - oy);
      const float* in = gy_ + ((img * c_out_ + k) * h + oy) * w;
      if (k + 1 < c_out_)  // as `vertical` does
        for (int64_t a = 0; a < rows * w; a += 16) _mm_prefetch(in + h * w + a, _MM_HINT_T0);
      for (int64_t c0 = 0; c0 < width; c0 += 16) {
        const __mmask16 valid = first(w - c0);
        __m512 g[4], t[6];
        for (int a = 0; a < 4; ++a)
          g[a] = a < rows ? _mm512_maskz_loadu_ps(valid, in + a * w + c0) : _mm512_setzero_ps();
        a_col(g, t);
        for (int i = 0; i < 6; ++i) _mm512_storeu_ps(tg + i * len + c0, t[i]);
      }
      if (++ty == th_) ty = 0, ++img;
    }
  }

  // Z[k][xi] (xi < 36, 16 floats each from z) for the 16 tiles whose columns start at tg.
  EMBER_AVX512_STEP void horizontal_gy(const float* tg, float* z) const {
    for (int i = 0; i < 6; ++i) {
      __m512 p[2][2], r[6];
      phase_pair(tg + i * t_len_, 0, p[0]);
      phase_pair(tg + i * t_len_, 2, p[1]);
      a_col({p[0][0], p[0][1], p[1][0], p[1][1]}, r);
      for (int j = 0; j < 6; ++j) _mm512_storeu_ps(z + (i * 6 + j) * kL, r[j]);
    }
  }

  // V[c][xi][tile] of one vector to 16 channels a vector, in place: for each point and group
  // of 16 channels, slot 16 g + t (where channel 16 g + t's tiles were) holds tile t's channels
  // 16 g to 16 g + 15.
  EMBER_AVX512_STEP void transpose_v(float* v) const {
    for (int64_t g = 0; g < c_in_; g += 16)
      for (int xi = 0; xi < kNN; ++xi) {
        __m512 r[16];
        float* at = v + (g * kNN + xi) * kL;
        for (int l = 0; l < 16; ++l) r[l] = _mm512_loadu_ps(at + l * kNN * kL);
        transpose16(r);
        for (int l = 0; l < 16; ++l) _mm512_storeu_ps(at + l * kNN * kL, r[l]);
      }
  }

  // du[xi][k][c] += sum over the block's n tiles of Z[xi][k][t] V[xi][c][t] for the input
  // channels [c0, c0 + 16 G): 6, 4 or 2 output channels by G vectors of 16 input channels in
  // registers, a tile a step.
  template <int G>
  EMBER_AVX512 void grad_products(const float* v, const float* z, int64_t n, float* du,
                                  int64_t c0) const {
    for (int xi = 0; xi < kNN; ++xi)
      for (int64_t k0 = 0; k0 < c_out_;) {
        const int64_t left = c_out_ - k0;
        if (left >= 6) {
          grad_tile<6, G>(v, z, n, du, xi, k0, c0), k0 += 6;
        } else if (left >= 4) {
          grad_tile<4, G>(v, z, n, du, xi, k0, c0), k0 += 4;
        } else {
          grad_tile<2, G>(v, z, n, du, xi, k0, c0), k0 += 2;
        }
      }
  }
  template <int KB, int G>
  EMBER_AVX512_INLINE void grad_tile(const float* v, const float* z, int64_t n, float* du, int xi,
                                     int64_t k0, int64_t c0) const {
    __m512 acc[KB][G];
    float* d = du + (xi * c_out_ + k0) * c_in_ + c0;
    for (int kk = 0; kk < KB; ++kk)
      for (int g = 0; g < G; ++g) acc[kk][g] = _mm512_loadu_ps(d + kk * c_in_ + 16 * g);
    for (int64_t t = 0; t < n; ++t) {
      const int64_t q = t / kL, l = t % kL;
      const float* vt = v + ((q * c_in_ + c0 + l) * kNN + xi) * kL;
      const float* zt = z + ((q * c_out_ + k0) * kNN + xi) * kL + l;
      __m512 x[G];
      for (int g = 0; g < G; ++g) x[g] = _mm512_loadu_ps(vt + 16 * g * kNN * kL);
      for (int kk = 0; kk < KB; ++kk) {
        const __m512 b = _mm512_set1_ps(zt[kk * kNN * kL]);
        for (int g = 0; g < G; ++g) acc[kk][g] = _mm512_fmadd_ps(b, x[g], acc[kk][g]);
      }
    }
    for (int kk = 0; kk < KB; ++kk)
      for (int g = 0; g < G; ++g) _mm512_storeu_ps(d + kk * c_in_ + 16 * g, acc[kk][g]);
  }

  // V[c][xi] (xi < 36, 16 floats each from v) for the 16 tiles whose T columns start at tm, ts
  // (4 floats a tile).
  EMBER_AVX512_STEP void horizontal(const float* tm, const float* ts, float* v) const {
    for (int i = 0; i < 6; ++i) {
      __m512 p[3][2], r[6];  // window columns 0-1, 2-3 (main), 4-5 (shift)
      phase_pair(tm + i * t_len_, 0, p[0]);
      phase_pair(tm + i * t_len_, 2, p[1]);
      phase_pair(ts + i * t_len_, 0, p[2]);
      bt({p[0][0], p[0][1], p[1][0], p[1][1], p[2][0], p[2][1]}, r);
      for (int j = 0; j < 6; ++j) _mm512_storeu_ps(v + (i * 6 + j) * kL, r[j]);
    }
  }

  // M[k][xi] = sum_c U[xi][c][k] V[c][xi] for one vector of tiles (each 16 floats).
  EMBER_AVX512_STEP void products(const float* v, float* m) const {
    for (int xi = 0; xi < kNN; ++xi) {
      const float* vx = v + xi * kL;
      const float* ux = u_ + xi * c_in_ * c_out_;
      for (int64_t k0 = 0; k0 < c_out_; k0 += 16) {
        __m512 acc[16];
        for (int kk = 0; kk < 16; ++kk) acc[kk] = _mm512_setzero_ps();
        for (int64_t c = 0; c < c_in_; ++c) {
          const __m512 vc = _mm512_loadu_ps(vx + c * kNN * kL);
          const float* uc = ux + c * c_out_ + k0;
          for (int kk = 0; kk < 16; ++kk)
            acc[kk] = _mm512_fmadd_ps(_mm512_set1_ps(uc[kk]), vc, acc[kk]);
        }
        for (int kk = 0; kk < 16; ++kk) _mm512_storeu_ps(m + ((k0 + kk) * kNN + xi) * kL, acc[kk]);
      }
    }
  }

  // Output channel k of one vector of tiles: A^T M A, each row of 4 outputs of the 16 tiles
  // interleaved in registers (64 floats a row), then stored by the vector's runs of one tile
  // row (runs_of).
  EMBER_AVX512_STEP void outputs(const float* m, int64_t k, const Run* runs, int64_t nseg) const {
    const float* mk = m + k * kNN * kL;
    __m512 q[4][6];  // (A^T M)[a][column]
    for (int j = 0; j < 6; ++j) {
      __m512 col[6], r[4];
      for (int i = 0; i < 6; ++i) col[i] = _mm512_loadu_ps(mk + (i * 6 + j) * kL);
      at(col, r);
      for (int a = 0; a < 4; ++a) q[a][j] = r[a];
    }
    // Row a of the 16 tiles' outputs: 64 floats in row[a][0..4), a fifth vector of zeros past.
    __m512 row[4][5];
    for (int a = 0; a < 4; ++a) {
      __m512 r[4];
      at(q[a], r);
      interleave4(r, row[a]);
      row[a][4] = _mm512_setzero_ps();
    }
    // Each run's floats from s.from on, in vectors: two of a row's shifted down by s.from % 16
    // lanes (not through memory, where loads across the vectors just stored wait for them).
    const __m512i lanes = _mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15);
    for (int64_t i = 0; i < nseg; ++i) {
      const Run& s = runs[i];
      const int64_t q0 = s.from / 16, shift = s.from % 16;
      const __m512i idx = _mm512_add_epi32(lanes, _mm512_set1_epi32(int(shift)));
      float* out = y_ + s.at + k * ho_ * wo_;
      for (int64_t a = 0; a < s.rows; ++a)
        for (int64_t j = 0, v = q0; j < s.cols; j += 16, ++v) {
          const __m512 x =
              shift ? _mm512_permutex2var_ps(row[a][v], idx, row[a][v + 1]) : row[a][v];
          _mm512_mask_storeu_ps(out + a * wo_ + j, first(s.cols - j), x);
        }
    }
  }

  // Where a vector's tiles from tq (n of them) go, by runs of one tile row: their outputs'
  // offset in y for output channel 0, where they start in a row of the vector's 64 outputs, and
  // the rows and columns that are outputs. Returns the runs' count (at most 16).
  int64_t runs_of(int64_t tq, int64_t n, Run* runs) const {
    int64_t count = 0;
    for (int64_t l = 0; l < n;) {
      const int64_t t = tq + l, img = t / (th_ * tw_), ty = (t / tw_) % th_, tx = t % tw_;
      const int64_t run = std::min(n - l, tw_ - tx);
      runs[count++] = {((img * c_out_) * ho_ + 4 * ty) * wo_ + 4 * tx, 4 * l,
                       std::min<int64_t>(4, ho_ - 4 * ty), std::min(4 * run, wo_ - 4 * tx)};
      l += run;
    }
    return count;
  }

  const float* x_;
  const float* u_;
  float* y_;
  const float* gy_;
  int64_t c_in_, c_out_, h_, w_, ph_, pw_, ho_, wo_, th_, tw_, tiles_, vecs_, rows_, t_len_;
  int64_t grad_rows_, grad_vecs_;
};

// U[xi][c][k] = (G w[k][c] G^T)[xi], F(4x4)'s G (points 0, +-1, +-2), 16 output channels a
// vector (c_out a multiple of 16; their 9 taps gathered).
EMBER_AVX512 void weights(const float* w, float* u, int64_t c_in, int64_t c_out) {
  constexpr const float(&G)[6][3] = kWinograd4G;
  const __m512i rows =
      _mm512_mullo_epi32(_mm512_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15),
                         _mm512_set1_epi32(int(c_in * 9)));
  parallel_for(c_in, 4, [&](int64_t c0, int64_t c1) EMBER_AVX512 {
    for (int64_t c = c0; c < c1; ++c)
      for (int64_t o = 0; o < c_out; o += 16) {
        const float* g = w + (o * c_in + c) * 9;
        __m512 t[9], s[6][3];
        for (int k = 0; k < 9; ++k) t[k] = _mm512_i32gather_ps(rows, g + k, 4);
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 3; ++j)
            s[i][j] =
                _mm512_fmadd_ps(_mm512_set1_ps(G[i][2]), t[6 + j],
                                _mm512_fmadd_ps(_mm512_set1_ps(G[i][1]), t[3 + j],
                                                _mm512_mul_ps(_mm512_set1_ps(G[i][0]), t[j])));
        for (int i = 0; i < 6; ++i)
          for (int j = 0; j < 6; ++j)
            _mm512_storeu_ps(
                u + ((i * 6 + j) * c_in + c) * c_out + o,
                _mm512_fmadd_ps(s[i][2], _mm512_set1_ps(G[j][2]),
                                _mm512_fmadd_ps(s[i][1], _mm512_set1_ps(G[j][1]),
                                                _mm512_mul_ps(s[i][0], _mm512_set1_ps(G[j][0])))));
      }
  });
}

// part[ab][k][c] = (G^T du[.][k][c] G)[ab] for the 36 points' du[xi][k][c], 16 input channels
// a vector (c_in a multiple of 16).
EMBER_AVX512 void weights_back(const float* du, float* part, int64_t c_in, int64_t c_out) {
  constexpr const float(&G)[6][3] = kWinograd4G;
  const int64_t plane = c_out * c_in;
  for (int64_t kc = 0; kc < plane; kc += 16) {
    __m512 s[6][3];  // (du G)[i][b]
    for (int i = 0; i < 6; ++i) {
      for (int b = 0; b < 3; ++b) s[i][b] = _mm512_setzero_ps();
      for (int j = 0; j < 6; ++j) {
        const __m512 d = _mm512_loadu_ps(du + (i * 6 + j) * plane + kc);
        for (int b = 0; b < 3; ++b)
          if (G[j][b] != 0) s[i][b] = _mm512_fmadd_ps(d, _mm512_set1_ps(G[j][b]), s[i][b]);
      }
    }
    for (int a = 0; a < 3; ++a)
      for (int b = 0; b < 3; ++b) {
        __m512 acc = _mm512_setzero_ps();
        for (int i = 0; i < 6; ++i)
          if (G[i][a] != 0) acc = _mm512_fmadd_ps(s[i][b], _mm512_set1_ps(G[i][a]), acc);
        _mm512_storeu_ps(part + (a * 3 + b) * plane + kc, acc);
      }
  }
}

}  // namespace

bool winograd_fused_fits(int64_t c_in, int64_t c_out) {
  // Up to 384 channels in and out together: V and M of one vector, 36 x 64 bytes a channel, in
  // about a Zen 4's 1 MiB of L2 (8 x 192 -> 192 on 28x28, 2 threads: 7.5 ms against 11.6 for
  // the unfused F(4x4); 8 x 256 -> 256: 31.2 against F(2x2)'s 22.3).
  return cpu_isa() >= CpuIsa::Avx512 && c_out % 16 == 0 && c_in + c_out <= 384;
}

void winograd_fused_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                        int64_t c_out, const Geom& g) {
  Scratch<float> u(kNN * c_in * c_out);
  weights(w, u.get(), c_in, c_out);
  Fused f(x, u.get(), y, n, c_in, c_out, g);
  parallel_for(f.blocks(), 1, [&](int64_t b, int64_t e) {
    Scratch<float> scratch(f.scratch());
    for (int64_t i = b; i < e; ++i) f.run(i, scratch.get());
  });
}

bool winograd_fused_weight_grad_fits(const Geom& g, int64_t c_in, int64_t c_out) {
  // Past 64 channels each, only on images of 49 tiles or more: dU (36 c_out c_in floats a
  // thread) is loaded and stored once a block, and small images make blocks of few tiles
  // (8 x 128 -> 128, 2 threads: on 14x14 3.65 ms against F(3x3, 2x2)'s 2.36; on 28x28 6.2
  // against 7.9, on 56x56 18.4 against 31.9).
  const int64_t tiles = (g.out[1] + 3) / 4 * ((g.out[2] + 3) / 4);
  return winograd_fused_fits(c_in, c_out) && c_in % 16 == 0 && (c_in + c_out <= 128 || tiles >= 49);
}

void winograd_fused_weight_grad_f32(const float* x, const float* gy, float* dw, int64_t n,
                                    int64_t c_in, int64_t c_out, const Geom& g) {
  std::fill(dw, dw + c_out * c_in * 9, 0.0f);
  if (n == 0) return;
  Fused f(x, nullptr, nullptr, n, c_in, c_out, g, gy);
  // A fixed number of chunks of blocks, each summed on one thread and taken to dw's shape, then
  // added in order: the result does not depend on the thread count.
  const int64_t blocks = f.grad_blocks(), chunks = std::min<int64_t>(blocks, 8);
  const int64_t size = c_out * c_in * 9;
  Scratch<float> parts(chunks * size);
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    Scratch<float> scratch(f.grad_scratch()), du(kNN * c_out * c_in);
    // The vectors' lanes past a block's last tile read T past its rows: zeros or earlier rows,
    // never used (the products stop at the last tile), but never garbage either.
    std::fill(scratch.get(), scratch.get() + f.grad_scratch(), 0.0f);
    for (int64_t ch = b; ch < e; ++ch) {
      std::fill(du.get(), du.get() + kNN * c_out * c_in, 0.0f);
      for (int64_t i = ch * blocks / chunks; i < (ch + 1) * blocks / chunks; ++i)
        f.grad_block(i, scratch.get(), du.get());
      weights_back(du.get(), parts.get() + ch * size, c_in, c_out);
    }
  });
  // dw[k][c][ab] = the parts' [ab][k][c], added in order.
  const int64_t plane = c_out * c_in;
  for (int64_t ch = 0; ch < chunks; ++ch)
    for (int64_t kc = 0; kc < plane; ++kc)
      for (int ab = 0; ab < 9; ++ab) dw[kc * 9 + ab] += parts.get()[ch * size + ab * plane + kc];
}

}  // namespace ember::cpu

#else

namespace ember::cpu {
bool winograd_fused_fits(int64_t, int64_t) { return false; }
void winograd_fused_f32(const float*, const float*, float*, int64_t, int64_t, int64_t,
                        const Geom&) {}
bool winograd_fused_weight_grad_fits(const Geom&, int64_t, int64_t) { return false; }
void winograd_fused_weight_grad_f32(const float*, const float*, float*, int64_t, int64_t, int64_t,
                                    const Geom&) {}
}  // namespace ember::cpu

#endif
