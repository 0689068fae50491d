#include "ember/micro/kernels.h"

#include <math.h>

#include "ember/micro/tensor.h"

namespace ember::micro {

const char* detail::format_dims(char* buf, size_t size, const int64_t* dims, int rank) {
  size_t at = 0;
  auto put = [&](char c) {
    if (at + 1 < size) buf[at++] = c;
  };
  put('[');
  for (int i = 0; i < rank; ++i) {
    if (i) put(','), put(' ');
    char digits[24];
    int nd = 0;
    int64_t v = dims[i];
    if (v < 0) put('-'), v = -v;
    do digits[nd++] = static_cast<char>('0' + v % 10);
    while ((v /= 10) != 0);
    while (nd) put(digits[--nd]);
  }
  put(']');
  buf[at] = '\0';
  return buf;
}

namespace kernels {

namespace {
/// int8 to float by table: without an FPU the conversion is a library call per weight.
struct Int8Floats {
  float v[256];
  constexpr Int8Floats() : v() {
    for (int i = 0; i < 256; ++i) v[i] = static_cast<float>(i - 128);
  }
};
constexpr Int8Floats kInt8Floats;
inline float to_float(float w) { return w; }
inline float to_float(int8_t w) { return kInt8Floats.v[w + 128]; }

/// row[0, n) += x[0, k) · w [k, n], for float or int8 weights. k outer, n inner: the weight
/// rows are read in order; four at a time, so each output is loaded and stored once per four
/// products, and a block of zero inputs (after a ReLU) is skipped.
template <class W>
void accumulate(const float* x, const W* w, float* row, int32_t k, int32_t n) {
  int32_t p = 0;
  for (; p + 4 <= k; p += 4) {
    const float a0 = x[p], a1 = x[p + 1], a2 = x[p + 2], a3 = x[p + 3];
    if (a0 == 0.0f && a1 == 0.0f && a2 == 0.0f && a3 == 0.0f) continue;
    const W *w0 = w + p * n, *w1 = w0 + n, *w2 = w1 + n, *w3 = w2 + n;
    for (int32_t j = 0; j < n; ++j)
      row[j] +=
          a0 * to_float(w0[j]) + a1 * to_float(w1[j]) + a2 * to_float(w2[j]) + a3 * to_float(w3[j]);
  }
  for (; p < k; ++p) {
    const float a = x[p];
    if (a == 0.0f) continue;
    const W* wp = w + p * n;
    for (int32_t j = 0; j < n; ++j) row[j] += a * to_float(wp[j]);
  }
}
}  // namespace

void linear(const float* x, const float* w, const float* b, float* y, int32_t m, int32_t k,
            int32_t n) {
  for (int32_t i = 0; i < m; ++i) {
    float* row = y + i * n;
    for (int32_t j = 0; j < n; ++j) row[j] = b ? b[j] : 0.0f;
    accumulate(x + i * k, w, row, k, n);
  }
}

void linear_q8(const float* x, const int8_t* q, const float* scale, const float* b, float* y,
               int32_t m, int32_t k, int32_t n) {
  for (int32_t i = 0; i < m; ++i) {
    float* row = y + i * n;
    for (int32_t j = 0; j < n; ++j) row[j] = 0.0f;
    accumulate(x + i * k, q, row, k, n);
    for (int32_t j = 0; j < n; ++j) row[j] = row[j] * scale[j] + (b ? b[j] : 0.0f);
  }
}

void conv2d(const float* x, const float* w, const float* b, float* y, const Window2d& g,
            int32_t c_out, int32_t groups) {
  const int32_t oh = g.out_h(), ow = g.out_w();
  const int32_t cin_g = g.c / groups, cout_g = c_out / groups;
  // One weight at a time over the whole output plane: the inner loop is a contiguous
  // multiply-add with its bounds worked out once per kernel column, not per element.
  for (int32_t n = 0; n < g.n; ++n)
    for (int32_t co = 0; co < c_out; ++co) {
      const int32_t grp = co / cout_g;
      float* yc = y + (n * c_out + co) * oh * ow;
      for (int32_t i = 0; i < oh * ow; ++i) yc[i] = b ? b[co] : 0.0f;
      for (int32_t ci = 0; ci < cin_g; ++ci) {
        const float* xc = x + (n * g.c + grp * cin_g + ci) * g.h * g.w;
        const float* wk = w + (co * cin_g + ci) * g.kh * g.kw;
        for (int32_t kx = 0; kx < g.kw; ++kx) {
          // The outputs whose input column ox * sw - pw + kx * dw lies inside the row.
          const int32_t shift = kx * g.dw - g.pw;
          const int32_t lo = shift >= 0 ? 0 : (-shift + g.sw - 1) / g.sw;
          const int32_t last = g.w - 1 - shift;
          const int32_t hi = last < 0 ? -1 : (last / g.sw < ow - 1 ? last / g.sw : ow - 1);
          for (int32_t oy = 0; oy < oh; ++oy) {
            float* yr = yc + oy * ow;
            int32_t ky = 0;
            // Three kernel rows at a time when all three lie inside the input: one load and
            // store of each output per three products.
            for (; ky + 3 <= g.kh; ky += 3) {
              const int32_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (iy < 0 || iy + 2 * g.dh >= g.h) break;
              const float w0 = wk[ky * g.kw + kx], w1 = wk[(ky + 1) * g.kw + kx],
                          w2 = wk[(ky + 2) * g.kw + kx];
              const float* x0 = xc + iy * g.w;
              const float *x1 = x0 + g.dh * g.w, *x2 = x1 + g.dh * g.w;
              for (int32_t ox = lo; ox <= hi; ++ox) {
                const int32_t ix = ox * g.sw + shift;
                yr[ox] += w0 * x0[ix] + w1 * x1[ix] + w2 * x2[ix];
              }
            }
            for (; ky < g.kh; ++ky) {
              const int32_t iy = oy * g.sh - g.ph + ky * g.dh;
              if (iy < 0 || iy >= g.h) continue;
              const float wv = wk[ky * g.kw + kx];
              const float* xr = xc + iy * g.w;
              for (int32_t ox = lo; ox <= hi; ++ox) yr[ox] += wv * xr[ox * g.sw + shift];
            }
          }
        }
      }
    }
}

namespace {
template <bool kMax>
void pool2d(const float* x, float* y, const Window2d& g) {
  const int32_t oh = g.out_h(), ow = g.out_w();
  for (int32_t p = 0; p < g.n * g.c; ++p) {
    const float* xc = x + p * g.h * g.w;
    float* yc = y + p * oh * ow;
    for (int32_t oy = 0; oy < oh; ++oy)
      for (int32_t ox = 0; ox < ow; ++ox) {
        float acc = kMax ? -INFINITY : 0.0f;
        for (int32_t ky = 0; ky < g.kh; ++ky) {
          const int32_t iy = oy * g.sh - g.ph + ky * g.dh;
          if (iy < 0 || iy >= g.h) continue;
          for (int32_t kx = 0; kx < g.kw; ++kx) {
            const int32_t ix = ox * g.sw - g.pw + kx * g.dw;
            if (ix < 0 || ix >= g.w) continue;
            const float v = xc[iy * g.w + ix];
            if (kMax)
              acc = v > acc || v != v ? v : acc;  // NaN propagates, as on the host
            else
              acc += v;
          }
        }
        yc[oy * ow + ox] = kMax ? acc : acc / static_cast<float>(g.kh * g.kw);
      }
  }
}
}  // namespace

void max_pool2d(const float* x, float* y, const Window2d& g) { pool2d<true>(x, y, g); }
void avg_pool2d(const float* x, float* y, const Window2d& g) { pool2d<false>(x, y, g); }

void softmax_rows(const float* x, float* y, int32_t rows, int32_t n, bool log) {
  for (int32_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float mx = -INFINITY;
    for (int32_t j = 0; j < n; ++j) mx = xr[j] > mx ? xr[j] : mx;
    float sum = 0.0f;
    for (int32_t j = 0; j < n; ++j) sum += expf(xr[j] - mx);
    const float lse = logf(sum);
    for (int32_t j = 0; j < n; ++j) yr[j] = log ? xr[j] - mx - lse : expf(xr[j] - mx) / sum;
  }
}

void layer_norm_rows(const float* x, const float* gamma, const float* beta, float* y, int32_t rows,
                     int32_t n, float epsilon) {
  for (int32_t r = 0; r < rows; ++r) {
    const float* xr = x + r * n;
    float* yr = y + r * n;
    float mean = 0.0f, var = 0.0f;
    for (int32_t j = 0; j < n; ++j) mean += xr[j];
    mean /= static_cast<float>(n);
    for (int32_t j = 0; j < n; ++j) var += (xr[j] - mean) * (xr[j] - mean);
    const float inv = 1.0f / sqrtf(var / static_cast<float>(n) + epsilon);
    for (int32_t j = 0; j < n; ++j) {
      const float v = (xr[j] - mean) * inv;
      yr[j] = (gamma ? gamma[j] : 1.0f) * v + (beta ? beta[j] : 0.0f);
    }
  }
}

void batch_norm(const float* x, const float* mean, const float* var, const float* gamma,
                const float* beta, float* y, int32_t n, int32_t c, int32_t inner, float epsilon) {
  for (int32_t b = 0; b < n; ++b)
    for (int32_t ch = 0; ch < c; ++ch) {
      const float scale = (gamma ? gamma[ch] : 1.0f) / sqrtf(var[ch] + epsilon);
      const float shift = (beta ? beta[ch] : 0.0f) - mean[ch] * scale;
      const float* xc = x + (b * c + ch) * inner;
      float* yc = y + (b * c + ch) * inner;
      for (int32_t i = 0; i < inner; ++i) yc[i] = xc[i] * scale + shift;
    }
}

namespace {
float sigmoid(float v) { return 1.0f / (1.0f + expf(-v)); }
}  // namespace

void gru_cell(const float* gi, const float* gh, float* h, int32_t hidden) {
  for (int32_t j = 0; j < hidden; ++j) {
    const float r = sigmoid(gi[j] + gh[j]);
    const float z = sigmoid(gi[hidden + j] + gh[hidden + j]);
    const float n = tanhf(gi[2 * hidden + j] + r * gh[2 * hidden + j]);
    h[j] = (1.0f - z) * n + z * h[j];
  }
}

void lstm_cell(const float* gi, const float* gh, float* h, float* c, int32_t hidden) {
  for (int32_t j = 0; j < hidden; ++j) {
    const float i = sigmoid(gi[j] + gh[j]);
    const float f = sigmoid(gi[hidden + j] + gh[hidden + j]);
    const float g = tanhf(gi[2 * hidden + j] + gh[2 * hidden + j]);
    const float o = sigmoid(gi[3 * hidden + j] + gh[3 * hidden + j]);
    c[j] = f * c[j] + i * g;
    h[j] = o * tanhf(c[j]);
  }
}

}  // namespace kernels
}  // namespace ember::micro
