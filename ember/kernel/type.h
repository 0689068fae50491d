// Element and vector types of the kernel IR. A `Type` is a scalar type and a vector width
// (1, 2, 4 or 8 lanes); `void` is the type of instructions that define no value.
//
//   kernel::Type t = kernel::Type::vec(kernel::ScalarType::F32, 4);
//   kernel::name(t) == "f32x4";  kernel::byte_size(t) == 16;
//   kernel::scalar_of(DType::BF16) == kernel::ScalarType::BF16;
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/core/dtype.h"
#include "ember/core/export.h"

namespace ember::kernel {

enum class ScalarType : uint8_t { Void, Bool, I8, U8, I16, I32, U32, I64, F16, BF16, F32, F64 };

struct Type {
  ScalarType scalar = ScalarType::Void;
  uint8_t width = 1;  // lanes: 1 (scalar), 2, 4 or 8

  constexpr Type() = default;
  constexpr Type(ScalarType s) : scalar(s) {}  // NOLINT(google-explicit-constructor)
  static constexpr Type vec(ScalarType s, int w) {
    Type t(s);
    t.width = static_cast<uint8_t>(w);
    return t;
  }
  constexpr Type lane() const { return Type(scalar); }
  constexpr Type with_width(int w) const { return vec(scalar, w); }
  constexpr bool is_void() const { return scalar == ScalarType::Void; }
  constexpr bool is_vector() const { return width > 1; }
  friend constexpr bool operator==(const Type&, const Type&) = default;
};

constexpr bool is_float(ScalarType s) {
  return s == ScalarType::F16 || s == ScalarType::BF16 || s == ScalarType::F32 ||
         s == ScalarType::F64;
}
constexpr bool is_int(ScalarType s) {
  return s == ScalarType::I8 || s == ScalarType::U8 || s == ScalarType::I16 ||
         s == ScalarType::I32 || s == ScalarType::U32 || s == ScalarType::I64;
}
constexpr bool is_signed(ScalarType s) {
  return s == ScalarType::I8 || s == ScalarType::I16 || s == ScalarType::I32 ||
         s == ScalarType::I64 || is_float(s);
}
constexpr bool is_half(ScalarType s) { return s == ScalarType::F16 || s == ScalarType::BF16; }
/// Bytes of one lane (bool: 1; void: 0).
constexpr int byte_size(ScalarType s) {
  switch (s) {
    case ScalarType::Void:
      return 0;
    case ScalarType::Bool:
    case ScalarType::I8:
    case ScalarType::U8:
      return 1;
    case ScalarType::I16:
    case ScalarType::F16:
    case ScalarType::BF16:
      return 2;
    case ScalarType::I32:
    case ScalarType::U32:
    case ScalarType::F32:
      return 4;
    default:
      return 8;
  }
}
constexpr int byte_size(Type t) { return byte_size(t.scalar) * t.width; }
constexpr bool is_float(Type t) { return is_float(t.scalar); }
constexpr bool is_int(Type t) { return is_int(t.scalar); }
constexpr bool is_bool(Type t) { return t.scalar == ScalarType::Bool; }

/// "f32", "i64", "bool", "void".
EMBER_API std::string_view name(ScalarType s);
/// "f32", "f16x4".
EMBER_API std::string name(Type t);
/// The kernel scalar of an ember element type.
EMBER_API ScalarType scalar_of(DType t);

}  // namespace ember::kernel
