// Depthwise 3x3 convolutions with stride 1 on AVX2, read in place: each output row is vectors of
// 8 positions (the last overlapping the one before where the row is not a multiple of 8), each
// the sum of 9 FMAs of an input vector at the tap's shift with the tap's weight. Under a column
// padding of 1, the first vector's left taps and the last one's right taps read the row shifted
// by a lane with a zero where the padding is; window rows over the padding read a row of zeros:
// nothing is copied. The weight gradient walks the same vectors, multiplying each vector of
// output gradients into the 9 shifted inputs (9 sums a channel, in registers); the input
// gradient is the forward of the turned-around window (depthwise.cpp). The portable path
// (depthwise.cpp) padded each plane into a wide layout, summed the taps there with separate
// multiplies and adds, and copied the rows out: 1.99 ms for 8 x 64 x 56 x 56 on one thread.
#include <algorithm>
#include <vector>

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

// One vector of outputs from the window rows r0, r1, r2 at column o (the first tap's: the
// position less the column padding), a sum per window row (three short chains, not one of 9
// FMAs). kLeft: the vector starts a row under a column padding of 1, its first taps read the row
// moved a lane up with a zero before it; kRight: it ends one, its last taps read the row moved
// a lane down with a zero after it.
template <bool kLeft, bool kRight>
EMBER_TARGET_AVX2 inline __m256 vector3x3(const float* r0, const float* r1, const float* r2,
                                          int64_t o, const __m256 (&wv)[9]) {
  auto row = [&](const float* r, int k) {
    const __m256 a = kLeft ? shift_up(r + o + 1) : _mm256_loadu_ps(r + o);
    const __m256 c = kRight ? shift_down(r + o + 1) : _mm256_loadu_ps(r + o + 2);
    const __m256 s = _mm256_mul_ps(a, wv[k]);
    return _mm256_fmadd_ps(c, wv[k + 2], _mm256_fmadd_ps(_mm256_loadu_ps(r + o + 1), wv[k + 1], s));
  };
  const __m256 s0 = row(r0, 0), s1 = row(r1, 3), s2 = row(r2, 6);
  return _mm256_add_ps(_mm256_add_ps(s0, s1), s2);
}

// One plane: y[oh][ow] = sum over kh, kw of w[kh][kw] x[oh + kh - ph][ow + kw - pw]. Window rows
// over the padding read `zeros` (W floats), so every row runs the same code; a row's vectors
// start at 0, 8, ... and the last ends at the row's end (overlapping the one before where the
// row is not a multiple of 8). An earlier version looped over the window rows inside the image
// for the rows near the top and bottom and the vectors at the edges, with the weights indexed
// from memory there: 0.82 ms for 8 x 64 x 56 x 56 on one thread.
EMBER_TARGET_AVX2 void plane3x3(const float* x, int64_t H, int64_t W, const float* w, float* y,
                                int64_t OH, int64_t OW, int64_t ph, int64_t pw,
                                const float* zeros) {
  __m256 wv[9];
  for (int t = 0; t < 9; ++t) wv[t] = _mm256_broadcast_ss(w + t);
  const int64_t last = OW - 8;  // the last vector's position
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r[3];
    for (int64_t kh = 0; kh < 3; ++kh) {
      const int64_t iy = oh + kh - ph;
      r[kh] = iy >= 0 && iy < H ? x + iy * W : zeros;
    }
    float* yr = y + oh * OW;
    if (pw == 1 && last == 0) {
      _mm256_storeu_ps(yr, vector3x3<true, true>(r[0], r[1], r[2], -1, wv));
      continue;
    }
    int64_t ow = 0;
    if (pw == 1) {
      _mm256_storeu_ps(yr, vector3x3<true, false>(r[0], r[1], r[2], -1, wv));
      ow = 8;
    }
    for (; ow + 8 < last; ow += 16) {  // two vectors clear of the right edge
      _mm256_storeu_ps(yr + ow, vector3x3<false, false>(r[0], r[1], r[2], ow - pw, wv));
      _mm256_storeu_ps(yr + ow + 8, vector3x3<false, false>(r[0], r[1], r[2], ow + 8 - pw, wv));
    }
    if (ow < last)
      _mm256_storeu_ps(yr + ow, vector3x3<false, false>(r[0], r[1], r[2], ow - pw, wv));
    if (pw == 1)
      _mm256_storeu_ps(yr + last, vector3x3<false, true>(r[0], r[1], r[2], last - 1, wv));
    else
      _mm256_storeu_ps(yr + last, vector3x3<false, false>(r[0], r[1], r[2], last, wv));
  }
}

// The weight gradient's sums for one vector of positions, gv their output gradients (zero in the
// lanes counted already): acc[3 a + b] += gv * the input at tap (a, b), read as vector3x3 reads
// it.
template <bool kLeft, bool kRight>
EMBER_TARGET_AVX2 inline void grad_vector3x3(const float* const (&r)[3], int64_t o, __m256 gv,
                                             __m256 (&acc)[9]) {
#pragma GCC unroll 3
  for (int a = 0; a < 3; ++a) {
    const __m256 xa = kLeft ? shift_up(r[a] + o + 1) : _mm256_loadu_ps(r[a] + o);
    const __m256 xc = kRight ? shift_down(r[a] + o + 1) : _mm256_loadu_ps(r[a] + o + 2);
    acc[3 * a] = _mm256_fmadd_ps(gv, xa, acc[3 * a]);
    acc[3 * a + 1] = _mm256_fmadd_ps(gv, _mm256_loadu_ps(r[a] + o + 1), acc[3 * a + 1]);
    acc[3 * a + 2] = _mm256_fmadd_ps(gv, xc, acc[3 * a + 2]);
  }
}

// acc[t] += the products of one plane's output gradients gy with its input x at tap t, over
// the vectors plane3x3 computes (the last one's lanes that the one before it covered masked out,
// so that each position counts once).
EMBER_TARGET_AVX2 void plane_weight_grad3x3(const float* x, int64_t H, int64_t W, const float* gy,
                                            int64_t OH, int64_t OW, int64_t ph, int64_t pw,
                                            const float* zeros, __m256 (&acc)[9]) {
  const int64_t last = OW - 8;
  const int64_t covered = (last + 7) / 8 * 8 - last;  // lanes of the last vector counted before
  const __m256 fresh = _mm256_castsi256_ps(_mm256_cmpgt_epi32(
      _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7), _mm256_set1_epi32(int(covered) - 1)));
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r[3];
    for (int64_t kh = 0; kh < 3; ++kh) {
      const int64_t iy = oh + kh - ph;
      r[kh] = iy >= 0 && iy < H ? x + iy * W : zeros;
    }
    const float* g = gy + oh * OW;
    if (pw == 1 && last == 0) {
      grad_vector3x3<true, true>(r, -1, _mm256_loadu_ps(g), acc);
      continue;
    }
    int64_t ow = 0;
    if (pw == 1) {
      grad_vector3x3<true, false>(r, -1, _mm256_loadu_ps(g), acc);
      ow = 8;
    }
    for (; ow < last; ow += 8)
      grad_vector3x3<false, false>(r, ow - pw, _mm256_loadu_ps(g + ow), acc);
    const __m256 gv = _mm256_and_ps(_mm256_loadu_ps(g + last), fresh);
    if (pw == 1)
      grad_vector3x3<false, true>(r, last - 1, gv, acc);
    else
      grad_vector3x3<false, false>(r, last, gv, acc);
  }
}

}  // namespace

bool depthwise3x3_avx2_fits(const Geom& g) {
  if (cpu_isa() < CpuIsa::Avx2 || g.in[0] != 1 || g.k[0] != 1) return false;
  for (int i = 1; i < 3; ++i)
    if (g.k[i] != 3 || g.s[i] != 1 || g.d[i] != 1 || g.p[i] < 0 || g.p[i] > 1 ||
        g.out[i] != g.in[i] + 2 * g.p[i] - 2)
      return false;
  return g.out[2] >= 8;
}

void depthwise3x3_avx2(const float* x, const float* w, float* y, int64_t n, int64_t c_in,
                       int64_t per_group, const Geom& g) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t c_out = c_in * per_group;
  parallel_for(n * c_out, std::max<int64_t>(1, kGrain / (9 * OH * OW)), [&](int64_t b, int64_t e) {
    const std::vector<float> zeros(static_cast<size_t>(W), 0.0f);  // a window row over the padding
    for (int64_t item = b; item < e; ++item) {
      const int64_t img = item / c_out, co = item % c_out;
      plane3x3(x + (img * c_in + co / per_group) * H * W, H, W, w + co * 9, y + item * OH * OW, OH,
               OW, g.p[1], g.p[2], zeros.data());
    }
  });
}
void depthwise3x3_weight_grad_avx2(const float* x, const float* gy, float* dw, int64_t n,
                                   int64_t c_in, int64_t per_group, const Geom& g) {
  const int64_t H = g.in[1], W = g.in[2], OH = g.out[1], OW = g.out[2];
  const int64_t c_out = c_in * per_group;
  // A task per output channel, over every image: its 9 sums stay in registers throughout.
  parallel_for(c_out, 1, [&](int64_t b, int64_t e) {
    const std::vector<float> zeros(static_cast<size_t>(W), 0.0f);
    for (int64_t co = b; co < e; ++co) {
      __m256 acc[9];
      for (auto& a : acc) a = _mm256_setzero_ps();
      for (int64_t img = 0; img < n; ++img)
        plane_weight_grad3x3(x + (img * c_in + co / per_group) * H * W, H, W,
                             gy + (img * c_out + co) * OH * OW, OH, OW, g.p[1], g.p[2],
                             zeros.data(), acc);
      for (int t = 0; t < 9; ++t) {
        alignas(32) float lanes[8];
        _mm256_store_ps(lanes, acc[t]);
        double sum = 0;
        for (float v : lanes) sum += v;
        dw[co * 9 + t] = static_cast<float>(sum);
      }
    }
  });
}
#else
bool depthwise3x3_avx2_fits(const Geom&) { return false; }
void depthwise3x3_avx2(const float*, const float*, float*, int64_t, int64_t, int64_t, const Geom&) {
}
void depthwise3x3_weight_grad_avx2(const float*, const float*, float*, int64_t, int64_t, int64_t,
                                   const Geom&) {}
#endif

}  // namespace ember::cpu
