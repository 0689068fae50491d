// The fixture of the Vulkan kernel tests: the first Vulkan device (lavapipe in CI; the tests
// skip, saying why, where there is none), and what they move and compare.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "ember/backends/vulkan/runtime.h"
#include "ember/backends/vulkan/spirv.h"
#include "ember/ember.h"
#include "ember/kernel/codegen/glsl.h"
#include "ember/kernel/passes.h"

namespace ember {

/// What the CUDA backend compiles, compiled for Vulkan: the pipeline optimizes first, as there.
inline void compiles(kernel::Kernel k) {
  kernel::default_pipeline().run(k);
  try {
    std::vector<uint32_t> words = vulkan::compile_spirv(k);
    EXPECT_GT(words.size(), 5u) << k.name;
    EXPECT_EQ(words[0], 0x07230203u) << k.name;  // the SPIR-V magic number
  } catch (const ValueError& e) {
    ADD_FAILURE() << e.what() << "\n" << kernel::render_glsl(k);
  }
}

class VulkanRun : public ::testing::Test {
 public:
  void SetUp() override {
    std::string why;
    if (!vulkan::available(&why)) GTEST_SKIP() << "no Vulkan device: " << why;
  }
  static vulkan::Context& ctx() { return vulkan::context(0); }
  static TensorData random(Shape s, DType t, double lo, double hi, uint32_t seed) {
    std::mt19937 rng(seed);
    std::uniform_real_distribution<double> u(lo, hi);
    std::vector<double> v(size_t(s.numel()));
    for (auto& x : v) x = u(rng);
    if (is_int(t))
      for (auto& x : v) x = std::floor(x);
    return TensorData::from<double>(v, s).convert(t);
  }
  static vulkan::Buffer upload(const TensorData& d) {
    vulkan::Buffer b = ctx().buffer(d.bytes().size());
    b.upload(d.bytes().data(), d.bytes().size());
    return b;
  }
  static TensorData fetch(const vulkan::Buffer& b, Shape s, DType t) {
    TensorData d(s, t);
    b.download(d.bytes().data(), d.bytes().size());
    return d;
  }
  static void expect_close(const TensorData& want, const TensorData& got, double rtol, double atol,
                           const std::string& what) {
    auto w = want.convert(DType::F64).to_vec<double>();
    auto g = got.convert(DType::F64).to_vec<double>();
    ASSERT_EQ(w.size(), g.size()) << what;
    int bad = 0;
    for (size_t i = 0; i < w.size() && bad < 5; ++i) {
      if (std::isnan(w[i]) && std::isnan(g[i])) continue;
      if (std::isinf(w[i]) && w[i] == g[i]) continue;
      if (!(std::abs(g[i] - w[i]) <= atol + rtol * std::abs(w[i]))) {
        ADD_FAILURE() << what << " at " << i << ": got " << g[i] << ", want " << w[i];
        ++bad;
      }
    }
  }
};

}  // namespace ember
