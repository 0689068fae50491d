// Depthwise 2-d convolutions of small planes with the channels in the vector lanes. The planes of
// 8 channels are transposed into one padded buffer of [H + 2p][W + 2p][8] (position-major, the 8
// channels of a position side by side), every output is then a sum of one vector FMA per tap
// (a tap's 8 channel weights times the 8 channels at the tap's input position), 8 outputs at a
// time, and the [out positions][8] result is transposed back into the 8 output planes. Any
// stride and dilation, and paddings up to the window's size: a tap is one offset into the
// buffer for every output.
//
// The plane-at-a-time loops (depthwise.cpp) pay per plane for laying it out and per output row
// for its vectors: a 14 x 14 plane at stride 2 has output rows of 7, under one vector. On 2
// threads of an AMD EPYC (Zen 4), 5x5 at stride 2 over 8 x 672 x 14^2 took 0.61 ms that way
// (PyTorch 1.13: 0.22-0.27 ms, its oneDNN kernel in a channel-blocked layout), 0.24-0.31 this
// way; its weight gradient 1.55 -> 0.25 ms, its transposed conv 1.55 -> 0.50
// (docs/cpu-measurements.md, "Small planes with the channels in the lanes").
#include <algorithm>
#include <vector>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/transpose16.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

#if defined(__x86_64__)
namespace {

constexpr int64_t kLanes = 8;  // channels a vector (AVX2)

// The padded buffer's geometry and each output's and each tap's offset into it (floats).
struct LanesLayout {
  int64_t rows, pitch;          // padded input rows and their positions
  std::vector<int64_t> in_at;   // input position q (row-major over the plane): where it goes
  std::vector<int64_t> out_at;  // output p (row-major over the output plane): its window's start
  std::vector<int64_t> tap_at;  // tap t (row-major over the window): its offset from there
  explicit LanesLayout(const Geom& g) : rows(g.in[1] + 2 * g.p[1]), pitch(g.in[2] + 2 * g.p[2]) {
    for (int64_t h = 0; h < g.in[1]; ++h)
      for (int64_t w = 0; w < g.in[2]; ++w)
        in_at.push_back(((h + g.p[1]) * pitch + w + g.p[2]) * kLanes);
    for (int64_t oh = 0; oh < g.out[1]; ++oh)
      for (int64_t ow = 0; ow < g.out[2]; ++ow)
        out_at.push_back((oh * g.s[1] * pitch + ow * g.s[2]) * kLanes);
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw)
        tap_at.push_back((kh * g.d[1] * pitch + kw * g.d[2]) * kLanes);
  }
  int64_t buffer() const { return rows * pitch * kLanes; }
};

// The places of n positions stored one after the other, 8 channels each: 0, 8, 16, ...
std::vector<int64_t> flat_places(int64_t n) {
  std::vector<int64_t> at(static_cast<size_t>(n));
  for (int64_t q = 0; q < n; ++q) at[size_t(q)] = q * kLanes;
  return at;
}

// The planes x[c] (n positions each) into buf, channel c in lane c, position q at buf + at[q]:
// 8 positions of the planes (in their flat order, across rows) at a time through registers, each
// then stored at its place; the last 8 overlap the ones before. The rest of buf is left as it is.
EMBER_TARGET_AVX2 void planes_to_lanes(const float* const (&x)[kLanes], const int64_t* at,
                                       int64_t n, float* buf) {
  if (n < kLanes) {
    for (int64_t q = 0; q < n; ++q)
      for (int64_t c = 0; c < kLanes; ++c) buf[at[q] + c] = x[c][q];
    return;
  }
  for (int64_t q0 = 0; q0 < n; q0 += kLanes) {
    const int64_t q = std::min(q0, n - kLanes);
    __m256 r[kLanes];
    for (int64_t c = 0; c < kLanes; ++c) r[c] = _mm256_loadu_ps(x[c] + q);
    transpose8x8(r);
    for (int64_t j = 0; j < kLanes; ++j) _mm256_storeu_ps(buf + at[q + j], r[j]);
  }
}

// The inverse: the first `channels` planes y[c] (n positions each) out of z, position q at z +
// at[q], 8 positions at a time through registers (the last 8 overlapping the ones before).
EMBER_TARGET_AVX2 void lanes_to_planes(const float* z, const int64_t* at, int64_t n,
                                       int64_t channels, float* const (&y)[kLanes]) {
  if (n < kLanes) {
    for (int64_t q = 0; q < n; ++q)
      for (int64_t c = 0; c < channels; ++c) y[c][q] = z[at[q] + c];
    return;
  }
  for (int64_t q0 = 0; q0 < n; q0 += kLanes) {
    const int64_t q = std::min(q0, n - kLanes);
    __m256 r[kLanes];
    for (int64_t j = 0; j < kLanes; ++j) r[j] = _mm256_loadu_ps(z + at[q + j]);
    transpose8x8(r);
    for (int64_t c = 0; c < channels; ++c) _mm256_storeu_ps(y[c] + q, r[c]);
  }
}

// z[p] = the sum over taps t of w[t] * buf[out_at[p] + tap_at[t]] (vectors of 8 channels): 8
// outputs at a time, 8 chains of FMAs, each tap's weights loaded once for them.
EMBER_TARGET_AVX2 void lanes_taps(const float* buf, const LanesLayout& f, const float* w,
                                  float* z) {
  const int64_t L = int64_t(f.out_at.size()), K = int64_t(f.tap_at.size());
  const int64_t* tap = f.tap_at.data();
  int64_t p = 0;
  for (; p + 8 <= L; p += 8) {
    const float* b[8];
    for (int i = 0; i < 8; ++i) b[i] = buf + f.out_at[size_t(p + i)];
    __m256 a0 = _mm256_setzero_ps(), a1 = a0, a2 = a0, a3 = a0, a4 = a0, a5 = a0, a6 = a0, a7 = a0;
    for (int64_t t = 0; t < K; ++t) {
      const __m256 wt = _mm256_loadu_ps(w + t * kLanes);
      const int64_t o = tap[t];
      a0 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[0] + o), a0);
      a1 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[1] + o), a1);
      a2 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[2] + o), a2);
      a3 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[3] + o), a3);
      a4 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[4] + o), a4);
      a5 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[5] + o), a5);
      a6 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[6] + o), a6);
      a7 = _mm256_fmadd_ps(wt, _mm256_loadu_ps(b[7] + o), a7);
    }
    float* out = z + p * kLanes;
    _mm256_storeu_ps(out, a0);
    _mm256_storeu_ps(out + 8, a1);
    _mm256_storeu_ps(out + 16, a2);
    _mm256_storeu_ps(out + 24, a3);
    _mm256_storeu_ps(out + 32, a4);
    _mm256_storeu_ps(out + 40, a5);
    _mm256_storeu_ps(out + 48, a6);
    _mm256_storeu_ps(out + 56, a7);
  }
  for (; p < L; ++p) {
    const float* b = buf + f.out_at[size_t(p)];
    __m256 a = _mm256_setzero_ps();
    for (int64_t t = 0; t < K; ++t)
      a = _mm256_fmadd_ps(_mm256_loadu_ps(w + t * kLanes), _mm256_loadu_ps(b + tap[t]), a);
    _mm256_storeu_ps(z + p * kLanes, a);
  }
}

// acc[t] += the sum over outputs p of gz[p] * buf[out_at[p] + tap_at[t]] for the G taps from
// t0 (vectors of 8 channels): one chain of FMAs a tap, each output's gradient loaded once for
// them.
template <int G>
EMBER_TARGET_AVX2 void lanes_tap_grads(const float* buf, const LanesLayout& f, const float* gz,
                                       int64_t t0, float* acc) {
  const int64_t L = int64_t(f.out_at.size());
  __m256 a[G];
  for (int i = 0; i < G; ++i) a[i] = _mm256_setzero_ps();
  int64_t tap[G];
  for (int i = 0; i < G; ++i) tap[i] = f.tap_at[size_t(t0 + i)];
  for (int64_t p = 0; p < L; ++p) {
    const __m256 gv = _mm256_loadu_ps(gz + p * kLanes);
    const float* b = buf + f.out_at[size_t(p)];
    for (int i = 0; i < G; ++i) a[i] = _mm256_fmadd_ps(gv, _mm256_loadu_ps(b + tap[i]), a[i]);
  }
  for (int i = 0; i < G; ++i) {
    float* out = acc + (t0 + i) * kLanes;
    _mm256_storeu_ps(out, _mm256_add_ps(_mm256_loadu_ps(out), a[i]));
  }
}

// The transposed conv: buf[out_at[p] + tap_at[t]] += w[t] * gz[p] over outputs p and taps t
// (vectors of 8 channels), each output's value loaded once for its taps.
EMBER_TARGET_AVX2 void lanes_scatter(const float* gz, const LanesLayout& f, const float* w,
                                     float* buf) {
  const int64_t L = int64_t(f.out_at.size()), K = int64_t(f.tap_at.size());
  const int64_t* tap = f.tap_at.data();
  for (int64_t p = 0; p < L; ++p) {
    const __m256 g = _mm256_loadu_ps(gz + p * kLanes);
    float* b = buf + f.out_at[size_t(p)];
    for (int64_t t = 0; t < K; ++t) {
      float* d = b + tap[t];
      _mm256_storeu_ps(d, _mm256_fmadd_ps(g, _mm256_loadu_ps(w + t * kLanes), _mm256_loadu_ps(d)));
    }
  }
}

// wv[t][lane] = w[c0 + lane][t] (K taps a channel), lanes past the last of `channels` 0.
void weights_to_lanes(const float* w, int64_t K, int64_t c0, int64_t channels, float* wv) {
  std::fill(wv, wv + K * kLanes, 0.0f);
  for (int64_t ch = 0; ch < channels; ++ch)
    for (int64_t t = 0; t < K; ++t) wv[t * kLanes + ch] = w[(c0 + ch) * K + t];
}

// planes[lane] = image img's plane of channel c0 + lane (of c, `plane` values each, from base),
// lanes past the last of `channels` at its plane again (their sums are dropped).
template <class T>
void block_planes(T* base, int64_t plane, int64_t img, int64_t c, int64_t c0, int64_t channels,
                  T* (&planes)[kLanes]) {
  for (int64_t ch = 0; ch < kLanes; ++ch)
    planes[ch] = base + (img * c + c0 + std::min(ch, channels - 1)) * plane;
}

// Runs body(from, to, wv, channels, buf, z) for every image and block of 8 channels, in
// parallel: from and to the block's planes of src (`src_plane` values each) and dst
// (block_planes); wv the block's weights in lanes
// (weights_to_lanes); buf (the padded buffer) and z (the other side's values in lanes) a
// thread's own, zeros when it starts. Apart: with z right after buf, the forward of 5x5 over 8 x
// 1152 x 7^2 took 0.46 ms against 0.33 (likely loads of buf taken as waiting on stores to z
// 4 KiB on: both at the same offsets within a page).
template <class Body>
void for_blocks(const float* src, int64_t src_plane, float* dst, int64_t dst_plane, const float* w,
                const LanesLayout& f, int64_t n, int64_t c, Body&& body) {
  const int64_t K = int64_t(f.tap_at.size()), L = int64_t(f.out_at.size());
  const int64_t work = (int64_t(f.in_at.size()) + L * K) * kLanes;
  const int64_t blocks = (c + kLanes - 1) / kLanes;
  parallel_for(n * blocks, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<float> buf(static_cast<size_t>(f.buffer()), 0.0f);
                 std::vector<float> z(static_cast<size_t>(L * kLanes), 0.0f);
                 std::vector<float> wv(static_cast<size_t>(K * kLanes));
                 int64_t weights_of = -1;  // the block whose weights wv holds
                 for (int64_t item = b; item < e; ++item) {
                   // a block's images one after the other: its weights are laid out once
                   const int64_t img = item % n, c0 = item / n * kLanes;
                   const int64_t channels = std::min(kLanes, c - c0);
                   if (weights_of != c0) {
                     weights_to_lanes(w, K, c0, channels, wv.data());
                     weights_of = c0;
                   }
                   const float* from[kLanes];
                   float* to[kLanes];
                   block_planes(src, src_plane, img, c, c0, channels, from);
                   block_planes(dst, dst_plane, img, c, c0, channels, to);
                   body(from, to, wv.data(), channels, buf.data(), z.data());
                 }
               });
}

}  // namespace

bool depthwise_lanes_fits(const Geom& g, int64_t per_group) {
  if (cpu_isa() < CpuIsa::Avx2 || per_group != 1 || g.in[0] != 1 || g.k[0] != 1 || g.out[0] != 1 ||
      g.p[0] != 0)
    return false;
  for (int i = 1; i < 3; ++i)
    if (g.p[i] < 0 || g.p[i] > g.k[i]) return false;
  // Small planes only: from output rows of 16 the plane loops' vectors are full.
  return g.out[2] < 16 && (g.in[1] + 2 * g.p[1]) * (g.in[2] + 2 * g.p[2]) <= 64 * 64;
}

void depthwise_lanes(const float* x, const float* w, float* y, int64_t n, int64_t c,
                     const Geom& g) {
  const LanesLayout f(g);
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  const std::vector<int64_t> flat = flat_places(L);
  // the padding of buf stays zero throughout
  for_blocks(x, Lin, y, L, w, f, n, c,
             [&](const float* const(&from)[kLanes], float* const(&to)[kLanes], const float* wv,
                 int64_t channels, float* buf, float* z) {
               planes_to_lanes(from, f.in_at.data(), Lin, buf);
               lanes_taps(buf, f, wv, z);
               lanes_to_planes(z, flat.data(), L, channels, to);
             });
}

void depthwise_lanes_transpose(const float* x, const float* w, float* y, int64_t n, int64_t c,
                               const Geom& g) {
  const LanesLayout f(g);
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  const std::vector<int64_t> flat = flat_places(L);
  // x's values in lanes scattered tap by tap into buf, zeroed for each block
  for_blocks(x, L, y, Lin, w, f, n, c,
             [&](const float* const(&from)[kLanes], float* const(&to)[kLanes], const float* wv,
                 int64_t channels, float* buf, float* gz) {
               planes_to_lanes(from, flat.data(), L, gz);
               std::fill(buf, buf + f.buffer(), 0.0f);
               lanes_scatter(gz, f, wv, buf);
               lanes_to_planes(buf, f.in_at.data(), Lin, channels, to);
             });
}

void depthwise_lanes_weight_grad(const float* x, const float* gy, float* dw, int64_t n, int64_t c,
                                 const Geom& g) {
  const LanesLayout f(g);
  const int64_t K = g.k_numel(), Lin = g.in_numel(), L = g.out_numel();
  const int64_t blocks = (c + kLanes - 1) / kLanes;
  const std::vector<int64_t> flat = flat_places(L);
  parallel_for(blocks, 1, [&](int64_t b, int64_t e) {
    std::vector<float> buf(static_cast<size_t>(f.buffer()), 0.0f);
    std::vector<float> gz(static_cast<size_t>(L * kLanes)), acc(static_cast<size_t>(K * kLanes));
    for (int64_t blk = b; blk < e; ++blk) {
      const int64_t c0 = blk * kLanes, channels = std::min(kLanes, c - c0);
      std::fill(acc.begin(), acc.end(), 0.0f);
      for (int64_t img = 0; img < n; ++img) {
        const float* planes[kLanes];
        const float* grads[kLanes];
        block_planes(x, Lin, img, c, c0, channels, planes);
        block_planes(gy, L, img, c, c0, channels, grads);
        planes_to_lanes(planes, f.in_at.data(), Lin, buf.data());
        planes_to_lanes(grads, flat.data(), L, gz.data());
        int64_t t = 0;
        for (; t + 8 <= K; t += 8) lanes_tap_grads<8>(buf.data(), f, gz.data(), t, acc.data());
        for (; t + 4 <= K; t += 4) lanes_tap_grads<4>(buf.data(), f, gz.data(), t, acc.data());
        for (; t < K; ++t) lanes_tap_grads<1>(buf.data(), f, gz.data(), t, acc.data());
      }
      for (int64_t ch = 0; ch < channels; ++ch)
        for (int64_t t = 0; t < K; ++t) dw[(c0 + ch) * K + t] = acc[size_t(t * kLanes + ch)];
    }
  });
}

#else
bool depthwise_lanes_fits(const Geom&, int64_t) { return false; }
void depthwise_lanes(const float*, const float*, float*, int64_t, int64_t, const Geom&) {}
void depthwise_lanes_transpose(const float*, const float*, float*, int64_t, int64_t, const Geom&) {}
void depthwise_lanes_weight_grad(const float*, const float*, float*, int64_t, int64_t,
                                 const Geom&) {}
#endif

}  // namespace ember::cpu
