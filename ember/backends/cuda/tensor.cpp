// The Cuda backend's entry points (the ops themselves are the GPU layer's, backends/gpu) and its
// registration with Dispatch.
#include "ember/backend/device_backend.h"
#include "ember/backends/cuda/runtime.h"
#include "ember/backends/gpu/backend.h"
#include "ember/core/error.h"
#include "ember/fusion/fusion.h"

namespace ember {

namespace {
// The runtime of a cuda device, registered for gpu::runtime_for on first use.
gpu::Runtime& cuda_runtime(int index) { return cuda::detail::device(index); }
cuda::detail::DeviceState& state(Device dev) {
  static const bool registered = (gpu::set_runtime_lookup(DeviceKind::Cuda, &cuda_runtime), true);
  (void)registered;
  if (dev.kind != DeviceKind::Cuda)
    throw DeviceError("[cuda] not a cuda device: " + dev.to_string());
  return cuda::detail::device(dev.index);
}
}  // namespace

CudaTensor Cuda::from_data(const TensorData& d, Device dev) {
  return gpu::from_data(d, state(dev));
}

TensorData Cuda::to_data(const CudaTensor& h) { return gpu::to_data(h); }

CudaTensor Cuda::run(const Op& op, std::span<CudaTensor> in, const TensorMeta& out, Device dev) {
  return gpu::run(op, in, out, state(dev));
}

bool Cuda::supports(OpCode c) { return gpu::supports(c); }

void Cuda::flush(Device dev) { state(dev).submit(); }

void Cuda::with_device_memory(const CudaTensor& h, const DeviceMemoryFn& f) {
  if (!h.is_contiguous())
    throw ValueError("with_device_memory: the tensor is a view that is not contiguous (shape " +
                     h.meta.shape.to_string() + "): make a contiguous copy first");
  const Device dev = device(h);
  auto& st = state(dev);
  std::lock_guard lk(st.stream_mu);
  cuda::CuStream* stream = st.s();
  f(DeviceMemory{.address = h.ptr(),
                 .bytes = size_t(h.meta.shape.numel()) * size_t(size_of(h.meta.dtype)),
                 .stream = stream,
                 .device = dev});
}

bool Cuda::can_fuse(const Op& op, std::span<const TensorMeta* const> in, const TensorMeta& out) {
  return gpu::can_fuse(op, in, out);
}

std::vector<CudaTensor> Cuda::run_fused(const fusion::Program& p, std::span<CudaTensor> in,
                                        Device dev) {
  return gpu::run_fused(p, in, state(dev));
}

std::optional<std::vector<CudaTensor>> Cuda::run_epilogue(const Op& mm, std::span<CudaTensor> ab,
                                                          const fusion::Program& p, int product,
                                                          std::span<CudaTensor> in, Device dev) {
  return gpu::run_epilogue(mm, ab, p, product, in, state(dev));
}

namespace cuda {

/// Dispatch's backend for DeviceKind::Cuda, or nullptr where there is no usable GPU
/// (called by the registry in backend/dispatch.cpp, which is how ember_cuda gets linked in).
std::unique_ptr<DeviceBackend> make_device_backend() {
  int n = detail::device_count_cached();
  if (n <= 0) return nullptr;
  // Fused by default: Fusion runs ops at once when it is switched off (docs/fusion.md).
  return std::make_unique<DeviceBackendFor<Fusion<Cuda>>>(n);
}

}  // namespace cuda

}  // namespace ember
