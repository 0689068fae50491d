#include "ember/core/dtype.h"

#include <string>

#include "ember/core/error.h"

namespace ember {

namespace {
constexpr std::string_view kNames[kNumDTypes] = {"f64", "f32", "f16", "bf16", "i64",
                                                 "i32", "i16", "i8",  "u8",   "bool"};
}

std::string_view name(DType t) { return kNames[static_cast<int>(t)]; }

DType dtype_from_name(std::string_view s) {
  for (int i = 0; i < kNumDTypes; ++i)
    if (kNames[i] == s) return static_cast<DType>(i);
  throw DTypeError("[dtype] unknown element type '" + std::string(s) + "'");
}

}  // namespace ember
