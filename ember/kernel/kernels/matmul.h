// A batched matmul written against the kernel IR, for targets without a vendor GEMM (Vulkan;
// CUDA uses cuBLASLt): C[b] = A[b] @ B[b] with A [M, K] and B [K, N] of any strides (a batch
// stride of 0 broadcasts), C dense [batch, M, N]. Each workgroup of 16 x 16 threads computes a
// 64 x 64 tile of C, a 4 x 4 block a thread, stepping through K in tiles of 16 staged in
// shared memory (out-of-range elements read as 0); workgroups loop over the tiles.
//
//   kernel::MatmulSpec s{DType::F32};
//   kernel::Kernel k = kernel::matmul_kernel(s);
//
// Parameters, in order: a, b, c, m, n, k, batch, then a's strides (batch, row, column), b's
// (batch, row, column), in elements. Index parameters are i32, or i64 with `wide_index`.
// Floats accumulate in f32 (f64 for f64), integers in i64 (the low bits are the result, as the
// CPU backend's wrapping arithmetic).
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct MatmulSpec {
  DType dtype = DType::F32;
  bool wide_index = false;
};

/// The kernel (ValueError for bool).
EMBER_API Kernel matmul_kernel(const MatmulSpec& spec);
/// Workgroups for m x n outputs in `batch` matrices (one per 64 x 64 tile, at most `cap`).
EMBER_API int64_t matmul_groups(int64_t m, int64_t n, int64_t batch, int64_t cap = 65535);

}  // namespace ember::kernel
