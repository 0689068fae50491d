// Internal: the CUDA backend's per-device state (context, stream, pool, staging buffers, the
// loaded kernels) and the launch path. A kernel is looked up by a 64-bit key packed from its
// spec (no hashing of strings), so a repeated op builds, renders and compiles nothing.
#pragma once
#include <array>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/cuda.h"
#include "ember/backends/cuda/driver.h"
#include "ember/core/small_vec.h"
#include "ember/kernel/ir.h"

namespace ember::cuda::detail {

/// A kernel loaded on one device, with its parameter types for packing arguments.
struct Loaded {
  std::unique_ptr<Module> module;
  CuFunction* fn = nullptr;
  int block[3] = {1, 1, 1};
  SmallVec<kernel::ScalarType, 24> params;  // Void for buffers
  std::string name;
};

/// What a kernel key is made of; every field fits its bits.
enum class Kind : uint8_t {
  Elementwise,
  Reduce,
  Where,
  Copy,
  Fill,
  SeqReduce,
  Scan,
  Matmul,
  Index,
  Sort,
  Softmax,
  Spatial,
  Norm
};
constexpr uint64_t key(Kind kind, int op, DType a, DType b = DType::F32, int rank = 0,
                       bool dense = false, bool wide = false, int extra = 0) {
  return uint64_t(kind) | uint64_t(op) << 8 | uint64_t(a) << 24 | uint64_t(b) << 32 |
         uint64_t(rank) << 40 | uint64_t(dense) << 48 | uint64_t(wide) << 49 |
         uint64_t(extra) << 50;
}

class DeviceState {
 public:
  explicit DeviceState(int index);
  int index;
  int arch = 90;
  int multiprocessors = 1;
  CuContext* ctx = nullptr;
  std::unique_ptr<Stream> stream;
  DevicePool pool;
  Staging staging;

  CuStream* s() const { return stream->get(); }
  /// The kernel for `k`, or nullptr if not loaded yet.
  const Loaded* find(uint64_t k) {
    std::lock_guard lk(mu_);
    auto it = kernels_.find(k);
    return it == kernels_.end() ? nullptr : it->second.get();
  }
  /// Compiles (through the kernel cache) and loads `kern` under `k`.
  const Loaded& load(uint64_t k, const kernel::Kernel& kern);
  /// The same for kernels named by a byte string (fused programs: their signature and layout).
  const Loaded* find(const std::string& k);
  const Loaded& load(const std::string& k, const kernel::Kernel& kern);

 private:
  std::mutex mu_;
  std::unordered_map<uint64_t, std::unique_ptr<Loaded>> kernels_;
  std::unordered_map<std::string, std::unique_ptr<Loaded>> named_;
};

/// The state of device `index`, with its context current on this thread.
DeviceState& device(int index);
int device_count_cached();

/// The kernel under `k`, built by `build()` the first time.
template <class F>
const Loaded& kernel_for(DeviceState& d, uint64_t k, F&& build) {
  if (const Loaded* l = d.find(k)) return *l;
  return d.load(k, build());
}

/// Arguments of one launch, packed by the loaded kernel's parameter types.
class Args {
 public:
  explicit Args(const Loaded& l) : l_(l) {}
  Args& ptr(DevicePtr p) {
    std::memcpy(&slots_[n_++], &p, sizeof p);
    return *this;
  }
  Args& i(int64_t v);
  Args& f(double v);
  /// Launches `groups` workgroups on the device's stream.
  void launch(DeviceState& d, int64_t groups);

 private:
  const Loaded& l_;
  static constexpr int kMaxArgs = 160;
  uint64_t slots_[kMaxArgs] = {};
  int n_ = 0;
};

/// Workgroups for a grid-stride loop over `n` items of `per_group` each.
int64_t groups_for(const DeviceState& d, int64_t n, int64_t per_group);

/// An uninitialized dense tensor on `device`.
CudaTensor empty(const TensorMeta& meta, int device);
/// A dense copy of `t` (t itself when it is contiguous).
CudaTensor contiguous(const CudaTensor& t);
/// Strides of `t` broadcast to `shape` (0 where broadcast).
Dims broadcast_strides(const CudaTensor& t, const Shape& shape);
/// Whether `t` may be overwritten as the output `out` (sole owner, same meta, dense).
bool reusable(const CudaTensor& t, const TensorMeta& out);

/// A shape and operands' strides with size-1 dims dropped and mergeable dims merged.
struct Collapsed {
  Dims shape;
  std::vector<Dims> strides;  // one per operand, in the order given
  int64_t numel = 1;
  bool wide = false;  // some index or offset needs 64 bits
};
Collapsed collapse(const Shape& shape, std::span<const Dims* const> strides);

[[noreturn]] void not_implemented(const Op& op, std::span<const CudaTensor> in,
                                  const std::string& what = "");
std::string describe(std::span<const CudaTensor> in);

}  // namespace ember::cuda::detail
