#include "ember/kernel/type.h"

namespace ember::kernel {

std::string_view name(Scalar s) {
  switch (s) {
    case Scalar::Void:
      return "void";
    case Scalar::Bool:
      return "bool";
    case Scalar::I8:
      return "i8";
    case Scalar::U8:
      return "u8";
    case Scalar::I16:
      return "i16";
    case Scalar::I32:
      return "i32";
    case Scalar::U32:
      return "u32";
    case Scalar::I64:
      return "i64";
    case Scalar::F16:
      return "f16";
    case Scalar::BF16:
      return "bf16";
    case Scalar::F32:
      return "f32";
    case Scalar::F64:
      return "f64";
  }
  return "?";
}

std::string name(Type t) {
  std::string s(name(t.scalar));
  if (t.width != 1) s += "x" + std::to_string(t.width);
  return s;
}

Scalar scalar_of(DType t) {
  switch (t) {
    case DType::F64:
      return Scalar::F64;
    case DType::F32:
      return Scalar::F32;
    case DType::F16:
      return Scalar::F16;
    case DType::BF16:
      return Scalar::BF16;
    case DType::I64:
      return Scalar::I64;
    case DType::I32:
      return Scalar::I32;
    case DType::I16:
      return Scalar::I16;
    case DType::I8:
      return Scalar::I8;
    case DType::U8:
      return Scalar::U8;
    case DType::Bool:
      return Scalar::Bool;
  }
  return Scalar::Void;
}

}  // namespace ember::kernel
