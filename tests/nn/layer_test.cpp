// Layers against PyTorch: outputs, input and parameter gradients, and running statistics
// (tests/nn/layer_goldens.json, from tools/gen_nn_goldens.py).
#include "layer_golden.h"

#include "ember/nn/layers/activation.h"
#include "ember/nn/layers/conv.h"
#include "ember/nn/layers/distance.h"
#include "ember/nn/layers/dropout.h"
#include "ember/nn/layers/embedding.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/norm.h"
#include "ember/nn/layers/pixel_shuffle.h"
#include "ember/nn/layers/pool.h"
#include "ember/nn/layers/shape.h"

namespace ember::test {
namespace {

using nlohmann::json;

template <int D, class Config>
LayerFn unary_layer() {
  return [](const json& c) {
    auto m = build<Config>(c);
    auto x = case_input<D>(c, 0);
    check_case(c, m, m.forward(x), std::tuple(x));
  };
}

/// A stateless layer built by its config's init() (no backend, no parameters).
template <int D, class Config>
LayerFn stateless_layer() {
  return [](const json& c) {
    auto m = nn::config_from_json<Config>(c.at("config").dump()).init();
    auto x = case_input<D>(c, 0);
    check_case(c, m, m.template forward<AD>(x), std::tuple(x));
  };
}

std::vector<int64_t> ints(const json& c, const char* k) {
  return c.at("config").at(k).get<std::vector<int64_t>>();
}

const std::map<std::string, LayerFn>& layers() {
  static const std::map<std::string, LayerFn> map = {
      {"linear",
       [](const json& c) {
         auto m = build<nn::LinearConfig>(c);
         if (c.at("inputs").at(0).at("shape").size() == 3) {
           auto x = case_input<3>(c, 0);
           check_case(c, m, m.forward(x), std::tuple(x));
         } else {
           auto x = case_input<2>(c, 0);
           check_case(c, m, m.forward(x), std::tuple(x));
         }
       }},
      {"embedding",
       [](const json& c) {
         auto m = build<nn::EmbeddingConfig>(c);
         auto i = case_input<2, Int>(c, 0);
         check_case(c, m, m.forward(i), std::tuple(i));
       }},
      {"layer_norm", unary_layer<3, nn::LayerNormConfig>()},
      {"rms_norm", unary_layer<3, nn::RmsNormConfig>()},
      {"group_norm",
       [](const json& c) {
         auto m = build<nn::GroupNormConfig>(c);
         if (c.at("inputs").at(0).at("shape").size() == 4) {
           auto x = case_input<4>(c, 0);
           check_case(c, m, m.forward(x), std::tuple(x));
         } else {
           auto x = case_input<3>(c, 0);
           check_case(c, m, m.forward(x), std::tuple(x));
         }
       }},
      {"instance_norm", unary_layer<4, nn::InstanceNormConfig>()},
      {"batch_norm_train",
       [](const json& c) {
         auto m = build<nn::BatchNormConfig>(c);
         if (c.at("inputs").at(0).at("shape").size() == 4) {
           auto x = case_input<4>(c, 0);
           check_case(c, m, m.forward(x), std::tuple(x));
         } else {
           auto x = case_input<2>(c, 0);
           check_case(c, m, m.forward(x), std::tuple(x));
         }
       }},
      {"batch_norm_eval",
       [](const json& c) {
         auto m = nn::valid(build<nn::BatchNormConfig>(c));  // inference: running statistics
         auto run = [&](auto x) {
           auto y = m.forward(x);
           expect_close(y.to_data(), c.at("output"), "output", 1e-4, 1e-5);
         };
         if (c.at("inputs").at(0).at("shape").size() == 4)
           run(case_input<4, Float, Dispatch>(c, 0));
         else
           run(case_input<2, Float, Dispatch>(c, 0));
       }},
      {"prelu", unary_layer<3, nn::PReluConfig>()},
      {"conv1d", unary_layer<3, nn::Conv1dConfig>()},
      {"conv2d", unary_layer<4, nn::Conv2dConfig>()},
      {"conv3d", unary_layer<5, nn::Conv3dConfig>()},
      {"conv_transpose1d", unary_layer<3, nn::ConvTranspose1dConfig>()},
      {"conv_transpose2d", unary_layer<4, nn::ConvTranspose2dConfig>()},
      {"max_pool1d", stateless_layer<3, nn::MaxPool1dConfig>()},
      {"max_pool2d", stateless_layer<4, nn::MaxPool2dConfig>()},
      {"avg_pool1d", stateless_layer<3, nn::AvgPool1dConfig>()},
      {"avg_pool2d", stateless_layer<4, nn::AvgPool2dConfig>()},
      {"adaptive_avg_pool1d", stateless_layer<3, nn::AdaptiveAvgPool1dConfig>()},
      {"adaptive_avg_pool2d", stateless_layer<4, nn::AdaptiveAvgPool2dConfig>()},
      {"interpolate",
       [](const json& c) {
         auto m = nn::config_from_json<nn::InterpolateConfig>(c.at("config").dump()).init();
         auto x = case_input<4>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
      {"unfold",
       [](const json& c) {
         nn::Unfold m{ints(c, "kernel_size"), ints(c, "stride"), ints(c, "padding"),
                      ints(c, "dilation")};
         auto x = case_input<4>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
      {"fold",
       [](const json& c) {
         nn::Fold m{ints(c, "output_size"), ints(c, "kernel_size"), ints(c, "stride"),
                    ints(c, "padding"), ints(c, "dilation")};
         auto x = case_input<3>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
      {"pixel_shuffle",
       [](const json& c) {
         nn::PixelShuffle m{c.at("config").at("factor").get<int64_t>()};
         auto x = case_input<4>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
      {"pixel_unshuffle",
       [](const json& c) {
         nn::PixelUnshuffle m{c.at("config").at("factor").get<int64_t>()};
         auto x = case_input<4>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
  };
  return map;
}

TEST(LayerGoldens, MatchPyTorch) {
  const json file = read_json(EMBER_LAYER_GOLDENS);
  int n = 0;
  for (const auto& c : file.at("cases")) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    auto it = layers().find(c.at("key").get<std::string>());
    ASSERT_NE(it, layers().end()) << "no layer for key " << c.at("key");
    it->second(c);
    ++n;
  }
  EXPECT_GE(n, 35);
}

TEST(Dropout, DropsAtRateAndScalesOnlyWhileTraining) {
  auto x = Tensor<AD, 2>::ones({200, 200}).require_grad();
  auto y = nn::DropoutConfig{0.3}.init().forward(x);
  auto v = y.inner().to_vec<float>();
  int64_t zeros = 0;
  for (float e : v) {
    if (e == 0)
      ++zeros;
    else
      EXPECT_NEAR(e, 1 / 0.7, 1e-5);
  }
  EXPECT_NEAR(static_cast<double>(zeros) / static_cast<double>(v.size()), 0.3, 0.01);
  {
    autodiff::NoGradGuard ng;
    EXPECT_EQ(nn::Dropout{0.3}.forward(x).inner().to_vec<float>(), x.inner().to_vec<float>());
  }
  auto xc = Tensor<Dispatch, 2>::ones({3, 3});
  EXPECT_EQ(nn::Dropout{0.3}.forward(xc).to_vec<float>(), xc.to_vec<float>());
  EXPECT_THROW((nn::DropoutConfig{1.5}.init()), ValueError);
}

TEST(Layers, ShapeErrorsNameTheLayer) {
  auto fc = nn::LinearConfig{4, 3}.init<Dispatch>();
  try {
    fc.forward(Tensor<Dispatch, 2>::zeros({2, 5}));
    FAIL();
  } catch (const ShapeError& e) {
    EXPECT_NE(std::string(e.what()).find("[linear]"), std::string::npos) << e.what();
  }
  EXPECT_THROW((nn::GroupNormConfig{4, 6}.init<Dispatch>()), ValueError);
  EXPECT_THROW(
      (nn::LayerNormConfig{4}.init<Dispatch>().forward(Tensor<Dispatch, 2>::zeros({2, 5}))),
      ShapeError);
  EXPECT_THROW((nn::PixelShuffle{2}.forward(Tensor<Dispatch, 4>::zeros({1, 3, 2, 2}))), ShapeError);
}

// A module converted with nn::to_dtype computes in the new type what it computed before: the
// f64 module on f64 inputs matches the f32 module on the same inputs (to f32 precision), and
// its outputs and gradients are f64.
TEST(Layers, ToDtypeRunsTheModuleInF64) {
  using T2 = Tensor<AD, 2>;
  using T4 = Tensor<AD, 4>;
  auto x2 = T2::random({3, 6}, Distribution::normal(0, 1));
  auto x4 = T4::random({2, 3, 5, 5}, Distribution::normal(0, 1));
  auto check = [](const auto& m32, const auto& x) {
    auto m64 = nn::to_dtype(m32, DType::F64);
    auto x64 = x.cast(DType::F64).detach().require_grad();
    auto y64 = m64.forward(x64);
    EXPECT_EQ(y64.dtype(), DType::F64);
    auto y32 = m32.forward(x).to_data().convert(DType::F64);
    std::string why;
    EXPECT_TRUE(y64.to_data().all_close(y32, 1e-5, 1e-5, &why)) << why;
    auto g = y64.sum().backward();
    ASSERT_TRUE(x64.grad(g).has_value());
    EXPECT_EQ(x64.grad(g)->dtype(), DType::F64);
  };
  check(nn::LinearConfig{6, 4}.init<AD>(), x2);
  check(nn::LayerNormConfig{6}.init<AD>(), x2);
  check(nn::Conv2dConfig{{3, 4}, {3, 3}}.init<AD>(), x4);
  check(nn::BatchNormConfig{3}.init<AD>(), x4);
  EXPECT_THROW(nn::to_dtype(nn::LinearConfig{6, 4}.init<AD>(), DType::I64), DTypeError);
}

// A layer built in f64 from its config (also from JSON) has f64 parameters and runs on f64
// inputs; norms' running statistics follow.
TEST(Layers, ConfigDtypeBuildsTheLayerInThatType) {
  auto fc =
      nn::config_from_json<nn::LinearConfig>(R"({"d_input": 6, "d_output": 4, "dtype": "f64"})")
          .init<AD>();
  EXPECT_EQ(fc.weight.val().dtype(), DType::F64);
  EXPECT_NE(
      nn::config_json(nn::LinearConfig{6, 4}.with_dtype(DType::BF16)).find(R"("dtype":"bf16")"),
      std::string::npos);
  auto x = Tensor<AD, 2>::ones({2, 6}, AD::default_device(), DType::F64);
  EXPECT_EQ(fc.forward(x).dtype(), DType::F64);
  auto bn = nn::BatchNormConfig{3}.with_dtype(DType::F64).init<AD>();
  EXPECT_EQ(bn.running_var.val().dtype(), DType::F64);
  auto conv = nn::Conv2dConfig{{3, 2}, {3, 3}}.with_dtype(DType::F64).init<AD>();
  EXPECT_EQ(
      conv.forward(Tensor<AD, 4>::ones({1, 3, 5, 5}, AD::default_device(), DType::F64)).dtype(),
      DType::F64);
  auto emb = nn::EmbeddingConfig{10, 4}.with_dtype(DType::F16).init<AD>();
  EXPECT_EQ(emb.forward(Tensor<AD, 1, Int>::zeros({3})).dtype(), DType::F16);
  auto ln = nn::LayerNormConfig{6}.with_dtype(DType::F64).init<AD>();
  EXPECT_EQ(ln.forward(x).dtype(), DType::F64);
}

// The thin modules compute what their functions (checked against PyTorch in the op suite)
// compute, with their fields as the arguments.
TEST(Layers, ModulesOverTheBreadthFunctions) {
  using T4 = Tensor<Dispatch, 4>;
  auto x = T4::random({2, 3, 6, 5}, Distribution::normal(0, 1));
  auto same = [](const auto& a, const auto& b) {
    EXPECT_EQ(a.shape(), b.shape());
    EXPECT_EQ(a.to_data().template to_vec<float>(), b.to_data().template to_vec<float>());
  };
  same(nn::Pad2d{{1, 2, 2, 0}, PadMode::Reflect}.forward(x), x.pad({1, 2, 2, 0}, PadMode::Reflect));
  same(nn::AdaptiveMaxPool2d{{3, 2}}.forward(x), adaptive_max_pool(x, {3, 2}));
  auto [y, idx] = max_pool_with_indices(x, {2, 2});
  same(nn::MaxUnpool2d{{6, 5}}.forward(y, idx), max_unpool(y, idx, {6, 5}));
  auto a = Tensor<Dispatch, 2>::random({4, 3}, Distribution::normal(0, 1)), b = a * 2.0 + 1.0;
  same(nn::CosineSimilarity{1, 1e-8}.forward(a, b), linalg::cosine_similarity(a, b, 1));
  same(nn::PairwiseDistance{1.0}.forward(a, b), linalg::pairwise_distance(a, b, 1.0));
  same(nn::Hardtanh{-0.5, 0.5}.forward(a), activation::hardtanh(a, -0.5, 0.5));
  same(nn::Glu{2}.forward(x), activation::glu(x, 2));
  same(nn::Softmin{1}.forward(a), activation::softmin(a, 1));
  auto flat = nn::Flatten<3>{2, 3}.forward(x);
  EXPECT_EQ(flat.shape(), (Shape{2, 3, 30}));
  same(nn::Unflatten<4>{2, {6, -1}}.forward(flat), x);
  EXPECT_THROW((nn::Unflatten<4>{2, {6, 5, 1}}.forward(flat)), ShapeError);
}

// A layer whose parameters are f32 names itself and both types for an f64 input.
TEST(Layers, DtypeMismatchNamesTheLayerAndBothTypes) {
  auto x = Tensor<Dispatch, 2>::zeros({2, 4}, Dispatch::default_device(), DType::F64);
  auto expect = [&](auto f, const std::string& layer) {
    try {
      f();
      ADD_FAILURE() << "no error for " << layer;
    } catch (const DTypeError& e) {
      std::string m = e.what();
      EXPECT_EQ(m.rfind("[" + layer + "]", 0), 0u) << m;
      EXPECT_NE(m.find("f64"), std::string::npos) << m;
      EXPECT_NE(m.find("f32"), std::string::npos) << m;
    }
  };
  expect([&] { nn::LayerNormConfig{4}.init<Dispatch>().forward(x); }, "layer_norm");
  expect([&] { nn::LinearConfig{4, 3}.init<Dispatch>().forward(x); }, "linear");
  expect([&] { nn::RmsNormConfig{4}.init<Dispatch>().forward(x); }, "rms_norm");
}

}  // namespace
}  // namespace ember::test
