// The kernel layer on Vulkan: kernels render to GLSL and compile to SPIR-V (every elementwise
// op and dtype, reductions, fused programs, softmax, norms, scans; the matmuls are in
// vulkan_matmul_test.cpp), and run on the first Vulkan
// device (lavapipe in CI) with results checked against the CPU backend running the same op.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>

#include "ember/backends/vulkan/runtime.h"
#include "ember/backends/vulkan/spirv.h"
#include "ember/ember.h"
#include "ember/kernel/codegen/glsl.h"
#include "ember/kernel/kernels/copy.h"
#include "ember/kernel/kernels/elementwise.h"
#include "ember/kernel/kernels/fused.h"
#include "ember/kernel/kernels/matmul.h"
#include "ember/kernel/kernels/norm.h"
#include "ember/kernel/kernels/reduce.h"
#include "ember/kernel/kernels/scan.h"
#include "ember/kernel/kernels/softmax.h"
#include "ember/kernel/passes.h"
#include "tests/vulkan/vulkan_fixture.h"

namespace ember {
namespace {

using kernel::Kernel;

const DType kDtypes[] = {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32,
                         DType::I64, DType::I16, DType::I8,  DType::U8,   DType::Bool};

std::vector<OpCode> elementwise_ops() {
  std::vector<OpCode> ops;
  for (int c = 0; c < kNumOps; ++c) {
    OpFamily f = info(OpCode(c)).family;
    if (f == OpFamily::Unary || f == OpFamily::Binary || f == OpFamily::Compare)
      ops.push_back(OpCode(c));
  }
  ops.push_back(OpCode::Gelu);
  ops.push_back(OpCode::Silu);
  return ops;
}

TEST(VulkanCompile, EveryElementwiseOpAndDtype) {
  int n = 0;
  for (OpCode op : elementwise_ops())
    for (DType t : kDtypes) {
      if (!kernel::elementwise_supported(op, t)) continue;
      kernel::ElementwiseSpec s{op, t};
      s.contiguous = true;
      compiles(kernel::elementwise_kernel(s));
      s.contiguous = false;
      s.rank = 3;
      s.wide_index = t == DType::F64;
      compiles(kernel::elementwise_kernel(s));
      ++n;
    }
  EXPECT_GT(n, 200);
  // Dense kernels' 16-byte vector accesses stay one access (a 16-byte-aligned word view).
  for (DType t : {DType::F32, DType::F16, DType::F64}) {
    kernel::ElementwiseSpec s{OpCode::Add, t};
    s.contiguous = true;
    Kernel k = kernel::elementwise_kernel(s);
    kernel::default_pipeline().run(k);
    EXPECT_NE(kernel::render_glsl(k).find("_w16.v["), std::string::npos) << name(t);
  }
}

TEST(VulkanCompile, Reductions) {
  for (OpCode op :
       {OpCode::Sum, OpCode::Prod, OpCode::Max, OpCode::Min, OpCode::ArgMax, OpCode::ArgMin})
    for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16, DType::I32, DType::I64}) {
      kernel::ReduceSpec s{op, t};
      compiles(kernel::reduce_kernel(s));
      s.stage = kernel::ReduceSpec::Partial;
      compiles(kernel::reduce_kernel(s));
      s.stage = kernel::ReduceSpec::Finish;
      compiles(kernel::reduce_kernel(s));
    }
}

TEST(VulkanCompile, SoftmaxNormsScans) {
  for (DType t : {DType::F32, DType::F64, DType::F16, DType::BF16}) {
    for (OpCode op : {OpCode::Softmax, OpCode::LogSoftmax, OpCode::LogSumExp}) {
      kernel::SoftmaxSpec s;
      s.op = op;
      s.dtype = t;
      compiles(kernel::softmax_kernel(s));
      s.layout = kernel::SoftmaxSpec::ThreadPerRow;
      compiles(kernel::softmax_kernel(s));
    }
    for (OpCode op : {OpCode::LayerNorm, OpCode::RmsNorm}) {
      kernel::NormSpec s;
      s.op = op;
      s.dtype = t;
      compiles(kernel::norm_kernel(s));
    }
    kernel::ScanSpec c;
    c.dtype = t;
    compiles(kernel::scan_kernel(c));
  }
}

// Where the device keeps f32 subnormals, every kernel with floats asks for it: the SPIR-V has
// OpExecutionMode DenormPreserve 32 (and only that float control).
TEST(VulkanCompile, DenormPreserveReachesTheSpirv) {
  kernel::ElementwiseSpec es{OpCode::Mul, DType::F32};
  Kernel k = kernel::elementwise_kernel(es);
  for (bool keep : {false, true}) {
    kernel::GlslOptions o;
    o.denorm_preserve_f32 = keep;
    std::vector<uint32_t> words = vulkan::compile_glsl(kernel::render_glsl(k, o), k.name, {});
    int modes = 0;
    for (size_t i = 5; i < words.size(); i += std::max<uint32_t>(1, words[i] >> 16)) {
      bool execution_mode = (words[i] & 0xffffu) == 16 && i + 3 < words.size();
      if (execution_mode && words[i + 2] == 4459) {  // DenormPreserve
        EXPECT_EQ(words[i + 3], 32u);
        ++modes;
      }
    }
    EXPECT_EQ(modes, keep ? 1 : 0);
  }
}

TEST(VulkanCompile, MissingFeaturesAreNamed) {
  vulkan::DeviceInfo all;
  all.f64 = all.i64 = all.f16 = all.storage16 = all.storage8 = all.int8 = all.int16 = true;
  all.subgroup_ops = all.float_atomic_add = all.int64_atomics = all.buffer_address = true;
  Kernel mm64 = kernel::matmul_kernel({DType::F64});
  Kernel sum = kernel::reduce_kernel({OpCode::Sum, DType::F32});
  kernel::ElementwiseSpec es{OpCode::Add, DType::I8};
  Kernel add8 = kernel::elementwise_kernel(es);
  for (const Kernel* k : {&mm64, &sum, &add8}) EXPECT_EQ(vulkan::missing_features(*k, all), "");
  vulkan::DeviceInfo d = all;
  d.f64 = false;
  EXPECT_NE(vulkan::missing_features(mm64, d).find("shaderFloat64"), std::string::npos);
  EXPECT_EQ(vulkan::missing_features(sum, d), "");
  d = all;
  d.subgroup_ops = false;
  EXPECT_NE(vulkan::missing_features(sum, d).find("subgroup"), std::string::npos);
  d = all;
  d.storage8 = false;
  EXPECT_NE(vulkan::missing_features(add8, d).find("8-bit"), std::string::npos);
}

// gelu(a * b + c).exp() * 0.5 + a, then tanh (Fusion's benchmark chain), in dtype t.
fusion::Program chain(DType t, Shape shape) {
  fusion::Program p;
  p.shape = shape;
  p.inputs = {{shape, t}, {shape, t}, {shape, t}};
  auto a = fusion::Program::input(0), b = fusion::Program::input(1), c = fusion::Program::input(2);
  auto s = p.step(OpCode::Add, t, {p.step(OpCode::Mul, t, {a, b}), c});
  auto e = p.step(OpCode::Exp, t, {p.step(OpCode::Gelu, t, {s})});
  auto y = p.step(OpCode::Add, t, {p.step(OpCode::Mul, t, {e, p.constant(0.5, t)}), a});
  p.outputs = {p.step(OpCode::Tanh, t, {y})};
  return p;
}

TEST(VulkanCompile, FusedPrograms) {
  for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64}) {
    kernel::FusedLayout d;
    d.dense = true;
    d.width = 4;
    compiles(kernel::fused_kernel(chain(t, Shape{1024}), d));
    kernel::FusedLayout r;
    r.rank = 2;
    compiles(kernel::fused_kernel(chain(t, Shape{32, 32}), r));
  }
}

// ---- on a device --------------------------------------------------------------------------

double rtol_of(DType t) {
  switch (t) {
    case DType::F16:   // the CPU rounds a composite's every step (gelu), kernels once: the CUDA
    case DType::BF16:  // suite's tolerance
      return 2e-2;
    case DType::F32:
      return 3e-5;
    case DType::F64:
      return 1e-12;
    default:
      return 0;
  }
}

TEST_F(VulkanRun, DeviceIsDescribed) {
  const vulkan::DeviceInfo& d = ctx().info();
  EXPECT_FALSE(d.name.empty());
  EXPECT_GE(d.subgroup_size, 1u);
  EXPECT_TRUE(d.subgroup_ops);  // lavapipe and the GPUs ember runs on have them
  std::printf(
      "[vulkan] %s (%s), subgroup %u, f64 %d, i64 %d, 16-bit storage %d, fma rounds once %d, "
      "cooperative-matrix shapes %zu\n",
      d.name.c_str(), d.type.c_str(), d.subgroup_size, d.f64, d.i64, d.storage16, d.exact_fma,
      d.coop_f16.size());
}

TEST_F(VulkanRun, ElementwiseOpsMatchTheCpu) {
  const int64_t n = 1000;  // not a multiple of the vector width: the tail runs too
  int ran = 0;
  for (OpCode op : elementwise_ops())
    for (DType t : {DType::F32, DType::F16, DType::BF16, DType::F64, DType::I32, DType::I64,
                    DType::I8, DType::U8, DType::Bool}) {
      if (!kernel::elementwise_supported(op, t)) continue;
      int arity = info(op).arity;
      bool positive = op == OpCode::Log || op == OpCode::Sqrt || op == OpCode::Rsqrt ||
                      op == OpCode::Log2 || op == OpCode::Acosh || op == OpCode::Remainder ||
                      op == OpCode::Div || op == OpCode::Log1p;
      bool unit = op == OpCode::Asin || op == OpCode::Acos || op == OpCode::Atanh;
      bool shift = op == OpCode::ShiftLeft || op == OpCode::ShiftRight;
      double lo = unit ? -0.9 : positive ? 0.5 : -3, hi = unit ? 0.9 : positive ? 3 : 3;
      if (op == OpCode::Acosh) lo = 1.1;
      if (t == DType::U8) lo = 1, hi = shift ? 7 : 100;
      if (shift) lo = 0, hi = 7;
      std::vector<TensorData> in;
      for (int j = 0; j < arity; ++j)
        in.push_back(random(
            {n}, t, j == 1 && (op == OpCode::Div || op == OpCode::Remainder) && is_int(t) ? 1 : lo,
            hi, uint32_t(7 * int(op) + j)));
      // pow: negative bases with integral exponents (x ** 2 and x ** 3: C's pow, not NaN).
      if (op == OpCode::Pow && is_float(t)) in[1] = random({n}, DType::I32, -3, 4, 11).convert(t);
      std::vector<CpuTensor> ct;
      for (auto& d : in) ct.push_back(Cpu::from_data(d, Device::cpu()));
      Op o{op, {}};
      CpuTensor want;
      try {
        want = apply<Cpu>(o, std::span<CpuTensor>(ct));
      } catch (const Error&) {
        continue;  // not defined for these inputs on the CPU either
      }
      kernel::ElementwiseSpec s{op, t};
      s.contiguous = true;
      Kernel k = kernel::elementwise_kernel(s);
      kernel::default_pipeline().run(k);
      std::vector<vulkan::Buffer> bufs;
      for (auto& d : in) bufs.push_back(upload(d));
      DType ot = kernel::elementwise_out_dtype(op, t);
      bufs.push_back(ctx().buffer(size_t(n) * size_t(size_of(ot))));
      std::vector<vulkan::Arg> args;
      for (auto& b : bufs) args.push_back(vulkan::Arg::ptr(b.address()));
      args.push_back(vulkan::Arg::of(n));
      ctx().launch(k, args, 4);
      std::string what = std::string(name(op)) + " " + std::string(name(t));
      double rt = rtol_of(ot);
      if (op == OpCode::Tan || op == OpCode::Pow || op == OpCode::Erf) rt *= 4;
      // As the CUDA suite: rtol * (1 + |want|) for halves, whose CPU results round every step.
      double at = is_float(ot) ? (ot == DType::F16 || ot == DType::BF16 ? rt : 1e-6) : 0;
      expect_close(Cpu::to_data(want), fetch(bufs.back(), {n}, ot), rt, at, what);
      ++ran;
    }
  EXPECT_GT(ran, 150);
}

TEST_F(VulkanRun, ReductionsMatchTheCpu) {
  for (OpCode op : {OpCode::Sum, OpCode::Max, OpCode::Min, OpCode::Prod, OpCode::ArgMax})
    for (DType t : {DType::F32, DType::F16, DType::I64}) {
      const int64_t outer = 37, size = 300;
      TensorData x = random({outer, size}, t, op == OpCode::Prod ? 0.99 : -3,
                            op == OpCode::Prod ? 1.01 : 3, uint32_t(int(op)));
      Op o{op, {}};
      o.attrs.dims = {1};
      CpuTensor cx = Cpu::from_data(x, Device::cpu());
      CpuTensor want = apply<Cpu>(o, std::span<CpuTensor>(&cx, 1));
      kernel::ReduceSpec s{op, t};
      Kernel k = kernel::reduce_kernel(s);
      kernel::default_pipeline().run(k);
      vulkan::Buffer bx = upload(x);
      DType ot = op == OpCode::ArgMax ? DType::I64 : t;
      vulkan::Buffer out = ctx().buffer(size_t(outer) * size_t(size_of(ot)));
      ctx().launch(k,
                   {vulkan::Arg::ptr(bx.address()), vulkan::Arg::ptr(out.address()),
                    vulkan::Arg::of(outer), vulkan::Arg::of(size), vulkan::Arg::of(1),
                    vulkan::Arg::of(size), vulkan::Arg::of(1), vulkan::Arg::of(0)},
                   16);
      expect_close(Cpu::to_data(want), fetch(out, {outer}, ot), t == DType::F16 ? 4e-3 : 1e-5, 0,
                   std::string(name(op)) + " " + std::string(name(t)));
    }
}

TEST_F(VulkanRun, FusedChainAndReductionMatchTheCpu) {
  const int64_t n = 4099;
  for (DType t : {DType::F32, DType::F16, DType::BF16}) {
    fusion::Program p = chain(t, Shape{n});
    std::vector<TensorData> in;
    for (int j = 0; j < 3; ++j) in.push_back(random({n}, t, -1, 1, uint32_t(100 + j)));
    using T1 = Tensor<Cpu, 1>;
    T1 a = T1::from_data(in[0]), b = T1::from_data(in[1]), c = T1::from_data(in[2]);
    auto want = (activation::gelu(a * b + c).exp() * 0.5 + a).tanh();
    std::vector<vulkan::Buffer> bufs;
    for (auto& d : in) bufs.push_back(upload(d));
    bufs.push_back(ctx().buffer(size_t(n) * size_t(size_of(t))));
    kernel::FusedLayout L;  // strided, rank 1
    Kernel k = kernel::fused_kernel(p, L);
    kernel::default_pipeline().run(k);
    std::vector<vulkan::Arg> args;
    for (auto& b : bufs) args.push_back(vulkan::Arg::ptr(b.address()));
    for (int64_t v : {n, n, int64_t(1), int64_t(1), int64_t(1)}) args.push_back(vulkan::Arg::of(v));
    args.push_back(vulkan::Arg::real(0.5));
    ctx().launch(k, args, 8);
    expect_close(want.to_data(), fetch(bufs[3], {n}, t), rtol_of(t) * 2,
                 t == DType::F32 ? 1e-6 : rtol_of(t), "chain " + std::string(name(t)));

    // The chain's sum over rows of [n / 1, ...]: [17, 241] rows of the same chain.
    fusion::Program r = chain(t, Shape{17, 241});
    for (auto& m : r.inputs) m.shape = Shape{17, 241};
    int32_t value = r.outputs[0];
    r.outputs.clear();
    Op sum{OpCode::Sum, {}};
    sum.attrs.dims = {1};
    r.reduction = fusion::Reduction{sum, value, {Shape{17}, t}};
    kernel::FusedLayout R;
    R.kept = 1;
    R.reduced = 1;
    R.per_workgroup = true;
    Kernel kr = kernel::fused_kernel(r, R);
    kernel::default_pipeline().run(kr);
    std::vector<TensorData> rin;
    for (int j = 0; j < 3; ++j) rin.push_back(random({17, 241}, t, -1, 1, uint32_t(200 + j)));
    using T2 = Tensor<Cpu, 2>;
    T2 ra = T2::from_data(rin[0]), rb = T2::from_data(rin[1]), rc = T2::from_data(rin[2]);
    auto rwant = (activation::gelu(ra * rb + rc).exp() * 0.5 + ra).tanh().sum_dims({1});
    std::vector<vulkan::Buffer> rb2;
    for (auto& d : rin) rb2.push_back(upload(d));
    rb2.push_back(ctx().buffer(17 * size_t(size_of(t))));
    // in0..2, red; outputs, size, kept0, reduced0, strides (kept, reduced) of each input, c0
    std::vector<vulkan::Arg> rargs;
    for (auto& b : rb2) rargs.push_back(vulkan::Arg::ptr(b.address()));
    for (int64_t v : {17, 241, 17, 241, 241, 1, 241, 1, 241, 1})
      rargs.push_back(vulkan::Arg::of(v));
    rargs.push_back(vulkan::Arg::real(0.5));
    ctx().launch(kr, rargs, 4);
    expect_close(rwant.to_data(), fetch(rb2[3], {17}, t), rtol_of(t) * 8, 1e-4,
                 "fused sum " + std::string(name(t)));
  }
}

TEST_F(VulkanRun, DenseCopyMovesEveryWord) {
  // The backend's dense copy: 16 bytes a thread, then the tail one word at a time.
  for (int64_t n : {1, 3, 4, 1003, 4096 * 65 + 2}) {
    std::vector<int32_t> src(static_cast<size_t>(n)), got(static_cast<size_t>(n), -1);
    for (int64_t j = 0; j < n; ++j) src[size_t(j)] = int32_t(j * 2654435761u);
    kernel::CopySpec cs{DType::I32, DType::I32};
    cs.vector = true;
    Kernel k = kernel::copy_kernel(cs);
    kernel::default_pipeline().run(k);
    vulkan::Buffer x = ctx().buffer(size_t(n) * 4), y = ctx().buffer(size_t(n) * 4);
    x.upload(src.data(), size_t(n) * 4);
    ctx().launch(k,
                 {vulkan::Arg::ptr(x.address()), vulkan::Arg::ptr(y.address()), vulkan::Arg::of(n)},
                 uint32_t(std::min<int64_t>(1024, (n / 4 + 255) / 256 + 1)));
    y.download(got.data(), size_t(n) * 4);
    EXPECT_EQ(got, src) << n;
  }
}

TEST_F(VulkanRun, PipelineCacheOnDiskAndTimestamps) {
  // A pipeline made here is in the cache a fresh context of the same device starts from.
  kernel::ElementwiseSpec es{OpCode::Mul, DType::F32};
  es.contiguous = true;
  Kernel k = kernel::elementwise_kernel(es);
  kernel::default_pipeline().run(k);
  const int64_t n = 1 << 20;
  vulkan::Buffer x = upload(random({n}, DType::F32, -1, 1, 5));
  vulkan::Buffer y = ctx().buffer(size_t(n) * 4);
  std::vector<vulkan::Arg> args = {vulkan::Arg::ptr(x.address()), vulkan::Arg::ptr(x.address()),
                                   vulkan::Arg::ptr(y.address()), vulkan::Arg::of(n)};
  uint32_t t0 = ctx().timestamp();
  for (int i = 0; i < 4; ++i) ctx().launch(k, args, 64);
  uint32_t t1 = ctx().timestamp();
  double ms = ctx().elapsed_ms(t0, t1);
  EXPECT_GT(ms, 0);
  EXPECT_LT(ms, 10000);
  EXPECT_THROW(ctx().elapsed_ms(t0, 200), ValueError);  // never written in that batch
  TensorData got = fetch(y, {n}, DType::F32);
  EXPECT_FLOAT_EQ(got.to_vec<float>()[7],
                  std::pow(fetch(x, {n}, DType::F32).to_vec<float>()[7], 2.0f));
  ctx().save_pipeline_cache();
  if (kernel::KernelCache::default_dir().empty()) GTEST_SKIP() << "the kernel cache is memory only";
  vulkan::Context fresh(0);
  EXPECT_GT(fresh.info().pipeline_cache_bytes, 0u);
}

// Float division is correctly rounded on every device (Vulkan allows 2.5 ulp; the renderer
// corrects the driver's quotient), checked bit for bit against the CPU's IEEE division; the
// quotients of zeros, infinities and NaN keep IEEE's values.
TEST_F(VulkanRun, DivisionIsCorrectlyRounded) {
  for (kernel::ScalarType st : {kernel::ScalarType::F32, kernel::ScalarType::F64}) {
    if (st == kernel::ScalarType::F64 && !ctx().info().f64) continue;
    bool f32 = st == kernel::ScalarType::F32;
    kernel::KernelBuilder kb("divide", {64, 1, 1});
    kernel::Mem x = kb.buffer("x", st, kernel::Access::Read);
    kernel::Mem y = kb.buffer("y", st, kernel::Access::Read);
    kernel::Mem o = kb.buffer("o", st, kernel::Access::Write);
    kernel::Val n = kb.scalar("n", kernel::ScalarType::U32);
    kernel::Val i = kb.global_id(0);
    kb.if_(i < n, [&] { kb.store(o, i, kb.load(x, i) / kb.load(y, i)); });
    Kernel k = kb.finish();
    const int64_t count = 1 << 16;
    std::mt19937 g(11);
    std::uniform_real_distribution<double> mant(-4, 4), expo(-30, 30);
    std::vector<double> a(count), b(count);
    for (int64_t j = 0; j < count; ++j) {
      a[size_t(j)] = mant(g) * std::exp2(std::round(expo(g)));
      b[size_t(j)] = j < 1000 ? double(j + 1) : mant(g) * std::exp2(std::round(expo(g)));
    }
    const double inf = std::numeric_limits<double>::infinity();
    const double specials[][2] = {{0, 3},   {-0.0, 3}, {1, 0},     {-1, 0},          {inf, 2},
                                  {2, inf}, {0, 0},    {inf, inf}, {std::nan(""), 1}};
    for (size_t j = 0; j < std::size(specials); ++j) a[j] = specials[j][0], b[j] = specials[j][1];
    DType t = f32 ? DType::F32 : DType::F64;
    auto make = [&](const std::vector<double>& v) {
      if (!f32) return TensorData::from<double>(v, {count});
      return TensorData::from<float>(std::vector<float>(v.begin(), v.end()), {count});
    };
    TensorData ad = make(a), bd = make(b);
    vulkan::Buffer xa = upload(ad), xb = upload(bd), out = ctx().buffer(ad.bytes().size());
    // Both residuals of the correction where the device's fma rounds once (f32): the fma's and
    // Dekker's product.
    kernel::GlslOptions go = ctx().glsl_options();
    for (bool fma : {false, true}) {
      if (fma && !(f32 && ctx().info().exact_fma)) continue;
      go.exact_fma = fma;
      std::vector<vulkan::Arg> args = {vulkan::Arg::ptr(xa.address()),
                                       vulkan::Arg::ptr(xb.address()),
                                       vulkan::Arg::ptr(out.address()), vulkan::Arg::of(count)};
      ctx().launch(ctx().prepare(k, go), args, uint32_t(count / 64));
      TensorData got = fetch(out, {count}, t);
      std::vector<float> af, bf, gf;
      std::vector<double> gd;
      if (f32) {
        af = ad.to_vec<float>(), bf = bd.to_vec<float>(), gf = got.to_vec<float>();
      } else {
        gd = got.to_vec<double>();
      }
      int64_t wrong = 0;
      for (int64_t j = 0; j < count; ++j) {
        double want, have;
        if (f32) {
          want = double(af[size_t(j)] / bf[size_t(j)]), have = double(gf[size_t(j)]);
        } else {
          want = a[size_t(j)] / b[size_t(j)], have = gd[size_t(j)];
        }
        bool same = (std::isnan(want) && std::isnan(have)) ||
                    (want == have && std::signbit(want) == std::signbit(have));
        if (!same && wrong++ < 5)
          ADD_FAILURE() << name(t) << " " << a[size_t(j)] << " / " << b[size_t(j)] << ": " << have
                        << ", the CPU " << want << (fma ? " (fma residual)" : "");
      }
      EXPECT_EQ(wrong, 0) << name(t) << (fma ? " (fma residual)" : "");
    }
  }
}

// An op may write into its input's buffer (Fusion and the elementwise ops reuse a dead input's
// buffer for an output): a kernel's buffers are declared without readonly/writeonly, which
// NVIDIA's compiler took as a promise that they do not overlap (it moved loads past stores and
// a fused gradient came out wrong), and such a kernel reads each element before it writes it.
TEST_F(VulkanRun, KernelsWriteIntoTheirInputsBuffers) {
  using kernel::ScalarType;
  kernel::KernelBuilder kb("in_place", {64, 1, 1});
  std::vector<kernel::Mem> in, out;
  for (int j = 0; j < 4; ++j)
    in.push_back(kb.buffer("in" + std::to_string(j), ScalarType::F32, kernel::Access::Read));
  for (int j = 0; j < 2; ++j)
    out.push_back(kb.buffer("out" + std::to_string(j), ScalarType::F32, kernel::Access::Write));
  kernel::Val n = kb.scalar("n", ScalarType::I32);
  kernel::Val i = kb.cast(kb.global_id(0), ScalarType::I32);
  kb.if_(i < n, [&] {
    kernel::Val a = kb.load(in[0], i), b = kb.load(in[1], i), c = kb.load(in[2], i),
                d = kb.load(in[3], i);
    kb.store(out[0], i, a + b);
    kb.store(out[1], i, (c + d) * a);
  });
  Kernel k = kb.finish();
  kernel::default_pipeline().run(k);
  std::string glsl = kernel::render_glsl(k);
  EXPECT_EQ(glsl.find("readonly buffer ember_r_"), std::string::npos);
  EXPECT_EQ(glsl.find("writeonly"), std::string::npos);
  const int64_t count = 4096;
  std::vector<TensorData> host;
  std::vector<vulkan::Buffer> dev;
  for (int j = 0; j < 4; ++j) {
    host.push_back(random({count}, DType::F32, -2, 2, uint32_t(40 + j)));
    dev.push_back(upload(host.back()));
  }
  // out0 in in0's buffer, out1 in in2's.
  ctx().launch(k,
               {vulkan::Arg::ptr(dev[0].address()), vulkan::Arg::ptr(dev[1].address()),
                vulkan::Arg::ptr(dev[2].address()), vulkan::Arg::ptr(dev[3].address()),
                vulkan::Arg::ptr(dev[0].address()), vulkan::Arg::ptr(dev[2].address()),
                vulkan::Arg::of(count)},
               uint32_t(count / 64));
  std::vector<float> o0 = fetch(dev[0], {count}, DType::F32).to_vec<float>();
  std::vector<float> o1 = fetch(dev[2], {count}, DType::F32).to_vec<float>();
  std::vector<float> a = host[0].to_vec<float>(), b = host[1].to_vec<float>(),
                     c = host[2].to_vec<float>(), d = host[3].to_vec<float>();
  int64_t wrong = 0;
  for (size_t j = 0; j < size_t(count); ++j)
    wrong += o0[j] != a[j] + b[j] || o1[j] != (c[j] + d[j]) * a[j];
  EXPECT_EQ(wrong, 0);
}

// Subnormals survive arithmetic and casts where the device can keep them (DenormPreserve).
TEST_F(VulkanRun, SubnormalsAreKept) {
  if (!ctx().info().denorm_preserve_f32) GTEST_SKIP() << "the device flushes f32 subnormals";
  kernel::KernelBuilder kb("subnormal", {64, 1, 1});
  kernel::Mem x = kb.buffer("x", kernel::ScalarType::F32, kernel::Access::Read);
  kernel::Mem o = kb.buffer("o", kernel::ScalarType::F32, kernel::Access::Write);
  kernel::Val i = kb.global_id(0);
  kb.if_(i < kb.lit(kernel::ScalarType::U32, 64),
         [&] { kb.store(o, i, kb.load(x, i) * kb.lit(kernel::ScalarType::F32, 3)); });
  Kernel k = kb.finish();
  std::vector<float> v(64);
  for (size_t j = 0; j < v.size(); ++j) v[j] = std::ldexp(float(j + 1), -149);  // subnormal
  TensorData d = TensorData::from<float>(v, {64});
  vulkan::Buffer in = upload(d), out = ctx().buffer(d.bytes().size());
  ctx().launch(k, {vulkan::Arg::ptr(in.address()), vulkan::Arg::ptr(out.address())}, 1);
  std::vector<float> got = fetch(out, {64}, DType::F32).to_vec<float>();
  for (size_t j = 0; j < v.size(); ++j) EXPECT_EQ(got[j], v[j] * 3) << j;
}

TEST_F(VulkanRun, FreedBuffersAreReused) {
  vulkan::Context& c = ctx();
  c.synchronize();
  std::vector<vulkan::Buffer> first;
  for (int i = 0; i < 50; ++i) first.push_back(c.buffer(1000 + size_t(i % 24)));  // class 1024
  vulkan::MemoryStats s1 = c.memory_stats();
  EXPECT_GE(s1.in_use_bytes, 50u * 1024);
  first.clear();
  EXPECT_GE(c.memory_stats().cached_bytes, 50u * 1024);
  std::vector<vulkan::Buffer> again;
  for (int i = 0; i < 50; ++i) again.push_back(c.buffer(900));  // the same class: reused
  EXPECT_EQ(c.memory_stats().driver_allocations, s1.driver_allocations);
  // A device copy, in order with the launches (the transfer engine's).
  vulkan::Buffer src = c.buffer(1024), dst = c.buffer(1024);
  std::vector<float> ramp(256), out(256, -1.0f);
  for (size_t i = 0; i < ramp.size(); ++i) ramp[i] = float(i);
  src.upload(ramp.data(), 1024);
  c.copy(src, 16, dst, 0, 1008);
  dst.download(out.data(), 1008);
  EXPECT_EQ(out[0], 4.0f);
  EXPECT_EQ(out[251], 255.0f);
  EXPECT_THROW(c.copy(src, 0, dst, 16, 1024), ValueError);
  // A reused buffer holds what is written to it, not its last owner's data.
  std::vector<float> v(200, 3.0f), back(200);
  again[7].upload(v.data(), 800);
  again[7].download(back.data(), 800);
  EXPECT_EQ(back, v);
  again.clear();
  c.empty_cache();
  EXPECT_EQ(c.memory_stats().cached_bytes, 0u);
}

}  // namespace
}  // namespace ember
