// Device: where a tensor lives. A kind and an index, written "cpu", "cuda:0", "vulkan:1".
//
//   Device d = Device::parse("cuda:1");   d.kind == DeviceKind::Cuda;   d.index == 1;
#pragma once
#include <cstdint>
#include <string>
#include <string_view>

#include "ember/core/export.h"

namespace ember {

enum class DeviceKind : uint8_t { Cpu, Cuda, Vulkan, WebGpu, Torch, Remote, Hip, Metal };
inline constexpr int kNumDeviceKinds = 8;

EMBER_API std::string_view name(DeviceKind k);

struct EMBER_API Device {
  DeviceKind kind = DeviceKind::Cpu;
  int index = 0;

  static Device cpu() { return {}; }
  /// Parses "cpu", "cuda", "cuda:1"; throws DeviceError on anything else.
  static Device parse(std::string_view s);
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

}  // namespace ember
