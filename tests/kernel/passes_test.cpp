// The named passes: folding, deduplication, vectorization, dead code; the pass manager.
#include <gtest/gtest.h>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/passes.h"

using namespace ember;
using namespace ember::kernel;

namespace {
int count(const Kernel& k, Op op) {
  int n = 0;
  for (const Inst& i : k.body) n += i.op == op;
  return n;
}
}  // namespace

TEST(KernelPasses, FoldsExactArithmeticAndIdentities) {
  KernelBuilder kb("fold");
  Mem out = kb.buffer("out", ScalarType::I32, Access::Write);
  Mem outf = kb.buffer("outf", ScalarType::F32, Access::Write);
  Val i = kb.cast(kb.global_id(0), ScalarType::I32);
  Val c = kb.lit(ScalarType::I32, 6) * 7 - 2;                                     // 40
  kb.store(out, i, (i * 1 + 0) + c);                                              // i + 40
  kb.store(outf, i, kb.cast(kb.lit(ScalarType::I32, 3), ScalarType::F32) / 2.0);  // 1.5
  Val wraps = kb.lit(ScalarType::U8, 250) + kb.lit(ScalarType::U8, 10) == kb.lit(ScalarType::U8, 4);
  kb.store(out, i + 1, kb.select(wraps, kb.lit(ScalarType::I32, 7), kb.lit(ScalarType::I32, 0)));
  Kernel k = kb.finish();
  PassManager pm;
  pm.add("fold_constants").add("eliminate_dead_code");
  EXPECT_EQ(pm.run(k), (std::vector<std::string>{"fold_constants", "eliminate_dead_code"}));
  std::string d = dump(k);
  EXPECT_NE(d.find("const 40\n"), std::string::npos) << d;
  EXPECT_NE(d.find("const 1.5\n"), std::string::npos) << d;
  EXPECT_NE(d.find("const 7\n"), std::string::npos) << d;
  EXPECT_EQ(count(k, Op::Select), 0) << d;
  EXPECT_EQ(count(k, Op::Mul), 0) << d;
  EXPECT_EQ(count(k, Op::Cast), 1) << d;  // only global_id's
}

TEST(KernelPasses, FoldKeepsTheTakenBranch) {
  KernelBuilder kb("branch");
  Mem out = kb.buffer("out", ScalarType::F32, Access::Write);
  Val i = kb.global_id(0);
  kb.if_else(
      kb.lit(ScalarType::I32, 2) > 1, [&] { kb.store(out, i, kb.lit(ScalarType::F32, 1)); },
      [&] { kb.store(out, i, kb.lit(ScalarType::F32, 2)); });
  Kernel k = kb.finish();
  fold_constants(k);
  eliminate_dead_code(k);
  std::string d = dump(k);
  EXPECT_EQ(count(k, Op::If), 0) << d;
  EXPECT_EQ(count(k, Op::Store), 1) << d;
  EXPECT_NE(d.find("const 1\n"), std::string::npos) << d;
  EXPECT_EQ(d.find("const 2\n"), std::string::npos) << d;
}

TEST(KernelPasses, FoldLeavesTranscendentalsAndFloatAdditiveIdentity) {
  KernelBuilder kb("keep");
  Mem out = kb.buffer("out", ScalarType::F32, Access::Write);
  Val x = kb.scalar("x", ScalarType::F32);
  kb.store(out, kb.global_id(0), kb.exp(kb.lit(ScalarType::F32, 1)) + (x + 0.0));
  Kernel k = kb.finish();
  fold_constants(k);
  EXPECT_EQ(count(k, Op::Exp), 1);
  EXPECT_EQ(count(k, Op::Add), 2);
}

TEST(KernelPasses, DeduplicatesVisibleExpressions) {
  KernelBuilder kb("dedupe");
  Mem out = kb.buffer("out", ScalarType::U32, Access::Write);
  Val a = kb.global_id(0) * 4;
  Val b = kb.global_id(0) * 4;
  kb.store(out, a, b);
  Kernel k = kb.finish();
  EXPECT_TRUE(deduplicate(k));
  eliminate_dead_code(k);
  EXPECT_EQ(count(k, Op::Mul), 1) << dump(k);
  EXPECT_EQ(count(k, Op::GlobalId), 1) << dump(k);
}

TEST(KernelPasses, VectorizesConsecutiveAlignedAccesses) {
  KernelBuilder kb("vec4");
  Mem x = kb.buffer("x", ScalarType::F32, Access::Read, 4);
  Mem out = kb.buffer("out", ScalarType::F32, Access::Write, 4);
  Val base = kb.cast(kb.global_id(0), ScalarType::I32) * 4;
  std::vector<Val> v;
  for (int j = 0; j < 4; ++j) v.push_back(kb.exp(kb.load(x, base + j)));
  for (int j = 0; j < 4; ++j) kb.store(out, base + j, v[j]);
  Kernel k = kb.finish();
  PassManager pm = default_pipeline();
  pm.run(k);
  std::string d = dump(k);
  EXPECT_NE(d.find(":f32x4 = load x["), std::string::npos) << d;
  EXPECT_NE(d.find(":f32x4 = vec"), std::string::npos) << d;
  EXPECT_EQ(count(k, Op::Load), 1) << d;
  EXPECT_EQ(count(k, Op::Store), 1) << d;
  EXPECT_EQ(count(k, Op::Extract), 4) << d;
}

TEST(KernelPasses, DoesNotVectorizeWithoutAlignment) {
  for (int align : {1, 4}) {
    KernelBuilder kb("unaligned");
    Mem x = kb.buffer("x", ScalarType::F32, Access::Read, align);
    Mem out = kb.buffer("out", ScalarType::F32, Access::Write);
    // base = 2 * i: only even, so at most pairs; with align 1 nothing.
    Val base = kb.cast(kb.global_id(0), ScalarType::I32) * 2;
    Val s = kb.load(x, base) + kb.load(x, base + 1);
    kb.store(out, kb.cast(kb.global_id(0), ScalarType::I32), s);
    Kernel k = kb.finish();
    vectorize_memory(k);
    std::string d = dump(k);
    if (align == 1)
      EXPECT_EQ(count(k, Op::Extract), 0) << d;
    else
      EXPECT_NE(d.find(":f32x2 = load x["), std::string::npos) << d;
  }
}

TEST(KernelPasses, StoresBetweenLoadsKeepThemApart) {
  KernelBuilder kb("order");
  Mem x = kb.buffer("x", ScalarType::F32, Access::ReadWrite, 4);
  Val base = kb.cast(kb.global_id(0), ScalarType::I32) * 2;
  Val a = kb.load(x, base);
  kb.store(x, base + 1, a);
  Val b = kb.load(x, base + 1);
  kb.store(x, base, b);
  Kernel k = kb.finish();
  vectorize_memory(k);
  EXPECT_EQ(count(k, Op::Extract), 0) << dump(k);
}

TEST(KernelPasses, ManagerNamesPassesAndCatchesBadRewrites) {
  PassManager pm;
  EXPECT_THROW(pm.add("no_such_pass"), ValueError);
  pm.add("breaker", [](Kernel& k) {
    Inst end;
    end.op = Op::EndIf;
    k.body.push_back(end);
    return true;
  });
  Kernel k = KernelBuilder("k").finish();
  try {
    pm.run(k);
    ADD_FAILURE();
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("[kernel k] after pass 'breaker': instruction 0"),
              std::string::npos)
        << e.what();
  }
  EXPECT_EQ(default_pipeline().names().size(), 5u);
  std::vector<std::string> seen;
  PassManager traced = default_pipeline();
  traced.trace = [&](std::string_view p, const Kernel&) { seen.emplace_back(p); };
  Kernel k2 = KernelBuilder("k2").finish();
  traced.run(k2);
  EXPECT_EQ(seen, traced.names());
}

TEST(KernelPasses, DeadCodeRemovesUnusedValuesAndEmptyBlocks) {
  KernelBuilder kb("dead");
  Mem x = kb.buffer("x", ScalarType::F32, Access::Read);
  Var unused = kb.var("unused", ScalarType::F32);
  Val i = kb.global_id(0);
  unused.set(kb.load(x, i));
  kb.if_(i < 4, [&] { kb.exp(kb.load(x, i)); });
  Kernel k = kb.finish();
  EXPECT_TRUE(eliminate_dead_code(k));
  EXPECT_TRUE(k.body.empty()) << dump(k);
}
