// Indexing, assembly and sorting: cat and slice_assign (strided copies into a view of the
// output), gather, scatter (claim + assign for last-wins duplicates, atomics for adds),
// index_select, index_add, and argsort (a bitonic tile sort, then merge passes for rows longer
// than a tile). Index values are data: the kernels report a bad one in a small error buffer,
// which the op reads back (waiting for the kernel) to raise the CPU backend's IndexError.
#include "ember/kernel/kernels/index.h"
#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/sort.h"

namespace ember::gpu {

namespace {

constexpr int64_t kMaxI32 = 0x7fffffff;

// Whether an index into `t`'s storage may not fit in i32.
bool big(const GpuTensor& t) {
  return t.storage && int64_t(t.storage->bytes / size_of(t.meta.dtype)) > kMaxI32;
}

void push(Args& a, const Dims& v) {
  for (int64_t x : v) a.i(x);
}

// The error buffer of one launch: {flag, bad index}, zeroed on the stream.
struct ErrorFlag {
  GpuTensor buf;
  explicit ErrorFlag(Runtime& dev) : buf(empty({Shape{2}, DType::I64}, dev)) {
    dev.fill(*buf.storage, 0, 0, 4, 4);
  }
  // Waits for the kernel; raises IndexError as the CPU backend does.
  void check(const Op& op, int64_t dim_size) {
    int64_t e[2] = {0, 0};
    runtime(buf).download(e, *buf.storage, 0, sizeof e);
    if (e[0])
      throw IndexError("[" + std::string(name(op.code)) + "] index " + std::to_string(e[1]) +
                       " out of range for dim " + std::to_string(op.attrs.dim) + " of size " +
                       std::to_string(dim_size));
  }
};

int rank_of(const Collapsed& c, const Op& op, Inputs in) {
  if (c.shape.size() > 8) not_implemented(op, in, "more than 8 dims after merging");
  return static_cast<int>(c.shape.size());
}

// x copied (converted to view's dtype) into `view`, a strided view of some output buffer.
void copy_into_view(const GpuTensor& x, const GpuTensor& view, const Op& op, Inputs in) {
  int64_t n = view.meta.shape.numel();
  if (n == 0) return;
  Dims xs = broadcast_strides(x, view.meta.shape);
  const Dims* sp[2] = {&xs, &view.strides};
  Collapsed c = collapse(view.meta.shape, std::span<const Dims* const>(sp, 2));
  int rank = rank_of(c, op, in);
  bool wide = c.wide || big(x) || big(view);
  Runtime& d = runtime(view);
  const Loaded& l =
      kernel_for(d, key(Kind::Copy, 1, x.meta.dtype, view.meta.dtype, rank, false, wide), [&] {
        kernel::CopySpec cs;
        cs.src = x.meta.dtype;
        cs.dst = view.meta.dtype;
        cs.rank = rank;
        cs.strided_out = true;
        cs.wide_index = wide;
        return kernel::copy_kernel(cs);
      });
  Args a(l);
  a.ptr(x.ptr()).ptr(view.ptr()).i(n);
  push(a, c.shape);
  push(a, c.strides[0]);
  push(a, c.strides[1]);
  a.i(0);  // out_offset: view.ptr() already points at the view's first element
  a.launch(d, groups_for(d, n, 256));
}

// A tensor the op may write: the input itself when no one else holds it, else a dense copy.
GpuTensor writable(const GpuTensor& x, const TensorMeta& out) {
  return reusable(x, out) ? x : copy_strided(x);
}

GpuTensor with_dtype(const GpuTensor& x, DType t) {
  if (x.meta.dtype == t) return x;
  GpuTensor in = x;
  return cast(Inputs(&in, 1), {x.meta.shape, t});
}

GpuTensor cat(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor o = empty(out, runtime(in[0]));
  int64_t dim = op.attrs.dim, at = 0;
  for (const GpuTensor& t : in) {
    int64_t len = t.meta.shape[dim];
    GpuTensor v = o;
    v.meta.shape = t.meta.shape;
    v.meta.dtype = out.dtype;
    if (len > 0) v.offset += at * o.strides[dim];
    copy_into_view(t, v, op, in);
    at += len;
  }
  return o;
}

GpuTensor slice_assign(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor o = writable(in[0], out);
  GpuTensor v = o;
  const OpAttrs& a = op.attrs;
  v.meta.shape = in[1].meta.shape;
  for (size_t i = 0; i < out.shape.rank(); ++i) {
    if (v.meta.shape[i] > 0) v.offset += a.dims[i] * o.strides[i];
    if (v.meta.shape[i] > 1) v.strides[i] *= a.steps[i];  // as slice: huge steps of one
  }
  copy_into_view(in[1], v, op, in);
  return o;
}

GpuTensor gather(const Op& op, Inputs in, const TensorMeta& out) {
  const GpuTensor &x = in[0], &idx = in[1];
  int64_t dim = op.attrs.dim, n = out.shape.numel();
  GpuTensor o = empty(out, runtime(x));
  if (n == 0) return o;
  const Shape& s = idx.meta.shape;
  // Coordinates walk the indices' shape; x's stride at dim comes from the index values.
  Dims xs = x.strides, os = contiguous_strides(s);
  xs[dim] = 0;
  const Dims* sp[3] = {&xs, &idx.strides, &os};
  Collapsed c = collapse(s, std::span<const Dims* const>(sp, 3));
  int rank = rank_of(c, op, in);
  bool wide = c.wide || big(x) || big(idx);
  Runtime& d = runtime(x);
  const Loaded& l = kernel_for(
      d, key(Kind::Index, int(op.code), x.meta.dtype, idx.meta.dtype, rank, false, wide), [&] {
        kernel::GatherSpec gs;
        gs.dtype = x.meta.dtype;
        gs.index = idx.meta.dtype;
        gs.rank = rank;
        gs.wide_index = wide;
        return kernel::gather_kernel(gs);
      });
  ErrorFlag err(runtime(x));
  Args a(l);
  a.ptr(x.ptr()).ptr(idx.ptr()).ptr(o.ptr()).ptr(err.buf.ptr());
  a.i(n).i(x.meta.shape[dim]).i(x.strides[dim]);
  push(a, c.shape);
  push(a, c.strides[0]);
  push(a, c.strides[1]);
  a.launch(d, groups_for(d, n, 256));
  err.check(op, x.meta.shape[dim]);
  return o;
}

GpuTensor scatter(const Op& op, Inputs in, const TensorMeta& out) {
  const GpuTensor &idx = in[1], &values = in[2];
  int64_t dim = op.attrs.dim, n = idx.meta.shape.numel();
  DType t = out.dtype;
  bool add = op.attrs.flag;
  GpuTensor o = writable(in[0], out);
  if (n == 0) return o;
  DType acc_t = add ? kernel::index_accumulator(t) : t;
  GpuTensor acc = with_dtype(o, acc_t);
  Dims os = acc.strides;
  int64_t out_dim_stride = os[dim], dim_size = out.shape[dim];
  os[dim] = 0;
  Dims vs = broadcast_strides(values, idx.meta.shape);
  const Dims* sp[3] = {&idx.strides, &vs, &os};
  Collapsed c = collapse(idx.meta.shape, std::span<const Dims* const>(sp, 3));
  int rank = rank_of(c, op, in);
  bool wide = c.wide || big(acc) || big(idx) || big(values);
  Runtime& d = runtime(o);
  auto spec = [&](kernel::ScatterSpec::Mode mode) {
    return [&, mode] {
      kernel::ScatterSpec ss;
      ss.dtype = t;
      ss.index = idx.meta.dtype;
      ss.rank = rank;
      ss.mode = mode;
      ss.wide_index = wide;
      return kernel::scatter_kernel(ss);
    };
  };
  auto kkey = [&](kernel::ScatterSpec::Mode mode) {
    return key(Kind::Index, int(op.code), t, idx.meta.dtype, rank, false, wide, 1 + int(mode));
  };
  auto shape_and = [&](Args& a, std::initializer_list<int> which) {
    a.i(n).i(dim_size).i(out_dim_stride);
    push(a, c.shape);
    for (int j : which) push(a, c.strides[j]);
  };
  ErrorFlag err(runtime(o));
  int64_t groups = groups_for(d, n, 256);
  if (add) {
    const Loaded& l = kernel_for(d, kkey(kernel::ScatterSpec::Add), spec(kernel::ScatterSpec::Add));
    Args a(l);
    a.ptr(idx.ptr()).ptr(values.ptr()).ptr(acc.ptr()).ptr(err.buf.ptr());
    shape_and(a, {0, 1, 2});
    a.launch(d, groups);
    err.check(op, dim_size);
    return with_dtype(acc, t);
  }
  // Duplicates: every position claims its target with max(position), then the one that
  // holds the claim writes, which is the last position in row-major order, as on the CPU.
  TensorMeta cm{out.shape, wide ? DType::I64 : DType::I32};
  GpuTensor claim = empty(cm, runtime(o));
  d.fill(*claim.storage, 0, 0xffffffffu, 4, claim.storage->bytes / 4);
  const Loaded& lc =
      kernel_for(d, kkey(kernel::ScatterSpec::Claim), spec(kernel::ScatterSpec::Claim));
  Args ac(lc);
  ac.ptr(idx.ptr()).ptr(claim.ptr()).ptr(err.buf.ptr());
  shape_and(ac, {0, 2});
  ac.launch(d, groups);
  const Loaded& la =
      kernel_for(d, kkey(kernel::ScatterSpec::Assign), spec(kernel::ScatterSpec::Assign));
  Args aa(la);
  aa.ptr(idx.ptr()).ptr(values.ptr()).ptr(claim.ptr()).ptr(o.ptr());
  shape_and(aa, {0, 1, 2});
  aa.launch(d, groups);
  err.check(op, dim_size);  // Claim reports bad indices; Assign skips them
  return o;
}

// outer, size, inner of `s` around `dim`.
void split(const Shape& s, int64_t dim, int64_t& outer, int64_t& size, int64_t& inner) {
  outer = 1, inner = 1, size = s.rank() ? s[dim] : 1;
  for (int64_t i = 0; i < dim; ++i) outer *= s[i];
  for (size_t i = dim + 1; i < s.rank(); ++i) inner *= s[i];
}

GpuTensor index_select(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor x = contiguous(in[0]);
  const GpuTensor& idx = in[1];
  int64_t outer, size, inner, count = idx.meta.shape.numel();
  split(x.meta.shape, op.attrs.dim, outer, size, inner);
  GpuTensor o = empty(out, runtime(x));
  int64_t n = out.shape.numel();
  if (n == 0) return o;
  bool wide = n > kMaxI32 || big(x) || big(idx);
  Runtime& d = runtime(x);
  const Loaded& l = kernel_for(
      d, key(Kind::Index, int(op.code), x.meta.dtype, idx.meta.dtype, 1, false, wide), [&] {
        kernel::IndexSelectSpec s;
        s.dtype = x.meta.dtype;
        s.index = idx.meta.dtype;
        s.wide_index = wide;
        return kernel::index_select_kernel(s);
      });
  ErrorFlag err(runtime(x));
  Args a(l);
  a.ptr(x.ptr()).ptr(idx.ptr()).ptr(o.ptr()).ptr(err.buf.ptr());
  a.i(outer).i(size).i(inner).i(count).i(size * inner).i(inner).i(1);
  a.i(idx.strides.empty() ? 1 : idx.strides[0]);
  a.launch(d, groups_for(d, n, 256));
  err.check(op, size);
  return o;
}

GpuTensor index_add(const Op& op, Inputs in, const TensorMeta& out) {
  const GpuTensor& idx = in[1];
  GpuTensor values = contiguous(in[2]);
  DType t = out.dtype, acc_t = kernel::index_accumulator(t);
  GpuTensor o = acc_t == t ? writable(in[0], out) : with_dtype(in[0], acc_t);
  int64_t outer, size, inner, count = idx.meta.shape.numel();
  split(out.shape, op.attrs.dim, outer, size, inner);
  int64_t n = outer * count * inner;
  if (n == 0) return with_dtype(o, t);
  bool wide = n > kMaxI32 || big(o) || big(idx) || big(values);
  Runtime& d = runtime(o);
  const Loaded& l =
      kernel_for(d, key(Kind::Index, int(op.code), t, idx.meta.dtype, 1, false, wide), [&] {
        kernel::IndexAddSpec s;
        s.dtype = t;
        s.index = idx.meta.dtype;
        s.wide_index = wide;
        return kernel::index_add_kernel(s);
      });
  ErrorFlag err(runtime(o));
  Args a(l);
  a.ptr(idx.ptr()).ptr(values.ptr()).ptr(o.ptr()).ptr(err.buf.ptr());
  a.i(outer).i(size).i(inner).i(count).i(count * inner).i(inner).i(1);
  a.i(idx.strides.empty() ? 1 : idx.strides[0]);
  a.launch(d, groups_for(d, n, 256));
  err.check(op, size);
  return with_dtype(o, t);
}

}  // namespace

GpuTensor index(const Op& op, Inputs in, const TensorMeta& out) {
  switch (op.code) {
    case OpCode::Cat:
      return cat(op, in, out);
    case OpCode::SliceAssign:
      return slice_assign(op, in, out);
    case OpCode::Gather:
      return gather(op, in, out);
    case OpCode::Scatter:
      return scatter(op, in, out);
    case OpCode::IndexSelect:
      return index_select(op, in, out);
    case OpCode::IndexAdd:
      return index_add(op, in, out);
    default:
      not_implemented(op, in);
  }
}

GpuTensor sort(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor x = contiguous(in[0]);
  DType t = x.meta.dtype;
  if (t == DType::Bool) not_implemented(op, in, "bool");
  int64_t outer, size, inner;
  split(x.meta.shape, op.attrs.dim, outer, size, inner);
  GpuTensor o = empty(out, runtime(x));
  int64_t total = out.shape.numel();
  if (total == 0) return o;
  bool desc = op.attrs.flag, wide = total > kMaxI32;
  // The smallest workgroup whose tile (2 x workgroup) holds a row, 32 to 512.
  int wg = 32, log_wg = 5;
  while (wg < 512 && 2 * wg < size) wg *= 2, ++log_wg;
  Runtime& d = runtime(x);
  auto spec = [&](kernel::ArgsortSpec::Stage stage, int workgroup) {
    return [=] {
      kernel::ArgsortSpec s;
      s.dtype = t;
      s.descending = desc;
      s.stage = stage;
      s.wide_index = wide;
      s.workgroup = workgroup;
      return kernel::argsort_kernel(s);
    };
  };
  const Loaded& lb = kernel_for(d, key(Kind::Sort, 0, t, DType::I64, log_wg, desc, wide),
                                spec(kernel::ArgsortSpec::Block, wg));
  int64_t tile = 2 * wg, tiles = outer * inner * ((size + tile - 1) / tile);
  Args ab(lb);
  ab.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(size).i(inner).i(size * inner).i(inner).i(1);
  ab.launch(d, std::min<int64_t>(tiles, int64_t(d.multiprocessors) * 8));
  if (size <= tile) return o;
  const Loaded& lm = kernel_for(d, key(Kind::Sort, 1, t, DType::I64, 8, desc, wide),
                                spec(kernel::ArgsortSpec::Merge, 256));
  GpuTensor src = o, dst = empty(out, runtime(x));
  for (int64_t width = tile; width < size; width *= 2) {
    Args am(lm);
    am.ptr(x.ptr()).ptr(src.ptr()).ptr(dst.ptr()).i(outer).i(size).i(inner);
    am.i(size * inner).i(inner).i(1).i(width);
    am.launch(d, groups_for(d, total, 256));
    std::swap(src, dst);
  }
  return src;
}

}  // namespace ember::gpu
