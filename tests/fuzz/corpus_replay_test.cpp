// Replays the kept fuzz corpus (tests/fuzz/corpus/safetensors/) through the fuzz target, so
// the regular (gcc) test build exercises every input the fuzzer kept: each must parse or
// raise an ember::Error (the reader promises a ValueError). Seeds named `valid-*` must parse
// and `reject-*` must be rejected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/record/safetensors.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace ember::record {
namespace {

namespace fs = std::filesystem;

std::vector<std::byte> read_all(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  std::vector<std::byte> b(c.size());
  if (!c.empty()) std::memcpy(b.data(), c.data(), c.size());
  return b;
}

TEST(FuzzCorpus, EveryInputParsesOrRaisesAnEmberError) {
  int files = 0, parsed = 0, rejected = 0;
  for (const auto& e : fs::directory_iterator(EMBER_FUZZ_CORPUS)) {
    if (!e.is_regular_file()) continue;
    ++files;
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    auto bytes = read_all(e.path());
    // the fuzz target itself: aborts on inconsistent results, lets foreign exceptions through
    EXPECT_NO_THROW(
        LLVMFuzzerTestOneInput(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    try {
      parse_safetensors(bytes, name);
      ++parsed;
      EXPECT_NE(name.rfind("reject-", 0), 0u) << "accepted";
    } catch (const Error& err) {
      ++rejected;
      EXPECT_NE(name.rfind("valid-", 0), 0u) << err.what();
      EXPECT_NE(dynamic_cast<const ValueError*>(&err), nullptr)
          << "not a ValueError: " << err.what();
    }
  }
  EXPECT_GE(files, 40);
  EXPECT_GE(parsed, 10);
  EXPECT_GE(rejected, 20);
}

}  // namespace
}  // namespace ember::record
