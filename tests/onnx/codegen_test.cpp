// The generated-code path: models imported by `ember-onnx import-suite` at build time (one
// node test per operator, tests/onnx/codegen_subset.txt, and the real models), compiled
// into this binary, run on their test data and compared with the expected outputs as the
// runtime path is. Also: a generated module trains (Autodiff<Dispatch>) and saves records.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <memory>

#include "ember/onnx/conformance.h"
#include "ember/onnx/generated.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

fs::path folder_of(const std::string& name) {
  for (const fs::path& root : {fs::path(EMBER_ONNX_NODE_TESTS), fs::path(EMBER_ONNX_REAL_MODELS)})
    if (fs::exists(root / name / "model.onnx")) return root / name;
  return {};
}

/// "" when the generated model reproduces every output of every data set, else why not.
std::string check(const std::string& name, onnx::gen::ModelFn fn) {
  const fs::path dir = folder_of(name);
  if (dir.empty()) return "test folder not found";
  const auto model = onnx::load_model(dir / "model.onnx");
  std::set<std::string> init;
  for (const auto& [n, d] : model.graph.initializers) init.insert(n);
  std::vector<const onnx::ValueInfo*> inputs;
  for (const auto& v : model.graph.inputs)
    if (!init.contains(v.name)) inputs.push_back(&v);
  for (const auto& set : fs::directory_iterator(dir)) {
    if (!set.path().filename().string().starts_with("test_data_set_")) continue;
    std::vector<onnx::gen::Val<Dispatch>> in;
    for (size_t k = 0; fs::exists(set.path() / ("input_" + std::to_string(k) + ".pb")); ++k) {
      auto v = onnx::load_value(set.path() / ("input_" + std::to_string(k) + ".pb"), *inputs.at(k),
                                Device::cpu());
      in.push_back(onnx::gen::Val<Dispatch>::of(detail::Dyn<Dispatch>(v.handle)));
    }
    auto out = fn(fs::path(EMBER_ONNX_GENERATED) / (name + ".safetensors"), in);
    for (size_t k = 0; k < model.graph.outputs.size(); ++k) {
      const auto p = set.path() / ("output_" + std::to_string(k) + ".pb");
      if (!fs::exists(p)) continue;
      auto want = onnx::load_value(p, model.graph.outputs[k], Device::cpu()).data();
      auto got = Dispatch::to_data(out.at(k).t.handle());
      std::string d = onnx::compare(want, got);
      if (!d.empty()) return "output " + std::to_string(k) + ": " + d;
    }
  }
  return "";
}

TEST(OnnxCodegen, GeneratedModelsMatchTheExpectedOutputs) {
  const auto& models = onnx::gen::registered_models();
  ASSERT_GT(models.size(), 100u) << "the generated suite is missing";
  int passed = 0;
  std::vector<std::string> failed;
  // EMBER_ONNX_CODEGEN_REPORT=FILE: a "name PASS|FAIL" line per model (onnx_conformance.py)
  std::unique_ptr<std::ofstream> report;
  if (const char* r = std::getenv("EMBER_ONNX_CODEGEN_REPORT"))
    report = std::make_unique<std::ofstream>(r);
  for (const auto& [name, fn] : models) {
    std::string why;
    try {
      why = check(name, fn);
    } catch (const std::exception& e) {
      why = e.what();
    }
    if (why.empty())
      ++passed;
    else
      failed.push_back(name + ": " + why.substr(0, 300));
    if (report) *report << name << (why.empty() ? " PASS\n" : " FAIL\n");
  }
  std::cout << "[codegen] " << passed << " passed, " << failed.size() << " failed\n";
  for (const auto& f : failed) ADD_FAILURE() << f;
}

#ifndef EMBER_ONNX_CODEGEN_ALL
TEST(OnnxCodegen, RealModelsAreAmongThem) {
  const auto& models = onnx::gen::registered_models();
  for (const char* m : {"mnist_cnn", "transformer", "detector", "ember_cnn"})
    EXPECT_TRUE(models.contains(m)) << m;
}
#endif

}  // namespace

#ifndef EMBER_ONNX_CODEGEN_ALL  // (the subset's binary: the MNIST CNN is among its models)
// ---- a generated module is a normal ember module -------------------------------------------

#include "mnist_cnn.h"

template struct mnist_cnn::Model<ember::Autodiff<ember::Dispatch>>;

namespace {

TEST(OnnxCodegen, GeneratedModuleTrainsAndSavesRecords) {
  using AB = Autodiff<Dispatch>;
  const fs::path weights = fs::path(EMBER_ONNX_GENERATED) / "mnist_cnn.safetensors";
  auto m = mnist_cnn::Model<AB>::load(weights, Device::cpu());
  EXPECT_EQ(nn::num_params(m), 16 * 9 + 16 + 32 * 16 * 9 + 32 + 10 * 1568 + 10);
  auto x = Tensor<AB, 4>::random({3, 1, 28, 28}, Distribution::normal(0, 1), Device::cpu());
  // d sum(logits) / d fc.bias is the batch size for every class.
  auto grads = m.forward(x).sum().backward();
  auto gb = m.fc_bias.val().grad(grads)->to_vec<float>();
  for (float g : gb) EXPECT_FLOAT_EQ(g, 3.0f);
  // A conv weight's gradient against central differences of the same forward (f64 inputs
  // would be tighter; f32 with a 1e-2 step and 2e-2 tolerance checks the rule, not rounding).
  auto loss = [&](const mnist_cnn::Model<AB>& mm) {
    return mm.forward(x).square().mean().into_scalar<double>();
  };
  auto l = m.forward(x).square().mean();
  auto g2 = l.backward();
  auto gw = m.conv1_weight.val().grad(g2)->to_vec<float>();
  auto w = m.conv1_weight.val().inner().to_vec<float>();
  for (int idx : {0, 40, 100}) {
    const float h = 1e-2f;
    auto plus = w, minus = w;
    plus[idx] += h;
    minus[idx] -= h;
    auto mp = m, mm = m;
    mp.conv1_weight.set(Tensor<AB, 4>::from_values(plus, {16, 1, 3, 3}, Device::cpu()));
    mm.conv1_weight.set(Tensor<AB, 4>::from_values(minus, {16, 1, 3, 3}, Device::cpu()));
    const double fd = (loss(mp) - loss(mm)) / (2 * h);
    EXPECT_NEAR(gw[idx], fd, 2e-2 * std::max(1.0, std::abs(fd))) << "weight " << idx;
  }
  // Records: save, load into a fresh module, same outputs.
  const fs::path tmp = fs::temp_directory_path() / "ember_codegen_record.safetensors";
  nn::save_module(m, tmp);
  auto fresh = mnist_cnn::Model<Dispatch>::init(Device::cpu());
  nn::load_module(fresh, tmp);
  auto xv = x.inner();
  auto a = nn::valid(m).forward(xv).to_vec<float>(), b = fresh.forward(xv).to_vec<float>();
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) EXPECT_FLOAT_EQ(a[i], b[i]);
  fs::remove(tmp);
}

}  // namespace
#endif

namespace {

// ParseOptions::infer_shapes: ONNX's inference adds the intermediate values' types and
// shapes, keeping a dynamic batch symbolic.
TEST(OnnxShapes, InferenceAddsShapesAndKeepsSymbolicDims) {
  const fs::path file = fs::path(EMBER_ONNX_REAL_MODELS) / "transformer" / "model.onnx";
  onnx::ParseOptions o;
  o.infer_shapes = true;
  auto plain = onnx::load_model(file), inferred = onnx::load_model(file, o);
  EXPECT_GT(inferred.graph.value_info.size(), plain.graph.value_info.size() + 100);
  int symbolic = 0, known = 0;
  for (const auto& v : inferred.graph.value_info) {
    if (!v.shape) continue;
    for (const auto& d : *v.shape) {
      if (d.known())
        ++known;
      else if (!d.symbol.empty())
        ++symbolic;
    }
  }
  EXPECT_GT(symbolic, 0);
  EXPECT_GT(known, 0);
  // The graph input's batch stays a symbol, not a number.
  ASSERT_TRUE(inferred.graph.inputs[0].shape.has_value());
  EXPECT_FALSE((*inferred.graph.inputs[0].shape)[0].known());
}

}  // namespace
