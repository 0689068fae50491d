// int_conv's direct kernel on AVX-512 VNNI (cpu/int_conv_vnni.cpp) against a loop in int64 over
// random geometries: 1-d to 3-d, padding 0 to 2, dilation 1 and 2, 1 to 20 input and 1 to 30
// output channels (not multiples of 4 or 12), rows from 1 to 50 wide (the interleaving's vector
// part and its tail), u8 and i8 inputs, on one thread and on the pool. The op's other routes are
// checked by the goldens (int_conv/*).
#include <gtest/gtest.h>

#include <random>
#include <vector>

#include "ember/backends/cpu/int_conv.h"
#include "ember/backends/cpu/isa.h"

namespace ember::cpu {
namespace {

struct Case {
  Geom g;
  int64_t cg, cog;
  bool x_signed;
};

Case random_case(std::mt19937& rng) {
  auto u = [&](int lo, int hi) { return std::uniform_int_distribution<int>(lo, hi)(rng); };
  Case c{};
  const bool three = u(0, 3) == 0;
  for (;;) {
    for (int d = three ? 0 : 1; d < 3; ++d) {
      c.g.k[d] = u(1, d == 0 ? 3 : 5);
      c.g.d[d] = u(1, 2);
      c.g.p[d] = u(0, 2);
      c.g.in[d] = u(1, d == 2 ? 50 : 12);
      c.g.out[d] = c.g.in[d] + 2 * c.g.p[d] - c.g.d[d] * (c.g.k[d] - 1);
    }
    if (c.g.out[0] >= 1 && c.g.out[1] >= 1 && c.g.out[2] >= 1) break;
  }
  c.cg = u(1, 20);
  c.cog = u(1, 30);
  c.x_signed = u(0, 1) == 1;
  return c;
}

// The sums of x times w over each window, the padding contributing nothing.
std::vector<int32_t> loop(const Case& c, const std::vector<uint8_t>& x,
                          const std::vector<uint8_t>& w) {
  const Geom& g = c.g;
  const int64_t taps = g.k_numel(), lin = g.in_numel(), l = g.out_numel();
  std::vector<int32_t> y(static_cast<size_t>(c.cog * l));
  for (int64_t o = 0; o < c.cog; ++o)
    for (int64_t od = 0; od < g.out[0]; ++od)
      for (int64_t oh = 0; oh < g.out[1]; ++oh)
        for (int64_t ow = 0; ow < g.out[2]; ++ow) {
          int64_t sum = 0;
          for (int64_t ch = 0; ch < c.cg; ++ch)
            for (int64_t t = 0; t < taps; ++t) {
              const int64_t kd = t / (g.k[1] * g.k[2]), kh = t / g.k[2] % g.k[1], kw = t % g.k[2];
              const int64_t id = od - g.p[0] + kd * g.d[0], ih = oh - g.p[1] + kh * g.d[1],
                            iw = ow - g.p[2] + kw * g.d[2];
              if (id < 0 || ih < 0 || iw < 0 || id >= g.in[0] || ih >= g.in[1] || iw >= g.in[2])
                continue;
              const uint8_t xv =
                  x[static_cast<size_t>(ch * lin + (id * g.in[1] + ih) * g.in[2] + iw)];
              const int64_t xn = c.x_signed ? int64_t(static_cast<int8_t>(xv)) : int64_t(xv);
              sum += xn * static_cast<int8_t>(w[static_cast<size_t>((o * c.cg + ch) * taps + t)]);
            }
          y[static_cast<size_t>(o * l + (od * g.out[1] + oh) * g.out[2] + ow)] =
              static_cast<int32_t>(sum);
        }
  return y;
}

TEST(CpuIntConv, DirectKernelMatchesALoop) {
  if (!cpu_has_avx512_vnni()) GTEST_SKIP() << "no AVX-512 VNNI on this CPU";
  std::mt19937 rng(7);
  std::uniform_int_distribution<int> byte(0, 255);
  for (int iter = 0; iter < 300; ++iter) {
    const Case c = random_case(rng);
    const DType xt = c.x_signed ? DType::I8 : DType::U8;
    ASSERT_TRUE(int_conv_direct_fits(c.g, xt, DType::I8));
    std::vector<uint8_t> x(static_cast<size_t>(c.cg * c.g.in_numel())),
        w(static_cast<size_t>(c.cog * c.cg * c.g.k_numel()));
    for (auto& v : x) v = static_cast<uint8_t>(byte(rng));
    for (auto& v : w) v = static_cast<uint8_t>(byte(rng));
    const IntConvDirect conv(c.g, w.data(), c.cg, c.cog, c.x_signed);
    std::vector<std::byte> scratch(static_cast<size_t>(conv.scratch_bytes()));
    std::vector<int32_t> y(static_cast<size_t>(c.cog * c.g.out_numel()));
    conv.run(x.data(), y.data(), scratch.data(), iter % 2 == 1);
    EXPECT_EQ(y, loop(c, x, w)) << "case " << iter << ": " << c.cg << " -> " << c.cog
                                << " channels, in " << c.g.in[0] << "x" << c.g.in[1] << "x"
                                << c.g.in[2] << ", kernel " << c.g.k[0] << "x" << c.g.k[1] << "x"
                                << c.g.k[2] << (c.x_signed ? ", i8" : ", u8");
  }
}

TEST(CpuIntConv, BelowAvx512ItDeclines) {
  set_cpu_isa_cap(CpuIsa::Avx2);
  Geom g;
  g.k[2] = 3;
  g.in[2] = 8;
  g.out[2] = 6;
  EXPECT_FALSE(int_conv_direct_fits(g, DType::U8, DType::I8));
  set_cpu_isa_cap(std::nullopt);
}

}  // namespace
}  // namespace ember::cpu
