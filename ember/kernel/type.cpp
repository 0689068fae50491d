#include "ember/kernel/type.h"

namespace ember::kernel {

std::string_view name(ScalarType s) {
  switch (s) {
    case ScalarType::Void:
      return "void";
    case ScalarType::Bool:
      return "bool";
    case ScalarType::I8:
      return "i8";
    case ScalarType::U8:
      return "u8";
    case ScalarType::I16:
      return "i16";
    case ScalarType::I32:
      return "i32";
    case ScalarType::U32:
      return "u32";
    case ScalarType::I64:
      return "i64";
    case ScalarType::F16:
      return "f16";
    case ScalarType::BF16:
      return "bf16";
    case ScalarType::F32:
      return "f32";
    case ScalarType::F64:
      return "f64";
  }
  return "?";
}

std::string name(Type t) {
  std::string s(name(t.scalar));
  if (t.width != 1) s += "x" + std::to_string(t.width);
  return s;
}

ScalarType scalar_of(DType t) {
  switch (t) {
    case DType::F64:
      return ScalarType::F64;
    case DType::F32:
      return ScalarType::F32;
    case DType::F16:
      return ScalarType::F16;
    case DType::BF16:
      return ScalarType::BF16;
    case DType::I64:
      return ScalarType::I64;
    case DType::I32:
      return ScalarType::I32;
    case DType::I16:
      return ScalarType::I16;
    case DType::I8:
      return ScalarType::I8;
    case DType::U8:
      return ScalarType::U8;
    case DType::Bool:
      return ScalarType::Bool;
  }
  return ScalarType::Void;
}

}  // namespace ember::kernel
