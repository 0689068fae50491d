// Internal: CPU buffer allocation. Large buffers are kept in a bounded cache when freed and
// handed out again for the same size, so a training step that allocates the same tensors each
// iteration does not page-fault fresh memory from the OS every time.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>

namespace ember::cpu {

/// A buffer of `bytes` bytes (64-byte aligned when large), counted by Cpu::live_buffers().
/// Throws MemoryError (its `bytes()` = `bytes`) when the system has no memory for it;
/// `apply` adds the op and the output shape to the message.
std::shared_ptr<std::byte[]> allocate(size_t bytes);

/// Frees the cached blocks (they are reused otherwise).
void empty_cache();
/// Bytes held in the cache right now.
int64_t cached_bytes();
/// Cache limit in bytes (EMBER_CPU_CACHE_MB overrides the default of 1 GiB; 0 disables it).
void set_cache_limit(int64_t bytes);

int64_t live_buffers();
int64_t live_bytes();

}  // namespace ember::cpu
