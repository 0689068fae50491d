// Checked size arithmetic. Every place a shape becomes an element count, a byte size, a
// stride or an offset multiplies and adds through these, so an overflow is an error that
// names what was computed, never a wrapped value.
//
//   int64_t n = checked_mul(rows, cols, "[matmul] output size");  // ShapeError on overflow
//   int64_t e = checked_add(in, 2 * pad, "[conv] padded input");   // (2 * pad checked too)
#pragma once
#include <cstdint>
#include <string_view>

#include "ember/core/export.h"

namespace ember {

/// Throws ShapeError: "`what` overflows int64".
[[noreturn]] EMBER_API void throw_size_overflow(std::string_view what);

inline int64_t checked_mul(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) throw_size_overflow(what);
  return r;
}
inline int64_t checked_add(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) throw_size_overflow(what);
  return r;
}
inline int64_t checked_sub(int64_t a, int64_t b, std::string_view what) {
  int64_t r;
  if (__builtin_sub_overflow(a, b, &r)) throw_size_overflow(what);
  return r;
}

}  // namespace ember
