// Internal: kernels the GPU op layer writes itself against the kernel IR where the kernel
// layer (ember/kernel/kernels/) has none for its case. Each is a function from a small spec to a
// Kernel; tests/cuda/kernels_compile_test.cpp compiles every one with NVRTC.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::gpu::kernels {

/// Sum, Prod, Max, Min, ArgMax or ArgMin of a [outer, size, inner] view along its middle dim,
/// one thread per output (short rows, or reductions across rows: loads stay coalesced): x, out,
/// outer, size, inner, outer_stride, size_stride, inner_stride (i64).
EMBER_API kernel::Kernel seq_reduce_kernel(OpCode op, DType dtype);
/// A batched matmul for types the runtime's GEMM does not take (integers on CUDA), one thread per
/// output: a, b, out, batch, m, n, k, a_batch, a_row, a_col, b_batch, b_row, b_col (i64 strides).
EMBER_API kernel::Kernel naive_matmul_kernel(DType dtype);

}  // namespace ember::gpu::kernels
