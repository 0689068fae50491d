// The memory of the freestanding build: one static arena (no heap). Its size is fixed when
// the library is built (CMake `EMBER_MICRO_ARENA_BYTES`, reported at configure time and in
// the size of `.bss`), or the application hands over its own buffer before the first tensor.
// Tensors take their storage here and give it back when their last copy goes; weights stay
// in flash and take none. Running out calls the error handler (error.h) with the request and
// what is left, naming the op: "[conv] out of memory: 21632 bytes wanted, 9000 free of 32768 in
// the arena (largest block 9000)".
//
//   alignas(8) static unsigned char memory[48 * 1024];
//   ember::micro::arena_use(memory, sizeof memory);   // optional: else the built-in arena
//   ... run the model ...
//   ember::micro::ArenaStats s = ember::micro::arena_stats();   // s.high_water: the peak
#pragma once
#include <cstddef>
#include <cstdint>

namespace ember::micro {

struct ArenaStats {
  size_t capacity = 0;    // bytes the arena manages
  size_t in_use = 0;      // bytes held now, block headers included
  size_t high_water = 0;  // the most ever held at once since the last reset
};

/// Makes `buffer` (8-byte aligned) the arena. Only before any tensor exists.
void arena_use(void* buffer, size_t bytes);

/// `bytes` of storage with a reference count of 1; calls the error handler when none is left.
/// `what` names the op in the error message.
void* arena_alloc(size_t bytes, const char* what);
/// One more owner of a block from arena_alloc.
void arena_retain(void* p);
/// One owner fewer; the block is free when none is left.
void arena_release(void* p);
/// The number of owners of a block (1: the caller may write to it in place).
uint32_t arena_refs(const void* p);

ArenaStats arena_stats();
/// Starts a new high-water measurement from what is held now.
void arena_reset_high_water();

}  // namespace ember::micro
