// ember's own nodes, made by the graph passes (passes.h): ember.Linear (x @ w + b) and
// ember.Attention (softmax(q k^T * scale) v through the op table's attention op).
#include "ember/onnx/ops/context.h"

namespace ember::onnx::detail {

namespace {

template <Backend B>
std::vector<RValue<B>> linear(Ctx<B>& c) {
  Tn<B> y = c.in(0).matmul(c.in(1));
  if (c.has(2)) y = y + c.in(2);
  return {RValue<B>::of(y)};
}

template <Backend B>
std::vector<RValue<B>> attention(Ctx<B>& c) {
  OpAttrs a;
  a.scalar = Scalar(c.attr_f("scale", 1.0));
  a.flag = false;
  return {RValue<B>::of(op<B>(OpCode::Attention, std::move(a), {c.in(0), c.in(1), c.in(2)}))};
}

}  // namespace

template <Backend B>
void register_fused_ops(OpRegistry<B>& r) {
  r["ember.Linear"] = linear<B>;
  r["ember.Attention"] = attention<B>;
}

template void register_fused_ops<Dispatch>(OpRegistry<Dispatch>&);
template void register_fused_ops<Autodiff<Dispatch>>(OpRegistry<Autodiff<Dispatch>>&);

}  // namespace ember::onnx::detail
