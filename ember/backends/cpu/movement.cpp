// Movement ops as views: only strides and offset change, the buffer is shared.
#include "ember/backends/cpu/kernels.h"
#include "ember/core/view.h"

namespace ember::cpu {

// The same view for every element type: the kernels of the table are one copy each.
template <class>
CpuTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor t = in[0];
  if (!apply_view(op, t.meta.shape, out.shape, t.strides, t.offset)) {  // a reshape: copy
    t = contiguous(t);
    t.strides = contiguous_strides(out.shape);
  }
  t.meta = out;
  return t;
}

EMBER_CPU_DEFINE_KERNELS(Movement, movement)

}  // namespace ember::cpu
