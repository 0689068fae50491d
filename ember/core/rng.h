// Seeded, counter-based random numbers. A random op takes a 64-bit seed from the global
// generator; element i of its output is a pure function of (seed, i), so results do not
// depend on thread count or backend, and a recorded op replays identically.
//
//   ember::seed(42);                  // reproducible from here on
//   uint64_t s = ember::next_seed();  // what a random op stores in its attributes
#pragma once
#include <cstdint>

#include "ember/core/export.h"

namespace ember {

/// Resets the global generator.
EMBER_API void seed(uint64_t s);
/// The next op seed from the global generator (thread-safe).
EMBER_API uint64_t next_seed();

/// The global generator's position, to save with a checkpoint and restore on resume so the
/// random ops that follow (dropout, augmentation) replay exactly.
struct RngState {
  uint64_t seed = 0;
  uint64_t counter = 0;
};
EMBER_API RngState rng_state();
EMBER_API void set_rng_state(RngState s);

namespace rng {
/// A strong 64-bit mix (splitmix64 finalizer).
constexpr uint64_t mix64(uint64_t x) {
  x += 0x9e3779b97f4a7c15ull;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}
constexpr uint64_t bits(uint64_t seed, uint64_t i) { return mix64(seed ^ mix64(i)); }
/// Uniform in [0, 1) with 53 random bits.
constexpr double uniform01(uint64_t seed, uint64_t i) {
  return static_cast<double>(bits(seed, i) >> 11) * 0x1.0p-53;
}
/// Standard normal (Box-Muller over two uniforms).
EMBER_API double normal(uint64_t seed, uint64_t i);
}  // namespace rng

}  // namespace ember
