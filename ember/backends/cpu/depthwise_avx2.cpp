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

// The three taps of window row r for the vector of outputs whose first tap reads column o (the
// position less the column padding). kLeft: the vector starts a row under a column padding of 1,
// its first tap reads the row moved a lane up with a zero before it; kRight: it ends one, its
// last tap reads the row moved a lane down with a zero after it.
template <bool kLeft, bool kRight>
EMBER_TARGET_AVX2 inline void taps3(const float* r, int64_t o, __m256 (&t)[3]) {
  t[0] = kLeft ? shift_up(r + o + 1) : _mm256_loadu_ps(r + o);
  t[1] = _mm256_loadu_ps(r + o + 1);
  t[2] = kRight ? shift_down(r + o + 1) : _mm256_loadu_ps(r + o + 2);
}

// The three window rows of output row oh: the input's rows, or `zeros` (W floats) for those over
// the padding, so that every output row runs the same code.
inline void window_rows(const float* x, int64_t H, int64_t W, int64_t oh, int64_t ph,
                        const float* zeros, const float* (&r)[3]) {
  for (int64_t kh = 0; kh < 3; ++kh) {
    const int64_t iy = oh + kh - ph;
    r[kh] = iy >= 0 && iy < H ? x + iy * W : zeros;
  }
}

// Calls f.template operator()<kLeft, kRight>(ow) for the vectors of an output row of OW >= 8
// positions: at 0, 8, ... and the last at OW - 8 (over the one before where OW is not a multiple
// of 8), kLeft and kRight where a vector meets a column padding of 1 (taps3).
template <class F>
EMBER_TARGET_AVX2 inline void for_row_vectors(int64_t OW, int64_t pw, F&& f) {
  const int64_t last = OW - 8;
  if (pw == 1 && last == 0) return f.template operator()<true, true>(int64_t{0});
  int64_t ow = 0;
  if (pw == 1) f.template operator()<true, false>(ow), ow = 8;
  for (; ow + 8 < last; ow += 16) {  // two at a time between the edges: 4% on the forward
    f.template operator()<false, false>(ow);
    f.template operator()<false, false>(ow + 8);
  }
  if (ow < last) f.template operator()<false, false>(ow);
  if (pw == 1)
    f.template operator()<false, true>(last);
  else
    f.template operator()<false, false>(last);
}

// One plane: y[oh][ow] = sum over kh, kw of w[kh][kw] x[oh + kh - ph][ow + kw - pw], each vector
// a sum per window row (three short chains, not one of 9 FMAs). An earlier version looped over
// the window rows inside the image for the rows near the top and bottom and the vectors at the
// edges, with the weights indexed from memory there: 0.82 ms for 8 x 64 x 56 x 56 on one thread.
EMBER_TARGET_AVX2 void plane3x3(const float* x, int64_t H, int64_t W, const float* w, float* y,
                                int64_t OH, int64_t OW, int64_t ph, int64_t pw,
                                const float* zeros) {
  __m256 wv[9];
  for (int t = 0; t < 9; ++t) wv[t] = _mm256_broadcast_ss(w + t);
  for (int64_t oh = 0; oh < OH; ++oh) {
    const float* r[3];
    window_rows(x, H, W, oh, ph, zeros, r);
    float* yr = y + oh * OW;
    for_row_vectors(OW, pw, [&]<bool kLeft, bool kRight>(int64_t ow) EMBER_TARGET_AVX2 {
      __m256 s[3];
      for (int k = 0; k < 3; ++k) {
        __m256 t[3];
        taps3<kLeft, kRight>(r[k], ow - pw, t);
        s[k] =
            _mm256_fmadd_ps(t[2], wv[3 * k + 2],
                            _mm256_fmadd_ps(t[1], wv[3 * k + 1], _mm256_mul_ps(t[0], wv[3 * k])));
      }
      _mm256_storeu_ps(yr + ow, _mm256_add_ps(_mm256_add_ps(s[0], s[1]), s[2]));
    });
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
    window_rows(x, H, W, oh, ph, zeros, r);
    const float* g = gy + oh * OW;
    for_row_vectors(OW, pw, [&]<bool kLeft, bool kRight>(int64_t ow) EMBER_TARGET_AVX2 {
      __m256 gv = _mm256_loadu_ps(g + ow);
      if (ow == last) gv = _mm256_and_ps(gv, fresh);
      for (int k = 0; k < 3; ++k) {
        __m256 t[3];
        taps3<kLeft, kRight>(r[k], ow - pw, t);
        for (int b = 0; b < 3; ++b) acc[3 * k + b] = _mm256_fmadd_ps(gv, t[b], acc[3 * k + b]);
      }
    });
  }
}

// dw[0, 9) = one output channel's weight gradient over n images, its input planes x_step apart
// from x and its output gradients' gy_step apart from gy: 9 sums in registers, added up in
// double at the end.
EMBER_TARGET_AVX2 void channel_weight_grad3x3(const float* x, int64_t x_step, const float* gy,
                                              int64_t gy_step, int64_t n, const Geom& g,
                                              const float* zeros, float* dw) {
  __m256 acc[9];
  for (auto& a : acc) a = _mm256_setzero_ps();
  for (int64_t img = 0; img < n; ++img)
    plane_weight_grad3x3(x + img * x_step, g.in[1], g.in[2], gy + img * gy_step, g.out[1], g.out[2],
                         g.p[1], g.p[2], zeros, acc);
  for (int t = 0; t < 9; ++t) {
    alignas(32) float lanes[8];
    _mm256_store_ps(lanes, acc[t]);
    double sum = 0;
    for (float v : lanes) sum += v;
    dw[t] = static_cast<float>(sum);
  }
}

}  // namespace

bool depthwise3x3_avx2_fits(const Geom& g) {
  if (cpu_isa() < CpuIsa::Avx2 || g.in[0] != 1 || g.k[0] != 1 || g.out[0] != 1 || g.p[0] != 0)
    return false;
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
    for (int64_t co = b; co < e; ++co)
      channel_weight_grad3x3(x + co / per_group * H * W, c_in * H * W, gy + co * OH * OW,
                             c_out * OH * OW, n, g, zeros.data(), dw + co * 9);
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
