// The spatial op family (conv, pooling, interpolation, unfold/fold): inputs made contiguous,
// halves computed in f32 and rounded, then the kernel of the op's file.
#include "ember/backends/cpu/spatial.h"

#include <vector>

namespace ember::cpu {

CpuTensor spatial(const Op& op, Inputs in, const TensorMeta& out) {
  if (out.dtype == DType::F16 || out.dtype == DType::BF16) {
    std::vector<CpuTensor> f32(in.size());
    for (size_t i = 0; i < in.size(); ++i)
      f32[i] = cast(in.subspan(i, 1), TensorMeta{in[i].meta.shape, DType::F32});
    CpuTensor r = spatial(op, f32, TensorMeta{out.shape, DType::F32});
    return cast(std::span<CpuTensor>(&r, 1), out);
  }
  if (out.shape.numel() == 0) return empty(out);
  std::vector<CpuTensor> c(in.size());
  for (size_t i = 0; i < in.size(); ++i) c[i] = contiguous(in[i]);
  switch (op.code) {
    case OpCode::Conv:
    case OpCode::ConvTranspose:
    case OpCode::ConvWeightGrad:
    case OpCode::Unfold:
    case OpCode::Fold:
      return conv_family(op, c, out);
    case OpCode::Interpolate:
    case OpCode::InterpolateBackward:
      return interpolate_family(op, c, out);
    default:
      return pool_family(op, c, out);
  }
}

}  // namespace ember::cpu
