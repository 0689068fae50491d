// Element and vector types of the kernel IR. A `Type` is a scalar type and a vector width
// (1, 2, 4 or 8 lanes); `void` is the type of instructions that define no value.
//
//   kernel::Type t = kernel::Type::vec(kernel::Scalar::F32, 4);
//   kernel::name(t) == "f32x4";  kernel::byte_size(t) == 16;
//   kernel::scalar_of(DType::BF16) == kernel::Scalar::BF16;
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/core/dtype.h"
#include "ember/core/export.h"

namespace ember::kernel {

enum class Scalar : uint8_t { Void, Bool, I8, U8, I16, I32, U32, I64, F16, BF16, F32, F64 };

struct Type {
  Scalar scalar = Scalar::Void;
  uint8_t width = 1;  // lanes: 1 (scalar), 2, 4 or 8

  constexpr Type() = default;
  constexpr Type(Scalar s) : scalar(s) {}  // NOLINT(google-explicit-constructor)
  static constexpr Type vec(Scalar s, int w) {
    Type t(s);
    t.width = static_cast<uint8_t>(w);
    return t;
  }
  constexpr Type lane() const { return Type(scalar); }
  constexpr Type with_width(int w) const { return vec(scalar, w); }
  constexpr bool is_void() const { return scalar == Scalar::Void; }
  constexpr bool is_vector() const { return width > 1; }
  friend constexpr bool operator==(const Type&, const Type&) = default;
};

constexpr bool is_float(Scalar s) {
  return s == Scalar::F16 || s == Scalar::BF16 || s == Scalar::F32 || s == Scalar::F64;
}
constexpr bool is_int(Scalar s) {
  return s == Scalar::I8 || s == Scalar::U8 || s == Scalar::I16 || s == Scalar::I32 ||
         s == Scalar::U32 || s == Scalar::I64;
}
constexpr bool is_signed(Scalar s) {
  return s == Scalar::I8 || s == Scalar::I16 || s == Scalar::I32 || s == Scalar::I64 || is_float(s);
}
constexpr bool is_half(Scalar s) { return s == Scalar::F16 || s == Scalar::BF16; }
/// Bytes of one lane (bool: 1; void: 0).
constexpr int byte_size(Scalar s) {
  switch (s) {
    case Scalar::Void:
      return 0;
    case Scalar::Bool:
    case Scalar::I8:
    case Scalar::U8:
      return 1;
    case Scalar::I16:
    case Scalar::F16:
    case Scalar::BF16:
      return 2;
    case Scalar::I32:
    case Scalar::U32:
    case Scalar::F32:
      return 4;
    default:
      return 8;
  }
}
constexpr int byte_size(Type t) { return byte_size(t.scalar) * t.width; }
constexpr bool is_float(Type t) { return is_float(t.scalar); }
constexpr bool is_int(Type t) { return is_int(t.scalar); }
constexpr bool is_bool(Type t) { return t.scalar == Scalar::Bool; }

/// "f32", "i64", "bool", "void".
EMBER_API std::string_view name(Scalar s);
/// "f32", "f16x4".
EMBER_API std::string name(Type t);
/// The kernel scalar of an ember element type.
EMBER_API Scalar scalar_of(DType t);

}  // namespace ember::kernel
