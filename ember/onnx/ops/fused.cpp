// ember's own nodes, made by the graph passes (passes.h): ember.Linear (x @ w + b) and
// ember.Attention (softmax(q k^T * scale) v through the op table's attention op).
#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

std::vector<RValue> linear(Ctx& c) {
  Tn y = c.in(0).matmul(c.in(1));
  if (c.has(2)) y = y + c.in(2);
  return {RValue::of(y)};
}

std::vector<RValue> attention(Ctx& c) {
  OpAttrs a;
  a.scalar = Scalar(c.attr_f("scale", 1.0));
  a.flag = false;
  return {RValue::of(op(OpCode::Attention, std::move(a), {c.in(0), c.in(1), c.in(2)}))};
}

}  // namespace

void register_fused_ops(OpRegistry& r) {
  r["ember.Linear"] = linear;
  r["ember.Attention"] = attention;
}

}  // namespace ember::onnx::detail
