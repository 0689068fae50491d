// Convolutions with one input channel per group (depthwise, or C_in = 1): a GEMM with
// K = prod(kernel) would mostly pack, so these run direct loops. Output channel co reads
// input channel co / (C_out / groups) with the weights w[co] (the same index for conv and
// conv_transpose).
//
// With stride 1 along every dim (the common case) conv and its weight gradient run on the
// wide layout (wide.h): each tap is one long contiguous loop. Other strides run tap by tap
// over output rows.
#include <type_traits>
#include <vector>

#include "ember/backends/cpu/simd.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/wide.h"

namespace ember::cpu {

namespace {

// ---- stride 1: the wide layout ----------------------------------------------------------

// out[i] = sum over taps t of w[t] * x[i + off[t]], for i in [0, n)
template <class T>
void tap_sum(const T* x, const T* w, const int64_t* off, int64_t K, int64_t n, T* out) {
  using V = Vec<T>;
  constexpr int64_t L = kLanes<T>;
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    V a0{}, a1{}, a2{}, a3{};
    for (int64_t t = 0; t < K; ++t) {
      const V wv = V{} + w[t];
      const T* s = x + i + off[t];
      a0 += wv * loadv(s);
      a1 += wv * loadv(s + L);
      a2 += wv * loadv(s + 2 * L);
      a3 += wv * loadv(s + 3 * L);
    }
    storev(out + i, a0);
    storev(out + i + L, a1);
    storev(out + i + 2 * L, a2);
    storev(out + i + 3 * L, a3);
  }
  for (; i < n; ++i) {
    T a = 0;
    for (int64_t t = 0; t < K; ++t) a += w[t] * x[i + off[t]];
    out[i] = a;
  }
}

// sum over i in [0, n) of a[i] * b[i]
template <class T>
T dot(const T* a, const T* b, int64_t n) {
  using V = Vec<T>;
  constexpr int64_t L = kLanes<T>;
  V s0{}, s1{}, s2{}, s3{};
  int64_t i = 0;
  for (; i + 4 * L <= n; i += 4 * L) {
    s0 += loadv(a + i) * loadv(b + i);
    s1 += loadv(a + i + L) * loadv(b + i + L);
    s2 += loadv(a + i + 2 * L) * loadv(b + i + 2 * L);
    s3 += loadv(a + i + 3 * L) * loadv(b + i + 3 * L);
  }
  V s = (s0 + s1) + (s2 + s3);
  T r = 0;
  for (int64_t l = 0; l < L; ++l) r += s[l];
  for (; i < n; ++i) r += a[i] * b[i];
  return r;
}

template <class T>
void wide_forward(const CpuTensor& x, const CpuTensor& w, const CpuTensor& y, const Geom& g,
                  int64_t per_group) {
  const Wide f(g);
  const int64_t N = x.meta.shape[0], c_in = x.meta.shape[1], c_out = y.meta.shape[1];
  const int64_t K = g.k_numel(), Lin = g.in_numel(), L = g.out_numel();
  const T *X = x.data<T>(), *W = w.data<T>();
  T* Y = y.data<T>();
  const int64_t work = per_group * f.wide * K;
  parallel_for(N * c_in, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
               [&](int64_t b, int64_t e) {
                 Scratch<T> pad(f.padded ? f.plane() : 0), wide(f.wide);
                 for (int64_t item = b; item < e; ++item) {
                   const int64_t n = item / c_in, ci = item % c_in;
                   const T* xp = padded_plane(f, g, X + item * Lin, pad.get());
                   for (int64_t co = ci * per_group; co < (ci + 1) * per_group; ++co) {
                     tap_sum(xp, W + co * K, f.off.data(), K, f.wide, wide.get());
                     f.narrow(g, wide.get(), Y + (n * c_out + co) * L);
                   }
                 }
               });
}

template <class T>
void wide_weight_grad(const CpuTensor& x, const CpuTensor& gy, const CpuTensor& dw, const Geom& g,
                      int64_t per_group) {
  const Wide f(g);
  const int64_t N = x.meta.shape[0], c_in = x.meta.shape[1], c_out = gy.meta.shape[1];
  const int64_t K = g.k_numel(), Lin = g.in_numel(), L = g.out_numel();
  const T *X = x.data<T>(), *GY = gy.data<T>();
  sum_in_chunks<T>(N * c_in, c_out * K, dw.data<T>(), [&](int64_t b, int64_t e, T* acc) {
    Scratch<T> pad(f.padded ? f.plane() : 0), wide(f.wide);
    T* gw = wide.get();
    for (int64_t item = b; item < e; ++item) {
      const int64_t n = item / c_in, ci = item % c_in;
      const T* xp = padded_plane(f, g, X + item * Lin, pad.get());
      for (int64_t co = ci * per_group; co < (ci + 1) * per_group; ++co) {
        // the output's gradient at the wide pitch, zero at the dropped positions
        f.widen(g, GY + (n * c_out + co) * L, gw);
        for (int64_t t = 0; t < K; ++t) acc[co * K + t] += dot(gw, xp + f.off[t], f.wide);
      }
    }
  });
}

// ---- any stride: tap by tap over output rows --------------------------------------------

// Calls f(kd, kh, input row offset) for the taps of output row (od, oh) inside the input.
template <class F>
void for_row_taps(const Geom& g, const WindowTable& t, int64_t od, int64_t oh, F&& f) {
  const auto &D = t.dim[0], &H = t.dim[1];
  for (int64_t kd = D.lo[od]; kd < D.hi[od]; ++kd)
    for (int64_t kh = H.lo[oh]; kh < H.hi[oh]; ++kh)
      f(kd, kh, ((D.start[od] + kd * g.d[0]) * g.in[1] + H.start[oh] + kh * g.d[1]) * g.in[2]);
}

// Runs f with the stride along w as a constant where it is 1 or 2 (vectorizable loops).
template <class F>
void with_stride(int64_t s, F&& f) {
  if (s == 1)
    f(std::integral_constant<int64_t, 1>{});
  else if (s == 2)
    f(std::integral_constant<int64_t, 2>{});
  else
    f(s);
}

struct Rows {
  Geom g;
  WindowTable t;
  std::vector<std::pair<int64_t, int64_t>> wrange;  // outputs along w where tap kw is inside
  int64_t planes_per_group;
  Rows(const Geom& geom, int64_t per_group)
      : g(geom), t(geom), wrange(geom.k[2]), planes_per_group(per_group) {
    for (int64_t kw = 0; kw < g.k[2]; ++kw) wrange[kw] = valid_outputs(g, 2, kw);
  }
};

// y[n, co] = sum over taps of w[co, tap] * x[n, co / per_group] shifted
template <class T>
void rows_forward(const CpuTensor& x, const CpuTensor& w, const CpuTensor& y, const Rows& dw) {
  const Geom& g = dw.g;
  const int64_t c_in = x.meta.shape[1], c_out = y.meta.shape[1], K = g.k_numel();
  const int64_t Lin = g.in_numel(), o2 = g.out[2];
  const T *X = x.data<T>(), *W = w.data<T>();
  T* Y = y.data<T>();
  for_out_rows(y.meta.shape[0] * c_out, g, o2 * K, [&](int64_t p, int64_t od, int64_t oh) {
    int64_t n = p / c_out, co = p % c_out;
    const T* xp = X + (n * c_in + co / dw.planes_per_group) * Lin;
    const T* wk = W + co * K;
    T* yr = Y + ((p * g.out[0] + od) * g.out[1] + oh) * o2;
    std::fill(yr, yr + o2, T(0));
    with_stride(g.s[2], [&](auto s) {
      for_row_taps(g, dw.t, od, oh, [&](int64_t kd, int64_t kh, int64_t row) {
        const T* xr = xp + row;
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          T wv = wk[(kd * g.k[1] + kh) * g.k[2] + kw];
          int64_t off = kw * g.d[2] - g.p[2];
          auto [lo, hi] = dw.wrange[kw];
          for (int64_t ow = lo; ow < hi; ++ow) yr[ow] += wv * xr[ow * s + off];
        }
      });
    });
  });
}

// conv_transpose with one input channel per group: y[n, co] gets w[co, tap] * x[n, co / per_group]
// added at each tap's positions. The window runs over y (the conv's input).
template <class T>
void rows_transpose(const CpuTensor& x, const CpuTensor& w, const CpuTensor& y, const Rows& dw) {
  const Geom& g = dw.g;
  const int64_t c_in = x.meta.shape[1], c_out = y.meta.shape[1], K = g.k_numel();
  const int64_t Ly = g.in_numel(), Lx = g.out_numel(), o2 = g.out[2];
  const T *X = x.data<T>(), *W = w.data<T>();
  T* Y = y.data<T>();
  for_planes(y.meta.shape[0] * c_out, Lx * K, [&](int64_t p) {
    int64_t n = p / c_out, co = p % c_out;
    const T* xp = X + (n * c_in + co / dw.planes_per_group) * Lx;
    const T* wk = W + co * K;
    T* yp = Y + p * Ly;
    std::fill(yp, yp + Ly, T(0));
    with_stride(g.s[2], [&](auto s) {
      for (int64_t od = 0; od < g.out[0]; ++od)
        for (int64_t oh = 0; oh < g.out[1]; ++oh) {
          const T* xr = xp + (od * g.out[1] + oh) * o2;
          for_row_taps(g, dw.t, od, oh, [&](int64_t kd, int64_t kh, int64_t row) {
            T* yr = yp + row;
            for (int64_t kw = 0; kw < g.k[2]; ++kw) {
              T wv = wk[(kd * g.k[1] + kh) * g.k[2] + kw];
              int64_t off = kw * g.d[2] - g.p[2];
              auto [lo, hi] = dw.wrange[kw];
              for (int64_t ow = lo; ow < hi; ++ow) yr[ow * s + off] += wv * xr[ow];
            }
          });
        }
    });
  });
}

// dw[co, tap] = sum over images and outputs of gy[n, co] * x[n, co / per_group] at the tap
template <class T>
void rows_weight_grad(const CpuTensor& x, const CpuTensor& gy, const CpuTensor& dwt,
                      const Rows& dw) {
  const Geom& g = dw.g;
  const int64_t N = x.meta.shape[0], c_in = x.meta.shape[1], c_out = gy.meta.shape[1];
  const int64_t K = g.k_numel(), Lin = g.in_numel(), L = g.out_numel(), o2 = g.out[2];
  const T *X = x.data<T>(), *GY = gy.data<T>();
  T* DW = dwt.data<T>();
  for_planes(c_out, N * L * K, [&](int64_t co) {
    T* acc = DW + co * K;
    std::fill(acc, acc + K, T(0));
    with_stride(g.s[2], [&](auto s) {
      for (int64_t n = 0; n < N; ++n) {
        const T* xp = X + (n * c_in + co / dw.planes_per_group) * Lin;
        const T* gp = GY + (n * c_out + co) * L;
        for (int64_t od = 0; od < g.out[0]; ++od)
          for (int64_t oh = 0; oh < g.out[1]; ++oh) {
            const T* gr = gp + (od * g.out[1] + oh) * o2;
            for_row_taps(g, dw.t, od, oh, [&](int64_t kd, int64_t kh, int64_t row) {
              const T* xr = xp + row;
              for (int64_t kw = 0; kw < g.k[2]; ++kw) {
                int64_t off = kw * g.d[2] - g.p[2];
                // Not a structured binding: clang before 16 cannot capture one in the
                // OpenMP loop below.
                const int64_t lo = dw.wrange[kw].first, hi = dw.wrange[kw].second;
                T sum = 0;
#pragma omp simd reduction(+ : sum)
                for (int64_t ow = lo; ow < hi; ++ow) sum += gr[ow] * xr[ow * s + off];
                acc[(kd * g.k[1] + kh) * g.k[2] + kw] += sum;
              }
            });
          }
      }
    });
  });
}

template <class T>
void run_depthwise(OpCode code, Inputs in, const CpuTensor& out, const Geom& g, int64_t per_group) {
  const bool wide = Wide::fits(g);
  switch (code) {
    case OpCode::Conv:
      if constexpr (std::is_same_v<T, float>) {
        if (depthwise3x3_avx2_fits(g)) {
          const Shape& xs = in[0].meta.shape;
          return depthwise3x3_avx2(in[0].data<float>(), in[1].data<float>(), out.data<float>(),
                                   xs[0], xs[1], per_group, g);
        }
      }
      if (wide) return wide_forward<T>(in[0], in[1], out, g, per_group);
      return rows_forward<T>(in[0], in[1], out, Rows(g, per_group));
    case OpCode::ConvTranspose:
      if constexpr (std::is_same_v<T, float>) {
        // With stride 1 and one output per input channel, the transposed depthwise conv (a
        // depthwise conv's input gradient) is the depthwise conv of its input with each
        // channel's window turned around, padding 2 - p: the AVX2 kernel's where that is 0 or 1.
        const Geom f = flipped_geom(g);
        if (per_group == 1 && depthwise3x3_avx2_fits(f)) {
          const Shape& xs = in[0].meta.shape;
          const float* w = in[1].data<float>();
          std::vector<float> wf(static_cast<size_t>(xs[1] * 9));
          for (size_t i = 0; i < wf.size(); ++i) wf[i] = w[i / 9 * 9 + 8 - i % 9];
          return depthwise3x3_avx2(in[0].data<float>(), wf.data(), out.data<float>(), xs[0], xs[1],
                                   1, f);
        }
      }
      return rows_transpose<T>(in[0], in[1], out, Rows(g, per_group));
    case OpCode::ConvWeightGrad:
      if constexpr (std::is_same_v<T, float>) {
        if (depthwise3x3_avx2_fits(g)) {
          const Shape& xs = in[0].meta.shape;
          return depthwise3x3_weight_grad_avx2(in[0].data<float>(), in[1].data<float>(),
                                               out.data<float>(), xs[0], xs[1], per_group, g);
        }
      }
      if (wide) return wide_weight_grad<T>(in[0], in[1], out, g, per_group);
      return rows_weight_grad<T>(in[0], in[1], out, Rows(g, per_group));
    default:
      throw Error("[" + std::string(name(code)) + "] is not a depthwise conv op");
  }
}

}  // namespace

void depthwise_conv(OpCode code, Inputs in, const CpuTensor& out, const Geom& g,
                    int64_t per_group) {
  if (out.meta.dtype == DType::F64)
    run_depthwise<double>(code, in, out, g, per_group);
  else
    run_depthwise<float>(code, in, out, g, per_group);
}

}  // namespace ember::cpu
