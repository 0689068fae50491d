// The Vulkan backend: ember's GPU op layer (the same kernels of the kernel IR as the CUDA
// backend, rendered to GLSL and compiled to SPIR-V) on the Vulkan runtime (runtime.h). It runs
// on any GPU with a Vulkan 1.2 driver that offers buffer device addresses, and on Mesa's
// lavapipe (a Vulkan driver on the CPU). Through Dispatch the devices are "vulkan:0" ...
// (discrete GPUs first), fused by default like cuda:N:
//
//   #include "ember/backends/vulkan/vulkan.h"
//   if (ember::vulkan::available()) {
//     auto x = ember::Tensor<ember::Dispatch, 2>::ones({2, 3}, ember::Device::parse("vulkan:0"));
//   }
//
// A program gets vulkan:N by linking ember::vulkan (its registration comes with it). Kernels
// that need a feature the device lacks (f64, i64, 16-bit storage, subgroup ops) fail with a
// DeviceError naming the op, the kernel and the missing features.
#pragma once
#include <memory>
#include <string>
#include <vector>

#include "ember/backend/backend.h"
#include "ember/backends/gpu/tensor.h"
#include "ember/backends/vulkan/runtime.h"
#include "ember/fusion/program.h"

namespace ember {

class DeviceBackend;

namespace vulkan {
/// Runs what Fusion holds for vulkan:`device`, then waits for every op queued on it.
void synchronize(int device = 0);
/// Dispatch's backend for vulkan:0..N-1, or nullptr where no Vulkan device is usable (the
/// factory register.cpp registers).
std::unique_ptr<DeviceBackend> make_device_backend();
}  // namespace vulkan

/// A Vulkan tensor: device storage seen through shape, strides and an offset (gpu/tensor.h).
using VulkanTensor = GpuTensor;

class Vulkan {
 public:
  using Handle = GpuTensor;
  static std::string_view name() { return "vulkan"; }
  static Device default_device() { return {DeviceKind::Vulkan, 0}; }
  static const TensorMeta& meta(const Handle& h) { return h.meta; }
  static Device device(const Handle& h) { return {DeviceKind::Vulkan, h.device}; }
  static Handle from_data(const TensorData& d, Device dev);
  static TensorData to_data(const Handle& h);
  static Handle run(const Op& op, std::span<Handle> in, const TensorMeta& out, Device dev);
  /// The composites with a kernel of their own, as on CUDA (the rest decompose).
  static bool supports(OpCode c);
  /// Fusion<Vulkan>: the GPU layer's fused kernels (docs/fusion.md).
  static bool can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out);
  static std::vector<Handle> run_fused(const fusion::Program& p, std::span<Handle> in, Device dev);
};

static_assert(Backend<Vulkan>);

}  // namespace ember
