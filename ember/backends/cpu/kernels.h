// Internal: the CPU kernel families, one file each, called from Cpu::run.
#pragma once
#include "ember/backends/cpu/strided.h"

namespace ember::cpu {

using Inputs = std::span<CpuTensor>;

CpuTensor create(const Op& op, const TensorMeta& out);
CpuTensor unary(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor binary(const Op& op, Inputs in, const TensorMeta& out);  // also Compare
CpuTensor where(Inputs in, const TensorMeta& out);
CpuTensor cast(Inputs in, const TensorMeta& out);
CpuTensor reduce(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor scan(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor argsort(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor movement(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor index(const Op& op, Inputs in, const TensorMeta& out);
CpuTensor matmul(Inputs in, const TensorMeta& out);
/// Conv, pooling, interpolation, unfold/fold (spatial.cpp, conv.cpp, pool.cpp, interpolate.cpp).
CpuTensor spatial(const Op& op, Inputs in, const TensorMeta& out);
/// Fused kernels for composite ops (softmax, log_softmax, ...).
CpuTensor composite(const Op& op, Inputs in, const TensorMeta& out);
bool has_composite_kernel(OpCode c);
/// The attention op, fused (attention.cpp).
CpuTensor attention(const Op& op, Inputs in, const TensorMeta& out);

/// Copies `src` (any strides) into `dst` (any strides) of the same shape and dtype.
void copy_into(const CpuTensor& src, const CpuTensor& dst);

}  // namespace ember::cpu
