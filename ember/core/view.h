// Views of strided tensors: what the movement ops (reshape, permute, expand, slice, flip) do
// to a tensor seen as a shape, strides (in elements, 0 for broadcast, negative for flip) and
// an offset into a shared buffer. One place for the arithmetic of every backend that keeps
// views (the CPU and CUDA backends); the op's attributes are the ones `infer` normalized.
//
//   Dims st;
//   bool view = ember::reshape_strides(Shape{2, 3}, Dims{3, 1}, Shape{6}, st);  // true, st {1}
//   Dims strides{3, 1};
//   int64_t offset = 0;
//   Op flip{OpCode::Flip, {}};
//   flip.attrs.dims = {1};
//   ember::apply_view(flip, Shape{2, 3}, Shape{2, 3}, strides, offset);  // {3, -1}, offset 2
//   ember::ReduceLayout r = ember::reduce_layout(Shape{4, 5, 6}, {1});    // 4 x 5 x 6, in place
//   ember::ReduceLayout q = ember::reduce_layout(Shape{4, 5, 6}, {0, 2}); // order {1, 0, 2}
#pragma once
#include "ember/core/export.h"
#include "ember/core/shape.h"
#include "ember/ops/op.h"

namespace ember {

/// Strides that show a tensor of shape `from` and strides `strides` as `to` without a copy,
/// when its element order allows it (the old dims are grouped into runs that are contiguous
/// within, and the new dims must tile each run). False: the reshape needs a copy.
EMBER_API bool reshape_strides(const Shape& from, const Dims& strides, const Shape& to, Dims& out);

/// Applies a movement op (Reshape, Permute, Expand, Slice or Flip; input shape `in`, output
/// shape `out`) to the strides and offset in place. Returns false, changing nothing, for a
/// reshape that needs a copy: the caller makes the tensor contiguous instead. Throws for any
/// other op.
EMBER_API bool apply_view(const Op& op, const Shape& in, const Shape& out, Dims& strides,
                          int64_t& offset);

/// How a reduction over `dims` (empty: every dim) walks a tensor of shape `s`. When the
/// reduced dims form one block (dims of size 1 aside), `order` is empty and the tensor, made
/// contiguous, is [outer, size, inner] with the middle dim reduced. Otherwise `order` lists the
/// kept dims, then the reduced ones: permuted so and made contiguous, it is [outer, size]
/// (inner is 1).
struct ReduceLayout {
  Dims order;
  int64_t outer = 1, size = 1, inner = 1;
};
EMBER_API ReduceLayout reduce_layout(const Shape& s, const Dims& dims);

}  // namespace ember
