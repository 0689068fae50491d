#include "ember/kernel/kernels/index.h"

#include "ember/kernel/builder.h"
#include "ember/kernel/kernels/detail.h"

namespace ember::kernel {

namespace {

void check(std::string_view op, DType index, int rank) {
  if (index != DType::I64 && index != DType::I32)
    detail::unsupported(op, "indices must be i64 or i32, not " + std::string(name(index)));
  if (rank < 1 || rank > 8) detail::unsupported(op, "rank must be 1 to 8");
}

// The index at `at`, as ix; body(k) runs where it is in [0, dim_size), else `error` is set.
void with_index(KernelBuilder& kb, const Mem& indices, const Val& at, const Val& dim_size,
                const Mem* error, const std::function<void(Val)>& body) {
  Val k = kb.cast(kb.load(indices, at), dim_size.type().scalar);
  Val ok = k >= 0.0 && k < dim_size;
  if (!error) {
    kb.if_(ok, [&] { body(k); });
    return;
  }
  kb.if_else(
      ok, [&] { body(k); },
      [&] {
        kb.store(*error, kb.lit(ScalarType::U32, 0), kb.lit(ScalarType::I64, 1));
        kb.store(*error, kb.lit(ScalarType::U32, 1), kb.cast(k, ScalarType::I64));
      });
}

// out[at] += v by an atomic (or an OR for bools); out holds index_accumulator(dtype).
void accumulate(KernelBuilder& kb, const Mem& out, const Val& at, const Val& v) {
  if (out.type.scalar == ScalarType::Bool) {
    kb.if_(v, [&] { kb.store(out, at, kb.lit(ScalarType::Bool, 1)); });
    return;
  }
  kb.atomic_add(out, at, kb.cast(v, out.type));
}

}  // namespace

DType index_accumulator(DType t) {
  switch (t) {
    case DType::F16:
    case DType::BF16:
      return DType::F32;
    case DType::I8:
    case DType::U8:
    case DType::I16:
      return DType::I32;
    default:
      return t;
  }
}

Kernel gather_kernel(const GatherSpec& s) {
  check("gather", s.index, s.rank);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(detail::kname("gather", s.dtype, s.wide_index,
                                 "_" + std::string(name(s.index)) + "_r" + std::to_string(s.rank)),
                   {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", scalar_of(s.dtype), Access::Read);
  Mem indices = kb.buffer("indices", scalar_of(s.index), Access::Read);
  Mem out = kb.buffer("out", scalar_of(s.dtype), Access::Write);
  Mem error = kb.buffer("error", ScalarType::I64, Access::Write);
  Val n = kb.scalar("n", ix), dim_size = kb.scalar("dim_size", ix);
  Val xds = kb.scalar("x_dim_stride", ix);
  std::vector<Val> shape = detail::scalars(kb, "shape", s.rank, ix);
  std::vector<Val> xs = detail::scalars(kb, "x_stride", s.rank, ix);
  std::vector<Val> is = detail::scalars(kb, "indices_stride", s.rank, ix);
  detail::grid_loop(kb, n, [&](Val p) {
    std::vector<Val> c = detail::coords(p, shape);
    with_index(kb, indices, detail::offset(c, is), dim_size, &error,
               [&](Val k) { kb.store(out, p, kb.load(x, detail::offset(c, xs) + k * xds)); });
  });
  return kb.finish();
}

Kernel scatter_kernel(const ScatterSpec& s) {
  check("scatter", s.index, s.rank);
  ScalarType ix = detail::index_type(s.wide_index);
  const char* mode = s.mode == ScatterSpec::Claim    ? "_claim"
                     : s.mode == ScatterSpec::Assign ? "_assign"
                                                     : "_add";
  KernelBuilder kb(
      detail::kname("scatter", s.dtype, s.wide_index,
                    mode + ("_" + std::string(name(s.index))) + "_r" + std::to_string(s.rank)),
      {s.workgroup, 1, 1});
  ScalarType t = scalar_of(s.dtype);
  Mem indices = kb.buffer("indices", scalar_of(s.index), Access::Read);
  Mem values, claim, out, error;
  if (s.mode != ScatterSpec::Claim) values = kb.buffer("values", t, Access::Read);
  if (s.mode != ScatterSpec::Add)
    claim = kb.buffer("claim", ix, s.mode == ScatterSpec::Claim ? Access::ReadWrite : Access::Read);
  if (s.mode == ScatterSpec::Assign) out = kb.buffer("out", t, Access::Write);
  if (s.mode == ScatterSpec::Add)
    out = kb.buffer("out", scalar_of(index_accumulator(s.dtype)), Access::ReadWrite);
  if (s.mode != ScatterSpec::Assign) error = kb.buffer("error", ScalarType::I64, Access::Write);
  Val n = kb.scalar("n", ix), dim_size = kb.scalar("dim_size", ix);
  Val ods = kb.scalar("out_dim_stride", ix);
  std::vector<Val> shape = detail::scalars(kb, "shape", s.rank, ix);
  std::vector<Val> is = detail::scalars(kb, "indices_stride", s.rank, ix);
  std::vector<Val> vs;
  if (s.mode != ScatterSpec::Claim) vs = detail::scalars(kb, "values_stride", s.rank, ix);
  std::vector<Val> os = detail::scalars(kb, "out_stride", s.rank, ix);
  detail::grid_loop(kb, n, [&](Val p) {
    std::vector<Val> c = detail::coords(p, shape);
    with_index(kb, indices, detail::offset(c, is), dim_size,
               s.mode == ScatterSpec::Assign ? nullptr : &error, [&](Val k) {
                 Val at = detail::offset(c, os) + k * ods;
                 if (s.mode == ScatterSpec::Claim) {
                   kb.atomic_max(claim, at, p);
                 } else if (s.mode == ScatterSpec::Assign) {
                   kb.if_(kb.load(claim, at) == p,
                          [&] { kb.store(out, at, kb.load(values, detail::offset(c, vs))); });
                 } else {
                   accumulate(kb, out, at, kb.load(values, detail::offset(c, vs)));
                 }
               });
  });
  return kb.finish();
}

Kernel index_select_kernel(const IndexSelectSpec& s) {
  check("index_select", s.index, 1);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(
      detail::kname("index_select", s.dtype, s.wide_index, "_" + std::string(name(s.index))),
      {s.workgroup, 1, 1});
  Mem x = kb.buffer("x", scalar_of(s.dtype), Access::Read);
  Mem indices = kb.buffer("indices", scalar_of(s.index), Access::Read);
  Mem out = kb.buffer("out", scalar_of(s.dtype), Access::Write);
  Mem error = kb.buffer("error", ScalarType::I64, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val count = kb.scalar("count", ix);
  Val so = kb.scalar("x_outer_stride", ix), sr = kb.scalar("x_size_stride", ix);
  Val si = kb.scalar("x_inner_stride", ix), ist = kb.scalar("indices_stride", ix);
  detail::grid_loop(kb, outer * count * inner, [&](Val p) {
    Val i = p % inner, rest = p / inner;
    Val kk = rest % count, o = rest / count;
    with_index(kb, indices, kk * ist, size, &error,
               [&](Val k) { kb.store(out, p, kb.load(x, o * so + k * sr + i * si)); });
  });
  return kb.finish();
}

Kernel index_add_kernel(const IndexAddSpec& s) {
  check("index_add", s.index, 1);
  ScalarType ix = detail::index_type(s.wide_index);
  KernelBuilder kb(
      detail::kname("index_add", s.dtype, s.wide_index, "_" + std::string(name(s.index))),
      {s.workgroup, 1, 1});
  Mem indices = kb.buffer("indices", scalar_of(s.index), Access::Read);
  Mem values = kb.buffer("values", scalar_of(s.dtype), Access::Read);
  Mem out = kb.buffer("out", scalar_of(index_accumulator(s.dtype)), Access::ReadWrite);
  Mem error = kb.buffer("error", ScalarType::I64, Access::Write);
  Val outer = kb.scalar("outer", ix), size = kb.scalar("size", ix), inner = kb.scalar("inner", ix);
  Val count = kb.scalar("count", ix);
  Val so = kb.scalar("values_outer_stride", ix), sr = kb.scalar("values_size_stride", ix);
  Val si = kb.scalar("values_inner_stride", ix), ist = kb.scalar("indices_stride", ix);
  detail::grid_loop(kb, outer * count * inner, [&](Val p) {
    Val i = p % inner, rest = p / inner;
    Val kk = rest % count, o = rest / count;
    with_index(kb, indices, kk * ist, size, &error, [&](Val k) {
      accumulate(kb, out, (o * size + k) * inner + i, kb.load(values, o * so + kk * sr + i * si));
    });
  });
  return kb.finish();
}

}  // namespace ember::kernel
