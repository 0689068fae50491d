// Internal: ember's op families on a GPU runtime (runtime.h), one file each, written once for
// every GPU backend (CUDA, Vulkan); `run` is the op switch a backend's run() calls.
#pragma once
#include <optional>
#include <vector>

#include "ember/backends/gpu/runtime.h"
#include "ember/core/tensor_data.h"
#include "ember/fusion/program.h"

namespace ember::gpu {

using Inputs = std::span<GpuTensor>;

/// Runs `op` on `d` (the inputs live there); errors name the op, the device and the inputs.
EMBER_API GpuTensor run(const Op& op, Inputs in, const TensorMeta& out, Runtime& d);
/// A dense tensor on `d` holding `data`.
EMBER_API GpuTensor from_data(const TensorData& data, Runtime& d);
/// The tensor's elements, after the work queued before (its errors show here).
EMBER_API TensorData to_data(const GpuTensor& t);
/// The composites with a kernel of their own (the rest decompose).
EMBER_API bool supports(OpCode c);
/// Fusion: whether an op may join a fused program, and a program run as one generated kernel
/// (fused.cpp; docs/fusion.md).
EMBER_API bool can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out);
EMBER_API std::vector<GpuTensor> run_fused(const fusion::Program& p, std::span<GpuTensor> in,
                                           Runtime& d);

GpuTensor create(const Op& op, const TensorMeta& out, Runtime& d);
GpuTensor elementwise(const Op& op, Inputs in, const TensorMeta& out);  // unary, binary, compare
GpuTensor where(Inputs in, const TensorMeta& out);
GpuTensor cast(Inputs in, const TensorMeta& out);
GpuTensor reduce(const Op& op, Inputs in, const TensorMeta& out);
GpuTensor scan(const Op& op, Inputs in, const TensorMeta& out);
GpuTensor movement(const Op& op, Inputs in, const TensorMeta& out);
GpuTensor matmul(const Op& op, Inputs in, const TensorMeta& out);
/// matmul with a bias (n elements, added to every row), a residual (laid out as the dense
/// output) and a relu as the GEMM's epilogue (0 / false: none); nullopt, nothing run, where the
/// runtime has no such GEMM.
std::optional<GpuTensor> matmul_epilogue(const Op& op, Inputs in, const TensorMeta& out,
                                         Address bias, Address residual, bool relu);
/// Fusion's matmul epilogues (epilogue.cpp): the matmul `mm` of `ab`, whose product is input
/// `product` of `p` (in[product] is empty), with the steps of `p` that add a bias or a residual
/// to it and then take the relu run as the GEMM's epilogue, the rest of `p` as a fused kernel.
/// Returns p's outputs (run_fused's order); nullopt, nothing run, where no step fits.
EMBER_API std::optional<std::vector<GpuTensor>> run_epilogue(const Op& mm, Inputs ab,
                                                             const fusion::Program& p, int product,
                                                             std::span<GpuTensor> in, Runtime& d);
GpuTensor index(const Op& op, Inputs in, const TensorMeta& out);  // cat .. index_add
GpuTensor sort(const Op& op, Inputs in, const TensorMeta& out);   // argsort
/// Softmax, LogSoftmax, LogSumExp, LayerNorm and RmsNorm (supports), one kernel each.
GpuTensor composite(const Op& op, Inputs in, const TensorMeta& out);
/// Pooling, interpolate, unfold/fold and the conv family (spatial.cpp).
GpuTensor spatial(const Op& op, Inputs in, const TensorMeta& out);
/// A dense copy of `t` (any strides) by the strided-copy kernel.
EMBER_API GpuTensor copy_strided(const GpuTensor& t);

}  // namespace ember::gpu
