// Indexing kernels written against the kernel IR: gather, scatter (assign or add),
// index_select and index_add, with the CPU backend's semantics. Index values are data: an
// index out of [0, dim size) is skipped and reported in `error`, an i64 buffer of 2 elements
// the caller zeroes: error[0] becomes 1 and error[1] one of the bad indices (the backend then
// raises IndexError as the CPU backend does). Indices are i64 or i32 (`index`).
//
//   kernel::GatherSpec g{DType::F32};
//   g.rank = 2;
//   kernel::Kernel k = kernel::gather_kernel(g);
//
// Strides are in elements. ix: i32, or i64 with `wide_index`. Launch any number of workgroups:
// every kernel here loops over its elements. Parameters, in order:
//
// gather     x, indices, out, error, n: ix (elements of indices and out), dim_size,
//           x_dim_stride, shape0.. (indices' shape, `rank` dims), x_stride0.. (x's strides
//           with 0 at `dim`), indices_stride0... out (dense, indices' shape) at position p is
//           x at p with coordinate `dim` replaced by indices[p].
// scatter    out[p with dim replaced by indices[p]] = values[p] (Assign) or += (Add), p over
//           the indices' positions; out starts as a copy of x. Duplicates: the last position
//           in row-major order wins (Assign, as the CPU's serial loop), or every value adds.
//  Claim    indices, claim, error, n, dim_size, out_dim_stride, shape0.., indices_stride0..,
//           out_stride0.. (0 at dim). claim: an ix buffer laid out as out, filled with -1
//           first (a full kernel); each position p writes max(claim, p) at its target.
//  Assign   indices, values, claim, out, n, dim_size, out_dim_stride, shape0..,
//           indices_stride0.., values_stride0.., out_stride0..: run after Claim; the
//           position that claimed a target writes it.
//  Add      indices, values, out, error, n, dim_size, out_dim_stride, shape0..,
//           indices_stride0.., values_stride0.., out_stride0..: atomic adds into out, whose
//           element type is index_accumulator(dtype): f16/bf16 add into an f32 copy and
//           i8/u8/i16 into an i32 copy of x (cast back afterwards: copy.h), bool ORs.
// index_select  x, indices (1-d), out, error, outer, size, inner, count: ix, x_outer_stride,
//           x_size_stride, x_inner_stride, indices_stride. x is seen as [outer, size, inner]
//           around `dim`; out is dense [outer, count, inner]: out[o, k, i] = x[o, indices[k], i].
// index_add  indices (1-d), values, out, error, outer, size, inner, count, values_outer_stride,
//           values_size_stride, values_inner_stride, indices_stride: out (dense
//           [outer, size, inner], a copy of x, element type index_accumulator(dtype)) gets
//           out[o, indices[k], i] += values[o, k, i] by atomics.
//
// cat and slice_assign are copies into a strided view: copy_kernel with strided_out (copy.h).
// cat: one launch per input, out_offset = the input's start along dim * out's stride there.
// slice_assign: out = a copy of x, then values copied to out_stride[d] = out's stride * step[d],
// out_offset = sum of start[d] * out's stride.
#pragma once
#include "ember/core/export.h"
#include "ember/kernel/ir.h"
#include "ember/ops/op.h"

namespace ember::kernel {

struct GatherSpec {
  DType dtype = DType::F32;
  DType index = DType::I64;  // I64 or I32
  int rank = 1;              // of x, indices and out, 1 to 8
  bool wide_index = false;
  int workgroup = 256;
};

struct ScatterSpec {
  enum Mode : uint8_t { Claim, Assign, Add };
  DType dtype = DType::F32;  // of values (and x)
  DType index = DType::I64;
  int rank = 1;
  Mode mode = Add;
  bool wide_index = false;
  int workgroup = 256;
};

struct IndexSelectSpec {
  DType dtype = DType::F32;
  DType index = DType::I64;
  bool wide_index = false;
  int workgroup = 256;
};

struct IndexAddSpec {
  DType dtype = DType::F32;  // of values (and x)
  DType index = DType::I64;
  bool wide_index = false;
  int workgroup = 256;
};

/// The element type scatter (Add) and index_add accumulate in: f32 for f16/bf16, i32 for
/// i8/u8/i16 (targets have no atomics on them), the type itself otherwise.
EMBER_API DType index_accumulator(DType dtype);

EMBER_API Kernel gather_kernel(const GatherSpec& spec);
EMBER_API Kernel scatter_kernel(const ScatterSpec& spec);
EMBER_API Kernel index_select_kernel(const IndexSelectSpec& spec);
EMBER_API Kernel index_add_kernel(const IndexAddSpec& spec);

}  // namespace ember::kernel
