// libFuzzer target for the safetensors reader: any byte string must either parse into
// tensors whose bytes match their shapes and dtypes, or raise an ember::Error. A crash, a
// sanitizer report, another exception type or a huge allocation is a bug.
//
//   scripts/fuzz.sh 300          # clang build in build-fuzz, 5 minutes over the kept corpus
//   scripts/fuzz.sh safetensors 300                           # the same, by the target's name
//
// The same function replays the kept corpus in the regular test build
// (tests/fuzz/corpus_replay_test.cpp), so every compiler exercises the corpus.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>

#include "ember/core/error.h"
#include "ember/record/safetensors.h"
#include "fuzz_target.h"

EMBER_FUZZ_TARGET(safetensors) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  ember::record::SafetensorsFile file;
  try {
    file = ember::record::parse_safetensors(bytes, "fuzz");
  } catch (const ember::Error&) {
    return 0;  // a clear rejection is the right answer for most inputs
  }
  // What was accepted must be self-consistent and fit in the input.
  size_t total = 0;
  for (const auto& [name, t] : file.tensors) {
    if (t.numel() < 0 ||
        t.bytes().size() != static_cast<size_t>(t.numel()) * ember::size_of(t.dtype()))
      std::abort();
    total += t.bytes().size();
    // Use the values the way a caller would: every element converted to f64.
    auto values = t.to_vec<double>();
    if (values.size() != static_cast<size_t>(t.numel())) std::abort();
  }
  if (total > size) std::abort();
  return 0;
}
