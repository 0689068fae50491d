// The caching device-memory pool of the CUDA backend. Blocks are rounded to size classes
// (512 B below 1 MiB, 2 MiB above) and kept on a free list per class when released, so a
// training loop that allocates the same sizes every step stops calling cuMemAlloc after its
// first step. A request gets the free block of its class with the lowest address, so a step
// that repeats gets the same addresses each time, whatever order its tensors were freed in. A block
// remembers the stream it was used on and is handed out again only on that stream (work on one
// stream runs in order, so a block freed by the host can be reused by the next op at once). Out of
// memory: the cache is freed and the allocation retried once, then a MemoryError names the bytes.
//
//   auto s = ember::cuda::memory_stats(0);   // allocated, reserved, peak, counts
//   ember::cuda::empty_cache(0);             // cached blocks back to the driver
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "ember/backends/cuda/driver.h"
#include "ember/core/export.h"

namespace ember::cuda {

struct MemoryStats {
  int64_t allocated_bytes = 0;       // in tensors now (rounded to size classes)
  int64_t reserved_bytes = 0;        // taken from the driver: allocated + cached
  int64_t cached_bytes = 0;          // free blocks kept for reuse
  int64_t peak_allocated_bytes = 0;  // since the start or reset_peak_memory_stats
  int64_t allocations = 0;           // blocks handed out
  int64_t cache_hits = 0;            // ... of them from the cache
  int64_t device_allocations = 0;    // cuMemAlloc calls
  int64_t device_frees = 0;          // cuMemFree calls
  int64_t oom_retries = 0;           // out of memory, cache freed, retried
};

/// The pool's figures for a device (throws DeviceError when it is not available).
EMBER_API MemoryStats memory_stats(int device = 0);
/// Returns the device's cached free blocks to the driver (after its stream has finished).
EMBER_API void empty_cache(int device = 0);
EMBER_API void reset_peak_memory_stats(int device = 0);

class EMBER_API DevicePool {
 public:
  /// The size class of a request: 512-byte steps below 1 MiB, 2 MiB steps above.
  static size_t round(size_t bytes);

  /// A block of at least `bytes` (0 gives 0) for work on `stream`. Throws MemoryError. Out of
  /// memory, `before_free` runs before the cache is freed (it submits queued work that may
  /// still use cached blocks).
  DevicePtr allocate(size_t bytes, CuStream* stream, const std::function<void()>& before_free = {});
  /// Gives a block back to the cache (never calls the driver: safe in destructors).
  void release(DevicePtr p, size_t bytes, CuStream* stream) noexcept;
  /// Frees every cached block (the caller synchronizes the streams first).
  void empty_cache();
  MemoryStats stats() const;
  void reset_peak();

 private:
  struct Block {
    DevicePtr ptr;
    CuStream* stream;
  };
  void free_all_locked();
  mutable std::mutex mu_;
  std::unordered_map<size_t, std::vector<Block>> free_;  // by size class
  MemoryStats stats_;
};

/// Page-locked host buffers for host <-> device copies: two of `kChunk` bytes used in turn,
/// so a large upload overlaps the host copy into one with the transfer from the other.
class EMBER_API Staging {
 public:
  static constexpr size_t kChunk = size_t(4) << 20;
  ~Staging();
  /// Copies host memory to the device on `s` (asynchronously; the source may be reused
  /// when this returns).
  void upload(DevicePtr dst, const void* src, size_t bytes, CuStream* s);
  /// Copies device memory to the host; returns when the data are there.
  void download(void* dst, DevicePtr src, size_t bytes, CuStream* s);

 private:
  bool ready();  // buffers allocated (false: pinned memory unavailable, copy directly)
  void* buf_[2] = {nullptr, nullptr};
  Event* done_[2] = {nullptr, nullptr};
  bool pending_[2] = {false, false};
  bool tried_ = false;
  std::mutex mu_;
};

}  // namespace ember::cuda
