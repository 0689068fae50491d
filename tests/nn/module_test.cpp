// The module system: paths, counting, lazy init, freezing, moving between backends, the tree.
#include <gtest/gtest.h>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"

namespace ember::nn {
namespace {

using AD = Autodiff<Cpu>;

template <Backend B>
struct Mlp {
  Linear<B> fc1, fc2;
  std::vector<Linear<B>> extra;
  double dropout = 0.25;
  EMBER_MODULE(Mlp, fc1, fc2, extra, dropout)

  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
};

template <Backend B>
Mlp<B> make_mlp() {
  Mlp<B> m;
  m.fc1 = LinearConfig{4, 8}.init<B>();
  m.fc2 = LinearConfig{8, 3}.with_bias(false).init<B>();
  m.extra.push_back(LinearConfig{3, 3}.init<B>());
  return m;
}

TEST(Module, PathsAndCounts) {
  auto m = make_mlp<AD>();
  EXPECT_EQ(param_paths(m), (std::vector<std::string>{"fc1.weight", "fc1.bias", "fc2.weight",
                                                      "extra.0.weight", "extra.0.bias"}));
  EXPECT_EQ(num_params(m), 4 * 8 + 8 + 8 * 3 + 9 + 3);
}

TEST(Module, LazyInitIsSharedByCopiesAndDeferred) {
  auto m = make_mlp<Cpu>();
  EXPECT_FALSE(m.fc1.weight.is_initialized());
  auto copy = m;
  auto a = m.fc1.weight.val().to_vec<float>();
  auto b = copy.fc1.weight.val().to_vec<float>();
  EXPECT_EQ(a, b);
  // PyTorch's default Linear init: uniform in ±1/sqrt(fan_in).
  for (float v : a) EXPECT_LE(std::abs(v), 0.5f);
}

TEST(Module, ToDeviceMovesACopyWhoseSharedLazyInitRanElsewhere) {
  std::vector<Device> others;
  for (Device d : available_devices())
    if (d.kind != DeviceKind::Cpu) others.push_back(d);
  if (others.empty()) GTEST_SKIP() << "no device but the CPU";
  auto m = make_mlp<Dispatch>();
  auto copy = m;  // shares fc1.weight's lazy cell with m
  auto want = m.fc1.weight.val().to_vec<float>();  // initialized on the CPU, through m
  auto moved = to_device(copy, others[0]);
  EXPECT_EQ(moved.fc1.weight.val().device(), others[0]);
  EXPECT_EQ(moved.fc1.weight.val().to_vec<float>(), want);
}

TEST(Module, TrainsAndFreezes) {
  auto m = make_mlp<AD>();
  auto x = Tensor<AD, 2>::random({5, 4}, Distribution::normal(0, 1));
  auto grads = m.forward(x).sum().backward();
  EXPECT_TRUE(m.fc1.weight.val().grad(grads).has_value());
  auto f = freeze(m, "fc1");
  auto g2 = f.forward(x).sum().backward();
  EXPECT_FALSE(f.fc1.weight.val().grad(g2).has_value());
  EXPECT_TRUE(f.fc2.weight.val().grad(g2).has_value());
  EXPECT_FALSE(f.fc1.weight.trainable());
  EXPECT_TRUE(f.fc2.weight.trainable());
}

TEST(Module, ValidAndBackKeepValuesAndIds) {
  auto m = make_mlp<AD>();
  Mlp<Cpu> v = valid(m);
  EXPECT_EQ(v.fc1.weight.id(), m.fc1.weight.id());
  EXPECT_EQ(v.dropout, 0.25);
  auto x = Tensor<Cpu, 2>::random({2, 4}, Distribution::normal(0, 1));
  auto ya = m.forward(Tensor<AD, 2>::from_inner(x)).inner().to_vec<float>();
  auto yv = v.forward(x).to_vec<float>();
  EXPECT_EQ(ya, yv);
  Mlp<AD> back = to_backend<AD>(v);
  EXPECT_EQ(back.extra.at(0).bias->id(), m.extra.at(0).bias->id());
  EXPECT_TRUE(back.fc1.weight.val().is_require_grad());
}

TEST(Module, SummaryShowsTree) {
  auto m = make_mlp<Cpu>();
  std::string s = summary(m);
  EXPECT_NE(s.find("Mlp (76 params)"), std::string::npos) << s;
  EXPECT_NE(s.find("  fc1: Linear (40 params)"), std::string::npos) << s;
  EXPECT_NE(s.find("    weight: [4, 8]"), std::string::npos) << s;
  EXPECT_NE(s.find("extra.0: Linear (12 params)"), std::string::npos) << s;
}

TEST(Config, JsonRoundTripAndDefaults) {
  auto c = LinearConfig{784, 256}.with_bias(false).with_initializer(Initializer::xavier_normal(2));
  auto back = config_from_json<LinearConfig>(config_json(c));
  EXPECT_EQ(back, c);
  auto partial = config_from_json<LinearConfig>(R"({"d_input": 3, "d_output": 2})");
  EXPECT_TRUE(partial.bias);
  EXPECT_THROW(config_from_json<LinearConfig>(R"({"d_input": "x"})"), ValueError);
  EXPECT_THROW(config_from_json<LinearConfig>("{"), ValueError);
}

}  // namespace
}  // namespace ember::nn

namespace ember::nn {
namespace {

double mean_of(const std::vector<float>& v) {
  double s = 0;
  for (float x : v) s += x;
  return s / static_cast<double>(v.size());
}
double std_of(const std::vector<float>& v) {
  double m = mean_of(v), s = 0;
  for (float x : v) s += (x - m) * (x - m);
  return std::sqrt(s / static_cast<double>(v.size()));
}

TEST(Initializer, DistributionsMatchTheirFormulas) {
  const Device dev = Cpu::default_device();
  const int64_t fi = 400, fo = 100;
  auto draw = [&](Initializer i) { return i.init<Cpu, 2>({fo, fi}, dev, fi, fo).to_vec<float>(); };
  // Kaiming uniform with gain g: bound sqrt(3) * g / sqrt(fan_in), std g / sqrt(fan_in).
  auto ku = draw(Initializer::kaiming_uniform(std::sqrt(2.0)));
  const double bound = std::sqrt(3.0) * std::sqrt(2.0) / std::sqrt(fi);
  for (float x : ku) ASSERT_LE(std::abs(x), bound + 1e-6);
  EXPECT_NEAR(std_of(ku), std::sqrt(2.0 / fi), 0.02 * std::sqrt(2.0 / fi) * 5);
  auto kn = draw(Initializer::kaiming_normal(1.0, /*fan_out_only=*/true));
  EXPECT_NEAR(std_of(kn), 1.0 / std::sqrt(fo), 0.03 / std::sqrt(fo) * 5);
  auto xu = draw(Initializer::xavier_uniform());
  const double xb = std::sqrt(6.0 / (fi + fo));
  for (float x : xu) ASSERT_LE(std::abs(x), xb + 1e-6);
  EXPECT_NEAR(std_of(xu), xb / std::sqrt(3.0), 0.05 * xb);
  auto xn = draw(Initializer::xavier_normal(2.0));
  EXPECT_NEAR(std_of(xn), 2.0 * std::sqrt(2.0 / (fi + fo)), 0.05 * std::sqrt(2.0 / (fi + fo)) * 2);
  auto n = draw(Initializer::normal(3, 0.5));
  EXPECT_NEAR(mean_of(n), 3.0, 0.01);
  EXPECT_NEAR(std_of(n), 0.5, 0.01);
  for (float x : draw(Initializer::uniform(-1, 2))) ASSERT_TRUE(x >= -1 && x < 2);
  for (float x : draw(Initializer::constant(0.25))) ASSERT_EQ(x, 0.25f);
  for (float x : draw(Initializer::ones())) ASSERT_EQ(x, 1.0f);
  for (float x : draw(Initializer::zeros())) ASSERT_EQ(x, 0.0f);
  EXPECT_THROW((Initializer::kaiming_uniform().init<Cpu, 2>({3, 3}, dev)), ValueError);
}

TEST(Initializer, OrthogonalRowsOrColumnsAreOrthonormal) {
  for (auto [rows, cols] : {std::pair<int64_t, int64_t>{6, 4}, {4, 6}, {5, 5}}) {
    auto w = Initializer::orthogonal(1.5).init<Cpu, 2>({rows, cols}, Cpu::default_device());
    auto v = w.to_data().convert(DType::F64).to_vec<double>();
    const bool wide = rows < cols;
    const int64_t k = wide ? rows : cols, n = wide ? cols : rows;
    for (int64_t a = 0; a < k; ++a)
      for (int64_t b = 0; b < k; ++b) {
        double dot = 0;
        for (int64_t i = 0; i < n; ++i)
          dot += wide ? v[a * cols + i] * v[b * cols + i] : v[i * cols + a] * v[i * cols + b];
        EXPECT_NEAR(dot, a == b ? 1.5 * 1.5 : 0.0, 1e-5) << rows << "x" << cols;
      }
  }
}

TEST(Initializer, JsonRoundTrip) {
  auto c = LinearConfig{3, 2}.with_initializer(Initializer::kaiming_normal(0.5, true));
  auto j = config_json(c);
  EXPECT_NE(j.find("\"kaiming_normal\""), std::string::npos) << j;
  EXPECT_EQ(config_from_json<LinearConfig>(j), c);
}

}  // namespace
}  // namespace ember::nn
