// The builder and the dump.
#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"

using namespace ember;
using namespace ember::kernel;

TEST(KernelIr, EveryInstructionHasANameAndForm) {
  EXPECT_GT(kNumOps, 60);
  for (int i = 0; i < kNumOps; ++i) EXPECT_FALSE(info(static_cast<Op>(i)).name.empty()) << i;
  EXPECT_EQ(name(Op::ShuffleXor), "shuffle_xor");
  EXPECT_EQ(name(Type::vec(ScalarType::BF16, 8)), "bf16x8");
  EXPECT_EQ(byte_size(Type::vec(ScalarType::F16, 4)), 8);
  EXPECT_EQ(scalar_of(DType::U8), ScalarType::U8);
}

TEST(KernelIr, BuilderWritesReadableKernels) {
  KernelBuilder kb("exp_f32");
  Mem x = kb.buffer("x", ScalarType::F32, Access::Read);
  Mem out = kb.buffer("out", ScalarType::F32, Access::Write);
  Val n = kb.scalar("n", ScalarType::U32);
  Val i = kb.global_id(0);
  kb.if_(i < n, [&] { kb.store(out, i, kb.exp(kb.load(x, i))); });
  Kernel k = kb.finish();
  EXPECT_EQ(dump(k),
            "kernel exp_f32 workgroup(256, 1, 1)\n"
            "  param x: buffer<f32> read\n"
            "  param out: buffer<f32> write\n"
            "  param n: u32\n"
            "{\n"
            "  %0:u32 = param n\n"
            "  %1:u32 = global_id 0\n"
            "  %2:bool = lt %1, %0\n"
            "  if %2\n"
            "    %3:f32 = load x[%1]\n"
            "    %4:f32 = exp %3\n"
            "    store out[%1], %4\n"
            "  end_if\n"
            "}\n");
}

TEST(KernelIr, LoopsCarryStateInVariables) {
  KernelBuilder kb("sum", {32, 1, 1});
  Mem x = kb.buffer("x", ScalarType::F32, Access::Read);
  Mem out = kb.buffer("out", ScalarType::F32, Access::ReadWrite);
  Mem tile = kb.shared("tile", ScalarType::F32, 32);
  Var acc = kb.var("acc", kb.lit(ScalarType::F32, 0));
  Val n = kb.scalar("n", ScalarType::I32);
  kb.for_(0, n, 1, [&](Val j) {
    Val xj = kb.load(x, j);
    acc.set(acc.get() + xj);
  });
  kb.store(tile, kb.local_id(0), acc.get());
  kb.barrier();
  Val lane = kb.subgroup_lane();
  kb.if_else(
      lane == 0, [&] { kb.store(out, lane, kb.subgroup_add(kb.load(tile, lane))); },
      [&] { kb.atomic_add(out, kb.lit(ScalarType::U32, 0), kb.lit(ScalarType::F32, 1)); });
  Kernel k = kb.finish();
  std::string d = dump(k);
  EXPECT_NE(d.find("  shared tile: f32[32]\n"), std::string::npos) << d;
  EXPECT_NE(d.find("  var acc: f32\n"), std::string::npos) << d;
  EXPECT_NE(d.find("%4:i32 = for %2, %1, %3\n    %5:f32 = load x[%4]\n    %6:f32 = var_read acc"),
            std::string::npos)
      << d;
  EXPECT_NE(d.find("  barrier\n"), std::string::npos) << d;
  EXPECT_NE(d.find("  else\n    %"), std::string::npos) << d;
  EXPECT_NE(d.find("atomic_add out[%"), std::string::npos) << d;
  EXPECT_EQ(k.shared_bytes(), 128);
}

TEST(KernelIr, LiteralsTakeTheOtherOperandsType) {
  KernelBuilder kb("lits");
  Val a = kb.scalar("a", ScalarType::I64);
  Val b = a * 3 + 1;
  EXPECT_EQ(b.type(), Type(ScalarType::I64));
  Val f = kb.scalar("f", ScalarType::F16) * 0.5;
  EXPECT_EQ(f.type(), Type(ScalarType::F16));
  Val v = kb.vec({f, f, f, f});
  EXPECT_EQ((v + 1.0).type(), Type::vec(ScalarType::F16, 4));
  EXPECT_EQ(kb.extract(v, 3).type(), Type(ScalarType::F16));
  EXPECT_EQ((a < 2).type(), Type(ScalarType::Bool));
  EXPECT_THROW(a + 1.5, ValueError);  // not an integer
  EXPECT_THROW(kb.lit(ScalarType::U8, 256), ValueError);
  EXPECT_THROW(kb.lit(ScalarType::U32, -1), ValueError);
  EXPECT_NO_THROW(kb.lit(ScalarType::I8, -128));
}

TEST(KernelIr, ConstantsDumpExactly) {
  KernelBuilder kb("c");
  kb.lit(ScalarType::F64, 0.1);
  kb.lit(ScalarType::Bool, 1);
  kb.lit_int(ScalarType::I64, INT64_MIN);
  std::string d = dump(kb.kernel());
  EXPECT_NE(d.find("%0:f64 = const 0.10000000000000001"), std::string::npos) << d;
  EXPECT_NE(d.find("%1:bool = const true"), std::string::npos) << d;
  EXPECT_NE(d.find("%2:i64 = const -9223372036854775808"), std::string::npos) << d;
}
