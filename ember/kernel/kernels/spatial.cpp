#include "ember/kernel/kernels/spatial.h"

#include <cmath>
#include <functional>

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {

void check(std::string_view op, DType t, int rank) {
  if (!is_float(t)) detail::unsupported(op, "needs a float dtype, not " + std::string(name(t)));
  if (rank < 1 || rank > 3) detail::unsupported(op, "rank must be 1 to 3 spatial dims");
}

// The geometry parameters (spatial.h): in*, out*, and for a window kernel*, stride*,
// padding*, dilation*.
struct Geometry {
  std::vector<Val> in, out, k, s, p, d;
};
Geometry geometry(KernelBuilder& kb, int r, ScalarType ix, bool window) {
  Geometry g;
  g.in = detail::scalars(kb, "in", r, ix);
  g.out = detail::scalars(kb, "out", r, ix);
  if (window) {
    g.k = detail::scalars(kb, "kernel", r, ix);
    g.s = detail::scalars(kb, "stride", r, ix);
    g.p = detail::scalars(kb, "padding", r, ix);
    g.d = detail::scalars(kb, "dilation", r, ix);
  }
  return g;
}

// Element p of a dense [N, C, *sizes]: its image, channel and spatial coordinates.
struct Pos {
  Val n, c;
  std::vector<Val> at;
};
Pos split(const Val& p, const Val& channels, const std::vector<Val>& sizes) {
  std::vector<Val> shape{channels, channels};
  shape.insert(shape.end(), sizes.begin(), sizes.end());
  std::vector<Val> c = detail::coords(p, shape);
  return {c[0], c[1], std::vector<Val>(c.begin() + 2, c.end())};
}

// The offset of (n, c, at) in a tensor of strides st (N, C, then the spatial dims).
Val plane_base(const Pos& q, const std::vector<Val>& st) { return q.n * st[0] + q.c * st[1]; }
Val spatial_offset(const std::vector<Val>& at, const std::vector<Val>& st) {
  return detail::offset(at, std::vector<Val>(st.begin() + 2, st.end()));
}
// Row-major flat index of `at` in `sizes`.
Val flat(const std::vector<Val>& at, const std::vector<Val>& sizes) {
  Val f = at[0];
  for (size_t i = 1; i < at.size(); ++i) f = f * sizes[i] + at[i];
  return f;
}
Val product(const std::vector<Val>& v) {
  Val f = v[0];
  for (size_t i = 1; i < v.size(); ++i) f = f * v[i];
  return f;
}

// for each dim d: for (i_d = lo[d]; i_d < hi[d]; ++i_d), nested in dim order; body(i).
void nest(KernelBuilder& kb, const std::vector<Val>& lo, const std::vector<Val>& hi,
          const std::function<void(const std::vector<Val>&)>& body) {
  std::vector<Val> idx;
  std::function<void(size_t)> level = [&](size_t d) {
    if (d == lo.size()) return body(idx);
    kb.for_(lo[d], hi[d], kb.lit(lo[d].type(), 1), [&](Val i) {
      idx.push_back(i);
      level(d + 1);
      idx.pop_back();
    });
  };
  level(0);
}

Val load_as(KernelBuilder& kb, const Mem& m, const Val& at, ScalarType t) {
  Val v = kb.load(m, at);
  return v.type().scalar == t ? v : kb.cast(v, t);
}

// The taps [lo, hi) of the window at output o along dim i that land inside the input, and
// where the window starts (input = start + tap * dilation).
struct Taps {
  Val start, lo, hi;
};
Taps taps_of(KernelBuilder& kb, const Geometry& g, size_t i, const Val& o) {
  ScalarType ix = o.type().scalar;
  Val zero = kb.lit(ix, 0), start = o * g.s[i] - g.p[i];
  Val lo = kb.select(start >= 0.0, zero, (zero - start + g.d[i] - 1.0) / g.d[i]);
  Val hi = kb.select(start < g.in[i], kb.min(g.k[i], (g.in[i] - 1.0 - start) / g.d[i] + 1.0), zero);
  return {start, lo, kb.max(lo, hi)};
}

// The window maximum at output coordinates o of the plane at `base` (CPU's rule: a tap wins
// when it is above the best so far or NaN; the first tap always sets the position). Sets
// best (compute type) and, when `at` is given, the flat spatial index of the winner.
void window_max(KernelBuilder& kb, const Geometry& g, const Mem& x, const Val& base,
                const std::vector<Val>& xs, const std::vector<Val>& o, const Var& best,
                const Var* at) {
  size_t r = o.size();
  ScalarType ct = best.type().scalar;
  std::vector<Taps> t;
  std::vector<Val> lo, hi;
  for (size_t i = 0; i < r; ++i) {
    t.push_back(taps_of(kb, g, i, o[i]));
    lo.push_back(t[i].lo);
    hi.push_back(t[i].hi);
  }
  best.set(kb.lit(ct, -INFINITY));
  if (at) at->set(kb.lit(o[0].type(), -1));
  nest(kb, lo, hi, [&](const std::vector<Val>& kk) {
    std::vector<Val> pos;
    for (size_t i = 0; i < r; ++i) pos.push_back(t[i].start + kk[i] * g.d[i]);
    Val v = load_as(kb, x, base + spatial_offset(pos, xs), ct);
    Val take = v > best.get() || kb.is_nan(v);
    if (at) {
      take = take || at->get() < 0.0;
      at->set(kb.select(take, flat(pos, g.in), at->get()));
    }
    best.set(kb.select(take, v, best.get()));
  });
}

// For input coordinate i along dim d: the outputs [lo, hi) whose window [o * s - p,
// o * s - p + span) holds it.
std::pair<Val, Val> outputs_holding(KernelBuilder& kb, const Val& i, const Val& s, const Val& p,
                                    const Val& span, const Val& out) {
  ScalarType ix = i.type().scalar;
  Val a = i + p - span + 1.0;  // the first o has o * s >= a
  Val lo = kb.select(a > 0.0, (a + s - 1.0) / s, kb.lit(ix, 0));
  Val hi = kb.min(out, (i + p) / s + 1.0);
  return {lo, kb.max(lo, hi)};
}

// AvgPool's window along dim i at output o: inputs [lo, hi) and the divisor's factor.
struct AvgSpan {
  Val lo, hi, count;
};
AvgSpan avg_span(KernelBuilder& kb, const Geometry& g, size_t i, const Val& o, bool include_pad) {
  Val lo = o * g.s[i] - g.p[i];
  Val hi = kb.min(lo + g.k[i], g.in[i] + g.p[i]);
  Val padded = hi - lo;
  lo = kb.max(lo, kb.lit(lo.type(), 0));
  hi = kb.min(hi, g.in[i]);
  return {lo, hi, include_pad ? padded : hi - lo};
}

// Adaptive pooling: output o of n covers inputs [floor(o * in / n), ceil((o + 1) * in / n)).
AvgSpan adaptive_span(const Val& o, const Val& in, const Val& n) {
  Val lo = o * in / n, hi = ((o + 1.0) * in + n - 1.0) / n;
  return {lo, hi, hi - lo};
}

Val divisor(KernelBuilder& kb, const std::vector<AvgSpan>& spans, ScalarType ct) {
  // the CPU multiplies the factors as doubles: exact, as these integers are
  Val c = kb.cast(spans[0].count, ct);
  for (size_t i = 1; i < spans.size(); ++i) c = c * kb.cast(spans[i].count, ct);
  return c;
}

}  // namespace

Kernel pool_kernel(const PoolSpec& s) {
  std::string op(name(s.op));
  bool max = s.op == OpCode::MaxPool || s.op == OpCode::MaxPoolBackward;
  bool avg = s.op == OpCode::AvgPool || s.op == OpCode::AvgPoolBackward;
  bool adaptive = s.op == OpCode::AdaptiveAvgPool || s.op == OpCode::AdaptiveAvgPoolBackward;
  if (!max && !avg && !adaptive) detail::unsupported(op, "not a pooling op");
  check(op, s.dtype, s.rank);
  bool backward = s.op == OpCode::MaxPoolBackward || s.op == OpCode::AvgPoolBackward ||
                  s.op == OpCode::AdaptiveAvgPoolBackward;
  const int r = s.rank;
  ScalarType t = scalar_of(s.dtype), ct = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  std::string extra = "_r" + std::to_string(r) + (avg && !s.count_include_pad ? "_nopad" : "");
  KernelBuilder kb(detail::kname(op, s.dtype, s.wide_index, extra), {s.workgroup, 1, 1});
  bool grad_only = backward && !max;  // avg/adaptive backward read the gradient alone
  Mem x = kb.buffer(grad_only ? "g" : "x", t, Access::Read);
  Mem g;
  if (s.op == OpCode::MaxPoolBackward) g = kb.buffer("g", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val n = kb.scalar("n", ix), channels = kb.scalar("channels", ix);
  Geometry geo = geometry(kb, r, ix, !adaptive);
  std::vector<Val> xs = detail::scalars(kb, grad_only ? "g_stride" : "x_stride", r + 2, ix);
  std::vector<Val> gs;
  if (s.op == OpCode::MaxPoolBackward) gs = detail::scalars(kb, "g_stride", r + 2, ix);
  Var best = kb.var("best", ct);
  Var at = kb.var("at", ix);
  Var acc = kb.var("acc", ct);

  if (!backward) {
    detail::grid_loop(kb, n, [&](Val p) {
      Pos q = split(p, channels, geo.out);
      Val base = plane_base(q, xs);
      if (max) {
        window_max(kb, geo, x, base, xs, q.at, best, nullptr);
        kb.store(out, p, kb.cast(best.get(), t));
        return;
      }
      std::vector<AvgSpan> sp;
      std::vector<Val> lo, hi;
      for (int i = 0; i < r; ++i) {
        sp.push_back(avg ? avg_span(kb, geo, i, q.at[i], s.count_include_pad)
                         : adaptive_span(q.at[i], geo.in[i], geo.out[i]));
        lo.push_back(sp[i].lo);
        hi.push_back(sp[i].hi);
      }
      acc.set(kb.lit(ct, 0));
      nest(kb, lo, hi, [&](const std::vector<Val>& i) {
        acc.set(acc.get() + load_as(kb, x, base + spatial_offset(i, xs), ct));
      });
      kb.store(out, p, kb.cast(acc.get() / divisor(kb, sp, ct), t));
    });
    return kb.finish();
  }

  // Backward: one thread per input element gathers from the outputs whose windows hold it,
  // in output order (what the CPU's serial loop adds, in the same order).
  const std::vector<Val>& ys = max ? gs : xs;  // the gradient's strides
  const Mem& gy = max ? g : x;
  detail::grid_loop(kb, n, [&](Val p) {
    Pos q = split(p, channels, geo.in);
    Val gbase = plane_base(q, ys);
    std::vector<Val> lo, hi;
    for (int i = 0; i < r; ++i) {
      if (adaptive) {
        Val l = q.at[i] * geo.out[i] / geo.in[i];
        Val h = kb.min(geo.out[i], ((q.at[i] + 1.0) * geo.out[i] + geo.in[i] - 1.0) / geo.in[i]);
        lo.push_back(l);
        hi.push_back(kb.max(l, h));
      } else {
        Val span = max ? (geo.k[i] - 1.0) * geo.d[i] + 1.0 : geo.k[i];
        auto [l, h] = outputs_holding(kb, q.at[i], geo.s[i], geo.p[i], span, geo.out[i]);
        lo.push_back(l);
        hi.push_back(h);
      }
    }
    acc.set(kb.lit(ct, 0));
    Val me = flat(q.at, geo.in);
    Val xbase = max ? plane_base(q, xs) : Val();
    nest(kb, lo, hi, [&](const std::vector<Val>& o) {
      if (max) {
        // the input must be one of the window's taps (dilation), and its maximum
        Val on_tap;
        for (int i = 0; i < r; ++i) {
          Val c = (q.at[i] + geo.p[i] - o[i] * geo.s[i]) % geo.d[i] == 0.0;
          on_tap = on_tap.valid() ? (on_tap && c) : c;
        }
        kb.if_(on_tap, [&] {
          window_max(kb, geo, x, xbase, xs, o, best, &at);
          kb.if_(at.get() == me,
                 [&] { acc.set(acc.get() + load_as(kb, gy, gbase + spatial_offset(o, ys), ct)); });
        });
        return;
      }
      std::vector<AvgSpan> sp;
      Val inside;
      for (int i = 0; i < r; ++i) {
        sp.push_back(avg ? avg_span(kb, geo, i, o[i], s.count_include_pad)
                         : adaptive_span(o[i], geo.in[i], geo.out[i]));
        Val c = q.at[i] >= sp[i].lo && q.at[i] < sp[i].hi;
        inside = inside.valid() ? (inside && c) : c;
      }
      kb.if_(inside, [&] {
        Val v = load_as(kb, gy, gbase + spatial_offset(o, ys), ct) / divisor(kb, sp, ct);
        acc.set(acc.get() + v);
      });
    });
    kb.store(out, p, kb.cast(acc.get(), t));
  });
  return kb.finish();
}

Kernel unfold_kernel(const UnfoldSpec& s) {
  const char* op = s.fold ? "fold" : "unfold";
  check(op, s.dtype, s.rank);
  const int r = s.rank;
  ScalarType t = scalar_of(s.dtype), ct = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(detail::kname(op, s.dtype, s.wide_index, "_r" + std::to_string(r)),
                   {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val n = kb.scalar("n", ix), channels = kb.scalar("channels", ix);
  Geometry geo = geometry(kb, r, ix, true);
  std::vector<Val> xs = detail::scalars(kb, "x_stride", s.fold ? 3 : r + 2, ix);
  std::vector<Val> os;
  if (!s.fold) os = detail::scalars(kb, "out_stride", 3, ix);
  Val taps = product(geo.k);
  if (!s.fold) {
    detail::grid_loop(kb, n, [&](Val p) {
      // p = ((n * C + c) * K + tap) * L + l: coordinates in [N, C, *kernel, *out]
      std::vector<Val> sizes = geo.k;
      sizes.insert(sizes.end(), geo.out.begin(), geo.out.end());
      Pos q = split(p, channels, sizes);
      std::vector<Val> kk(q.at.begin(), q.at.begin() + r), o(q.at.begin() + r, q.at.end());
      std::vector<Val> pos;
      Val inside;
      for (int i = 0; i < r; ++i) {
        pos.push_back(o[i] * geo.s[i] - geo.p[i] + kk[i] * geo.d[i]);
        Val c = pos[i] >= 0.0 && pos[i] < geo.in[i];
        inside = inside.valid() ? (inside && c) : c;
      }
      Val row = q.c * taps + flat(kk, geo.k);
      Val dst = q.n * os[0] + row * os[1] + flat(o, geo.out) * os[2];
      kb.if_else(
          inside,
          [&] { kb.store(out, dst, kb.load(x, plane_base(q, xs) + spatial_offset(pos, xs))); },
          [&] { kb.store(out, dst, kb.lit(t, 0)); });
    });
    return kb.finish();
  }
  Var acc = kb.var("acc", ct);
  detail::grid_loop(kb, n, [&](Val p) {
    Pos q = split(p, channels, geo.in);
    Val base = q.n * xs[0] + q.c * taps * xs[1];
    acc.set(kb.lit(ct, 0));
    std::vector<Val> zeros(r, kb.lit(ix, 0));
    nest(kb, zeros, geo.k, [&](const std::vector<Val>& kk) {
      Val valid;
      std::vector<Val> o;
      for (int i = 0; i < r; ++i) {
        Val u = q.at[i] + geo.p[i] - kk[i] * geo.d[i];  // = o * stride for the window o
        Val oi = u / geo.s[i];
        Val c = u >= 0.0 && u % geo.s[i] == 0.0 && oi < geo.out[i];
        valid = valid.valid() ? (valid && c) : c;
        o.push_back(oi);
      }
      kb.if_(valid, [&] {
        Val src = base + flat(kk, geo.k) * xs[1] + flat(o, geo.out) * xs[2];
        acc.set(acc.get() + load_as(kb, x, src, ct));
      });
    });
    kb.store(out, p, kb.cast(acc.get(), t));
  });
  return kb.finish();
}

Kernel conv_direct_kernel(const ConvSpec& s) {
  check("conv", s.dtype, s.rank);
  const int r = s.rank;
  ScalarType t = scalar_of(s.dtype), ct = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(detail::kname("conv_direct", s.dtype, s.wide_index, "_r" + std::to_string(r)),
                   {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem w = kb.buffer("w", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val n = kb.scalar("n", ix), c_in = kb.scalar("in_channels", ix);
  Val c_out = kb.scalar("out_channels", ix), groups = kb.scalar("groups", ix);
  Geometry geo = geometry(kb, r, ix, true);
  std::vector<Val> xs = detail::scalars(kb, "x_stride", r + 2, ix);
  std::vector<Val> ws = detail::scalars(kb, "w_stride", r + 2, ix);
  Var acc = kb.var("acc", ct);
  detail::grid_loop(kb, n, [&](Val p) {
    Pos q = split(p, c_out, geo.out);  // q.c: the output channel
    Val cg = c_in / groups, first = q.c / (c_out / groups) * cg;
    std::vector<Taps> tp;
    std::vector<Val> lo, hi;
    for (int i = 0; i < r; ++i) {
      tp.push_back(taps_of(kb, geo, i, q.at[i]));
      lo.push_back(tp[i].lo);
      hi.push_back(tp[i].hi);
    }
    acc.set(kb.lit(ct, 0));
    kb.for_(kb.lit(ix, 0), cg, kb.lit(ix, 1), [&](Val ci) {
      Val xb = q.n * xs[0] + (first + ci) * xs[1], wb = q.c * ws[0] + ci * ws[1];
      nest(kb, lo, hi, [&](const std::vector<Val>& kk) {
        std::vector<Val> pos;
        for (int i = 0; i < r; ++i) pos.push_back(tp[i].start + kk[i] * geo.d[i]);
        Val xv = load_as(kb, x, xb + spatial_offset(pos, xs), ct);
        Val wv = load_as(kb, w, wb + spatial_offset(kk, ws), ct);
        acc.set(acc.get() + wv * xv);
      });
    });
    kb.store(out, p, kb.cast(acc.get(), t));
  });
  return kb.finish();
}

}  // namespace ember::kernel
