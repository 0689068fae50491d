#include "ember/kernel/kernels/reduce.h"

#include <cmath>
#include <limits>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"

namespace ember::kernel {

namespace {

double identity(OpCode op, ScalarType acc) {
  if (op == OpCode::Sum) return 0;
  bool max = op == OpCode::Max;
  if (is_float(acc)) return max ? -INFINITY : INFINITY;
  switch (acc) {
    case ScalarType::I8:
      return max ? -128 : 127;
    case ScalarType::U8:
      return max ? 0 : 255;
    case ScalarType::I16:
      return max ? -32768 : 32767;
    case ScalarType::I32:
      return max ? -2147483648.0 : 2147483647.0;
    case ScalarType::Bool:
      return max ? 0 : 1;
    default:
      return 0;  // i64: lit_int below
  }
}

}  // namespace

Kernel reduce_kernel(const ReduceSpec& s) {
  std::string op_name(name(s.op));
  if (s.op != OpCode::Sum && s.op != OpCode::Max && s.op != OpCode::Min)
    throw ValueError("[" + op_name + "] no reduction kernel (sum, max and min have one)");
  if (s.dtype == DType::Bool && s.op == OpCode::Sum)
    throw ValueError("[sum] no reduction kernel for bool");
  if (s.workgroup < 32 || s.workgroup % 32 || s.workgroup > 1024)
    throw ValueError("[" + op_name + "] workgroup must be a multiple of 32 up to 1024");
  ScalarType t = scalar_of(s.dtype);
  ScalarType acc_t =
      is_half(t) ? ScalarType::F32 : (s.op == OpCode::Sum && is_int(t) ? ScalarType::I64 : t);
  if (acc_t == ScalarType::Bool) acc_t = ScalarType::U8;  // subgroup max/min of bools as 0/1
  ScalarType ix = s.wide_index ? ScalarType::I64 : ScalarType::I32;
  KernelBuilder kb(op_name + "_" + std::string(name(s.dtype)) + (s.wide_index ? "_i64" : ""),
                   {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
  Val si = kb.scalar("inner_stride", ix);
  // One partial result per subgroup; subgroups have at least 8 lanes on every target.
  Mem partial = kb.shared("partial", acc_t, s.workgroup / 8);
  auto combine = [&](const Val& a, const Val& b) {
    return s.op == OpCode::Sum ? a + b : s.op == OpCode::Max ? kb.max(a, b) : kb.min(a, b);
  };
  auto subgroup = [&](const Val& v) {
    return s.op == OpCode::Sum   ? kb.subgroup_add(v)
           : s.op == OpCode::Max ? kb.subgroup_max(v)
                                 : kb.subgroup_min(v);
  };
  auto ident = [&] {
    if (acc_t == ScalarType::I64 && s.op != OpCode::Sum)
      return kb.lit_int(acc_t, s.op == OpCode::Max ? std::numeric_limits<int64_t>::min()
                                                   : std::numeric_limits<int64_t>::max());
    return kb.lit(acc_t, identity(s.op, acc_t));
  };

  Val tid = kb.local_id(0), lane = kb.subgroup_lane(), sg = kb.subgroup_size();
  Val warp = tid / sg, warps = kb.local_size(0) / sg;
  Var acc = kb.var("acc", acc_t);
  Val outputs = outer * inner;
  kb.for_(kb.cast(kb.group_id(0), ix), outputs, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    Val base = (g / inner) * so + (g % inner) * si;
    acc.set(ident());
    kb.for_(kb.cast(tid, ix), size, kb.cast(kb.local_size(0), ix),
            [&](Val r) { acc.set(combine(acc.get(), kb.cast(kb.load(x, base + r * sr), acc_t))); });
    Val mine = subgroup(acc.get());
    kb.if_(lane == 0, [&] { kb.store(partial, warp, mine); });
    kb.barrier();
    kb.if_(warp == 0, [&] {
      acc.set(ident());
      kb.for_(lane, warps, sg, [&](Val k) { acc.set(combine(acc.get(), kb.load(partial, k))); });
      Val total = subgroup(acc.get());
      kb.if_(lane == 0, [&] { kb.store(out, g, kb.cast(total, t)); });
    });
    kb.barrier();  // `partial` is reused by the next output
  });
  return kb.finish();
}

}  // namespace ember::kernel
