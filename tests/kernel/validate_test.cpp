// Every rejection of the validator, with the message it gives.
#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/validate.h"

using namespace ember;
using namespace ember::kernel;

namespace {

// Validation of `k` fails with a ValueError whose message contains each of `parts`.
void expect_rejected(const Kernel& k, std::initializer_list<std::string> parts,
                     const ValidateOptions& o = {}) {
  try {
    validate(k, o);
    ADD_FAILURE() << "accepted:\n" << dump(k);
  } catch (const ValueError& e) {
    std::string m = e.what();
    for (const std::string& p : parts) EXPECT_NE(m.find(p), std::string::npos) << m;
  }
}

}  // namespace

TEST(KernelValidate, RejectsMismatchedOperandTypes) {
  KernelBuilder kb("mix");
  Val a = kb.scalar("a", ScalarType::F32);
  Val b = kb.scalar("b", ScalarType::I32);
  kb.binary(Op::Add, a, b);
  expect_rejected(kb.kernel(), {"[kernel mix] instruction 2 (%2:f32 = add %0, %1)",
                                "operand types differ: f32 and i32"});
}

TEST(KernelValidate, RejectsWrongTypesForAnInstruction) {
  KernelBuilder kb("t");
  kb.exp(kb.scalar("i", ScalarType::I32));
  expect_rejected(kb.kernel(), {"exp needs a float, not i32"});
  KernelBuilder kb2("t2");
  Val b = kb2.lit(ScalarType::Bool, 1);
  kb2.binary(Op::Lt, b, b);
  expect_rejected(kb2.kernel(), {"bools have no order"});
  KernelBuilder kb3("t3");
  kb3.if_(kb3.lit(ScalarType::I32, 1), [] {});
  expect_rejected(kb3.kernel(), {"the condition must be bool, not i32"});
}

TEST(KernelValidate, RejectsUndefinedAndOutOfScopeValues) {
  KernelBuilder kb("undef");
  kb.scalar("a", ScalarType::F32);
  Kernel k = kb.kernel();
  Inst bad{Op::Neg, ScalarType::F32, k.num_values++, {7}};
  k.body.push_back(bad);
  expect_rejected(k, {"operand 0 (%7) is not defined before"});

  KernelBuilder kb2("scope");
  Val c = kb2.lit(ScalarType::Bool, 1);
  Val inner;
  kb2.if_(c, [&] { inner = kb2.lit(ScalarType::F32, 2); });
  kb2.neg(inner);
  expect_rejected(kb2.kernel(), {"operand %1 is defined in a block that has ended"});
}

TEST(KernelValidate, RejectsWritesToReadOnlyBuffers) {
  KernelBuilder kb("ro");
  Mem x = kb.buffer("x", ScalarType::F32, Access::Read);
  kb.store(x, kb.global_id(0), kb.lit(ScalarType::F32, 1));
  expect_rejected(kb.kernel(), {"writes the read-only buffer x"});
  KernelBuilder kb2("wo");
  Mem y = kb2.buffer("y", ScalarType::F32, Access::Write);
  kb2.atomic_add(y, kb2.global_id(0), kb2.lit(ScalarType::F32, 1));
  expect_rejected(kb2.kernel(), {"reads the write-only buffer y"});
}

TEST(KernelValidate, RejectsStoresOfTheWrongElementType) {
  KernelBuilder kb("st");
  Mem y = kb.buffer("y", ScalarType::F32, Access::Write);
  kb.store(y, kb.global_id(0), kb.lit(ScalarType::F64, 1));
  expect_rejected(kb.kernel(), {"stores f64 into elements of f32"});
  KernelBuilder kb2("idx");
  Mem z = kb2.buffer("z", ScalarType::F32, Access::Read);
  kb2.load(z, kb2.lit(ScalarType::F32, 0));
  expect_rejected(kb2.kernel(), {"the index must be i32, u32 or i64, not f32"});
}

TEST(KernelValidate, RejectsBarriersInDivergentControlFlow) {
  KernelBuilder kb("div");
  kb.if_(kb.local_id(0) < 16, [&] { kb.barrier(); });
  expect_rejected(kb.kernel(), {"barrier in divergent control flow"});
  KernelBuilder kb2("loop");
  kb2.for_(kb2.local_id(0), kb2.lit(ScalarType::U32, 64), kb2.lit(ScalarType::U32, 32),
           [&](Val) { kb2.barrier(); });
  expect_rejected(kb2.kernel(), {"barrier in divergent control flow"});
  // Uniform conditions (group ids, parameters) are fine.
  KernelBuilder kb3("uniform");
  Val n = kb3.scalar("n", ScalarType::U32);
  kb3.if_(kb3.group_id(0) < n, [&] { kb3.barrier(); });
  kb3.for_(0, n, 1, [&](Val) { kb3.barrier(); });
  EXPECT_NO_THROW(validate(kb3.kernel()));
}

TEST(KernelValidate, RejectsSharedMemoryOverTheLimit) {
  KernelBuilder kb("big");
  kb.shared("tile", ScalarType::F32, 16 * 1024);
  expect_rejected(kb.kernel(),
                  {"[kernel big] shared memory of 65536 bytes is over the limit of 49152"});
  ValidateOptions o;
  o.max_shared_bytes = 228 * 1024;
  EXPECT_NO_THROW(validate(kb.kernel(), o));
}

TEST(KernelValidate, RejectsBadVectorWidths) {
  KernelBuilder kb("w");
  Val a = kb.lit(ScalarType::F32, 1);
  kb.vec({a, a, a});
  expect_rejected(kb.kernel(), {"bad vector width 3"});
  KernelBuilder kb2("lane");
  Val b = kb2.lit(ScalarType::F32, 1);
  kb2.extract(kb2.vec({b, b}), 2);
  expect_rejected(kb2.kernel(), {"lane 2 of a f32x2"});
}

TEST(KernelValidate, RejectsUnbalancedBlocks) {
  KernelBuilder kb("open");
  kb.emit(Op::If, Type(), {kb.lit(ScalarType::Bool, 1)});
  expect_rejected(kb.kernel(), {"instruction 1 (if %0): if is never closed"});
  KernelBuilder kb2("close");
  kb2.emit(Op::EndFor, Type(), {});
  expect_rejected(kb2.kernel(), {"end_for does not close an open for"});
  KernelBuilder kb3("else");
  kb3.emit(Op::Else, Type(), {});
  expect_rejected(kb3.kernel(), {"else without an open if"});
}

TEST(KernelValidate, RejectsAtomicsOnUnsupportedTypes) {
  KernelBuilder kb("at");
  Mem h = kb.buffer("h", ScalarType::F16, Access::ReadWrite);
  kb.atomic_max(h, kb.global_id(0), kb.lit(ScalarType::F16, 1));
  expect_rejected(kb.kernel(), {"atomic_max is not available on f16"});
}

TEST(KernelValidate, RejectsBadDeclarations) {
  expect_rejected(KernelBuilder("9lives").kernel(), {"the kernel name is not an identifier"});
  KernelBuilder kb("dup");
  kb.buffer("x", ScalarType::F32, Access::Read);
  kb.scalar("x", ScalarType::I32);
  expect_rejected(kb.kernel(), {"the name 'x' is declared twice"});
  expect_rejected(KernelBuilder("wide", {64, 64, 1}).kernel(),
                  {"workgroup of 4096 threads is over the limit of 1024"});
  KernelBuilder kb2("var");
  Var v = kb2.var("v", ScalarType::F32);
  v.set(kb2.lit(ScalarType::I32, 1));
  expect_rejected(kb2.kernel(), {"writes i32 into variable v of f32"});
}

TEST(KernelValidate, FinishValidates) {
  KernelBuilder kb("fin");
  kb.exp(kb.scalar("i", ScalarType::I32));
  EXPECT_THROW(kb.finish(), ValueError);
}

TEST(KernelValidate, RejectsMisusedCooperativeMatrices) {
  // Shapes that do not multiply, roles swapped, element types that differ from the memory's,
  // and fragments in divergent control flow (every lane of a subgroup takes part).
  auto build = [](int a_cols, FragmentUse b_use, ScalarType mem, bool divergent) {
    KernelBuilder kb("mma");
    Mem s = kb.shared("s", mem, 256);
    Frag a = kb.fragment("fa", FragmentUse::A, ScalarType::F16, 16, a_cols);
    Frag b = kb.fragment("fb", b_use, ScalarType::F16, 16, 16);
    Frag c = kb.fragment("fc", FragmentUse::Accumulator, ScalarType::F32, 16, 16);
    Val zero = kb.lit(ScalarType::U32, 0), stride = kb.lit(ScalarType::U32, 16);
    auto body = [&] {
      kb.frag_load(a, s, zero, stride, false);
      kb.frag_load(b, s, zero, stride, true);
      kb.frag_fill(c, kb.lit(ScalarType::F32, 0));
      kb.frag_mma(c, a, b);
    };
    if (divergent)
      kb.if_(kb.local_id(0) < kb.lit(ScalarType::U32, 32), body);
    else
      body();
    return kb.kernel();
  };
  EXPECT_NO_THROW(validate(build(16, FragmentUse::B, ScalarType::F16, false)));
  expect_rejected(build(8, FragmentUse::B, ScalarType::F16, false),
                  {"shapes do not multiply: 16x8 * 16x16 into 16x16"});
  expect_rejected(build(16, FragmentUse::A, ScalarType::F16, false),
                  {"frag_mma needs an accumulator, an a and a b fragment"});
  expect_rejected(build(16, FragmentUse::B, ScalarType::F32, false),
                  {"frag_load of fragment fa of f16 on elements of f32"});
  expect_rejected(build(16, FragmentUse::B, ScalarType::F16, true),
                  {"frag_load in divergent control flow"});
  // The dump names the fragments, the memory and the layout.
  std::string d = dump(build(16, FragmentUse::B, ScalarType::F16, false));
  EXPECT_NE(d.find("fragment fa: a<f16, 16x16>"), std::string::npos) << d;
  EXPECT_NE(d.find("frag_load fb, shared s[%0], stride %1, col_major"), std::string::npos) << d;
  EXPECT_NE(d.find("frag_mma fc += fa * fb"), std::string::npos) << d;
}
