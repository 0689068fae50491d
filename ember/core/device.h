// Device: where a tensor lives. A kind and an index, written "cpu", "cuda:0", "vulkan:1". A
// remote device is written with its server's endpoint, "remote:HOST:PORT"; its index numbers
// the endpoints this process has named (docs/remote.md).
//
//   Device d = Device::parse("cuda:1");   d.kind == DeviceKind::Cuda;   d.index == 1;
//   Device r = Device::parse("remote:127.0.0.1:7070");
//   r.to_string() == "remote:127.0.0.1:7070";   remote_endpoint(r.index) == "127.0.0.1:7070";
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
  /// Parses "cpu", "cuda", "cuda:1", "remote:HOST:PORT"; throws DeviceError on anything else.
  static Device parse(std::string_view s);
  std::string to_string() const;
  friend bool operator==(const Device&, const Device&) = default;
};

/// Whether ops on `d` raise the errors that depend on tensor values (an index out of range) from
/// the call that made them. A remote device raises them at the next read or sync
/// (docs/remote.md), so code that wants such an error at the call reads the values itself there.
constexpr bool reports_data_errors_at_call(Device d) { return d.kind != DeviceKind::Remote; }

/// The endpoint ("HOST:PORT") of the remote device with this index; throws DeviceError when
/// no endpoint has it.
EMBER_API std::string remote_endpoint(int index);
/// How many remote endpoints this process has named (Device::parse adds them).
EMBER_API int remote_endpoint_count();

}  // namespace ember
