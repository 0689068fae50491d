// Internal: a value inside the ONNX runtime and generated code on backend B (the public
// Value with the handles wrapped): a tensor, a sequence of tensors, or none.
#pragma once
#include <vector>

#include "ember/onnx/runtime.h"
#include "ember/ops/dyn.h"

namespace ember::onnx::detail {

template <Backend B>
using Dyn = ember::detail::Dyn<B>;

template <Backend B>
struct RValue {
  Value::Kind kind = Value::Kind::None;
  Dyn<B> t;
  std::vector<Dyn<B>> seq;
  static RValue of(Dyn<B> t) { return {Value::Kind::Tensor, std::move(t), {}}; }
  static RValue sequence(std::vector<Dyn<B>> s) {
    return {Value::Kind::Sequence, {}, std::move(s)};
  }
};

}  // namespace ember::onnx::detail
