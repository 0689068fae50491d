// EMBER_FUZZ_TARGET(name) { ... } defines a fuzz target's body once: as libFuzzer's
// LLVMFuzzerTestOneInput in its fuzzer binary (compiled with EMBER_FUZZ_ENTRY), and as
// ember_fuzz_NAME for the corpus replay test, which links every target into one binary.
#pragma once
#include <cstddef>
#include <cstdint>

#define EMBER_DETAIL_FUZZ_DECLARE(name) int ember_fuzz_##name(const uint8_t* data, size_t size)
#ifdef EMBER_FUZZ_ENTRY
#define EMBER_FUZZ_TARGET(name)                                             \
  EMBER_DETAIL_FUZZ_DECLARE(name);                                          \
  extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) { \
    return ember_fuzz_##name(data, size);                                   \
  }                                                                         \
  EMBER_DETAIL_FUZZ_DECLARE(name)
#else
#define EMBER_FUZZ_TARGET(name) EMBER_DETAIL_FUZZ_DECLARE(name)
#endif
