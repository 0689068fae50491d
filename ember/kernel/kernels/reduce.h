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
  int workgroup = 256;  // a multiple of 32 (a power of two for prod, argmax, argmin and splits)
  /// Whole: a workgroup per output (above). Partial and Finish: the two passes of a split
  /// reduction, for few outputs with long rows, where a workgroup per output leaves the GPU
  /// idle (see below).
  enum Stage : uint8_t { Whole, Partial, Finish } stage = Whole;
  /// Partial only: rows are dense (size_stride 1) and x, outer_stride and chunk are multiples
  /// of reduce_vector_width(dtype) elements: 16-byte loads.
  bool vector = false;
};

/// The kernel (ValueError for an op or dtype without one).
EMBER_API Kernel reduce_kernel(const ReduceSpec& spec);

// A split reduction cuts each row into `splits` chunks of `chunk` elements (the last may be
// shorter; splits = ceil(size / chunk)). Partial: a workgroup per (output, chunk) pair, looping
// when there are fewer workgroups, writes the chunk's result in the accumulator type to
// partial[output * splits + chunk] (argmax/argmin: the value and its index along the row, an i64
// in partial_index). Finish: a workgroup per output combines its `splits` partial results.
// The argument rule (first extreme, first NaN) holds across chunks: indices decide ties.
//
// Partial parameters: x, partial, [partial_index,] outer, size, inner, outer_stride,
// size_stride, inner_stride, chunk, splits.
// Finish parameters: partial, [partial_index,] out, outputs, splits.

/// The type of a split reduction's partial results: f32 for f16/bf16, i64 for integer sums and
/// products, u8 for bool max/min, the dtype otherwise.
EMBER_API ScalarType reduce_accumulator(OpCode op, DType dtype);
/// Elements of `dtype` in a 16-byte load of the vector Partial path (1: no vector path).
EMBER_API int reduce_vector_width(DType dtype);

}  // namespace ember::kernel
