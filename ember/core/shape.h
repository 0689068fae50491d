// Shape: the extent of each dim, and helpers shared by every backend (element counts,
// contiguous strides, dim wrapping, broadcasting).
//
//   Shape s{2, 3, 4};   s.numel() == 24;   s.to_string() == "[2, 3, 4]";
//   broadcast_shapes(Shape{2, 1, 4}, Shape{3, 1}) == Shape{2, 3, 4};
//   Shape{1 << 40, 1 << 40}.numel();   // throws ShapeError: the count does not fit int64
//
// Invariant: a shape that reaches a tensor has non-negative dims whose product, with zero
// dims counted as 1, fits int64, and so does its byte size (`byte_size`). Strides and
// offsets of such a tensor then fit int64 too, which every kernel relies on.
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/core/export.h"
#include "ember/core/small_vec.h"

namespace ember {

using Dims = SmallVec<int64_t, 6>;

class EMBER_API Shape {
 public:
  Shape() = default;
  Shape(std::initializer_list<int64_t> d) : dims_(d) {}
  explicit Shape(Dims d) : dims_(std::move(d)) {}
  explicit Shape(std::span<const int64_t> d) : dims_(d) {}

  size_t rank() const { return dims_.size(); }
  int64_t operator[](size_t i) const { return dims_[i]; }
  int64_t& operator[](size_t i) { return dims_[i]; }
  /// Product of the dims (1 for rank 0). Throws ShapeError when the product of the dims
  /// (zero dims counted as 1, so that strides fit too) overflows int64.
  int64_t numel() const;
  const Dims& dims() const { return dims_; }
  Dims& dims() { return dims_; }
  auto begin() const { return dims_.begin(); }
  auto end() const { return dims_.end(); }
  std::string to_string() const;
  friend bool operator==(const Shape& a, const Shape& b) { return a.dims_ == b.dims_; }

 private:
  Dims dims_;
};

/// Whether a shape meets the invariant above, or the first rule it breaks.
enum class SizeFit { Fits, NegativeDim, TooManyElements, TooManyBytes };
/// Checks the invariant without throwing; when it fits, `*bytes` (if given) = numel * elem_size.
EMBER_API SizeFit size_fit(const Shape& s, size_t elem_size, int64_t* bytes = nullptr);
/// numel() * elem_size, checked: throws ValueError (a negative dim) or ShapeError (elements or
/// bytes that do not fit int64) naming `op`.
EMBER_API int64_t byte_size(const Shape& s, size_t elem_size, std::string_view op = "shape");

/// Row-major strides (in elements) of a contiguous tensor of this shape.
EMBER_API Dims contiguous_strides(const Shape& s);
/// Whether `strides` lay a tensor of shape `s` out row-major and dense (a dim of size 1 may
/// have any stride; an empty tensor is dense).
EMBER_API bool is_dense(const Shape& s, const Dims& strides);
/// The strides of a tensor of shape `s` read as shape `to` it broadcasts to (0 where `s` has a
/// 1 or no dim).
EMBER_API Dims broadcast_strides(const Shape& s, const Dims& strides, const Shape& to);
/// Maps a possibly negative dim into [0, rank); throws IndexError naming `op` if out of range.
EMBER_API int64_t wrap_dim(int64_t dim, int64_t rank, std::string_view op);
/// Numpy broadcasting of two shapes; throws ShapeError naming `op` when they do not broadcast.
EMBER_API Shape broadcast_shapes(const Shape& a, const Shape& b, std::string_view op = "broadcast");

}  // namespace ember
