// Fused CPU kernels for composite ops: softmax and log_softmax in one pass over the data
// (max, exp-sum, scale) instead of five separate ops, layer_norm and rms_norm in one read and
// one write instead of nine ops, gelu, attention (attention.cpp) and the optimizers' updates
// (update_ops.cpp). Other composites use their decomposition.
#include <cmath>
#include <vector>

#include "ember/backends/cpu/elementwise.h"
#include "ember/backends/cpu/kernels.h"
#include "ember/backends/cpu/vmath.h"

namespace ember::cpu {

namespace {

using vmath::load8;
using vmath::vf8;

// The largest of a row's n floats (NaN never wins: it comes back from exp later). This is the
// first pass over the row, from memory.
float row_max(const float* x, int64_t n) {
  vf8 acc[2];
  acc[0] = acc[1] = vf8{} - INFINITY;
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const vf8 a = load8(x + i), b = load8(x + i + 8);
    acc[0] = a > acc[0] ? a : acc[0];
    acc[1] = b > acc[1] ? b : acc[1];
  }
  float best = -INFINITY;
  for (int j = 0; j < 8; ++j) {
    best = acc[0][j] > best ? acc[0][j] : best;
    best = acc[1][j] > best ? acc[1][j] : best;
  }
  for (; i < n; ++i) best = x[i] > best ? x[i] : best;
  return best;
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

// Softmax rows [b, e) of n floats, one after the other: the maxima's pass reads a row from
// memory (a thread's rows are one sequential run) and the exps and the scale find it in cache.
// The maxima of 4 rows side by side, with the next 4 fetched into L2 during the exps, had been
// faster on an AVX2 EPYC (4096 x 1024 on 2 threads 1.95-1.99 -> 1.81-1.83 ms, fastest runs); on a
// Zen 4 one row at a time is (1.04-1.06 -> 0.98 ms, alternating runs; fetching the next row
// during the exps 1.04).
void softmax_rows_f32(const float* x, float* y, int64_t b, int64_t e, int64_t n, bool log) {
  for (int64_t o = b; o < e; ++o)
    softmax_row_f32(x + o * n, y + o * n, n, row_max(x + o * n, n), log);
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
         c == OpCode::Gelu || c == OpCode::ReluBackward || c == OpCode::LayerNorm ||
         c == OpCode::RmsNorm || is_update_op(c);
}

namespace {
// The sum of a row's x - center (Squares: of their squares), 16 float lanes totalled in
// double. layer_norm's first pass reads the row from memory.
template <bool Squares>
double row_moment(const float* x, int64_t n, float center) {
  vf8 acc[2] = {};
  int64_t i = 0;
  for (; i + 16 <= n; i += 16) {
    const vf8 a = load8(x + i) - center, b = load8(x + i + 8) - center;
    acc[0] += Squares ? a * a : a;
    acc[1] += Squares ? b * b : b;
  }
  double t = 0;
  for (int j = 0; j < 8; ++j) t += double(acc[0][j]) + double(acc[1][j]);
  for (; i < n; ++i) {
    const double v = double(x[i]) - double(center);
    t += Squares ? v * v : v;
  }
  return t;
}

// layer_norm (rms_norm: `layer` false) of f32 rows [b, e) of n: per row its mean (layer_norm),
// then the variance around it (rms_norm: the mean square), then y = (x - mean) * rstd * gamma
// + beta, a row at a time. The row is read from memory once: the second and third passes find
// it in cache. 4 rows side by side, layer_norm of 4096 x 1024 on 2 threads of a Zen 4 took 0.92
// ms against 0.80 (alternating runs).
void norm_rows_f32(const float* x, const float* gamma, const float* beta, float* y, int64_t b,
                   int64_t e, int64_t n, double eps, bool layer) {
  auto finish = [&](const float* xr, float* yr, float mean, double ms) {
    const float rstd = static_cast<float>(1.0 / std::sqrt(ms + eps));
    for (int64_t k = 0; k < n; ++k) {
      const float v = (xr[k] - mean) * rstd * gamma[k];
      yr[k] = beta ? v + beta[k] : v;
    }
  };
  for (int64_t o = b; o < e; ++o) {
    const float* xr = x + o * n;
    const float mean = layer ? static_cast<float>(row_moment<false>(xr, n, 0.f) / double(n)) : 0.f;
    finish(xr, y + o * n, mean, row_moment<true>(xr, n, mean) / double(n));
  }
}

// The same for doubles and halves, element by element in double (halves round once, at the
// end).
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
// per element in double (floats) or float (halves), rounded once.
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
  if (op.code == OpCode::Attention) return attention(op, in, out);
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
