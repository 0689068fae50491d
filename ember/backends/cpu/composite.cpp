// Fused CPU kernels for composite ops: softmax and log_softmax in one pass over the data
// (max, exp-sum, scale) instead of five separate ops, layer_norm and rms_norm in one read and
// one write instead of nine ops, gelu, attention (attention.cpp) and the optimizers' updates
// (update_ops.cpp), int_matmul on AVX-512 VNNI (matmul.cpp) and int_conv (int_conv.cpp). Other
// composites use their decomposition.
#include <cmath>
#include <vector>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/backends/cpu/vmath.h"

namespace ember::cpu {

namespace {

using vmath::load8;
using vmath::vf8;

// m[r] = the largest of row r's n floats (rows n apart; NaN never wins: it comes back from exp
// later). The rows are read side by side: this is the first pass over them, from memory, and one
// sequential run per core is held to what the prefetchers fetch ahead of it (reduce.cpp).
template <int R>
void row_maxima(const float* x, int64_t n, float (&m)[R]) {
  vf8 acc[R][2];
  for (auto& a : acc) a[0] = a[1] = vf8{} - INFINITY;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int r = 0; r < R; ++r) {
      const vf8 a = load8(x + r * n + i), b = load8(x + r * n + i + 8);
      acc[r][0] = a > acc[r][0] ? a : acc[r][0];
      acc[r][1] = b > acc[r][1] ? b : acc[r][1];
    }
  for (int r = 0; r < R; ++r) {
    float best = -INFINITY;
    for (int j = 0; j < 8; ++j) {
      best = acc[r][0][j] > best ? acc[r][0][j] : best;
      best = acc[r][1][j] > best ? acc[r][1][j] : best;
    }
    for (int64_t k = i; k < n; ++k) best = x[r * n + k] > best ? x[r * n + k] : best;
    m[r] = best;
  }
}

// One softmax row given its max: y = exp(x - max) / sum (log: x - max - log(sum)).
void softmax_row_f32(const float* x, float* y, int64_t n, float m, bool log) {
  // an all -inf row: exp gives 0s and the row 0 / 0, NaN, as the decomposition and PyTorch do
  if (std::isinf(m) && m < 0) m = 0;
  vmath::exp_shifted_f32(x, y, n, m);
  const double sum = vmath::sum_f32(y, n);
  if (log) {
    // (x - max) first, then log(sum): folding max + log(sum) into one float would round it
    // at the logits' magnitude (an error of ~5e-4 at 1e4) where x - max is exact near the max.
    const float ls = static_cast<float>(std::log(sum));
    for (int64_t k = 0; k < n; ++k) y[k] = (x[k] - m) - ls;
  } else {
    float inv = static_cast<float>(1.0 / sum);
    for (int64_t k = 0; k < n; ++k) y[k] *= inv;
  }
}

// Softmax rows [b, e) of n floats, their maxima 4 rows at a time. While a row's exps are
// computed (from L1: the maxima's pass brought the rows in), the same row of the next 4 is
// fetched into L2, so that the next maxima's pass, the only one from memory, overlaps with them:
// 4096 x 1024 on 2 threads of an AVX2 CPU, 1.95-1.99 -> 1.81-1.83 ms (fastest runs, alternating).
// Into L1 instead it gained half that, and fetching the output rows for writing too nothing. One
// row at a time, with nothing fetched, was faster on a Zen 4 (1.09 -> 0.94 ms) and slower on a
// Xeon (1.25 -> 1.64, medians of 4 alternating runs; layer_norm's rows likewise: 0.91 -> 0.76 on
// the Zen 4, 0.82 -> 1.05 on the Xeon).
void softmax_rows_f32(const float* x, float* y, int64_t b, int64_t e, int64_t n, bool log) {
  int64_t o = b;
  for (; o + 4 <= e; o += 4) {
    float m[4];
    row_maxima(x + o * n, n, m);
    for (int r = 0; r < 4; ++r) {
      if (o + 8 <= e)
        for (int64_t i = 0; i < n; i += 16) __builtin_prefetch(x + (o + 4 + r) * n + i, 0, 2);
      softmax_row_f32(x + (o + r) * n, y + (o + r) * n, n, m[r], log);
    }
  }
  for (; o < e; ++o) {
    float m[1];
    row_maxima(x + o * n, n, m);
    softmax_row_f32(x + o * n, y + o * n, n, m[0], log);
  }
}

// The general case over [outer, n, inner] in the compute type C.
template <class T>
void softmax_strided(const T* x, T* y, int64_t outer, int64_t n, int64_t inner, bool log) {
  using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
  parallel_for(outer, std::max<int64_t>(1, kGrain / std::max<int64_t>(n * inner, 1)),
               [&](int64_t b, int64_t e) {
                 std::vector<C> m(inner), s(inner);
                 for (int64_t o = b; o < e; ++o) {
                   const T* xs = x + o * n * inner;
                   T* ys = y + o * n * inner;
                   std::fill(m.begin(), m.end(), -INFINITY);
                   std::fill(s.begin(), s.end(), C(0));
                   for (int64_t k = 0; k < n; ++k)
                     for (int64_t j = 0; j < inner; ++j) {
                       C v = static_cast<C>(xs[k * inner + j]);
                       m[j] = v > m[j] || std::isnan(v) ? v : m[j];
                     }
                   for (auto& v : m)
                     if (std::isinf(v) && v < 0) v = 0;
                   for (int64_t k = 0; k < n; ++k)
                     for (int64_t j = 0; j < inner; ++j)
                       s[j] += std::exp(static_cast<C>(xs[k * inner + j]) - m[j]);
                   for (int64_t k = 0; k < n; ++k)
                     for (int64_t j = 0; j < inner; ++j) {
                       C v = static_cast<C>(xs[k * inner + j]) - m[j];
                       ys[k * inner + j] =
                           static_cast<T>(log ? v - std::log(s[j]) : std::exp(v) / s[j]);
                     }
                 }
               });
}

}  // namespace

bool has_composite_kernel(OpCode c) {
  return c == OpCode::Softmax || c == OpCode::LogSoftmax || c == OpCode::Attention ||
         c == OpCode::IntMatmul || c == OpCode::IntConv || c == OpCode::Gelu ||
         c == OpCode::ReluBackward || c == OpCode::LayerNorm || c == OpCode::RmsNorm ||
         is_update_op(c);
}

namespace {
// For R float rows n apart: out[r] = the sum of row r's x - center[r] (Squares: of their
// squares). The rows are read side by side (layer_norm's first pass reads them from memory); 16
// float lanes a row, totalled in double.
template <int R, bool Squares>
void row_moments(const float* x, int64_t n, const float (&center)[R], double (&out)[R]) {
  vf8 acc[R][2] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16)
    for (int r = 0; r < R; ++r) {
      const vf8 a = load8(x + r * n + i) - center[r], b = load8(x + r * n + i + 8) - center[r];
      acc[r][0] += Squares ? a * a : a;
      acc[r][1] += Squares ? b * b : b;
    }
  for (int r = 0; r < R; ++r) {
    double t = 0;
    for (int j = 0; j < 8; ++j) t += double(acc[r][0][j]) + double(acc[r][1][j]);
    for (int64_t k = i; k < n; ++k) {
      const double v = double(x[r * n + k]) - double(center[r]);
      t += Squares ? v * v : v;
    }
    out[r] = t;
  }
}

// layer_norm (rms_norm: `layer` false) of f32 rows [b, e) of n: per row its mean (layer_norm),
// then the variance around it (rms_norm: the mean square), then y = (x - mean) * rstd * gamma
// + beta, the rows 4 at a time. The row is read from memory once: the second and third passes
// find it in cache.
void norm_rows_f32(const float* x, const float* gamma, const float* beta, float* y, int64_t b,
                   int64_t e, int64_t n, double eps, bool layer) {
  auto finish = [&](const float* xr, float* yr, float mean, double ms) {
    const float rstd = static_cast<float>(1.0 / std::sqrt(ms + eps));
    for (int64_t k = 0; k < n; ++k) {
      const float v = (xr[k] - mean) * rstd * gamma[k];
      yr[k] = beta ? v + beta[k] : v;
    }
  };
  auto rows = [&]<int R>(int64_t o) {
    double s[R], q[R];
    float mean[R] = {};
    if (layer) {
      row_moments<R, false>(x + o * n, n, mean, s);
      for (int r = 0; r < R; ++r) mean[r] = static_cast<float>(s[r] / double(n));
    }
    row_moments<R, true>(x + o * n, n, mean, q);
    for (int r = 0; r < R; ++r) finish(x + (o + r) * n, y + (o + r) * n, mean[r], q[r] / double(n));
  };
  int64_t o = b;
  for (; o + 4 <= e; o += 4) rows.template operator()<4>(o);
  for (; o < e; ++o) rows.template operator()<1>(o);
}

// The same for doubles, element by element (halves take the f32 kernel: composite() below).
template <class T>
void norm_rows(const T* x, const T* gamma, const T* beta, T* y, int64_t b, int64_t e, int64_t n,
               double eps, bool layer) {
  for (int64_t o = b; o < e; ++o) {
    const T* xr = x + o * n;
    double mean = 0, ms = 0;
    if (layer) {
      for (int64_t k = 0; k < n; ++k) mean += double(xr[k]);
      mean /= double(n);
    }
    for (int64_t k = 0; k < n; ++k) ms += (double(xr[k]) - mean) * (double(xr[k]) - mean);
    const double rstd = 1.0 / std::sqrt(ms / double(n) + eps);
    for (int64_t k = 0; k < n; ++k) {
      const double v = (double(xr[k]) - mean) * rstd * double(gamma[k]);
      y[o * n + k] = static_cast<T>(beta ? v + double(beta[k]) : v);
    }
  }
}

// LayerNorm (x, gamma, beta) and RmsNorm (x, gamma) over x's dims [dim, rank): one kernel, one
// read of x and one write of y, where the decomposition took nine ops over the whole tensor.
template <class T>
CpuTensor norm(const Op& op, Inputs in, const TensorMeta& out) {
  const bool layer = op.code == OpCode::LayerNorm;
  const CpuTensor x = contiguous(in[0]), g = contiguous(in[1]);
  const CpuTensor bt = layer ? contiguous(in[2]) : CpuTensor{};
  CpuTensor y = empty(out);
  const Shape& s = out.shape;
  int64_t n = 1;
  for (size_t d = static_cast<size_t>(op.attrs.dim); d < s.rank(); ++d) n *= s[d];
  if (s.numel() == 0) return y;
  const int64_t rows = s.numel() / n;
  const double eps = op.attrs.scalar.f;
  const T *xp = x.data<T>(), *gp = g.data<T>(), *bp = layer ? bt.data<T>() : nullptr;
  T* yp = y.data<T>();
  parallel_for(rows, std::max<int64_t>(1, kGrain / n), [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>)
      norm_rows_f32(xp, gp, bp, yp, b, e, n, eps, layer);
    else
      norm_rows<T>(xp, gp, bp, yp, b, e, n, eps, layer);
  });
  return y;
}
}  // namespace

namespace {
// gelu(x) = x/2 (1 + erf(x / sqrt 2)) in one pass: the vectorized form for contiguous f32, else
// per element (doubles, strided floats; halves take the f32 path: composite() below).
template <class T>
CpuTensor gelu(Inputs in, const TensorMeta& out) {
  CpuTensor x = contiguous(in[0]);
  CpuTensor y = empty(out);
  int64_t n = out.shape.numel();
  const T* xp = x.data<T>();
  T* yp = y.data<T>();
  parallel_for(n, kGrain, [&](int64_t b, int64_t e) {
    if constexpr (std::is_same_v<T, float>) {
      vmath::gelu_f32(xp + b, yp + b, e - b);
    } else {
      using C = std::conditional_t<std::is_same_v<T, double>, double, float>;
      for (int64_t i = b; i < e; ++i) {
        C v = static_cast<C>(xp[i]);
        yp[i] = static_cast<T>(C(0.5) * v * std::erfc(-v * C(0.70710678118654752440)));
      }
    }
  });
  return y;
}
}  // namespace

template <class T>
CpuTensor composite(const Op& op, Inputs in, const TensorMeta& out) {
  if constexpr (is_half_v<T>) {
    // f16 and bf16: the f32 kernels (vectorized) on the widened operands, the result rounded
    // once. Element by element in float these had taken 17 times as long as in f32 (softmax over
    // 4096 x 4096 f16 on a Zen 4, 2 threads: 95 ms against 5.5; gelu of 16M f16 93 ms).
    if (op.code == OpCode::Softmax || op.code == OpCode::LogSoftmax || op.code == OpCode::Gelu ||
        op.code == OpCode::LayerNorm || op.code == OpCode::RmsNorm)
      return through_f32(in, out,
                         [&](Inputs f, const TensorMeta& m) { return composite<float>(op, f, m); });
  }
  if (op.code == OpCode::Attention) return attention(op, in, out);
  if (op.code == OpCode::IntMatmul) return int_matmul(op, in, out);
  if (op.code == OpCode::IntConv) return int_conv(op, in, out);
  if (op.code == OpCode::Gelu) {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) return gelu<T>(in, out);
  }
  if (op.code == OpCode::ReluBackward) {
    if constexpr (!std::is_same_v<T, bool>) return relu_backward<T>(op, in, out);
  }
  if (op.code == OpCode::LayerNorm || op.code == OpCode::RmsNorm) {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) return norm<T>(op, in, out);
  }
  if (is_update_op(op.code)) {
    if constexpr (std::is_floating_point_v<T> || is_half_v<T>) return update_op<T>(op, in, out);
  }
  bool log = op.code == OpCode::LogSoftmax;
  CpuTensor x = contiguous(in[0]);
  CpuTensor y = empty(out);
  int64_t outer = 1, n = 1, inner = 1, dim = op.attrs.dim;
  const Shape& s = out.shape;
  for (size_t d = 0; d < s.rank(); ++d) {
    if (int64_t(d) < dim)
      outer *= s[d];
    else if (int64_t(d) == dim)
      n = s[d];
    else
      inner *= s[d];
  }
  if (s.numel() == 0) return y;
  if constexpr (std::is_same_v<T, float>) {
    if (inner == 1) {
      const float* xp = x.data<float>();
      float* yp = y.data<float>();
      parallel_for(outer, std::max<int64_t>(1, kGrain / n),
                   [&](int64_t b, int64_t e) { softmax_rows_f32(xp, yp, b, e, n, log); });
      return y;
    }
  }
  if constexpr (std::is_floating_point_v<T> || is_half_v<T>)
    softmax_strided(x.data<T>(), y.data<T>(), outer, n, inner, log);
  return y;
}

EMBER_CPU_DEFINE_KERNELS(Composite, composite)

}  // namespace ember::cpu
