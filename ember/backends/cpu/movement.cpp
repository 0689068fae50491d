// Movement ops as views: only strides and offset change, the buffer is shared.
#include "ember/backends/cpu/kernels.h"
#include "ember/core/view.h"

namespace ember::cpu {

CpuTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor t = in[0];
  if (!apply_view(op, t.meta.shape, out.shape, t.strides, t.offset)) {  // a reshape: copy
    t = contiguous(t);
    t.strides = contiguous_strides(out.shape);
  }
  t.meta = out;
  return t;
}

}  // namespace ember::cpu
