#include "ember/fusion/program.h"

#include <cstring>

#include "ember/core/error.h"

namespace ember::fusion {

Ref Program::step(OpCode code, DType dtype, std::initializer_list<Ref> args) {
  if (args.size() > 3) throw ValueError("[fusion] a step takes at most 3 operands");
  Step s;
  s.code = code;
  s.dtype = dtype;
  s.arity = static_cast<int8_t>(args.size());
  int i = 0;
  for (Ref r : args) s.args[i++] = r;
  steps.push_back(s);
  return static_cast<Ref>(steps.size() - 1);
}

Ref Program::constant(Scalar value, DType dtype) {
  Step s;
  s.code = OpCode::Full;
  s.dtype = dtype;
  s.constant = static_cast<int32_t>(constants.size());
  constants.push_back(value);
  steps.push_back(s);
  return static_cast<Ref>(steps.size() - 1);
}

std::string Program::signature() const {
  // Bytes, not text: it is built on every flush and only ever compared.
  std::string s;
  s.reserve(8 + inputs.size() + steps.size() * 16 + outputs.size() * 4);
  auto put = [&](const void* p, size_t n) { s.append(static_cast<const char*>(p), n); };
  auto put32 = [&](int32_t v) { put(&v, 4); };
  put32(static_cast<int32_t>(inputs.size()));
  for (const TensorMeta& m : inputs) s.push_back(static_cast<char>(m.dtype));
  put32(static_cast<int32_t>(steps.size()));
  for (const Step& st : steps) {
    uint16_t code = static_cast<uint16_t>(st.code);
    put(&code, 2);
    s.push_back(static_cast<char>(st.dtype));
    s.push_back(static_cast<char>(st.arity));
    for (int a = 0; a < st.arity; ++a) put32(st.args[a]);
  }
  for (int32_t o : outputs) put32(o);
  if (reduction) {
    s.push_back('r');
    uint16_t code = static_cast<uint16_t>(reduction->op.code);
    put(&code, 2);
    put32(reduction->value);
    s.push_back(static_cast<char>(reduction->out.dtype));
  }
  return s;
}

namespace {
std::string ref_name(Ref r) {
  return Program::is_input(r) ? "in" + std::to_string(Program::input_index(r))
                              : "%" + std::to_string(r);
}
std::string scalar_text(const Scalar& v) {
  if (v.is_int) return std::to_string(v.i);
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.9g", v.f);
  return buf;
}
}  // namespace

std::string Program::dump() const {
  std::string s = "fused " + shape.to_string() + " (" + std::to_string(steps.size()) + " steps, " +
                  std::to_string(outputs.size()) + " outputs)\n";
  for (size_t i = 0; i < inputs.size(); ++i)
    s += "  in" + std::to_string(i) + ": " + inputs[i].shape.to_string() + " " +
         std::string(name(inputs[i].dtype)) + "\n";
  for (size_t i = 0; i < steps.size(); ++i) {
    const Step& st = steps[i];
    s += "  %" + std::to_string(i) + ":" + std::string(name(st.dtype)) + " = " +
         std::string(name(st.code));
    if (st.code == OpCode::Full) s += " " + scalar_text(constants[st.constant]) + " (argument)";
    for (int a = 0; a < st.arity; ++a) s += (a ? ", " : " ") + ref_name(st.args[a]);
    s += "\n";
  }
  s += "  out:";
  for (int32_t o : outputs) s += " %" + std::to_string(o);
  if (reduction) {
    s +=
        "\n  " + std::string(name(reduction->op.code)) + " %" + std::to_string(reduction->value) +
        " over " +
        (reduction->op.attrs.dims.empty() ? std::string("all dims")
                                          : "dims " + Shape(reduction->op.attrs.dims).to_string()) +
        (reduction->op.attrs.flag ? " (kept)" : "") + " -> " + reduction->out.shape.to_string();
  }
  return s + "\n";
}

std::string Program::op_names() const {
  std::string s;
  for (const Step& st : steps) {
    if (st.code == OpCode::Full) continue;
    if (!s.empty()) s += ", ";
    s += name(st.code);
  }
  if (reduction) s += std::string(s.empty() ? "" : ", ") + std::string(name(reduction->op.code));
  return s;
}

std::string Program::where() const {
  return "(in a fused program of " + op_names() + " on " + shape.to_string() + ")";
}

bool reduction_fusible(const Op& op, const TensorMeta& in) {
  bool code = op.code == OpCode::Sum || op.code == OpCode::Max || op.code == OpCode::Min;
  return code && is_float(in.dtype) && in.shape.rank() > 0;
}

DType operand_dtype(const Program& p, Ref r) {
  return Program::is_input(r) ? p.inputs[Program::input_index(r)].dtype : p.steps[r].dtype;
}

Op full_op(Scalar v, const TensorMeta& meta) {
  Op op{OpCode::Full};
  op.attrs.scalar = v;
  op.attrs.shape = meta.shape.dims();
  op.attrs.dtype = meta.dtype;
  return op;
}

Op step_op(const Program& p, size_t i, size_t constant_rank) {
  const Step& s = p.steps[i];
  if (s.code == OpCode::Full)
    return full_op(p.constants[s.constant], {Shape(Dims(constant_rank, 1)), s.dtype});
  Op op{s.code};
  if (s.code == OpCode::Cast) op.attrs.dtype = s.dtype;
  return op;
}

}  // namespace ember::fusion
