// The kernel IR: a kernel is a named list of instructions over SSA values, with structured
// control flow (if/else/end_if, for/end_for markers that nest), typed parameters (buffers and
// scalars), shared arrays and local variables. Every target renders this one form; Fusion
// emits it. Instructions are declared once, in instructions.def.
//
// Values are numbered (%0, %1, ...), each defined by exactly one instruction, and visible in
// the block that defines them and the blocks nested in it. Mutable state (loop-carried sums)
// lives in local variables (var_read / var_write).
//
//   kernel::Kernel k = kernel::KernelBuilder("k").finish();
//   std::string text = kernel::dump(k);   // "kernel k workgroup(256, 1, 1) { ... }"
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/export.h"
#include "ember/kernel/type.h"

namespace ember::kernel {

enum class Op : uint8_t {
#define EMBER_KINST(code, ...) code,
#include "ember/kernel/instructions.def"
#undef EMBER_KINST
};
inline constexpr int kNumOps = 0
#define EMBER_KINST(...) +1
#include "ember/kernel/instructions.def"
#undef EMBER_KINST
    ;

/// The typing rule of an instruction (instructions.def explains each row).
enum class Form : uint8_t {
  Leaf,
  Geometry,
  Unary,
  Logic1,
  Math,
  Test,
  Arith,
  Math2,
  Logic2,
  Shift,
  Compare,
  Fma,
  Select,
  Cast,
  Bitcast,
  Vec,
  Extract,
  Load,
  Store,
  Atomic,
  AtomicCas,
  VarRead,
  VarWrite,
  If,
  Else,
  End,
  For,
  Barrier,
  Shuffle,
  SubgroupReduce,
  Ballot,
  FragFill,
  FragMemory,
  FragMma
};
enum class Effect : uint8_t { Pure, Read, Effect, Control };

struct OpInfo {
  std::string_view name;
  Form form;
  int arity;  // -1: any
  Effect effect;
};
EMBER_API const OpInfo& info(Op op);
inline std::string_view name(Op op) { return info(op).name; }

using ValueId = uint32_t;
inline constexpr ValueId kNoValue = 0xffffffffu;

enum class Space : uint8_t { Global, Shared };
enum class Access : uint8_t { Read, Write, ReadWrite };
EMBER_API std::string_view name(Access a);

/// A kernel parameter: a buffer of `type` elements in global memory, or a scalar value.
struct Param {
  enum Kind : uint8_t { Buffer, Value };
  std::string name;
  Kind kind = Value;
  Type type;
  Access access = Access::Read;  // buffers only
  int align = 1;  // buffers: the element offset of the data is a multiple of this (vectorize)
};
struct SharedArray {
  std::string name;
  Type type;
  int64_t count = 0;
};
struct LocalVar {
  std::string name;
  Type type;
};

/// A cooperative matrix's role in acc += a * b: a is rows x k, b k x cols, acc rows x cols.
enum class FragmentUse : uint8_t { A, B, Accumulator };
EMBER_API std::string_view name(FragmentUse u);
/// A cooperative matrix: a rows x cols tile of `scalar` elements held by a subgroup.
struct Fragment {
  std::string name;
  FragmentUse use = FragmentUse::A;
  ScalarType scalar = ScalarType::F16;
  int rows = 16, cols = 16;
};

struct Inst {
  Op op = Op::Const;
  Type type;                    // of the result; void when there is none
  ValueId result = kNoValue;    // the value defined, if any
  std::vector<ValueId> args;    // operands
  uint32_t ref = 0;             // param / shared array / variable index, dim, lane
  Space space = Space::Global;  // memory instructions
  int64_t imm = 0;              // const ints and bool
  double fimm = 0;              // const floats
};

struct EMBER_API Kernel {
  std::string name;
  std::array<int, 3> workgroup{256, 1, 1};  // threads per workgroup, fixed at build time
  std::vector<Param> params;
  std::vector<SharedArray> shared;
  std::vector<LocalVar> vars;
  std::vector<Fragment> fragments;
  std::vector<Inst> body;
  uint32_t num_values = 0;  // values are 0 .. num_values - 1

  int64_t shared_bytes() const;
  int workgroup_threads() const { return workgroup[0] * workgroup[1] * workgroup[2]; }
};

/// What the cooperative-matrix instructions name, packed in Inst::imm: frag_fill and
/// frag_load/store their fragment (and the layout: column-major or row-major); frag_mma its
/// accumulator, a and b.
inline int64_t frag_imm(uint32_t fragment, bool col_major = false) {
  return int64_t(fragment) | (col_major ? int64_t(1) << 40 : 0);
}
inline int64_t mma_imm(uint32_t acc, uint32_t a, uint32_t b) {
  return int64_t(acc) | int64_t(a) << 20 | int64_t(b) << 40;
}
inline uint32_t frag_of(const Inst& i) { return uint32_t(i.imm & 0xfffff); }
inline bool frag_col_major(const Inst& i) { return (i.imm >> 40) & 1; }
inline uint32_t mma_a(const Inst& i) { return uint32_t((i.imm >> 20) & 0xfffff); }
inline uint32_t mma_b(const Inst& i) { return uint32_t((i.imm >> 40) & 0xfffff); }

/// The type an instruction of `op` gives for operands of these types (`cast`, `bitcast`,
/// `vec`, `load` and `param` take theirs from the instruction); void when it defines none.
/// Does not check: the validator does.
EMBER_API Type result_type(Op op, const Type* args, int nargs);

/// One instruction in the dump's syntax: "%4:f32 = load x[%3]".
EMBER_API std::string dump(const Kernel& k, const Inst& inst);
/// The whole kernel, one instruction a line, blocks indented.
EMBER_API std::string dump(const Kernel& k);

}  // namespace ember::kernel
