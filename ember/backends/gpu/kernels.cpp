#include "ember/backends/gpu/kernels.h"

#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"

namespace ember::gpu::kernels {

using namespace ember::kernel;
using kernel::ScalarType;

namespace {

// The value range of an integer type, as the float type converting into it sees it.
void int_range(ScalarType t, double& lo, double& hi) {
  switch (t) {
    case ScalarType::I8:
      lo = -128, hi = 127;
      break;
    case ScalarType::U8:
      lo = 0, hi = 255;
      break;
    case ScalarType::I16:
      lo = -32768, hi = 32767;
      break;
    case ScalarType::I32:
      lo = -2147483648.0, hi = 2147483647.0;
      break;
    case ScalarType::U32:
      lo = 0, hi = 4294967295.0;
      break;
    default:
      lo = -9223372036854775808.0, hi = 9223372036854775807.0;
  }
}

}  // namespace

Kernel seq_reduce_kernel(OpCode op, DType dtype) {
  bool arg = op == OpCode::ArgMax || op == OpCode::ArgMin;
  bool ext = op == OpCode::Max || op == OpCode::Min;
  if (!arg && !ext && op != OpCode::Sum && op != OpCode::Prod)
    throw ValueError("[" + std::string(name(op)) + "] no sequential reduction kernel");
  ScalarType t = scalar_of(dtype);
  if (t == ScalarType::Bool && !ext)
    throw ValueError("[" + std::string(name(op)) + "] no reduction kernel for bool");
  // Accumulators: float sums in f64, halves otherwise in f32, integer sums and products in
  // i64 (they wrap alike), bools as u8.
  ScalarType acc = t;
  if (is_float(t) && op == OpCode::Sum)
    acc = ScalarType::F64;
  else if (is_half(t))
    acc = ScalarType::F32;
  else if (is_int(t) && !ext && !arg)
    acc = ScalarType::I64;
  else if (t == ScalarType::Bool)
    acc = ScalarType::U8;
  ScalarType ot = arg ? ScalarType::I64 : t;
  ScalarType ix = ScalarType::I64;
  KernelBuilder kb(std::string(name(op)) + "_seq_" + std::string(name(dtype)), {128, 1, 1});
  Mem x = kb.buffer("x", t, Access::Read);
  Mem out = kb.buffer("out", ot, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val so = kb.scalar("outer_stride", ix), sr = kb.scalar("size_stride", ix);
  Val si = kb.scalar("inner_stride", ix);
  Var best = kb.var("best", acc);
  Var idx = kb.var("idx", ix);
  Val first = kb.cast(kb.global_id(0), ix);
  Val step = kb.cast(kb.num_groups(0), ix) * kb.cast(kb.local_size(0), ix);
  auto identity = [&]() -> Val {
    if (op == OpCode::Sum) return kb.lit(acc, 0);
    if (op == OpCode::Prod) return kb.lit(acc, 1);
    bool max = op == OpCode::Max;
    if (is_float(acc)) return kb.lit(acc, max ? -INFINITY : INFINITY);
    if (acc == ScalarType::U8 && t == ScalarType::Bool) return kb.lit(acc, max ? 0 : 1);
    double lo = 0, hi = 0;
    int_range(acc, lo, hi);
    if (acc == ScalarType::I64)
      return kb.lit_int(
          acc, max ? std::numeric_limits<int64_t>::min() : std::numeric_limits<int64_t>::max());
    return kb.lit(acc, max ? lo : hi);
  };
  kb.for_(first, outer * inner, step, [&](Val g) {
    Val base = (g / inner) * so + (g % inner) * si;
    if (!arg) {
      best.set(identity());
      kb.for_(kb.lit(ix, 0), size, kb.lit(ix, 1), [&](Val r) {
        Val v = kb.cast(kb.load(x, base + r * sr), acc);
        Val b = best.get();
        best.set(op == OpCode::Sum    ? b + v
                 : op == OpCode::Prod ? b * v
                 : op == OpCode::Max  ? kb.max(b, v)
                                      : kb.min(b, v));
      });
      kb.store(out, g, kb.cast(best.get(), t));
      return;
    }
    idx.set(kb.lit(ix, 0));
    kb.if_(size > kb.lit(ix, 0), [&] {
      best.set(kb.cast(kb.load(x, base), acc));
      kb.for_(kb.lit(ix, 1), size, kb.lit(ix, 1), [&](Val r) {
        Val v = kb.cast(kb.load(x, base + r * sr), acc);
        // The first extreme wins; NaN counts as the extreme (the first NaN), like PyTorch.
        Val better = op == OpCode::ArgMax ? v > best.get() : v < best.get();
        if (is_float(acc)) better = (better || kb.is_nan(v)) && !kb.is_nan(best.get());
        kb.if_(better, [&] {
          best.set(v);
          idx.set(r);
        });
      });
    });
    kb.store(out, g, idx.get());
  });
  return kb.finish();
}

Kernel naive_matmul_kernel(DType dtype) {
  ScalarType t = scalar_of(dtype);
  ScalarType acc = is_int(t) ? ScalarType::I64 : (is_half(t) ? ScalarType::F32 : t);
  ScalarType ix = ScalarType::I64;
  KernelBuilder kb("matmul_naive_" + std::string(name(dtype)), {256, 1, 1});
  Mem a = kb.buffer("a", t, Access::Read), b = kb.buffer("b", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val batch = kb.scalar("batch", ix), m = kb.scalar("m", ix), n = kb.scalar("n", ix),
      k = kb.scalar("k", ix);
  Val ab = kb.scalar("a_batch", ix), ar = kb.scalar("a_row", ix), ac = kb.scalar("a_col", ix);
  Val bb = kb.scalar("b_batch", ix), br = kb.scalar("b_row", ix), bc = kb.scalar("b_col", ix);
  Var sum = kb.var("sum", acc);
  Val first = kb.cast(kb.global_id(0), ix);
  Val step = kb.cast(kb.num_groups(0), ix) * kb.cast(kb.local_size(0), ix);
  kb.for_(first, batch * m * n, step, [&](Val e) {
    Val j = e % n, rest = e / n;
    Val i = rest % m, bi = rest / m;
    Val pa = bi * ab + i * ar, pb = bi * bb + j * bc;
    sum.set(kb.lit(acc, 0));
    kb.for_(kb.lit(ix, 0), k, kb.lit(ix, 1), [&](Val p) {
      sum.set(sum.get() +
              kb.cast(kb.load(a, pa + p * ac), acc) * kb.cast(kb.load(b, pb + p * br), acc));
    });
    kb.store(out, e, kb.cast(sum.get(), t));
  });
  return kb.finish();
}

}  // namespace ember::gpu::kernels
