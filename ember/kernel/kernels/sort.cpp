#include "ember/kernel/kernels/sort.h"

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {

// Whether (va, ia) comes before (vb, ib): by value (NaN last ascending, first descending),
// then by index, which makes the order total and the sort stable.
Val before(KernelBuilder& kb, bool desc, const Val& va, const Val& ia, const Val& vb,
           const Val& ib) {
  Val earlier = ia < ib;
  if (!is_float(va.type())) return (desc ? va > vb : va < vb) || (va == vb && earlier);
  Val an = kb.is_nan(va), bn = kb.is_nan(vb);
  Val less = desc ? !bn && (an || va > vb) : !an && (bn || va < vb);
  Val same = (an && bn) || va == vb;
  return less || (same && earlier);
}

}  // namespace

Kernel argsort_kernel(const ArgsortSpec& s) {
  if (s.dtype == DType::Bool) detail::unsupported("argsort", "no sort kernel for bool");
  if (s.workgroup < 32 || (s.workgroup & (s.workgroup - 1)) || s.workgroup > 1024)
    detail::unsupported("argsort", "workgroup must be a power of two from 32 to 1024");
  bool merge = s.stage == ArgsortSpec::Merge;
  ScalarType t = scalar_of(s.dtype), key_t = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(
      detail::kname("argsort", s.dtype, s.wide_index,
                    std::string(s.descending ? "_desc" : "_asc") + (merge ? "_merge" : "_block")),
      {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem src = merge ? kb.buffer("src", ScalarType::I64, Access::Read) : Mem{};
  Mem out = kb.buffer(merge ? "dst" : "out", ScalarType::I64, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
  Val si = kb.scalar("inner_stride", ix);
  auto key = [&](const Val& xb, const Val& e) { return kb.cast(kb.load(x, xb + e * sr), key_t); };

  if (merge) {
    Val width = kb.scalar("width", ix);
    Var lo = kb.var("lo", ix), hi = kb.var("hi", ix);
    detail::grid_loop(kb, outer * inner * size, [&](Val p) {
      Val row = p / size, pos = p % size;
      Val o = row / inner, j = row % inner;
      Val xb = o * so + j * si;
      auto at = [&](const Val& q) { return (o * size + q) * inner + j; };  // src/dst offset
      Val start = pos / (width * 2.0) * (width * 2.0);
      Val mid = kb.min(start + width, size), end = kb.min(start + width * 2.0, size);
      Val in_a = pos < mid;
      // The other run: [mid, end) for an element of the first, [start, mid) for the second.
      Val ostart = kb.select(in_a, mid, start), olen = kb.select(in_a, end - mid, mid - start);
      Val e = kb.cast(kb.load(src, at(pos)), ix);
      Val ve = key(xb, e);
      lo.set(kb.lit(ix, 0));
      hi.set(olen);
      // Elements of the other run that come before e (it is sorted): a binary search.
      kb.for_(0, kb.lit(ix, s.wide_index ? 64 : 32), 1, [&](Val) {
        kb.if_(lo.get() < hi.get(), [&] {
          Val m = (lo.get() + hi.get()) / 2.0;
          Val f = kb.cast(kb.load(src, at(ostart + m)), ix);
          kb.if_else(
              before(kb, s.descending, key(xb, f), f, ve, e), [&] { lo.set(m + 1.0); },
              [&] { hi.set(m); });
        });
      });
      Val mine = pos - kb.select(in_a, start, mid);  // e's place in its own run
      kb.store(out, at(start + mine + lo.get()), kb.cast(e, ScalarType::I64));
    });
    return kb.finish();
  }

  int wg = s.workgroup, tile = argsort_tile(s), log_tile = 0;
  while ((1 << log_tile) < tile) ++log_tile;
  Mem keys = kb.shared("keys", key_t, tile);
  Mem idxs = kb.shared("idxs", ix, tile);
  Val tid = kb.local_id(0);
  Val tiles_per_row = (size + double(tile - 1)) / double(tile);
  Val tiles = outer * inner * tiles_per_row;
  kb.for_(kb.cast(kb.group_id(0), ix), tiles, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    Val row = g / tiles_per_row, first = (g % tiles_per_row) * double(tile);
    Val o = row / inner, j = row % inner;
    Val xb = o * so + j * si;
    for (int h = 0; h < 2; ++h) {
      Val local = tid + double(h * wg);
      Val e = first + kb.cast(local, ix);
      kb.store(idxs, local, e);  // e >= size: padding, sorted after everything
      kb.store(keys, local, kb.lit(key_t, 0));
      kb.if_(e < size, [&] { kb.store(keys, local, key(xb, e)); });
    }
    // The bitonic network: stages k = 2, 4, .. tile, steps j = k/2 .. 1; one pair a thread.
    kb.for_(kb.lit(ScalarType::U32, 0), kb.lit(ScalarType::U32, log_tile),
            kb.lit(ScalarType::U32, 1), [&](Val kk) {
              Val k = kb.lit(ScalarType::U32, 2) << kk;
              kb.for_(kb.lit(ScalarType::U32, 0), kk + 1.0, kb.lit(ScalarType::U32, 1),
                      [&](Val jj) {
                        kb.barrier();
                        Val jmask = kb.lit(ScalarType::U32, 1) << (kk - jj);
                        Val i = (tid / jmask) * (jmask * 2.0) + tid % jmask, l = i + jmask;
                        Val up = (i & k) == 0.0;
                        Val va = kb.load(keys, i), ia = kb.load(idxs, i);
                        Val vb = kb.load(keys, l), ib = kb.load(idxs, l);
                        Val a_pad = ia >= size, b_pad = ib >= size;
                        Val a_first = !a_pad && (b_pad || before(kb, s.descending, va, ia, vb, ib));
                        Val b_first = !b_pad && (a_pad || before(kb, s.descending, vb, ib, va, ia));
                        kb.if_(kb.select(up, b_first, a_first), [&] {
                          kb.store(keys, i, vb);
                          kb.store(idxs, i, ib);
                          kb.store(keys, l, va);
                          kb.store(idxs, l, ia);
                        });
                      });
            });
    kb.barrier();
    for (int h = 0; h < 2; ++h) {
      Val local = tid + double(h * wg);
      Val e = first + kb.cast(local, ix);
      kb.if_(e < size, [&] {
        kb.store(out, (o * size + e) * inner + j, kb.cast(kb.load(idxs, local), ScalarType::I64));
      });
    }
    kb.barrier();  // the tile's shared memory is reused by the next tile
  });
  return kb.finish();
}

}  // namespace ember::kernel
