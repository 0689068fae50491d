// Depthwise 3x3 convolutions with stride 1 on AVX2, read in place: each output row is vectors of
// 8 positions (the last overlapping the one before where the row is not a multiple of 8), each
// the sum of up to 9 FMAs of an input vector at the tap's shift with the tap's weight. Under a
// column padding of 1, the first vector's left taps and the last one's right taps read the row
// shifted by a lane with a zero where the padding is, and rows near the top and bottom leave out
// the window rows over the padding: nothing is copied. The portable path (depthwise.cpp) padded
// each plane into a wide layout, summed the taps there with separate multiplies and adds, and
// copied the rows out: 1.99 ms for 8 x 64 x 56 x 56 on one thread.
#include <algorithm>

#if defined(__x86_64__)
#include <immintrin.h>
#endif

#include "ember/backends/cpu/isa.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/core/thread_pool.h"

namespace ember::cpu {

#if defined(__x86_64__)
namespace {

// p[0..8) moved one lane up, lane 0 a zero (the padding column before a row: columns -1 to 6),
// or one lane down, lane 7 a zero (the one after it).
EMBER_TARGET_AVX2 inline __m256 shift_up(const float* p) {
  const __m256 v =
      _mm256_permutevar8x32_ps(_mm256_loadu_ps(p), _mm256_setr_epi32(0, 0, 1, 2, 3, 4, 5, 6));
  return _mm256_blend_ps(v, _mm256_setzero_ps(), 0x01);
}
EMBER_TARGET_AVX2 inline __m256 shift_down(const float* p) {
  const __m256 v =
      _mm256_permutevar8x32_ps(_mm256_loadu_ps(p), _mm256_setr_epi32(1, 2, 3, 4, 5, 6, 7, 7));
  return _mm256_blend_ps(v, _mm256_setzero_ps(), 0x80);
}

// One vector of outputs at ow, any row: the window rows [k0, k1) that are inside the image;
// `first` and `last`: the vector is at a row's edge under a column padding of 1.
EMBER_TARGET_AVX2 inline __m256 edge_vector(const float* x, int64_t W, const __m256 (&wv)[9],
                                            int64_t oh, int64_t k0, int64_t k1, int64_t ow,
                                            int64_t ph, int64_t pw, bool first, bool last) {
  __m256 acc = _mm256_setzero_ps();
  for (int64_t kh = k0; kh < k1; ++kh) {
    // the window row's taps read columns ow - pw + kw, kw < 3
    const float* r = x + (oh + kh - ph) * W;
    const __m256 a = first ? shift_up(r) : _mm256_loadu_ps(r + ow - pw);
    const __m256 c = last ? shift_down(r + ow) : _mm256_loadu_ps(r + ow + 2 - pw);
    acc = _mm256_fmadd_ps(a, wv[kh * 3], acc);
    acc = _mm256_fmadd_ps(_mm256_loadu_ps(r + ow + 1 - pw), wv[kh * 3 + 1], acc);
    acc = _mm256_fmadd_ps(c, wv[kh * 3 + 2], acc);
  }
  return acc;
}

// V vectors of outputs clear of a row's edges, from the three window rows r0, r1, r2 at column
// o (the first tap's): a sum per vector and window row.
template <int V>
EMBER_TARGET_AVX2 inline void inner_vectors(const float* r0, const float* r1, const float* r2,
                                            int64_t o, const __m256 (&wv)[9], float* y) {
  __m256 s[V][3];
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v) {
    s[v][0] = _mm256_mul_ps(_mm256_loadu_ps(r0 + o + 8 * v), wv[0]);
    s[v][1] = _mm256_mul_ps(_mm256_loadu_ps(r1 + o + 8 * v), wv[3]);
    s[v][2] = _mm256_mul_ps(_mm256_loadu_ps(r2 + o + 8 * v), wv[6]);
#pragma GCC unroll 2
    for (int kw = 1; kw < 3; ++kw) {
      s[v][0] = _mm256_fmadd_ps(_mm256_loadu_ps(r0 + o + 8 * v + kw), wv[kw], s[v][0]);
      s[v][1] = _mm256_fmadd_ps(_mm256_loadu_ps(r1 + o + 8 * v + kw), wv[3 + kw], s[v][1]);
      s[v][2] = _mm256_fmadd_ps(_mm256_loadu_ps(r2 + o + 8 * v + kw), wv[6 + kw], s[v][2]);
    }
  }
#pragma GCC unroll 2
  for (int v = 0; v < V; ++v)
    _mm256_storeu_ps(y + 8 * v, _mm256_add_ps(_mm256_add_ps(s[v][0], s[v][1]), s[v][2]));
}

// One plane: y[oh][ow] = sum over kh, kw of w[kh][kw] x[oh + kh - ph][ow + kw - pw]. A row's
// vectors between its edges (and rows whose window is inside the image) run two at a time with
// a sum per vector and window row: one chain of 9 dependent FMAs a vector waited on their
// latency (1.25 ms for 8 x 64 x 56 x 56 on one thread).
EMBER_TARGET_AVX2 void plane3x3(const float* x, int64_t H, int64_t W, const float* w, float* y,
                                int64_t OH, int64_t OW, int64_t ph, int64_t pw) {
  __m256 wv[9];
  for (int t = 0; t < 9; ++t) wv[t] = _mm256_broadcast_ss(w + t);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const int64_t k0 = std::max<int64_t>(0, ph - oh), k1 = std::min<int64_t>(3, H + ph - oh);
    float* yr = y + oh * OW;
    int64_t ow = 0;
    if (pw == 1) {  // the first vector, at the left edge
      _mm256_storeu_ps(yr, edge_vector(x, W, wv, oh, k0, k1, 0, ph, pw, true, OW == 8));
      ow = 8;
    }
    if (k0 == 0 && k1 == 3) {
      // the three window rows; position o's first tap reads column o - pw
      const float* r0 = x + (oh - ph) * W;
      const float* r1 = r0 + W;
      const float* r2 = r1 + W;
      for (; ow + 16 <= OW - pw; ow += 16)  // two vectors clear of the right edge
        inner_vectors<2>(r0, r1, r2, ow - pw, wv, yr + ow);
      if (ow + 8 <= OW - pw) {  // and one more
        inner_vectors<1>(r0, r1, r2, ow - pw, wv, yr + ow);
        ow += 8;
      }
    }
    // the rest, the last vector ending at the row's end
    for (; ow < OW; ow += 8) {
      ow = std::min(ow, OW - 8);
      _mm256_storeu_ps(
          yr + ow, edge_vector(x, W, wv, oh, k0, k1, ow, ph, pw, false, pw == 1 && ow == OW - 8));
    }
  }
}

}  // namespace

bool depthwise3x3_avx2_fits(const Geom& g) {
  if (cpu_isa() < CpuIsa::Avx2 || g.in[0] != 1 || g.k[0] != 1) return false;
  for (int i = 1; i < 3; ++i)
    if (g.k[i] != 3 || g.s[i] != 1 || g.d[i] != 1 || g.p[i] < 0 || g.p[i] > 1) return false;
  return g.out[2] >= 8;
}

void depthwise3x3_avx2(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                       int64_t per_group, const Geom& g) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t c_out = c_in * per_group;
  parallel_for(n * c_out, std::max<int64_t>(1, kGrain / (9 * OH * OW)), [&](int64_t b, int64_t e) {
    for (int64_t item = b; item < e; ++item) {
      const int64_t img = item / c_out, co = item % c_out;
      plane3x3(x + (img * c_in + co / per_group) * H * W, H, W, w + co * 9, y + item * OH * OW, OH,
               OW, g.p[1], g.p[2]);
    }
  });
}
#else
bool depthwise3x3_avx2_fits(const Geom&) { return false; }
void depthwise3x3_avx2(const float*, const float*, float*, int64_t, int64_t, int64_t, const Geom&) {
}
#endif

}  // namespace ember::cpu
