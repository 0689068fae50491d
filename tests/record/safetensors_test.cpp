// safetensors: round trips, a file written by hand from the specification, and malformed or
// hostile files (every truncation, random corruption, lying headers).
#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "ember/ember.h"
#include "ember/record/safetensors.h"
#include "tests/support/read_file.h"

namespace ember::record {
namespace {

namespace fs = std::filesystem;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("ember_st_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

using ember::test::read_file_bytes;

TEST(Safetensors, RoundTripIsBitExactForEveryDtype) {
  NamedTensors in;
  for (int t = 0; t < kNumDTypes; ++t) {
    DType dt = static_cast<DType>(t);
    auto d = Tensor<Cpu, 2>::random({3, 5}, Distribution::uniform(-100, 100)).to_data().convert(dt);
    in.emplace_back(std::string("t.") + std::string(name(dt)), d);
  }
  in.emplace_back("scalar", TensorData::scalar<double>(-0.0));
  in.emplace_back("empty", TensorData(Shape{0, 7}, DType::F32));
  auto path = temp_dir() / "round.safetensors";
  save_safetensors(path, in, {{"ember_version", "0.1.0"}, {"module", "Test"}});
  auto back = load_safetensors(path);
  ASSERT_EQ(back.tensors.size(), in.size());
  for (const auto& [n, d] : in) EXPECT_EQ(back.at(n), d) << n;
  EXPECT_EQ(back.metadata.at("module"), "Test");
  // no temporary file is left next to it
  int files = 0;
  for (auto& e : fs::directory_iterator(path.parent_path()))
    files += e.path().filename() == "round.safetensors" ? 0 : 1;
  EXPECT_EQ(files, 0);
}

TEST(Safetensors, ReadsAFileWrittenFromTheSpecification) {
  auto f = load_safetensors(EMBER_RECORD_FIXTURE);
  EXPECT_EQ(f.metadata.at("note"), "written by hand");
  EXPECT_EQ(f.at("embed.weight").to_vec<float>(),
            (std::vector<float>{0.5f, -1.25f, 3.0f, 1e-3f, -0.0f, 65504.0f}));
  EXPECT_EQ(f.at("embed.weight").shape(), (Shape{2, 3}));
  EXPECT_EQ(f.at("layer.0.bias").to_vec<double>(), (std::vector<double>{1.0 / 3.0, -2.5, 1e300}));
  EXPECT_EQ(f.at("steps").to_vec<int64_t>(), (std::vector<int64_t>{-(int64_t{1} << 62)}));
  EXPECT_EQ(f.at("steps").shape().rank(), 0u);
  EXPECT_EQ(f.at("mask").to_vec<bool>(), (std::vector<bool>{true, false, false, true}));
  EXPECT_EQ(f.at("half").to_vec<float>(), (std::vector<float>{1.0f, -2.0f}));
  EXPECT_EQ(f.at("empty").shape(), (Shape{0, 4}));
  EXPECT_THROW(f.at("missing"), ValueError);
}

TEST(Safetensors, EveryTruncationIsAClearError) {
  auto bytes = read_file_bytes(EMBER_RECORD_FIXTURE);
  for (size_t n = 0; n < bytes.size(); ++n)
    EXPECT_THROW(parse_safetensors(std::span(bytes.data(), n), "cut"), ValueError) << n;
}

TEST(Safetensors, RandomCorruptionNeverCrashes) {
  auto bytes = read_file_bytes(EMBER_RECORD_FIXTURE);
  std::mt19937 rng(7);
  int rejected = 0;
  for (int trial = 0; trial < 3000; ++trial) {
    auto b = bytes;
    for (int k = 0; k < 1 + trial % 4; ++k)
      b[rng() % b.size()] = std::byte(static_cast<uint8_t>(rng()));
    try {
      parse_safetensors(b, "fuzz");
    } catch (const ValueError&) {
      ++rejected;
    }
  }
  EXPECT_GT(rejected, 0);
}

std::vector<std::byte> file_with_header(const std::string& header, size_t data_bytes) {
  std::vector<std::byte> b(8 + header.size() + data_bytes);
  uint64_t n = header.size();
  for (int i = 0; i < 8; ++i) b[i] = std::byte(static_cast<uint8_t>(n >> (8 * i)));
  std::memcpy(b.data() + 8, header.data(), header.size());
  return b;
}

TEST(Safetensors, LyingHeadersAreRejected) {
  auto expect = [](const std::vector<std::byte>& b, const std::string& needle) {
    try {
      parse_safetensors(b, "f");
      ADD_FAILURE() << "accepted; wanted '" << needle << "'";
    } catch (const ValueError& e) {
      EXPECT_NE(std::string(e.what()).find(needle), std::string::npos) << e.what();
    }
  };
  auto huge = file_with_header("{}", 0);
  huge[7] = std::byte{0x7f};  // header length near 2^63, in a 10-byte file
  expect(huge, "does not fit");
  expect(file_with_header("{not json", 0), "not valid JSON");
  expect(file_with_header("[1, 2]", 0), "not a JSON object");
  expect(file_with_header(R"({"a": {"dtype": "F8", "shape": [1], "data_offsets": [0, 1]}})", 1),
         "unsupported dtype");
  expect(file_with_header(R"({"a": {"dtype": "F32", "shape": [2], "data_offsets": [0, 4]}})", 4),
         "does not fill");
  expect(file_with_header(R"({"a": {"dtype": "F32", "shape": [1], "data_offsets": [0, 4000]}})", 4),
         "outside");
  expect(file_with_header(R"({"a": {"dtype": "U8", "shape": [2], "data_offsets": [0, 2]},
                              "b": {"dtype": "U8", "shape": [2], "data_offsets": [1, 3]}})",
                          3),
         "overlaps");
  expect(file_with_header(R"({"a": {"dtype": "U8", "shape": [1], "data_offsets": [0, 1]}})", 5),
         "stray bytes");
  expect(file_with_header(R"({"a": {"dtype": "U8", "shape": [-1], "data_offsets": [0, 1]}})", 1),
         "non-negative");
  expect(file_with_header(R"({"a": {"dtype": "U8", "shape": [4294967296, 4294967296, 4294967296],
                              "data_offsets": [0, 1]}})",
                          1),
         "larger than the file");
  expect(file_with_header(R"({"a": {"dtype": "U8"}})", 0), "needs dtype");
}

TEST(Safetensors, AtomicWritesReplaceWholeFilesOrNothing) {
  auto dir = temp_dir();
  auto path = dir / "model.safetensors";
  save_safetensors(path, {{"w", TensorData::from<float>({1, 2}, Shape{2})}});
  save_safetensors(path, {{"w", TensorData::from<float>({3, 4, 5}, Shape{3})}});
  EXPECT_EQ(load_safetensors(path).at("w").to_vec<float>(), (std::vector<float>{3, 4, 5}));
  EXPECT_THROW(save_safetensors(dir / "missing" / "x.safetensors", {}), ValueError);
  EXPECT_THROW(load_safetensors(dir / "nope.safetensors"), ValueError);
  EXPECT_THROW(load_safetensors(dir), ValueError);  // a folder, not a file
  EXPECT_THROW(
      save_safetensors(path, {{"w", TensorData::scalar(1.0f)}, {"w", TensorData::scalar(2.0f)}}),
      ValueError);
  fs::remove_all(dir);
}

}  // namespace
}  // namespace ember::record
