// KernelBuilder: writes a kernel once against the IR, with C++ operators for arithmetic and
// lambdas for blocks. Every renderer (CUDA, GLSL, WGSL, ...) takes what it builds.
//
//   kernel::KernelBuilder kb("exp_f32");
//   kernel::Mem x = kb.buffer("x", kernel::ScalarType::F32, kernel::Access::Read);
//   kernel::Mem out = kb.buffer("out", kernel::ScalarType::F32, kernel::Access::Write);
//   kernel::Val n = kb.scalar("n", kernel::ScalarType::U32);
//   kernel::Val i = kb.global_id(0);
//   kb.if_(i < n, [&] { kb.store(out, i, kb.exp(kb.load(x, i))); });
//   kernel::Kernel k = kb.finish();   // validated: throws ValueError on a malformed kernel
//
// Loops carry state in variables:
//
//   kernel::KernelBuilder kb("sum");
//   kernel::Mem x = kb.buffer("x", kernel::ScalarType::F32, kernel::Access::Read);
//   kernel::Var acc = kb.var("acc", kb.lit(kernel::ScalarType::F32, 0));
//   kb.for_(0, kb.scalar("n", kernel::ScalarType::I32), 1, [&](kernel::Val j) {
//     acc.set(acc.get() + kb.load(x, j));
//   });
#pragma once
#include <array>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <span>
#include <string>

#include "ember/core/export.h"
#include "ember/kernel/ir.h"

namespace ember::kernel {

class KernelBuilder;

/// A value of the kernel being built.
class Val {
 public:
  Val() = default;
  ValueId id() const { return id_; }
  Type type() const { return type_; }
  KernelBuilder& builder() const { return *b_; }
  bool valid() const { return b_ != nullptr; }

 private:
  friend class KernelBuilder;
  Val(KernelBuilder* b, ValueId id, Type t) : b_(b), id_(id), type_(t) {}
  KernelBuilder* b_ = nullptr;
  ValueId id_ = kNoValue;
  Type type_;
};

/// A buffer parameter or a shared array: what load, store and atomics address.
struct Mem {
  Space space = Space::Global;
  uint32_t index = 0;
  Type type;  // element type
};

/// A cooperative matrix of the kernel being built (Kernel::fragments).
struct Frag {
  uint32_t index = 0;
};

/// A local variable: mutable state across blocks and loop iterations.
class EMBER_API Var {
 public:
  Val get() const;
  void set(const Val& v) const;
  operator Val() const { return get(); }  // NOLINT(google-explicit-constructor)
  Type type() const { return type_; }

 private:
  friend class KernelBuilder;
  Var(KernelBuilder* b, uint32_t index, Type t) : b_(b), index_(index), type_(t) {}
  KernelBuilder* b_;
  uint32_t index_;
  Type type_;
};

class EMBER_API KernelBuilder {
 public:
  explicit KernelBuilder(std::string name, std::array<int, 3> workgroup = {256, 1, 1});

  // ---- declarations ----
  Mem buffer(std::string name, Type elem, Access access, int align = 1);
  Val scalar(std::string name, Type type);
  Mem shared(std::string name, Type elem, int64_t count);
  Var var(std::string name, Type type);
  Var var(std::string name, const Val& init);
  /// A constant of `type` (a vector type gives the value in every lane). Throws ValueError
  /// when an integer or bool type cannot hold `v` exactly.
  Val lit(Type type, double v);
  Val lit_int(Type type, int64_t v);

  // ---- launch geometry (u32; dim 0..2) ----
  Val global_id(int dim);
  Val local_id(int dim);
  Val group_id(int dim);
  Val local_size(int dim);
  Val num_groups(int dim);
  Val subgroup_lane();
  Val subgroup_size();

  // ---- memory ----
  Val load(const Mem& m, const Val& index, int width = 1);
  void store(const Mem& m, const Val& index, const Val& value);
  Val atomic_add(const Mem& m, const Val& index, const Val& v);
  Val atomic_min(const Mem& m, const Val& index, const Val& v);
  Val atomic_max(const Mem& m, const Val& index, const Val& v);
  Val atomic_exch(const Mem& m, const Val& index, const Val& v);
  Val atomic_cas(const Mem& m, const Val& index, const Val& expected, const Val& desired);
  void barrier();

  // ---- math (named forms of the operators, and intrinsics) ----
  Val unary(Op op, const Val& a);
  Val binary(Op op, const Val& a, const Val& b);
  Val neg(const Val& a) { return unary(Op::Neg, a); }
  Val abs(const Val& a) { return unary(Op::Abs, a); }
  Val exp(const Val& a) { return unary(Op::Exp, a); }
  Val exp2(const Val& a) { return unary(Op::Exp2, a); }
  Val log(const Val& a) { return unary(Op::Log, a); }
  Val log2(const Val& a) { return unary(Op::Log2, a); }
  Val sqrt(const Val& a) { return unary(Op::Sqrt, a); }
  Val rsqrt(const Val& a) { return unary(Op::Rsqrt, a); }
  Val sin(const Val& a) { return unary(Op::Sin, a); }
  Val cos(const Val& a) { return unary(Op::Cos, a); }
  Val tan(const Val& a) { return unary(Op::Tan, a); }
  Val tanh(const Val& a) { return unary(Op::Tanh, a); }
  Val erf(const Val& a) { return unary(Op::Erf, a); }
  Val floor(const Val& a) { return unary(Op::Floor, a); }
  Val ceil(const Val& a) { return unary(Op::Ceil, a); }
  Val round(const Val& a) { return unary(Op::Round, a); }
  Val trunc(const Val& a) { return unary(Op::Trunc, a); }
  Val expm1(const Val& a) { return unary(Op::Expm1, a); }
  Val log1p(const Val& a) { return unary(Op::Log1p, a); }
  Val asin(const Val& a) { return unary(Op::Asin, a); }
  Val acos(const Val& a) { return unary(Op::Acos, a); }
  Val atan(const Val& a) { return unary(Op::Atan, a); }
  Val sinh(const Val& a) { return unary(Op::Sinh, a); }
  Val cosh(const Val& a) { return unary(Op::Cosh, a); }
  Val asinh(const Val& a) { return unary(Op::Asinh, a); }
  Val acosh(const Val& a) { return unary(Op::Acosh, a); }
  Val atanh(const Val& a) { return unary(Op::Atanh, a); }
  Val is_nan(const Val& a) { return unary(Op::IsNan, a); }
  Val is_inf(const Val& a) { return unary(Op::IsInf, a); }
  Val min(const Val& a, const Val& b) { return binary(Op::Min, a, b); }
  Val max(const Val& a, const Val& b) { return binary(Op::Max, a, b); }
  Val pow(const Val& a, const Val& b) { return binary(Op::Pow, a, b); }
  /// atan2(y, x), as C's.
  Val atan2(const Val& y, const Val& x) { return binary(Op::Atan2, y, x); }
  /// i32/u32: the high 32 bits of the full product (a * b is the low 32).
  Val mul_hi(const Val& a, const Val& b) { return binary(Op::MulHi, a, b); }
  Val fma(const Val& a, const Val& b, const Val& c);
  Val select(const Val& cond, const Val& a, const Val& b);
  Val cast(const Val& a, Type to);
  Val bitcast(const Val& a, Type to);
  Val vec(std::span<const Val> lanes);
  Val vec(std::initializer_list<Val> lanes) { return vec(std::span<const Val>(lanes)); }
  Val extract(const Val& v, int lane);

  // ---- structure ----
  void if_(const Val& cond, const std::function<void()>& then);
  void if_else(const Val& cond, const std::function<void()>& then,
               const std::function<void()>& otherwise);
  /// for (i = start; i < end; i += step) body(i); step > 0.
  void for_(const Val& start, const Val& end, const Val& step,
            const std::function<void(Val)>& body);
  void for_(int64_t start, const Val& end, int64_t step, const std::function<void(Val)>& body);

  // ---- cooperative matrices (tensor cores; every lane of a subgroup takes part) ----
  /// A rows x cols fragment of `scalar` elements for its role in acc += a * b.
  Frag fragment(std::string name, FragmentUse use, ScalarType scalar, int rows, int cols);
  void frag_fill(const Frag& f, const Val& value);
  /// Reads `f` from `m` at element `index`, a row (col_major: a column) every `stride`.
  void frag_load(const Frag& f, const Mem& m, const Val& index, const Val& stride, bool col_major);
  void frag_store(const Frag& f, const Mem& m, const Val& index, const Val& stride, bool col_major);
  /// acc += a * b.
  void frag_mma(const Frag& acc, const Frag& a, const Frag& b);

  // ---- subgroup ----
  Val shuffle(const Val& v, const Val& lane);
  Val shuffle_xor(const Val& v, const Val& mask);
  Val subgroup_add(const Val& v);
  Val subgroup_min(const Val& v);
  Val subgroup_max(const Val& v);
  Val ballot(const Val& pred);

  /// Low level: appends an instruction; `type` is its result type (void: none).
  Val emit(Op op, Type type, std::initializer_list<Val> args, uint32_t ref = 0,
           Space space = Space::Global);
  const Kernel& kernel() const { return k_; }
  /// The kernel, validated (ValueError naming the kernel and the instruction otherwise).
  Kernel finish();

 private:
  friend class Var;
  Val make(Inst inst);
  void frag_memory(Op op, const Frag& f, const Mem& m, const Val& index, const Val& stride,
                   bool col_major);
  Kernel k_;
};

// Operators: both operands of the same type; a number on one side takes the other's type.
#define EMBER_KERNEL_BINARY_OP(sym, code)                                 \
  inline Val operator sym(const Val& a, const Val& b) {                   \
    return a.builder().binary(Op::code, a, b);                            \
  }                                                                       \
  inline Val operator sym(const Val& a, double b) {                       \
    return a.builder().binary(Op::code, a, a.builder().lit(a.type(), b)); \
  }                                                                       \
  inline Val operator sym(double a, const Val& b) {                       \
    return b.builder().binary(Op::code, b.builder().lit(b.type(), a), b); \
  }
EMBER_KERNEL_BINARY_OP(+, Add)
EMBER_KERNEL_BINARY_OP(-, Sub)
EMBER_KERNEL_BINARY_OP(*, Mul)
EMBER_KERNEL_BINARY_OP(/, Div)
EMBER_KERNEL_BINARY_OP(%, Rem)
EMBER_KERNEL_BINARY_OP(&, And)
EMBER_KERNEL_BINARY_OP(|, Or)
EMBER_KERNEL_BINARY_OP(^, Xor)
EMBER_KERNEL_BINARY_OP(<<, Shl)
EMBER_KERNEL_BINARY_OP(>>, Shr)
EMBER_KERNEL_BINARY_OP(<, Lt)
EMBER_KERNEL_BINARY_OP(<=, Le)
EMBER_KERNEL_BINARY_OP(>, Gt)
EMBER_KERNEL_BINARY_OP(>=, Ge)
EMBER_KERNEL_BINARY_OP(==, Eq)
EMBER_KERNEL_BINARY_OP(!=, Ne)
EMBER_KERNEL_BINARY_OP(&&, And)
EMBER_KERNEL_BINARY_OP(||, Or)
#undef EMBER_KERNEL_BINARY_OP
inline Val operator-(const Val& a) { return a.builder().unary(Op::Neg, a); }
inline Val operator!(const Val& a) { return a.builder().unary(Op::Not, a); }
inline Val operator~(const Val& a) { return a.builder().unary(Op::Not, a); }

}  // namespace ember::kernel
