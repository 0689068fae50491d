// Internal to ember_vulkan: the instance and its devices, and VkResult checking, shared by the
// device code (device.cpp) and the runtime (runtime.cpp).
#pragma once
#include <vulkan/vulkan.h>

#include <string>
#include <vector>

namespace ember::vulkan {

/// VkResult's name ("VK_ERROR_DEVICE_LOST"; the number for others).
std::string result_name(VkResult r);
/// Throws for a failed call: MemoryError when out of memory, DeviceError otherwise, naming
/// `what` and `context`.
void check(VkResult r, const char* what, const std::string& context = "");

// The instance and the compute devices, ranked: discrete, integrated, virtual, CPU, other.
struct Instance {
  VkInstance instance = VK_NULL_HANDLE;
  std::vector<VkPhysicalDevice> devices;
  std::string error;
  Instance();             // the instance and its compute devices (device.cpp)
  ~Instance() = default;  // kept for the process: contexts may outlive static destruction order
};

/// The process's instance (made on first use, kept to the end).
Instance& instance();
bool has_extension(VkPhysicalDevice d, const char* name);

class Context;
/// Whether `ctx`'s device rounds f32 fma once (Vulkan lets it round twice), from a kernel run on
/// products where one rounding and two differ (device.cpp).
bool fma_rounds_once(Context& ctx);

}  // namespace ember::vulkan
