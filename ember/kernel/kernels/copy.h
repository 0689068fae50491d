// Copy kernels written against the kernel IR: a strided view of any rank copied (and, when
// the element types differ, converted) into a dense or strided output. This is the
// "contiguous" kernel of movement ops, the cast op (every pair of dtypes, with the CPU
// backend's conversion rules: float to int truncates, saturates and maps NaN to 0; to bool is
// `!= 0`; f16/bf16 go through f32), and, with a strided output, cat and slice_assign.
//
//   kernel::CopySpec s{DType::BF16, DType::I32};   // cast bf16 -> i32
//   s.rank = 3;
//   kernel::Kernel k = kernel::copy_kernel(s);
//
// Parameters, in order: x, out, n (elements), shape0..shape{rank-1}, x_stride0.., then with
// `strided_out` out_stride0.. and out_offset (elements added to every output index). Strides
// are in elements (0 where x is broadcast). Without `strided_out` the output is dense in
// row-major order. Index parameters are i32, or i64 with `wide_index`. Launch any number of
// workgroups: the kernel loops over the elements.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct CopySpec {
  DType src = DType::F32;
  DType dst = DType::F32;    // differs from src: a cast
  int rank = 1;              // of the (collapsed) shape, 1 to 8
  bool strided_out = false;  // out_stride* and out_offset parameters
  bool wide_index = false;
  int workgroup = 256;
  /// A dense copy of 4-byte elements (src == dst, rank 1, no strides): 16 bytes a thread at a
  /// time, then the last n % 4 one by one. Parameters x, out, n only; both bases aligned to 16
  /// bytes.
  bool vector = false;
};

/// The kernel (ValueError for a rank out of range).
EMBER_API Kernel copy_kernel(const CopySpec& spec);

}  // namespace ember::kernel
