// Reduction kernels written against the kernel IR: sum, max or min of a [outer, size, inner]
// view along its middle dim, any strides. One workgroup per output element (looping when
// there are fewer workgroups than outputs): each thread folds a strided part of the row,
// subgroup (warp) reductions combine the threads of a subgroup, shared memory the subgroups.
//
//   kernel::ReduceSpec s{OpCode::Sum, DType::F32};
//   kernel::Kernel k = kernel::reduce_kernel(s);
//
// Parameters: x, out (dense, outer * inner elements), outer, size, inner, then x's strides
// for the three dims (in elements). Index parameters are i32, or i64 with `wide_index`.
// Float sums accumulate in f32 (f64 for f64), integer sums in i64; max and min propagate NaN.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct ReduceSpec {
  OpCode op = OpCode::Sum;  // Sum, Max or Min
  DType dtype = DType::F32;
  bool wide_index = false;
  int workgroup = 256;  // a multiple of 32
};

/// The kernel (ValueError for an op or dtype without one).
EMBER_API Kernel reduce_kernel(const ReduceSpec& spec);

}  // namespace ember::kernel
