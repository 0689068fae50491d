#include "ember/fusion/fusion.h"

namespace ember::fusion {

bool elementwise_composite(OpCode c) { return c == OpCode::Gelu || c == OpCode::Silu; }

bool records(const Op& op, const TensorMeta* in0, const TensorMeta& out) {
  OpCode c = op.code;
  switch (info(c).family) {
    case OpFamily::Binary:
      return !((c == OpCode::Div || c == OpCode::Remainder) && in0 && is_int(in0->dtype));
    case OpFamily::Cast:  // contiguous() (flag) promises a dense copy: it runs at once
      return !op.attrs.flag;
    case OpFamily::Unary:
    case OpFamily::Compare:
    case OpFamily::Where:
      return true;
    default:
      return (c == OpCode::Full && out.shape.numel() == 1) || elementwise_composite(c);
  }
}

namespace detail {
void throw_failed(const std::string& why) {
  throw Error("[fusion] this tensor's deferred op failed: " + why);
}
}  // namespace detail

}  // namespace ember::fusion
