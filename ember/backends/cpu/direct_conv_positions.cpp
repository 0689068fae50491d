// The direct convolution for few input taps on AVX2 (a first layer's 3 channels x 3 x 3): the
// output positions across a vector's 8 lanes, so that the sums go straight into the NCHW output
// rows. With 27 taps an output channel's sum is short, and the lanes kernel (the channels across
// the lanes, direct_conv_avx2.cpp) spent a quarter of its time on what follows the sums: storing
// them, transposing them into the output's layout, and the calls around 27-tap kernels.
//
// A kernel call holds 3 output channels x 4 vectors of 8 positions (12 sums, 3 weights and one
// input vector: the 16 registers) and runs over every tap: per tap 4 input loads, 3 weight
// broadcasts and 12 FMAs. The 4 vectors are any 4 of a band's output vectors, so rows whose width
// is not a multiple of 8 lose nothing but their last vector's overlap with the one before (it
// starts at the row's last 8 positions and stores some sums twice, the same values). The inputs
// are read from a zero-padded copy of the band's rows, made per task and kept in L1.
//
// AVX-512 (rows 16 wide or more) has its own kernel: 16 positions a vector, 4 output channels x 4
// vectors a call, so that 32 output channels are 8 full calls. On an Intel Xeon, 3 -> 32 on
// 32x32, batch 32, two threads, run in turn with oneDNN's blocked layout: 0.26-0.30 ms, 1.19-1.22x
// of it, against 0.37-0.42 ms and 0.89-0.96x by the lanes kernel (direct_conv_lanes.cpp).
#include <algorithm>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/direct_conv.h"
#include "ember/backends/cpu/isa.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

namespace {
constexpr int64_t kLanes = 8;             // positions a vector holds
constexpr int64_t kChannels = 3;          // output channels a call holds
constexpr int64_t kVectors = 4;           // vectors of positions a call holds
constexpr int64_t kMaxTaps = 27;          // input channels x window, at most
constexpr int64_t kBandBytes = 16 << 10;  // a band's padded copy fits L1

// Whether the AVX-512 kernels take a conv with rows OW wide: 16 positions a vector.
bool wide_vectors(int64_t OW) { return cpu_isa() >= CpuIsa::Avx512 && OW >= 16; }
}  // namespace

bool direct_conv_positions_fits(const Geom& g, int64_t groups, int64_t c_in) {
  return direct_geometry_fits(g, groups) && c_in * g.k[1] * g.k[2] <= kMaxTaps &&
         ((cpu_isa() == CpuIsa::Avx2 && g.out[2] >= kLanes) || wide_vectors(g.out[2]));
}

#if defined(__x86_64__)
namespace {

// For each of `count` groups of NV vectors (in and at advance by NV a group): y[at[j] + c * plane
// + i] = sum over taps t of w[t][c] * x[in[j] + off[t] + i], for i < the vector's lanes, j < NV
// and c < channels (at most C; w holds C per tap, zeros past the last channel). The groups run
// in one call: a call per group of 27 taps cost 9% of a 3 -> 32 conv around the kernel. Written
// once as a macro and expanded in each instruction set's function below (as the GEMM's
// micro-kernel is, gemm.cpp): V the vector type, C the channels a call holds, SET1(p) every lane
// = *p.
#define EMBER_POSITIONS_KERNEL(V, C, SET1)                                     \
  for (int64_t grp = 0; grp < count; ++grp, in += NV, at += NV) {              \
    const float* src[NV];                                                      \
    V acc[C][NV];                                                              \
    _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) {                     \
      src[j] = x + in[j];                                                      \
      for (int c = 0; c < C; ++c) acc[c][j] = V{};                             \
    }                                                                          \
    const float* wt = w;                                                       \
    for (int64_t t = 0; t < taps; ++t, wt += C) {                              \
      V wv[C];                                                                 \
      for (int c = 0; c < C; ++c) wv[c] = SET1(wt + c);                        \
      const int64_t o = off[t];                                                \
      _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) {                   \
        V xv;                                                                  \
        std::memcpy(&xv, src[j] + o, sizeof(V));                               \
        for (int c = 0; c < C; ++c) acc[c][j] += xv * wv[c];                   \
      }                                                                        \
    }                                                                          \
    _Pragma("GCC unroll 4") for (int j = 0; j < NV; ++j) {                     \
      float* out = y + at[j];                                                  \
      for (int c = 0; c < C; ++c)                                              \
        if (c < channels) std::memcpy(out + c * plane, &acc[c][j], sizeof(V)); \
    }                                                                          \
  }

// AVX2 (the kernel described above).
template <int NV>
EMBER_TARGET_AVX2 void positions_kernel(const float* x, const int64_t* in, const int64_t* at,
                                        int64_t count, const int64_t* off, int64_t taps,
                                        const float* w, float* y, int64_t plane, int64_t channels) {
  EMBER_POSITIONS_KERNEL(__m256, kChannels, _mm256_broadcast_ss)
}

using PositionsKernel = void (*)(const float*, const int64_t*, const int64_t*, int64_t,
                                 const int64_t*, int64_t, const float*, float*, int64_t, int64_t);
// kKernels[v - 1] holds v vectors.
constexpr PositionsKernel kKernels[kVectors] = {positions_kernel<1>, positions_kernel<2>,
                                                positions_kernel<3>, positions_kernel<4>};

// AVX-512: 16 positions a vector, 4 output channels x 4 vectors a call (16 sums, 4 weights and
// one input vector: 21 of the 32 registers); per tap 4 input loads, 4 weight broadcasts and 16
// FMAs. 32 output channels are 8 calls, none of them short.
constexpr int64_t kLanes512 = 16, kChannels512 = 4, kVectors512 = 4;
#define EMBER_SET1_512(p) _mm512_set1_ps(*(p))
template <int NV>
__attribute__((target("avx512f"))) void positions_kernel512(const float* x, const int64_t* in,
                                                            const int64_t* at, int64_t count,
                                                            const int64_t* off, int64_t taps,
                                                            const float* w, float* y, int64_t plane,
                                                            int64_t channels) {
  EMBER_POSITIONS_KERNEL(__m512, kChannels512, EMBER_SET1_512)
}
constexpr PositionsKernel kKernels512[kVectors512] = {
    positions_kernel512<1>, positions_kernel512<2>, positions_kernel512<3>, positions_kernel512<4>};

// The driver for either instruction set: Lanes positions a vector, Channels output channels and
// up to Vectors vectors a kernel call, kernels[v - 1] holding v vectors.
template <int64_t Lanes, int64_t Channels, int64_t Vectors>
void run_positions(const PositionsKernel* kernels, const float* x, const float* w, float* y,
                   int64_t n, int64_t c_in, int64_t c_out, const Geom& g) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t KH = g.k[1], KW = g.k[2], ph = g.p[1], pw = g.p[2];
  // A band's copy: per input channel, the band's rows and the window's extra rows, each the
  // image's row at column pw with zeros around it; Wp covers the last vector's window.
  const int64_t Wp = OW + KW - 1;
  const int64_t fit = kBandBytes / int64_t(sizeof(float)) / (c_in * Wp) - (KH - 1);
  const int64_t band = std::clamp<int64_t>(fit, 1, OH), bands = (OH + band - 1) / band;
  const int64_t band_in = band + KH - 1, plane = band_in * Wp;
  const int64_t taps = c_in * KH * KW, groups = (c_out + Channels - 1) / Channels;
  const Scratch<float> wp = pack_channel_blocks(w, c_out, taps, Channels);
  std::vector<int64_t> off(static_cast<size_t>(taps));
  for (int64_t ic = 0, t = 0; ic < c_in; ++ic)
    for (int64_t kh = 0; kh < KH; ++kh)
      for (int64_t kw = 0; kw < KW; ++kw, ++t) off[size_t(t)] = ic * plane + kh * Wp + kw;
  // A full band's vectors, row by row: where each reads in the band's copy and writes from the
  // band's first output (a row's vectors start at 0, 8, ..., and the last at OW - 8). A shorter
  // last band takes the first of them.
  const int64_t row_vectors = (OW + Lanes - 1) / Lanes;
  std::vector<int64_t> in, at;
  for (int64_t r = 0; r < band; ++r)
    for (int64_t v = 0; v < row_vectors; ++v) {
      const int64_t s = std::min(v * Lanes, OW - Lanes);
      in.push_back(r * Wp + s);
      at.push_back(r * OW + s);
    }
  const int64_t work = taps * OW * band * c_out;  // FMAs a task does, one lane each
  parallel_for(n * bands, std::max<int64_t>(1, kGrain * 8 / std::max<int64_t>(work, 1)),
               [&](int64_t t0, int64_t t1) {
                 Scratch<float> buf(c_in * plane);
                 for (int64_t task = t0; task < t1; ++task) {
                   const int64_t img = task / bands, oh0 = task % bands * band;
                   const int64_t rows = std::min(band, OH - oh0);
                   copy_band(x + img * c_in * H * W, c_in, H, W, oh0 - ph, rows + KH - 1, pw, Wp,
                             plane, buf.get());
                   const int64_t vectors = rows * row_vectors;
                   const int64_t full = vectors / Vectors, rest = vectors % Vectors;
                   for (int64_t grp = 0; grp < groups; ++grp) {
                     const int64_t channels = std::min(Channels, c_out - grp * Channels);
                     float* yg = y + ((img * c_out + grp * Channels) * OH + oh0) * OW;
                     const float* wg = wp.get() + grp * taps * Channels;
                     kernels[Vectors - 1](buf.get(), in.data(), at.data(), full, off.data(), taps,
                                          wg, yg, OH * OW, channels);
                     if (rest > 0)
                       kernels[rest - 1](buf.get(), in.data() + full * Vectors,
                                         at.data() + full * Vectors, 1, off.data(), taps, wg, yg,
                                         OH * OW, channels);
                   }
                 }
               });
}

}  // namespace

void direct_conv_positions_f32(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                               int64_t c_out, const Geom& g) {
  if (wide_vectors(g.out[2]))
    run_positions<kLanes512, kChannels512, kVectors512>(kKernels512, x, w, y, n, c_in, c_out, g);
  else
    run_positions<kLanes, kChannels, kVectors>(kKernels, x, w, y, n, c_in, c_out, g);
}
#else
void direct_conv_positions_f32(const float*, const float*, float*, int64_t, int64_t, int64_t,
                               const Geom&) {}
#endif

}  // namespace ember::cpu
