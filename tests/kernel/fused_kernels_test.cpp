// Fused-program kernels (kernels/fused.h): built for each layout, validated, run through the
// passes, rendered and compiled with NVRTC to sm_90 cubins (compiles skip where NVRTC is
// missing). tests/cuda/fusion_gpu_test.cpp runs them against the CPU backend.
#include <gtest/gtest.h>

#include <algorithm>

#include <filesystem>
#include <random>

#include "ember/core/error.h"
#include "ember/kernel/codegen/cuda.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "ember/kernel/kernels/fused.h"
#include "ember/kernel/kernels/matmul.h"
#include "ember/kernel/passes.h"
#include "tests/kernel/compile_options.h"

using namespace ember;
using namespace ember::kernel;
using fusion::Program;

namespace {

// gelu(a * b + c).exp() * 0.5 + a, then tanh: the benchmark's chain.
Program chain(DType t) {
  Program p;
  p.shape = Shape{1 << 20};
  p.inputs = {{p.shape, t}, {p.shape, t}, {p.shape, t}};
  auto a = Program::input(0), b = Program::input(1), c = Program::input(2);
  auto m = p.step(OpCode::Mul, t, {a, b});
  auto s = p.step(OpCode::Add, t, {m, c});
  auto g = p.step(OpCode::Gelu, t, {s});
  auto e = p.step(OpCode::Exp, t, {g});
  auto h = p.constant(0.5, t);
  auto y = p.step(OpCode::Add, t, {p.step(OpCode::Mul, t, {e, h}), a});
  p.outputs = {p.step(OpCode::Tanh, t, {y})};
  return p;
}

// Compare, where, casts, a broadcast operand and two outputs of different dtypes.
Program mixed() {
  Program p;
  p.shape = Shape{64, 128};
  p.inputs = {{p.shape, DType::F32}, {Shape{1, 128}, DType::F32}, {p.shape, DType::F16}};
  auto x = Program::input(0), bias = Program::input(1), h = Program::input(2);
  auto y = p.step(OpCode::Add, DType::F32, {x, bias});
  auto pos = p.step(OpCode::Greater, DType::Bool, {y, p.constant(0.0, DType::F32)});
  auto hf = p.step(OpCode::Cast, DType::F32, {h});
  auto r = p.step(OpCode::Where, DType::F32, {pos, y, hf});
  auto i = p.step(OpCode::Cast, DType::I32, {r});
  auto k = p.step(OpCode::Remainder, DType::I32, {i, p.constant(int64_t{7}, DType::I32)});
  p.outputs = {r, k, pos};
  return p;
}

// tanh(x * bias + 0.5), held, and its sum over `dims` (or max/min) of [24, 33, 70].
Program reduced(DType t, OpCode op, Dims dims, bool keep = false) {
  Program p;
  p.shape = Shape{24, 33, 70};
  p.inputs = {{p.shape, t}, {Shape{1, 1, 70}, t}};
  auto y = p.step(OpCode::Mul, t, {Program::input(0), Program::input(1)});
  auto z = p.step(OpCode::Tanh, t, {p.step(OpCode::Add, t, {y, p.constant(0.5, t)})});
  p.outputs = {y};
  ember::Op r{op, {}};
  r.attrs.dims = dims;
  r.attrs.flag = keep;
  Dims out;
  for (int64_t d = 0; d < 3; ++d) {
    bool gone = dims.empty() || std::find(dims.begin(), dims.end(), d) != dims.end();
    if (!gone)
      out.push_back(p.shape[size_t(d)]);
    else if (keep)
      out.push_back(1);
  }
  p.reduction = fusion::Reduction{r, z, {Shape(out), t}};
  return p;
}

void compile(Program p, FusedLayout L, KernelCache& cache) {
  Kernel k = fused_kernel(p, L);
  default_pipeline().run(k);
  try {
    CudaBinary bin = compile_cuda(k, opts(&cache));
    EXPECT_EQ(bin.format, CudaBinary::Cubin) << k.name;
  } catch (const ValueError& e) {
    ADD_FAILURE() << e.what() << "\n" << render_cuda(k);
  }
}

}  // namespace

TEST(FusedKernel, SignatureLeavesOutShapesAndValues) {
  Program a = chain(DType::F32), b = chain(DType::F32);
  b.shape = Shape{3, 7};
  b.constants[0] = Scalar(0.25);
  EXPECT_EQ(a.signature(), b.signature());
  EXPECT_NE(a.signature(), chain(DType::F16).signature());
  Program c = chain(DType::F32);
  c.outputs.push_back(0);  // one more output: another kernel
  EXPECT_NE(a.signature(), c.signature());
  EXPECT_NE(a.dump().find("gelu"), std::string::npos);
  EXPECT_EQ(a.op_names(), "mul, add, gelu, exp, mul, add, tanh");
}

TEST(FusedKernel, LayoutsBuildAndValidate) {
  FusedLayout dense;
  dense.dense = true;
  dense.width = 4;
  Kernel k = fused_kernel(chain(DType::F32), dense);
  EXPECT_EQ(k.params.size(), 3u + 1 + 1 + 1);  // in0..2, out0, n, c0
  std::string src = render_cuda(k);
  EXPECT_NE(src.find("erf"), std::string::npos);
  FusedLayout strided;
  strided.rank = 3;
  strided.wide_index = true;
  Kernel s = fused_kernel(mixed(), strided);
  EXPECT_EQ(s.params.size(), 3u + 3 + 1 + 3 + 3 * 3 + 2);
  FusedLayout bad;
  bad.rank = 9;
  EXPECT_THROW(fused_kernel(mixed(), bad), ValueError);
  Program none = chain(DType::F32);
  none.outputs.clear();
  EXPECT_THROW(fused_kernel(none, dense), ValueError);
  Program unsupported;
  unsupported.shape = Shape{4};
  unsupported.inputs = {{unsupported.shape, DType::Bool}};
  unsupported.outputs = {unsupported.step(OpCode::Exp, DType::Bool, {Program::input(0)})};
  EXPECT_THROW(fused_kernel(unsupported, dense), ValueError);
}

TEST(FusedKernel, CompileWithNvrtc) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("ember-fused-" + std::to_string(rd()));
  KernelCache cache(dir);
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    FusedLayout d;
    d.dense = true;
    d.width = 16 / size_of(t) > 8 ? 8 : 16 / size_of(t);
    d.scalar_inputs = 0b010;  // b read once
    compile(chain(t), d, cache);
    FusedLayout s;
    s.rank = 2;
    compile(chain(t), s, cache);
  }
  FusedLayout d4;
  d4.dense = true;
  d4.width = 4;
  compile(mixed(), d4, cache);
  FusedLayout s3;
  s3.rank = 3;
  s3.wide_index = true;
  compile(mixed(), s3, cache);
  // Programs ending in a reduction: a workgroup per result, and a thread per result.
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    FusedLayout rows;
    rows.kept = 2;
    rows.reduced = 1;
    rows.per_workgroup = true;
    compile(reduced(t, OpCode::Sum, {2}), rows, cache);
    FusedLayout cols;
    cols.kept = 2;
    cols.reduced = 1;
    compile(reduced(t, OpCode::Max, {0}, true), cols, cache);
  }
  FusedLayout all;
  all.kept = 1;
  all.reduced = 2;
  all.per_workgroup = true;
  all.wide_index = true;
  compile(reduced(DType::F32, OpCode::Min, {}), all, cache);
  std::filesystem::remove_all(dir);
}

TEST(FusedKernel, ReductionProgramsBuildAndRejectWhatTheyCannotDo) {
  FusedLayout L;
  L.kept = 2;
  L.reduced = 1;
  Program p = reduced(DType::F32, OpCode::Sum, {1});
  Kernel k = fused_kernel(p, L);
  EXPECT_NO_THROW(validate(k));
  // in0, in1, out0, red, outputs, size, kept0..1, reduced0, 3 strides each for in0, in1, out
  EXPECT_EQ(k.params.size(), 2u + 1 + 1 + 2 + 3 + 3 * 3 + 1);
  EXPECT_NE(L.key(), FusedLayout{}.key());  // the form is part of the cache key
  Program plain = p;
  plain.reduction.reset();
  EXPECT_NE(p.signature(), plain.signature());
  EXPECT_EQ(p.op_names(), "mul, add, tanh, sum");
  EXPECT_NE(p.dump().find("sum %"), std::string::npos) << p.dump();
  Program prod = reduced(DType::F32, OpCode::Sum, {1});
  prod.reduction->op.code = OpCode::Prod;
  EXPECT_THROW(fused_kernel(prod, L), ValueError);
  FusedLayout wide = L;
  wide.kept = 6;
  wide.reduced = 3;
  EXPECT_THROW(fused_kernel(reduced(DType::F32, OpCode::Sum, {1}), wide), ValueError);
}

namespace {
// The IR matmul (the Vulkan backend's; CUDA has cuBLASLt) also renders and compiles for CUDA.
TEST(MatmulKernel, CompileWithNvrtc) {
  std::string why;
  if (!nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why;
  std::random_device rd;
  auto dir = std::filesystem::temp_directory_path() / ("ember-matmul-" + std::to_string(rd()));
  KernelCache cache(dir);
  MatmulSpec big{DType::F32};
  big.tile_m = big.tile_n = 128, big.depth = 8, big.thread_m = big.thread_n = 8;
  big.load_a = MatmulLoad::Vector, big.load_b = MatmulLoad::VectorTransposed;
  big.vector_c = true;
  for (MatmulSpec s :
       {MatmulSpec{DType::F32}, MatmulSpec{DType::BF16}, MatmulSpec{DType::I64}, big}) {
    Kernel k = matmul_kernel(s);
    default_pipeline().run(k);
    CudaBinary bin = compile_cuda(k, opts(&cache));
    EXPECT_EQ(bin.format, CudaBinary::Cubin) << k.name;
  }
  EXPECT_THROW(matmul_kernel({DType::Bool}), ValueError);
  MatmulSpec odd{DType::F32};
  odd.thread_m = 6;  // a thread computes 4 or 8 rows
  EXPECT_THROW(matmul_kernel(odd), ValueError);
  odd.thread_m = 4, odd.depth = 6;  // the depth is a multiple of 4
  EXPECT_THROW(matmul_kernel(odd), ValueError);
  EXPECT_EQ(matmul_groups(MatmulSpec{}, 100, 17, 3), 2 * 1 * 3);  // 64 x 64 tiles
  EXPECT_EQ(matmul_groups(big, 300, 17, 3), 3 * 1 * 3);           // 128 x 128
  EXPECT_EQ(matmul_groups(MatmulSpec{}, 1 << 20, 1 << 20, 1, 1000), 1000);
  EXPECT_EQ(big.shared_bytes(), 2 * (128 * 8 + 8 * 128) * 4);
  EXPECT_EQ(big.tag(), "128x128x8/8x8/vtv");
  std::filesystem::remove_all(dir);
}
}  // namespace
