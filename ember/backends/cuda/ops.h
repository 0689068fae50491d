// Internal: the CUDA op families, one file each, called from Cuda::run (tensor.cpp).
#pragma once
#include "ember/backends/cuda/runtime.h"

namespace ember::cuda::detail {

using Inputs = std::span<CudaTensor>;

CudaTensor create(const Op& op, const TensorMeta& out, int device);
CudaTensor elementwise(const Op& op, Inputs in, const TensorMeta& out);  // unary, binary, compare
CudaTensor where(Inputs in, const TensorMeta& out);
CudaTensor cast(Inputs in, const TensorMeta& out);
CudaTensor reduce(const Op& op, Inputs in, const TensorMeta& out);
CudaTensor scan(const Op& op, Inputs in, const TensorMeta& out);
CudaTensor movement(const Op& op, Inputs in, const TensorMeta& out);
CudaTensor matmul(const Op& op, Inputs in, const TensorMeta& out);
CudaTensor index(const Op& op, Inputs in, const TensorMeta& out);  // cat .. index_add
CudaTensor sort(const Op& op, Inputs in, const TensorMeta& out);   // argsort
/// Softmax, LogSoftmax, LogSumExp, LayerNorm and RmsNorm (Cuda::supports), one kernel each.
CudaTensor composite(const Op& op, Inputs in, const TensorMeta& out);
/// Pooling, interpolate, unfold/fold and the conv family (spatial.cpp).
CudaTensor spatial(const Op& op, Inputs in, const TensorMeta& out);
/// A dense copy of `t` (any strides) by the strided-copy kernel.
CudaTensor copy_strided(const CudaTensor& t);

}  // namespace ember::cuda::detail
