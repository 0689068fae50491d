#include "ember/backends/cpu/allocator.h"

#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "ember/core/error.h"

namespace ember::cpu {

namespace {

constexpr size_t kLarge = size_t{128} << 10;  // buffers from 128 KiB on go through the cache
constexpr size_t kAlign = 64;

std::atomic<int64_t> g_live_buffers{0};
std::atomic<int64_t> g_live_bytes{0};

int64_t default_limit() {
  if (const char* e = std::getenv("EMBER_CPU_CACHE_MB")) return std::atoll(e) << 20;
  return int64_t{1} << 30;
}

class Cache {
 public:
  void* take(size_t bytes) {
    std::lock_guard lk(mu_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    held_ -= static_cast<int64_t>(bytes);
    return p;
  }
  // Keeps the block if it fits under the limit; otherwise the caller frees it.
  bool give(void* p, size_t bytes) {
    std::lock_guard lk(mu_);
    if (held_ + static_cast<int64_t>(bytes) > limit_) return false;
    free_[bytes].push_back(p);
    held_ += static_cast<int64_t>(bytes);
    return true;
  }
  void clear() {
    std::lock_guard lk(mu_);
    for (auto& [size, blocks] : free_)
      for (void* p : blocks) ::operator delete (p, std::align_val_t{kAlign});
    free_.clear();
    held_ = 0;
  }
  int64_t held() {
    std::lock_guard lk(mu_);
    return held_;
  }
  void set_limit(int64_t l) {
    {
      std::lock_guard lk(mu_);
      limit_ = l;
    }
    if (held() > l) clear();
  }
  ~Cache() { clear(); }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  int64_t held_ = 0;
  int64_t limit_ = default_limit();
};

Cache& cache() {
  static Cache* c = new Cache();  // outlives every tensor freed during static destruction
  return *c;
}

template <class T>
struct CountingAllocator {
  using value_type = T;
  CountingAllocator() = default;
  template <class U>
  CountingAllocator(const CountingAllocator<U>&) {}  // NOLINT(google-explicit-constructor)
  T* allocate(size_t n) {
    T* p = std::allocator<T>().allocate(n);  // counted only once it succeeded
    ++g_live_buffers;
    g_live_bytes += static_cast<int64_t>(n * sizeof(T));
    return p;
  }
  void deallocate(T* p, size_t n) {
    --g_live_buffers;
    g_live_bytes -= static_cast<int64_t>(n * sizeof(T));
    std::allocator<T>().deallocate(p, n);
  }
  friend bool operator==(const CountingAllocator&, const CountingAllocator&) { return true; }
};

struct LargeDeleter {
  size_t bytes;
  void operator()(std::byte* p) const {
    --g_live_buffers;
    g_live_bytes -= static_cast<int64_t>(bytes);
    if (!cache().give(p, bytes)) ::operator delete (p, std::align_val_t{kAlign});
  }
};

}  // namespace

namespace {
[[noreturn]] void out_of_memory(size_t bytes) {
  throw MemoryError("out of memory: " + std::to_string(bytes) + " bytes asked for (" +
                        std::to_string(live_bytes()) + " bytes in use)",
                    static_cast<int64_t>(bytes), /*names_site=*/false);
}
}  // namespace

std::shared_ptr<std::byte[]> allocate(size_t bytes) {
  if (bytes < kLarge) {  // one allocation for the control block and the data
    try {
      return std::allocate_shared_for_overwrite<std::byte[]>(CountingAllocator<std::byte>(), bytes);
    } catch (const std::bad_alloc&) {
      out_of_memory(bytes);
    }
  }
  void* p = cache().take(bytes);
  if (!p) p = ::operator new (bytes, std::align_val_t{kAlign}, std::nothrow);
  if (!p) {  // the cache may hold what the system lacks: free it and try once more
    cache().clear();
    p = ::operator new (bytes, std::align_val_t{kAlign}, std::nothrow);
  }
  if (!p) out_of_memory(bytes);
  ++g_live_buffers;
  g_live_bytes += static_cast<int64_t>(bytes);
  return std::shared_ptr<std::byte[]>(static_cast<std::byte*>(p), LargeDeleter{bytes});
}

void empty_cache() { cache().clear(); }
int64_t cached_bytes() { return cache().held(); }
void set_cache_limit(int64_t bytes) { cache().set_limit(bytes); }
int64_t live_buffers() { return g_live_buffers.load(); }
int64_t live_bytes() { return g_live_bytes.load(); }

}  // namespace ember::cpu
