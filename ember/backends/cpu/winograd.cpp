#include "ember/backends/cpu/winograd.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string>
#include <type_traits>

#include "ember/backends/cpu/gemm.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {

// The transforms of F(MxM, 3x3): N = M + 2 inputs a tile side; y = A^T [(G w G^T) .* (B^T d B)] A.
template <int M>
struct Tr;
template <>
struct Tr<2> {
  static constexpr int N = 4;
  static constexpr float BT[4][4] = {{1, 0, -1, 0}, {0, 1, 1, 0}, {0, -1, 1, 0}, {0, 1, 0, -1}};
  static constexpr float G[4][3] = {{1, 0, 0}, {0.5f, 0.5f, 0.5f}, {0.5f, -0.5f, 0.5f}, {0, 0, 1}};
  static constexpr float AT[2][4] = {{1, 1, 1, 0}, {0, 1, -1, -1}};
};
template <>
struct Tr<4> {  // interpolation points 0, 1, -1, 2, -2 and infinity
  static constexpr int N = 6;
  static constexpr float BT[6][6] = {{4, 0, -5, 0, 1, 0},  {0, -4, -4, 1, 1, 0},
                                     {0, 4, -4, -1, 1, 0}, {0, -2, -1, 2, 1, 0},
                                     {0, 2, -1, -2, 1, 0}, {0, 4, 0, -5, 0, 1}};
  static constexpr const float (&G)[6][3] = kWinograd4G;
  static constexpr float AT[4][6] = {
      {1, 1, 1, 1, 1, 0}, {0, 1, -1, 2, -2, 0}, {0, 1, 1, 4, 4, 0}, {0, 1, -1, 8, -8, 1}};
};

// The transforms run 8 tiles at a time on vectors (one AVX register; two SSE ones), the last
// few one by one: the same templates on both.
typedef float vf __attribute__((vector_size(32)));
constexpr int kLanes = 8;
template <class F>
inline F load(const float* p) {
  if constexpr (std::is_same_v<F, float>) {
    return *p;
  } else {
    F v;
    std::memcpy(&v, p, sizeof v);
    return v;
  }
}
template <class F>
inline void store(float* p, F v) {
  if constexpr (std::is_same_v<F, float>)
    *p = v;
  else
    std::memcpy(p, &v, sizeof v);
}

// dst[0, n) = src[0, n) for the short rows of the transforms, in vectors (the last one ending
// at n, over the one before), not a call to memcpy: these copies are a few vectors each.
inline void copy_floats(float* dst, const float* src, int64_t n) {
  if (n < kLanes) {
    for (int64_t i = 0; i < n; ++i) dst[i] = src[i];
    return;
  }
  for (int64_t i = 0; i + kLanes < n; i += kLanes) store<vf>(dst + i, load<vf>(src + i));
  store<vf>(dst + n - kLanes, load<vf>(src + n - kLanes));
}

// sum_k c[k] x[k] for a constant row c: zero coefficients skipped, +-1 without a multiply.
template <class F, int K>
[[gnu::always_inline]] inline F combine(const float (&c)[K], const F (&x)[K]) {
  F acc{};
  bool first = true;
#pragma GCC unroll 8
  for (int k = 0; k < K; ++k) {
    if (c[k] == 0) continue;
    F term = c[k] == 1 ? x[k] : c[k] == -1 ? -x[k] : x[k] * c[k];
    acc = first ? term : acc + term;
    first = false;
  }
  return acc;
}

// r = B^T x for one column (or row) x of a tile. F(4x4)'s with shared sums and differences: 14
// operations where the rows of B^T one by one take 22 (a third of the input transform's time).
template <class F, int M>
[[gnu::always_inline]] inline void bt(const F (&x)[Tr<M>::N], F (&r)[Tr<M>::N]) {
  if constexpr (M == 4) {
    const F s13 = x[1] + x[2], d21 = x[1] - x[2], s34 = x[3] + x[4], d43 = x[4] - x[3];
    const F d42 = x[4] - x[2], d31 = x[3] - x[1];
    r[0] = x[4] + x[0] * 4.0f - x[2] * 5.0f;
    r[1] = s34 - s13 * 4.0f;
    r[2] = d43 + d21 * 4.0f;
    r[3] = d42 + d31 * 2.0f;
    r[4] = d42 - d31 * 2.0f;
    r[5] = x[5] + x[1] * 4.0f - x[3] * 5.0f;
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < Tr<M>::N; ++i) r[i] = combine<F, Tr<M>::N>(Tr<M>::BT[i], x);
  }
}

// o = A^T x for one column (or row) x of a tile's products; F(4x4)'s with shared sums: 10
// operations instead of 18.
template <class F, int M>
[[gnu::always_inline]] inline void at(const F (&x)[Tr<M>::N], F (&o)[M]) {
  if constexpr (M == 4) {
    const F s12 = x[1] + x[2], d12 = x[1] - x[2], s34 = x[3] + x[4], d34 = x[3] - x[4];
    o[0] = x[0] + s12 + s34;
    o[1] = d12 + d34 * 2.0f;
    o[2] = s12 + s34 * 4.0f;
    o[3] = d12 + d34 * 8.0f + x[5];
  } else {
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) o[i] = combine<F, Tr<M>::N>(Tr<M>::AT[i], x);
  }
}

// B^T d B for tiles whose inputs of window column c are read from col[c] (a tile a float,
// 8 tiles a vector), window rows `pitch` apart; into N * N planes of v, `plane` apart.
template <class F, int M>
[[gnu::always_inline]] inline void input_tile(const float* const* col, int64_t pitch, float* v,
                                              int64_t plane) {
  constexpr int N = Tr<M>::N;
  // A column of d at a time (its N loads, then B^T d's column), so that only t and one column
  // are live, not all N * N inputs.
  F t[N][N];  // t[i][column] = (B^T d)[i][column]
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c) {
    F d[N], r[N];
#pragma GCC unroll 8
    for (int k = 0; k < N; ++k) d[k] = load<F>(col[c] + k * pitch);
    bt<F, M>(d, r);
#pragma GCC unroll 8
    for (int i = 0; i < N; ++i) t[i][c] = r[i];
  }
  // (B^T d) B: row i of t times B, that is B^T times row i.
#pragma GCC unroll 8
  for (int i = 0; i < N; ++i) {
    F r[N];
    bt<F, M>(t[i], r);
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) store<F>(v + (i * N + j) * plane, r[j]);
  }
}

// A^T m A of tiles whose N * N values are `plane` apart from m: r[row][column].
template <class F, int M>
[[gnu::always_inline]] inline void output_tile(const float* m, int64_t plane, F (&r)[M][M]) {
  constexpr int N = Tr<M>::N;
  F q[M][N];  // (A^T m)[i][c], a column of m at a time
#pragma GCC unroll 8
  for (int c = 0; c < N; ++c) {
    F col[N], o[M];
#pragma GCC unroll 8
    for (int row = 0; row < N; ++row) col[row] = load<F>(m + (row * N + c) * plane);
    at<F, M>(col, o);
#pragma GCC unroll 8
    for (int i = 0; i < M; ++i) q[i][c] = o[i];
  }
#pragma GCC unroll 8
  for (int i = 0; i < M; ++i) at<F, M>(q[i], r[i]);
}

// The even and odd elements of the 16 floats a, b.
inline void deinterleave2(vf a, vf b, vf& even, vf& odd) {
  even = __builtin_shufflevector(a, b, 0, 2, 4, 6, 8, 10, 12, 14);
  odd = __builtin_shufflevector(a, b, 1, 3, 5, 7, 9, 11, 13, 15);
}
// p[k][l] = x[M l + k] for 8 lanes: 8 M floats of x split by their position modulo M.
template <int M>
inline void split(const float* x, vf (&p)[M]) {
  if constexpr (M == 2) {
    deinterleave2(load<vf>(x), load<vf>(x + kLanes), p[0], p[1]);
  } else {
    vf e01, o01, e23, o23;
    deinterleave2(load<vf>(x), load<vf>(x + kLanes), e01, o01);
    deinterleave2(load<vf>(x + 2 * kLanes), load<vf>(x + 3 * kLanes), e23, o23);
    deinterleave2(e01, e23, p[0], p[2]);
    deinterleave2(o01, o23, p[1], p[3]);
  }
}
template <int M>
inline void split_phases(const float* x, float* const* phase, int64_t at) {
  vf p[M];
  split<M>(x, p);
  for (int k = 0; k < M; ++k) store<vf>(phase[k] + at, p[k]);
}

// y[2 l] = a[l], y[2 l + 1] = b[l] for the 8 lanes (16 floats).
inline void interleave2(vf a, vf b, vf& lo, vf& hi) {
  lo = __builtin_shufflevector(a, b, 0, 8, 1, 9, 2, 10, 3, 11);
  hi = __builtin_shufflevector(a, b, 4, 12, 5, 13, 6, 14, 7, 15);
}
// y[M l + j] = r[j][l] for the 8 lanes: one output row of 8 tiles.
template <int M>
inline void store_row(float* y, const vf (&r)[M]) {
  vf a, b;
  if constexpr (M == 2) {
    interleave2(r[0], r[1], a, b);
    store<vf>(y, a);
    store<vf>(y + kLanes, b);
  } else {
    vf lo02, hi02, lo13, hi13, x0, x1, x2, x3;
    interleave2(r[0], r[2], lo02, hi02);
    interleave2(r[1], r[3], lo13, hi13);
    interleave2(lo02, lo13, x0, x1);
    interleave2(hi02, hi13, x2, x3);
    store<vf>(y, x0);
    store<vf>(y + kLanes, x1);
    store<vf>(y + 2 * kLanes, x2);
    store<vf>(y + 3 * kLanes, x3);
  }
}

// g = the 3x3 kernel from input channel c to output channel o: w[o][c], or with `transposed`,
// of a transposed conv's weight w [c_in, c_out, 3, 3] (a conv's input gradient), w[c][o] turned
// around (turned_weights's element, read in place).
inline void kernel_of(const float* w, bool transposed, int64_t o, int64_t c, int64_t c_in,
                      int64_t c_out, float* g) {
  if (!transposed) {
    std::copy_n(w + (o * c_in + c) * 9, 9, g);
    return;
  }
  const float* k = w + (c * c_out + o) * 9;
  for (int t = 0; t < 9; ++t) g[t] = k[8 - t];
}

// U = G w G^T straight into the micro-kernel's packed layout (pack_a's, mr rows a panel): U[xi]'s
// element (o, c) at up + xi * up_stride + (o / mr) * mr * c_in + c * mr + o % mr, the rows past
// c_out zero. A block of channels of a panel at a time through a small buffer, each of the NN
// matrices then written as one run: written in place, value by value, the NN stores of a kernel
// went to rows a power of two apart (1 MiB for 512 x 512), all in the same cache sets, and
// transforming and then packing 512 x 512 weights took 9 ms; one thread transformed them in 11.7
// ms by the stores in place, 3.9 through the buffer (the rest is writing 16 MiB).
template <int M>
void weight_transform_packed(const float* w, bool transposed, float* up, int64_t up_stride,
                             int64_t c_in, int64_t c_out, int64_t mr) {
  constexpr int N = Tr<M>::N;
  constexpr int64_t kBlock = 16;  // channels a block
  const int64_t panels = (c_out + mr - 1) / mr;
  parallel_for(panels, 1, [&](int64_t p0, int64_t p1) {
    std::vector<float> buf(static_cast<size_t>(N * N * kBlock * mr));
    for (int64_t pnl = p0; pnl < p1; ++pnl)
      for (int64_t c0 = 0; c0 < c_in; c0 += kBlock) {
        const int64_t nc = std::min(kBlock, c_in - c0), run = nc * mr;
        for (int64_t c = 0; c < nc; ++c)
          for (int64_t r = 0; r < mr; ++r) {
            const int64_t o = pnl * mr + r, at = c * mr + r;
            if (o >= c_out) {
              for (int xi = 0; xi < N * N; ++xi) buf[size_t(xi * run + at)] = 0.0f;
              continue;
            }
            float g[9];  // the kernel of output o and input c0 + c
            kernel_of(w, transposed, o, c0 + c, c_in, c_out, g);
            float s[N][3];  // G g
            for (int i = 0; i < N; ++i)
              for (int j = 0; j < 3; ++j)
                s[i][j] =
                    Tr<M>::G[i][0] * g[j] + Tr<M>::G[i][1] * g[3 + j] + Tr<M>::G[i][2] * g[6 + j];
            for (int i = 0; i < N; ++i)
              for (int j = 0; j < N; ++j)
                buf[size_t((i * N + j) * run + at)] =
                    s[i][0] * Tr<M>::G[j][0] + s[i][1] * Tr<M>::G[j][1] + s[i][2] * Tr<M>::G[j][2];
          }
        for (int xi = 0; xi < N * N; ++xi)
          std::copy_n(buf.data() + xi * run, run, up + xi * up_stride + pnl * mr * c_in + c0 * mr);
      }
  });
}

// One chunk: tile rows [ty0, ty1) of image `img`.
struct Chunk {
  int64_t img, ty0, ty1;
};

template <int M>
class Plan {
  static constexpr int N = Tr<M>::N, NN = N * N;
  // Floats a chunk's transformed inputs and products aim at (whole tile rows, at least one):
  // 512 KiB, about what stays in L2 from the input transform through the products to the
  // output transform (32 -> 32 on 32x32: 5.6 ms on one thread at 256 KiB, 5.4 at 512).
  static constexpr int64_t kChunkFloats = 128 * 1024;

 public:
  // up: the NN matrices U[xi] (c_out x c_in), each packed by pg.pack_a, up_stride apart.
  Plan(const float* x, const float* up, int64_t up_stride, float* y, int64_t c_in, int64_t c_out,
       const Geom& g, const PanelGemmF32& pg)
      : x_(x), up_(up), up_stride_(up_stride), y_(y), c_in_(c_in), c_out_(c_out), g_(g), pg_(pg) {
    ho_ = g.out[1], wo_ = g.out[2], th_ = (ho_ + M - 1) / M, tw_ = (wo_ + M - 1) / M;
    flat_ = tw_ < kLanes;
    // The tile rows, up to the budget, whose tiles fill the micro-kernel's columns best (8 tiles
    // a row and 16 columns: 2 rows, not 3, whose 24 tiles would pad to 32). The budget's bound
    // is raised to the rows that make one panel of columns where it allows fewer: deep channels
    // over small images otherwise ran chunks of a tile row padded to a panel (256 -> 256 on
    // 14x14 with F(4x4): 4 tiles of 16 columns, 20.1 ms against 10.3 so; 512 -> 512 on 7x7 with
    // F(2x2): 20.2 against 14.3; 2 threads of an AVX2 CPU).
    const int64_t least = std::min(th_, (pg.nr + tw_ - 1) / tw_);
    const int64_t most =
        std::clamp<int64_t>(kChunkFloats / (NN * (c_in + c_out)) / tw_, least, th_);
    rows_ = 1;
    for (int64_t r = 2; r <= most; ++r)
      if (r * tw_ * padded_tiles(rows_ * tw_) >= rows_ * tw_ * padded_tiles(r * tw_)) rows_ = r;
    ld_ = padded_tiles(rows_ * tw_);
    // The NN planes of V and of the products: not a multiple of 4 KiB apart, where the
    // transforms' NN loads or stores of one tile vector would all fall in the same L1 sets
    // (32 -> 32 channels on 32x32 took 7.4 ms on one thread with planes 8 KiB apart, 6.3 so).
    plane_v_ = skewed(c_in_ * ld_), plane_m_ = skewed(c_out_ * ld_);
  }
  int64_t chunks_per_image() const { return (th_ + rows_ - 1) / rows_; }
  Chunk chunk(int64_t i) const {
    int64_t per = chunks_per_image(), r = i % per;
    return {i / per, r * rows_, std::min(th_, (r + 1) * rows_)};
  }
  // Zeros in the flat phase arrays, which the vectors past a chunk's last tile row read before
  // anything is written there (never NaN or denormal garbage; once a thread's scratch).
  void prepare_scratch(float* scratch) const {
    if (!flat_) return;
    std::fill_n(scratch + NN * (plane_v_ + plane_m_), NN * flat_len(), 0.0f);
    // V's columns past the last vector of the shortest chunk (the padding for the micro-kernel's
    // panels, some of which longer chunks write): zeros, never what the memory held.
    const int64_t fewest = th_ % rows_ ? th_ % rows_ : rows_;
    const int64_t ntv = (fewest * tw_ + kLanes - 1) / kLanes * kLanes;
    for (int xi = 0; xi < NN; ++xi)
      for (int64_t c = 0; c < c_in_; ++c)
        std::fill(scratch + xi * plane_v_ + c * ld_ + ntv, scratch + xi * plane_v_ + (c + 1) * ld_,
                  0.0f);
  }
  // Scratch floats one chunk needs.
  int64_t scratch() const {
    const int64_t padded_rows = M * in_rows(rows_) * pitch();
    return NN * (plane_v_ + plane_m_) + padded_rows + (flat_ ? NN * flat_len() : padded_rows);
  }

  // V[xi] and the products M[xi] are matrices of the chunk's tiles (padded to whole micro-kernel
  // columns), rows ld_ apart: the micro-kernel reads V where the input transform wrote it.
  void run(const Chunk& ch, float* scratch) const {
    const int64_t nt = (ch.ty1 - ch.ty0) * tw_, ntp = padded_tiles(nt);
    float* v = scratch;
    float* m = v + NN * plane_v_;
    float* phases = m + NN * plane_m_;
    for (int64_t c = 0; c < c_in_; ++c) {
      if (flat_)
        input_transform_flat(ch, c, phases, v);
      else
        input_transform(ch, c, phases, v);
    }
    for (int xi = 0; xi < NN && !flat_; ++xi)  // zeros in the padding columns, not what was left
      for (int64_t c = 0; c < c_in_ && ntp > nt; ++c)
        std::fill_n(v + xi * plane_v_ + c * ld_ + nt, ntp - nt, 0.0f);
    for (int xi = 0; xi < NN; ++xi)
      pg_.run(c_out_, ntp, c_in_, up_ + xi * up_stride_, v + xi * plane_v_, ld_, m + xi * plane_m_,
              ld_);
    for (int64_t o = 0; o < c_out_; ++o) {
      if (flat_)
        output_transform_flat(ch, o, m);
      else
        output_transform(ch, o, m);
    }
  }

 private:
  // Tiles padded to whole panels of the micro-kernel's columns, or to half of one on AVX-512
  // (32 columns) where they fit: the micro-kernel of one vector takes them (a 7x7 image's 16
  // tiles of F(2x2) had run as 32, half of the products' work thrown away).
  int64_t padded_tiles(int64_t nt) const {
    const int64_t q = pg_.nr >= 32 && nt <= pg_.nr / 2 ? pg_.nr / 2 : pg_.nr;
    return (nt + q - 1) / q * q;
  }
  // n floats rounded up to 64 bytes, and 64 more.
  static int64_t skewed(int64_t n) { return (n + 15) / 16 * 16 + 16; }
  static int64_t in_rows(int64_t tile_rows) { return M * tile_rows + 2; }
  // Entries a phase row holds: the tw + 1 each tile row reads, rounded up to whole vectors.
  int64_t pitch() const { return (tw_ + 1 + kLanes - 1) / kLanes * kLanes; }
  // Entries of a flat phase array: a chunk's tile rows end to end, tw_ apart, and what the
  // vectors read past them (up to V's padded columns, and the next entry), in whole vectors.
  int64_t flat_len() const { return ld_ + kLanes; }

  // Copies the chunk's input rows of channel c, each zero-padded to M * pitch() columns from
  // -pw on, to `rows`; rows outside the image are left out (`zeros`: written as zeros).
  void pad_rows(const Chunk& ch, int64_t c, float* rows, bool zeros) const {
    const int64_t H = g_.in[1], W = g_.in[2], ph = g_.p[1], pw = g_.p[2];
    const int64_t pr = in_rows(ch.ty1 - ch.ty0), half = pitch();
    const float* plane = x_ + (ch.img * c_in_ + c) * H * W;
    // The next channel's rows are fetched meanwhile: read as the copies below, one row at a
    // time, they came from memory at a fifth of its bandwidth (the copies took 13% of a
    // 32 -> 32 conv on 32x32; with this, its time fell from 5.1 to 4.8 ms on one thread).
    for (int64_t r = 0; r < pr && c + 1 < c_in_; ++r) {
      const int64_t iy = M * ch.ty0 - ph + r;
      if (iy < 0 || iy >= H) continue;
      for (int64_t j = 0; j < W; j += 16) __builtin_prefetch(plane + (H + iy) * W + j);
    }
    const int64_t lo = std::min(pw, M * half), hi = std::clamp<int64_t>(W + pw, lo, M * half);
    for (int64_t r = 0; r < pr; ++r) {
      const int64_t iy = M * ch.ty0 - ph + r;
      const bool inside = iy >= 0 && iy < H;
      if (!inside && !zeros) continue;
      float* row = rows + r * M * half;
      if (half == kLanes)  // the flat layout's rows: M vectors (a loop of M * half is a memset)
        for (int j = 0; j < M; ++j) store<vf>(row + j * kLanes, vf{});
      else
        std::fill(row, row + M * half, 0.0f);
      if (inside) copy_floats(row + lo, plane + iy * W + (lo - pw), hi - lo);
    }
  }

  // input_transform for tile rows of fewer than 8 tiles, which would leave a vector's lanes
  // idle: the chunk's tile rows are laid end to end, so that a vector takes 8 consecutive tiles
  // across rows. Array (c, r) holds, for every tile of the chunk in that order, its input at
  // window row r and column c; V's columns follow the same order.
  void input_transform_flat(const Chunk& ch, int64_t c, float* phases, float* v) const {
    const int64_t rows = ch.ty1 - ch.ty0, len = flat_len(), half = pitch();
    float* padded = phases + N * N * len;
    pad_rows(ch, c, padded, true);
    // Each padded row split once into its M phases, which are window columns 0 to M - 1 of
    // the row's tiles, and the first N - M of them a tile on (a lane down), columns M to N - 1;
    // stored for the one or two tile rows that read the row (as window row r). 8 tiles a
    // vector: the next tile row's, stored later, overwrite those past tw.
    for (int64_t row = 0; row < in_rows(rows); ++row) {
      vf phase[M], p[N];
      split<M>(padded + row * M * half, phase);
      for (int c = 0; c < N; ++c)
        p[c] = c < M ? phase[c]
                     : __builtin_shufflevector(phase[c - M], phase[c - M], 1, 2, 3, 4, 5, 6, 7, 7);
      for (int64_t ty = std::max<int64_t>(0, (row - N + M) / M); ty <= std::min(row / M, rows - 1);
           ++ty)
        for (int c = 0; c < N; ++c)
          store<vf>(phases + (c * N + row - M * ty) * len + ty * tw_, p[c]);
    }
    // The last vector's lanes past the last tile row read what an earlier chunk or channel left
    // there, or the zeros the scratch started with (prepare_scratch); like V's padding columns
    // past them, those columns of the products are never stored.
    const int64_t nt = rows * tw_;
    for (int64_t t = 0; t < nt; t += kLanes) {
      const float* q[N];
      for (int k = 0; k < N; ++k) q[k] = phases + k * N * len + t;
      input_tile<vf, M>(q, len, v + c * ld_ + t, plane_v_);
    }
  }

  // V[xi][c][tile] for the chunk's tiles of channel c. The input rows they read go first to M
  // phase arrays (phase k: the zero-padded row's columns M i + k), so that every tile reads
  // them at consecutive positions.
  void input_transform(const Chunk& ch, int64_t c, float* phases, float* v) const {
    const int64_t H = g_.in[1], ph = g_.p[1];
    const int64_t pr = in_rows(ch.ty1 - ch.ty0), half = pitch();
    // Each input row, zero-padded to M * half columns (from -pw on), then split by phase: all
    // rows padded first, so that the split does not load what the copy has just stored (a
    // store-forwarding stall on most of its loads, a fifth of the transform's time).
    float* rows = phases + M * pr * half;
    pad_rows(ch, c, rows, false);
    for (int64_t r = 0; r < pr; ++r) {
      const int64_t iy = M * ch.ty0 - ph + r;
      float* dst[M];
      for (int k = 0; k < M; ++k) dst[k] = phases + (k * pr + r) * half;
      if (iy < 0 || iy >= H) {
        for (int k = 0; k < M; ++k) std::fill(dst[k], dst[k] + half, 0.0f);
        continue;
      }
      for (int64_t i = 0; i < half; i += kLanes)
        split_phases<M>(rows + r * M * half + M * i, dst, i);
    }
    const int64_t plane_v = plane_v_;
    for (int64_t ty = ch.ty0; ty < ch.ty1; ++ty) {
      const int64_t r0 = M * (ty - ch.ty0);
      float* out = v + c * ld_ + (ty - ch.ty0) * tw_;
      const float* p[M];
      for (int k = 0; k < M; ++k) p[k] = phases + (k * pr + r0) * half;
      // Window column c of tile tx: phase c % M, entry tx + c / M.
      auto columns = [&](int64_t tx, const float*(&q)[N]) {
        for (int c = 0; c < N; ++c) q[c] = p[c % M] + tx + c / M;
      };
      auto vector_at = [&](int64_t tx) {
        const float* q[N];
        columns(tx, q);
        input_tile<vf, M>(q, half, out + tx, plane_v);
      };
      int64_t tx = 0;
      for (; tx + kLanes <= tw_; tx += kLanes) vector_at(tx);
      // The last few tiles as the vector ending there (recomputing some: same values).
      if (tx < tw_ && tw_ >= kLanes) vector_at(tw_ - kLanes), tx = tw_;
      for (; tx < tw_; ++tx) {
        const float* q[N];
        columns(tx, q);
        input_tile<float, M>(q, half, out + tx, plane_v);
      }
    }
  }

  // output_transform for V's columns laid out by input_transform_flat: each vector's 8 tiles
  // interleaved into rows of a small buffer, then copied out by runs of tiles of one tile row.
  void output_transform_flat(const Chunk& ch, int64_t o, const float* m) const {
    float* out_plane = y_ + (ch.img * c_out_ + o) * ho_ * wo_;
    const float* src = m + o * ld_;
    const int64_t nt = (ch.ty1 - ch.ty0) * tw_;
    for (int64_t t = 0; t < nt; t += kLanes) {
      vf r[M][M];
      output_tile<vf, M>(src + t, plane_m_, r);
      float buf[M][M * kLanes];
      for (int i = 0; i < M; ++i) store_row<M>(buf[i], r[i]);
      for (int64_t l = 0; l < kLanes && t + l < nt;) {
        const int64_t ty = ch.ty0 + (t + l) / tw_, tx = (t + l) % tw_;
        const int64_t run = std::min<int64_t>(kLanes - l, tw_ - tx), oy = M * ty;
        const int64_t rows = std::min<int64_t>(M, ho_ - oy), cols = std::min(M * run, wo_ - M * tx);
        for (int64_t i = 0; i < rows; ++i)
          copy_floats(out_plane + (oy + i) * wo_ + M * tx, buf[i] + M * l, cols);
        l += run;
      }
    }
  }

  // The chunk's outputs of channel o.
  void output_transform(const Chunk& ch, int64_t o, const float* m) const {
    const int64_t plane_m = plane_m_;
    float* out_plane = y_ + (ch.img * c_out_ + o) * ho_ * wo_;
    const int64_t full = wo_ / M;  // tiles whose M columns are all outputs
    for (int64_t ty = ch.ty0; ty < ch.ty1; ++ty) {
      const float* src = m + o * ld_ + (ty - ch.ty0) * tw_;
      const int64_t oy = M * ty, rows = std::min<int64_t>(M, ho_ - oy);
      float* y = out_plane + oy * wo_;
      auto vector_at = [&](int64_t tx) {
        vf r[M][M];
        output_tile<vf, M>(src + tx, plane_m, r);
        for (int i = 0; i < rows; ++i) store_row<M>(y + i * wo_ + M * tx, r[i]);
      };
      int64_t tx = 0;
      for (; tx + kLanes <= full; tx += kLanes) vector_at(tx);
      if (tx < full && full >= kLanes) vector_at(full - kLanes), tx = full;
      for (; tx < tw_; ++tx) {
        float r[M][M];
        output_tile<float, M>(src + tx, plane_m, r);
        const int64_t cols = std::min<int64_t>(M, wo_ - M * tx);
        for (int i = 0; i < rows; ++i)
          for (int j = 0; j < cols; ++j) y[i * wo_ + M * tx + j] = r[i][j];
      }
    }
  }

  const float* x_;
  const float* up_;
  int64_t up_stride_;
  float* y_;
  int64_t c_in_, c_out_;
  Geom g_;
  const PanelGemmF32& pg_;
  bool flat_;
  int64_t ho_, wo_, th_, tw_, rows_, ld_, plane_v_, plane_m_;
};

template <int M>
void run(const float* x, const float* w, bool transposed, float* y, int64_t n, int64_t c_in,
         int64_t c_out, const Geom& g) {
  constexpr int NN = Tr<M>::N * Tr<M>::N;
  // Each U[xi] packed once for the micro-kernel, which reads it for every chunk.
  const PanelGemmF32& pg = panel_gemm_f32();
  const int64_t up_stride = (c_out + pg.mr - 1) / pg.mr * pg.mr * c_in;
  Scratch<float> up(NN * up_stride);
  weight_transform_packed<M>(w, transposed, up.get(), up_stride, c_in, c_out, pg.mr);
  Plan<M> plan(x, up.get(), up_stride, y, c_in, c_out, g, pg);
  const int64_t chunks = n * plan.chunks_per_image();
  parallel_for(chunks, 1, [&](int64_t b, int64_t e) {
    Scratch<float> scratch(plan.scratch());
    plan.prepare_scratch(scratch.get());
    for (int64_t i = b; i < e; ++i) plan.run(plan.chunk(i), scratch.get());
  });
}

int tile_env() {
  const char* e = std::getenv("EMBER_CPU_WINOGRAD");
  return e ? std::atoi(e) : -1;  // 0: off, 2 or 4: that tile, else chosen
}

}  // namespace

bool winograd_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out) {
  static const bool off = tile_env() == 0;
  if (off || groups != 1 || c_in < 16 || c_out < 16) return false;
  if (g.in[0] != 1 || g.k[0] != 1 || g.k[1] != 3 || g.k[2] != 3) return false;
  for (int i = 1; i < 3; ++i) {
    if (g.s[i] != 1 || g.d[i] != 1 || g.p[i] < 0 || g.p[i] > 2) return false;
    if (g.out[i] != g.in[i] + 2 * g.p[i] - 2 || g.out[i] < 2) return false;
  }
  return true;
}

bool winograd_pays(const Geom& g, int64_t n, int64_t c_in, int64_t c_out) {
  static const int forced = tile_env();
  if (forced == 2 || forced == 4) return true;
  const int64_t m = winograd_tile(g, c_in, c_out), outputs = n * g.out[1] * g.out[2];
  if (m == 4 && winograd_fused_fits(c_in, c_out)) return outputs >= 128;
  const int64_t tiles = (g.out[1] + m - 1) / m * ((g.out[2] + m - 1) / m);
  return tiles >= 16 && outputs >= 196;
}

bool winograd_rows_end_to_end(const Geom& g) { return (g.out[2] + 3) / 4 < kLanes; }

int winograd_tile(const Geom& g, int64_t c_in, int64_t c_out) {
  static const int forced = tile_env();
  if (forced == 2 || forced == 4) return forced;
  // AVX-512's F(4x4) with every step on a thread's small buffers (winograd_avx512.cpp) was ahead
  // of F(2x2), of the F(4x4) below and of the direct kernels on every shape measured
  // (docs/cpu-measurements.md).
  if (winograd_fused_fits(c_in, c_out)) return 4;
  const int64_t th = (g.out[1] + 3) / 4, tw = (g.out[2] + 3) / 4;
  if (g.out[1] < 8) return 2;
  if (!winograd_rows_end_to_end(g)) return c_in >= 32 && c_out >= 32 ? 4 : 2;
  // Rows of fewer than 8 tiles (laid end to end): F(4x4) on images of 16 tiles or more, up to
  // three times as many channels as tiles, past which a chunk holds too few tiles for the
  // GEMM's columns (measured on AVX2, docs/cpu-measurements.md).
  return th * tw >= 16 && std::max(c_in, c_out) <= 3 * th * tw ? 4 : 2;
}

void winograd_conv_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                       int64_t c_out, const Geom& g, int tile, bool transposed) {
  if (tile == 0) tile = winograd_tile(g, c_in, c_out);
  if (tile == 4 && winograd_fused_fits(c_in, c_out)) {
    if (!transposed) return winograd_fused_f32(x, w, y, n, c_in, c_out, g);
    Scratch<float> wf(c_out * c_in * 9);
    turned_weights(w, c_in, c_out, 9, wf.get());
    return winograd_fused_f32(x, wf.get(), y, n, c_in, c_out, g);
  }
  if (tile == 4)
    run<4>(x, w, transposed, y, n, c_in, c_out, g);
  else
    run<2>(x, w, transposed, y, n, c_in, c_out, g);
}

}  // namespace ember::cpu
