#include "ember/backend/dispatch.h"

#include <array>
#include <atomic>
#include <mutex>
#include <utility>

#include "ember/backend/device_backend.h"
#include "ember/backends/cpu/cpu.h"
#include "ember/fusion/fusion.h"
#include "ember/ir/ir.h"

namespace ember {

namespace {

// Factories of the GPU backends linked into this program, recorded by their registration
// objects during static initialization (before the registry exists, usually).
struct Factories {
  std::mutex mu;
  bool registry_built = false;
  std::vector<std::pair<DeviceKind, DeviceBackendFactory>> pending;
};
Factories& factories() {
  static Factories f;
  return f;
}

// A factory that throws or finds no device registers nothing: a missing driver must not stop
// the program.
std::unique_ptr<DeviceBackend> make_backend(DeviceBackendFactory make) {
  try {
    return make();
  } catch (const std::exception&) {
    return nullptr;
  }
}

struct Registry {
  std::mutex mu;
  std::array<std::unique_ptr<DeviceBackend>, kNumDeviceKinds> backends;
  Registry() {
    // The CPU runs ops at once unless EMBER_FUSION=1 asks for Fusion there too (docs/fusion.md).
    if (fusion::cpu_requested())
      backends[static_cast<int>(DeviceKind::Cpu)] =
          std::make_unique<DeviceBackendFor<Fusion<Cpu>>>(1);
    else
      backends[static_cast<int>(DeviceKind::Cpu)] = std::make_unique<DeviceBackendFor<Cpu>>(1);
    auto& f = factories();
    std::lock_guard lk(f.mu);
    for (auto& [kind, make] : f.pending)
      if (auto b = make_backend(make)) backends[static_cast<int>(kind)] = std::move(b);
    f.pending.clear();
    f.registry_built = true;
  }
};

Registry& registry() {
  static Registry r;
  return r;
}

std::atomic<bool> g_ir_check{false};
Device g_default_device = Device::cpu();

}  // namespace

void register_device_backend(DeviceKind kind, std::unique_ptr<DeviceBackend> b) {
  auto& r = registry();
  std::lock_guard lk(r.mu);
  r.backends[static_cast<int>(kind)] = std::move(b);
}

void register_device_factory(DeviceKind kind, DeviceBackendFactory make) {
  auto& f = factories();
  {
    std::lock_guard lk(f.mu);
    if (!f.registry_built) {
      f.pending.emplace_back(kind, make);
      return;
    }
  }
  if (auto b = make_backend(make)) register_device_backend(kind, std::move(b));
}

DeviceBackend& device_backend(Device dev) {
  DeviceBackend* b = registry().backends[static_cast<int>(dev.kind)].get();
  if (!b) throw DeviceError("[device] no backend for '" + dev.to_string() + "' in this build");
  if (dev.index < 0 || dev.index >= b->device_count())
    throw DeviceError("[device] '" + dev.to_string() + "' is not available (" +
                      std::to_string(b->device_count()) + " found)");
  return *b;
}

std::vector<Device> available_devices() {
  std::vector<Device> out;
  auto& r = registry();
  for (int k = 0; k < kNumDeviceKinds; ++k)
    if (auto& b = r.backends[k])
      for (int i = 0; i < b->device_count(); ++i) out.push_back({static_cast<DeviceKind>(k), i});
  return out;
}

void flush(Device dev) { device_backend(dev).flush(dev); }

void DeviceBackend::with_device_memory(const DispatchHandle& h, const DeviceMemoryFn&) {
  throw ValueError("with_device_memory: " + h.device.to_string() + " (the " + std::string(name()) +
                   " backend) gives no device memory (CUDA tensors do)");
}

Device Dispatch::default_device() { return g_default_device; }
void Dispatch::set_default_device(Device d) {
  device_backend(d);  // validates
  g_default_device = d;
}
void Dispatch::set_ir_check(bool on) { g_ir_check = on; }

DispatchHandle Dispatch::run(const Op& op, std::span<Handle> in, const TensorMeta& out,
                             Device dev) {
  DeviceBackend& b = device_backend(dev);
  if (g_ir_check.load(std::memory_order_relaxed)) {
    Op back = ir::decode_op(ir::encode(op));
    if (!(back == op))
      throw Error("[ir] op '" + std::string(ember::name(op.code)) + "' did not round-trip");
    return b.run(back, in, out, dev);
  }
  return b.run(op, in, out, dev);
}

}  // namespace ember
