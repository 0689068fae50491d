// libFuzzer target for the PyTorch file reader (zip archives and the legacy stream): any byte
// string must either parse into tensors whose bytes match their shapes and dtypes, or raise
// an ember::Error. A crash, a sanitizer report, another exception type or a huge allocation
// is a bug.
//
//   scripts/fuzz.sh pytorch 300
#include <cstdlib>
#include <span>

#include "ember/core/error.h"
#include "ember/record/pytorch.h"
#include "fuzz_target.h"

EMBER_FUZZ_TARGET(pytorch) {
  std::span<const std::byte> bytes(reinterpret_cast<const std::byte*>(data), size);
  ember::record::NamedTensors tensors;
  try {
    tensors = ember::record::parse_pytorch(bytes, "fuzz");
  } catch (const ember::Error&) {
    return 0;
  }
  for (const auto& [name, t] : tensors) {
    if (t.numel() < 0 ||
        t.bytes().size() != static_cast<size_t>(t.numel()) * ember::size_of(t.dtype()))
      std::abort();
    auto values = t.to_vec<double>();  // every element, as a caller would read it
    if (values.size() != static_cast<size_t>(t.numel())) std::abort();
  }
  return 0;
}
