#include "ember/kernel/kernels/scan.h"

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

Kernel scan_kernel(const ScanSpec& s) {
  std::string op_name(name(s.op));
  if (info(s.op).family != OpFamily::Scan) detail::unsupported(op_name, "not a scan");
  if (s.dtype == DType::Bool) detail::unsupported(op_name, "no scan kernel for bool");
  bool group = s.layout == ScanSpec::GroupPerRow;
  if (group && (s.workgroup < 32 || (s.workgroup & (s.workgroup - 1)) || s.workgroup > 1024))
    detail::unsupported(op_name, "workgroup must be a power of two from 32 to 1024");
  ScalarType t = scalar_of(s.dtype), acc_t = detail::compute_type(t);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(detail::kname(op_name, s.dtype, s.wide_index, group ? "_group" : "_thread"),
                   {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
  Val si = kb.scalar("inner_stride", ix);
  auto f = [&](const Val& a, const Val& b) {
    switch (s.op) {
      case OpCode::CumSum:
        return a + b;
      case OpCode::CumProd:
        return a * b;
      case OpCode::CumMax:
        return kb.max(a, b);
      default:
        return kb.min(a, b);
    }
  };
  auto load = [&](const Val& base, const Val& k) {
    return kb.cast(kb.load(x, base + k * sr), acc_t);
  };
  Val rows = outer * inner;
  if (!group) {
    Var acc = kb.var("acc", acc_t);
    detail::grid_loop(kb, rows, [&](Val r) {
      Val o = r / inner, j = r % inner;
      Val xb = o * so + j * si, ob = o * size * inner + j;
      kb.for_(0, size, 1, [&](Val k) {
        Val v = load(xb, k);
        // The first element as it is: a sum starting from 0 would turn -0 into +0.
        acc.set(kb.select(k == 0.0, v, f(acc.get(), v)));
        kb.store(out, ob + k * inner, kb.cast(acc.get(), t));
      });
    });
    return kb.finish();
  }
  int wg = s.workgroup;
  Mem part = kb.shared("part", acc_t, wg);
  Var carry = kb.var("carry", acc_t);
  Var mine = kb.var("mine", acc_t);
  Val tid = kb.local_id(0), tid_ix = kb.cast(tid, ix);
  kb.for_(kb.cast(kb.group_id(0), ix), rows, kb.cast(kb.num_groups(0), ix), [&](Val r) {
    Val o = r / inner, j = r % inner;
    Val xb = o * so + j * si, ob = o * size * inner + j;
    kb.for_(kb.lit(ix, 0), size, kb.lit(ix, wg), [&](Val c) {
      Val k = c + tid_ix;
      mine.set(kb.lit(acc_t, 0));
      kb.if_(k < size, [&] { mine.set(load(xb, k)); });
      kb.store(part, tid, mine.get());
      for (int off = 1; off < wg; off *= 2) {
        kb.barrier();
        Val has = tid >= double(off);
        Val other = kb.load(part, kb.select(has, tid - double(off), tid));
        kb.barrier();
        mine.set(kb.select(has, f(other, mine.get()), mine.get()));
        kb.store(part, tid, mine.get());
      }
      kb.barrier();
      Val first = c == 0.0;
      kb.if_(k < size, [&] {
        kb.store(out, ob + k * inner,
                 kb.cast(kb.select(first, mine.get(), f(carry.get(), mine.get())), t));
      });
      // The chunk's last element carries into the next chunk.
      Val last = kb.cast(kb.min(size - c, kb.lit(ix, wg)) - 1.0, ScalarType::U32);
      Val total = kb.load(part, last);
      carry.set(kb.select(first, total, f(carry.get(), total)));
      kb.barrier();  // `part` is rewritten by the next chunk
    });
  });
  return kb.finish();
}

}  // namespace ember::kernel
