// Element types. `DType` is the runtime tag; `dispatch_dtype` maps it to a C++ type inside
// .cpp files so templates stay out of user builds.
//
//   DType t = DType::F32;  size_of(t) == 4;  name(t) == "f32";
//   dispatch_dtype(t, [&]<class T>() { /* T is float */ });
#pragma once
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "ember/core/export.h"
#include "ember/core/half.h"

namespace ember {

enum class DType : uint8_t { F64, F32, F16, BF16, I64, I32, I16, I8, U8, Bool };
inline constexpr int kNumDTypes = 10;

EMBER_API std::string_view name(DType t);
/// Parses "f32", "i64", "bool", ...; throws DTypeError on an unknown name.
EMBER_API DType dtype_from_name(std::string_view s);

constexpr int size_of(DType t) {
  switch (t) {
    case DType::F64:
    case DType::I64:
      return 8;
    case DType::F32:
    case DType::I32:
      return 4;
    case DType::F16:
    case DType::BF16:
    case DType::I16:
      return 2;
    default:
      return 1;
  }
}
constexpr bool is_float(DType t) {
  return t == DType::F64 || t == DType::F32 || t == DType::F16 || t == DType::BF16;
}
constexpr bool is_int(DType t) {
  return t == DType::I64 || t == DType::I32 || t == DType::I16 || t == DType::I8 || t == DType::U8;
}
constexpr bool is_bool(DType t) { return t == DType::Bool; }

template <class T>
constexpr DType dtype_of() {
  if constexpr (std::is_same_v<T, double>)
    return DType::F64;
  else if constexpr (std::is_same_v<T, float>)
    return DType::F32;
  else if constexpr (std::is_same_v<T, f16>)
    return DType::F16;
  else if constexpr (std::is_same_v<T, bf16>)
    return DType::BF16;
  else if constexpr (std::is_same_v<T, int64_t>)
    return DType::I64;
  else if constexpr (std::is_same_v<T, int32_t>)
    return DType::I32;
  else if constexpr (std::is_same_v<T, int16_t>)
    return DType::I16;
  else if constexpr (std::is_same_v<T, int8_t>)
    return DType::I8;
  else if constexpr (std::is_same_v<T, uint8_t>)
    return DType::U8;
  else if constexpr (std::is_same_v<T, bool>)
    return DType::Bool;
  else
    static_assert(sizeof(T) == 0, "not an ember element type");
}

/// Calls `f.template operator()<T>()` with the C++ type of `t`.
template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::F64:
      return f.template operator()<double>();
    case DType::F32:
      return f.template operator()<float>();
    case DType::F16:
      return f.template operator()<f16>();
    case DType::BF16:
      return f.template operator()<bf16>();
    case DType::I64:
      return f.template operator()<int64_t>();
    case DType::I32:
      return f.template operator()<int32_t>();
    case DType::I16:
      return f.template operator()<int16_t>();
    case DType::I8:
      return f.template operator()<int8_t>();
    case DType::U8:
      return f.template operator()<uint8_t>();
    default:
      return f.template operator()<bool>();
  }
}

}  // namespace ember
