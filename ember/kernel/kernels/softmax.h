// Softmax, log_softmax and logsumexp written against the kernel IR, each one kernel: the
// max of a row, the sum of exp(x - max), then the outputs, over the middle dim of a
// [outer, size, inner] view (any strides). The results are the decompositions' (ops/decompose.h)
// including NaN and infinities: softmax and log_softmax shift by the max (a row of -inf or
// with +inf gives NaN), logsumexp by the max taken as 0 when it is infinite.
// Two layouts:
//  GroupPerRow   a workgroup per row: subgroup (warp) reductions, then shared memory across
//                subgroups; with `items` > 0 each thread keeps its `items` elements in
//                registers (rows up to items * workgroup), so x is read once;
//  ThreadPerRow  a thread per (outer, inner) row, walking it in order: for inner > 1, where
//                neighbouring threads read neighbouring elements.
// GroupPerRow with `items` and `vector`: each thread holds `items` 16-byte vectors of
// softmax_vector_width(dtype) elements (rows up to items * width * workgroup), read and written
// with vector accesses; needs inner = 1, size_stride = 1, and size, outer_stride and x's and
// out's element offsets multiples of the width.
//
//   kernel::SoftmaxSpec s{OpCode::Softmax, DType::F32};
//   s.items = 8;                                     // rows up to 8 * 256 elements
//   kernel::Kernel k = kernel::softmax_kernel(s);
//
// Parameters, in order: x, out, outer, size, inner, outer_stride, size_stride, inner_stride
// (x's, in elements; ix: i32, or i64 with `wide_index`). out is dense: [outer, size, inner]
// for softmax and log_softmax, [outer, inner] for logsumexp. f16/bf16 compute in f32. Launch
// any number of workgroups: they (GroupPerRow) or their threads (ThreadPerRow) loop over rows.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct SoftmaxSpec {
  enum Layout : uint8_t { GroupPerRow, ThreadPerRow };
  OpCode op = OpCode::Softmax;  // Softmax, LogSoftmax or LogSumExp
  DType dtype = DType::F32;     // f32, f64, f16, bf16
  Layout layout = GroupPerRow;
  int items = 0;  // GroupPerRow: elements a thread holds in registers (0: re-read x), up to 16
  bool wide_index = false;
  int workgroup = 256;  // GroupPerRow: a multiple of 32 up to 1024
  bool vector = false;  // GroupPerRow with items: 16-byte loads and stores (above)
};

/// Elements in one 16-byte vector of the vector path.
EMBER_API int softmax_vector_width(DType dtype);

/// The kernel (ValueError for another op, a non-float dtype or a bad workgroup).
EMBER_API Kernel softmax_kernel(const SoftmaxSpec& spec);

}  // namespace ember::kernel
