#include "ember/fusion/fusion.h"

namespace ember::fusion {

bool elementwise_composite(OpCode c) { return c == OpCode::Gelu || c == OpCode::Silu; }

bool records(const Op& op, const TensorMeta* in0, const TensorMeta& out) {
  OpCode c = op.code;
  if (c == OpCode::Full) return out.shape.numel() == 1;
  if (elementwise_composite(c)) return true;
  if (!is_elementwise(c)) return false;
  if (info(c).family == OpFamily::Cast) return !op.attrs.flag;  // contiguous(): a dense copy
  return !((c == OpCode::Div || c == OpCode::Remainder) && in0 && is_int(in0->dtype));
}

namespace detail {
std::vector<Op> step_ops(const Program& p, size_t constant_rank) {
  std::vector<Op> ops;
  ops.reserve(p.steps.size());
  for (size_t i = 0; i < p.steps.size(); ++i) ops.push_back(step_op(p, i, constant_rank));
  return ops;
}

void throw_failed(const std::string& why) {
  throw Error("[fusion] this tensor's deferred op failed: " + why);
}
}  // namespace detail

}  // namespace ember::fusion
