#include "ember/kernel/kernels/copy.h"

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

Kernel copy_kernel(const CopySpec& s) {
  if (s.rank < 1 || s.rank > 8) detail::unsupported("copy", "rank must be 1 to 8");
  ScalarType ix = detail::index_type(s.wide_index);
  if (s.vector) {
    if (s.src != s.dst || size_of(s.src) != 4 || s.rank != 1 || s.strided_out)
      detail::unsupported("copy", "a vector copy is dense, rank 1, of 4-byte elements");
    KernelBuilder kb(
        std::string("copy_") + std::string(name(s.src)) + "_x4" + (s.wide_index ? "_i64" : ""),
        {s.workgroup, 1, 1});
    Mem x = kb.buffer("x", scalar_of(s.src), Access::Read, 4);
    Mem out = kb.buffer("out", scalar_of(s.dst), Access::Write, 4);
    Val n = kb.scalar("n", ix);
    Val groups = n / 4.0;
    detail::grid_loop(kb, groups, [&](Val g) {
      Val at = g * 4.0;
      kb.store(out, at, kb.load(x, at, 4));
    });
    detail::grid_loop(kb, n - groups * 4.0, [&](Val r) {
      Val at = groups * 4.0 + r;
      kb.store(out, at, kb.load(x, at));
    });
    return kb.finish();
  }
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
