// Internal: the GPU op layer seen as a Backend (what decompositions inside the op files run
// on), and the lookup from a Device to its runtime that each GPU backend registers.
#pragma once
#include "ember/backends/gpu/ops.h"

namespace ember::gpu {

/// The runtime of device `index` of a backend (throws DeviceError when there is none).
using RuntimeLookup = Runtime& (*)(int index);
/// Registers the lookup of a device kind (the CUDA and Vulkan backends do, on first use).
EMBER_API void set_runtime_lookup(DeviceKind kind, RuntimeLookup lookup);
/// The runtime of `dev` (DeviceError when its backend registered none).
EMBER_API Runtime& runtime_for(Device dev);

/// Any GPU runtime's tensors as one Backend: ops run on the runtime of their device.
struct Ops {
  using Handle = GpuTensor;
  static std::string_view name() { return "gpu"; }
  static Device default_device() { return {DeviceKind::Cuda, 0}; }
  static const TensorMeta& meta(const Handle& h) { return h.meta; }
  static Device device(const Handle& h) { return {h.runtime->kind, h.device}; }
  static Handle from_data(const TensorData& d, Device dev) {
    return gpu::from_data(d, runtime_for(dev));
  }
  static TensorData to_data(const Handle& h) { return gpu::to_data(h); }
  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev) {
    return gpu::run(op, in, out, in.empty() ? runtime_for(dev) : runtime(in[0]));
  }
  static bool supports(OpCode c) { return gpu::supports(c); }
};

}  // namespace ember::gpu
