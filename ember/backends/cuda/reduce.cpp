// Reductions over any set of dims. The input is viewed as [outer, r, inner] with the r
// elements reduced (kept dims moved first and copied when the reduced dims are not one
// block). Long rows use the kernel layer's workgroup reductions; short rows and many
// reductions across rows use one thread per output (kernels.h), whose loads stay coalesced.
#include <cmath>
#include <vector>

#include "ember/backends/cuda/kernels.h"
#include "ember/backends/cuda/ops.h"
#include "ember/kernel/kernels/reduce.h"

namespace ember::cuda::detail {

CudaTensor reduce(const Op& op, Inputs in, const TensorMeta& out) {
  const CudaTensor& x0 = in[0];
  const Shape& s = x0.meta.shape;
  size_t rank = s.rank();
  std::vector<bool> red(rank, op.attrs.dims.empty());
  for (int64_t d : op.attrs.dims) red[d] = true;
  int64_t first = -1, last = -1;
  for (size_t d = 0; d < rank; ++d)
    if (red[d] && s[d] != 1) {
      if (first < 0) first = static_cast<int64_t>(d);
      last = static_cast<int64_t>(d);
    }
  bool block = true;
  for (int64_t d = first; first >= 0 && d <= last; ++d) block = block && (red[d] || s[d] == 1);
  CudaTensor x;
  int64_t outer = 1, r = 1, inner = 1;
  if (block) {
    x = contiguous(x0);
    for (size_t d = 0; d < rank; ++d) {
      if (first >= 0 && int64_t(d) >= first && int64_t(d) <= last)
        r *= s[d];
      else if (first >= 0 && int64_t(d) > last)
        inner *= s[d];
      else
        outer *= s[d];
    }
  } else {
    Dims order;
    for (size_t d = 0; d < rank; ++d)
      if (!red[d]) order.push_back(d);
    for (size_t d = 0; d < rank; ++d)
      if (red[d]) order.push_back(d);
    CudaTensor p = x0;
    for (size_t i = 0; i < rank; ++i) {
      p.strides[i] = x0.strides[order[i]];
      p.meta.shape[i] = s[order[i]];
      (red[order[i]] ? r : outer) *= s[order[i]];
    }
    x = contiguous(p);
  }
  CudaTensor o = empty(out, x0.device);
  int64_t outputs = outer * inner;
  if (outputs == 0) return o;
  DType t = x.meta.dtype;
  DeviceState& d = device(x0.device);
  bool wide = x.meta.shape.numel() > 0x7fffffff;
  bool workgroup = r > 64 && (inner == 1 || outputs < int64_t(d.multiprocessors) * 64);
  if (workgroup) {
    const Loaded& l = kernel_for(d, key(Kind::Reduce, int(op.code), t, t, 0, false, wide), [&] {
      kernel::ReduceSpec rs;
      rs.op = op.code;
      rs.dtype = t;
      rs.wide_index = wide;
      return kernel::reduce_kernel(rs);
    });
    Args a(l);
    a.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(r).i(inner).i(r * inner).i(inner).i(1);
    a.launch(d, std::min<int64_t>(outputs, int64_t(d.multiprocessors) * 16));
    return o;
  }
  if (t == DType::Bool && op.code != OpCode::Max && op.code != OpCode::Min)
    not_implemented(op, in, "bool");
  const Loaded& l = kernel_for(d, key(Kind::SeqReduce, int(op.code), t),
                               [&] { return kernels::seq_reduce_kernel(op.code, t); });
  Args a(l);
  a.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(r).i(inner).i(r * inner).i(inner).i(1);
  a.launch(d, groups_for(d, outputs, 128));
  return o;
}

}  // namespace ember::cuda::detail
