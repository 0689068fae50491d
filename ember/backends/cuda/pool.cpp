#include "ember/backends/cuda/pool.h"

#include <algorithm>
#include <cstring>

#include "ember/core/error.h"

namespace ember::cuda {

size_t DevicePool::round(size_t bytes) {
  constexpr size_t kSmall = 512, kLarge = size_t(2) << 20, kSplit = size_t(1) << 20;
  if (bytes == 0) return 0;
  if (bytes < kSplit) return (bytes + kSmall - 1) / kSmall * kSmall;
  return (bytes + kLarge - 1) / kLarge * kLarge;
}

DevicePtr DevicePool::allocate(size_t bytes, CuStream* stream,
                               const std::function<void()>& before_free) {
  if (bytes == 0) return 0;
  size_t size = round(bytes);
  std::unique_lock lk(mu_);
  ++stats_.allocations;
  auto take = [&](DevicePtr p) {
    stats_.allocated_bytes += int64_t(size);
    stats_.peak_allocated_bytes = std::max(stats_.peak_allocated_bytes, stats_.allocated_bytes);
    return p;
  };
  auto it = free_.find(size);
  if (it != free_.end()) {
    auto& list = it->second;  // by address, highest first
    for (size_t i = list.size(); i-- > 0;) {
      if (list[i].stream != stream) continue;
      DevicePtr p = list[i].ptr;
      list.erase(list.begin() + ptrdiff_t(i));
      ++stats_.cache_hits;
      stats_.cached_bytes -= int64_t(size);
      return take(p);
    }
  }
  DevicePtr p = 0;
  if (!raw::try_alloc(&p, size)) {
    ++stats_.oom_retries;
    if (before_free) {
      lk.unlock();
      before_free();
      lk.lock();
    }
    free_all_locked();
    if (!raw::try_alloc(&p, size)) {
      size_t free_b = 0, total = 0;
      try {
        raw::mem_info(&free_b, &total);
      } catch (const Error&) {
      }
      throw MemoryError("[cuda] out of device memory: " + std::to_string(bytes) +
                            " bytes requested (" + std::to_string(size) + " with rounding), " +
                            std::to_string(stats_.allocated_bytes) + " allocated by ember, " +
                            std::to_string(free_b) + " of " + std::to_string(total) +
                            " free on the device",
                        int64_t(bytes), false);
    }
  }
  ++stats_.device_allocations;
  stats_.reserved_bytes += int64_t(size);
  return take(p);
}

void DevicePool::release(DevicePtr p, size_t bytes, CuStream* stream) noexcept {
  if (!p) return;
  size_t size = round(bytes);
  std::lock_guard lk(mu_);
  try {
    // Kept by address so that the lowest free block is handed out first: which block a request
    // gets depends on which blocks are free, not on the order they were released in, so a
    // training step that repeats gets the same addresses every time (and its batches of
    // commands replay as CUDA graphs, backends/cuda/queue.h).
    auto& list = free_[size];
    auto at = std::upper_bound(list.begin(), list.end(), p,
                               [](DevicePtr v, const Block& b) { return v > b.ptr; });
    list.insert(at, {p, stream});
  } catch (...) {  // no memory for the list: the block is leaked, not corrupted
    return;
  }
  stats_.allocated_bytes -= int64_t(size);
  stats_.cached_bytes += int64_t(size);
}

void DevicePool::free_all_locked() {
  for (auto& [size, list] : free_) {
    for (const Block& b : list) {
      raw::free(b.ptr);
      ++stats_.device_frees;
      stats_.reserved_bytes -= int64_t(size);
      stats_.cached_bytes -= int64_t(size);
    }
    list.clear();
  }
  free_.clear();
}

void DevicePool::empty_cache() {
  std::lock_guard lk(mu_);
  free_all_locked();
}

MemoryStats DevicePool::stats() const {
  std::lock_guard lk(mu_);
  return stats_;
}

void DevicePool::reset_peak() {
  std::lock_guard lk(mu_);
  stats_.peak_allocated_bytes = stats_.allocated_bytes;
}

Staging::~Staging() = default;  // kept for the process (see runtime.cpp)

bool Staging::ready() {
  if (tried_) return buf_[0] != nullptr;
  tried_ = true;
  for (int i = 0; i < 2; ++i) {
    buf_[i] = raw::host_alloc(kChunk);
    if (!buf_[i]) {
      raw::host_free(buf_[0]);
      buf_[0] = nullptr;
      return false;
    }
    done_[i] = new Event();
  }
  return true;
}

void Staging::upload(DevicePtr dst, const void* src, size_t bytes, CuStream* s) {
  std::lock_guard lk(mu_);
  if (!ready()) {  // pageable: the driver stages it, the source is consumed when this returns
    raw::copy_htod(dst, src, bytes, s);
    return;
  }
  const char* from = static_cast<const char*>(src);
  for (size_t off = 0, k = 0; off < bytes; off += kChunk, k ^= 1) {
    size_t n = std::min(kChunk, bytes - off);
    if (pending_[k]) done_[k]->synchronize();  // its previous transfer has read it
    std::memcpy(buf_[k], from + off, n);
    raw::copy_htod(dst + off, buf_[k], n, s);
    done_[k]->record_raw(s);
    pending_[k] = true;
  }
}

void Staging::download(void* dst, DevicePtr src, size_t bytes, CuStream* s) {
  std::lock_guard lk(mu_);
  char* to = static_cast<char*>(dst);
  if (!ready()) {
    raw::copy_dtoh(dst, src, bytes, s);
    raw::stream_synchronize(s);
    return;
  }
  // Two chunks in flight: the host copies one out while the next one transfers.
  size_t chunks = (bytes + kChunk - 1) / kChunk;
  auto start = [&](size_t c) {
    size_t k = c & 1, off = c * kChunk, n = std::min(kChunk, bytes - off);
    if (pending_[k]) done_[k]->synchronize();
    raw::copy_dtoh(buf_[k], src + off, n, s);
    done_[k]->record_raw(s);
    pending_[k] = true;
  };
  if (chunks) start(0);
  for (size_t c = 0; c < chunks; ++c) {
    if (c + 1 < chunks) start(c + 1);
    size_t k = c & 1, off = c * kChunk, n = std::min(kChunk, bytes - off);
    done_[k]->synchronize();
    pending_[k] = false;
    std::memcpy(to + off, buf_[k], n);
  }
}

}  // namespace ember::cuda
