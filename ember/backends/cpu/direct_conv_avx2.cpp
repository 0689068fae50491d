// The direct convolution's kernels for CPUs with AVX2 and without AVX-512 (AMD before Zen 4,
// Intel client cores): the output channels across a vector's 8 lanes, as direct_conv_lanes.cpp
// and direct_weight_grad.cpp do with 16, run by the same drivers. AVX2 has 16 vector registers
// and no broadcast memory operand on an FMA, so:
// - forward, windows 3 wide: each input broadcast into a register once for the three taps of
//   its window row that read it, runs of up to 12 positions (12 sums, 2 weights, a broadcast;
//   the third weight an FMA's memory operand);
// - forward, other windows: one broadcast and one FMA per position and tap, runs of up to 14;
// - weight gradient, 3x3: the 9 taps of one input channel in 9 registers; per position one
//   load of the 8 channels' output gradient, 9 broadcasts of the input and 9 FMAs.
// Runs of every length are compiled (step 1): with 8 lanes a wasted position costs as much as
// with 16, and rows of 26 or 32 would waste up to 3 of 14.
#include <algorithm>
#include <array>
#include <utility>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/transpose16.h"

namespace ember::cpu {

#if defined(__x86_64__)
namespace {

constexpr int64_t kLanes = 8;
constexpr int64_t kMaxRun = 14, kMaxRun3 = 12;

// Every lane = *p, as a load (vbroadcastss from memory). Left to intrinsics, GCC keeps the
// broadcasts of one tap in registers for the next (x + 1 is the next tap's x) and spills sums.
EMBER_TARGET_AVX2 inline __m256 bcast(const float* p) {
  __m256 b;
  asm("vbroadcastss %[x], %[b]" : [b] "=x"(b) : [x] "m"(*p));
  return b;
}

template <int R>
EMBER_TARGET_AVX2 void run_kernel(const float* in, int64_t plane, int64_t row_stride, int64_t c_in,
                                  int64_t KH, int64_t KW, const float* w, float* sums) {
  __m256 acc[R];
#pragma GCC unroll 16
  for (int p = 0; p < R; ++p) acc[p] = _mm256_setzero_ps();
  for (int64_t ic = 0; ic < c_in; ++ic, in += plane)
    for (int64_t kh = 0; kh < KH; ++kh) {
      const float* row = in + kh * row_stride;
      for (int64_t kw = 0; kw < KW; ++kw, w += kLanes) {
        const __m256 wv = _mm256_loadu_ps(w);
        const float* x = row + kw;
#pragma GCC unroll 16
        for (int p = 0; p < R; ++p) acc[p] = _mm256_fmadd_ps(bcast(x + p), wv, acc[p]);
      }
    }
#pragma GCC unroll 16
  for (int p = 0; p < R; ++p) _mm256_storeu_ps(sums + p * kLanes, acc[p]);
}

// Windows 3 wide: x[j] feeds position j through tap 0, j - 1 through tap 1, j - 2 through tap 2.
// Tap 2's weights stay in memory, an operand of its FMAs: with all three in registers, runs of 12
// (12 sums, 3 weights and the broadcast: every register) made GCC spill a sum each step, and
// took 5.1-6.3 ns a position against 4.4 for 10 or 11; this way 12 takes 4.4-4.7.
// L and Rt: the run starts or ends at a row's edge under a padding of 1, read in place from the
// image. x[0] (L) or x[R + 1] (Rt) is then a padding zero, not read: with L, `in` points at x[1].
template <int R, bool L, bool Rt>
EMBER_TARGET_AVX2 void run_kernel3(const float* in, int64_t plane, int64_t row_stride, int64_t c_in,
                                   int64_t KH, int64_t /*KW: 3*/, const float* w, float* sums) {
  __m256 acc[R];
#pragma GCC unroll 16
  for (int p = 0; p < R; ++p) acc[p] = _mm256_setzero_ps();
  for (int64_t ic = 0; ic < c_in; ++ic, in += plane)
    for (int64_t kh = 0; kh < KH; ++kh, w += 3 * kLanes) {
      const float* x = in + kh * row_stride;
      const __m256 w0 = _mm256_loadu_ps(w), w1 = _mm256_loadu_ps(w + kLanes);
      const float* w2 = w + 2 * kLanes;
#pragma GCC unroll 16
      for (int j = L ? 1 : 0; j < (Rt ? R + 1 : R + 2); ++j) {
        const __m256 b = bcast(x + j - (L ? 1 : 0));
        if (j < R) acc[j] = _mm256_fmadd_ps(b, w0, acc[j]);
        if (j >= 1 && j <= R) acc[j - 1] = _mm256_fmadd_ps(b, w1, acc[j - 1]);
        if (j >= 2)
          asm("vfmadd231ps %[w], %[b], %[acc]"
              : [acc] "+x"(acc[j - 2])
              : [b] "x"(b), [w] "m"(*reinterpret_cast<const __m256*>(w2)));
      }
    }
#pragma GCC unroll 16
  for (int p = 0; p < R; ++p) _mm256_storeu_ps(sums + p * kLanes, acc[p]);
}

template <int... I>
constexpr auto kernel_table(std::integer_sequence<int, I...>) {
  return std::array<LanesRun, sizeof...(I)>{&run_kernel<I + 1>...};
}
// kernel3_table<L, Rt>[r - 1]: runs of r positions, windows 3 wide.
template <bool L, bool Rt, int... I>
constexpr auto kernel3_table(std::integer_sequence<int, I...>) {
  return std::array<LanesRun, sizeof...(I)>{&run_kernel3<I + 1, L, Rt>...};
}
constexpr auto kKernels = kernel_table(std::make_integer_sequence<int, kMaxRun>{});
using Runs3 = std::make_integer_sequence<int, kMaxRun3>;
// [left edge][right edge][run - 1]
constexpr std::array<LanesRun, kMaxRun3> kKernels3[2][2] = {
    {kernel3_table<false, false>(Runs3{}), kernel3_table<false, true>(Runs3{})},
    {kernel3_table<true, false>(Runs3{}), kernel3_table<true, true>(Runs3{})}};

// y[j * channel_stride + p] = sums[p][j]: 8 x 8 transposes. With 8 positions or more the last
// group is the last 8, overlapping the one before (its values written twice): AMD's masked
// stores (vmaskmovps) are microcoded and took a quarter of a 3 -> 32 conv's time. Fewer than 8
// are stored by masks.
EMBER_TARGET_AVX2 void store_transposed(const float* sums, int64_t positions, int64_t channels,
                                        float* y, int64_t channel_stride) {
  for (int64_t p0 = 0; p0 < positions; p0 += kLanes) {
    if (positions >= kLanes) p0 = std::min(p0, positions - kLanes);
    const int64_t n = std::min(kLanes, positions - p0);
    __m256 r[8];
    for (int64_t i = 0; i < 8; ++i)
      r[i] = i < n ? _mm256_loadu_ps(sums + (p0 + i) * kLanes) : _mm256_setzero_ps();
    transpose8x8(r);
    float* out = y + p0;
    if (n == kLanes) {
      for (int64_t j = 0; j < channels; ++j) _mm256_storeu_ps(out + j * channel_stride, r[j]);
    } else {
      const __m256i mask =
          _mm256_cmpgt_epi32(_mm256_set1_epi32(int(n)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
      for (int64_t j = 0; j < channels; ++j)
        _mm256_maskstore_ps(out + j * channel_stride, mask, r[j]);
    }
  }
}

// The weight gradient's 9 taps of one input channel for 8 output channels.
#define EMBER_WA_DECL(kh, kw, t) __m256 c##t = _mm256_setzero_ps();
#define EMBER_WA_STEP(kh, kw, t) c##t = _mm256_fmadd_ps(gv, bcast(x0 + kh * Wp + kw), c##t);
#define EMBER_WA_OUT(kh, kw, t) _mm256_storeu_ps(out + t * kLanes, c##t);
EMBER_TARGET_AVX2 void wlanes3(const float* x, int64_t x_img, int64_t /*plane: one channel*/,
                               int64_t Wp, const float* gt, int64_t imgs, int64_t OH, int64_t OW,
                               float* out) {
  EMBER_DIRECT_TAPS3(EMBER_WA_DECL)
  for (int64_t img = 0; img < imgs; ++img)
    for (int64_t oh = 0; oh < OH; ++oh) {
      const float* xb = x + img * x_img + oh * Wp;
      const float* gp = gt + (img * OH + oh) * OW * kLanes;
      for (int64_t ow = 0; ow < OW; ++ow) {
        const __m256 gv = _mm256_loadu_ps(gp + ow * kLanes);
        const float* x0 = xb + ow;
        EMBER_DIRECT_TAPS3(EMBER_WA_STEP)
      }
    }
  EMBER_DIRECT_TAPS3(EMBER_WA_OUT)
}

}  // namespace

const LanesKernels& lanes_kernels_avx2() {
  static const LanesKernels k{
      kLanes,
      kMaxRun,
      kMaxRun3,
      1,
      [](bool three, int64_t run) {
        // indexed per table: GCC 12 with -fsanitize=address,undefined compiled the one
        // expression over either table's data() to a fixed index -1 for kKernels
        const size_t i = size_t(run - 1);
        return three ? kKernels3[0][0][i] : kKernels[i];
      },
      store_transposed,
      [](int64_t run, bool left, bool right) { return kKernels3[left][right][size_t(run - 1)]; }};
  return k;
}

const WgradLanesKernels& wgrad_lanes_avx2() {
  static const WgradLanesKernels k{kLanes, 1, [](int64_t) { return &wlanes3; }};
  return k;
}
#endif

}  // namespace ember::cpu
