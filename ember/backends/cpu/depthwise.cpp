// Convolutions with one input channel per group (depthwise, or C_in = 1): a GEMM with
// K = prod(kernel) would mostly pack, so these run direct loops. Output channel co reads
// input channel co / (C_out / groups) with the weights w[co] (the same index for conv and
// conv_transpose).
//
// With stride 1 along every dim (the common case) conv and its weight gradient run on the
// wide layout (wide.h): each tap is one long contiguous run, summed by flat_taps.h's loops (the
// taps in column groups over blocks of rows where that pays); with other strides on the phase
// layout (Phases below), which makes them the same loops. The transposed conv with strides sums
// each phase of its output over a copy of its input (phases_transpose). Small 2-d planes take
// depthwise_lanes.cpp instead (8 channels in a vector's lanes) from AVX2 up.
#include <algorithm>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/backends/cpu/flat_taps.h"
#include "ember/backends/cpu/simd.h"
#include "ember/backends/cpu/spatial.h"
#include "ember/backends/cpu/wide.h"

namespace ember::cpu {

namespace {

using flat::grad_sum_rows;
using flat::tap_sum_rows;
using flat::TapRows;

// ---- any stride: the phase layout --------------------------------------------------------

// With stride s along a dim, output o reads the padded input at s * o + k * d (tap k, dilation
// d): phase a of that dim, the padded positions a, a + s, a + 2s, ..., holds it at o + k * d /
// s, with a = k * d % s. Each phase plane (one per combination of the dims' phases) is laid out
// at one pitch, the output row's length plus the window's reach in phase columns, so that, as in
// the wide layout, a tap reads one phase plane at one flat offset for every output, and the
// loops over taps are the stride-1 ones (flat_taps.h). Stride 2 in h and w reads 4 planes of a
// quarter of the input each, made by one pass that splits each row's even and odd columns.
struct Phases : WideRows {
  int64_t count;             // phase planes: s[0] * s[1] * s[2]
  std::vector<int64_t> off;  // each tap's flat offset, its phase plane's start included

  explicit Phases(const Geom& g) {
    count = 1;
    for (int i = 0; i < 3; ++i) {
      pitch[i] = g.out[i] + (g.k[i] - 1) * g.d[i] / g.s[i];
      count *= g.s[i];
    }
    wide = ((g.out[0] - 1) * pitch[1] + g.out[1] - 1) * pitch[2] + g.out[2];
    for (int64_t kd = 0; kd < g.k[0]; ++kd)
      for (int64_t kh = 0; kh < g.k[1]; ++kh)
        for (int64_t kw = 0; kw < g.k[2]; ++kw) {
          const int64_t t[3] = {kd * g.d[0], kh * g.d[1], kw * g.d[2]};
          const int64_t phase = (t[0] % g.s[0] * g.s[1] + t[1] % g.s[1]) * g.s[2] + t[2] % g.s[2];
          off.push_back(phase * plane_size() +
                        (t[0] / g.s[0] * pitch[1] + t[1] / g.s[1]) * pitch[2] + t[2] / g.s[2]);
        }
  }
  int64_t plane_size() const { return pitch[0] * pitch[1] * pitch[2]; }

  // Strides of up to 8 (others, and phase planes past 2^26 values, take the row loops below: a
  // stride as large as the input makes as many planes as there are taps).
  static bool fits(const Geom& g) {
    int64_t n = 1;
    for (int i = 0; i < 3; ++i) {
      if (g.s[i] < 1 || g.s[i] > 8 || g.d[i] < 1 || g.out[i] < 1 || g.k[i] < 1) return false;
      int64_t reach = 0;
      if (__builtin_mul_overflow(g.k[i] - 1, g.d[i], &reach) || g.out[i] > (int64_t{1} << 26))
        return false;
      const int64_t pitch = g.out[i] + reach / g.s[i];
      if (__builtin_mul_overflow(n, g.s[i], &n) || __builtin_mul_overflow(n, pitch, &n) ||
          n > (int64_t{1} << 26))
        return false;
    }
    return true;
  }
  int64_t plane() const { return count * plane_size(); }  // the scratch all phases take

  // x (a plane of g.in) split into its phase planes in dst (plane() values), zeros where a phase
  // position falls in the padding (left as they are where `zeroed`: dst holds an earlier split
  // of this layout). The input's rows are read in order. Stride 2 along w splits
  // each row inline, with every bound worked out once a plane and held in locals: the vector
  // stores (memcpy's, which may alias anything) had every bound read again from the geometry
  // after each store, in a call per row, and the split took as long as the taps' sums: 8 x 96 x
  // 56^2, 5x5, 2 threads of a Zen 4, the split 0.28-0.29 ms of 0.62-0.64 -> 0.18-0.22.
  template <class T>
  void split(const Geom& g, const T* x, T* dst, bool zeroed) const {
    if (g.s[2] != 2)
      return for_input_rows(g, x, dst, !zeroed,
                            [&](const T* src, T* row) { split_row(g, src, row); });
    constexpr int64_t L = kLanes<T>;
    const int64_t n = g.in[2], p = g.p[2], cols = pitch[2], phase_size = plane_size();
    // columns [lo, hi) read inputs 2c - p and 2c + 1 - p inside [0, n); [first, end) read one
    // inside at least, the rest only the padding
    const int64_t lo = std::min(cols, (p + 1) / 2), hi = std::max(lo, std::min(cols, (n + p) / 2));
    const int64_t first = std::min(lo, p / 2),
                  end = std::max(hi, std::min(cols, (n - 1 + p) / 2 + 1));
    const bool vectors = hi - lo >= L;
    if (!zeroed) std::fill(dst, dst + plane(), T(0));
    for_input_rows(g, x, dst, false, [=](const T* src, T* even) {
      T* odd = even + phase_size;
      auto at = [=](int64_t i) { return i >= 0 && i < n ? src[i] : T(0); };
      auto pair = [=](int64_t c) {
        const Vec<T> a = loadv(src + 2 * c - p), b = loadv(src + 2 * c - p + L);
        storev(even + c, even_lanes<T>(a, b));
        storev(odd + c, odd_lanes<T>(a, b));
      };
      int64_t c = first;
      for (; c < lo; ++c) even[c] = at(2 * c - p), odd[c] = at(2 * c + 1 - p);
      if (vectors) {
        for (; c + L <= hi; c += L) pair(c);
        if (c < hi) pair(hi - L);  // over the one before
        c = hi;
      }
      for (; c < end; ++c) even[c] = at(2 * c - p), odd[c] = at(2 * c + 1 - p);
    });
  }

 private:
  // f(input row, its phase row in dst) for each row of each phase plane of dst inside the input;
  // zeros for those in the padding where `fill`.
  template <class T, class F>
  void for_input_rows(const Geom& g, const T* x, T* dst, bool fill, F&& f) const {
    const int64_t s0 = g.s[0], s1 = g.s[1], s2 = g.s[2], p0 = g.p[0], p1 = g.p[1];
    const int64_t in0 = g.in[0], in1 = g.in[1], n = g.in[2];
    const int64_t P0 = pitch[0], P1 = pitch[1], cols = pitch[2], plane = plane_size();
    for (int64_t r0 = 0; r0 < P0; ++r0)
      for (int64_t a0 = 0; a0 < s0; ++a0)
        for (int64_t r1 = 0; r1 < P1; ++r1)
          for (int64_t a1 = 0; a1 < s1; ++a1) {
            const int64_t z = s0 * r0 + a0 - p0, y = s1 * r1 + a1 - p1;
            T* row = dst + (a0 * s1 + a1) * s2 * plane + (r0 * P1 + r1) * cols;
            if (z < 0 || z >= in0 || y < 0 || y >= in1) {
              for (int64_t b = 0; b < s2 && fill; ++b)
                std::fill(row + b * plane, row + b * plane + cols, T(0));
              continue;
            }
            // the row 8 ahead fetched meanwhile (a prefetch past the plane's end does not
            // fault): without it, 8 x 64 x 112^2 stride 2 took 2.1 ms on 2 threads of a Zen 4
            // against 1.45 (the row loop before, which read the input in place), with it
            // 1.36-1.49, as the row loop
            const T* src = x + (z * in1 + y) * n;
            for (int64_t i = 0; i < n; i += 64 / int64_t(sizeof(T)))
              __builtin_prefetch(src + 8 * n + i, 0, 3);
            f(src, row);
          }
  }

  // The row's phases: row[b * plane_size() + c] = src[s * c + b - p] (0 outside the row), for
  // each b. Stride 2 takes both phases of 2 * L inputs a step (the even and the odd lanes) over
  // the columns whose inputs are all inside the row, the last step over the one before where
  // their count is not a multiple of L, and the few columns at the edges a value at a time: 28
  // columns with a padding of 2 had taken 1 vector and 7 columns a value at a time (8 x 240 x
  // 28^2, 5x5, on 2 threads of a Zen 4: 0.79 -> 0.64-0.68 ms). Copying the row with its padding
  // into a buffer first, to run vectors from edge to edge, made the loads wait on those stores.
  template <class T>
  void split_row(const Geom& g, const T* src, T* row) const {
    const int64_t s = g.s[2], p = g.p[2], n = g.in[2], cols = pitch[2];
    auto at = [&](int64_t i) { return i >= 0 && i < n ? src[i] : T(0); };
    if (s == 1) {
      const int64_t lo = std::min(cols, p), hi = std::max(lo, std::min(cols, n + p));
      std::fill(row, row + lo, T(0));
      copy_short(src + lo - p, row + lo, hi - lo);
      std::fill(row + hi, row + cols, T(0));
      return;
    }
    if (s == 2) {
      constexpr int64_t L = kLanes<T>;
      T *even = row, *odd = row + plane_size();
      // columns [lo, hi) read inputs 2c - p and 2c + 1 - p inside [0, n)
      const int64_t lo = std::min(cols, (p + 1) / 2),
                    hi = std::max(lo, std::min(cols, (n + p) / 2));
      int64_t c = 0;
      for (; c < lo; ++c) even[c] = at(2 * c - p), odd[c] = at(2 * c + 1 - p);
      if (hi - lo >= L) {
        for (;; c += L) {
          if (c >= hi) break;
          if (c + L > hi) c = hi - L;
          const Vec<T> a = loadv(src + 2 * c - p), b = loadv(src + 2 * c - p + L);
          storev(even + c, even_lanes<T>(a, b));
          storev(odd + c, odd_lanes<T>(a, b));
        }
      }
      for (; c < cols; ++c) even[c] = at(2 * c - p), odd[c] = at(2 * c + 1 - p);
      return;
    }
    for (int64_t b = 0; b < s; ++b)
      for (int64_t c = 0; c < cols; ++c) row[b * plane_size() + c] = at(s * c + b - p);
  }
};

// The layout's plane of x: Wide's padded plane (x itself where there is no padding), or the
// phase planes, in buf. `zeroed`: buf holds an earlier plane of this layout, whose padding (the
// same positions for every plane) is zero already and is not written again. On one thread of
// a Zen 4, medians of 30 calls, 4 runs: 5x5 at stride 2 over 8 x 240 x 28^2 0.82-0.84 -> 0.69
// ms, over 8 x 96 x 56^2 0.91-0.95 -> 0.86-0.93.
template <class T>
const T* layout_plane(const Wide& f, const Geom& g, const T* x, T* buf, bool zeroed) {
  return padded_plane(f, g, x, buf, zeroed);
}
template <class T>
const T* layout_plane(const Phases& f, const Geom& g, const T* x, T* buf, bool zeroed) {
  f.split(g, x, buf, zeroed);
  return buf;
}
template <class Layout>
bool needs_scratch(const Layout& f) {
  if constexpr (std::is_same_v<Layout, Wide>)
    return f.padded;
  else
    return true;
}

template <class T, class Layout>
void wide_forward(const T* X, const T* W, T* Y, int64_t N, int64_t c_in, int64_t per_group,
                  const Geom& g) {
  const Layout f(g);
  const int64_t c_out = c_in * per_group;
  const int64_t K = g.k_numel(), Lin = g.in_numel(), L = g.out_numel();
  const int64_t work = per_group * f.wide * K;
  const TapRows rows(f.off, f.pitch[2]);
  const bool direct = g.out[0] == 1;
  parallel_for(N * c_in, std::max<int64_t>(1, kGrain / std::max<int64_t>(work, 1)),
               [&](int64_t b, int64_t e) {
                 Scratch<T> pad(needs_scratch(f) ? f.plane() : 0), wide(f.wide);
                 std::vector<TapRows::Weighted<T>> gw(rows.groups.size());
                 for (int64_t item = b; item < e; ++item) {
                   const int64_t n = item / c_in, ci = item % c_in;
                   const T* xp = layout_plane(f, g, X + item * Lin, pad.get(), item > b);
                   for (int64_t co = ci * per_group; co < (ci + 1) * per_group; ++co) {
                     // 2-d: the layout's rows are the output's, and tap_rows writes them there
                     T* y = Y + (n * c_out + co) * L;
                     const int64_t done =
                         tap_sum_rows(rows, xp, W + co * K, g.out[2], f.wide, gw.data(), wide.get(),
                                      direct ? y : wide.get(), direct ? g.out[2] : f.pitch[2]);
                     if (!direct) {
                       f.narrow(g, wide.get(), y);
                       continue;
                     }
                     for (int64_t oh = done; oh < g.out[1]; ++oh)
                       copy_short(wide.get() + oh * f.pitch[2], y + oh * g.out[2], g.out[2]);
                   }
                 }
               });
}

template <class T, class Layout>
void wide_weight_grad(const CpuTensor& x, const CpuTensor& gy, const CpuTensor& dw, const Geom& g,
                      int64_t per_group) {
  const Layout f(g);
  const int64_t N = x.meta.shape[0], c_in = x.meta.shape[1], c_out = gy.meta.shape[1];
  const int64_t K = g.k_numel(), Lin = g.in_numel(), L = g.out_numel();
  const T *X = x.data<T>(), *GY = gy.data<T>();
  const TapRows rows(f.off, f.pitch[2]);
  sum_in_chunks<T>(N * c_in, c_out * K, dw.data<T>(), [&](int64_t b, int64_t e, T* acc) {
    Scratch<T> pad(needs_scratch(f) ? f.plane() : 0), wide(f.wide);
    std::vector<Vec<T>> sums(rows.groups.size() * TapRows::kSpan);
    T* gw = wide.get();
    for (int64_t item = b; item < e; ++item) {
      const int64_t n = item / c_in, ci = item % c_in;
      const T* xp = layout_plane(f, g, X + item * Lin, pad.get(), item > b);
      for (int64_t co = ci * per_group; co < (ci + 1) * per_group; ++co) {
        // the output's gradient at the wide pitch, zero at the dropped positions
        f.widen(g, GY + (n * c_out + co) * L, gw);
        grad_sum_rows(rows, gw, xp, g.out[2], f.wide, sums.data(), acc + co * K);
      }
    }
  });
}

// y's rows out of its phase planes z (count of them, `wide` apart, pitch P[1], P[2]): y at u
// (per dim) is phase (u + p) % s's value at (u + p) / s. Stride 2 along w interleaves the two
// phases of a row a pair of vectors at a time.
template <class T>
void interleave_phases(const Geom& g, const T* z, int64_t wide, const int64_t (&P)[3], T* y) {
  const int64_t s2 = g.s[2], p2 = g.p[2], n = g.in[2];
  for (int64_t u0 = 0; u0 < g.in[0]; ++u0)
    for (int64_t u1 = 0; u1 < g.in[1]; ++u1) {
      const int64_t a0 = (u0 + g.p[0]) % g.s[0], m0 = (u0 + g.p[0]) / g.s[0];
      const int64_t a1 = (u1 + g.p[1]) % g.s[1], m1 = (u1 + g.p[1]) / g.s[1];
      const T* zr = z + (a0 * g.s[1] + a1) * s2 * wide + (m0 * P[1] + m1) * P[2];
      T* yr = y + (u0 * g.in[1] + u1) * n;
      int64_t u = 0;
      if (s2 == 2) {  // y[u] = zr[(u + p) % 2 plane][(u + p) / 2]: pairs from m = lo on
        constexpr int64_t L = kLanes<T>;
        const T *even = zr, *odd = zr + wide;
        for (; u < n && (u + p2) % 2 != 0; ++u) yr[u] = odd[(u + p2) / 2];
        for (; u + 2 * L <= n; u += 2 * L) {
          const int64_t m = (u + p2) / 2;
          store_interleaved(yr + u, loadv(even + m), loadv(odd + m));
        }
      }
      for (; u < n; ++u) yr[u] = zr[(u + p2) % s2 * wide + (u + p2) / s2];
    }
}

// The transposed conv with strides (a strided depthwise conv's input gradient), one output
// channel per input channel: y at the padded position U = s * m + a (per dim) is the sum over
// the taps of phase a (k * d % s == a) of w[k] x[m - k * d / s]. With x laid in a buffer after
// a margin of Q = (K - 1) * d / s zeros per dim, every phase plane of y is a sum of shifted runs
// of that buffer (tap_sum_rows), and the phase planes are then interleaved into y's rows (stride 2:
// a phase pair's vectors at a time). The row loops had scattered every tap over y's rows: 2
// threads of a Zen 4, medians, 3x3 from 8 x 64 x 56^2 to 112^2 3.4 -> 1.9-2.4 ms, 5x5 from 8 x
// 96 x 28^2 3.1-3.9 -> 0.8-1.0.
template <class T>
void phases_transpose(const T* X, const T* W, T* Y, int64_t N, int64_t C, const Geom& g) {
  int64_t Q[3], M[3], P[3], count = 1;
  for (int i = 0; i < 3; ++i) {
    Q[i] = (g.k[i] - 1) * g.d[i] / g.s[i];
    M[i] = (g.p[i] + g.in[i] - 1) / g.s[i] + 1;  // phase positions up to y's last
    P[i] = M[i] + Q[i];
    count *= g.s[i];
  }
  const int64_t buffer = P[0] * P[1] * P[2], wide = ((M[0] - 1) * P[1] + M[1] - 1) * P[2] + M[2];
  const int64_t K = g.k_numel(), Lx = g.out_numel(), Ly = g.in_numel();
  // each phase's taps (their flat index) and offsets into the buffer
  std::vector<std::vector<int64_t>> taps(static_cast<size_t>(count)),
      offs(static_cast<size_t>(count));
  for (int64_t kd = 0, t = 0; kd < g.k[0]; ++kd)
    for (int64_t kh = 0; kh < g.k[1]; ++kh)
      for (int64_t kw = 0; kw < g.k[2]; ++kw, ++t) {
        const int64_t u[3] = {kd * g.d[0], kh * g.d[1], kw * g.d[2]};
        const size_t a = size_t((u[0] % g.s[0] * g.s[1] + u[1] % g.s[1]) * g.s[2] + u[2] % g.s[2]);
        taps[a].push_back(t);
        offs[a].push_back(((Q[0] - u[0] / g.s[0]) * P[1] + Q[1] - u[1] / g.s[1]) * P[2] + Q[2] -
                          u[2] / g.s[2]);
      }
  std::vector<TapRows> rows;
  size_t most = 0;  // groups of a phase, at most
  for (auto& o : offs) {
    rows.emplace_back(std::move(o), P[2]);
    most = std::max(most, rows.back().groups.size());
  }
  parallel_for(N * C, std::max<int64_t>(1, kGrain / std::max<int64_t>(Ly * K, 1)),
               [&](int64_t b, int64_t e) {
                 Scratch<T> xb(buffer), zb(count * wide), wb(K);
                 std::vector<TapRows::Weighted<T>> gw(most);
                 T *xw = xb.get(), *z = zb.get();
                 std::fill(xw, xw + buffer, T(0));  // the margins stay zero
                 for (int64_t item = b; item < e; ++item) {
                   const T* x = X + item * Lx;
                   for (int64_t o0 = 0; o0 < g.out[0]; ++o0)
                     for (int64_t o1 = 0; o1 < g.out[1]; ++o1)
                       copy_short(x + (o0 * g.out[1] + o1) * g.out[2],
                                  xw + ((Q[0] + o0) * P[1] + Q[1] + o1) * P[2] + Q[2], g.out[2]);
                   const T* w = W + item % C * K;
                   for (int64_t a = 0; a < count; ++a) {
                     const auto& ts = taps[size_t(a)];
                     T* za = z + a * wide;
                     if (ts.empty()) {
                       std::fill(za, za + wide, T(0));
                       continue;
                     }
                     for (size_t j = 0; j < ts.size(); ++j) wb.get()[j] = w[ts[j]];
                     tap_sum_rows(rows[size_t(a)], xw, wb.get(), M[2], wide, gw.data(), za, za,
                                  P[2]);
                   }
                   interleave_phases(g, z, wide, P, Y + item * Ly);
                 }
               });
}

// ---- any stride: tap by tap over output rows (the transposed conv, strides past 8) -------

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
  const T *X = in[0].data<T>(), *W = in[1].data<T>();
  T* Y = out.data<T>();
  const int64_t N = in[0].meta.shape[0], C = in[0].meta.shape[1];
  switch (code) {
    case OpCode::Conv:
      if constexpr (std::is_same_v<T, float>) {
        if (depthwise3x3_avx2_fits(g)) return depthwise3x3_avx2(X, W, Y, N, C, per_group, g);
        if (depthwise_lanes_fits(g, per_group)) return depthwise_lanes(X, W, Y, N, C, g);
      }
      if (wide) return wide_forward<T, Wide>(X, W, Y, N, C, per_group, g);
      if (Phases::fits(g)) return wide_forward<T, Phases>(X, W, Y, N, C, per_group, g);
      return rows_forward<T>(in[0], in[1], out, Rows(g, per_group));
    case OpCode::ConvTranspose: {
      // With stride and dilation 1 and one output per input channel, the transposed depthwise
      // conv (a depthwise conv's input gradient) is the depthwise conv of its input with each
      // channel's window turned around, padding k - 1 - p: AVX2's 3x3 kernel where that is 0 or
      // 1, else the wide layout's loops (2 threads of a Zen 4, medians: 5x5 on 8 x 96 x 56^2
      // 8.2-8.5 ms by the row loops, 3.9 this way; 7x7 on 8 x 32 x 112^2 15.0 -> 7.7).
      const Geom f = flipped_geom(g);
      bool flips = per_group == 1 && Wide::fits(f);
      for (int i = 0; i < 3; ++i) flips = flips && g.s[i] == 1 && g.d[i] == 1 && f.p[i] >= 0;
      if (flips) {
        const int64_t K = g.k_numel();
        std::vector<T> wf(static_cast<size_t>(C * K));
        turned_weights(W, C, int64_t{1}, K, wf.data());  // each channel's window turned around
        if constexpr (std::is_same_v<T, float>) {
          if (depthwise3x3_avx2_fits(f)) return depthwise3x3_avx2(X, wf.data(), Y, N, C, 1, f);
          if (depthwise_lanes_fits(f, 1)) return depthwise_lanes(X, wf.data(), Y, N, C, f);
        }
        return wide_forward<T, Wide>(X, wf.data(), Y, N, C, 1, f);
      }
      if constexpr (std::is_same_v<T, float>)
        if (depthwise_lanes_fits(g, per_group)) return depthwise_lanes_transpose(X, W, Y, N, C, g);
      if (per_group == 1 && Phases::fits(g)) return phases_transpose<T>(X, W, Y, N, C, g);
      return rows_transpose<T>(in[0], in[1], out, Rows(g, per_group));
    }
    case OpCode::ConvWeightGrad:
      if constexpr (std::is_same_v<T, float>) {
        if (depthwise3x3_avx2_fits(g)) {
          const Shape& xs = in[0].meta.shape;
          return depthwise3x3_weight_grad_avx2(in[0].data<float>(), in[1].data<float>(),
                                               out.data<float>(), xs[0], xs[1], per_group, g);
        }
        if (depthwise_lanes_fits(g, per_group))
          return depthwise_lanes_weight_grad(in[0].data<float>(), in[1].data<float>(),
                                             out.data<float>(), N, C, g);
      }
      if (wide) return wide_weight_grad<T, Wide>(in[0], in[1], out, g, per_group);
      if (Phases::fits(g)) return wide_weight_grad<T, Phases>(in[0], in[1], out, g, per_group);
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
