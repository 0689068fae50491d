// Pooling: max, average and adaptive average over 1 to 3 spatial dims, and their backward
// ops. Forward ops run in parallel over output rows; backward ops over (image, channel)
// planes, since the windows of one plane overlap.
#include <cmath>
#include <limits>
#include <vector>

#include "ember/backends/cpu/simd.h"
#include "ember/backends/cpu/spatial.h"

namespace ember::cpu {

namespace {

// The maximum of output (od, oh, ow)'s window within plane x and, with Index, where it is:
// NaN wins, ties go to the first maximum in window order (PyTorch's rule), padding is never
// picked.
template <bool Index, class T>
std::pair<int64_t, T> window_max(const T* x, const Geom& g, const WindowTable& t, int64_t od,
                                 int64_t oh, int64_t ow) {
  const auto &D = t.dim[0], &H = t.dim[1], &W = t.dim[2];
  int64_t d0 = D.lo[od], d1 = D.hi[od], h0 = H.lo[oh], h1 = H.hi[oh], w0 = W.lo[ow], w1 = W.hi[ow];
  int64_t sd = D.start[od], sh = H.start[oh], sw = W.start[ow];
  T best = -std::numeric_limits<T>::infinity();
  int64_t at = ((sd + d0 * g.d[0]) * g.in[1] + sh + h0 * g.d[1]) * g.in[2] + sw + w0 * g.d[2];
  for (int64_t kd = d0; kd < d1; ++kd) {
    for (int64_t kh = h0; kh < h1; ++kh) {
      const int64_t row = ((sd + kd * g.d[0]) * g.in[1] + sh + kh * g.d[1]) * g.in[2] + sw;
      for (int64_t kw = w0; kw < w1; ++kw) {
        T v = x[row + kw * g.d[2]];
        if (v > best || v != v) {  // v != v: NaN
          best = v;
          if constexpr (Index) at = row + kw * g.d[2];
        }
      }
    }
  }
  return {at, best};
}

// acc = max(acc, v), where NaN sticks: a NaN input makes the window's result NaN.
template <class T>
inline T max_nan(T acc, T v) {
  return v > acc || v != v ? v : acc;
}
template <class T>
inline Vec<T> vmax_nan(Vec<T> acc, Vec<T> v) {
  return ((v > acc) | (v != v)) ? v : acc;
}

// ---- tiling windows: kernel == stride, no padding or dilation, every window inside ------
// (2x2 stride 2 and the like). Each input is in at most one window, so the backward op writes
// every input once and needs no window table; 2-d windows of 2x2 get unrolled loops.

bool tiles(const Geom& g) {
  for (int i = 0; i < 3; ++i)
    if (g.k[i] != g.s[i] || g.p[i] != 0 || g.d[i] != 1 || g.out[i] * g.k[i] > g.in[i]) return false;
  return true;
}

// Calls f(output index, offset of the window's first input) for every window of a plane.
template <class F>
void for_tiles(const Geom& g, F&& f) {
  for (int64_t od = 0, o = 0; od < g.out[0]; ++od)
    for (int64_t oh = 0; oh < g.out[1]; ++oh) {
      const int64_t row = (od * g.k[0] * g.in[1] + oh * g.k[1]) * g.in[2];
      for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) f(o, row + ow * g.k[2]);
    }
}

// The first maximum of the window at x (window order; NaN wins, as window_max): its offset.
// Branch-free: on real data which input wins is a coin toss the branch predictor loses.
template <class T>
int64_t tile_argmax(const T* x, const Geom& g, int64_t at) {
  T best = x[at];  // as a start of -inf: the first input wins unless a later one beats it
  int64_t arg = at;
  for (int64_t kd = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw) {
        const int64_t i = at + (kd * g.in[1] + kh) * g.in[2] + kw;
        const bool wins = x[i] > best || x[i] != x[i];
        best = wins ? x[i] : best;
        arg = wins ? i : arg;
      }
  return arg;
}

// A row pair of 2x2 windows: each input gets gy where it is its window's first maximum
// (inputs a, b on row r0 and c, d on r1, in window order), branch-free: which input wins is
// data, and mispredicted branches cost more than the selects. The last windows of a row run
// through the same vector code: on the inputs in place where a vector's reads past the row stay
// inside the buffers (`overread`: they read the next rows, whose windows' results are dropped),
// else on copies padded to a whole vector.
template <class T>
void tiles_2x2_backward_rows(const T* r0, const T* r1, const T* gy, T* g0, T* g1, int64_t n,
                             bool overread) {
  using V = Vec<T>;
  constexpr int64_t L = kLanes<T>;
  auto windows = [](const T* r0, const T* r1, const T* gy, T* g0, T* g1) {
    const V x0 = loadv(r0), x1 = loadv(r0 + L), y0 = loadv(r1), y1 = loadv(r1 + L);
    const V a = even_lanes<T>(x0, x1), b = odd_lanes<T>(x0, x1);
    const V c = even_lanes<T>(y0, y1), d = odd_lanes<T>(y0, y1), v = loadv(gy);
    const Mask<T> wb = (b > a) | (b != b);
    V m = wb ? b : a;
    const Mask<T> wc = (c > m) | (c != c);
    m = wc ? c : m;
    const Mask<T> wd = (d > m) | (d != d);
    const V zero{};
    const V ga = (wb | wc | wd) ? zero : v, gb = (wb & ~wc & ~wd) ? v : zero;
    const V gc = (wc & ~wd) ? v : zero, gd = wd ? v : zero;
    store_interleaved(g0, ga, gb);
    store_interleaved(g1, gc, gd);
  };
  int64_t ow = 0;
  for (; ow + L <= n; ow += L) windows(r0 + 2 * ow, r1 + 2 * ow, gy + ow, g0 + 2 * ow, g1 + 2 * ow);
  // A tail of a row at least a vector long: the last vector's windows again (they write the
  // same values twice) rather than through copies.
  if (ow < n && n >= L) {
    ow = n - L;
    windows(r0 + 2 * ow, r1 + 2 * ow, gy + ow, g0 + 2 * ow, g1 + 2 * ow);
  } else if (const int64_t rest = n - ow; rest > 0 && overread) {
    T o0[2 * L], o1[2 * L];
    windows(r0 + 2 * ow, r1 + 2 * ow, gy + ow, o0, o1);
    copy_short(o0, g0 + 2 * ow, 2 * rest);
    copy_short(o1, g1 + 2 * ow, 2 * rest);
  } else if (rest > 0) {
    T t0[2 * L] = {}, t1[2 * L] = {}, tg[L] = {}, o0[2 * L], o1[2 * L];
    copy_short(r0 + 2 * ow, t0, 2 * rest);
    copy_short(r1 + 2 * ow, t1, 2 * rest);
    copy_short(gy + ow, tg, rest);
    windows(t0, t1, tg, o0, o1);
    copy_short(o0, g0 + 2 * ow, 2 * rest);
    copy_short(o1, g1 + 2 * ow, 2 * rest);
  }
}

// The maxima of a row pair of 2x2 windows (NaN sticks), the same way.
template <class T>
void tiles_2x2_rows(const T* r0, const T* r1, T* y, int64_t n, bool overread) {
  using V = Vec<T>;
  constexpr int64_t L = kLanes<T>;
  auto windows = [](const T* r0, const T* r1, T* y) {
    const V x0 = loadv(r0), x1 = loadv(r0 + L), y0 = loadv(r1), y1 = loadv(r1 + L);
    const V a = even_lanes<T>(x0, x1), b = odd_lanes<T>(x0, x1);
    const V c = even_lanes<T>(y0, y1), d = odd_lanes<T>(y0, y1);
    storev(y, vmax_nan<T>(vmax_nan<T>(a, b), vmax_nan<T>(c, d)));
  };
  int64_t ow = 0;
  for (; ow + L <= n; ow += L) windows(r0 + 2 * ow, r1 + 2 * ow, y + ow);
  if (ow < n && n >= L) {  // the tail as in the backward pass
    windows(r0 + 2 * (n - L), r1 + 2 * (n - L), y + n - L);
  } else if (const int64_t rest = n - ow; rest > 0 && overread) {
    T o[L];
    windows(r0 + 2 * ow, r1 + 2 * ow, o);
    copy_short(o, y + ow, rest);
  } else if (rest > 0) {
    T t0[2 * L] = {}, t1[2 * L] = {}, o[L];
    copy_short(r0 + 2 * ow, t0, 2 * rest);
    copy_short(r1 + 2 * ow, t1, 2 * rest);
    windows(t0, t1, o);
    copy_short(o, y + ow, rest);
  }
}

template <class T>
void max_pool_tiles(const T* X, T* Y, int64_t planes, const Geom& g) {
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  if (g.k[0] == 1 && g.k[1] == 2 && g.k[2] == 2) {  // a row pair at a time, vectorizable
    const int64_t w = g.in[2];
    const T* x_end = X + planes * Lin;
    for_planes(planes, Lin, [&](int64_t p) {
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const T* r0 = X + p * Lin + 2 * oh * w;
        const T* r1 = r0 + w;
        tiles_2x2_rows(r0, r1, Y + p * L + oh * g.out[2], g.out[2], r1 + 2 * kLanes<T> <= x_end);
      }
    });
    return;
  }
  for_planes(planes, Lin, [&](int64_t p) {
    const T* x = X + p * Lin;
    T* y = Y + p * L;
    for_tiles(g, [&](int64_t o, int64_t at) { y[o] = x[tile_argmax(x, g, at)]; });
  });
}

template <class T>
void max_pool_tiles_backward(const T* X, const T* GY, T* GX, int64_t planes, const Geom& g) {
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  const bool covered =
      g.out[0] * g.k[0] == g.in[0] && g.out[1] * g.k[1] == g.in[1] && g.out[2] * g.k[2] == g.in[2];
  const bool k2x2 = g.k[0] == 1 && g.k[1] == 2 && g.k[2] == 2;
  for_planes(planes, Lin, [&](int64_t p) {
    const T* x = X + p * Lin;
    const T* gy = GY + p * L;
    T* gx = GX + p * Lin;
    if (!covered || !k2x2) std::fill(gx, gx + Lin, T(0));
    if (k2x2) {
      const int64_t w = g.in[2];
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const T* r1 = x + (2 * oh + 1) * w;
        const T* gr = gy + oh * g.out[2];
        const bool overread =
            r1 + 2 * kLanes<T> <= X + planes * Lin && gr + kLanes<T> <= GY + planes * L;
        tiles_2x2_backward_rows(x + 2 * oh * w, r1, gr, gx + 2 * oh * w, gx + (2 * oh + 1) * w,
                                g.out[2], overread);
      }
      return;
    }
    for_tiles(g, [&](int64_t o, int64_t at) { gx[tile_argmax(x, g, at)] = gy[o]; });
  });
}

// The forward op keeps no argmax, so it runs tap by tap over a whole output row: each pass is
// a strided max over the row's outputs, which the compiler vectorizes.
template <class T>
void max_pool(const T* X, T* Y, int64_t planes, const Geom& g) {
  const int64_t Lin = g.in_numel(), o2 = g.out[2], s2 = g.s[2];
  WindowTable t(g);
  // Only the taps that land inside the input for some output: a kernel may be far wider than
  // the input (with as much padding), and its other taps see only padding.
  // Not a structured binding: clang before 16 cannot capture one in the lambdas below.
  const auto live = live_taps(g, 2);
  const int64_t kw0 = live.first, kw1 = live.second;
  std::vector<std::pair<int64_t, int64_t>> wrange(kw1 - kw0);  // outputs where tap kw is inside
  for (int64_t kw = kw0; kw < kw1; ++kw) wrange[kw - kw0] = valid_outputs(g, 2, kw);
  const auto &D = t.dim[0], &H = t.dim[1];
  for_out_rows(planes, g, sat_mul(o2, g.k_numel()), [&](int64_t p, int64_t od, int64_t oh) {
    const T* x = X + p * Lin;
    T* y = Y + ((p * g.out[0] + od) * g.out[1] + oh) * o2;
    std::fill(y, y + o2, -std::numeric_limits<T>::infinity());
    auto taps = [&]<int64_t S>(int64_t stride) {
      for (int64_t kd = D.lo[od]; kd < D.hi[od]; ++kd)
        for (int64_t kh = H.lo[oh]; kh < H.hi[oh]; ++kh) {
          const T* row =
              x + ((D.start[od] + kd * g.d[0]) * g.in[1] + H.start[oh] + kh * g.d[1]) * g.in[2];
          for (int64_t kw = kw0; kw < kw1; ++kw) {
            const int64_t off = kw * g.d[2] - g.p[2];  // input w = ow * stride + off
            auto [lo, hi] = wrange[kw - kw0];
            for (int64_t ow = lo; ow < hi; ++ow)
              y[ow] = max_nan(y[ow], row[ow * (S ? S : stride) + off]);
          }
        }
    };
    if (s2 == 1)
      taps.template operator()<1>(1);
    else if (s2 == 2)
      taps.template operator()<2>(2);
    else
      taps.template operator()<0>(s2);
  });
}

template <class T>
void max_pool_backward(const T* X, const T* GY, T* GX, int64_t planes, const Geom& g) {
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  WindowTable t(g);
  for_planes(planes, sat_mul(L, g.k_numel()), [&](int64_t p) {
    const T* x = X + p * Lin;
    const T* gy = GY + p * L;
    T* gx = GX + p * Lin;
    std::fill(gx, gx + Lin, T(0));
    for (int64_t od = 0, o = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o)
          gx[window_max<true>(x, g, t, od, oh, ow).first] += gy[o];
  });
}

// One output's average window along dim i: its first input, its end, and the divisor's factor.
struct Span {
  int64_t lo, hi, count;
};
inline Span avg_span(const Geom& g, int i, int64_t o, bool include_pad) {
  int64_t lo = o * g.s[i] - g.p[i];
  int64_t hi = std::min(lo + g.k[i], g.in[i] + g.p[i]);
  int64_t padded = hi - lo;
  lo = std::max<int64_t>(lo, 0);
  hi = std::min(hi, g.in[i]);
  return {lo, hi, include_pad ? padded : hi - lo};
}

template <class F>
void for_avg_windows(const Geom& g, bool include_pad, int64_t od, int64_t oh, F&& f) {
  Span a = avg_span(g, 0, od, include_pad), b = avg_span(g, 1, oh, include_pad);
  for (int64_t ow = 0; ow < g.out[2]; ++ow) {
    Span c = avg_span(g, 2, ow, include_pad);
    f(ow, a, b, c);
  }
}

template <class T>
void avg_pool(const T* X, T* Y, int64_t planes, const Geom& g, bool include_pad) {
  const int64_t Lin = g.in_numel(), o2 = g.out[2];
  for_out_rows(planes, g, sat_mul(o2, g.k_numel()), [&](int64_t p, int64_t od, int64_t oh) {
    const T* x = X + p * Lin;
    T* y = Y + ((p * g.out[0] + od) * g.out[1] + oh) * o2;
    for_avg_windows(g, include_pad, od, oh, [&](int64_t ow, Span a, Span b, Span c) {
      T sum = 0;
      for (int64_t id = a.lo; id < a.hi; ++id)
        for (int64_t ih = b.lo; ih < b.hi; ++ih) {
          const T* row = x + (id * g.in[1] + ih) * g.in[2];
          for (int64_t iw = c.lo; iw < c.hi; ++iw) sum += row[iw];
        }
      y[ow] = sum / static_cast<T>(double(a.count) * double(b.count) * double(c.count));
    });
  });
}

template <class T>
void avg_pool_backward(const T* GY, T* GX, int64_t planes, const Geom& g, bool include_pad) {
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  for_planes(planes, sat_mul(L, g.k_numel()), [&](int64_t p) {
    const T* gy = GY + p * L;
    T* gx = GX + p * Lin;
    std::fill(gx, gx + Lin, T(0));
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        const T* grow = gy + (od * g.out[1] + oh) * g.out[2];
        for_avg_windows(g, include_pad, od, oh, [&](int64_t ow, Span a, Span b, Span c) {
          T v = grow[ow] / static_cast<T>(double(a.count) * double(b.count) * double(c.count));
          for (int64_t id = a.lo; id < a.hi; ++id)
            for (int64_t ih = b.lo; ih < b.hi; ++ih) {
              T* row = gx + (id * g.in[1] + ih) * g.in[2];
              for (int64_t iw = c.lo; iw < c.hi; ++iw) row[iw] += v;
            }
        });
      }
  });
}

// Adaptive pooling: output o of n covers inputs [floor(o * in / n), ceil((o + 1) * in / n)).
inline Span adaptive_span(int64_t o, int64_t in, int64_t n) {
  int64_t lo = o * in / n, hi = ((o + 1) * in + n - 1) / n;
  return {lo, hi, hi - lo};
}

template <class T, bool Backward>
void adaptive_avg(const T* src, T* dst, int64_t planes, const Geom& g) {
  // forward: src is the input, dst the output; backward: src is the output's gradient
  const int64_t Lin = g.in_numel(), L = g.out_numel();
  for_planes(planes, Lin + L, [&](int64_t p) {
    const T* s = src + p * (Backward ? L : Lin);
    T* d = dst + p * (Backward ? Lin : L);
    if constexpr (Backward) std::fill(d, d + Lin, T(0));
    for (int64_t od = 0, o = 0; od < g.out[0]; ++od) {
      Span a = adaptive_span(od, g.in[0], g.out[0]);
      for (int64_t oh = 0; oh < g.out[1]; ++oh) {
        Span b = adaptive_span(oh, g.in[1], g.out[1]);
        for (int64_t ow = 0; ow < g.out[2]; ++ow, ++o) {
          Span c = adaptive_span(ow, g.in[2], g.out[2]);
          T count = static_cast<T>(double(a.count) * double(b.count) * double(c.count));
          T sum = 0, v = Backward ? s[o] / count : T(0);
          for (int64_t id = a.lo; id < a.hi; ++id)
            for (int64_t ih = b.lo; ih < b.hi; ++ih) {
              int64_t row = (id * g.in[1] + ih) * g.in[2];
              for (int64_t iw = c.lo; iw < c.hi; ++iw) {
                if constexpr (Backward)
                  d[row + iw] += v;
                else
                  sum += s[row + iw];
              }
            }
          if constexpr (!Backward) d[o] = sum / count;
        }
      }
    }
  });
}

}  // namespace

CpuTensor pool_family(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor o = empty(out);
  const Window& w = op.attrs.window;
  bool backward = op.code == OpCode::MaxPoolBackward || op.code == OpCode::AvgPoolBackward ||
                  op.code == OpCode::AdaptiveAvgPoolBackward;
  // the window runs from the forward op's input to its output
  const Shape& big = backward ? out.shape : in[0].meta.shape;
  const Shape& small = op.code == OpCode::MaxPoolBackward ? in[1].meta.shape
                       : backward                         ? in[0].meta.shape
                                                          : out.shape;
  Geom g = make_geom(w, spatial_of(big), spatial_of(small));
  int64_t planes = big[0] * big[1];
  auto run = [&]<class T>() {
    const T* x = in[0].data<T>();
    T* y = o.data<T>();
    switch (op.code) {
      case OpCode::MaxPool:
        if (tiles(g)) return max_pool_tiles(x, y, planes, g);
        return max_pool(x, y, planes, g);
      case OpCode::MaxPoolBackward:
        if (tiles(g)) return max_pool_tiles_backward(x, in[1].data<T>(), y, planes, g);
        return max_pool_backward(x, in[1].data<T>(), y, planes, g);
      case OpCode::AvgPool:
        return avg_pool(x, y, planes, g, w.count_include_pad);
      case OpCode::AvgPoolBackward:
        return avg_pool_backward(x, y, planes, g, w.count_include_pad);
      case OpCode::AdaptiveAvgPool:
        return adaptive_avg<T, false>(x, y, planes, g);
      case OpCode::AdaptiveAvgPoolBackward:
        return adaptive_avg<T, true>(x, y, planes, g);
      default:
        throw Error("[" + std::string(name(op.code)) + "] is not a pooling op");
    }
  };
  if (out.dtype == DType::F64)
    run.template operator()<double>();
  else
    run.template operator()<float>();
  return o;
}

}  // namespace ember::cpu
