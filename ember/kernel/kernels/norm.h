// Layer norm and RMS norm written against the kernel IR, one kernel each: a row's statistics
// and its outputs in one launch, over rows of `size` contiguous elements (the normalized dims
// of x, flattened) that start `row_stride` elements apart. layer_norm takes the mean, then the
// biased variance as the mean of (x - mean)^2 (two passes over the values, not the sum of
// squares, which cancels), and writes (x - mean) * rsqrt(var + eps) * gamma + beta; rms_norm
// writes x * rsqrt(mean(x^2) + eps) * gamma. The same results as the decompositions
// (ops/decompose.h); f16/bf16 load and store their type and compute in f32.
// Two layouts:
//  GroupPerRow   a workgroup per row: subgroup (warp) sums, then shared memory across
//                subgroups; with `items` > 0 each thread keeps its `items` elements in
//                registers (rows up to items * workgroup), so x is read once, else it is
//                re-read for each pass;
//  ThreadPerRow  a thread per row, walking it in order (rows of a few elements).
// GroupPerRow with `items` and `vector`: each thread holds `items` 16-byte vectors of
// norm_vector_width(dtype) elements (rows up to items * width * workgroup), and x, gamma,
// beta and out move in vectors; needs size, row_stride and the element offsets of x, gamma,
// beta and out to be multiples of the width.
//
//   kernel::NormSpec s{OpCode::LayerNorm, DType::F32};
//   s.items = 4;
//   s.vector = true;                                   // rows up to 4 * 4 * 256 elements
//   kernel::Kernel k = kernel::norm_kernel(s);
//
// Parameters, in order: x, gamma, beta (layer_norm only), out, rows, size, row_stride (ix:
// i32, or i64 with `wide_index`), eps (f32, or f64 for f64). gamma and beta are dense [size];
// out is dense [rows, size]. Launch any number of workgroups: they (GroupPerRow) or their
// threads (ThreadPerRow) loop over the rows.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct NormSpec {
  enum Layout : uint8_t { GroupPerRow, ThreadPerRow };
  OpCode op = OpCode::LayerNorm;  // LayerNorm or RmsNorm
  DType dtype = DType::F32;       // f32, f64, f16, bf16
  Layout layout = GroupPerRow;
  int items = 0;  // GroupPerRow: elements (vectors) a thread holds in registers, up to 16
  bool wide_index = false;
  int workgroup = 256;  // GroupPerRow: a multiple of 32 up to 1024
  bool vector = false;  // GroupPerRow with items: 16-byte accesses (above)
};

/// Elements in one 16-byte vector of the vector path.
EMBER_API int norm_vector_width(DType dtype);

/// The kernel (ValueError for another op, a non-float dtype, a bad workgroup or items).
EMBER_API Kernel norm_kernel(const NormSpec& spec);

}  // namespace ember::kernel
