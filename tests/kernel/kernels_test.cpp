// The elementwise and reduction kernels: built, validated, run through the passes, rendered
// and compiled with NVRTC (skipped where NVRTC is missing).
#include <gtest/gtest.h>

#include <filesystem>
#include <random>

#include "ember/core/error.h"
#include "ember/kernel/codegen/cuda.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/passes.h"
#include "tests/kernel/compile_options.h"

using namespace ember;
using namespace ember::kernel;
namespace fs = std::filesystem;

TEST(KernelKernels, ElementwiseCoversTheOpTableFamilies) {
  int built = 0;
  for (int c = 0; c < ember::kNumOps; ++c) {
    auto op = static_cast<OpCode>(c);
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32,
                    DType::I8, DType::U8, DType::Bool}) {
      if (!elementwise_supported(op, t)) continue;
      for (bool dense : {false, true}) {
        ElementwiseSpec s{op, t};
        s.rank = 3;
        s.contiguous = dense;
        Kernel k = elementwise_kernel(s);
        default_pipeline().run(k);
        EXPECT_NO_THROW(render_cuda(k)) << k.name;
        ++built;
      }
    }
  }
  EXPECT_GT(built, 300);
  EXPECT_THROW(elementwise_kernel({OpCode::Matmul, DType::F32}), ValueError);
  EXPECT_THROW(elementwise_kernel({OpCode::Exp, DType::I32}), ValueError);
}

TEST(KernelKernels, DensePathUsesVectorAccesses) {
  ElementwiseSpec s{OpCode::Add, DType::BF16};
  s.contiguous = true;
  Kernel k = elementwise_kernel(s);
  std::string d = dump(k);
  EXPECT_NE(d.find(":bf16x8 = load a["), std::string::npos) << d;
  EXPECT_NE(d.find("store out["), std::string::npos) << d;
  EXPECT_EQ(k.params[0].align, 8);
  EXPECT_EQ(vector_width(DType::F32), 4);
  EXPECT_EQ(vector_width(DType::F64), 2);
  EXPECT_EQ(vector_width(DType::U8), 8);
}

TEST(KernelKernels, ReductionUsesSubgroupsAndSharedMemory) {
  Kernel k = reduce_kernel({OpCode::Max, DType::F16});
  std::string d = dump(k);
  EXPECT_NE(d.find("subgroup_max"), std::string::npos) << d;
  EXPECT_NE(d.find("shared partial: f32[32]"), std::string::npos) << d;
  EXPECT_NE(d.find("barrier"), std::string::npos) << d;
  EXPECT_THROW(reduce_kernel({OpCode::CumSum, DType::F32}), ValueError);
  EXPECT_THROW(reduce_kernel({OpCode::Sum, DType::Bool}), ValueError);
  for (OpCode op : {OpCode::Sum, OpCode::Max, OpCode::Min})
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I64, DType::I32,
                    DType::I8, DType::U8})
      for (bool wide : {false, true}) EXPECT_NO_THROW(render_cuda(reduce_kernel({op, t, wide})));
}

// One NVRTC compile per family and dtype class: the strided and dense elementwise paths in
// f32, f16, bf16, i64 and bool, and the reductions.
TEST(KernelKernels, CompileWithNvrtc) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  std::random_device rd;
  fs::path dir = fs::temp_directory_path() / ("ember-kernels-" + std::to_string(rd()));
  KernelCache cache(dir);
  std::vector<Kernel> ks;
  auto ew = [&](OpCode op, DType t, int rank, bool dense, bool wide = false) {
    ElementwiseSpec s{op, t};
    s.rank = rank;
    s.contiguous = dense;
    s.wide_index = wide;
    ks.push_back(elementwise_kernel(s));
  };
  ew(OpCode::Exp, DType::F32, 2, false);
  ew(OpCode::Sigmoid, DType::F32, 1, true);
  ew(OpCode::Add, DType::F16, 3, false);
  ew(OpCode::Remainder, DType::BF16, 1, true);
  ew(OpCode::Remainder, DType::I64, 4, false, true);
  ew(OpCode::Less, DType::I32, 1, true);
  ew(OpCode::LogicalXor, DType::Bool, 2, false);
  ks.push_back(reduce_kernel({OpCode::Sum, DType::F32}));
  ks.push_back(reduce_kernel({OpCode::Max, DType::BF16, true}));
  ks.push_back(reduce_kernel({OpCode::Min, DType::I64}));
  for (Kernel& k : ks) {
    default_pipeline().run(k);
    CudaBinary bin;
    try {
      bin = compile_cuda(k, opts(&cache));
    } catch (const ValueError& e) {
      ADD_FAILURE() << e.what() << "\n" << render_cuda(k);
      continue;
    }
    EXPECT_EQ(bin.format, CudaBinary::Cubin) << k.name;
    EXPECT_GT(bin.data.size(), 1000u) << k.name;
    EXPECT_FALSE(bin.cached) << k.name;
    EXPECT_TRUE(compile_cuda(k, opts(&cache)).cached) << k.name;
  }
  fs::remove_all(dir);
}

// expm1, log1p, the inverse and hyperbolic functions and atan2: one IR instruction each,
// rendered as CUDA's accurate functions (f suffix for f32 and the halves, computed in f32),
// and compiled with NVRTC.
TEST(KernelKernels, InverseAndHyperbolicMath) {
  const std::pair<OpCode, const char*> ops[] = {
      {OpCode::Expm1, "expm1"}, {OpCode::Log1p, "log1p"}, {OpCode::Asin, "asin"},
      {OpCode::Acos, "acos"},   {OpCode::Atan, "atan"},   {OpCode::Sinh, "sinh"},
      {OpCode::Cosh, "cosh"},   {OpCode::Asinh, "asinh"}, {OpCode::Acosh, "acosh"},
      {OpCode::Atanh, "atanh"}, {OpCode::Atan2, "atan2"}};
  std::string why;
  bool nvrtc = nvrtc_available(&why);
  KernelCache cache("");
  for (auto [op, fn] : ops) {
    EXPECT_FALSE(elementwise_supported(op, DType::I32)) << name(op);
    for (DType t : {DType::F32, DType::F64, DType::BF16}) {
      ASSERT_TRUE(elementwise_supported(op, t)) << name(op);
      for (bool dense : {false, true}) {
        ElementwiseSpec s{op, t};
        s.rank = 2;
        s.contiguous = dense;
        Kernel k = elementwise_kernel(s);
        default_pipeline().run(k);
        std::string src = render_cuda(k);
        std::string call = std::string(fn) + (t == DType::F64 ? "(" : "f(");
        EXPECT_NE(src.find(call), std::string::npos) << k.name << "\n" << src;
        if (nvrtc) {
          EXPECT_NO_THROW(compile_cuda(k, opts(&cache))) << k.name;
        }
      }
    }
  }
  // The validator names the instruction when its operands are not floats.
  KernelBuilder kb("atan2_int");
  Val a = kb.scalar("a", ScalarType::I32);
  try {
    kb.atan2(a, a);
    kb.finish();
    FAIL() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("atan2 needs floats"), std::string::npos) << e.what();
  }
}
