// Movement ops as views: only strides and offset change, the device buffer is shared.
#include "ember/backends/cuda/ops.h"
#include "ember/core/error.h"
#include "ember/core/view.h"

namespace ember::cuda::detail {

CudaTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  CudaTensor t = in[0];
  switch (op.code) {
    case OpCode::Reshape: {
      Dims st;
      if (!reshape_strides(t.meta.shape, t.strides, out.shape, st)) {
        t = copy_strided(t);
        st = contiguous_strides(out.shape);
      }
      t.strides = std::move(st);
      break;
    }
    case OpCode::Permute:
    case OpCode::Expand:
    case OpCode::Slice:
    case OpCode::Flip:
      apply_view(op, t.meta.shape, out.shape, t.strides, t.offset);
      break;
    default:
      not_implemented(op, in);
  }
  t.meta = out;
  return t;
}

}  // namespace ember::cuda::detail
