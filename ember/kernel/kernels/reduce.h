// Reduction kernels written against the kernel IR: sum, prod, max, min, argmax or argmin of a
// [outer, size, inner] view along its middle dim, any strides. One workgroup per output
// element (looping when there are fewer workgroups than outputs): each thread folds a strided
// part of the row; for sum, max and min subgroup (warp) reductions combine the threads of a
// subgroup and shared memory the subgroups; prod, argmax and argmin combine the threads in a
// shared-memory tree (their workgroup must be a power of two).
//
//   kernel::ReduceSpec s{OpCode::Sum, DType::F32};
//   kernel::Kernel k = kernel::reduce_kernel(s);
//
// Parameters: x, out (dense, outer * inner elements), outer, size, inner, then x's strides
// for the three dims (in elements). Index parameters are i32, or i64 with `wide_index`.
// Float sums and products accumulate in f32 (f64 for f64), integer ones in i64 (the low bits
// are the CPU's wrapping result); max and min propagate NaN. argmax/argmin write i64
// indices along the dim (out is an i64 buffer): the first extreme, NaN counting as the
// extreme (the first NaN wins), as the CPU backend and PyTorch.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct ReduceSpec {
  OpCode op = OpCode::Sum;  // Sum, Prod, Max, Min, ArgMax or ArgMin
  DType dtype = DType::F32;
  bool wide_index = false;
  int workgroup = 256;  // a multiple of 32 (a power of two for prod, argmax, argmin)
};

/// The kernel (ValueError for an op or dtype without one).
EMBER_API Kernel reduce_kernel(const ReduceSpec& spec);

}  // namespace ember::kernel
