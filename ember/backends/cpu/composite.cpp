// Fused CPU kernels for composite ops. Ops not listed here use their decomposition.
#include "ember/backends/cpu/kernels.h"

namespace ember::cpu {

bool has_composite_kernel(OpCode) { return false; }

CpuTensor composite(const Op& op, Inputs, const TensorMeta&) {
  throw Error("[" + std::string(name(op.code)) + "] has no cpu kernel");
}

}  // namespace ember::cpu
