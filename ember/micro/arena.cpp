// A first-fit allocator over one buffer: blocks lie end to end, each behind an 8-byte header
// (size, owners; 0 owners = free). Models hold a handful of live tensors, so walking the
// blocks is cheap and needs no free list; freeing merges a block with its free neighbours.
#include "ember/micro/arena.h"

#include "ember/micro/error.h"

#ifndef EMBER_MICRO_ARENA_BYTES
#define EMBER_MICRO_ARENA_BYTES 32768
#endif

namespace ember::micro {
namespace {

struct Header {
  uint32_t size;  // bytes of the block, header included; a multiple of 8
  uint32_t refs;  // owners; 0 = free
};
static_assert(sizeof(Header) == 8);

#if EMBER_MICRO_ARENA_BYTES > 0
alignas(8) unsigned char g_builtin[EMBER_MICRO_ARENA_BYTES];
unsigned char* g_base = g_builtin;
size_t g_capacity = EMBER_MICRO_ARENA_BYTES & ~size_t{7};
#else
unsigned char* g_base = nullptr;
size_t g_capacity = 0;
#endif
bool g_ready = false;
size_t g_in_use = 0, g_high = 0;

Header* at(size_t offset) { return reinterpret_cast<Header*>(g_base + offset); }
Header* header_of(const void* p) {
  return reinterpret_cast<Header*>(static_cast<unsigned char*>(const_cast<void*>(p)) -
                                   sizeof(Header));
}

void ensure_ready() {
  if (g_ready) return;
  if (g_capacity < 2 * sizeof(Header)) fail("[arena] no arena: call arena_use() first");
  *at(0) = Header{static_cast<uint32_t>(g_capacity), 0};
  g_ready = true;
}

void merge_free_blocks() {
  size_t off = 0;
  while (off < g_capacity) {
    Header* h = at(off);
    if (h->refs == 0) {
      while (off + h->size < g_capacity && at(off + h->size)->refs == 0)
        h->size += at(off + h->size)->size;
    }
    off += h->size;
  }
}

}  // namespace

void arena_use(void* buffer, size_t bytes) {
  if (g_in_use != 0) fail("[arena] arena_use() while %u bytes are held", unsigned(g_in_use));
  const auto addr = reinterpret_cast<uintptr_t>(buffer);
  const size_t skip = (8 - addr % 8) % 8;
  g_base = static_cast<unsigned char*>(buffer) + skip;
  g_capacity = bytes > skip ? (bytes - skip) & ~size_t{7} : 0;
  g_ready = false;
  g_high = 0;
}

void* arena_alloc(size_t bytes, const char* what) {
  ensure_ready();
  // A request larger than the arena fails before its size is rounded (no overflow).
  const size_t need =
      bytes > g_capacity ? g_capacity + 1 : sizeof(Header) + ((bytes + 7) & ~size_t{7});
  size_t free_total = 0, largest = 0;
  for (size_t off = 0; off < g_capacity; off += at(off)->size) {
    Header* h = at(off);
    if (h->refs != 0) continue;
    free_total += h->size;
    if (h->size > largest) largest = h->size;
    if (h->size < need) continue;
    if (h->size - need >= 2 * sizeof(Header)) {  // split: the rest stays free
      *at(off + need) = Header{static_cast<uint32_t>(h->size - need), 0};
      h->size = static_cast<uint32_t>(need);
    }
    h->refs = 1;
    g_in_use += h->size;
    if (g_in_use > g_high) g_high = g_in_use;
    return h + 1;
  }
  fail("[%s] out of memory: %u bytes wanted, %u free of %u in the arena (largest block %u)", what,
       unsigned(bytes), unsigned(free_total), unsigned(g_capacity), unsigned(largest));
}

void arena_retain(void* p) { ++header_of(p)->refs; }

void arena_release(void* p) {
  Header* h = header_of(p);
  if (--h->refs != 0) return;
  g_in_use -= h->size;
  merge_free_blocks();
}

uint32_t arena_refs(const void* p) { return header_of(p)->refs; }

ArenaStats arena_stats() { return {g_capacity, g_in_use, g_high}; }

void arena_reset_high_water() { g_high = g_in_use; }

}  // namespace ember::micro
