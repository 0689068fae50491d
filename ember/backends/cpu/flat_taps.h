// Internal: sums over the taps of a flat layout (wide.h's wide layout, or depthwise.cpp's phase
// layout), in which every tap of a window is one offset into a plane of rows `pitch` apart, so
// that an output position's sum is over x[i + off[t]] for all taps t. tap_sum runs them flat, a
// tap's offset at a time; TapRows groups the taps at one column and close rows so that
// tap_sum_rows (the forward) and grad_sum_rows (the weight gradient) load each input vector
// once for every output row or tap it serves. The depthwise convolutions use them.
//
//   const TapRows rows(off, pitch);                      // off: the taps' offsets
//   std::vector<TapRows::Weighted<float>> gw(rows.groups.size());
//   tap_sum_rows(rows, x, w, cols, n, gw.data(), out, out, pitch);
//   // out[i] = sum over t of w[t] * x[i + off[t]], for the first cols of each row, i < n
#pragma once
#include <algorithm>
#include <cstdint>
#include <utility>
#include <vector>

#include "ember/backends/cpu/simd.h"

namespace ember::cpu::flat {

// out[0, N vectors) = sum over taps t of w[t] * x[off[t] + (0, N vectors)]
template <int N, class T>
[[gnu::always_inline]] inline void tap_vectors(const T* x, const T* w, const int64_t* off,
                                               int64_t K, T* out) {
  using V = Vec<T>;
  constexpr int64_t L = kLanes<T>;
  V a[N] = {};
  for (int64_t t = 0; t < K; ++t) {
    const V wv = V{} + w[t];
    const T* s = x + off[t];
#pragma GCC unroll 8
    for (int j = 0; j < N; ++j) a[j] += wv * loadv(s + j * L);
  }
#pragma GCC unroll 8
  for (int j = 0; j < N; ++j) storev(out + j * L, a[j]);
}

// out[i] = sum over taps t of w[t] * x[i + off[t]], for i in [0, n): 8 vectors a step (each
// tap's FMAs 8 independent sums, which two FMA units of 4 cycles' latency keep busy), then 4,
// then one. With 4 a step, 7x7 over 8 x 32 x 112^2 took 3.8 ms on 2 threads of a Zen 4, 3.6
// this way; 5x5 over 8 x 96 x 56^2 1.8-2.3 -> 1.8-2.1.
template <class T>
void tap_sum(const T* x, const T* w, const int64_t* off, int64_t K, int64_t n, T* out) {
  constexpr int64_t L = kLanes<T>;
  int64_t i = 0;
  for (; i + 8 * L <= n; i += 8 * L) tap_vectors<8>(x + i, w, off, K, out + i);
  for (; i + 4 * L <= n; i += 4 * L) tap_vectors<4>(x + i, w, off, K, out + i);
  // then a vector at a time, the last one over the one before where n is not a multiple of L
  // (a 14 x 14 output at a pitch of 16 is 222 positions: 30 of them had been summed a scalar at
  // a time, more than the vectors' work for a 5x5 window)
  if (n >= L) {
    for (;; i += L) {
      if (i >= n) break;
      if (i + L > n) i = n - L;
      tap_vectors<1>(x + i, w, off, K, out + i);
    }
    return;
  }
  for (; i < n; ++i) {
    T a = 0;
    for (int64_t t = 0; t < K; ++t) a += w[t] * x[i + off[t]];
    out[i] = a;
  }
}

// The taps of a flat layout (offsets into planes of rows `pitch` apart) grouped by column, for
// tap_rows: each group is taps at one column whose rows lie within kSpan of its first row. Each
// input vector a group loads then serves every output row it reaches (up to kSpan of them),
// where tap_sum loads one per tap and output vector.
struct TapRows {
  static constexpr int kSpan = 4;
  struct Group {
    int64_t base;    // the first row's offset
    int span;        // rows from the first to the last tap, plus one
    int tap[kSpan];  // the tap h rows below the first, or -1
  };
  // A group with each tap's weight (zero where there is none), per output channel.
  template <class T>
  struct Weighted {
    int64_t base;
    int span;
    T w[kSpan];
  };
  std::vector<int64_t> off;  // the taps' offsets
  int64_t pitch;             // the layout's row length
  std::vector<Group> groups;
  int spans[2] = {0, 0};  // the groups' spans, the larger first; {0, 0}: more than two

  TapRows(std::vector<int64_t> offsets, int64_t row_pitch)
      : off(std::move(offsets)), pitch(row_pitch) {
    std::vector<int> order(off.size());
    for (size_t t = 0; t < off.size(); ++t) order[t] = int(t);
    std::sort(order.begin(), order.end(), [&](int a, int b) {
      const int64_t ca = off[size_t(a)] % pitch, cb = off[size_t(b)] % pitch;
      return ca != cb ? ca < cb : off[size_t(a)] < off[size_t(b)];
    });
    for (int t : order) {
      const int64_t o = off[size_t(t)];
      if (groups.empty() || o % pitch != groups.back().base % pitch ||
          (o - groups.back().base) / pitch >= kSpan) {
        groups.push_back({o, 0, {-1, -1, -1, -1}});
      }
      Group& g = groups.back();
      const int h = int((o - g.base) / pitch);
      g.tap[h] = t;
      g.span = h + 1;
    }
    for (const Group& g : groups) {
      if (g.span == spans[0] || g.span == spans[1]) continue;
      if (spans[0] == 0) {
        spans[0] = g.span;
      } else if (spans[1] == 0) {
        spans[1] = g.span;
      } else {
        spans[0] = spans[1] = 0;
        return;
      }
    }
    if (spans[1] == 0) spans[1] = spans[0];
    if (spans[1] > spans[0]) std::swap(spans[0], spans[1]);
  }
  // Whether the groups pay for rows `cols` wide in vectors of `lanes`: at most two spans, a
  // vector's width of wanted columns, and 6 taps or more averaging 2 rows a group or more. Under
  // that each loaded vector serves one or two rows (3x3 at stride 2), and the transposed 3x3
  // from 8 x 144 x 28^2 took 1.0-1.08 ms by the groups against 0.91-0.96 by tap_sum.
  bool usable(int64_t cols, int64_t lanes) const {
    const int64_t taps = int64_t(off.size());
    return spans[0] != 0 && taps >= 6 && taps >= 2 * int64_t(groups.size()) && cols >= lanes;
  }
  template <class T>
  void weigh(const T* w, Weighted<T>* out) const {
    for (size_t i = 0; i < groups.size(); ++i) {
      out[i].base = groups[i].base;
      out[i].span = groups[i].span;
      for (int h = 0; h < kSpan; ++h)
        out[i].w[h] = groups[i].tap[h] < 0 ? T(0) : w[groups[i].tap[h]];
    }
  }
};

// acc[r] += sum over h < S of w[h] * x[(r + h) * pitch + (0, L)], for r < R: each of the R + S - 1
// input vectors loaded once.
template <int S, int R, class T>
[[gnu::always_inline]] inline void group_rows(const T* x, int64_t pitch, const T* w,
                                              Vec<T> (&acc)[R]) {
  Vec<T> wv[S];
#pragma GCC unroll 8
  for (int h = 0; h < S; ++h) wv[h] = Vec<T>{} + w[h];
#pragma GCC unroll 16
  for (int j = 0; j < R + S - 1; ++j, x += pitch) {
    const Vec<T> xv = loadv(x);
#pragma GCC unroll 8
    for (int h = 0; h < S; ++h)
      if (j - h >= 0 && j - h < R) acc[j - h] += wv[h] * xv;
  }
}

constexpr int kTapRows = 8;  // output rows a block of tap_rows

// tap_sum's sums over rows [0, full) of `pitch` positions, kTapRows rows x one vector at a time
// (the last block and each row's last vector over the ones before), for groups of spans SA and
// SB only: a branch between two bodies kept every sum in a register, where a branch among four
// spans, or the rows' addresses as multiples of the pitch, had GCC spill them (and run slower
// than tap_sum). On 2 threads of a Zen 4, the forward against tap_sum alone (medians of 30
// calls, three runs, a noisy stretch): 7x7 over 8 x 32 x 112^2 3.63-3.69 -> 2.63-2.88 ms, its
// input gradient (the transposed conv) 3.62-3.75 -> 2.69-2.81; 5x5 over 8 x 96 x 56^2
// 1.45-1.68 -> 1.31-1.43 and 1.61-1.73 -> 1.27-1.32; at stride 2, 7x7 over 8 x 32 x 112^2
// 1.05-1.07 -> 0.82-0.94, 5x5 over 8 x 96 x 56^2 0.59-0.87 -> 0.54-0.55; planes of 14 and 28
// rows alike within the noise.
template <int SA, int SB, class T>
[[gnu::noinline]] void tap_rows(const T* x, const TapRows::Weighted<T>* gw, int64_t groups,
                                int64_t pitch, int64_t full, int64_t cols, T* out, int64_t ld) {
  constexpr int R = kTapRows;
  constexpr int64_t L = kLanes<T>;
  for (int64_t q0 = 0; q0 < full; q0 += R) {
    const int64_t q = std::min(q0, full - R);
    for (int64_t c0 = 0; c0 < cols; c0 += L) {
      const int64_t c = std::min(c0, cols - L), i = q * pitch + c;
      Vec<T> acc[R] = {};
      for (int64_t gi = 0; gi < groups; ++gi) {
        const T* xs = x + i + gw[gi].base;
        if (gw[gi].span == SA)
          group_rows<SA, R>(xs, pitch, gw[gi].w, acc);
        else
          group_rows<SB, R>(xs, pitch, gw[gi].w, acc);
      }
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) storev(out + (q + r) * ld + c, acc[r]);
    }
  }
}

// f.template operator()<SA, SB>() for the spans sa >= sb (TapRows::spans): one kernel per pair.
template <class F>
void with_spans(int sa, int sb, F&& f) {
  switch (sa * 8 + sb) {
    case 4 * 8 + 4:
      return f.template operator()<4, 4>();
    case 4 * 8 + 3:
      return f.template operator()<4, 3>();
    case 4 * 8 + 2:
      return f.template operator()<4, 2>();
    case 4 * 8 + 1:
      return f.template operator()<4, 1>();
    case 3 * 8 + 3:
      return f.template operator()<3, 3>();
    case 3 * 8 + 2:
      return f.template operator()<3, 2>();
    case 3 * 8 + 1:
      return f.template operator()<3, 1>();
    case 2 * 8 + 2:
      return f.template operator()<2, 2>();
    case 2 * 8 + 1:
      return f.template operator()<2, 1>();
    default:
      return f.template operator()<1, 1>();
  }
}

// tap_sum over tr's layout (rows tr.pitch apart) where the first `cols` columns are wanted (the
// rest of each row is left as it was): tap_rows over its whole rows, written to rows `ld` apart
// from `rows_out` (the layout itself, or an output of `cols`-wide rows), tap_sum for the last,
// partial one into `out`. Returns the rows written to rows_out (0: all went to out).
// tap_sum alone where the groups do not pay (TapRows::usable), for layouts of under kTapRows
// whole rows, and where the rows would compute a quarter more vectors or over (tap_rows computes
// whole blocks of rows and whole vectors of columns). gw: tr.groups.size() values.
template <class T>
int64_t tap_sum_rows(const TapRows& tr, const T* x, const T* w, int64_t cols, int64_t n,
                     TapRows::Weighted<T>* gw, T* out, T* rows_out, int64_t ld) {
  constexpr int64_t L = kLanes<T>;
  const int64_t pitch = tr.pitch, K = int64_t(tr.off.size()), full = n / pitch;
  const int64_t G = int64_t(tr.groups.size());
  const int64_t blocks = (full + kTapRows - 1) / kTapRows, vectors = (cols + L - 1) / L;
  if (!tr.usable(cols, L) || full < kTapRows ||
      4 * blocks * kTapRows * vectors > 5 * ((n + L - 1) / L)) {
    tap_sum(x, w, tr.off.data(), K, n, out);
    return 0;
  }
  tr.weigh(w, gw);
  with_spans(tr.spans[0], tr.spans[1], [&]<int SA, int SB>() {
    tap_rows<SA, SB>(x, gw, G, pitch, full, cols, rows_out, ld);
  });
  tap_sum(x + full * pitch, w, tr.off.data(), K, n - full * pitch, out + full * pitch);
  return full;
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

// The weight gradient's sums over the same groups: sums[gi * kSpan + h] (vectors) += the sum over
// the positions of a block of R rows x one vector of g (masked to the lanes inside its row) times
// x at group gi's row h. Each input vector is loaded once for the (up to S) taps it meets.
template <int S, int R, class T>
[[gnu::always_inline]] inline void group_grad(const T* x, int64_t pitch, const Vec<T> (&g)[R],
                                              Vec<T>* sums) {
  Vec<T> a[S];
#pragma GCC unroll 8
  for (int h = 0; h < S; ++h) a[h] = sums[h];
#pragma GCC unroll 16
  for (int j = 0; j < R + S - 1; ++j, x += pitch) {
    const Vec<T> xv = loadv(x);
#pragma GCC unroll 8
    for (int h = 0; h < S; ++h)
      if (j - h >= 0 && j - h < R) a[h] += g[j - h] * xv;
  }
#pragma GCC unroll 8
  for (int h = 0; h < S; ++h) sums[h] = a[h];
}

// grad_rows over `blocks` blocks of kTapRows rows: g the output gradient at the layout's pitch
// (zero past each row's `cols` outputs), x the layout's input, sums kSpan vectors a group. Where
// a tap's dot product loaded two vectors a multiply-add (the gradient's and the input's), this
// loads about half of one. The weight gradient on 2 threads of a Zen 4 (backward of a depthwise
// conv whose input needs none, medians of 20, three runs): 7x7 over 8 x 32 x 112^2 7.4-7.9 ->
// 3.7-3.9 ms, 5x5 over 8 x 96 x 56^2 3.0 -> 2.0, 7x7 at stride 2 1.53 -> 0.99-1.06.
template <int SA, int SB, class T>
[[gnu::noinline]] void grad_rows(const T* g, const T* x, const TapRows::Group* gs, int64_t groups,
                                 int64_t pitch, int64_t blocks, int64_t cols, Vec<T>* sums) {
  constexpr int R = kTapRows;
  constexpr int64_t L = kLanes<T>;
  Vec<T> inside{};  // the last vector's lanes inside the row
  for (int64_t l = 0; l < L; ++l) inside[l] = (cols - 1) / L * L + l < pitch ? T(1) : T(0);
  for (int64_t q = 0; q < blocks * R; q += R)
    for (int64_t c = 0; c < cols; c += L) {
      const int64_t i = q * pitch + c;
      Vec<T> gv[R];
#pragma GCC unroll 8
      for (int r = 0; r < R; ++r) gv[r] = loadv(g + i + r * pitch);
      if (c + L > pitch)
#pragma GCC unroll 8
        for (int r = 0; r < R; ++r) gv[r] *= inside;
      for (int64_t gi = 0; gi < groups; ++gi) {
        const T* xs = x + i + gs[gi].base;
        Vec<T>* s = sums + gi * TapRows::kSpan;
        if (gs[gi].span == SA)
          group_grad<SA, R>(xs, pitch, gv, s);
        else
          group_grad<SB, R>(xs, pitch, gv, s);
      }
    }
}

// acc[t] += dot(g, x + off[t], n) for each of tr's taps t, g zero past each row's `cols` (of
// tr.pitch):
// grad_rows over whole blocks of rows and the dots over the rest, where the groups pay
// (TapRows::usable; the dots alone elsewhere). sums: kSpan vectors a group of scratch.
template <class T>
void grad_sum_rows(const TapRows& tr, const T* g, const T* x, int64_t cols, int64_t n, Vec<T>* sums,
                   T* acc) {
  const int64_t pitch = tr.pitch, K = int64_t(tr.off.size()), G = int64_t(tr.groups.size());
  const int64_t blocks = n / pitch / kTapRows;
  int64_t from = 0;  // where the dots start
  if (tr.usable(cols, kLanes<T>) && blocks > 0) {
    std::fill(sums, sums + G * TapRows::kSpan, Vec<T>{});
    with_spans(tr.spans[0], tr.spans[1], [&]<int SA, int SB>() {
      grad_rows<SA, SB>(g, x, tr.groups.data(), G, pitch, blocks, cols, sums);
    });
    for (int64_t gi = 0; gi < G; ++gi)
      for (int h = 0; h < TapRows::kSpan; ++h)
        if (const int t = tr.groups[size_t(gi)].tap[h]; t >= 0)
          for (int64_t l = 0; l < kLanes<T>; ++l) acc[t] += sums[gi * TapRows::kSpan + h][l];
    from = blocks * kTapRows * pitch;
  }
  for (int64_t t = 0; t < K; ++t) acc[t] += dot(g + from, x + tr.off[size_t(t)] + from, n - from);
}

}  // namespace ember::cpu::flat
