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
