#include "ember/kernel/kernels/copy.h"

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

Kernel copy_kernel(const CopySpec& s) {
  if (s.rank < 1 || s.rank > 8) detail::unsupported("copy", "rank must be 1 to 8");
  ScalarType ix = detail::index_type(s.wide_index);
  std::string kname = (s.src == s.dst ? "copy_" : "cast_" + std::string(name(s.src)) + "_") +
                      std::string(name(s.dst)) + "_r" + std::to_string(s.rank) +
                      (s.strided_out ? "_strided" : "") + (s.wide_index ? "_i64" : "");
  KernelBuilder kb(kname, {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", scalar_of(s.src), Access::Read);
  Mem out = kb.buffer("out", scalar_of(s.dst), Access::Write);
  Val n = kb.scalar("n", ix);
  std::vector<Val> shape = detail::scalars(kb, "shape", s.rank, ix);
  std::vector<Val> xs = detail::scalars(kb, "x_stride", s.rank, ix);
  std::vector<Val> os;
  Val out_offset;
  if (s.strided_out) {
    os = detail::scalars(kb, "out_stride", s.rank, ix);
    out_offset = kb.scalar("out_offset", ix);
  }
  detail::grid_loop(kb, n, [&](Val i) {
    std::vector<Val> c = detail::coords(i, shape);
    Val v = detail::convert(kb, kb.load(x, detail::offset(c, xs)), scalar_of(s.dst));
    kb.store(out, s.strided_out ? detail::offset(c, os) + out_offset : i, v);
  });
  return kb.finish();
}

}  // namespace ember::kernel
