// A tensor's values in device memory, for code outside ember that works on them where they lie:
// NCCL's collectives (ember/distributed/nccl.h), a hand-written CUDA kernel. The backend runs
// what it holds back for the tensor (Fusion's pending programs), submits its queued commands,
// and calls a function with the address and the stream it queues the device's work on: what
// the function queues on that stream runs after every op ember queued before and before every
// op ember queues after. The CUDA backend has it (Dispatch forwards it to a "cuda:N" tensor's
// backend); other backends throw ValueError.
//
//   auto t = ember::Tensor<ember::Dispatch, 1>::zeros({1024}, ember::Device::parse("cuda:0"));
//   ember::with_device_memory(t, [](const ember::DeviceMemory& m) {
//     // e.g. ncclAllReduce((void*)m.address, (void*)m.address, 1024, ncclFloat, ncclSum,
//     //                    comm, (cudaStream_t)m.stream);
//   });
//
// Writing through the address is safe only where the tensor holds its buffer alone (a tensor
// just made by an op, not a view of another's): a view would see the writes too. `f` holds the
// device's stream: it queues work and returns (it runs no ember op, and waits for nothing long;
// record an event to wait on afterwards).
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>

#include "ember/core/device.h"
#include "ember/core/error.h"

namespace ember {

struct DeviceMemory {
  /// The device address of the tensor's first element (a CUdeviceptr on CUDA).
  uint64_t address = 0;
  /// The size of its elements together (they are contiguous, row-major).
  size_t bytes = 0;
  /// The stream the device's ops are queued on (a CUstream on CUDA).
  void* stream = nullptr;
  Device device;
};

using DeviceMemoryFn = std::function<void(const DeviceMemory&)>;

/// A backend that gives its tensors' device memory to a function (see above).
template <class B>
concept HasDeviceMemory = requires(const typename B::Handle& h, const DeviceMemoryFn& f) {
  B::with_device_memory(h, f);
};

/// Calls `f` with `t`'s device memory; throws ValueError where its backend has none to give.
template <class T>
void with_device_memory(const T& t, const DeviceMemoryFn& f) {
  using B = typename T::backend_type;
  if constexpr (HasDeviceMemory<B>)
    B::with_device_memory(t.handle(), f);
  else
    throw ValueError("with_device_memory: the " + std::string(B::name()) +
                     " backend gives no device memory (CUDA tensors do)");
}

}  // namespace ember
