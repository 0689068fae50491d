#include "ember/core/device.h"

#include <charconv>

#include "ember/core/error.h"

namespace ember {

namespace {
constexpr std::string_view kKindNames[kNumDeviceKinds] = {"cpu",   "cuda",   "vulkan", "webgpu",
                                                          "torch", "remote", "hip",    "metal"};
}

std::string_view name(DeviceKind k) { return kKindNames[static_cast<int>(k)]; }

Device Device::parse(std::string_view s) {
  auto colon = s.find(':');
  std::string_view kind = s.substr(0, colon);
  int index = 0;
  if (colon != std::string_view::npos) {
    std::string_view idx = s.substr(colon + 1);
    auto [p, ec] = std::from_chars(idx.data(), idx.data() + idx.size(), index);
    if (ec != std::errc() || p != idx.data() + idx.size() || index < 0)
      throw DeviceError("[device] bad device index in '" + std::string(s) + "'");
  }
  for (int k = 0; k < kNumDeviceKinds; ++k)
    if (kKindNames[k] == kind) return {static_cast<DeviceKind>(k), index};
  throw DeviceError("[device] unknown device '" + std::string(s) + "'");
}

std::string Device::to_string() const {
  std::string s(name(kind));
  if (kind != DeviceKind::Cpu || index != 0) s.append(":").append(std::to_string(index));
  return s;
}

}  // namespace ember
