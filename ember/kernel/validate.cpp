#include "ember/kernel/validate.h"

#include <cctype>
#include <set>
#include <string>
#include <vector>

#include "ember/core/error.h"

namespace ember::kernel {

namespace {

bool is_identifier(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) return false;
  for (char c : s)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '_') return false;
  return true;
}

bool valid_width(Type t) {
  if (t.is_void()) return t.width == 1;
  return t.width == 1 || t.width == 2 || t.width == 4 || t.width == 8;
}

bool is_index(Type t) {
  return t.width == 1 && (t.scalar == ScalarType::I32 || t.scalar == ScalarType::U32 ||
                          t.scalar == ScalarType::I64);
}

struct Scope {
  Op op;           // If, Else or For
  int id;          // for visibility
  bool divergent;  // some threads of a workgroup may skip it
  size_t start;    // instruction index
};

class Checker {
 public:
  Checker(const Kernel& k, const ValidateOptions& o) : k_(k), o_(o) {}

  void run() {
    header();
    def_scope_.assign(k_.num_values, -1);
    uniform_.assign(k_.num_values, false);
    types_.assign(k_.num_values, Type());
    active_.push_back(true);  // scope 0: the kernel body
    for (pc_ = 0; pc_ < k_.body.size(); ++pc_) inst(k_.body[pc_]);
    if (!stack_.empty()) {
      pc_ = stack_.back().start;
      fail(std::string(name(stack_.back().op)) + " is never closed");
    }
  }

 private:
  [[noreturn]] void fail_kernel(const std::string& what) const {
    throw ValueError("[kernel " + k_.name + "] " + what);
  }
  [[noreturn]] void fail(const std::string& what) const {
    fail_kernel("instruction " + std::to_string(pc_) + " (" + dump(k_, k_.body[pc_]) +
                "): " + what);
  }

  void header() {
    if (!is_identifier(k_.name)) fail_kernel("the kernel name is not an identifier");
    int64_t threads = 1;
    for (int d : k_.workgroup) {
      if (d < 1) fail_kernel("workgroup size must be at least 1 in every dim");
      threads *= d;
    }
    if (threads > o_.max_workgroup_threads)
      fail_kernel("workgroup of " + std::to_string(threads) + " threads is over the limit of " +
                  std::to_string(o_.max_workgroup_threads));
    std::set<std::string> names;
    auto unique = [&](const std::string& n, const char* what) {
      if (!is_identifier(n))
        fail_kernel(std::string(what) + " name '" + n + "' is not an identifier");
      if (n[0] == '_')
        fail_kernel(std::string(what) + " name '" + n +
                    "' starts with '_' (kept for generated code)");
      if (!names.insert(n).second) fail_kernel("the name '" + n + "' is declared twice");
    };
    for (const Param& p : k_.params) {
      unique(p.name, "parameter");
      if (p.type.is_void() || p.type.width != 1)
        fail_kernel("parameter " + p.name + " must have a scalar type, not " + name(p.type));
      if (p.kind == Param::Buffer && (p.align < 1 || (p.align & (p.align - 1))))
        fail_kernel("buffer " + p.name + " alignment must be a power of two");
    }
    for (const SharedArray& s : k_.shared) {
      unique(s.name, "shared array");
      if (s.type.is_void() || !valid_width(s.type))
        fail_kernel("shared array " + s.name + " has a bad type " + name(s.type));
      if (s.count <= 0) fail_kernel("shared array " + s.name + " must have at least one element");
    }
    for (const LocalVar& v : k_.vars) {
      unique(v.name, "variable");
      if (v.type.is_void() || !valid_width(v.type))
        fail_kernel("variable " + v.name + " has a bad type " + name(v.type));
    }
    for (const Fragment& f : k_.fragments) {
      unique(f.name, "fragment");
      if (f.rows <= 0 || f.cols <= 0 || !(is_float(f.scalar) || is_int(f.scalar)))
        fail_kernel("fragment " + f.name + " must be a matrix of numbers");
    }
    if (k_.shared_bytes() > o_.max_shared_bytes)
      fail_kernel("shared memory of " + std::to_string(k_.shared_bytes()) +
                  " bytes is over the limit of " + std::to_string(o_.max_shared_bytes));
  }

  bool divergent() const { return !stack_.empty() && stack_.back().divergent; }

  Type arg(const Inst& i, size_t j) {
    ValueId v = i.args[j];
    if (v >= k_.num_values || def_scope_[v] < 0)
      fail("operand " + std::to_string(j) + " (%" + std::to_string(v) + ") is not defined before");
    if (!active_[def_scope_[v]])
      fail("operand %" + std::to_string(v) + " is defined in a block that has ended");
    return types_[v];
  }

  void expect(bool ok, const std::string& what) {
    if (!ok) fail(what);
  }
  void same(Type a, Type b) {
    expect(a == b, "operand types differ: " + name(a) + " and " + name(b));
  }
  void result_is(const Inst& i, Type t) {
    expect(i.type == t, "result type " + name(i.type) + " should be " + name(t));
  }

  const Type& mem_type(const Inst& i, bool writes, bool reads) {
    if (i.space == Space::Shared) {
      expect(i.ref < k_.shared.size(), "no shared array #" + std::to_string(i.ref));
      return k_.shared[i.ref].type;
    }
    expect(i.ref < k_.params.size() && k_.params[i.ref].kind == Param::Buffer,
           "parameter #" + std::to_string(i.ref) + " is not a buffer");
    const Param& p = k_.params[i.ref];
    if (writes) expect(p.access != Access::Read, "writes the read-only buffer " + p.name);
    if (reads) expect(p.access != Access::Write, "reads the write-only buffer " + p.name);
    return p.type;
  }

  const Fragment& fragment(uint32_t f) {
    expect(f < k_.fragments.size(), "no fragment #" + std::to_string(f));
    return k_.fragments[f];
  }
  void subgroup_uniform(const Inst& i) {
    expect(!divergent(), std::string(name(i.op)) +
                             " in divergent control flow (every lane of the subgroup takes part)");
  }

  void atomic_type(const Inst& i, Type t) {
    ScalarType s = t.scalar;
    bool ok =
        t.width == 1 && (s == ScalarType::F32 || s == ScalarType::I32 || s == ScalarType::U32 ||
                         s == ScalarType::I64 || (i.op == Op::AtomicAdd && s == ScalarType::F64));
    expect(ok, std::string(name(i.op)) + " is not available on " + name(t));
  }

  void inst(const Inst& i) {
    const OpInfo& in = info(i.op);
    expect(valid_width(i.type), "bad vector width " + std::to_string(i.type.width));
    if (in.arity >= 0)
      expect(
          static_cast<int>(i.args.size()) == in.arity,
          "takes " + std::to_string(in.arity) + " operands, has " + std::to_string(i.args.size()));
    std::vector<Type> t(i.args.size());
    bool all_uniform = true;
    for (size_t j = 0; j < i.args.size(); ++j) {
      t[j] = arg(i, j);
      all_uniform = all_uniform && uniform_[i.args[j]];
    }
    bool uniform = false;
    switch (in.form) {
      case Form::Leaf:
        if (i.op == Op::Param) {
          expect(i.ref < k_.params.size() && k_.params[i.ref].kind == Param::Value,
                 "parameter #" + std::to_string(i.ref) + " is not a scalar parameter");
          result_is(i, k_.params[i.ref].type);
        } else {
          expect(!i.type.is_void(), "a constant needs a type");
        }
        uniform = true;
        break;
      case Form::Geometry:
        expect(i.ref < 3, "dim " + std::to_string(i.ref) + " is not 0, 1 or 2");
        result_is(i, ScalarType::U32);
        uniform = i.op == Op::GroupId || i.op == Op::LocalSize || i.op == Op::NumGroups ||
                  i.op == Op::SubgroupSize;
        break;
      case Form::Unary:
        expect(is_float(t[0]) || is_int(t[0]),
               std::string(name(i.op)) + " needs a number, not " + name(t[0]));
        result_is(i, t[0]);
        uniform = all_uniform;
        break;
      case Form::Logic1:
        expect(is_int(t[0]) || is_bool(t[0]), "not needs an int or bool, not " + name(t[0]));
        result_is(i, t[0]);
        uniform = all_uniform;
        break;
      case Form::Math:
      case Form::Test:
        expect(is_float(t[0]), std::string(name(i.op)) + " needs a float, not " + name(t[0]));
        result_is(i, result_type(i.op, t.data(), 1));
        uniform = all_uniform;
        break;
      case Form::Arith:
      case Form::Math2:
      case Form::Logic2:
      case Form::Shift:
      case Form::Compare:
        same(t[0], t[1]);
        if (in.form == Form::Arith)
          expect(!is_bool(t[0]), std::string(name(i.op)) + " needs numbers, not bool");
        if (i.op == Op::MulHi)
          expect(t[0].scalar == ScalarType::I32 || t[0].scalar == ScalarType::U32,
                 "mul_hi needs i32 or u32, not " + name(t[0]));
        if (in.form == Form::Math2)
          expect(is_float(t[0]), std::string(name(i.op)) + " needs floats, not " + name(t[0]));
        if (in.form == Form::Logic2)
          expect(is_int(t[0]) || is_bool(t[0]),
                 std::string(name(i.op)) + " needs ints or bools, not " + name(t[0]));
        if (in.form == Form::Shift) expect(is_int(t[0]), "shifts need ints, not " + name(t[0]));
        if (in.form == Form::Compare && i.op != Op::Eq && i.op != Op::Ne)
          expect(!is_bool(t[0]), "bools have no order");
        result_is(i, result_type(i.op, t.data(), 2));
        uniform = all_uniform;
        break;
      case Form::Fma:
        same(t[0], t[1]);
        same(t[0], t[2]);
        expect(is_float(t[0]), "fma needs floats, not " + name(t[0]));
        result_is(i, t[0]);
        uniform = all_uniform;
        break;
      case Form::Select:
        expect(is_bool(t[0]) && (t[0].width == 1 || t[0].width == t[1].width),
               "the condition must be bool (one lane or one per lane), not " + name(t[0]));
        same(t[1], t[2]);
        result_is(i, t[1]);
        uniform = all_uniform;
        break;
      case Form::Cast:
        expect(!i.type.is_void() && i.type.width == t[0].width,
               "cast from " + name(t[0]) + " to " + name(i.type) + " changes the width");
        uniform = all_uniform;
        break;
      case Form::Bitcast:
        expect(!i.type.is_void() && byte_size(i.type) == byte_size(t[0]) && !is_bool(i.type) &&
                   !is_bool(t[0]),
               "bitcast from " + name(t[0]) + " to " + name(i.type) + " changes the size");
        uniform = all_uniform;
        break;
      case Form::Vec:
        expect(i.args.size() == 2 || i.args.size() == 4 || i.args.size() == 8,
               "a vector has 2, 4 or 8 lanes, not " + std::to_string(i.args.size()));
        for (size_t j = 0; j < t.size(); ++j) {
          expect(t[j].width == 1, "vector lanes must be scalars");
          same(t[0], t[j]);
        }
        result_is(i, t[0].with_width(static_cast<int>(t.size())));
        uniform = all_uniform;
        break;
      case Form::Extract:
        expect(i.ref < t[0].width, "lane " + std::to_string(i.ref) + " of a " + name(t[0]));
        result_is(i, t[0].lane());
        uniform = all_uniform;
        break;
      case Form::Load: {
        Type e = mem_type(i, false, true);
        expect(is_index(t[0]), "the index must be i32, u32 or i64, not " + name(t[0]));
        expect(i.type.lane() == e.lane() && i.type.width % e.width == 0,
               "loads " + name(i.type) + " from elements of " + name(e));
        break;
      }
      case Form::Store: {
        Type e = mem_type(i, true, false);
        expect(is_index(t[0]), "the index must be i32, u32 or i64, not " + name(t[0]));
        expect(t[1].lane() == e.lane() && t[1].width % e.width == 0,
               "stores " + name(t[1]) + " into elements of " + name(e));
        break;
      }
      case Form::Atomic:
      case Form::AtomicCas: {
        Type e = mem_type(i, true, true);
        expect(is_index(t[0]), "the index must be i32, u32 or i64, not " + name(t[0]));
        for (size_t j = 1; j < t.size(); ++j)
          expect(t[j] == e, "atomic operand " + name(t[j]) + " on elements of " + name(e));
        atomic_type(i, e);
        result_is(i, e);
        break;
      }
      case Form::VarRead:
        expect(i.ref < k_.vars.size(), "no variable #" + std::to_string(i.ref));
        result_is(i, k_.vars[i.ref].type);
        break;
      case Form::VarWrite:
        expect(i.ref < k_.vars.size(), "no variable #" + std::to_string(i.ref));
        expect(t[0] == k_.vars[i.ref].type, "writes " + name(t[0]) + " into variable " +
                                                k_.vars[i.ref].name + " of " +
                                                name(k_.vars[i.ref].type));
        break;
      case Form::If:
        expect(t[0] == Type(ScalarType::Bool), "the condition must be bool, not " + name(t[0]));
        open(Op::If, divergent() || !all_uniform);
        break;
      case Form::Else:
        expect(!stack_.empty() && stack_.back().op == Op::If, "else without an open if");
        {
          bool div = stack_.back().divergent;
          close();
          open(Op::Else, div);
        }
        break;
      case Form::End: {
        bool ok = !stack_.empty() &&
                  (i.op == Op::EndFor ? stack_.back().op == Op::For : stack_.back().op != Op::For);
        expect(ok, std::string(name(i.op)) + " does not close an open " +
                       (i.op == Op::EndFor ? "for" : "if"));
        close();
        break;
      }
      case Form::For:
        expect(is_int(t[0]) && t[0].width == 1,
               "loop bounds must be scalar ints, not " + name(t[0]));
        same(t[0], t[1]);
        same(t[0], t[2]);
        result_is(i, t[0]);
        uniform = all_uniform && !divergent();
        open(Op::For, divergent() || !all_uniform);
        break;
      case Form::Barrier:
        expect(!divergent(),
               "barrier in divergent control flow (a condition or loop bound that differs "
               "between the threads of a workgroup)");
        break;
      case Form::Shuffle:
        expect(t[1] == Type(ScalarType::U32), "the lane must be u32, not " + name(t[1]));
        expect(!is_bool(t[0]), "shuffle a bool as u32");
        result_is(i, t[0]);
        break;
      case Form::SubgroupReduce:
        expect((is_float(t[0]) || is_int(t[0])) && t[0].width == 1,
               std::string(name(i.op)) + " needs a scalar number, not " + name(t[0]));
        result_is(i, t[0]);
        break;
      case Form::Ballot:
        expect(t[0] == Type(ScalarType::Bool), "ballot needs a bool, not " + name(t[0]));
        result_is(i, ScalarType::U32);
        break;
      case Form::FragFill: {
        const Fragment& f = fragment(frag_of(i));
        expect(t[0] == Type(f.scalar), "fills fragment " + f.name + " of " +
                                           std::string(name(f.scalar)) + " with " + name(t[0]));
        subgroup_uniform(i);
        break;
      }
      case Form::FragMemory: {
        const Fragment& f = fragment(frag_of(i));
        Type e = mem_type(i, i.op == Op::FragStore, i.op == Op::FragLoad);
        expect(e == Type(f.scalar), std::string(name(i.op)) + " of fragment " + f.name + " of " +
                                        std::string(name(f.scalar)) + " on elements of " + name(e));
        expect(
            is_index(t[0]) && is_index(t[1]),
            "the index and stride must be i32, u32 or i64, not " + name(t[0]) + ", " + name(t[1]));
        subgroup_uniform(i);
        break;
      }
      case Form::FragMma: {
        const Fragment& c = fragment(frag_of(i));
        const Fragment& a = fragment(mma_a(i));
        const Fragment& b = fragment(mma_b(i));
        expect(
            c.use == FragmentUse::Accumulator && a.use == FragmentUse::A && b.use == FragmentUse::B,
            "frag_mma needs an accumulator, an a and a b fragment");
        expect(a.rows == c.rows && b.cols == c.cols && a.cols == b.rows,
               "shapes do not multiply: " + std::to_string(a.rows) + "x" + std::to_string(a.cols) +
                   " * " + std::to_string(b.rows) + "x" + std::to_string(b.cols) + " into " +
                   std::to_string(c.rows) + "x" + std::to_string(c.cols));
        expect(a.scalar == b.scalar, "a and b fragments of different types");
        subgroup_uniform(i);
        break;
      }
    }
    define(i, uniform);
  }

  void define(const Inst& i, bool uniform) {
    if (i.type.is_void()) {
      expect(i.result == kNoValue, "defines a value of type void");
      return;
    }
    expect(i.result != kNoValue, "has a type but defines no value");
    expect(i.result < k_.num_values, "value %" + std::to_string(i.result) + " is out of range");
    expect(def_scope_[i.result] < 0, "value %" + std::to_string(i.result) + " is defined twice");
    // A for's index belongs to its body, which `open` has just pushed.
    def_scope_[i.result] = stack_.empty() ? 0 : stack_.back().id;
    types_[i.result] = i.type;
    uniform_[i.result] = uniform;
  }

  void open(Op op, bool div) {
    int id = static_cast<int>(active_.size());
    active_.push_back(true);
    stack_.push_back({op, id, div, pc_});
  }
  void close() {
    active_[stack_.back().id] = false;
    stack_.pop_back();
  }

  const Kernel& k_;
  const ValidateOptions& o_;
  size_t pc_ = 0;
  std::vector<int> def_scope_;
  std::vector<bool> uniform_;
  std::vector<Type> types_;
  std::vector<bool> active_;
  std::vector<Scope> stack_;
};

}  // namespace

void validate(const Kernel& k, const ValidateOptions& options) { Checker(k, options).run(); }

}  // namespace ember::kernel
