// A batched f16 matmul on cooperative matrices (tensor cores), for Vulkan devices that offer
// them: C[b] = A[b] @ B[b] with A [M, K] and B [K, N] of any strides, C dense [batch, M, N],
// accumulated in f32 and rounded to f16 once.
//
// Each workgroup computes a tile_m x tile_n tile of C with warps_m x warps_n subgroups, each a
// (tile_m / warps_m) x (tile_n / warps_n) block of frag_m x frag_n accumulators. K is walked
// `depth` at a time through shared memory, double-buffered as in matmul.h. Shared memory keeps
// each operand's tile in the layout it has in global memory (its contiguous dimension
// contiguous, rows padded by 8 elements), so staging copies 4 elements at a time where the
// operand allows and the fragments are read row- or column-major to match. Results go out
// through a small shared scratch per subgroup, with bounds checks.
//
//   kernel::CoopMatmulSpec s;                 // f16, 128 x 128 x 32, 2 x 4 subgroups of 32
//   s.vector_a = s.vector_b = true;           // both row-major, n and k multiples of 4
//   kernel::Kernel k = kernel::coop_matmul_kernel(s);
//   int64_t groups = kernel::coop_matmul_groups(s, 4096, 4096, 1);
//
// Parameters as matmul_kernel's: a, b, c, m, n, k, batch, then a's strides (batch, row,
// column) and b's, in elements.
#pragma once
#include <cstdint>
#include <string>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct EMBER_API CoopMatmulSpec {
  DType dtype = DType::F16;  // operands and result
  bool wide_index = false;
  int tile_m = 128, tile_n = 128, depth = 32;  // C's tile a workgroup computes; the K step
  int warps_m = 2, warps_n = 4;                // subgroups along M and N
  int subgroup = 32;                           // the device's subgroup size
  int frag_m = 16, frag_n = 16, frag_k = 16;   // a fragment shape the device offers
  bool a_col_major = false;  // A's contiguous dimension is M (row stride 1), else K
  bool b_col_major = false;  // B's contiguous dimension is K (row stride 1), else N
  /// 4-element loads along the contiguous dimension: needs its stride to be 1, its extent, the
  /// other stride and the batch stride to be multiples of 4, and the base aligned to 4 elements.
  bool vector_a = false, vector_b = false;

  int threads() const { return warps_m * warps_n * subgroup; }
  int64_t shared_bytes() const;
  /// "128x128x32/2x4/16x16x16/rr/vv": tile, subgroups, fragment, layouts, loads.
  std::string tag() const;
};

/// The kernel (ValueError for a dtype other than f16 or a shape the parts do not divide).
EMBER_API Kernel coop_matmul_kernel(const CoopMatmulSpec& spec);
/// Workgroups for m x n outputs in `batch` matrices: one per tile, at most `cap`.
EMBER_API int64_t coop_matmul_groups(const CoopMatmulSpec& spec, int64_t m, int64_t n,
                                     int64_t batch, int64_t cap = 65535);

}  // namespace ember::kernel
