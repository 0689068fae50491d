// The CPU GEMM's micro-kernel variants (cpu/isa.h): every instruction set the machine has,
// against a plain triple loop in double precision, over shapes that leave partial tiles and
// span several cache blocks, strided and transposed operands, accumulation, and B given by a
// packing function (as the convolutions give it).
#include <gtest/gtest.h>

#include <cmath>
#include <optional>
#include <random>
#include <vector>

#include "ember/backends/cpu/gemm.h"
#include "ember/backends/cpu/isa.h"
#include "ember/core/error.h"
#include "ember/ember.h"

using namespace ember;
using namespace ember::cpu;

namespace {

struct Case {
  int64_t m, n, k;
  bool a_transposed, b_transposed, accumulate;
};

template <class T>
void check(CpuIsa isa, const Case& c, bool packed) {
  std::mt19937 g(uint32_t(c.m * 131 + c.n * 7 + c.k));
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<T> a(size_t(c.m * c.k)), b(size_t(c.k * c.n)), out(size_t(c.m * c.n));
  for (T& v : a) v = T(u(g));
  for (T& v : b) v = T(u(g));
  for (T& v : out) v = T(u(g));
  // A [m, k]: row-major, or stored as its transpose [k, m]; B likewise.
  MatRef<T> ar = c.a_transposed ? MatRef<T>{a.data(), 1, c.m} : MatRef<T>{a.data(), c.k, 1};
  MatRef<T> br = c.b_transposed ? MatRef<T>{b.data(), 1, c.k} : MatRef<T>{b.data(), c.n, 1};
  std::vector<double> want(out.begin(), out.end());
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < c.n; ++j) {
      double s = 0;
      for (int64_t p = 0; p < c.k; ++p)
        s += double(ar.p[i * ar.rs + p * ar.cs]) * double(br.p[p * br.rs + j * br.cs]);
      want[size_t(i * c.n + j)] = (c.accumulate ? want[size_t(i * c.n + j)] : 0) + s;
    }
  set_cpu_isa_cap(isa);
  if (packed) {
    PackB<T> pack = [&](int64_t p0, int64_t j0, int64_t kc, int64_t cols, int64_t width, T* dst) {
      for (int64_t p = 0; p < kc; ++p)
        for (int64_t q = 0; q < width; ++q)
          dst[p * width + q] = q < cols ? br.p[(p0 + p) * br.rs + (j0 + q) * br.cs] : T(0);
    };
    gemm_t(c.m, c.n, c.k, ar, pack, out.data(), c.n, c.accumulate);
  } else {
    gemm_t(c.m, c.n, c.k, ar, br, out.data(), c.n, c.accumulate);
  }
  set_cpu_isa_cap(std::nullopt);
  double tol = std::is_same_v<T, float> ? 1e-4 : 1e-12;
  int64_t wrong = 0;
  for (size_t i = 0; i < out.size(); ++i)
    if (!(std::abs(double(out[i]) - want[i]) <= tol * (1 + std::sqrt(double(c.k)))))
      if (wrong++ < 3)
        ADD_FAILURE() << name(isa) << " " << c.m << "x" << c.n << "x" << c.k << " element " << i
                      << ": " << out[i] << " vs " << want[i];
  EXPECT_EQ(wrong, 0) << name(isa) << (packed ? " packed" : "");
}

const Case kCases[] = {
    {1, 1, 1, false, false, false},
    {7, 5, 3, false, false, false},
    {12, 32, 16, false, false, false},
    {13, 33, 17, true, false, true},
    {37, 70, 530, false, true, false},
    {250, 97, 300, true, true, true},
    {130, 2100, 40, false, false, false},
    {64, 784, 256, false, true, false},
    {5, 0, 3, false, false, false},
    {4, 6, 0, false, false, true},
    // A packed once for all work items: several K blocks and several N blocks at once, rows
    // that do not fill the last panel
    {20, 2100, 600, false, false, true},
    {64, 256, 784, false, false, false},
    {500, 40, 700, true, false, false},
    // A read in place, row- and column-major: every count of last rows under a panel of 6 and
    // of 12 (the kernels of exactly that many rows), on the few-rows path and (600 rows or more)
    // the blocked one
    {3, 40, 20, false, false, false},
    {9, 33, 20, true, false, true},
    {11, 50, 19, false, false, false},
    {23, 17, 70, true, false, false},
    {603, 30, 40, true, false, false},
    {605, 35, 330, false, false, true},
    {610, 16, 64, true, true, false},
    // one K block, B small enough for L2 and C wide: strips of one A panel along all of B, two
    // N blocks
    {620, 2300, 8, false, false, true},
    // one K block of a row-major B whose rows are pages apart (a 1x1 convolution's image, its
    // rows packed four at a time): N blocks of 2048 and 952 columns
    {500, 3000, 64, false, false, true},
    // one K block and B wide enough for each thread to take its own columns (on two threads or
    // more): a column-major B, A transposed, last panel and last tile short
    {45, 2500, 100, true, true, true},
    // ... and over 2 x 2048 columns: each thread's run packed in two blocks
    {30, 4500, 20, false, false, true},
    // a last panel of one vector's columns or fewer (NR / 2), A packed: the one-vector kernels,
    // writing C in place (48 columns on AVX-512, 24 on AVX2) and through a tile
    {600, 48, 70, false, false, true},
    {600, 24, 70, false, false, false},
    // a row-major A of few rows times a column-major B (g w^T of a linear layer's input
    // gradient), computed as C^T = B^T A^T: several K blocks, C^T's last panel short (60 of
    // 64 columns), its rows not a multiple of the tile's
    {60, 333, 1100, false, true, false},
};

std::vector<CpuIsa> levels() {
  std::vector<CpuIsa> v;
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512})  // the f32/f64 variants
    if (i <= cpu_isa_available()) v.push_back(i);
  return v;
}

}  // namespace

TEST(CpuGemm, EveryInstructionSetMatchesAPlainLoopF32) {
  for (CpuIsa isa : levels())
    for (const Case& c : kCases)
      for (bool packed : {false, true}) check<float>(isa, c, packed);
}

TEST(CpuGemm, EveryInstructionSetMatchesAPlainLoopF64) {
  for (CpuIsa isa : levels())
    for (const Case& c : kCases)
      for (bool packed : {false, true}) check<double>(isa, c, packed);
}

// The blockings that depend on the L2's size (one K block in strips of one A panel where B stays
// in a quarter of a large L2), whatever this machine's: as on a 2 MiB L2 and a 256 KiB one.
TEST(CpuGemm, EveryL2BlockingMatchesAPlainLoop) {
  for (int64_t l2 : {int64_t{2} << 20, int64_t{256} << 10}) {
    set_cpu_l2_bytes(l2);
    for (CpuIsa isa : levels())
      for (const Case& c : kCases)
        if (c.m >= 500) check<float>(isa, c, false);
  }
  set_cpu_l2_bytes(std::nullopt);
}

TEST(CpuIsaLevels, CapAndNames) {
  CpuIsa have = cpu_isa_available();
  set_cpu_isa_cap(CpuIsa::Portable);
  EXPECT_EQ(cpu_isa(), CpuIsa::Portable);
  set_cpu_isa_cap(CpuIsa::Amx);
  EXPECT_EQ(cpu_isa(), have);  // a cap above what the CPU has changes nothing
  set_cpu_isa_cap(std::nullopt);
  for (CpuIsa i : {CpuIsa::Portable, CpuIsa::Avx2, CpuIsa::Avx512, CpuIsa::Avx512Bf16, CpuIsa::Amx})
    EXPECT_EQ(parse_cpu_isa(name(i)), i);
  EXPECT_THROW(parse_cpu_isa("sse9"), ValueError);
}

// The bf16 GEMM (AMX tiles, AVX-512 BF16) against the same products in double precision: bf16
// inputs are exact in f32 and double, so the f32 sums differ from the reference only by their
// rounding.
namespace {

struct Bf16Case {
  int64_t m, n, k;
  bool a_transposed, b_transposed;
};

void check_bf16(const Bf16Case& c) {
  std::mt19937 g(uint32_t(c.m * 31 + c.n * 17 + c.k));
  std::uniform_real_distribution<float> u(-2, 2);
  std::vector<bf16> a(size_t(c.m * c.k)), b(size_t(c.k * c.n));
  for (bf16& v : a) v = bf16(u(g));
  for (bf16& v : b) v = bf16(u(g));
  MatRef<bf16> ar =
      c.a_transposed ? MatRef<bf16>{a.data(), 1, c.m} : MatRef<bf16>{a.data(), c.k, 1};
  MatRef<bf16> br =
      c.b_transposed ? MatRef<bf16>{b.data(), 1, c.k} : MatRef<bf16>{b.data(), c.n, 1};
  const int64_t ldc = c.n + 3;  // a row stride wider than the row
  std::vector<float> out(size_t(c.m * ldc), -7.f);
  std::vector<bf16> out16(size_t(c.m * ldc), bf16(-7.f));
  ASSERT_TRUE(gemm_bf16(c.m, c.n, c.k, ar, br, out.data(), ldc));
  ASSERT_TRUE(gemm_bf16(c.m, c.n, c.k, ar, br, out16.data(), ldc));
  int64_t wrong = 0;
  for (int64_t i = 0; i < c.m; ++i)
    for (int64_t j = 0; j < ldc; ++j) {
      const size_t at = size_t(i * ldc + j);
      if (j >= c.n) {  // past the row: untouched
        if (out[at] != -7.f || float(out16[at]) != -7.f) ++wrong;
        continue;
      }
      double want = 0, mag = 0;
      for (int64_t p = 0; p < c.k; ++p) {
        const double x =
            double(float(ar.p[i * ar.rs + p * ar.cs])) * double(float(br.p[p * br.rs + j * br.cs]));
        want += x;
        mag += std::abs(x);
      }
      // f32 sums: k roundings of at most half an ulp of the running magnitude
      const double tol = 1e-6 * mag + 1e-30;
      // bf16 output: the same f32 sums (same kernel, same order), rounded as ember::bf16 does
      if (!(std::abs(double(out[at]) - want) <= tol) || out16[at].bits != bf16(out[at]).bits)
        if (wrong++ < 3)
          ADD_FAILURE() << name(cpu_isa()) << " " << c.m << "x" << c.n << "x" << c.k << " (" << i
                        << ", " << j << "): " << out[at] << " / " << float(out16[at]) << " vs "
                        << want;
    }
  EXPECT_EQ(wrong, 0) << c.m << "x" << c.n << "x" << c.k;
}

}  // namespace

// Each bf16 kernel the machine has (AMX tiles, AVX-512 BF16 dot products).
TEST(CpuGemmBf16, EveryKernelMatchesProductsInDouble) {
  const Bf16Case cases[] = {
      {1, 1, 1, false, false},     {16, 16, 32, false, false},  {32, 32, 32, false, false},
      {33, 47, 31, false, false},  {5, 300, 70, true, false},   {130, 40, 600, false, true},
      {129, 257, 257, true, true}, {64, 784, 256, false, true}, {300, 520, 33, false, false},
      {7, 9, 0, false, false},     {96, 64, 100, true, false},  // a weight gradient, x^T g
      {200, 64, 300, true, true},  // few panels: A and B packed once for all the threads
  };
  int levels = 0;
  for (CpuIsa isa : {CpuIsa::Avx512Bf16, CpuIsa::Amx}) {
    if (isa > cpu_isa_available()) continue;
    ++levels;
    set_cpu_isa_cap(isa);
    for (const Bf16Case& c : cases) check_bf16(c);
    set_cpu_isa_cap(std::nullopt);
  }
  if (levels == 0)
    GTEST_SKIP() << "no bf16 products in hardware on this CPU: " << name(cpu_isa_available());
}

// Both instructions flush subnormal inputs and results to zero (the f32 path keeps them): pinned
// here, as docs/cpu.md says it.
TEST(CpuGemmBf16, SubnormalsFlushToZero) {
  bool any = false;
  for (CpuIsa isa : {CpuIsa::Avx512Bf16, CpuIsa::Amx}) {
    if (isa > cpu_isa_available()) continue;
    any = true;
    set_cpu_isa_cap(isa);
    const bf16 a[2] = {bf16(1e-39f), bf16(1e-20f)}, b[2] = {bf16(1.0f), bf16(1e-20f)};
    float sub_in = -1, sub_out = -1, normal = -1;
    ASSERT_TRUE(gemm_bf16(1, 1, 1, {a, 1, 1}, {b, 1, 1}, &sub_in, 1));           // 1e-39 * 1
    ASSERT_TRUE(gemm_bf16(1, 1, 1, {a + 1, 1, 1}, {b + 1, 1, 1}, &sub_out, 1));  // 1e-40
    ASSERT_TRUE(gemm_bf16(1, 1, 1, {a + 1, 1, 1}, {b, 1, 1}, &normal, 1));
    set_cpu_isa_cap(std::nullopt);
    EXPECT_EQ(sub_in, 0.0f) << name(isa);
    EXPECT_EQ(sub_out, 0.0f) << name(isa);
    EXPECT_EQ(normal, float(bf16(1e-20f))) << name(isa);
  }
  if (!any) GTEST_SKIP() << "no bf16 products in hardware on this CPU";
}

TEST(CpuGemmBf16, BelowAvx512Bf16ItDeclines) {
  set_cpu_isa_cap(CpuIsa::Avx512);
  std::vector<bf16> a(4, bf16(1.f)), b(4, bf16(1.f));
  std::vector<float> c(4, -1.f);
  EXPECT_FALSE(gemm_bf16(2, 2, 2, {a.data(), 2, 1}, {b.data(), 2, 1}, c.data(), 2));
  set_cpu_isa_cap(std::nullopt);
  EXPECT_EQ(c, std::vector<float>(4, -1.f));
}

// The 8-bit integer GEMM (AVX-512 VNNI) against a plain loop in int64, reduced modulo 2^32: every
// pairing of i8 and u8, transposed operands, a row stride wider than the row, partial tiles,
// several blocks of k (1024) and of columns (512), the extreme values, and sums past i32 (which
// wrap as the operands widened to i32 would).
struct Int8Case {
  int64_t m, n, k;
  bool a_signed, b_signed, a_transposed, b_transposed;
  int fill;  // 0: random; 1: the smallest values (-128 or 0); 2: the largest (127 or 255)
};

void check_int8(const Int8Case& c) {
  std::mt19937 g(uint32_t(c.m * 131 + c.n * 7 + c.k + c.fill));
  std::uniform_int_distribution<int> byte(0, 255);
  std::vector<uint8_t> a(size_t(c.m * c.k)), b(size_t(c.k * c.n));
  auto value = [&](bool is_signed) -> uint8_t {
    if (c.fill == 1) return is_signed ? 0x80 : 0;
    if (c.fill == 2) return is_signed ? 0x7f : 0xff;
    return uint8_t(byte(g));
  };
  for (uint8_t& v : a) v = value(c.a_signed);
  for (uint8_t& v : b) v = value(c.b_signed);
  // A [m, k]: row-major, or stored as its transpose [k, m]; B likewise
  const Int8Ref ar = c.a_transposed ? Int8Ref{a.data(), 1, c.m, c.a_signed}
                                    : Int8Ref{a.data(), c.k, 1, c.a_signed};
  const Int8Ref br = c.b_transposed ? Int8Ref{b.data(), 1, c.k, c.b_signed}
                                    : Int8Ref{b.data(), c.n, 1, c.b_signed};
  auto at = [](const Int8Ref& r, int64_t i, int64_t j) -> int64_t {
    const uint8_t v = r.p[i * r.rs + j * r.cs];
    return r.is_signed ? int64_t(int8_t(v)) : int64_t(v);
  };
  const int64_t ldc = c.n + 3;
  std::vector<int32_t> out(size_t(c.m * ldc), -7);
  ASSERT_TRUE(gemm_int8(c.m, c.n, c.k, ar, br, out.data(), ldc));
  int64_t bad = 0;
  for (int64_t i = 0; i < c.m; ++i) {
    for (int64_t j = 0; j < c.n; ++j) {
      int64_t s = 0;
      for (int64_t p = 0; p < c.k; ++p) s += at(ar, i, p) * at(br, p, j);
      const auto want = int32_t(uint32_t(uint64_t(s)));  // modulo 2^32
      if (out[size_t(i * ldc + j)] != want && bad++ < 5)
        ADD_FAILURE() << c.m << "x" << c.n << "x" << c.k << " (" << (c.a_signed ? "i8" : "u8")
                      << (c.a_transposed ? "^T" : "") << " x " << (c.b_signed ? "i8" : "u8")
                      << (c.b_transposed ? "^T" : "") << ", fill " << c.fill << ") at " << i << ","
                      << j << ": " << out[size_t(i * ldc + j)] << " want " << want;
    }
    for (int64_t j = c.n; j < ldc; ++j) ASSERT_EQ(out[size_t(i * ldc + j)], -7) << "past the row";
  }
}

// Each 8-bit kernel the machine has: AMX tiles, and (capped below them) AVX-512 VNNI.
TEST(CpuGemmInt8, MatchesAPlainLoop) {
  if (!cpu_has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  std::vector<std::optional<CpuIsa>> caps{std::nullopt};
  if (cpu_has_amx_int8()) caps.push_back(CpuIsa::Avx512Bf16);
  std::vector<Int8Case> cases;
  for (bool sa : {false, true})
    for (bool sb : {false, true}) {
      cases.push_back({13, 37, 70, sa, sb, false, false, 0});
      cases.push_back({12, 32, 4, sa, sb, false, false, 0});
      cases.push_back({1, 1, 1, sa, sb, false, false, 0});
      cases.push_back({25, 70, 131, sa, sb, true, false, 0});
      cases.push_back({30, 45, 67, sa, sb, false, true, 0});
      cases.push_back({17, 33, 9, sa, sb, true, true, 0});
      cases.push_back({40, 600, 2100, sa, sb, false, false, 0});  // 2 column and 3 k blocks
      cases.push_back({24, 64, 300, sa, sb, false, false, 1});
      cases.push_back({24, 64, 300, sa, sb, false, false, 2});
      // more rows than columns: u8 x u8 and i8 x i8 move the other operand
      cases.push_back({70, 19, 45, sa, sb, false, false, 0});
      cases.push_back({131, 25, 70, sa, sb, true, true, 0});
    }
  // sums past i32: 255 * 255 * 40000 (u8 x u8), and -128 * -128 * 140000 (i8 x i8)
  cases.push_back({2, 17, 40000, false, false, false, false, 2});
  cases.push_back({3, 16, 140000, true, true, false, true, 1});
  for (const auto& cap : caps) {
    set_cpu_isa_cap(cap);
    SCOPED_TRACE(cpu_has_amx_int8() ? "AMX tiles" : "AVX-512 VNNI");
    for (const Int8Case& c : cases) check_int8(c);
  }
  set_cpu_isa_cap(std::nullopt);
}

TEST(CpuGemmInt8, BelowAvx512ItDeclines) {
  set_cpu_isa_cap(CpuIsa::Avx2);
  std::vector<uint8_t> a(4, 1), b(4, 1);
  std::vector<int32_t> c(4, -1);
  EXPECT_FALSE(cpu_has_avx512_vnni());
  EXPECT_FALSE(gemm_int8(2, 2, 2, {a.data(), 2, 1, false}, {b.data(), 2, 1, true}, c.data(), 2));
  set_cpu_isa_cap(std::nullopt);
  EXPECT_EQ(c, std::vector<int32_t>(4, -1));
}

// f16 always, and bf16 below AVX-512 BF16, multiply through f32: each operand widened as it is
// stored (a transposed view stays transposed), the product rounded back. Against the halves'
// products summed in double and rounded once, within one unit of the half's last place.
template <class H>
void check_halves_through_f32(double rel) {
  std::mt19937 rng(11);
  std::uniform_real_distribution<float> u(-1.f, 1.f);
  struct Shape3 {
    int64_t m, n, k;
    bool ta, tb;
  };
  for (const Shape3& c : {Shape3{33, 47, 31, false, false}, Shape3{64, 70, 200, true, false},
                          Shape3{40, 130, 65, false, true}, Shape3{9, 300, 17, true, true}}) {
    // stored as given: A [m, k] or [k, m] when ta, B [k, n] or [n, k] when tb
    std::vector<H> a(size_t(c.m * c.k)), b(size_t(c.k * c.n));
    for (auto& v : a) v = H(u(rng));
    for (auto& v : b) v = H(u(rng));
    auto ta =
        Tensor<Cpu, 2>::from_data(TensorData::from<H>(a, c.ta ? Shape{c.k, c.m} : Shape{c.m, c.k}));
    auto tb =
        Tensor<Cpu, 2>::from_data(TensorData::from<H>(b, c.tb ? Shape{c.n, c.k} : Shape{c.k, c.n}));
    const auto got = (c.ta ? ta.transpose() : ta)
                         .matmul(c.tb ? tb.transpose() : tb)
                         .to_data()
                         .template to_vec<H>();
    ASSERT_EQ(got.size(), size_t(c.m * c.n));
    int wrong = 0;
    for (int64_t i = 0; i < c.m; ++i)
      for (int64_t j = 0; j < c.n; ++j) {
        double want = 0;
        for (int64_t p = 0; p < c.k; ++p)
          want += double(float(c.ta ? a[size_t(p * c.m + i)] : a[size_t(i * c.k + p)])) *
                  double(float(c.tb ? b[size_t(j * c.k + p)] : b[size_t(p * c.n + j)]));
        const double g = double(float(got[size_t(i * c.n + j)]));
        wrong += std::abs(g - want) > rel * std::abs(want) + 1e-3;
      }
    EXPECT_EQ(wrong, 0) << c.m << "x" << c.n << "x" << c.k << " ta " << c.ta << " tb " << c.tb;
  }
}

TEST(CpuGemmHalves, WidenedToF32AsStored) {
  check_halves_through_f32<f16>(1.0 / 1024);
  set_cpu_isa_cap(CpuIsa::Avx512);  // below AVX-512 BF16: bf16 goes through f32 too
  check_halves_through_f32<bf16>(1.0 / 128);
  set_cpu_isa_cap(std::nullopt);
}
