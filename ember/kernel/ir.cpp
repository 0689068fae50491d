#include "ember/kernel/ir.h"

#include <cstdio>

namespace ember::kernel {

namespace {
constexpr OpInfo kInfo[] = {
#define EMBER_KINST(code, nm, form, arity, effect) {nm, Form::form, arity, Effect::effect},
#include "ember/kernel/instructions.def"
#undef EMBER_KINST
};

std::string value_name(ValueId v) { return v == kNoValue ? "%?" : "%" + std::to_string(v); }

std::string const_text(const Inst& i) {
  if (is_float(i.type.scalar)) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.17g", i.fimm);
    return buf;
  }
  if (i.type.scalar == ScalarType::Bool) return i.imm ? "true" : "false";
  return std::to_string(i.imm);
}

std::string mem_name(const Kernel& k, const Inst& i) {
  if (i.space == Space::Shared)
    return i.ref < k.shared.size() ? "shared " + k.shared[i.ref].name : "shared #?";
  return i.ref < k.params.size() ? k.params[i.ref].name : "#?";
}

std::string frag_name(const Kernel& k, uint32_t f) {
  return f < k.fragments.size() ? k.fragments[f].name : "#?";
}
}  // namespace

const OpInfo& info(Op op) { return kInfo[static_cast<int>(op)]; }

std::string_view name(FragmentUse u) {
  switch (u) {
    case FragmentUse::A:
      return "a";
    case FragmentUse::B:
      return "b";
    default:
      return "acc";
  }
}

std::string_view name(Access a) {
  switch (a) {
    case Access::Read:
      return "read";
    case Access::Write:
      return "write";
    default:
      return "read_write";
  }
}

int64_t Kernel::shared_bytes() const {
  int64_t n = 0;
  for (const auto& s : shared) n += s.count * byte_size(s.type);
  return n;
}

Type result_type(Op op, const Type* args, int nargs) {
  const OpInfo& in = info(op);
  switch (in.form) {
    case Form::Geometry:
      return ScalarType::U32;
    case Form::Unary:
    case Form::Logic1:
    case Form::Math:
    case Form::Arith:
    case Form::Math2:
    case Form::Logic2:
    case Form::Shift:
    case Form::Fma:
    case Form::Shuffle:
    case Form::SubgroupReduce:
      return nargs > 0 ? args[0] : Type();
    case Form::Test:
    case Form::Compare:
      return nargs > 0 ? Type::vec(ScalarType::Bool, args[0].width) : Type(ScalarType::Bool);
    case Form::Select:
      return nargs > 1 ? args[1] : Type();
    case Form::Extract:
      return nargs > 0 ? args[0].lane() : Type();
    case Form::Atomic:
      return nargs > 1 ? args[1] : Type();
    case Form::AtomicCas:
      return nargs > 2 ? args[2] : Type();
    case Form::Ballot:
      return ScalarType::U32;
    default:
      return Type();
  }
}

std::string dump(const Kernel& k, const Inst& i) {
  const OpInfo& in = info(i.op);
  std::string s;
  if (i.result != kNoValue) s = value_name(i.result) + ":" + name(i.type) + " = ";
  s += in.name;
  auto args_from = [&](size_t first) {
    std::string a;
    for (size_t j = first; j < i.args.size(); ++j)
      a += (j > first ? ", " : " ") + value_name(i.args[j]);
    return a;
  };
  switch (in.form) {
    case Form::Leaf:
      if (i.op == Op::Const)
        s += " " + const_text(i);
      else
        s += " " + (i.ref < k.params.size() ? k.params[i.ref].name : std::string("#?"));
      break;
    case Form::Geometry:
      if (i.op != Op::SubgroupLane && i.op != Op::SubgroupSize) s += " " + std::to_string(i.ref);
      break;
    case Form::Extract:
      s += args_from(0) + ", " + std::to_string(i.ref);
      break;
    case Form::Load:
      s += " " + mem_name(k, i) + "[" + (i.args.empty() ? "%?" : value_name(i.args[0])) + "]";
      break;
    case Form::Store:
    case Form::Atomic:
    case Form::AtomicCas:
      s += " " + mem_name(k, i) + "[" + (i.args.empty() ? "%?" : value_name(i.args[0])) + "]," +
           args_from(1);
      break;
    case Form::VarRead:
    case Form::VarWrite:
      s += " " + (i.ref < k.vars.size() ? k.vars[i.ref].name : std::string("#?")) + args_from(0);
      break;
    case Form::FragFill:
      s += " " + frag_name(k, frag_of(i)) + "," + args_from(0);
      break;
    case Form::FragMemory:
      s += " " + frag_name(k, frag_of(i)) + ", " + mem_name(k, i) + "[" +
           (i.args.empty() ? "%?" : value_name(i.args[0])) + "], stride" + args_from(1) +
           (frag_col_major(i) ? ", col_major" : ", row_major");
      break;
    case Form::FragMma:
      s += " " + frag_name(k, frag_of(i)) + " += " + frag_name(k, mma_a(i)) + " * " +
           frag_name(k, mma_b(i));
      break;
    default:
      s += args_from(0);
  }
  return s;
}

std::string dump(const Kernel& k) {
  std::string s = "kernel " + k.name + " workgroup(" + std::to_string(k.workgroup[0]) + ", " +
                  std::to_string(k.workgroup[1]) + ", " + std::to_string(k.workgroup[2]) + ")\n";
  for (size_t p = 0; p < k.params.size(); ++p) {
    const Param& pa = k.params[p];
    s += "  param " + pa.name + ": ";
    if (pa.kind == Param::Buffer) {
      s += "buffer<" + name(pa.type) + "> " + std::string(name(pa.access));
      if (pa.align > 1) s += " align " + std::to_string(pa.align);
    } else {
      s += name(pa.type);
    }
    s += "\n";
  }
  for (const auto& sh : k.shared)
    s += "  shared " + sh.name + ": " + name(sh.type) + "[" + std::to_string(sh.count) + "]\n";
  for (const auto& v : k.vars) s += "  var " + v.name + ": " + name(v.type) + "\n";
  for (const auto& f : k.fragments)
    s += "  fragment " + f.name + ": " + std::string(name(f.use)) + "<" +
         std::string(name(f.scalar)) + ", " + std::to_string(f.rows) + "x" +
         std::to_string(f.cols) + ">\n";
  s += "{\n";
  int depth = 1;
  for (const Inst& i : k.body) {
    if (i.op == Op::EndIf || i.op == Op::EndFor || i.op == Op::Else) --depth;
    s += std::string(2 * std::max(depth, 0), ' ') + dump(k, i) + "\n";
    if (i.op == Op::If || i.op == Op::For || i.op == Op::Else) ++depth;
  }
  s += "}\n";
  return s;
}

}  // namespace ember::kernel
