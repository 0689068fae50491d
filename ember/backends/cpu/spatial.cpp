// The spatial op family (conv, pooling, interpolation, unfold/fold): inputs made contiguous,
// halves computed in f32 and rounded, then the kernel of the op's file.
#include "ember/backends/cpu/spatial.h"

#include <vector>

namespace ember::cpu {

template <class T>
CpuTensor spatial(const Op& op, Inputs in, const TensorMeta& out) {
  if constexpr (is_half_v<T>)
    return through_f32(in, out,
                       [&](Inputs f, const TensorMeta& m) { return spatial<float>(op, f, m); });
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

EMBER_CPU_DEFINE_KERNELS(Spatial, spatial)

}  // namespace ember::cpu
