// Module records: save -> load round trips (bit-exact at full precision), f16/bf16 storage,
// metadata, strict mismatch reports, partial loads, and atomic replacement of the file.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/norm.h"
#include "ember/nn/record.h"

namespace ember::nn {
namespace {

namespace fs = std::filesystem;

template <Backend B>
struct Net {
  Linear<B> fc;
  BatchNorm<B> bn;
  EMBER_MODULE(Net, fc, bn)
};

template <Backend B>
Net<B> make_net(int64_t out = 3) {
  return {LinearConfig{4, out}.init<B>(), BatchNormConfig{out}.init<B>()};
}

struct TempDir {
  fs::path dir = fs::temp_directory_path() / ("ember_record_" + std::to_string(::getpid()));
  TempDir() { fs::create_directories(dir); }
  ~TempDir() { fs::remove_all(dir); }
};

std::vector<std::vector<float>> values(const auto& m) {
  std::vector<std::vector<float>> out;
  for (const auto& [name, d] : to_record(m)) out.push_back(d.template to_vec<float>());
  return out;
}

TEST(ModuleRecord, RoundTripIsBitExactWithMetadata) {
  TempDir t;
  auto a = make_net<Autodiff<Cpu>>();
  a.bn.running_mean.set(Tensor<Autodiff<Cpu>, 1>::from_values<float>({0.1f, -0.2f, 0.3f}, {3}));
  save_module(a, t.dir / "net.safetensors", {.metadata = {{"epoch", "7"}}});
  auto b = make_net<Autodiff<Cpu>>();
  EXPECT_FALSE(b.fc.weight.is_initialized());
  auto report = load_module(b, t.dir / "net.safetensors");
  EXPECT_TRUE(report.complete());
  EXPECT_EQ(report.applied.size(), 6u);  // weight, bias, gamma, beta, running mean and var
  EXPECT_EQ(values(a), values(b));
  EXPECT_TRUE(b.fc.weight.val().is_require_grad());
  auto file = record::load_safetensors(t.dir / "net.safetensors");
  EXPECT_EQ(file.metadata.at("epoch"), "7");
  EXPECT_EQ(file.metadata.at("ember.module"), "Net");
  EXPECT_EQ(file.metadata.at("ember.version"), std::string(kVersion));
  EXPECT_TRUE(file.contains("bn.running_var"));
}

TEST(ModuleRecord, HalfPrecisionStorage) {
  TempDir t;
  auto a = make_net<Cpu>();
  for (auto [p, dt, tol] : {std::tuple{Precision::F16, DType::F16, 1e-3},
                            std::tuple{Precision::BF16, DType::BF16, 8e-3}}) {
    save_module(a, t.dir / "h.safetensors", {.precision = p});
    auto file = record::load_safetensors(t.dir / "h.safetensors");
    EXPECT_EQ(file.at("fc.weight").dtype(), dt);
    auto b = make_net<Cpu>();
    load_module(b, t.dir / "h.safetensors");
    EXPECT_EQ(b.fc.weight.val().dtype(), DType::F32);  // converted back on load
    auto wa = a.fc.weight.val().to_vec<float>(), wb = b.fc.weight.val().to_vec<float>();
    for (size_t i = 0; i < wa.size(); ++i) EXPECT_NEAR(wa[i], wb[i], tol * std::abs(wa[i]) + 1e-6);
    // Exactly the rounding of the stored precision.
    auto expect = a.fc.weight.val().to_data().convert(dt).convert(DType::F32).to_vec<float>();
    EXPECT_EQ(wb, expect);
  }
}

TEST(ModuleRecord, StrictLoadReportsEveryMismatchAndLeavesModuleUnchanged) {
  TempDir t;
  auto a = make_net<Cpu>(3);
  record::NamedTensors named = to_record(a);
  named.erase(named.begin() + 1);                                                 // fc.bias missing
  named.emplace_back("extra.weight", TensorData::from<float>({1.f}, {1}));        // unused
  named[0].second = TensorData::from<float>(std::vector<float>(8, 0.f), {4, 2});  // bad shape
  named[1].second = TensorData::from<int64_t>({1, 2, 3}, {3});                    // bad kind
  auto b = make_net<Cpu>(3);
  auto before = b.fc.weight.val().to_vec<float>();
  try {
    apply_record(b, named);
    FAIL() << "strict load accepted a mismatched record";
  } catch (const ValueError& e) {
    std::string m = e.what();
    for (const char* s : {"fc.bias", "extra.weight",
                          "fc.weight: shape [4, 2] in the record, [4, 3]", "bn.gamma: dtype i64"})
      EXPECT_NE(m.find(s), std::string::npos) << s << " not in:\n" << m;
  }
  EXPECT_EQ(b.fc.weight.val().to_vec<float>(), before);
}

TEST(ModuleRecord, PartialLoadAppliesWhatMatches) {
  auto a = make_net<Cpu>(3);
  record::NamedTensors named = to_record(a);
  named.erase(named.begin());  // no fc.weight
  named.emplace_back("head.weight", TensorData::from<float>({1.f}, {1}));
  auto b = make_net<Cpu>(3);
  auto r = apply_record(b, named, LoadMode::Partial);
  EXPECT_EQ(r.missing, std::vector<std::string>{"fc.weight"});
  EXPECT_EQ(r.unused, std::vector<std::string>{"head.weight"});
  EXPECT_EQ(r.applied.size(), 5u);
  EXPECT_EQ(b.fc.bias->val().to_vec<float>(), a.fc.bias->val().to_vec<float>());
  EXPECT_NE(b.fc.weight.val().to_vec<float>(), a.fc.weight.val().to_vec<float>());
}

TEST(ModuleRecord, SaveReplacesAtomicallyAndBadFilesFailCleanly) {
  TempDir t;
  auto path = t.dir / "m.safetensors";
  auto a = make_net<Cpu>();
  save_module(a, path);
  save_module(a, path);  // overwrite in place
  size_t files = 0;
  for (auto& e : fs::directory_iterator(t.dir)) files += e.is_regular_file();
  EXPECT_EQ(files, 1u);  // no temporary left behind
  auto b = make_net<Cpu>();
  { std::ofstream(t.dir / "junk.safetensors") << "not a safetensors file"; }
  EXPECT_THROW(load_module(b, t.dir / "junk.safetensors"), ValueError);
  EXPECT_THROW(load_module(b, t.dir / "missing.safetensors"), ValueError);
  // Truncating a real file is caught too.
  auto size = fs::file_size(path);
  fs::resize_file(path, size - 5);
  EXPECT_THROW(load_module(b, path), ValueError);
}

}  // namespace
}  // namespace ember::nn
