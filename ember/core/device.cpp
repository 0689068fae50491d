#include "ember/core/device.h"

#include <charconv>
#include <deque>
#include <mutex>

#include "ember/core/error.h"

namespace ember {

namespace {
constexpr std::string_view kKindNames[kNumDeviceKinds] = {"cpu",   "cuda",   "vulkan", "webgpu",
                                                          "torch", "remote", "hip",    "metal"};

// The remote endpoints named so far; a device's index is its endpoint's position, which never
// changes (endpoints are only added).
struct Endpoints {
  std::mutex mu;
  std::deque<std::string> list;
};
Endpoints& endpoints() {
  static Endpoints e;
  return e;
}

// "HOST:PORT" with a non-empty host of name or address characters and a port in 1..65535
// (a bracketed IPv6 host, "[::1]:7070", is accepted too).
bool valid_endpoint(std::string_view e) {
  auto colon = e.rfind(':');
  if (colon == std::string_view::npos || colon == 0 || colon + 1 == e.size()) return false;
  std::string_view host = e.substr(0, colon), port = e.substr(colon + 1);
  int p = 0;
  auto [end, ec] = std::from_chars(port.data(), port.data() + port.size(), p);
  if (ec != std::errc() || end != port.data() + port.size() || p < 1 || p > 65535) return false;
  for (char c : host) {
    bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
              c == '.' || c == '-' || c == '_' || c == ':' || c == '[' || c == ']';
    if (!ok) return false;
  }
  return host.size() <= 255;
}

Device remote_device(std::string_view s, std::string_view endpoint) {
  if (!valid_endpoint(endpoint))
    throw DeviceError("[device] '" + std::string(s) + "': a remote device is remote:HOST:PORT");
  auto& e = endpoints();
  std::lock_guard lk(e.mu);
  for (size_t i = 0; i < e.list.size(); ++i)
    if (e.list[i] == endpoint) return {DeviceKind::Remote, static_cast<int>(i)};
  e.list.emplace_back(endpoint);
  return {DeviceKind::Remote, static_cast<int>(e.list.size() - 1)};
}
}  // namespace

std::string remote_endpoint(int index) {
  auto& e = endpoints();
  std::lock_guard lk(e.mu);
  if (index < 0 || static_cast<size_t>(index) >= e.list.size())
    throw DeviceError("[device] no remote endpoint has index " + std::to_string(index));
  return e.list[index];
}

int remote_endpoint_count() {
  auto& e = endpoints();
  std::lock_guard lk(e.mu);
  return static_cast<int>(e.list.size());
}

std::string_view name(DeviceKind k) { return kKindNames[static_cast<int>(k)]; }

Device Device::parse(std::string_view s) {
  auto colon = s.find(':');
  std::string_view kind = s.substr(0, colon);
  if (kind == "remote")
    return remote_device(s, colon == std::string_view::npos ? "" : s.substr(colon + 1));
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
  if (kind == DeviceKind::Remote) {
    auto& e = endpoints();
    std::lock_guard lk(e.mu);
    if (index >= 0 && static_cast<size_t>(index) < e.list.size())
      return s.append(":").append(e.list[index]);
  }
  if (kind != DeviceKind::Cpu || index != 0) s.append(":").append(std::to_string(index));
  return s;
}

}  // namespace ember
