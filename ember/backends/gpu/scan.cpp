// Scans (cumsum, cumprod, cummax, cummin) along one dim: the input viewed as
// [outer, size, inner] (copied to dense first when its strides do not allow that view).
#include "ember/kernel/kernels/scan.h"
#include "ember/backends/gpu/ops.h"

namespace ember::gpu {

GpuTensor scan(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor x = contiguous(in[0]);
  const Shape& s = x.meta.shape;
  int64_t dim = op.attrs.dim, outer = 1, size = s.rank() ? s[dim] : 1, inner = 1;
  for (int64_t d = 0; d < dim; ++d) outer *= s[d];
  for (size_t d = dim + 1; d < s.rank(); ++d) inner *= s[d];
  GpuTensor o = empty(out, runtime(x));
  if (out.shape.numel() == 0) return o;
  Runtime& dev = runtime(x);
  // Few long rows: a workgroup per row; otherwise a thread per row.
  bool group = size > 256 && outer * inner < int64_t(dev.multiprocessors) * 64;
  bool wide = s.numel() > 0x7fffffff;
  const Loaded& l = kernel_for(
      dev, key(Kind::Scan, int(op.code), x.meta.dtype, x.meta.dtype, 0, group, wide), [&] {
        kernel::ScanSpec ss;
        ss.op = op.code;
        ss.dtype = x.meta.dtype;
        ss.layout = group ? kernel::ScanSpec::GroupPerRow : kernel::ScanSpec::ThreadPerRow;
        ss.wide_index = wide;
        return kernel::scan_kernel(ss);
      });
  Args a(l);
  a.ptr(x.ptr()).ptr(o.ptr()).i(outer).i(size).i(inner).i(size * inner).i(inner).i(1);
  a.launch(dev, group ? std::min<int64_t>(outer * inner, int64_t(dev.multiprocessors) * 16)
                      : groups_for(dev, outer * inner, 256));
  return o;
}

}  // namespace ember::gpu
