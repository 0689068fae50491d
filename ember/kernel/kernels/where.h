// The where kernel, written against the kernel IR: out = cond ? a : b elementwise, with numpy
// broadcasting through strides (0 along broadcast dims), or a dense path.
//
//   kernel::WhereSpec s{DType::F16};
//   s.rank = 2;
//   kernel::Kernel k = kernel::where_kernel(s);
//
// Parameters, in order: cond (bool), a, b, out, n (elements), then for the strided path
// shape0..shape{rank-1}, cond_stride0.., a_stride0.., b_stride0.. (elements, 0 where
// broadcast). The output is dense. Index parameters are i32, or i64 with `wide_index`.
// Launch any number of workgroups: the kernel loops over the elements.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct WhereSpec {
  DType dtype = DType::F32;  // of a, b and out
  int rank = 1;              // strided path: rank of the (collapsed) output, 1 to 8
  bool contiguous = false;   // every operand dense and of the output's shape
  bool wide_index = false;
  int workgroup = 256;
};

/// The kernel (ValueError for a rank out of range).
EMBER_API Kernel where_kernel(const WhereSpec& spec);

}  // namespace ember::kernel
