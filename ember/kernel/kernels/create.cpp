#include "ember/kernel/kernels/create.h"

#include <numbers>

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

using detail::rng_uniform01;
using detail::U64;

Kernel create_kernel(const CreateSpec& s) {
  std::string op_name(name(s.op));
  if (info(s.op).family != OpFamily::Create) detail::unsupported(op_name, "not a creation op");
  ScalarType t = scalar_of(s.dtype), ix = detail::index_type(s.wide_index);
  bool fl = is_float(s.dtype);
  ScalarType value_t = fl ? ScalarType::F64 : ScalarType::I64;
  KernelBuilder kb(detail::kname(op_name, s.dtype, s.wide_index), {s.workgroup, 1, 1});
  Mem out = kb.buffer("out", t, Access::Write);
  Val n = kb.scalar("n", ix);
  switch (s.op) {
    case OpCode::Full: {
      Val v = detail::convert(kb, kb.scalar("value", value_t), t);
      detail::grid_loop(kb, n, [&](Val i) { kb.store(out, i, v); });
      break;
    }
    case OpCode::Arange: {
      Val start = kb.scalar("start", value_t), step = kb.scalar("step", value_t);
      detail::grid_loop(kb, n, [&](Val i) {
        Val v = start + step * kb.cast(i, value_t);
        kb.store(out, i, detail::convert(kb, v, t));
      });
      break;
    }
    default: {
      Val a = kb.scalar(s.op == OpCode::RandomUniform  ? "low"
                        : s.op == OpCode::RandomNormal ? "mean"
                                                       : "p",
                        ScalarType::F64);
      Val b;
      if (s.op != OpCode::RandomBernoulli)
        b = kb.scalar(s.op == OpCode::RandomUniform ? "high" : "std", ScalarType::F64);
      U64 seed{kb.scalar("seed_lo", ScalarType::U32), kb.scalar("seed_hi", ScalarType::U32)};
      detail::grid_loop(kb, n, [&](Val i) {
        U64 c = detail::u64_from_index(kb, i);
        Val v;
        if (s.op == OpCode::RandomUniform) {
          v = a + (b - a) * rng_uniform01(kb, seed, c);
          if (!fl) v = kb.floor(v);
        } else if (s.op == OpCode::RandomNormal) {
          // Box-Muller over counters 2i and 2i + 1, as ember::rng::normal.
          U64 c2 = detail::u64_shl(kb, c, 1);
          Val u1 = 1.0 - rng_uniform01(kb, seed, c2);
          Val u2 = rng_uniform01(kb, seed, {c2.lo | 1.0, c2.hi});
          Val z = kb.sqrt(-2.0 * kb.log(u1)) * kb.cos((2.0 * std::numbers::pi) * u2);
          v = a + b * z;
        } else {
          v = kb.select(rng_uniform01(kb, seed, c) < a, kb.lit(ScalarType::F64, 1),
                        kb.lit(ScalarType::F64, 0));
        }
        kb.store(out, i, detail::convert(kb, v, t));
      });
      break;
    }
  }
  return kb.finish();
}

}  // namespace ember::kernel
