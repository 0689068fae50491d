// PyTorch state dicts (written by tools/gen_pt_fixtures.py) loaded into ember modules: the
// outputs on PyTorch's inputs must be PyTorch's (expected.json). Covers the adapters (Linear
// layout, norm names, LSTM, attention and transformer layers), both file formats, remaps,
// dtype casts and the report of a partial load.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/nn/layers/conv.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/norm.h"
#include "ember/nn/layers/rnn.h"
#include "ember/nn/layers/transformer.h"
#include "ember/nn/record.h"

namespace ember::nn {
namespace {

namespace fs = std::filesystem;
using B = Cpu;
const fs::path kDir = EMBER_PT_FIXTURES;

const nlohmann::json& expected() {
  static const nlohmann::json j = [] {
    std::ifstream f(kDir / "expected.json");
    return nlohmann::json::parse(f);
  }();
  return j;
}

template <int D>
Tensor<B, D> input(const std::string& name) {
  const auto& e = expected().at(name);
  auto d = TensorData::from(e.at("data").get<std::vector<double>>(),
                            Shape(e.at("shape").get<std::vector<int64_t>>()));
  return Tensor<B, D>::from_data(d.convert(DType::F32));
}

template <int D>
void expect_pytorch(const Tensor<B, D>& got, const std::string& name, double atol = 1e-5) {
  const auto& e = expected().at(name);
  auto want = TensorData::from(e.at("data").get<std::vector<double>>(),
                               Shape(e.at("shape").get<std::vector<int64_t>>()));
  std::string why;
  EXPECT_TRUE(got.to_data().all_close(want, 1e-4, atol, &why)) << name << ": " << why;
}

TEST(PytorchImport, LinearInBothFormatsAndFromF64) {
  for (const char* f : {"linear.pt", "linear_legacy.pt", "linear_f64.pt"}) {
    SCOPED_TRACE(f);
    auto lin = LinearConfig{4, 3}.init<B>();
    auto r = load_module(lin, kDir / f, ImportOptions{});
    EXPECT_EQ(r.applied, (std::vector<std::string>{"weight", "bias"}));
    EXPECT_TRUE(r.complete());
    EXPECT_EQ(lin.weight.val().dtype(), DType::F32);  // f64 in the file, f32 in the module
    expect_pytorch(lin.forward(input<2>("linear.x")), "linear.y");
  }
  // names as they are (no adapters): the [out, in] weight does not fit [in, out]
  auto lin = LinearConfig{4, 3}.init<B>();
  auto r = load_module(lin, kDir / "linear.pt",
                       {.layout = RecordLayout::Ember, .mode = LoadMode::Partial});
  ASSERT_EQ(r.mismatched.size(), 1u);
  EXPECT_EQ(r.mismatched[0], "weight: shape [3, 4] in the record, [4, 3] in the module");
  EXPECT_THROW(load_module(lin, kDir / "linear.pt"), ValueError);  // strict, exact names
}

TEST(PytorchImport, Conv2d) {
  auto conv = Conv2dConfig{{2, 3}, {3, 3}}.with_padding({1, 1}).init<B>();
  load_module(conv, kDir / "conv2d.pt", ImportOptions{});
  expect_pytorch(conv.forward(input<4>("conv2d.x")), "conv2d.y");
}

TEST(PytorchImport, BatchNorm2dWithRunningStatistics) {
  auto bn = BatchNormConfig{3}.init<B>();
  auto r = load_module(bn, kDir / "batchnorm2d.pt", ImportOptions{});
  EXPECT_EQ(r.applied, (std::vector<std::string>{"gamma", "beta", "running_mean", "running_var"}));
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"num_batches_tracked"}));
  expect_pytorch(bn.forward(input<4>("batchnorm2d.x")), "batchnorm2d.y");
}

TEST(PytorchImport, StackedBidirectionalLstm) {
  auto lstm =
      LstmConfig{3, 4}.with_num_layers(2).with_bidirectional(true).with_batch_first(true).init<B>();
  auto r = load_module(lstm, kDir / "lstm.pt", ImportOptions{});
  EXPECT_EQ(r.applied.size(), 16u);
  auto out = lstm.forward(input<3>("lstm.x"));
  expect_pytorch(out.output, "lstm.y");
  expect_pytorch(out.h_n, "lstm.h");
  expect_pytorch(out.c_n, "lstm.c");
}

TEST(PytorchImport, TransformerEncoderLayer) {
  auto enc = TransformerEncoderLayerConfig{8, 2, 16}.with_dropout(0).init<B>();
  auto r = load_module(enc, kDir / "transformer.pt", ImportOptions{});
  // in_proj_weight and in_proj_bias each split into query, key and value
  EXPECT_EQ(r.applied.size(), 16u);
  expect_pytorch(enc.forward(input<3>("transformer.x")), "transformer.y");
}

template <Backend BB>
struct SmallCnn {
  Conv2d<BB> conv1;
  BatchNorm<BB> bn1;
  Conv2d<BB> conv2;
  Linear<BB> fc;
  EMBER_MODULE(SmallCnn, conv1, bn1, conv2, fc)

  Tensor<BB, 2> forward(const Tensor<BB, 4>& x) const {
    auto h = max_pool2d(activation::relu(bn1.forward(conv1.forward(x))), {2, 2});
    h = activation::relu(conv2.forward(h));
    return fc.forward(h.template flatten<2>(1, 3));
  }
};

SmallCnn<B> small_cnn() {
  return {Conv2dConfig{{1, 4}, {3, 3}}.with_padding({1, 1}).init<B>(), BatchNormConfig{4}.init<B>(),
          Conv2dConfig{{4, 8}, {3, 3}}.init<B>(), LinearConfig{32, 5}.init<B>()};
}

TEST(PytorchImport, WholeModelFromACheckpointInBothFormats) {
  for (const char* f : {"cnn_checkpoint.pt", "cnn_checkpoint_legacy.pt"}) {
    SCOPED_TRACE(f);
    auto cnn = small_cnn();
    auto r = load_module(cnn, kDir / f, {.remap = {{"^model\\.", ""}}});
    EXPECT_EQ(r.applied.size(), 10u);
    EXPECT_EQ(r.skipped, (std::vector<std::string>{"model.bn1.num_batches_tracked"}));
    expect_pytorch(cnn.forward(input<4>("cnn.x")), "cnn.y");
  }
}

struct Other {
  Conv2d<B> features;
  BatchNorm<B> norm;
  Linear<B> fc;
  Linear<B> head;
  EMBER_MODULE(Other, features, norm, fc, head)
};

TEST(PytorchImport, PartialLoadReportsByTheFilesNames) {
  // a module whose fc has another size and that lacks conv2, with renamed layers
  Other m{Conv2dConfig{{1, 4}, {3, 3}}.with_padding({1, 1}).init<B>(), BatchNormConfig{4}.init<B>(),
          LinearConfig{16, 5}.init<B>(), LinearConfig{5, 2}.init<B>()};
  auto before = m.head.weight.val().to_data();
  ImportOptions opt{.remap = {{"^model\\.", ""},
                              {"^conv1\\.", "features."},
                              {"^bn1\\.(.*)", "norm.$1"},
                              {".*num_batches_tracked$", ""}},
                    .mode = LoadMode::Partial};
  auto r = load_module(m, kDir / "cnn_checkpoint.pt", opt);
  EXPECT_EQ(r.applied,
            (std::vector<std::string>{"features.weight", "features.bias", "norm.gamma", "norm.beta",
                                      "fc.bias", "norm.running_mean", "norm.running_var"}));
  EXPECT_EQ(r.missing, (std::vector<std::string>{"head.weight", "head.bias"}));
  EXPECT_EQ(r.unused, (std::vector<std::string>{"model.conv2.weight (as conv2.weight)",
                                                "model.conv2.bias (as conv2.bias)"}));
  ASSERT_EQ(r.mismatched.size(), 1u);
  EXPECT_EQ(
      r.mismatched[0],
      "fc.weight: shape [32, 5] in the record, [16, 5] in the module (from 'model.fc.weight')");
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"model.bn1.num_batches_tracked"}));
  EXPECT_FALSE(r.complete());
  EXPECT_EQ(m.head.weight.val().to_data(), before);  // missing: kept as it was
  // the loaded ones are PyTorch's conv1 (transposing none: a conv weight is PyTorch's layout)
  auto sd = record::load_pytorch(kDir / "cnn_checkpoint.pt");
  for (const auto& [n, d] : sd) {
    if (n == "model.conv1.weight") {
      EXPECT_EQ(m.features.weight.val().to_data(), d);
    }
  }
  // strict: the same mismatch is an error, and nothing is assigned
  auto fresh = small_cnn();
  fresh.fc = LinearConfig{16, 5}.init<B>();
  auto w = fresh.conv1.weight.val().to_data();
  EXPECT_THROW(load_module(fresh, kDir / "cnn_checkpoint.pt", {.remap = {{"^model\\.", ""}}}),
               ValueError);
  EXPECT_EQ(fresh.conv1.weight.val().to_data(), w);
}

struct Named {
  Linear<B> proj;
  EMBER_MODULE(Named, proj)
};

TEST(PytorchImport, RemapsRunInOrderAndBadPatternsAreErrors) {
  Named m{LinearConfig{4, 3}.init<B>()};
  // "weight" -> "w" -> "proj.weight"; "bias" -> "proj.bias"
  auto r =
      load_module(m, kDir / "linear.pt",
                  {.remap = {{"^weight$", "w"}, {"^w$", "proj.weight"}, {"^bias$", "proj.$&"}}});
  EXPECT_TRUE(r.complete());
  expect_pytorch(m.proj.forward(input<2>("linear.x")), "linear.y");
  EXPECT_THROW(load_module(m, kDir / "linear.pt", {.remap = {{"(", ""}}}), ValueError);
  // two names onto one path
  EXPECT_THROW(load_module(m, kDir / "linear.pt", {.remap = {{"^(weight|bias)$", "proj.bias"}}}),
               ValueError);
}

struct Raw {
  Param<Tensor<B, 2>> matrix;
  EMBER_MODULE(Raw, matrix)
};

TEST(PytorchImport, TransposeByPredicateAndApplyFromMemory) {
  Raw m{Param<Tensor<B, 2>>(Tensor<B, 2>::zeros({4, 3}))};
  auto sd = record::load_pytorch(kDir / "linear.pt");
  auto r = apply_record(m, sd,
                        ImportOptions{.remap = {{"^weight$", "matrix"}, {"^bias$", ""}},
                                      .transpose = [](const std::string& p, const Shape& s) {
                                        return p == "matrix" && s == Shape{3, 4};
                                      }});
  EXPECT_TRUE(r.complete());
  EXPECT_EQ(r.skipped, (std::vector<std::string>{"bias"}));
  // matrix = weight^T, so x matrix is PyTorch's output without its bias
  auto lin = LinearConfig{4, 3}.init<B>();
  load_module(lin, kDir / "linear.pt", ImportOptions{});
  auto x = input<2>("linear.x");
  std::string why;
  EXPECT_TRUE(
      x.matmul(m.matrix.val())
          .to_data()
          .all_close((lin.forward(x) - lin.bias->val().unsqueeze<2>()).to_data(), 1e-5, 1e-6, &why))
      << why;
}

}  // namespace
}  // namespace ember::nn
