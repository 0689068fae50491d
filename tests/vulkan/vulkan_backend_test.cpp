// The Vulkan backend through Dispatch: vulkan:N is listed where a device is, tensors round-trip,
// and ops, fused programs and a training step on vulkan:0 match the CPU backend. The op,
// gradient and nn suites run on vulkan:0 as well (their @vulkan:0 entries); these tests skip,
// saying so, where there is no Vulkan device.
#include <gtest/gtest.h>

#include <algorithm>

#include "ember/backends/vulkan/vulkan.h"
#include "ember/ember.h"
#include "ember/fusion/fusion.h"

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

// The decorators compose on the static type too: Autodiff<Fusion<Vulkan>> trains as Dispatch's
// vulkan:0 does; its gradients match Autodiff<Cpu>'s.
TEST_F(VulkanBackend, AutodiffOfFusedVulkanMatchesCpu) {
  auto grads_of = [](auto tag, Device dev) {
    using AB = decltype(tag);
    auto x =
        Tensor<AB, 2>::from_data(TensorData::from<float>({0.5f, -1, 2, 0.25f, 3, -2}, {2, 3}), dev)
            .require_grad();
    auto w = Tensor<AB, 2>::from_data(
                 TensorData::from<float>({1, -0.5f, 0.25f, 2, -1, 0.75f}, {3, 2}), dev)
                 .require_grad();
    auto loss = ((x.matmul(w) + 1.0).tanh() * x.matmul(w)).sum();
    auto g = loss.backward();
    return std::pair{x.grad(g)->to_data().template to_vec<float>(),
                     w.grad(g)->to_data().template to_vec<float>()};
  };
  auto [gx, gw] = grads_of(Autodiff<Fusion<Vulkan>>{}, kVk);
  auto [cx, cw] = grads_of(Autodiff<Cpu>{}, Device::cpu());
  ASSERT_EQ(gx.size(), cx.size());
  ASSERT_EQ(gw.size(), cw.size());
  for (size_t i = 0; i < gx.size(); ++i) EXPECT_NEAR(gx[i], cx[i], 1e-5f) << i;
  for (size_t i = 0; i < gw.size(); ++i) EXPECT_NEAR(gw[i], cw[i], 1e-5f) << i;
}

TEST_F(VulkanBackend, BadIndexIsAnIndexError) {
  auto x = T2::ones({4, 3}, kVk);
  auto idx = Tensor<B, 1, Int>::from_values(std::vector<int64_t>{0, 9}, Shape{2}, kVk);
  EXPECT_THROW((void)x.select(0, idx).to_data(), IndexError);
}

}  // namespace
}  // namespace ember
