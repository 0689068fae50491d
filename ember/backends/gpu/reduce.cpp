// Reductions over any set of dims. The input is viewed as [outer, r, inner] with the r
// elements reduced (kept dims moved first and copied when the reduced dims are not one
// block). Few outputs of long rows are split across the GPU (two passes); many dense long
// rows take the split kernel's first pass alone; other long rows use the kernel layer's
// workgroup reductions; short rows and many reductions across rows use one thread per output
// (kernels.h), whose loads stay coalesced. Large problems tune the path and workgroup among
// valid alternatives once per shape bucket (tune.h); split reductions keep their heuristic.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "ember/backends/gpu/kernels.h"
#include "ember/backends/gpu/ops.h"
#include "ember/backends/gpu/tune.h"
#include "ember/core/view.h"
#include "ember/kernel/kernels/reduce.h"

namespace ember::gpu {

namespace {

// DType of kernel::reduce_accumulator(op, t).
DType accumulator_dtype(OpCode op, DType t) {
  bool ext = op == OpCode::Max || op == OpCode::Min;
  bool arg = op == OpCode::ArgMax || op == OpCode::ArgMin;
  if (t == DType::F16 || t == DType::BF16) return DType::F32;
  if (t == DType::Bool && ext) return DType::U8;
  if (is_int(t) && !ext && !arg) return DType::I64;
  return t;
}

// Few outputs with long rows (a whole-tensor sum): a workgroup per output would leave most of
// the GPU idle, so each row is cut into chunks reduced in parallel (16-byte loads on dense
// rows) and a second pass combines the chunks. False when the other paths suit better.
bool split_reduce(const Op& op, const GpuTensor& x, const GpuTensor& o, int64_t outer, int64_t r,
                  int64_t inner, bool wide) {
  DType t = x.meta.dtype;
  bool ext = op.code == OpCode::Max || op.code == OpCode::Min;
  bool arg = op.code == OpCode::ArgMax || op.code == OpCode::ArgMin;
  if (!ext && !arg && op.code != OpCode::Sum && op.code != OpCode::Prod) return false;
  if (t == DType::Bool && !ext) return false;
  Runtime& d = runtime(x);
  int64_t outputs = outer * inner;
  constexpr int kGroup = 256;
  int64_t fill = int64_t(d.multiprocessors) * 8;  // workgroups resident at once, about
  if (r < 8 * kGroup || outputs * 2 > fill) return false;
  // Several waves of short chunks, so the hardware balances them whatever the occupancy.
  int64_t target = int64_t(d.multiprocessors) * 32;
  int64_t w = kernel::reduce_vector_width(t);
  bool vec = w > 1 && inner == 1 && x.offset % w == 0 && (outer == 1 || r % w == 0);
  if (!vec) w = 1;
  // At least a few loads a thread per chunk; chunks a multiple of the vector width.
  int64_t want = (target + outputs - 1) / outputs;
  int64_t chunk = std::max<int64_t>((r + want - 1) / want, 4 * kGroup * w);
  chunk = (chunk + w - 1) / w * w;
  int64_t splits = (r + chunk - 1) / chunk;
  if (splits < 2) return false;
  TensorMeta pm{Shape{outputs * splits}, accumulator_dtype(op.code, t)};
  GpuTensor part = empty(pm, runtime(x));
  GpuTensor part_index;
  if (arg) part_index = empty(TensorMeta{Shape{outputs * splits}, DType::I64}, runtime(x));
  auto spec = [&](kernel::ReduceSpec::Stage stage, bool v) {
    kernel::ReduceSpec rs;
    rs.op = op.code;
    rs.dtype = t;
    rs.wide_index = wide;
    rs.workgroup = kGroup;
    rs.stage = stage;
    rs.vector = v;
    return rs;
  };
  const Loaded& lp = kernel_for(d, key(Kind::Reduce, int(op.code), t, t, 1, vec, wide), [&] {
    return kernel::reduce_kernel(spec(kernel::ReduceSpec::Partial, vec));
  });
  Args a(lp);
  a.ptr(x.ptr()).ptr(part.ptr());
  if (arg) a.ptr(part_index.ptr());
  a.i(outer).i(r).i(inner).i(r * inner).i(inner).i(1).i(chunk).i(splits);
  a.launch(d, outputs * splits);
  const Loaded& lf = kernel_for(d, key(Kind::Reduce, int(op.code), t, t, 2, false, wide), [&] {
    return kernel::reduce_kernel(spec(kernel::ReduceSpec::Finish, false));
  });
  Args b(lf);
  b.ptr(part.ptr());
  if (arg) b.ptr(part_index.ptr());
  b.ptr(o.ptr()).i(outputs).i(splits);
  b.launch(d, outputs);
  return true;
}

// Many dense rows of 2048 or more elements (a sum over the last dim): the split kernel's
// first pass with one chunk a row, 16-byte loads with two in flight a thread, writing the
// output itself (its accumulator type is the dtype's; argmax/argmin write the indices and
// keep the values aside). False when the rows or types do not allow it.
bool dense_rows_ok(const Op& op, const GpuTensor& x, int64_t r, int64_t inner) {
  DType t = x.meta.dtype;
  bool arg = op.code == OpCode::ArgMax || op.code == OpCode::ArgMin;
  bool ext = op.code == OpCode::Max || op.code == OpCode::Min;
  if (!arg && !ext && op.code != OpCode::Sum && op.code != OpCode::Prod) return false;
  if (!arg && accumulator_dtype(op.code, t) != t) return false;
  int64_t w = kernel::reduce_vector_width(t);
  return w > 1 && inner == 1 && r % w == 0 && x.offset % w == 0 && r >= 2 * 256 * w;
}

}  // namespace

GpuTensor reduce(const Op& op, Inputs in, const TensorMeta& out) {
  const GpuTensor& x0 = in[0];
  const Shape& s = x0.meta.shape;
  size_t rank = s.rank();
  const ReduceLayout g = reduce_layout(s, op.attrs.dims);
  const int64_t outer = g.outer, r = g.size, inner = g.inner;
  GpuTensor x;
  if (g.order.empty()) {
    x = contiguous(x0);
  } else {  // kept dims first, then the reduced ones
    GpuTensor p = x0;
    for (size_t i = 0; i < rank; ++i) {
      p.strides[i] = x0.strides[static_cast<size_t>(g.order[i])];
      p.meta.shape[i] = s[static_cast<size_t>(g.order[i])];
    }
    x = contiguous(p);
  }
  GpuTensor o = empty(out, runtime(x0));
  int64_t outputs = outer * inner;
  if (outputs == 0) return o;
  DType t = x.meta.dtype;
  Runtime& d = runtime(x0);
  bool wide = x.meta.shape.numel() > 0x7fffffff;
  if (split_reduce(op, x, o, outer, r, inner, wide)) return o;
  bool arg = op.code == OpCode::ArgMax || op.code == OpCode::ArgMin;
  bool rows = dense_rows_ok(op, x, r, inner);
  bool workgroup = r > 64 && (inner == 1 || outputs < int64_t(d.multiprocessors) * 64);
  int64_t heuristic = rows        ? reduce_code(kRows, 256)
                      : workgroup ? reduce_code(kWhole, 256)
                                  : reduce_code(kSeq, 0);
  GpuTensor values;  // the dense-rows path's argmax/argmin values
  auto launch = [&](int64_t code) {
    ReducePath path = ReducePath(code & 3);
    int wg = 1 << (code >> 2);
    int wk = wg == 256 ? 0 : log2_bucket(wg);  // the heuristic's kernels keep their keys
    if (path == kRows) {
      if (arg && !values.storage)
        values = empty(TensorMeta{Shape{outer}, accumulator_dtype(op.code, t)}, runtime(x));
      const Loaded& l =
          kernel_for(d, key(Kind::Reduce, int(op.code), t, t, 1, true, wide, wk), [&] {
            kernel::ReduceSpec rs;
            rs.op = op.code;
            rs.dtype = t;
            rs.wide_index = wide;
            rs.workgroup = wg;
            rs.stage = kernel::ReduceSpec::Partial;
            rs.vector = true;
            return kernel::reduce_kernel(rs);
          });
      Args a(l);
      a.ptr(x.ptr());
      if (arg)
        a.ptr(values.ptr()).ptr(o.ptr());
      else
        a.ptr(o.ptr());
      a.i(outer).i(r).i(inner).i(r * inner).i(inner).i(1).i(r).i(1);
      a.launch(d, std::min<int64_t>(outer, int64_t(d.multiprocessors) * 64));
      return;
    }
    if (path == kWhole) {
      const Loaded& l =
          kernel_for(d, key(Kind::Reduce, int(op.code), t, t, 0, false, wide, wk), [&] {
            kernel::ReduceSpec rs;
            rs.op = op.code;
            rs.dtype = t;
            rs.wide_index = wide;
            rs.workgroup = wg;
            return kernel::reduce_kernel(rs);
          });
      Args a(l);
      a.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(r).i(inner).i(r * inner).i(inner).i(1);
      // 4096 threads a multiprocessor (16 workgroups of 256), looping over the outputs.
      a.launch(d, std::min<int64_t>(outputs, int64_t(d.multiprocessors) * (4096 / wg)));
      return;
    }
    if (t == DType::Bool && op.code != OpCode::Max && op.code != OpCode::Min)
      not_implemented(op, in, "bool");
    const Loaded& l = kernel_for(d, key(Kind::SeqReduce, int(op.code), t),
                                 [&] { return kernels::seq_reduce_kernel(op.code, t); });
    Args a(l);
    a.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(r).i(inner).i(r * inner).i(inner).i(1);
    a.launch(d, groups_for(d, outputs, 128));
  };
  if (t == DType::Bool) {  // not tuned
    launch(heuristic);
    return o;
  }
  int lr = log2_bucket(r);
  std::vector<int64_t> cands =
      reduce_candidates(heuristic, rows, kernel::reduce_vector_width(t), lr, inner > 1);
  std::string tkey = "reduce." + std::string(name(op.code)) + "/" + std::string(name(t)) +
                     (rows ? "/rows" : "/any") + "/o" + std::to_string(log2_bucket(outputs)) +
                     "/r" + std::to_string(lr) + "/i" + std::to_string(int(inner > 1)) +
                     (wide ? "/w" : "");
  launch_tuned(d, tkey, cands, outer * r * inner, launch);
  return o;
}

}  // namespace ember::gpu
