// The installed Vulkan backend: vulkan:0 in Dispatch for a program that links ember::vulkan
// (its registration comes with the library), a matmul and a reduction there against the same
// ops on the CPU. Without a Vulkan device (no driver) it says so and passes.
#include <cmath>
#include <iostream>
#include <vector>

#include "ember/backends/vulkan/vulkan.h"
#include "ember/ember.h"

using namespace ember;

int main() try {
  std::string why;
  if (!vulkan::available(&why)) {
    std::cout << "skipped: no Vulkan device (" << why << ")\n";
    return 0;
  }
  bool listed = false;
  for (const Device& d : available_devices()) listed = listed || d.to_string() == "vulkan:0";
  if (!listed) {
    std::cerr << "vulkan:0 is not among Dispatch's devices\n";
    return 1;
  }
  using T = Tensor<Dispatch, 2>;
  auto a = T::from_data(TensorData::from<float>({0.1f, 0.2f, 0.3f, 0.4f, 0.5f, 0.6f}, {2, 3}));
  auto want = a.matmul(a.transpose()).exp().sum_dim(1).to_vec<float>();
  auto on = a.to_device(Device::parse("vulkan:0"));
  auto got = on.matmul(on.transpose()).exp().sum_dim(1).to_device(Device::cpu()).to_vec<float>();
  int failures = 0;
  for (size_t i = 0; i < want.size(); ++i)
    if (!(std::fabs(got[i] - want[i]) <= 1e-5f * std::fabs(want[i]))) ++failures;
  std::cout << (failures ? "FAILED" : "ok") << ": vulkan:0 from an installed ember\n";
  return failures ? 1 : 0;
} catch (const std::exception& e) {
  std::cerr << "vulkan_app: " << e.what() << "\n";
  return 1;
}
