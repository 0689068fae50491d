#include "ember/core/rng.h"

#include <atomic>
#include <cmath>
#include <numbers>

namespace ember {

namespace {
std::atomic<uint64_t> g_seed{0x5eed};
std::atomic<uint64_t> g_counter{0};
}  // namespace

void seed(uint64_t s) {
  g_seed.store(s);
  g_counter.store(0);
}

RngState rng_state() { return {g_seed.load(), g_counter.load()}; }

void set_rng_state(RngState s) {
  g_seed.store(s.seed);
  g_counter.store(s.counter);
}

uint64_t next_seed() { return rng::bits(g_seed.load(), g_counter.fetch_add(1)); }

double rng::normal(uint64_t seed, uint64_t i) {
  double u1 = 1.0 - uniform01(seed, 2 * i);  // (0, 1]: log is finite
  double u2 = uniform01(seed, 2 * i + 1);
  return std::sqrt(-2.0 * std::log(u1)) * std::cos(2.0 * std::numbers::pi * u2);
}

}  // namespace ember
