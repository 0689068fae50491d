#include "ember/ops/op.h"

#include <array>
#include <cctype>

#include "ember/core/error.h"

namespace ember {

OpAttrs::OpAttrs() = default;
OpAttrs::OpAttrs(const OpAttrs&) = default;
OpAttrs::OpAttrs(OpAttrs&&) noexcept = default;
OpAttrs& OpAttrs::operator=(const OpAttrs&) = default;
OpAttrs& OpAttrs::operator=(OpAttrs&&) noexcept = default;
OpAttrs::~OpAttrs() = default;

namespace {

std::string snake_case(std::string_view camel) {
  std::string s;
  for (char c : camel) {
    if (std::isupper(static_cast<unsigned char>(c))) {
      if (!s.empty()) s += '_';
      s += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    } else {
      s += c;
    }
  }
  return s;
}

struct Table {
  std::array<std::string, kNumOps> names;
  std::array<OpInfo, kNumOps> infos;
  Table() {
    int i = 0;
// the grad column as {differentiable, grad_by_decomposition}
#define NONE false, false
#define GRADS(...) true, false
#define CALL(...) true, false
#define DECOMPOSE true, true
#define EMBER_OP(code, family, arity, accepts, result, save, grad)                 \
  names[i] = snake_case(#code);                                                    \
  infos[i] = OpInfo{names[i],           OpFamily::family, arity, Accepts::accepts, \
                    ResultType::result, Save::save,       grad};                   \
  ++i;
#include "ember/ops/op_table.def"
#undef EMBER_OP
#undef NONE
#undef GRADS
#undef CALL
#undef DECOMPOSE
  }
};

const Table& table() {
  static const Table t;
  return t;
}

}  // namespace

std::string_view name(PadMode m) {
  switch (m) {
    case PadMode::Constant:
      return "constant";
    case PadMode::Reflect:
      return "reflect";
    case PadMode::Replicate:
      return "replicate";
    case PadMode::Circular:
      return "circular";
  }
  return "unknown";
}

const OpInfo& info(OpCode c) { return table().infos[static_cast<size_t>(c)]; }

OpCode op_from_name(std::string_view s) {
  const auto& t = table();
  for (int i = 0; i < kNumOps; ++i)
    if (t.names[i] == s) return static_cast<OpCode>(i);
  throw ValueError("[op] unknown op '" + std::string(s) + "'");
}

bool is_elementwise(OpCode c) {
  switch (info(c).family) {
    case OpFamily::Unary:
    case OpFamily::Binary:
    case OpFamily::Compare:
    case OpFamily::Where:
    case OpFamily::Cast:
      return true;
    default:
      return false;
  }
}

}  // namespace ember

namespace ember::detail {

MemoryError memory_error(const Op& op, const TensorMeta& out, std::string_view what,
                         int64_t bytes) {
  int64_t out_bytes = -1;
  size_fit(out.shape, size_of(out.dtype), &out_bytes);
  std::string msg = "[";  // appends: GCC 12's -Wrestrict misfires on "literal" + std::string
  msg.append(name(op.code)).append("] ").append(what).append(" for output ");
  msg.append(out.shape.to_string()).append(" ").append(name(out.dtype));
  if (out_bytes >= 0) msg += " (" + std::to_string(out_bytes) + " bytes)";
  return MemoryError(msg, bytes >= 0 ? bytes : out_bytes);
}

}  // namespace ember::detail
