#include "ember/kernel/kernels/interpolate.h"

#include <functional>

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {

// The input positions output o reads along one dim, and their weights (compute type).
struct DimTaps {
  std::vector<Val> at, w;
};

DimTaps dim_taps(KernelBuilder& kb, const InterpolateSpec& s, const Val& o, const Val& in,
                 const Val& out, ScalarType ct) {
  ScalarType ix = o.type().scalar;
  DimTaps t;
  Val last = in - 1.0;
  if (s.mode == InterpMode::Nearest || s.mode == InterpMode::NearestExact) {
    // floor(o * in / out), or floor((o + 0.5) * in / out), with the scale in f32, as PyTorch
    Val scale = kb.cast(in, ScalarType::F32) / kb.cast(out, ScalarType::F32);
    Val fo = kb.cast(o, ScalarType::F32);
    if (s.mode == InterpMode::NearestExact) fo = fo + 0.5;
    Val i = kb.cast(kb.floor(fo * scale), ix);
    t.at.push_back(kb.min(i, last));
    t.w.push_back(kb.lit(ct, 1));
    return t;
  }
  bool cubic = s.mode == InterpMode::Cubic;
  Val fo = kb.cast(o, ct), zero = kb.lit(ct, 0), one = kb.lit(ct, 1);
  Val src;
  if (s.align_corners) {
    Val scale = kb.select(out > 1.0, kb.cast(in - 1.0, ct) / kb.cast(out - 1.0, ct), zero);
    src = scale * fo;
  } else {
    Val scale = kb.cast(in, ct) / kb.cast(out, ct);
    src = scale * (fo + 0.5) - 0.5;
    if (!cubic) src = kb.select(src < 0.0, zero, src);
  }
  if (!cubic) {
    Val i0 = kb.min(kb.cast(src, ix), last);
    Val l1 = kb.min(kb.max(src - kb.cast(i0, ct), zero), one);
    Val i1 = i0 + kb.select(i0 < last, kb.lit(ix, 1), kb.lit(ix, 0));
    Val same = in == out;  // the CPU copies
    t.at = {kb.select(same, o, i0), kb.select(same, o, i1)};
    t.w = {kb.select(same, one, one - l1), kb.select(same, zero, l1)};
    return t;
  }
  Val fl = kb.floor(src);
  Val i = kb.cast(fl, ix), x = src - fl;
  // Keys' kernel, A = -0.75: near(x) for |x| <= 1, far(x) for 1 < |x| < 2
  auto near = [&](const Val& v) { return ((v * 1.25) - 2.25) * v * v + 1.0; };
  auto far = [&](const Val& v) { return ((v * -0.75 - -3.75) * v + -6.0) * v - -3.0; };
  t.w = {far(x + 1.0), near(x), near(one - x), far(2.0 - x)};
  for (int k = 0; k < 4; ++k)
    t.at.push_back(kb.min(kb.max(i + double(k - 1), kb.lit(ix, 0)), last));
  return t;
}

}  // namespace

DType interpolate_accumulator(DType t) {
  return t == DType::F16 || t == DType::BF16 ? DType::F32 : t;
}

Kernel interpolate_kernel(const InterpolateSpec& s) {
  const char* op = s.backward ? "interpolate_backward" : "interpolate";
  if (!is_float(s.dtype))
    detail::unsupported(op, "needs a float dtype, not " + std::string(name(s.dtype)));
  if (s.rank < 1 || s.rank > 3) detail::unsupported(op, "rank must be 1 to 3 spatial dims");
  const int r = s.rank;
  ScalarType t = scalar_of(s.dtype), ct = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  const char* mode = s.mode == InterpMode::Nearest        ? "_nearest"
                     : s.mode == InterpMode::NearestExact ? "_nearest_exact"
                     : s.mode == InterpMode::Linear       ? "_linear"
                                                          : "_cubic";
  std::string extra =
      mode + std::string(s.align_corners ? "_align" : "") + "_r" + std::to_string(r);
  KernelBuilder kb(detail::kname(op, s.dtype, s.wide_index, extra), {s.workgroup, 1, 1});
  Mem x = kb.buffer(s.backward ? "g" : "x", t, Access::Read);
  Mem out = s.backward
                ? kb.buffer("out", scalar_of(interpolate_accumulator(s.dtype)), Access::ReadWrite)
                : kb.buffer("out", t, Access::Write);
  Val n = kb.scalar("n", ix), channels = kb.scalar("channels", ix);
  std::vector<Val> in = detail::scalars(kb, "in", r, ix);
  std::vector<Val> os = detail::scalars(kb, "out", r, ix);
  std::vector<Val> xs = detail::scalars(kb, s.backward ? "g_stride" : "x_stride", r + 2, ix);
  Var acc = kb.var("acc", ct), inner = kb.var("inner", ct);
  detail::grid_loop(kb, n, [&](Val p) {
    std::vector<Val> shape{channels, channels};
    shape.insert(shape.end(), os.begin(), os.end());
    std::vector<Val> c = detail::coords(p, shape);
    std::vector<DimTaps> taps;
    for (int i = 0; i < r; ++i) taps.push_back(dim_taps(kb, s, c[2 + i], in[i], os[i], ct));
    // every combination of the leading dims' taps: f(weight (invalid for rank 1), positions)
    std::vector<Val> at(r);
    std::function<void(int, Val, const std::function<void(const Val&)>&)> lead =
        [&](int d, Val w, const std::function<void(const Val&)>& f) {
          if (d == r - 1) return f(w);
          for (size_t k = 0; k < taps[d].at.size(); ++k) {
            at[d] = taps[d].at[k];
            lead(d + 1, w.valid() ? w * taps[d].w[k] : taps[d].w[k], f);
          }
        };
    const DimTaps& tl = taps[r - 1];
    if (!s.backward) {
      Val base = c[0] * xs[0] + c[1] * xs[1];
      acc.set(kb.lit(ct, 0));
      for (size_t k = 0; k < tl.at.size(); ++k) {
        at[r - 1] = tl.at[k];
        inner.set(kb.lit(ct, 0));
        lead(0, Val(), [&](const Val& w) {
          Val off = base;
          for (int i = 0; i < r; ++i) off = off + at[i] * xs[i + 2];
          Val v = kb.load(x, off);
          if (v.type().scalar != ct) v = kb.cast(v, ct);
          inner.set(inner.get() + (w.valid() ? w * v : v));
        });
        acc.set(acc.get() + tl.w[k] * inner.get());
      }
      kb.store(out, p, kb.cast(acc.get(), t));
      return;
    }
    Val gv = kb.load(x, c[0] * xs[0] + c[1] * xs[1] +
                            detail::offset(std::vector<Val>(c.begin() + 2, c.end()),
                                           std::vector<Val>(xs.begin() + 2, xs.end())));
    if (gv.type().scalar != ct) gv = kb.cast(gv, ct);
    Val plane = c[0] * channels + c[1];
    for (size_t k = 0; k < tl.at.size(); ++k) {
      at[r - 1] = tl.at[k];
      Val wg = tl.w[k] * gv;
      lead(0, Val(), [&](const Val& w) {
        Val off = plane;
        for (int i = 0; i < r; ++i) off = off * in[i] + at[i];
        Val v = w.valid() ? w * wg : wg;
        kb.atomic_add(out, off, v.type() == out.type ? v : kb.cast(v, out.type));
      });
    }
  });
  return kb.finish();
}

}  // namespace ember::kernel
