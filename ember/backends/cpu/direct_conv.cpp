#include "ember/backends/cpu/direct_conv.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <string_view>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/strided.h"
#include "ember/backends/cpu/winograd.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {

constexpr int64_t kRows = 8;           // output channels a task holds
constexpr int64_t kLanes = 16;         // an AVX-512 vector of floats
constexpr int64_t kSpan = 2 * kLanes;  // output positions a task holds per row pass

#if defined(__x86_64__)
// Two vectors of outputs for 8 channels: y[r][ow] for ow in [0, ow_n), r < rows, summing over
// `taps` = c_in * kh * kw inputs: tap t reads the padded input at base + offsets[t] + ow (its
// channel's row and column shift); `wp` holds the channel block's weights [taps][8]. The
// second vector is the next 16 positions of the row (rows of more than 16 outputs), or the
// same positions of the next output row (`next_in` and `next_out` apart; `two_rows`, with
// `second_row` false when there is none), so that short rows fill both.
struct Pass {
  bool two_rows;
  int64_t next_in, next_out;
  bool second_row;
};
__attribute__((target("avx512f"))) void row_block(const float* base, const int64_t* offsets,
                                                  int64_t taps, const float* wp, float* const* y,
                                                  int64_t rows, int64_t ow_n, const Pass& pass) {
  const int64_t step = pass.two_rows ? kLanes : kSpan;
  const int64_t in1 = pass.two_rows ? pass.next_in : kLanes;
  const int64_t out1 = pass.two_rows ? pass.next_out : kLanes;
  for (int64_t ow = 0; ow < ow_n; ow += step) {
    __m512 c00 = _mm512_setzero_ps(), c01 = c00, c10 = c00, c11 = c00, c20 = c00, c21 = c00,
           c30 = c00, c31 = c00, c40 = c00, c41 = c00, c50 = c00, c51 = c00, c60 = c00, c61 = c00,
           c70 = c00, c71 = c00;
    const float* w = wp;
    for (int64_t t = 0; t < taps; ++t, w += kRows) {
      const float* src = base + offsets[t] + ow;
      const __m512 x0 = _mm512_loadu_ps(src), x1 = _mm512_loadu_ps(src + in1);
      __m512 a;
#define EMBER_DIRECT_ROW(i)                  \
  a = _mm512_set1_ps(w[i]);                  \
  c##i##0 = _mm512_fmadd_ps(a, x0, c##i##0); \
  c##i##1 = _mm512_fmadd_ps(a, x1, c##i##1);
      EMBER_DIRECT_ROW(0)
      EMBER_DIRECT_ROW(1)
      EMBER_DIRECT_ROW(2)
      EMBER_DIRECT_ROW(3)
      EMBER_DIRECT_ROW(4)
      EMBER_DIRECT_ROW(5)
      EMBER_DIRECT_ROW(6)
      EMBER_DIRECT_ROW(7)
#undef EMBER_DIRECT_ROW
    }
    auto mask = [](int64_t n) {
      return n >= kLanes ? __mmask16(0xffff) : n <= 0 ? __mmask16(0) : __mmask16((1u << n) - 1);
    };
    const int64_t n = ow_n - ow;
    const __mmask16 m0 = mask(n);
    const __mmask16 m1 = pass.two_rows ? (pass.second_row ? m0 : __mmask16(0)) : mask(n - kLanes);
    const __m512 out[kRows][2] = {{c00, c01}, {c10, c11}, {c20, c21}, {c30, c31},
                                  {c40, c41}, {c50, c51}, {c60, c61}, {c70, c71}};
    for (int64_t r = 0; r < rows; ++r) {
      _mm512_mask_storeu_ps(y[r] + ow, m0, out[r][0]);
      _mm512_mask_storeu_ps(y[r] + ow + out1, m1, out[r][1]);
    }
  }
}
#endif

}  // namespace

bool direct_conv_disabled() {
  static const bool off = [] {
    const char* e = std::getenv("EMBER_CPU_DIRECT_CONV");
    return e && std::string_view(e) == "0";
  }();
  return off;
}

bool direct_geometry_fits(const Geom& g, int64_t groups) {
#if defined(__x86_64__)
  if (direct_conv_disabled() || cpu_isa() < CpuIsa::Avx2 || groups != 1) return false;
  if (g.in[0] != 1 || g.k[0] != 1) return false;
  for (int i = 1; i < 3; ++i)
    if (g.s[i] != 1 || g.d[i] != 1 || g.p[i] < 0 || g.p[i] >= g.k[i]) return false;
  return true;
#else
  (void)g, (void)groups;
  return false;
#endif
}

void pad_planes(const float* x, int64_t planes, int64_t H, int64_t W, int64_t Hp, int64_t Wp,
                int64_t ph, int64_t pw, float* dst) {
  parallel_for(planes, std::max<int64_t>(1, kGrain / (Hp * Wp)), [&](int64_t b, int64_t e) {
    // each float written once: the image's rows with their zero margins, zero rows around them
    const int64_t cols = std::clamp<int64_t>(Wp - pw, 0, W);
    for (int64_t p = b; p < e; ++p)
      for (int64_t r = 0; r < Hp; ++r) {
        float* row = dst + (p * Hp + r) * Wp;
        const int64_t h = r - ph;
        if (h < 0 || h >= H || cols == 0) {
          std::memset(row, 0, sizeof(float) * size_t(Wp));
          continue;
        }
        std::memset(row, 0, sizeof(float) * size_t(pw));
        std::memcpy(row + pw, x + (p * H + h) * W, sizeof(float) * size_t(cols));
        std::memset(row + pw + cols, 0, sizeof(float) * size_t(Wp - pw - cols));
      }
  });
}

void copy_band(const float* x, int64_t c_in, int64_t H, int64_t W, int64_t ih0, int64_t rows,
               int64_t pw, int64_t Wp, int64_t plane, float* dst) {
  const int64_t cols = std::min(W, Wp - pw);
  for (int64_t ic = 0; ic < c_in; ++ic)
    for (int64_t r = 0; r < rows; ++r) {
      float* d = dst + ic * plane + r * Wp;
      const int64_t ih = ih0 + r;
      if (ih < 0 || ih >= H) {
        std::fill(d, d + Wp, 0.0f);
        continue;
      }
      // zeros only in the padding
      std::fill(d, d + pw, 0.0f);
      std::memcpy(d + pw, x + (ic * H + ih) * W, sizeof(float) * size_t(cols));
      std::fill(d + pw + cols, d + Wp, 0.0f);
    }
}

Scratch<float> pack_channel_blocks(const float* w, int64_t c_out, int64_t taps, int64_t width) {
  const int64_t blocks = (c_out + width - 1) / width;
  Scratch<float> dst(blocks * taps * width);
  for (int64_t b = 0; b < blocks; ++b)
    for (int64_t t = 0; t < taps; ++t)
      for (int64_t l = 0; l < width; ++l) {
        const int64_t oc = b * width + l;
        dst.get()[(b * taps + t) * width + l] = oc < c_out ? w[oc * taps + t] : 0.0f;
      }
  return dst;
}

bool direct_conv_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out, int64_t n) {
  if (!direct_geometry_fits(g, groups) || g.out[2] < 8 || c_out > 64 ||
      c_in * g.k[1] * g.k[2] > 32 * 9)
    return false;
  // Where Winograd's F(4x4, 3x3) applies (winograd_tile), it does a quarter of the multiplies
  // and takes the convolution: 32 -> 32 on 32x32, batch 32, one thread, 4.6-4.9 ms against
  // 6.5-7.7 here on AVX2. On AVX-512 its fused form (winograd_fused_fits) takes every shape it
  // fits: 16 -> 16 on 28x28, batch 64, two threads of an AMD Zen 4, 0.79-0.96 ms against 1.16-1.22
  // here (docs/cpu-measurements.md). Elsewhere on AVX-512 the direct kernels stay ahead of the
  // unfused F(4x4) on rows of under 8 tiles (0.78-0.93x of oneDNN's blocked layout against
  // 0.71-0.77x on a Xeon).
  const bool avx512 = cpu_isa() >= CpuIsa::Avx512;
  if (winograd_fits(g, groups, c_in, c_out) && winograd_pays(g, n, c_in, c_out) &&
      winograd_tile(g, c_in, c_out) == 4 &&
      (winograd_fused_fits(c_in, c_out) || !(avx512 && winograd_rows_end_to_end(g))))
    return false;
  if (avx512) return true;
  // AVX2's 8 lanes, measured on the main job's layers against the paths it replaces
  // (docs/cpu-measurements.md, "Direct kernels on AVX2"):
  // one input channel stays with the depthwise loops (0.21 against 0.25 ms at 64x1x28x28 -> 8),
  // and rows cut into runs under 8 positions (13 or 14 wide) with im2col (the input gradient
  // of 8 -> 16 on 13x13, 0.44-0.61 against 0.85 ms).
  return c_in > 1 &&
         (direct_conv_positions_fits(g, groups, c_in) || lanes_run_length(g.out[2], g.k[2]) >= 8);
}

void direct_conv_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                     int64_t c_out, const Geom& g) {
#if defined(__x86_64__)
  if (direct_conv_positions_fits(g, 1, c_in))
    return direct_conv_positions_f32(x, w, y, n, c_in, c_out, g);
  // 16 output channels or more: the lanes kernel (direct_conv_lanes.cpp), measured ahead of
  // the row kernel at 16 and 32 (docs/cpu-measurements.md); AVX2 has only the lanes kernel.
  if (c_out >= kLanes || cpu_isa() < CpuIsa::Avx512)
    return direct_conv_lanes_f32(x, w, y, n, c_in, c_out, g);
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t KH = g.k[1], KW = g.k[2], ph = g.p[1], pw = g.p[2];
  // The padded copy: rows of Wp floats, the image at column pw, zeros around it and past the
  // last output position's vectors; Hp rows cover every tap of every output row.
  // Rows of at most 16 outputs are computed two at a time, one vector each (a pair's second
  // row past the last reads one more row of zeros).
  const bool two_rows = OW <= kLanes;
  const int64_t span = two_rows ? kLanes : kSpan;
  const int64_t ow_pad = (OW + span - 1) / span * span;
  const int64_t Wp = ow_pad + KW - 1, Hp = OH + KH - 1 + (two_rows ? 1 : 0);
  Scratch<float> xp(n * c_in * Hp * Wp);
  pad_planes(x, n * c_in, H, W, Hp, Wp, ph, pw, xp.get());
  // Weights per block of 8 output channels: [block][c_in * KH * KW][8].
  const int64_t taps = c_in * KH * KW, blocks = (c_out + kRows - 1) / kRows;
  const Scratch<float> wp = pack_channel_blocks(w, c_out, taps, kRows);
  // Where each tap reads, from an output row's first input row: its channel's plane, the
  // window's row and column.
  std::vector<int64_t> offsets(static_cast<size_t>(taps));
  for (int64_t ic = 0, t = 0; ic < c_in; ++ic)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw, ++t) offsets[size_t(t)] = (ic * Hp + kh) * Wp + kw;
  // Tasks: (image, channel block, output row or pair of rows).
  const int64_t row_tasks = two_rows ? (OH + 1) / 2 : OH;
  const int64_t tasks = n * blocks * row_tasks;
  const int64_t work = taps * ow_pad * kRows * (two_rows ? 2 : 1);
  parallel_for(tasks, std::max<int64_t>(1, kGrain * 4 / std::max<int64_t>(work, 1)),
               [&](int64_t b0, int64_t b1) {
                 for (int64_t task = b0; task < b1; ++task) {
                   int64_t oh = task % row_tasks * (two_rows ? 2 : 1), rest = task / row_tasks;
                   int64_t b = rest % blocks, img = rest / blocks;
                   float* out[kRows];
                   int64_t nrows = std::min(kRows, c_out - b * kRows);
                   for (int64_t r = 0; r < nrows; ++r)
                     out[r] = y + ((img * c_out + b * kRows + r) * OH + oh) * OW;
                   Pass pass{two_rows, Wp, OW, oh + 1 < OH};
                   row_block(xp.get() + (img * c_in * Hp + oh) * Wp, offsets.data(), taps,
                             wp.get() + b * taps * kRows, out, nrows, OW, pass);
                 }
               });
#else
  (void)x, (void)w, (void)y, (void)n, (void)c_in, (void)c_out, (void)g;
#endif
}

}  // namespace ember::cpu
