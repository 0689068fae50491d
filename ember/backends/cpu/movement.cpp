// Movement ops as views: only strides and offset change, the buffer is shared.
#include "ember/backends/cpu/kernels.h"
#include "ember/core/view.h"

namespace ember::cpu {

CpuTensor movement(const Op& op, Inputs in, const TensorMeta& out) {
  CpuTensor t = in[0];
  switch (op.code) {
    case OpCode::Reshape: {
      Dims st;
      if (!reshape_strides(t.meta.shape, t.strides, out.shape, st)) {
        t = contiguous(t);
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
      throw Error("[" + std::string(name(op.code)) + "] not a movement op");
  }
  t.meta = out;
  return t;
}

}  // namespace ember::cpu
