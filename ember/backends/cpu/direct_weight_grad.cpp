// The weight gradient of a few-channel convolution, directly (direct_conv.h): each task holds
// the 3x3 (or 5x5) window of one or two output channels against one input channel in vector
// registers, as partial sums over positions, and runs down the output rows of its images: per
// vector of 16 positions, one load of the output gradient per channel and one of the input per
// tap, and an FMA for each. im2col's column matrix (the input nine times over) and the GEMM's
// transposes it replaces moved several times the data the products need.
#include <algorithm>
#include <array>
#include <cstring>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/strided.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {

#if defined(__x86_64__)
constexpr int64_t kLanes = 16;

#if defined(__GNUC__) && !defined(__clang__)
#define EMBER_NO_PREDICTIVE_COMMONING __attribute__((optimize("no-predictive-commoning")))
#else
#define EMBER_NO_PREDICTIVE_COMMONING
#endif

// out[c * KH * KW + t] = sum over `imgs` images and every output position of
// g[c][pos] * x[pos + tap t's shift], for the CO output channels at g (g_co apart) and the input
// channel at x; images are x_img and g_img apart, input rows Wp apart. The accumulators are
// named variables, one per channel and tap (an array of them GCC kept in memory, storing each
// back after every FMA), written out by the TAPS list of (row, column, index) of the window
// (EMBER_DIRECT_TAPS3 in direct_conv.h for 3x3).
#define EMBER_WG_TAPS5(X)                                                                       \
  X(0, 0, 0)                                                                                    \
  X(0, 1, 1)                                                                                    \
  X(0, 2, 2)                                                                                    \
  X(0, 3, 3)                                                                                    \
  X(0, 4, 4)                                                                                    \
  X(1, 0, 5)                                                                                    \
  X(1, 1, 6)                                                                                    \
  X(1, 2, 7)                                                                                    \
  X(1, 3, 8) X(1, 4, 9) X(2, 0, 10) X(2, 1, 11) X(2, 2, 12) X(2, 3, 13) X(2, 4, 14) X(3, 0, 15) \
      X(3, 1, 16) X(3, 2, 17) X(3, 3, 18) X(3, 4, 19) X(4, 0, 20) X(4, 1, 21) X(4, 2, 22)       \
          X(4, 3, 23) X(4, 4, 24)
#define EMBER_WG_DECL(kh, kw, t) __m512 a0_##t = _mm512_setzero_ps(), a1_##t = a0_##t;
#define EMBER_WG_STEP(kh, kw, t)                                        \
  {                                                                     \
    const __m512 xv = _mm512_maskz_loadu_ps(m, xr + kh * Wp + ow + kw); \
    a0_##t = _mm512_fmadd_ps(g0, xv, a0_##t);                           \
    if constexpr (CO == 2) a1_##t = _mm512_fmadd_ps(g1, xv, a1_##t);    \
  }
#define EMBER_WG_OUT(kh, kw, t) \
  out[t] = hsum(a0_##t);        \
  if constexpr (CO == 2) out[kTaps + t] = hsum(a1_##t);
#define EMBER_WG_KERNEL(TAPS)                                                                 \
  TAPS(EMBER_WG_DECL)                                                                         \
  for (int64_t img = 0; img < imgs; ++img)                                                    \
    for (int64_t oh = 0; oh < OH; ++oh) {                                                     \
      const float* xr = x + img * x_img + oh * Wp;                                            \
      const float* gr = g + img * g_img + oh * OW;                                            \
      for (int64_t ow = 0; ow < OW; ow += kLanes) {                                           \
        const int64_t left = OW - ow;                                                         \
        const __mmask16 m = left >= kLanes ? __mmask16(0xffff) : __mmask16((1u << left) - 1); \
        const __m512 g0 = _mm512_maskz_loadu_ps(m, gr + ow);                                  \
        const __m512 g1 = CO == 2 ? _mm512_maskz_loadu_ps(m, gr + g_co + ow) : g0;            \
        TAPS(EMBER_WG_STEP)                                                                   \
      }                                                                                       \
    }                                                                                         \
  TAPS(EMBER_WG_OUT)

__attribute__((target("avx512f"))) inline float hsum(__m512 v) {
  alignas(64) float lanes[kLanes];
  _mm512_store_ps(lanes, v);
  float s = 0;
  for (float l : lanes) s += l;
  return s;
}

template <int CO>
__attribute__((target("avx512f"))) void wgrad3(const float* x, int64_t x_img, int64_t Wp,
                                               const float* g, int64_t g_img, int64_t g_co,
                                               int64_t imgs, int64_t OH, int64_t OW, float* out) {
  constexpr int kTaps = 9;
  EMBER_WG_KERNEL(EMBER_DIRECT_TAPS3)
}
template <int CO>
__attribute__((target("avx512f"))) void wgrad5(const float* x, int64_t x_img, int64_t Wp,
                                               const float* g, int64_t g_img, int64_t g_co,
                                               int64_t imgs, int64_t OH, int64_t OW, float* out) {
  constexpr int kTaps = 25;
  EMBER_WG_KERNEL(EMBER_WG_TAPS5)
}

// The other arrangement, for 16 output channels or more: the output channels across the
// lanes (the gradient transposed to [position][16 channels] first) and the input values
// broadcast, so that no lane idles on a short row and every load is an aligned vector or a
// broadcast (the row kernel's unaligned loads mostly straddle two cache lines). A task holds
// the 9 taps of up to 3 input channels, 27 registers: per position one load, 27 broadcasts
// and 27 FMAs. out[(c * kTaps + t) * 16 + lane] for input channel c, tap t, output channel lane.
#define EMBER_WL_DECL(kh, kw, t) \
  __m512 c0_##t = _mm512_setzero_ps(), c1_##t = c0_##t, c2_##t = c0_##t;
#define EMBER_WL_STEP(kh, kw, t)                                                                \
  c0_##t = _mm512_fmadd_ps(gv, _mm512_set1_ps(x0[kh * Wp + kw]), c0_##t);                       \
  if constexpr (CI > 1) c1_##t = _mm512_fmadd_ps(gv, _mm512_set1_ps(x1[kh * Wp + kw]), c1_##t); \
  if constexpr (CI > 2) c2_##t = _mm512_fmadd_ps(gv, _mm512_set1_ps(x2[kh * Wp + kw]), c2_##t);
#define EMBER_WL_OUT(kh, kw, t)                                               \
  _mm512_storeu_ps(out + t * kLanes, c0_##t);                                 \
  if constexpr (CI > 1) _mm512_storeu_ps(out + (kTaps + t) * kLanes, c1_##t); \
  if constexpr (CI > 2) _mm512_storeu_ps(out + (2 * kTaps + t) * kLanes, c2_##t);

// (Without predictive commoning: GCC saw that a tap's input at the next position is the next
// tap's here, kept those broadcasts for the next iteration and spilled the accumulators.)
template <int CI>
__attribute__((target("avx512f"))) EMBER_NO_PREDICTIVE_COMMONING void wlanes3(
    const float* x, int64_t x_img, int64_t plane, int64_t Wp, const float* gt, int64_t imgs,
    int64_t OH, int64_t OW, float* out) {
  constexpr int kTaps = 9;
  EMBER_DIRECT_TAPS3(EMBER_WL_DECL)
  for (int64_t img = 0; img < imgs; ++img)
    for (int64_t oh = 0; oh < OH; ++oh) {
      const float* xb = x + img * x_img + oh * Wp;
      const float* gp = gt + (img * OH + oh) * OW * kLanes;

      for (int64_t ow = 0; ow < OW; ++ow) {
        const __m512 gv = _mm512_loadu_ps(gp + ow * kLanes);
        const float *x0 = xb + ow, *x1 = x0 + plane, *x2 = x1 + plane;
        (void)x1, (void)x2;
        EMBER_DIRECT_TAPS3(EMBER_WL_STEP)
      }
    }
  EMBER_DIRECT_TAPS3(EMBER_WL_OUT)
}

template <int... CI>
constexpr std::array<WgradLanesRun, 3> lanes_table(std::integer_sequence<int, CI...>) {
  return {&wlanes3<CI + 1>...};
}
constexpr auto kLanesKernels = lanes_table(std::make_integer_sequence<int, 3>{});

// The lanes kernels of the CPU's instruction set (AVX2's in direct_conv_avx2.cpp).
const WgradLanesKernels& lanes_kernels() {
  return cpu_isa() >= CpuIsa::Avx512 ? wgrad_lanes_avx512() : wgrad_lanes_avx2();
}

// The lanes kernel's way: 3x3 windows, 16 output channels or more; on AVX2, every 3x3 window
// (AVX2 has no other kernel).
bool by_lanes(int64_t kh, int64_t kw, int64_t c_out) {
  return kh == 3 && kw == 3 && (c_out >= kLanes || cpu_isa() < CpuIsa::Avx512);
}

using Task = void (*)(const float*, int64_t, int64_t, const float*, int64_t, int64_t, int64_t,
                      int64_t, int64_t, float*);

// The kernel for a window and 1 or 2 output channels at a time (two where their 2 x KH x KW
// accumulators fit the 32 registers with room to spare), on AVX-512.
Task task_for(int64_t kh, int64_t kw, int co) {
  if (kh == 3 && kw == 3) return co == 2 ? wgrad3<2> : wgrad3<1>;
  if (kh == 5 && kw == 5) return wgrad5<1>;
  return nullptr;
}
int channels_per_task(int64_t kh, int64_t kw) { return kh * kw * 2 <= 18 ? 2 : 1; }
#endif

}  // namespace

#if defined(__x86_64__)
const WgradLanesKernels& wgrad_lanes_avx512() {
  static const WgradLanesKernels k{kLanes, 3, [](int64_t ci) { return kLanesKernels[ci - 1]; }};
  return k;
}
#endif

bool direct_weight_grad_fits(const Geom& g, int64_t groups, int64_t c_in, int64_t c_out) {
#if defined(__x86_64__)
  if (!direct_geometry_fits(g, groups) || c_in > 64 || c_out > 64) return false;
  return cpu_isa() >= CpuIsa::Avx512 ? task_for(g.k[1], g.k[2], 1) != nullptr
                                     : g.k[1] == 3 && g.k[2] == 3;
#else
  (void)g, (void)groups, (void)c_in, (void)c_out;
  return false;
#endif
}

void direct_weight_grad_f32(const float* x, const float* gy, float* dw, int64_t n, int64_t c_in,
                            int64_t c_out, const Geom& g) {
#if defined(__x86_64__)
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t KH = g.k[1], KW = g.k[2], ph = g.p[1], pw = g.p[2];
  if (n == 0 || OH == 0 || OW == 0) {  // no products: a zero gradient
    std::fill(dw, dw + c_out * c_in * KH * KW, 0.0f);
    return;
  }
  // With padding, a zero-padded copy of x: every tap of every output position inside it.
  const bool padded = ph > 0 || pw > 0;
  const int64_t Hp = OH + KH - 1, Wp = padded ? OW + KW - 1 : W;
  Scratch<float> xp(padded ? n * c_in * Hp * Wp : 0);
  if (padded) pad_planes(x, n * c_in, H, W, Hp, Wp, ph, pw, xp.get());
  const float* X = padded ? xp.get() : x;
  const int64_t x_img = c_in * (padded ? Hp : H) * Wp, plane = (padded ? Hp : H) * Wp;
  const int64_t T = KH * KW;
  if (by_lanes(KH, KW, c_out)) {
    const WgradLanesKernels& ks = lanes_kernels();
    const int64_t lanes = ks.lanes;
    // The gradient as [channel block][image][position][lanes channels], zero past c_out.
    const int64_t P = OH * OW, blocks = (c_out + lanes - 1) / lanes;
    Scratch<float> gt(blocks * n * P * lanes);
    parallel_for(blocks * n, 1, [&](int64_t b, int64_t e) {
      for (int64_t it = b; it < e; ++it) {
        const int64_t cb = it / n, img = it % n;
        float* dst = gt.get() + it * P * lanes;
        const int64_t rows = std::min(lanes, c_out - cb * lanes);
        transpose_into(gy + (img * c_out + cb * lanes) * P, P, rows, P, dst, lanes);
        for (int64_t p = 0; p < P; ++p)
          for (int64_t lane = rows; lane < lanes; ++lane) dst[p * lanes + lane] = 0.0f;
      }
    });
    // Images in chunks summed apart and then in order (sum_in_chunks): the result does not
    // depend on the threads. A chunk's part is [ci][t][block][lane].
    const int64_t size = c_in * T * blocks * lanes;
    Scratch<float> grad(size);
    sum_in_chunks<float>(n, size, grad.get(), [&](int64_t i0, int64_t i1, float* part) {
      alignas(64) float sums[3 * 9 * kLanes];
      for (int64_t cb = 0; cb < blocks; ++cb)
        for (int64_t ci0 = 0; ci0 < c_in; ci0 += ks.max_ci) {
          const int64_t cis = std::min<int64_t>(ks.max_ci, c_in - ci0);
          ks.kernel(cis)(X + i0 * x_img + ci0 * plane, x_img, plane, Wp,
                         gt.get() + (cb * n + i0) * P * lanes, i1 - i0, OH, OW, sums);
          for (int64_t c = 0; c < cis; ++c)
            for (int64_t t = 0; t < T; ++t)
              std::memcpy(part + (((ci0 + c) * T + t) * blocks + cb) * lanes,
                          sums + (c * T + t) * lanes, sizeof(float) * size_t(lanes));
        }
    });
    for (int64_t co = 0; co < c_out; ++co)
      for (int64_t ci = 0; ci < c_in; ++ci)
        for (int64_t t = 0; t < T; ++t)
          dw[(co * c_in + ci) * T + t] = grad.get()[((ci * T + t) * blocks) * lanes + co];
    return;
  }
  const int64_t per = channels_per_task(KH, KW);
  sum_in_chunks<float>(n, c_out * c_in * T, dw, [&](int64_t i0, int64_t i1, float* part) {
    float sums[2 * 25];
    for (int64_t co0 = 0; co0 < c_out; co0 += per)
      for (int64_t ci = 0; ci < c_in; ++ci) {
        const int64_t cos = std::min(per, c_out - co0);
        task_for(KH, KW, int(cos))(X + i0 * x_img + ci * plane, x_img, Wp,
                                   gy + (i0 * c_out + co0) * OH * OW, c_out * OH * OW, OH * OW,
                                   i1 - i0, OH, OW, sums);
        for (int64_t c = 0; c < cos; ++c)
          std::memcpy(part + ((co0 + c) * c_in + ci) * T, sums + c * T, sizeof(float) * size_t(T));
      }
  });
#else
  (void)x, (void)gy, (void)dw, (void)n, (void)c_in, (void)c_out, (void)g;
#endif
}

}  // namespace ember::cpu
