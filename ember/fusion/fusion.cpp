#include "ember/fusion/fusion.h"

namespace ember::fusion {

bool elementwise_composite(OpCode c) { return c == OpCode::Gelu || c == OpCode::Silu; }

bool recordable(OpCode c) {
  switch (info(c).family) {
    case OpFamily::Unary:
    case OpFamily::Binary:
    case OpFamily::Compare:
    case OpFamily::Where:
    case OpFamily::Cast:
      return true;
    default:
      return c == OpCode::Full || elementwise_composite(c);
  }
}

namespace detail {
void throw_failed(const std::string& why) {
  throw Error("[fusion] this tensor's deferred op failed: " + why);
}
}  // namespace detail

}  // namespace ember::fusion
