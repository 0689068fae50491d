// The matmul kernels on Vulkan: the tiled kernel and the cooperative-matrix one compile (the
// latter to SPV_KHR_cooperative_matrix), the backend picks loads by the operands' layout, and
// both run against the CPU backend's matmul on ragged, transposed and broadcast operands.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "ember/backends/vulkan/gemm.h"
#include "ember/backends/vulkan/spirv.h"
#include "ember/kernel/codegen/glsl.h"
#include "ember/kernel/kernels/matmul.h"
#include "ember/kernel/kernels/matmul_coop.h"
#include "ember/kernel/passes.h"
#include "tests/vulkan/vulkan_fixture.h"

namespace ember {
namespace {

using kernel::Kernel;

TEST(VulkanCompile, Matmul) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64})
    compiles(kernel::matmul_kernel({t}));
  compiles(kernel::matmul_kernel({DType::F32, true}));
  using L = kernel::MatmulLoad;
  for (DType t : {DType::F32, DType::F16, DType::BF16})
    for (L la : {L::Vector, L::VectorTransposed})
      for (L lb : {L::Vector, L::VectorTransposed}) {
        kernel::MatmulSpec s{t};
        s.tile_m = s.tile_n = 128, s.depth = 8, s.thread_m = s.thread_n = 8;
        s.load_a = la, s.load_b = lb, s.vector_c = true;
        compiles(kernel::matmul_kernel(s));
      }
}

// The backend's GEMM reads 4-element vectors along each operand's contiguous dimension where
// the strides and addresses allow it, and the large tiles where they fill the device.
TEST(VulkanCompile, GemmLoadsFollowTheOperandsLayout) {
  using L = kernel::MatmulLoad;
  auto first = [](gpu::GemmCall g, gpu::Address a = 256, gpu::Address c = 256) {
    return vulkan::gemm_candidates(g, a, 256, c, 48 << 10, 128).front().spec;
  };
  // A [m, k] row-major, B [k, n] row-major: both along their columns (A's K, B's N).
  gpu::GemmCall g{DType::F32, 4096, 4096, 4096, {4096, false}, {4096, false}, 1, 0, 0, 0};
  kernel::MatmulSpec s = first(g);
  EXPECT_EQ(s.load_a, L::Vector);
  EXPECT_EQ(s.load_b, L::Vector);
  EXPECT_TRUE(s.vector_c);
  EXPECT_EQ(s.tile_m, 128);
  // Column-major operands (A^T @ B^T, as in a linear layer's backward pass): along their rows.
  g.va = {4096, true}, g.vb = {4096, true};
  s = first(g);
  EXPECT_EQ(s.load_a, L::VectorTransposed);
  EXPECT_EQ(s.load_b, L::VectorTransposed);
  // An odd leading dimension, a misaligned address, a dimension not a multiple of 4: scalars.
  g.va = {4097, false};
  EXPECT_EQ(first(g).load_a, L::Scalar);
  g.va = {4096, false};
  EXPECT_EQ(first(g, 260).load_a, L::Scalar);
  EXPECT_FALSE(first(g, 256, 260).vector_c);
  gpu::GemmCall small{DType::F32, 3, 5, 4, {4, false}, {5, false}, 1, 0, 0, 0};
  s = first(small);
  EXPECT_EQ(s.load_a, L::Vector);  // K = 4
  EXPECT_EQ(s.load_b, L::Scalar);  // N = 5
  EXPECT_FALSE(s.vector_c);
  EXPECT_EQ(s.tile_m, 64);  // a small problem: more, smaller tiles
  // f64: scalar loads (4 doubles are 32 bytes), tiles that fit the shared memory.
  g.dtype = DType::F64;
  std::vector<vulkan::GemmChoice> f64 = vulkan::gemm_candidates(g, 256, 256, 256, 32 << 10, 128);
  ASSERT_FALSE(f64.empty());
  for (const vulkan::GemmChoice& ch : f64) {
    EXPECT_EQ(ch.spec.load_a, L::Scalar);
    EXPECT_LE(ch.spec.shared_bytes(), 32 << 10);
  }
}

TEST(VulkanCompile, CooperativeMatricesBecomeKhrSpirv) {
  // glslang writes SPV_NV_cooperative_matrix; what reaches the driver is SPV_KHR's: three
  // types (a, b, accumulator: the use operand a constant 0, 1, 2), loads with a layout
  // constant before the stride, no NV instruction left.
  kernel::CoopMatmulSpec s;
  s.b_col_major = true;
  Kernel k = kernel::coop_matmul_kernel(s);
  kernel::default_pipeline().run(k);
  std::vector<uint32_t> words = vulkan::compile_spirv(k);
  std::map<uint32_t, uint32_t> constants;  // id -> value (32-bit)
  std::vector<uint32_t> uses;
  int loads = 0, stores = 0, mma = 0, nv = 0, khr_cap = 0, khr_ext = 0;
  std::vector<uint32_t> load_layouts;  // layout ids
  for (size_t i = 5; i < words.size(); i += std::max<uint32_t>(1, words[i] >> 16)) {
    uint32_t op = words[i] & 0xffffu, wc = words[i] >> 16;
    if (op == 43 && wc == 4) constants[words[i + 2]] = words[i + 3];
    if (op == 4456) uses.push_back(words[i + 6]);
    if (op == 4457) ++loads, load_layouts.push_back(words[i + 4]);
    if (op == 4458) ++stores;
    if (op == 4459) ++mma;
    if (op >= 5357 && op <= 5362) ++nv;
    if (op == 17 && words[i + 1] == 6022) ++khr_cap;
    if (op == 17 && words[i + 1] == 5357) ++nv;
    if (op == 10 &&
        std::string(reinterpret_cast<const char*>(&words[i + 1])) == "SPV_KHR_cooperative_matrix")
      ++khr_ext;
  }
  EXPECT_EQ(nv, 0);
  EXPECT_EQ(khr_cap, 1);
  EXPECT_EQ(khr_ext, 1);
  ASSERT_EQ(uses.size(), 3u);
  std::vector<uint32_t> use_values;
  for (uint32_t u : uses) use_values.push_back(constants.at(u));
  std::sort(use_values.begin(), use_values.end());
  EXPECT_EQ(use_values, (std::vector<uint32_t>{0, 1, 2}));
  // Per K step of 16 (depth 32): 4 a and 2 b fragments, 8 multiplies; 8 stores out.
  EXPECT_EQ(loads, 2 * (4 + 2));
  EXPECT_EQ(mma, 2 * 8);
  EXPECT_EQ(stores, 8);
  int column_major = 0;
  for (uint32_t layout : load_layouts) column_major += constants.at(layout) == 1;
  EXPECT_EQ(column_major, 2 * 2);  // the b fragments
}

// ---- on a device --------------------------------------------------------------------------

// C[batch, m, n] = A @ B with A [batch, m, k] (transposed: stored [batch, k, m]) and B [k, n]
// (transposed: stored [n, k]; broadcast: one for every batch).
struct MatmulCase {
  int64_t batch, m, n, k;
  bool transposed_a, broadcast_b, transposed_b = false;
  std::string name() const {
    return std::to_string(batch) + "x" + std::to_string(m) + "x" + std::to_string(n) + "x" +
           std::to_string(k);
  }
  // A's and B's contiguous extents, which vector loads need to be multiples of 4.
  int64_t a_inner() const { return transposed_a ? m : k; }
  int64_t b_inner() const { return transposed_b ? k : n; }
};
const MatmulCase kCases[] = {
    {1, 64, 64, 64, false, false},   {3, 37, 53, 29, true, false},
    {2, 100, 17, 130, false, true},  {1, 260, 132, 36, false, false},
    {2, 132, 68, 40, true, true},    {2, 68, 136, 44, false, false, true},
    {1, 4, 8, 4, true, false, true},
};

// A case's operands on the device, their product on the CPU backend, and a launch of a matmul
// kernel on them (the parameters after a, b and c, as matmul.h orders them).
struct MatmulProblem {
  MatmulCase c;
  DType t;
  vulkan::Buffer a, b;
  TensorData want;

  MatmulProblem(const MatmulCase& cs, DType dtype) : c(cs), t(dtype) {
    Shape as = c.transposed_a ? Shape{c.batch, c.k, c.m} : Shape{c.batch, c.m, c.k};
    int64_t nb = c.broadcast_b ? 1 : c.batch;
    Shape bs = c.transposed_b ? Shape{nb, c.n, c.k} : Shape{nb, c.k, c.n};
    TensorData ad = VulkanRun::random(as, t, -2, 2, uint32_t(c.m + c.k)),
               bd = VulkanRun::random(bs, t, -2, 2, uint32_t(c.n + 7));
    CpuTensor h[2] = {Cpu::from_data(ad, Device::cpu()), Cpu::from_data(bd, Device::cpu())};
    Op perm{OpCode::Permute, {}};
    perm.attrs.dims = {0, 2, 1};
    if (c.transposed_a) h[0] = apply<Cpu>(perm, std::span<CpuTensor>(h, 1));
    if (c.transposed_b) h[1] = apply<Cpu>(perm, std::span<CpuTensor>(h + 1, 1));
    want = Cpu::to_data(apply<Cpu>(Op{OpCode::Matmul, {}}, std::span<CpuTensor>(h, 2)));
    a = VulkanRun::upload(ad);
    b = VulkanRun::upload(bd);
  }
  // Runs `k` on `groups` workgroups and returns C.
  TensorData run(const Kernel& k, int64_t groups) const {
    vulkan::Buffer out = VulkanRun::ctx().buffer(size_t(c.batch * c.m * c.n) * size_of(t));
    std::vector<vulkan::Arg> args = {vulkan::Arg::ptr(a.address()), vulkan::Arg::ptr(b.address()),
                                     vulkan::Arg::ptr(out.address())};
    int64_t sar = c.transposed_a ? 1 : c.k, sac = c.transposed_a ? c.m : 1;
    int64_t sbr = c.transposed_b ? 1 : c.n, sbc = c.transposed_b ? c.k : 1;
    for (int64_t v : {c.m, c.n, c.k, c.batch, c.m * c.k, sar, sac,
                      c.broadcast_b ? int64_t(0) : c.k * c.n, sbr, sbc})
      args.push_back(vulkan::Arg::of(v));
    VulkanRun::ctx().launch(k, args, uint32_t(groups));
    return VulkanRun::fetch(out, {c.batch, c.m, c.n}, t);
  }
};

TEST_F(VulkanRun, MatmulMatchesTheCpu) {
  using L = kernel::MatmulLoad;
  std::vector<MatmulCase> cases(std::begin(kCases), std::end(kCases));
  cases.insert(cases.begin(), MatmulCase{1, 1, 1, 1, false, false});
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32})
    for (const MatmulCase& cs : cases) {
      MatmulProblem p(cs, t);
      // The default tile with scalar loads, and the large tiles with the vector loads these
      // strides allow (every dimension here a multiple of 4 where a load needs it).
      std::vector<kernel::MatmulSpec> specs{kernel::MatmulSpec{t}};
      bool vec_ok = size_of(t) <= 4 && t != DType::I32;
      struct Tile {
        int tm, tn, depth, thm, thn;
      };
      for (Tile sh : {Tile{128, 128, 8, 8, 8}, Tile{64, 128, 8, 4, 8}, Tile{64, 64, 16, 4, 4},
                      Tile{128, 64, 8, 8, 4}}) {
        kernel::MatmulSpec s{t};
        s.tile_m = sh.tm, s.tile_n = sh.tn, s.depth = sh.depth;
        s.thread_m = sh.thm, s.thread_n = sh.thn;
        if (vec_ok && cs.k % 4 == 0 && cs.a_inner() % 4 == 0)
          s.load_a = cs.transposed_a ? L::VectorTransposed : L::Vector;
        if (vec_ok && cs.b_inner() % 4 == 0 && cs.k % 4 == 0 && cs.n % 4 == 0)
          s.load_b = cs.transposed_b ? L::VectorTransposed : L::Vector;
        s.vector_c = vec_ok && cs.n % 4 == 0;
        specs.push_back(s);
      }
      for (const kernel::MatmulSpec& s : specs) {
        Kernel k = kernel::matmul_kernel(s);
        kernel::default_pipeline().run(k);
        double rt = is_float(t) ? (t == DType::F32 ? 1e-5 : t == DType::F64 ? 1e-12 : 2e-2) : 0;
        expect_close(p.want, p.run(k, kernel::matmul_groups(s, cs.m, cs.n, cs.batch)), rt, rt,
                     "matmul " + std::string(name(t)) + " " + s.tag() + " " + cs.name());
      }
    }
}

TEST_F(VulkanRun, CoopMatmulMatchesTheCpu) {
  const vulkan::DeviceInfo& info = ctx().info();
  if (std::find(info.coop_f16.begin(), info.coop_f16.end(), vulkan::CoopShape{16, 16, 16}) ==
      info.coop_f16.end())
    GTEST_SKIP() << info.name << " offers no 16x16x16 f16 cooperative matrices";
  std::vector<MatmulCase> cases(std::begin(kCases), std::end(kCases));
  cases.insert(cases.begin(), MatmulCase{1, 16, 16, 16, false, false});
  cases.push_back({1, 300, 280, 520, false, false, true});
  for (const MatmulCase& cs : cases) {
    MatmulProblem p(cs, DType::F16);
    for (int tile : {64, 128})
      for (bool vec : {false, true}) {
        kernel::CoopMatmulSpec s;
        s.subgroup = int(info.subgroup_size);
        if (tile == 64) s.tile_m = s.tile_n = 64, s.warps_m = s.warps_n = 2;
        s.a_col_major = cs.transposed_a;
        s.b_col_major = cs.transposed_b;
        // 4-element loads where the contiguous extent and the strides are multiples of 4.
        s.vector_a = vec && cs.a_inner() % 4 == 0 && cs.m * cs.k % 4 == 0;
        s.vector_b = vec && cs.b_inner() % 4 == 0 && cs.k * cs.n % 4 == 0;
        Kernel k = kernel::coop_matmul_kernel(s);
        kernel::default_pipeline().run(k);
        // f32 sums of f16 products either way, rounded to f16 once: the order differs.
        expect_close(p.want, p.run(k, kernel::coop_matmul_groups(s, cs.m, cs.n, cs.batch)), 1e-2,
                     2e-2, "coop matmul " + s.tag() + " " + cs.name());
      }
  }
}

}  // namespace
}  // namespace ember
