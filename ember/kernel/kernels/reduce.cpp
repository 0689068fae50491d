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

namespace {

// prod, argmax and argmin: a strided fold per thread, then a tree in shared memory (no
// subgroup operation multiplies, and the argument ops carry an index with the value).
Kernel tree_reduce_kernel(const ReduceSpec& s) {
  std::string op_name(name(s.op));
  if (s.dtype == DType::Bool) throw ValueError("[" + op_name + "] no reduction kernel for bool");
  if (s.workgroup & (s.workgroup - 1))
    throw ValueError("[" + op_name + "] workgroup must be a power of two");
  bool arg = s.op != OpCode::Prod, is_max = s.op == OpCode::ArgMax;
  ScalarType t = scalar_of(s.dtype);
  ScalarType acc_t = is_half(t) ? ScalarType::F32 : (!arg && is_int(t) ? ScalarType::I64 : t);
  ScalarType ix = s.wide_index ? ScalarType::I64 : ScalarType::I32;
  KernelBuilder kb(op_name + "_" + std::string(name(s.dtype)) + (s.wide_index ? "_i64" : ""),
                   {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem out = kb.buffer("out", arg ? ScalarType::I64 : t, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
  Val si = kb.scalar("inner_stride", ix);
  Mem vals = kb.shared("vals", acc_t, s.workgroup);
  Mem idxs = arg ? kb.shared("idxs", ScalarType::I64, s.workgroup) : Mem{};
  Var acc = kb.var("acc", acc_t);
  Var at = kb.var("at", ScalarType::I64);
  auto ident = [&] {
    if (!arg) return kb.lit(acc_t, 1);
    if (acc_t == ScalarType::I64)
      return kb.lit_int(acc_t, is_max ? std::numeric_limits<int64_t>::min()
                                      : std::numeric_limits<int64_t>::max());
    return kb.lit(acc_t, identity(is_max ? OpCode::Max : OpCode::Min, acc_t));
  };
  // (acc, at) <- combine((acc, at), (v, k)) with the CPU's rule: the first extreme; NaN is
  // the extreme, the first NaN wins.
  auto combine = [&](const Val& v, const Val& k) {
    if (!arg) {
      acc.set(acc.get() * v);
      return;
    }
    Val a = acc.get(), ai = at.get();
    Val earlier = k < ai;
    Val take = (is_max ? v > a : v < a) || (v == a && earlier);
    if (is_float(acc_t)) {
      Val an = kb.is_nan(a), bn = kb.is_nan(v);
      take = (an && bn && earlier) || (!an && (bn || take));
    }
    acc.set(kb.select(take, v, a));
    at.set(kb.select(take, k, ai));
  };
  Val tid = kb.local_id(0);
  Val tid_ix = kb.cast(tid, ix);
  kb.for_(kb.cast(kb.group_id(0), ix), outer * inner, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    Val base = (g / inner) * so + (g % inner) * si;
    acc.set(ident());
    at.set(kb.lit_int(ScalarType::I64, std::numeric_limits<int64_t>::max()));
    kb.for_(tid_ix, size, kb.cast(kb.local_size(0), ix), [&](Val r) {
      combine(kb.cast(kb.load(x, base + r * sr), acc_t), kb.cast(r, ScalarType::I64));
    });
    kb.store(vals, tid, acc.get());
    if (arg) kb.store(idxs, tid, at.get());
    kb.barrier();
    for (int half = s.workgroup / 2; half >= 1; half /= 2) {
      kb.if_(tid < double(half), [&] {
        Val other = tid + double(half);
        acc.set(kb.load(vals, tid));
        if (arg) at.set(kb.load(idxs, tid));
        combine(kb.load(vals, other), arg ? kb.load(idxs, other) : Val());
        kb.store(vals, tid, acc.get());
        if (arg) kb.store(idxs, tid, at.get());
      });
      kb.barrier();
    }
    kb.if_(tid == 0.0,
           [&] { kb.store(out, g, arg ? kb.load(idxs, tid) : kb.cast(kb.load(vals, tid), t)); });
    kb.barrier();  // `vals` is reused by the next output
  });
  return kb.finish();
}

}  // namespace

ScalarType reduce_accumulator(OpCode op, DType dtype) {
  ScalarType t = scalar_of(dtype);
  bool arg = op == OpCode::ArgMax || op == OpCode::ArgMin;
  bool ext = op == OpCode::Max || op == OpCode::Min;
  if (is_half(t)) return ScalarType::F32;
  if (t == ScalarType::Bool && ext) return ScalarType::U8;
  if (is_int(t) && !arg && !ext) return ScalarType::I64;
  return t;
}

int reduce_vector_width(DType dtype) {
  const int bytes = size_of(dtype);  // 16-byte loads; bytes and bools load one at a time
  return bytes > 1 ? 16 / bytes : 1;
}

namespace {

// The two passes of a split reduction (reduce.h): a fold per thread over its part of a chunk
// (16-byte loads on dense rows), then a shared-memory tree across the workgroup.
Kernel split_reduce_kernel(const ReduceSpec& s) {
  std::string op_name(name(s.op));
  bool arg = s.op == OpCode::ArgMax || s.op == OpCode::ArgMin;
  bool ext = s.op == OpCode::Max || s.op == OpCode::Min;
  if (s.dtype == DType::Bool && !ext)
    throw ValueError("[" + op_name + "] no reduction kernel for bool");
  if (s.workgroup & (s.workgroup - 1))
    throw ValueError("[" + op_name + "] workgroup must be a power of two");
  bool partial_stage = s.stage == ReduceSpec::Partial;
  int w = partial_stage && s.vector ? reduce_vector_width(s.dtype) : 1;
  if (partial_stage && s.vector && w == 1)
    throw ValueError("[" + op_name + "] no vector path for " + std::string(name(s.dtype)));
  bool is_max = s.op == OpCode::ArgMax || s.op == OpCode::Max;
  ScalarType t = scalar_of(s.dtype);
  ScalarType acc_t = reduce_accumulator(s.op, s.dtype);
  ScalarType ix = s.wide_index ? ScalarType::I64 : ScalarType::I32;
  std::string kname = op_name + "_" + std::string(name(s.dtype)) +
                      (partial_stage ? (w > 1 ? "_partial_vec" : "_partial") : "_finish") +
                      (s.wide_index ? "_i64" : "");
  KernelBuilder kb(kname, {s.workgroup, 1, 1});
  Mem x, partial, partial_index, out;
  if (partial_stage) x = kb.buffer("x", t, Access::Read, w);
  partial = kb.buffer("partial", acc_t, partial_stage ? Access::Write : Access::Read);
  if (arg)
    partial_index =
        kb.buffer("partial_index", ScalarType::I64, partial_stage ? Access::Write : Access::Read);
  if (!partial_stage) out = kb.buffer("out", arg ? ScalarType::I64 : t, Access::Write);
  Val outer, size, inner, so, sr, si, chunk, splits, outputs;
  if (partial_stage) {
    outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
    so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
    si = kb.scalar("inner_stride", ix), chunk = kb.scalar("chunk", ix);
    splits = kb.scalar("splits", ix);
  } else {
    outputs = kb.scalar("outputs", ix), splits = kb.scalar("splits", ix);
  }
  Mem vals = kb.shared("vals", acc_t, s.workgroup);
  Mem idxs = arg ? kb.shared("idxs", ScalarType::I64, s.workgroup) : Mem{};
  Var acc = kb.var("acc", acc_t);
  Var at = kb.var("at", ScalarType::I64);
  auto ident = [&] {
    if (s.op == OpCode::Sum) return kb.lit(acc_t, 0);
    if (s.op == OpCode::Prod) return kb.lit(acc_t, 1);
    if (acc_t == ScalarType::I64)
      return kb.lit_int(acc_t, is_max ? std::numeric_limits<int64_t>::min()
                                      : std::numeric_limits<int64_t>::max());
    return kb.lit(acc_t, identity(is_max ? OpCode::Max : OpCode::Min, acc_t));
  };
  // (acc, at) <- combine((acc, at), (v, k)); argmax/argmin: the first extreme, NaN being the
  // extreme (the first NaN wins), decided by the indices so chunk order does not matter.
  auto combine = [&](const Val& v, const Val& k) {
    Val a = acc.get();
    if (s.op == OpCode::Sum) return acc.set(a + v);
    if (s.op == OpCode::Prod) return acc.set(a * v);
    if (ext) return acc.set(is_max ? kb.max(a, v) : kb.min(a, v));
    Val ai = at.get();
    Val earlier = k < ai;
    Val take = (is_max ? v > a : v < a) || (v == a && earlier);
    if (is_float(acc_t)) {
      Val an = kb.is_nan(a), bn = kb.is_nan(v);
      take = (an && bn && earlier) || (!an && (bn || take));
    }
    acc.set(kb.select(take, v, a));
    at.set(kb.select(take, k, ai));
  };
  Val tid = kb.local_id(0);
  Val tid_ix = kb.cast(tid, ix);
  Val step = kb.cast(kb.local_size(0), ix);
  Val items = partial_stage ? outer * inner * splits : outputs;
  kb.for_(kb.cast(kb.group_id(0), ix), items, kb.cast(kb.num_groups(0), ix), [&](Val g) {
    acc.set(ident());
    at.set(kb.lit_int(ScalarType::I64, std::numeric_limits<int64_t>::max()));
    if (partial_stage) {
      Val o = g / splits;
      Val lo = (g % splits) * chunk;
      Val hi = kb.min(lo + chunk, size);
      Val base = (o / inner) * so + (o % inner) * si;
      auto scalar_fold = [&](const Val& from) {
        kb.for_(from + tid_ix, hi, step, [&](Val r) {
          combine(kb.cast(kb.load(x, base + r * sr), acc_t), kb.cast(r, ScalarType::I64));
        });
      };
      if (w > 1) {
        // Two vectors a thread per iteration, so two loads are in flight.
        Val end = lo + ((hi - lo) / double(w)) * double(w);
        Val stride = step * double(w);
        auto fold = [&](const Val& v, const Val& r) {
          for (int j = 0; j < w; ++j)
            combine(kb.cast(kb.extract(v, j), acc_t), kb.cast(r + double(j), ScalarType::I64));
        };
        kb.for_(lo + tid_ix * double(w), end, stride * 2.0, [&](Val r) {
          Val v = kb.load(x, base + r, w);
          Val r2 = r + stride;
          kb.if_else(
              r2 < end,
              [&] {
                Val v2 = kb.load(x, base + r2, w);
                fold(v, r);
                fold(v2, r2);
              },
              [&] { fold(v, r); });
        });
        scalar_fold(end);
      } else {
        scalar_fold(lo);
      }
    } else {
      kb.for_(tid_ix, splits, step, [&](Val k) {
        Val at_k = g * splits + k;
        combine(kb.load(partial, at_k), arg ? kb.load(partial_index, at_k) : Val());
      });
    }
    kb.store(vals, tid, acc.get());
    if (arg) kb.store(idxs, tid, at.get());
    kb.barrier();
    for (int half = s.workgroup / 2; half >= 1; half /= 2) {
      kb.if_(tid < double(half), [&] {
        Val other = tid + double(half);
        acc.set(kb.load(vals, tid));
        if (arg) at.set(kb.load(idxs, tid));
        combine(kb.load(vals, other), arg ? kb.load(idxs, other) : Val());
        kb.store(vals, tid, acc.get());
        if (arg) kb.store(idxs, tid, at.get());
      });
      kb.barrier();
    }
    kb.if_(tid == 0.0, [&] {
      if (partial_stage) {
        kb.store(partial, g, kb.load(vals, tid));
        if (arg) kb.store(partial_index, g, kb.load(idxs, tid));
      } else {
        kb.store(out, g, arg ? kb.load(idxs, tid) : kb.cast(kb.load(vals, tid), t));
      }
    });
    kb.barrier();  // `vals` is reused by the next item
  });
  return kb.finish();
}

}  // namespace

Kernel reduce_kernel(const ReduceSpec& s) {
  std::string op_name(name(s.op));
  if (s.workgroup < 32 || s.workgroup % 32 || s.workgroup > 1024)
    throw ValueError("[" + op_name + "] workgroup must be a multiple of 32 up to 1024");
  if (s.stage != ReduceSpec::Whole) {
    if (s.op != OpCode::Sum && s.op != OpCode::Prod && s.op != OpCode::Max && s.op != OpCode::Min &&
        s.op != OpCode::ArgMax && s.op != OpCode::ArgMin)
      throw ValueError("[" + op_name +
                       "] no reduction kernel (sum, prod, max, min, argmax and argmin have one)");
    return split_reduce_kernel(s);
  }
  if (s.op == OpCode::Prod || s.op == OpCode::ArgMax || s.op == OpCode::ArgMin)
    return tree_reduce_kernel(s);
  if (s.op != OpCode::Sum && s.op != OpCode::Max && s.op != OpCode::Min)
    throw ValueError("[" + op_name +
                     "] no reduction kernel (sum, prod, max, min, argmax and argmin have one)");
  if (s.dtype == DType::Bool && s.op == OpCode::Sum)
    throw ValueError("[sum] no reduction kernel for bool");
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
