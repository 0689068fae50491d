// Argsort written against the kernel IR: the i64 indices that sort each row of a
// [outer, size, inner] view along its middle dim (any strides), ascending or descending,
// stable, NaN above every number (first when descending), as the CPU backend and PyTorch.
// Two stages, both ordering by (value, index), a total order, so the unstable networks give
// the stable result:
//  Block  each workgroup sorts a tile of 2 * workgroup elements of one row in shared memory
//         (a bitonic network); rows of at most 2 * workgroup elements are then done;
//  Merge  one pass merges sorted runs of `width` elements pairwise into runs of 2 * width
//         (each thread places one element by a binary search in the other run). Run it with
//         width = 2 * workgroup (the Block tile), doubling, until width >= size, swapping
//         src and dst each pass: the result is in the buffer written last.
//
//   kernel::ArgsortSpec s{DType::F32};
//   s.descending = true;
//   kernel::Kernel block = kernel::argsort_kernel(s);
//   s.stage = kernel::ArgsortSpec::Merge;
//   kernel::Kernel merge = kernel::argsort_kernel(s);
//
// Parameters, in order (ix: i32, or i64 with `wide_index`):
//  Block  x, out (i64), outer, size, inner, outer_stride, size_stride, inner_stride: ix
//         (x's strides in elements; out dense [outer, size, inner]). Launch any number of
//         workgroups (they loop over the outer * inner * ceil(size / tile) tiles).
//  Merge  x, src (i64), dst (i64), outer, size, inner, outer_stride, size_stride,
//         inner_stride, width: ix. Launch any number of workgroups (threads loop over
//         the elements).
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct ArgsortSpec {
  enum Stage : uint8_t { Block, Merge };
  DType dtype = DType::F32;  // numbers (not bool)
  bool descending = false;
  Stage stage = Block;
  bool wide_index = false;
  int workgroup = 512;  // a power of two from 32 to 1024; the Block tile is twice this
};

/// Elements of a row that one Block workgroup sorts: 2 * workgroup.
inline int argsort_tile(const ArgsortSpec& s) { return 2 * s.workgroup; }
/// The kernel (ValueError for bool or a bad workgroup).
EMBER_API Kernel argsort_kernel(const ArgsortSpec& spec);

}  // namespace ember::kernel
