// The CUDA renderer, NVRTC (loaded at run time; tests skip where it is missing) and the
// compile cache. No GPU needed: NVRTC builds sm_90 cubins without one.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <random>

#include "ember/core/error.h"
#include "ember/kernel/builder.h"
#include "ember/kernel/codegen/cuda.h"
#include "ember/kernel/codegen/nvrtc.h"
#include "tests/kernel/compile_options.h"

using namespace ember;
using namespace ember::kernel;
namespace fs = std::filesystem;

namespace {

#define REQUIRE_NVRTC()                                              \
  do {                                                               \
    std::string why;                                                 \
    if (!nvrtc_available(&why)) GTEST_SKIP() << "no NVRTC: " << why; \
  } while (0)

// A fresh cache directory per test.
struct TempCache {
  fs::path dir;
  TempCache() {
    std::random_device rd;
    dir = fs::temp_directory_path() / ("ember-kernel-cache-" + std::to_string(rd()));
    fs::remove_all(dir);
  }
  ~TempCache() { fs::remove_all(dir); }
};

// A kernel that uses every instruction form, half types, vectors, shared memory and atomics.
Kernel everything() {
  KernelBuilder kb("everything", {128, 1, 1});
  Mem xf = kb.buffer("xf", ScalarType::F32, Access::Read, 4);
  Mem xh = kb.buffer("xh", ScalarType::F16, Access::Read);
  Mem xb = kb.buffer("xb", ScalarType::BF16, Access::ReadWrite);
  Mem ai = kb.buffer("ai", ScalarType::I32, Access::ReadWrite);
  Mem au = kb.buffer("au", ScalarType::U32, Access::ReadWrite);
  Mem al = kb.buffer("al", ScalarType::I64, Access::ReadWrite);
  Mem af = kb.buffer("af", ScalarType::F32, Access::ReadWrite);
  Mem ad = kb.buffer("ad", ScalarType::F64, Access::ReadWrite);
  Mem i8 = kb.buffer("small", ScalarType::I8, Access::ReadWrite);
  Mem flags = kb.buffer("flags", ScalarType::Bool, Access::Write);
  Val n = kb.scalar("n", ScalarType::I32);
  Val scale = kb.scalar("scale", ScalarType::F32);
  Mem tile = kb.shared("tile", ScalarType::F32, 128);
  Var acc = kb.var("acc", kb.lit(ScalarType::F32, 0));
  Val tid = kb.local_id(0);
  Val i = kb.cast(kb.global_id(0), ScalarType::I32);
  Val v4 = kb.load(xf, i * 4, 4);
  Val e = kb.exp(v4) * kb.fma(v4, v4, kb.lit(Type::vec(ScalarType::F32, 4), 1));
  Val s = kb.extract(e, 0) + kb.extract(e, 3);
  for (Op op : {Op::Exp2, Op::Log, Op::Log2, Op::Sqrt, Op::Rsqrt, Op::Sin, Op::Cos, Op::Tan,
                Op::Tanh, Op::Erf, Op::Floor, Op::Ceil, Op::Round, Op::Trunc, Op::Abs, Op::Neg})
    s = s + kb.unary(op, s);
  s = kb.pow(s, scale) + kb.max(s, scale) - kb.min(s, scale) / scale;
  s = kb.select(kb.is_nan(s) || kb.is_inf(s), kb.lit(ScalarType::F32, 0), s);
  Val h = kb.load(xh, i);
  Val hb = kb.cast(kb.exp(h) + h * 2.0, ScalarType::BF16);
  kb.store(xb, i, kb.max(hb, kb.load(xb, i)));
  kb.store(tile, tid, s);
  kb.barrier();
  kb.for_(0, n, 1, [&](Val j) {
    kb.if_else((j & 1) == 0,
               [&] { acc.set(acc + kb.load(tile, kb.cast(j, ScalarType::U32) % 128)); },
               [&] { acc.set(acc - 1.0); });
  });
  Val w = kb.subgroup_add(acc.get()) + kb.subgroup_max(acc.get()) + kb.subgroup_min(acc.get());
  w = w + kb.shuffle(w, kb.lit(ScalarType::U32, 0)) + kb.shuffle_xor(w, kb.lit(ScalarType::U32, 1));
  Val mask = kb.ballot(w > 0.0);
  Val li = kb.cast(w, ScalarType::I64);
  Val ii = kb.cast(w, ScalarType::I32);
  Val ui = kb.bitcast(w, ScalarType::U32) ^ mask;
  for (Op op : {Op::AtomicAdd, Op::AtomicMin, Op::AtomicMax, Op::AtomicExch}) {
    kb.emit(op, ScalarType::I32, {i, ii}, ai.index);
    kb.emit(op, ScalarType::U32, {i, ui}, au.index);
    kb.emit(op, ScalarType::I64, {i, li}, al.index);
    kb.emit(op, ScalarType::F32, {i, w}, af.index);
  }
  kb.atomic_add(ad, i, kb.cast(w, ScalarType::F64));
  kb.atomic_cas(ai, i, ii, ii + 1);
  kb.atomic_cas(au, i, ui, ui >> 1);
  kb.atomic_cas(al, i, li, li << 2);
  kb.atomic_cas(af, i, w, w * 2.0);
  kb.atomic_add(tile, tid, w);
  Val small = kb.load(i8, i);
  kb.store(i8, i, -small + (~small & 3));
  kb.store(flags, i, kb.cast(small, ScalarType::Bool) != (kb.cast(ii, ScalarType::F64) > 0.5));
  Val t = kb.lit(ScalarType::Bool, 1), f = kb.lit(ScalarType::Bool, 0);
  kb.store(flags, i * 2, kb.vec({t, f}) == kb.vec({t, t}));
  kb.if_(kb.group_id(1) == kb.num_groups(2) + kb.local_size(0) + kb.subgroup_size(), [&] {
    kb.store(ai, i,
             kb.cast(kb.lit(ScalarType::F64, INFINITY), ScalarType::I32) %
                 kb.lit_int(ScalarType::I32, INT32_MIN));
  });
  return kb.finish();
}

}  // namespace

TEST(KernelCuda, RendersOneExternCFunction) {
  KernelBuilder kb("scale_f16");
  Mem x = kb.buffer("x", ScalarType::F16, Access::Read);
  Mem out = kb.buffer("out", ScalarType::F16, Access::Write);
  Val n = kb.scalar("n", ScalarType::U32);
  Val i = kb.global_id(0);
  kb.if_(i < n, [&] { kb.store(out, i, kb.load(x, i) * 2.0); });
  std::string src = render_cuda(kb.finish());
  // ember's own two-byte half type and its conversions, not cuda_fp16.h; no bf16 here.
  EXPECT_NE(src.find("struct __align__(2) __half"), std::string::npos) << src;
  EXPECT_EQ(src.find("#include"), std::string::npos) << src;
  EXPECT_EQ(src.find("__nv_bfloat16"), std::string::npos) << src;
  EXPECT_NE(src.find("extern \"C\" __global__ void __launch_bounds__(256) scale_f16(const __half* "
                     "x, __half* out, unsigned n)"),
            std::string::npos)
      << src;
  EXPECT_NE(src.find("__float2half_rn((__half2float(_v3) * __half2float(_v4)))"), std::string::npos)
      << src;
}

TEST(KernelCuda, RenderingValidatesFirst) {
  KernelBuilder kb("bad");
  kb.exp(kb.scalar("i", ScalarType::I32));
  EXPECT_THROW(render_cuda(kb.kernel()), ValueError);
}

TEST(KernelCuda, CooperativeMatricesAreNamedAsMissing) {
  // CUDA's matmuls are cuBLASLt's: a kernel with fragments is refused by name, not mis-rendered.
  KernelBuilder kb("mma");
  Frag c = kb.fragment("acc", FragmentUse::Accumulator, ScalarType::F32, 16, 16);
  kb.frag_fill(c, kb.lit(ScalarType::F32, 0));
  try {
    render_cuda(kb.finish());
    ADD_FAILURE() << "rendered";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("no CUDA for cooperative matrices"), std::string::npos);
  }
}

TEST(KernelCuda, EveryInstructionFormCompilesToAnSm90Cubin) {
  REQUIRE_NVRTC();
  TempCache tc;
  KernelCache cache(tc.dir);
  Kernel k = everything();
  CudaBinary bin;
  try {
    bin = compile_cuda(k, opts(&cache));
  } catch (const ValueError& e) {
    FAIL() << e.what() << "\n" << render_cuda(k);
  }
  EXPECT_EQ(bin.format, CudaBinary::Cubin);
  EXPECT_EQ(bin.arch, 90);
  EXPECT_GT(bin.data.size(), 1000u);
  EXPECT_EQ(std::string(bin.data.data() + 1, 3), "ELF");
  EXPECT_FALSE(bin.cached);
}

TEST(KernelCuda, CacheHitsInMemoryAndOnDiskAndRebuildsCorruptEntries) {
  REQUIRE_NVRTC();
  TempCache tc;
  KernelBuilder kb("cached");
  Mem out = kb.buffer("out", ScalarType::F32, Access::Write);
  kb.store(out, kb.global_id(0), kb.lit(ScalarType::F32, 3));
  Kernel k = kb.finish();
  std::string src = render_cuda(k);
  KernelCache first(tc.dir);
  CudaBinary a = compile_cuda(src, k.name, opts(&first));
  EXPECT_FALSE(a.cached);
  CudaBinary b = compile_cuda(src, k.name, opts(&first));
  EXPECT_TRUE(b.cached);
  EXPECT_EQ(a.data, b.data);
  EXPECT_EQ(first.stats().memory_hits, 1);
  EXPECT_EQ(first.stats().misses, 1);

  // A second process: a new cache over the same directory compiles nothing.
  KernelCache second(tc.dir);
  auto t0 = std::chrono::steady_clock::now();
  CudaBinary c = compile_cuda(src, k.name, opts(&second));
  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_TRUE(c.cached);
  EXPECT_EQ(c.data, a.data);
  EXPECT_EQ(second.stats().disk_hits, 1);
  EXPECT_EQ(second.stats().misses, 0);
  EXPECT_LT(ms, 200.0);
  // Other options or another architecture are other entries.
  EXPECT_FALSE(compile_cuda(src, k.name, opts(&second, 90, false, {"-lineinfo"})).cached);

  // A damaged file is detected, removed and rebuilt.
  int files = 0;
  for (const auto& f : fs::directory_iterator(tc.dir)) {
    ++files;
    std::fstream s(f.path(), std::ios::in | std::ios::out | std::ios::binary);
    s.seekp(static_cast<std::streamoff>(fs::file_size(f.path()) - 5));
    s.put('\x7f');
  }
  EXPECT_EQ(files, 2);
  KernelCache third(tc.dir);
  CudaBinary d = compile_cuda(src, k.name, opts(&third));
  EXPECT_FALSE(d.cached);
  EXPECT_EQ(third.stats().corrupt, 1);
  EXPECT_EQ(d.data, a.data);
  KernelCache fourth(tc.dir);
  EXPECT_TRUE(compile_cuda(src, k.name, opts(&fourth)).cached);
  for (const auto& f : fs::directory_iterator(tc.dir))
    EXPECT_EQ(f.path().string().find(".tmp."), std::string::npos) << f.path();
}

TEST(KernelCuda, PtxForArchitecturesWithoutCubinSupport) {
  REQUIRE_NVRTC();
  TempCache tc;
  KernelCache cache(tc.dir);
  KernelBuilder kb("ptx");
  Mem out = kb.buffer("out", ScalarType::F32, Access::Write);
  kb.store(out, kb.global_id(0), kb.lit(ScalarType::F32, 3));
  Kernel k = kb.finish();
  std::vector<int> archs = nvrtc_architectures();
  ASSERT_FALSE(archs.empty());
  int future = archs.back() + 10;
  CudaBinary bin = compile_cuda(k, opts(&cache, future));
  EXPECT_EQ(bin.format, CudaBinary::Ptx);
  EXPECT_EQ(bin.arch, archs.back());
  std::string ptx(bin.data.data());
  EXPECT_NE(ptx.find(".target sm_" + std::to_string(archs.back())), std::string::npos) << ptx;
  EXPECT_NE(ptx.find(".entry ptx"), std::string::npos);
  EXPECT_EQ(compile_cuda(k, opts(&cache, 90, true)).format, CudaBinary::Ptx);
}

TEST(KernelCuda, CompileErrorsCarryNvrtcsLog) {
  REQUIRE_NVRTC();
  KernelCache cache{fs::path()};
  try {
    compile_cuda("extern \"C\" __global__ void broken() { undeclared = 1; }", "broken",
                 opts(&cache));
    FAIL();
  } catch (const ValueError& e) {
    std::string m = e.what();
    EXPECT_NE(m.find("[kernel broken] NVRTC could not compile it"), std::string::npos) << m;
    EXPECT_NE(m.find("undeclared"), std::string::npos) << m;
  }
}

TEST(KernelCuda, CacheDirectoryFollowsTheEnvironment) {
  const char* old = std::getenv("EMBER_KERNEL_CACHE");
  std::string saved = old ? old : "";
  setenv("EMBER_KERNEL_CACHE", "/tmp/somewhere", 1);
  EXPECT_EQ(KernelCache::default_dir(), fs::path("/tmp/somewhere"));
  setenv("EMBER_KERNEL_CACHE", "off", 1);
  EXPECT_TRUE(KernelCache::default_dir().empty());
  unsetenv("EMBER_KERNEL_CACHE");
  std::string xdg = std::getenv("XDG_CACHE_HOME") ? std::getenv("XDG_CACHE_HOME") : "";
  setenv("XDG_CACHE_HOME", "/tmp/xdg", 1);
  EXPECT_EQ(KernelCache::default_dir(), fs::path("/tmp/xdg/ember/kernels"));
  if (xdg.empty())
    unsetenv("XDG_CACHE_HOME");
  else
    setenv("XDG_CACHE_HOME", xdg.c_str(), 1);
  if (old) setenv("EMBER_KERNEL_CACHE", saved.c_str(), 1);
}
