// Scan kernels written against the kernel IR: cumsum, cumprod, cummax and cummin of a
// [outer, size, inner] view along its middle dim, any strides, into a dense output of the
// same shape. Two layouts:
//  ThreadPerRow  one thread scans one (outer, inner) row in order: best when there are many
//                rows (inner > 1 keeps neighbouring threads on neighbouring elements);
//  GroupPerRow   one workgroup per row, `workgroup` elements at a time: a scan in shared
//                memory (Hillis-Steele) plus the carry of the previous chunks; for few long
//                rows. The workgroup must be a power of two.
//
//   kernel::ScanSpec s{OpCode::CumSum, DType::F32};
//   s.layout = kernel::ScanSpec::GroupPerRow;
//   kernel::Kernel k = kernel::scan_kernel(s);
//
// Parameters, in order: x, out, outer, size, inner, x's strides for the three dims
// (outer_stride, size_stride, inner_stride, in elements). Index parameters are i32, or i64
// with `wide_index`. f16/bf16 accumulate in f32, other types in themselves (ints wrap);
// cummax/cummin propagate NaN, as the CPU backend. ThreadPerRow: launch any number of
// workgroups (threads loop over rows); GroupPerRow: any number (workgroups loop over rows).
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct ScanSpec {
  enum Layout : uint8_t { ThreadPerRow, GroupPerRow };
  OpCode op = OpCode::CumSum;  // CumSum, CumProd, CumMax or CumMin
  DType dtype = DType::F32;    // numbers (not bool)
  Layout layout = ThreadPerRow;
  bool wide_index = false;
  int workgroup = 256;
};

/// The kernel (ValueError for an op that is not a scan, bool, or a bad workgroup).
EMBER_API Kernel scan_kernel(const ScanSpec& spec);

}  // namespace ember::kernel
