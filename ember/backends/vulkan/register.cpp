// The Vulkan backend's registration with Dispatch: a program that links ember::vulkan gets this
// object through the link option `-u ember_vulkan_registration` (CMakeLists.txt), and with it
// vulkan:N. Its initializer only records the factory; devices are probed when the device
// registry is created.
#include "ember/backend/dispatch.h"
#include "ember/backends/vulkan/vulkan.h"

extern "C" EMBER_API const bool ember_vulkan_registration =
    (ember::register_device_factory(ember::DeviceKind::Vulkan, &ember::vulkan::make_device_backend),
     true);
