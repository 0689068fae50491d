// Dispatch: the backend whose device is chosen at run time. Tensors carry their device
// ("cpu", "cuda:0", "vulkan:0", ...) and each op goes to the backend registered for it. The
// library instantiates the Dispatch stack once, so user code that names only Dispatch
// compiles fast:
//
//   using B = ember::Dispatch;
//   auto x = ember::Tensor<B, 2>::ones({2, 3}, ember::Device::parse("cpu"));
//   ember::available_devices();   // {"cpu", ...} as found on this machine
#pragma once
#include <memory>
#include <vector>

#include "ember/backend/backend.h"
#include "ember/backend/device_memory.h"
#include "ember/core/export.h"

namespace ember {

namespace detail {
/// A backend handle of any registered backend.
struct EMBER_API AnyHandle {
  virtual ~AnyHandle() = default;
  virtual const TensorMeta& meta() const = 0;
};
}  // namespace detail

struct DispatchHandle {
  std::shared_ptr<detail::AnyHandle> h;
  Device device;
};

/// A backend seen through Dispatch: one per device kind, registered once.
class EMBER_API DeviceBackend {
 public:
  virtual ~DeviceBackend() = default;
  virtual std::string_view name() const = 0;
  /// How many devices of this kind are usable on this machine (0 when none).
  virtual int device_count() const = 0;
  virtual DispatchHandle from_data(const TensorData& d, Device dev) = 0;
  virtual TensorData to_data(const DispatchHandle& h) = 0;
  virtual DispatchHandle run(const Op& op, std::span<DispatchHandle> in, const TensorMeta& out,
                             Device dev) = 0;
  /// Runs what a lazy backend (Fusion) holds for the device; the default has nothing to run.
  virtual void flush(Device) {}
  /// Calls `f` with the tensor's device memory (device_memory.h); the default has none.
  virtual void with_device_memory(const DispatchHandle& h, const DeviceMemoryFn& f);
};

/// Registers the backend for a device kind (replacing any earlier one).
EMBER_API void register_device_backend(DeviceKind kind, std::unique_ptr<DeviceBackend> b);
/// Makes a backend's DeviceBackend, or returns nullptr where it finds no device.
using DeviceBackendFactory = std::unique_ptr<DeviceBackend> (*)();
/// Registers a backend library's factory for a device kind. It runs when the device registry
/// is created (at the first Dispatch call), or at once if the registry exists; a factory that
/// throws or returns nullptr registers nothing. GPU backends call it from a registration
/// object that ember::ember's link interface brings into programs (docs/install.md, "Lean
/// programs"), so Dispatch itself names no GPU backend.
EMBER_API void register_device_factory(DeviceKind kind, DeviceBackendFactory make);
/// The backend for a device; throws DeviceError if none is registered or the index is absent.
EMBER_API DeviceBackend& device_backend(Device dev);
/// Every device usable now, e.g. {cpu, cuda:0}.
EMBER_API std::vector<Device> available_devices();
/// Starts the ops a device holds back (fused programs recorded by Fusion, docs/fusion.md)
/// without waiting for them: what a benchmark calls before it synchronizes the device.
EMBER_API void flush(Device dev);

class EMBER_API Dispatch {
 public:
  using Handle = DispatchHandle;
  static std::string_view name() { return "dispatch"; }
  static Device default_device();
  /// The device new tensors go to when none is given (initially cpu).
  static void set_default_device(Device d);
  static const TensorMeta& meta(const Handle& h) { return h.h->meta(); }
  static Device device(const Handle& h) { return h.device; }
  static Handle from_data(const TensorData& d, Device dev) {
    return device_backend(dev).from_data(d, dev);
  }
  static TensorData to_data(const Handle& h) { return device_backend(h.device).to_data(h); }
  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev);
  /// The device's backend gives the memory, where it has any (device_memory.h).
  static void with_device_memory(const Handle& h, const DeviceMemoryFn& f) {
    device_backend(h.device).with_device_memory(h, f);
  }
  /// Composites go through to the device's backend, which decides kernel or decomposition.
  static bool supports(OpCode) { return true; }
  /// Debug mode: every op is encoded to the binary IR and decoded again before it runs.
  static void set_ir_check(bool on);
};

static_assert(Backend<Dispatch>);

}  // namespace ember
