// A batched matmul written against the kernel IR, for targets without a vendor GEMM (Vulkan;
// CUDA uses cuBLASLt): C[b] = A[b] @ B[b] with A [M, K] and B [K, N] of any strides (a batch
// stride of 0 broadcasts), C dense [batch, M, N].
//
// Each workgroup computes a tile_m x tile_n tile of C, thread_m x thread_n outputs a thread,
// stepping through K in steps of `depth` staged in shared memory (two buffers: the next step's
// tiles are read from global memory into registers while this step's are multiplied, and
// written to the other buffer after; out-of-range elements read as 0). Workgroups loop over the
// tiles. A thread's outputs are 4-element groups (4 consecutive columns, spread over the tile so
// that a subgroup's shared-memory reads are conflict-free), read from shared memory as vectors.
//
//   kernel::MatmulSpec s{DType::F32};
//   s.tile_m = s.tile_n = 128, s.depth = 8, s.thread_m = s.thread_n = 8;
//   s.load_a = s.load_b = kernel::MatmulLoad::Vector;   // see MatmulLoad for what it needs
//   kernel::Kernel k = kernel::matmul_kernel(s);
//   int64_t groups = kernel::matmul_groups(s, 4096, 4096, 1);
//
// Parameters, in order: a, b, c, m, n, k, batch, then a's strides (batch, row, column), b's
// (batch, row, column), in elements. Index parameters are i32, or i64 with `wide_index`.
// Floats accumulate in f32 (f64 for f64), integers in i64 (the low bits are the result, as the
// CPU backend's wrapping arithmetic).
#pragma once
#include <cstdint>
#include <string>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

/// How an operand's tile is read from global memory.
enum class MatmulLoad : uint8_t {
  /// One element at a time, any strides.
  Scalar,
  /// 4 elements at a time along the dimension of the operand that is contiguous in shared
  /// memory: A's K (A row-major: column stride 1), B's N (B row-major: column stride 1).
  /// Needs that dimension's extent, the other stride and the batch stride to be multiples of 4
  /// and the base address aligned to 4 elements.
  Vector,
  /// 4 elements at a time along the other dimension: A's M (A column-major: row stride 1),
  /// B's K (B column-major: row stride 1, as the transposed weight of a linear layer), written
  /// to shared memory one by one. The same alignment needs, on that dimension.
  VectorTransposed,
};

struct EMBER_API MatmulSpec {
  DType dtype = DType::F32;
  bool wide_index = false;
  int tile_m = 64, tile_n = 64;    // C's tile a workgroup computes: multiples of the threads'
  int depth = 16;                  // the K step, a multiple of 4
  int thread_m = 4, thread_n = 4;  // C's outputs a thread computes: 4 or 8 each
  MatmulLoad load_a = MatmulLoad::Scalar, load_b = MatmulLoad::Scalar;
  bool vector_c = false;  // C written 4 columns at a time (needs n % 4 == 0, C aligned to 4)

  /// Threads a workgroup: (tile_m / thread_m) * (tile_n / thread_n).
  int threads() const { return (tile_m / thread_m) * (tile_n / thread_n); }
  /// Bytes of shared memory the kernel declares.
  int64_t shared_bytes() const;
  /// "128x128x8/8x8/vv": tile, depth, thread block and the loads (s scalar, v vector,
  /// t transposed), for names and tuner keys.
  std::string tag() const;
};

/// The kernel (ValueError for bool, or a tile shape the threads do not divide).
EMBER_API Kernel matmul_kernel(const MatmulSpec& spec);
/// Workgroups for m x n outputs in `batch` matrices: one per tile, at most `cap`.
EMBER_API int64_t matmul_groups(const MatmulSpec& spec, int64_t m, int64_t n, int64_t batch,
                                int64_t cap = 65535);

}  // namespace ember::kernel
