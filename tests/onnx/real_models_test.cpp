// Real models exported from PyTorch (tools/onnx_models/make_models.py) run by ember's ONNX
// runtime on the CPU and compared with ONNX Runtime's outputs for the same inputs
// (tools/onnx_models/ort_run.js), stored next to each model in tests/onnx/models/NAME/.
// Regenerate with tools/onnx_models/regen.sh.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <string>
#include <vector>

#include "ember/onnx/conformance.h"
#include "ember/onnx/model.h"
#include "ember/onnx/runtime.h"

namespace fs = std::filesystem;
using namespace ember;

namespace {

fs::path models_dir() {
  if (const char* env = std::getenv("EMBER_ONNX_REAL_MODELS")) return env;
  return EMBER_ONNX_REAL_MODELS_DIR;
}

// f32 through a few dozen layers: ember and ONNX Runtime sum in different orders, so the
// values agree to a few float32 ulps, not bit for bit (the worst seen: 3e-7 relative).
constexpr onnx::TestOptions kTolerance{.rtol = 1e-5, .atol = 1e-6};

struct Case {
  std::string name;
  size_t outputs;
  // an item's outputs do not depend on the rest of its batch (not so under dynamic
  // quantization, whose scale is taken over the whole batch)
  bool per_item = true;
};

class RealModel : public ::testing::TestWithParam<Case> {
 protected:
  void SetUp() override {
    dir_ = models_dir() / GetParam().name;
    if (!fs::exists(dir_ / "model.onnx") || !fs::exists(dir_ / "test_data_set_0" / "output_0.pb"))
      GTEST_SKIP() << dir_.string() << " has no model or reference outputs"
                   << " (tools/onnx_models/regen.sh makes them)";
  }
  fs::path data(const std::string& file) const { return dir_ / "test_data_set_0" / file; }
  fs::path dir_;
};

// The first `n` items of a batch (dimension 0).
TensorData first_items(const TensorData& t, int64_t n) {
  Shape shape = t.shape();
  const size_t item_bytes = t.bytes().size() / static_cast<size_t>(shape[0]);
  shape[0] = n;
  TensorData out(shape, t.dtype());
  std::memcpy(out.bytes().data(), t.bytes().data(), item_bytes * static_cast<size_t>(n));
  return out;
}

// The largest |a - e| / (1 + |e|) over all values: what the tolerance leaves as margin.
double worst_error(const TensorData& e, const TensorData& a) {
  const auto ev = e.convert(DType::F64).to_vec<double>();
  const auto av = a.convert(DType::F64).to_vec<double>();
  double worst = 0;
  for (size_t i = 0; i < ev.size() && i < av.size(); ++i)
    worst = std::max(worst, std::abs(av[i] - ev[i]) / (1 + std::abs(ev[i])));
  return worst;
}

TEST_P(RealModel, MatchesOnnxRuntime) {
  onnx::Session session(onnx::load_model(dir_ / "model.onnx"), Device::cpu());
  const TensorData x = onnx::load_tensor(data("input_0.pb"));
  const auto out = session.run({onnx::Value::tensor(x, session.device())});
  ASSERT_EQ(out.size(), GetParam().outputs);
  for (size_t k = 0; k < out.size(); ++k) {
    const TensorData expected = onnx::load_tensor(data("output_" + std::to_string(k) + ".pb"));
    const TensorData actual = out[k].data();
    EXPECT_EQ(onnx::compare(expected, actual, kTolerance), "") << "output " << k;
    char worst[32];
    std::snprintf(worst, sizeof worst, "%.3g", worst_error(expected, actual));
    RecordProperty("worst_error_" + std::to_string(k), worst);
  }
}

// The batch axis is dynamic: one item through the same session gives that item's outputs.
TEST_P(RealModel, BatchOfOne) {
  if (!GetParam().per_item) GTEST_SKIP() << "its outputs depend on the whole batch";
  onnx::Session session(onnx::load_model(dir_ / "model.onnx"), Device::cpu());
  const TensorData x = onnx::load_tensor(data("input_0.pb"));
  ASSERT_GE(x.shape()[0], 2) << "the stored input should be a batch";
  const auto full = session.run({onnx::Value::tensor(x, session.device())});
  const auto one = session.run({onnx::Value::tensor(first_items(x, 1), session.device())});
  ASSERT_EQ(one.size(), full.size());
  for (size_t k = 0; k < one.size(); ++k) {
    const TensorData expected =
        first_items(onnx::load_tensor(data("output_" + std::to_string(k) + ".pb")), 1);
    EXPECT_EQ(onnx::compare(expected, one[k].data(), kTolerance), "") << "output " << k;
  }
}

// The reference outputs are not trivially matched: a model run on another input differs.
TEST_P(RealModel, OutputsDependOnInput) {
  onnx::Session session(onnx::load_model(dir_ / "model.onnx"), Device::cpu());
  TensorData x = onnx::load_tensor(data("input_0.pb"));
  if (x.dtype() == DType::I64)
    for (int64_t& v : x.as_mut<int64_t>()) v = (v + 7) % 100;
  else
    for (float& v : x.as_mut<float>()) v = 1.0f - v;
  const auto out = session.run({onnx::Value::tensor(x, session.device())});
  const TensorData expected = onnx::load_tensor(data("output_0.pb"));
  EXPECT_NE(onnx::compare(expected, out[0].data(), kTolerance), "");
}

INSTANTIATE_TEST_SUITE_P(Models, RealModel,
                         ::testing::Values(Case{"mnist_cnn", 1}, Case{"transformer", 1},
                                           Case{"detector", 2}, Case{"ember_cnn", 1},
                                           Case{"quant_mlp", 1, false},
                                           Case{"quant_cnn", 1, false}),
                         [](const auto& info) { return info.param.name; });

}  // namespace
