// The tensor of ember's GPU backends (CUDA and Vulkan): shared device storage seen through a
// shape, strides (in elements, 0 for broadcast, negative for flip) and an offset. The storage
// is a device address with its size, owned by the runtime that allocated it (a CUDA allocation
// or a Vulkan buffer), and returns to that runtime's pool when the last view goes.
//
//   ember::GpuTensor t = ember::Cuda::from_data(data, ember::Device::parse("cuda:0"));
//   t.is_contiguous();   // true: from_data makes dense tensors
//   t.ptr();             // the device address of element 0 of the view
#pragma once
#include <cstdint>
#include <memory>

#include "ember/core/device.h"
#include "ember/core/export.h"
#include "ember/ops/op.h"

namespace ember {

namespace gpu {
class Runtime;
/// A device address (CUDA's CUdeviceptr, Vulkan's VkDeviceAddress).
using Address = uint64_t;

/// Device memory of a tensor; the runtime that made it frees it into its pool.
struct EMBER_API Storage {
  Storage() = default;
  Storage(const Storage&) = delete;
  Storage& operator=(const Storage&) = delete;
  virtual ~Storage();
  Address ptr = 0;
  size_t bytes = 0;
  Runtime* runtime = nullptr;
};
}  // namespace gpu

struct EMBER_API GpuTensor {
  std::shared_ptr<gpu::Storage> storage;
  TensorMeta meta;
  Dims strides;
  int64_t offset = 0;  // elements
  int device = 0;      // the index in its backend's devices
  gpu::Runtime* runtime = nullptr;

  /// Row-major and dense from the offset on (dims of size 1 may have any stride).
  bool is_contiguous() const;
  /// The device address of element 0 of the view.
  gpu::Address ptr() const;
};

}  // namespace ember
