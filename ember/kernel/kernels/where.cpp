#include "ember/kernel/kernels/where.h"

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

Kernel where_kernel(const WhereSpec& s) {
  if (s.rank < 1 || s.rank > 8) detail::unsupported("where", "rank must be 1 to 8");
  ScalarType t = scalar_of(s.dtype), ix = detail::index_type(s.wide_index);
  KernelBuilder kb(detail::kname("where", s.dtype, s.wide_index,
                                 s.contiguous ? "_dense" : "_r" + std::to_string(s.rank)),
                   {s.workgroup, 1, 1});
  Mem cond = kb.buffer("cond", ScalarType::Bool, Access::Read);
  Mem a = kb.buffer("a", t, Access::Read);
  Mem b = kb.buffer("b", t, Access::Read);
  Mem out = kb.buffer("out", t, Access::Write);
  Val n = kb.scalar("n", ix);
  std::vector<Val> shape, cs, as, bs;
  if (!s.contiguous) {
    shape = detail::scalars(kb, "shape", s.rank, ix);
    cs = detail::scalars(kb, "cond_stride", s.rank, ix);
    as = detail::scalars(kb, "a_stride", s.rank, ix);
    bs = detail::scalars(kb, "b_stride", s.rank, ix);
  }
  detail::grid_loop(kb, n, [&](Val i) {
    Val ci = i, ai = i, bi = i;
    if (!s.contiguous) {
      std::vector<Val> c = detail::coords(i, shape);
      ci = detail::offset(c, cs);
      ai = detail::offset(c, as);
      bi = detail::offset(c, bs);
    }
    kb.store(out, i, kb.select(kb.load(cond, ci), kb.load(a, ai), kb.load(b, bi)));
  });
  return kb.finish();
}

}  // namespace ember::kernel
