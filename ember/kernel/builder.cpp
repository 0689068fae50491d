#include "ember/kernel/builder.h"

#include <cmath>
#include <limits>
#include <utility>

#include "ember/core/error.h"
#include "ember/kernel/validate.h"

namespace ember::kernel {

Val Var::get() const { return b_->emit(Op::VarRead, type_, {}, index_); }
void Var::set(const Val& v) const { b_->emit(Op::VarWrite, Type(), {v}, index_); }

KernelBuilder::KernelBuilder(std::string name, std::array<int, 3> workgroup) {
  k_.name = std::move(name);
  k_.workgroup = workgroup;
}

Val KernelBuilder::make(Inst inst) {
  if (!inst.type.is_void()) inst.result = k_.num_values++;
  Val v(this, inst.result, inst.type);
  k_.body.push_back(std::move(inst));
  return v;
}

Val KernelBuilder::emit(Op op, Type type, std::initializer_list<Val> args, uint32_t ref,
                        Space space) {
  Inst inst;
  inst.op = op;
  inst.type = type;
  inst.ref = ref;
  inst.space = space;
  for (const Val& a : args) inst.args.push_back(a.valid() ? a.id() : kNoValue);
  return make(std::move(inst));
}

Mem KernelBuilder::buffer(std::string name, Type elem, Access access, int align) {
  k_.params.push_back({std::move(name), Param::Buffer, elem, access, align});
  return {Space::Global, static_cast<uint32_t>(k_.params.size() - 1), elem};
}

Val KernelBuilder::scalar(std::string name, Type type) {
  k_.params.push_back({std::move(name), Param::Value, type, Access::Read, 1});
  return emit(Op::Param, type, {}, static_cast<uint32_t>(k_.params.size() - 1));
}

Mem KernelBuilder::shared(std::string name, Type elem, int64_t count) {
  k_.shared.push_back({std::move(name), elem, count});
  return {Space::Shared, static_cast<uint32_t>(k_.shared.size() - 1), elem};
}

Var KernelBuilder::var(std::string name, Type type) {
  k_.vars.push_back({std::move(name), type});
  return Var(this, static_cast<uint32_t>(k_.vars.size() - 1), type);
}

Var KernelBuilder::var(std::string name, const Val& init) {
  Var v = var(std::move(name), init.type());
  v.set(init);
  return v;
}

Frag KernelBuilder::fragment(std::string name, FragmentUse use, ScalarType scalar, int rows,
                             int cols) {
  k_.fragments.push_back({std::move(name), use, scalar, rows, cols});
  return Frag{static_cast<uint32_t>(k_.fragments.size() - 1)};
}

void KernelBuilder::frag_fill(const Frag& f, const Val& value) {
  Inst inst;
  inst.op = Op::FragFill;
  inst.imm = frag_imm(f.index);
  inst.args = {value.id()};
  make(std::move(inst));
}

void KernelBuilder::frag_memory(Op op, const Frag& f, const Mem& m, const Val& index,
                                const Val& stride, bool col_major) {
  Inst inst;
  inst.op = op;
  inst.ref = m.index;
  inst.space = m.space;
  inst.imm = frag_imm(f.index, col_major);
  inst.args = {index.id(), stride.id()};
  make(std::move(inst));
}

void KernelBuilder::frag_load(const Frag& f, const Mem& m, const Val& index, const Val& stride,
                              bool col_major) {
  frag_memory(Op::FragLoad, f, m, index, stride, col_major);
}

void KernelBuilder::frag_store(const Frag& f, const Mem& m, const Val& index, const Val& stride,
                               bool col_major) {
  frag_memory(Op::FragStore, f, m, index, stride, col_major);
}

void KernelBuilder::frag_mma(const Frag& acc, const Frag& a, const Frag& b) {
  Inst inst;
  inst.op = Op::FragMma;
  inst.imm = mma_imm(acc.index, a.index, b.index);
  make(std::move(inst));
}

Val KernelBuilder::lit(Type type, double v) {
  Inst inst;
  inst.op = Op::Const;
  inst.type = type;
  if (is_float(type)) {
    inst.fimm = v;
  } else {
    double lo = is_signed(type.scalar) ? -std::ldexp(1.0, byte_size(type.scalar) * 8 - 1) : 0;
    double hi = type.scalar == ScalarType::Bool
                    ? 1
                    : std::ldexp(1.0, byte_size(type.scalar) * 8 - is_signed(type.scalar));
    if (type.is_void() || !(v == std::trunc(v)) || v < lo ||
        v >= hi + (type.scalar == ScalarType::Bool))
      throw ValueError("[kernel " + k_.name + "] constant " + std::to_string(v) + " is not a " +
                       name(type));
    inst.imm = static_cast<int64_t>(v);
  }
  return make(std::move(inst));
}

Val KernelBuilder::lit_int(Type type, int64_t v) {
  if (is_float(type)) return lit(type, static_cast<double>(v));
  Inst inst;
  inst.op = Op::Const;
  inst.type = type;
  inst.imm = v;
  return make(std::move(inst));
}

Val KernelBuilder::global_id(int d) { return emit(Op::GlobalId, ScalarType::U32, {}, d); }
Val KernelBuilder::local_id(int d) { return emit(Op::LocalId, ScalarType::U32, {}, d); }
Val KernelBuilder::group_id(int d) { return emit(Op::GroupId, ScalarType::U32, {}, d); }
Val KernelBuilder::local_size(int d) { return emit(Op::LocalSize, ScalarType::U32, {}, d); }
Val KernelBuilder::num_groups(int d) { return emit(Op::NumGroups, ScalarType::U32, {}, d); }
Val KernelBuilder::subgroup_lane() { return emit(Op::SubgroupLane, ScalarType::U32, {}); }
Val KernelBuilder::subgroup_size() { return emit(Op::SubgroupSize, ScalarType::U32, {}); }

Val KernelBuilder::load(const Mem& m, const Val& index, int width) {
  return emit(Op::Load, m.type.with_width(width), {index}, m.index, m.space);
}
void KernelBuilder::store(const Mem& m, const Val& index, const Val& value) {
  emit(Op::Store, Type(), {index, value}, m.index, m.space);
}
Val KernelBuilder::atomic_add(const Mem& m, const Val& i, const Val& v) {
  return emit(Op::AtomicAdd, v.type(), {i, v}, m.index, m.space);
}
Val KernelBuilder::atomic_min(const Mem& m, const Val& i, const Val& v) {
  return emit(Op::AtomicMin, v.type(), {i, v}, m.index, m.space);
}
Val KernelBuilder::atomic_max(const Mem& m, const Val& i, const Val& v) {
  return emit(Op::AtomicMax, v.type(), {i, v}, m.index, m.space);
}
Val KernelBuilder::atomic_exch(const Mem& m, const Val& i, const Val& v) {
  return emit(Op::AtomicExch, v.type(), {i, v}, m.index, m.space);
}
Val KernelBuilder::atomic_cas(const Mem& m, const Val& i, const Val& expected, const Val& desired) {
  return emit(Op::AtomicCas, desired.type(), {i, expected, desired}, m.index, m.space);
}
void KernelBuilder::barrier() { emit(Op::Barrier, Type(), {}); }

Val KernelBuilder::unary(Op op, const Val& a) {
  Type t = a.type();
  return emit(op, result_type(op, &t, 1), {a});
}
Val KernelBuilder::binary(Op op, const Val& a, const Val& b) {
  Type t[2] = {a.type(), b.type()};
  return emit(op, result_type(op, t, 2), {a, b});
}
Val KernelBuilder::fma(const Val& a, const Val& b, const Val& c) {
  return emit(Op::Fma, a.type(), {a, b, c});
}
Val KernelBuilder::select(const Val& cond, const Val& a, const Val& b) {
  return emit(Op::Select, a.type(), {cond, a, b});
}
Val KernelBuilder::cast(const Val& a, Type to) {
  return emit(Op::Cast, to.with_width(a.type().width), {a});
}
Val KernelBuilder::bitcast(const Val& a, Type to) { return emit(Op::Bitcast, to, {a}); }
Val KernelBuilder::vec(std::span<const Val> lanes) {
  Inst inst;
  inst.op = Op::Vec;
  inst.type = lanes.empty() ? Type() : lanes[0].type().with_width(static_cast<int>(lanes.size()));
  for (const Val& l : lanes) inst.args.push_back(l.id());
  return make(std::move(inst));
}
Val KernelBuilder::extract(const Val& v, int lane) {
  return emit(Op::Extract, v.type().lane(), {v}, static_cast<uint32_t>(lane));
}

void KernelBuilder::if_(const Val& cond, const std::function<void()>& then) {
  emit(Op::If, Type(), {cond});
  then();
  emit(Op::EndIf, Type(), {});
}
void KernelBuilder::if_else(const Val& cond, const std::function<void()>& then,
                            const std::function<void()>& otherwise) {
  emit(Op::If, Type(), {cond});
  then();
  emit(Op::Else, Type(), {});
  otherwise();
  emit(Op::EndIf, Type(), {});
}
void KernelBuilder::for_(const Val& start, const Val& end, const Val& step,
                         const std::function<void(Val)>& body) {
  Val i = emit(Op::For, start.type(), {start, end, step});
  body(i);
  emit(Op::EndFor, Type(), {});
}
void KernelBuilder::for_(int64_t start, const Val& end, int64_t step,
                         const std::function<void(Val)>& body) {
  Val first = lit_int(end.type(), start);  // in order: arguments would be evaluated in any
  Val by = lit_int(end.type(), step);
  for_(first, end, by, body);
}

Val KernelBuilder::shuffle(const Val& v, const Val& lane) {
  return emit(Op::Shuffle, v.type(), {v, lane});
}
Val KernelBuilder::shuffle_xor(const Val& v, const Val& mask) {
  return emit(Op::ShuffleXor, v.type(), {v, mask});
}
Val KernelBuilder::subgroup_add(const Val& v) { return emit(Op::SubgroupAdd, v.type(), {v}); }
Val KernelBuilder::subgroup_min(const Val& v) { return emit(Op::SubgroupMin, v.type(), {v}); }
Val KernelBuilder::subgroup_max(const Val& v) { return emit(Op::SubgroupMax, v.type(), {v}); }
Val KernelBuilder::ballot(const Val& p) { return emit(Op::Ballot, ScalarType::U32, {p}); }

Kernel KernelBuilder::finish() {
  validate(k_);
  return std::move(k_);
}

}  // namespace ember::kernel
