// Movement ops as views: only strides and offset change, the device buffer is shared.
#include "ember/backends/gpu/ops.h"
#include "ember/core/error.h"
#include "ember/core/view.h"

namespace ember::gpu {

GpuTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  GpuTensor t = in[0];
  if (!apply_view(op, t.meta.shape, out.shape, t.strides, t.offset)) {  // a reshape: copy
    t = copy_strided(t);
    t.strides = contiguous_strides(out.shape);
  }
  t.meta = out;
  return t;
}

}  // namespace ember::gpu
