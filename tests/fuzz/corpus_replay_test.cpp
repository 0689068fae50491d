// Replays the kept fuzz corpora (tests/fuzz/corpus/TARGET/) through their fuzz targets, so
// the regular (gcc) test build exercises every input the fuzzers kept: each must parse or
// raise an ember::Error (the readers promise a ValueError). Seeds named `valid-*` must parse
// and `reject-*` must be rejected.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "ember/record/pickle.h"
#include "ember/record/pytorch.h"
#include "ember/record/safetensors.h"
#include "fuzz_target.h"
#include "tests/support/read_file.h"
#ifdef EMBER_FUZZ_ONNX
#include "ember/onnx/model.h"
#endif

EMBER_FUZZ_TARGET(safetensors);
EMBER_FUZZ_TARGET(pickle);
EMBER_FUZZ_TARGET(pytorch);
#ifdef EMBER_FUZZ_ONNX
EMBER_FUZZ_TARGET(onnx);
#endif

namespace ember::record {
namespace {

namespace fs = std::filesystem;

using ember::test::read_file_bytes;

struct Target {
  const char* name;  // also the corpus folder's
  int (*fuzz)(const uint8_t*, size_t);
  std::function<void(std::span<const std::byte>, const std::string&)> parse;
  int min_files, min_parsed, min_rejected;
};

void PrintTo(const Target& t, std::ostream* os) { *os << t.name; }

class FuzzCorpus : public ::testing::TestWithParam<Target> {};

TEST_P(FuzzCorpus, EveryInputParsesOrRaisesAnEmberError) {
  const Target& t = GetParam();
  int files = 0, parsed = 0, rejected = 0;
  for (const auto& e : fs::directory_iterator(fs::path(EMBER_FUZZ_CORPUS) / t.name)) {
    if (!e.is_regular_file()) continue;
    ++files;
    const std::string name = e.path().filename().string();
    SCOPED_TRACE(name);
    auto bytes = read_file_bytes(e.path());
    // the fuzz target itself: aborts on inconsistent results, lets foreign exceptions through
    EXPECT_NO_THROW(t.fuzz(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size()));
    try {
      t.parse(bytes, name);
      ++parsed;
      EXPECT_NE(name.rfind("reject-", 0), 0u) << "accepted";
    } catch (const Error& err) {
      ++rejected;
      EXPECT_NE(name.rfind("valid-", 0), 0u) << err.what();
      EXPECT_NE(dynamic_cast<const ValueError*>(&err), nullptr)
          << "not a ValueError: " << err.what();
    }
  }
  EXPECT_GE(files, t.min_files);
  EXPECT_GE(parsed, t.min_parsed);
  EXPECT_GE(rejected, t.min_rejected);
}

const Target kTargets[] = {
    {"safetensors", ember_fuzz_safetensors, [](auto b, const auto& n) { parse_safetensors(b, n); },
     40, 10, 20},
    {"pickle", ember_fuzz_pickle, [](auto b, const auto& n) { parse_pickle(b, n); }, 30, 10, 10},
    {"pytorch", ember_fuzz_pytorch, [](auto b, const auto& n) { parse_pytorch(b, n); }, 20, 8, 8},
#ifdef EMBER_FUZZ_ONNX  // built with ember_onnx only (EMBER_ONNX)
    {"onnx", ember_fuzz_onnx, [](auto b, const auto& n) { onnx::parse_model(b, n); }, 30, 15, 5},
#endif
};

INSTANTIATE_TEST_SUITE_P(Readers, FuzzCorpus, ::testing::ValuesIn(kTargets),
                         [](const auto& info) { return std::string(info.param.name); });

}  // namespace
}  // namespace ember::record
