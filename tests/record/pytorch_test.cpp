// PyTorch files: tensors of every dtype, views and shared storages as torch.save wrote them
// (tools/gen_pt_fixtures.py; the values PyTorch printed are in expected.json), both formats,
// and hostile files: globals that would run code, truncations, corruption, and pickles made
// byte by byte whose sizes, offsets and references lie.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include "ember/ember.h"
#include "ember/record/pickle.h"
#include "ember/record/pytorch.h"
#include "tests/support/read_file.h"

namespace ember::record {
namespace {

namespace fs = std::filesystem;
using namespace std::string_literals;
const fs::path kDir = EMBER_PT_FIXTURES;

using ember::test::read_file_bytes;

std::span<const std::byte> as_bytes(const std::string& s) {
  return {reinterpret_cast<const std::byte*>(s.data()), s.size()};
}

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream f(kDir / "expected.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

const TensorData& find(const NamedTensors& t, const std::string& name) {
  for (const auto& [n, d] : t)
    if (n == name) return d;
  throw std::runtime_error("no tensor " + name);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "(no error)";
}

#define EXPECT_ERROR(call, needle)                                        \
  do {                                                                    \
    std::string msg_ = error_of([&] { (void)(call); });                   \
    EXPECT_NE(msg_.find(needle), std::string::npos) << "error: " << msg_; \
  } while (0)

class PytorchFormats : public ::testing::TestWithParam<const char*> {};

TEST_P(PytorchFormats, EveryDtypeViewAndSharedStorageReadsAsPytorchShowsIt) {
  auto t = load_pytorch(kDir / GetParam());
  const std::pair<const char*, DType> dtypes[] = {
      {"f32", DType::F32},        {"f64", DType::F64},     {"f16", DType::F16},
      {"bf16", DType::BF16},      {"i64", DType::I64},     {"i32", DType::I32},
      {"i16", DType::I16},        {"i8", DType::I8},       {"u8", DType::U8},
      {"bool", DType::Bool},      {"scalar", DType::F32},  {"empty", DType::F32},
      {"transposed", DType::F32}, {"strided", DType::F32}, {"shared_a", DType::F32},
      {"shared_b", DType::F32},   {"expanded", DType::F32}};
  ASSERT_EQ(t.size(), std::size(dtypes));
  for (const auto& [name, dt] : dtypes) {
    SCOPED_TRACE(name);
    const auto& e = expected().at(std::string("dtypes.") + name);
    const TensorData& d = find(t, name);
    EXPECT_EQ(d.dtype(), dt);
    EXPECT_EQ(d.shape(), Shape(e.at("shape").get<std::vector<int64_t>>()));
    EXPECT_EQ(d.to_vec<double>(), e.at("data").get<std::vector<double>>());
  }
  // the order is the pickle's (the dict's insertion order)
  EXPECT_EQ(t.front().first, "f32");
  EXPECT_EQ(t.back().first, "expanded");
}

INSTANTIATE_TEST_SUITE_P(Pytorch, PytorchFormats,
                         ::testing::Values("dtypes.pt", "dtypes_legacy.pt"));

TEST(Pytorch, NestedContainersFlattenToDottedNames) {
  auto t = load_pytorch(kDir / "nested.pt");
  ASSERT_EQ(t.size(), 3u);
  EXPECT_EQ(t[0].first, "state_dict.layers.0.w");
  EXPECT_EQ(t[0].second.to_vec<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(t[1].first, "state_dict.layers.1.w");
  EXPECT_EQ(t[2].first, "opt.0");
  EXPECT_EQ(t[2].second.to_vec<float>(), (std::vector<float>{3}));
  // a checkpoint's numbers and strings are skipped; its state dict keeps its names
  auto c = load_pytorch(kDir / "cnn_checkpoint.pt");
  EXPECT_EQ(c.front().first, "model.conv1.weight");
  EXPECT_EQ(c.back().first, "model.fc.bias");
}

TEST(Pytorch, FormatsAreFoundByContent) {
  auto fmt = [](const fs::path& p) { return detect_format(read_file_bytes(p)); };
  EXPECT_EQ(fmt(kDir / "linear.pt"), TensorFileFormat::PytorchZip);
  EXPECT_EQ(fmt(kDir / "linear_legacy.pt"), TensorFileFormat::PytorchLegacy);
  EXPECT_EQ(fmt(EMBER_RECORD_FIXTURE), TensorFileFormat::Safetensors);
  EXPECT_EQ(fmt(kDir / "expected.json"), std::nullopt);
  auto st = load_tensor_file(EMBER_RECORD_FIXTURE);
  EXPECT_EQ(st.format, TensorFileFormat::Safetensors);
  EXPECT_EQ(st.metadata.at("note"), "written by hand");
  auto zip = load_tensor_file(kDir / "linear.pt");
  auto legacy = load_tensor_file(kDir / "linear_legacy.pt");
  EXPECT_EQ(zip.tensors, legacy.tensors);
  EXPECT_EQ(zip.tensors.size(), 2u);
  EXPECT_ERROR(load_tensor_file(kDir / "expected.json"), "not a safetensors or PyTorch file");
  EXPECT_ERROR(load_pytorch(EMBER_RECORD_FIXTURE), "not a PyTorch file");
  EXPECT_ERROR(load_pytorch(kDir / "missing.pt"), "cannot open");
}

TEST(Pytorch, AGlobalThatWouldRunCodeIsRefusedByName) {
  EXPECT_ERROR(load_pytorch(kDir / "evil.pt"), "global 'posix.system' is not allowed");
  EXPECT_ERROR(load_pytorch(kDir / "evil.pt"), "evil.pt");
  // the same pickles on their own, with GLOBAL and with STACK_GLOBAL
  std::string global = "\x80\x02" + "cos\nsystem\nX\x02\x00\x00\x00ls\x85R."s;
  EXPECT_ERROR(parse_pickle(as_bytes(global), "p"), "global 'os.system' is not allowed");
  std::string stack = "\x80\x04\x8c\x08"s + "builtins\x8c\x04"s + "eval\x93."s;
  EXPECT_ERROR(parse_pickle(as_bytes(stack), "p"), "global 'builtins.eval' is not allowed");
  // a caller's own allow-list replaces the default
  PickleOptions only_os{.allowed_globals = {"os.system"}};
  auto p = parse_pickle(as_bytes(global), "p", only_os);
  EXPECT_EQ(p.root().kind, PickleValue::Kind::Call);
  EXPECT_EQ(p.root().items[0]->str, "os.system");  // recorded, never called
  EXPECT_ERROR(load_pytorch(kDir / "linear.pt"), "(no error)");
}

TEST(Pytorch, EveryTruncationIsAClearError) {
  for (const char* f : {"linear.pt", "linear_legacy.pt"}) {
    auto bytes = read_file_bytes(kDir / f);
    for (size_t n = 0; n < bytes.size(); ++n) {
      SCOPED_TRACE(std::string(f) + " cut at " + std::to_string(n));
      std::string msg = error_of([&] { parse_pytorch(std::span(bytes.data(), n), "cut.pt"); });
      EXPECT_NE(msg.find("cut.pt"), std::string::npos) << msg;
    }
  }
}

TEST(Pytorch, RandomCorruptionNeverCrashes) {
  for (const char* f : {"cnn_checkpoint.pt", "cnn_checkpoint_legacy.pt", "dtypes_legacy.pt"}) {
    auto bytes = read_file_bytes(kDir / f);
    std::mt19937 rng(11);
    int rejected = 0;
    for (int trial = 0; trial < 1500; ++trial) {
      auto b = bytes;
      for (int k = 0; k < 1 + trial % 4; ++k)
        b[rng() % b.size()] = std::byte(static_cast<uint8_t>(rng()));
      try {
        parse_pytorch(b, "corrupt");
      } catch (const ValueError&) {
        ++rejected;
      }
    }
    EXPECT_GT(rejected, 100) << f;
  }
}

TEST(Pytorch, ZipEntriesAreChecked) {
  auto bytes = read_file_bytes(kDir / "linear.pt");
  auto central = [&] {  // the first central directory entry
    for (size_t k = 0; k + 4 <= bytes.size(); ++k)
      if (std::memcmp(bytes.data() + k, "PK\x01\x02", 4) == 0) return k;
    return size_t{0};
  }();
  ASSERT_GT(central, 0u);
  auto b = bytes;
  b[central + 10] = std::byte{8};  // deflate
  EXPECT_ERROR(parse_pytorch(b, "z.pt"), "is compressed (method 8)");
  b = bytes;
  b[central + 16] ^= std::byte{1};  // the CRC of data.pkl
  EXPECT_ERROR(parse_pytorch(b, "z.pt"), "fails its CRC-32 check");
  b = bytes;
  b[central + 42] = std::byte{0x7f};  // its local header offset
  EXPECT_ERROR(parse_pytorch(b, "z.pt"), "z.pt");
}

// ---- pickles and legacy files made byte by byte -------------------------------------------

std::string u32le(uint32_t v) {
  std::string s(4, '\0');
  for (int k = 0; k < 4; ++k) s[k] = static_cast<char>(v >> (8 * k));
  return s;
}
std::string str(const std::string& s) { return "X" + u32le(static_cast<uint32_t>(s.size())) + s; }
std::string num(int64_t v) { return "J" + u32le(static_cast<uint32_t>(static_cast<int32_t>(v))); }
std::string tup(const std::vector<int64_t>& v) {
  std::string s = "(";
  for (int64_t x : v) s += num(x);
  return s + "t";
}

/// {"w": a tensor of `type` over storage "0" of `numel` elements}, as torch.save's legacy format
/// pickles it.
std::string tensor_pickle(int64_t offset, const std::vector<int64_t>& size,
                          const std::vector<int64_t>& stride, int64_t numel,
                          const std::string& type = "FloatStorage") {
  return std::string("\x80\x02}") + str("w") + "ctorch._utils\n_rebuild_tensor_v2\n((" +
         str("storage") + "ctorch\n" + type + "\n" + str("0") + str("cpu") + num(numel) + "NtQ" +
         num(offset) + tup(size) + tup(stride) + "\x89" + "ccollections\nOrderedDict\n)Rt" + "Rs.";
}

/// A legacy torch.save stream around `main`, with one storage "0" of `numel` elements.
std::string legacy_file(const std::string& main, uint64_t numel, const std::string& data) {
  std::string magic = std::string("\x80\x02\x8a\x0a", 4) +
                      std::string("\x6c\xfc\x9c\x46\xf9\x20\x6a\xa8\x50\x19", 10) + ".";
  std::string proto = std::string("\x80\x02M\xe9\x03.", 6);
  std::string info = std::string("\x80\x02}") + str("little_endian") + "\x88s.";
  std::string keys = std::string("\x80\x02](") + str("0") + "e.";
  std::string count(8, '\0');
  for (int k = 0; k < 8; ++k) count[k] = static_cast<char>(numel >> (8 * k));
  return magic + proto + info + main + keys + count + data;
}

std::string floats(std::initializer_list<float> v) {
  std::string s(v.size() * 4, '\0');
  std::memcpy(s.data(), std::data(v), s.size());
  return s;
}

TEST(Pytorch, HandMadeLegacyFileReads) {
  // a 2x2 view with offset 1 and strides (1, 2) of the storage 0, 1, 2, 3, 4
  auto f = legacy_file(tensor_pickle(1, {2, 2}, {1, 2}, 5), 5, floats({0, 1, 2, 3, 4}));
  auto t = parse_pytorch(as_bytes(f), "hand.pt");
  ASSERT_EQ(t.size(), 1u);
  EXPECT_EQ(t[0].first, "w");
  EXPECT_EQ(t[0].second.shape(), (Shape{2, 2}));
  EXPECT_EQ(t[0].second.to_vec<float>(), (std::vector<float>{1, 3, 2, 4}));
}

TEST(Pytorch, LyingSizesOffsetsAndStoragesAreRejected) {
  auto file = [](int64_t off, std::vector<int64_t> size, std::vector<int64_t> stride,
                 int64_t numel = 4, std::string data = floats({0, 1, 2, 3})) {
    return legacy_file(tensor_pickle(off, size, stride, numel), static_cast<uint64_t>(numel), data);
  };
  auto parse = [](const std::string& f) { return parse_pytorch(as_bytes(f), "lie.pt"); };
  EXPECT_ERROR(parse(file(5, {1}, {1})), "reach past its storage of 4 elements");
  EXPECT_ERROR(parse(file(1, {4}, {1})), "reach past its storage");
  EXPECT_ERROR(parse(file(0, {2, 2}, {3, 1})), "reach past its storage");
  EXPECT_ERROR(parse(file(0, {-1}, {1})), "size is not a non-negative integer");
  EXPECT_ERROR(parse(file(0, {2}, {-1})), "stride is not a non-negative integer");
  EXPECT_ERROR(parse(file(0, {2, 2}, {1})), "2 sizes but 1 strides");
  EXPECT_ERROR(parse(file(0, {2147483647, 2147483647, 2147483647}, {0, 0, 0})), "2^60");
  EXPECT_ERROR(parse(file(0, {1 << 30, 1 << 20}, {0, 0})), "more than the file can hold");
  EXPECT_ERROR(parse(file(0, {4}, {1}, 4, floats({0, 1}))), "runs past the end of the file");
  EXPECT_ERROR(parse(legacy_file(tensor_pickle(0, {4}, {1}, 4), 3, floats({0, 1, 2}))),
               "has 3 elements, its tensors 4");
  EXPECT_ERROR(parse(legacy_file(tensor_pickle(0, {1}, {1}, 1, "BoolStorage"), 1, "\x02")),
               "bool byte");
  EXPECT_ERROR(parse(legacy_file(tensor_pickle(0, {1}, {1}, 1, "ComplexFloatStorage"), 1, "")),
               "global 'torch.ComplexFloatStorage' is not allowed");
  // stride 0 repeats an element, as expand() does: fine while the result is small
  auto t = parse(file(2, {3, 2}, {0, 1}));
  EXPECT_EQ(t[0].second.to_vec<float>(), (std::vector<float>{2, 3, 2, 3, 2, 3}));
  std::string bad_magic = file(0, {1}, {1});
  bad_magic[5] ^= 1;
  EXPECT_ERROR(parse(bad_magic), "wrong magic number");
}

TEST(Pytorch, HostilePicklesAreRejectedWithoutCrashing) {
  auto pk = [](const std::string& body) { return std::string("\x80\x02", 2) + body; };
  auto parse = [](const std::string& p) { return parse_pickle(as_bytes(p), "p.pkl"); };
  EXPECT_ERROR(parse(pk("I12\n.")), "opcode 0x49 is not supported");
  EXPECT_ERROR(parse(pk("X\xff\xff\xff\xff"
                        "abc.")),
               "a length of 4294967295 bytes");
  EXPECT_ERROR(parse(pk("j\x07\x00\x00\x00."s)), "memo entry 7 was never stored");
  EXPECT_ERROR(parse(pk(".")), "STOP with 0 values");
  EXPECT_ERROR(parse(pk("(N.")), "open marks");
  EXPECT_ERROR(parse(pk("N(s.")), "stack underflow");
  EXPECT_ERROR(parse(pk("Na.")), "stack underflow");
  EXPECT_ERROR(parse(pk(")Na.")), "APPEND to something that is not a list");
  EXPECT_ERROR(parse(pk("]")), "truncated");
  EXPECT_ERROR(parse(std::string("\x80\x09N.")), "protocol 9");
  EXPECT_ERROR(parse(pk(std::string(5000, '(') + "N.")), "nested marks");
  // a list that contains itself: readable as a pickle, refused when flattened
  std::string self = pk("}" + str("a") + "]q\x00h\x00"s + "as.");
  auto tree = parse(self);
  EXPECT_EQ(tree.root().items[1]->items[0], tree.root().items[1]);
  EXPECT_ERROR(parse_pytorch(as_bytes(legacy_file(self, 0, "")), "self.pt"), "nested deeper");
  // 60 levels of [x, x]: 2^60 paths through 60 lists
  std::string dag =
      "]q\x00"
      "0"s;
  auto ch = [](int k) { return std::string(1, static_cast<char>(k)); };
  for (int k = 1; k <= 60; ++k) dag += "(h" + ch(k - 1) + "h" + ch(k - 1) + "lq" + ch(k) + "0";
  EXPECT_ERROR(parse_pytorch(as_bytes(legacy_file(pk(dag + "h" + ch(60) + "."), 0, "")), "dag.pt"),
               "refers to its values too many times");
}

}  // namespace
}  // namespace ember::record
