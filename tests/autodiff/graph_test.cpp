// Graph semantics, memory, checkpointing and higher-order gradients of Autodiff<B>.
#include <gtest/gtest.h>

#include "ember/ember.h"

namespace ember {
namespace {

using AC = Autodiff<Cpu>;
using T1 = Tensor<AC, 1>;
using T2 = Tensor<AC, 2>;

std::vector<float> vec(const std::optional<Tensor<Cpu, 1>>& t) { return t->to_vec<float>(); }

TEST(Graph, TensorUsedTwiceAccumulates) {
  auto x = T1::from_values<float>({1, 2, 3}, {3}).require_grad();
  auto g = (x * x + x).sum().backward();  // d/dx = 2x + 1
  EXPECT_EQ(vec(x.grad(g)), (std::vector<float>{3, 5, 7}));
}

TEST(Graph, DetachedBranchGetsNoGradient) {
  auto x = T1::from_values<float>({1, 2}, {2}).require_grad();
  auto g = (x * x.detach()).sum().backward();  // only the first factor is differentiated
  EXPECT_EQ(vec(x.grad(g)), (std::vector<float>{1, 2}));
  EXPECT_FALSE(x.detach().is_require_grad());
}

TEST(Graph, OnlyLeavesThatRequireGradGetGradients) {
  auto x = T1::from_values<float>({1, 2}, {2}).require_grad();
  auto c = T1::from_values<float>({5, 6}, {2});  // no require_grad
  auto mid = x * 3.0f;
  auto g = (mid * c).sum().backward();
  EXPECT_TRUE(x.grad(g).has_value());
  EXPECT_FALSE(c.grad(g).has_value());
  EXPECT_FALSE(mid.grad(g).has_value());  // non-leaf: not kept
  EXPECT_EQ(g.size(), 1u);
  EXPECT_EQ(vec(x.grad(g)), (std::vector<float>{15, 18}));
}

// Matmul and conv compute only the gradients that flow somewhere (a first layer's input
// is data): each operand's gradient with the other constant equals the one computed when
// both are leaves.
TEST(Graph, OperandGradientsWithTheOtherOperandConstant) {
  auto xv = Tensor<Cpu, 2>::random({5, 7}, Distribution::normal(0, 1));
  auto wv = Tensor<Cpu, 2>::random({7, 3}, Distribution::normal(0, 1));
  auto both_x = T2::from_inner(xv).require_grad(), both_w = T2::from_inner(wv).require_grad();
  auto both = (both_x.matmul(both_w) * both_x.matmul(both_w)).sum().backward();
  auto only_w = T2::from_inner(wv).require_grad();
  auto gw =
      (T2::from_inner(xv).matmul(only_w) * T2::from_inner(xv).matmul(only_w)).sum().backward();
  auto only_x = T2::from_inner(xv).require_grad();
  auto gx =
      (only_x.matmul(T2::from_inner(wv)) * only_x.matmul(T2::from_inner(wv))).sum().backward();
  EXPECT_EQ(only_w.grad(gw)->to_vec<float>(), both_w.grad(both)->to_vec<float>());
  EXPECT_EQ(only_x.grad(gx)->to_vec<float>(), both_x.grad(both)->to_vec<float>());
  EXPECT_EQ(gw.size(), 1u);
  EXPECT_EQ(gx.size(), 1u);

  using T4 = Tensor<AC, 4>;
  auto iv = Tensor<Cpu, 4>::random({2, 3, 6, 6}, Distribution::normal(0, 1));
  auto kv = Tensor<Cpu, 4>::random({4, 3, 3, 3}, Distribution::normal(0, 1));
  auto loss = [](const T4& i, const T4& k) {
    return conv2d(i, k, {.padding = {1}}).square().sum();
  };
  auto bi = T4::from_inner(iv).require_grad(), bk = T4::from_inner(kv).require_grad();
  auto cb = loss(bi, bk).backward();
  auto ok = T4::from_inner(kv).require_grad();
  auto ck = loss(T4::from_inner(iv), ok).backward();
  auto oi = T4::from_inner(iv).require_grad();
  auto ci = loss(oi, T4::from_inner(kv)).backward();
  EXPECT_EQ(ok.grad(ck)->to_vec<float>(), bk.grad(cb)->to_vec<float>());
  EXPECT_EQ(oi.grad(ci)->to_vec<float>(), bi.grad(cb)->to_vec<float>());
}

TEST(Graph, BackwardTwiceOnSeparateGraphs) {
  auto x = T1::from_values<float>({2}, {1}).require_grad();
  auto g1 = (x * x).sum().backward();
  auto g2 = (x * x * x).sum().backward();
  EXPECT_EQ(vec(x.grad(g1)), (std::vector<float>{4}));
  EXPECT_EQ(vec(x.grad(g2)), (std::vector<float>{12}));
}

TEST(Graph, SecondBackwardThroughTheSameGraphIsAnError) {
  auto x = T1::from_values<float>({2}, {1}).require_grad();
  auto loss = (x * x).sum();
  loss.backward();
  EXPECT_THROW(loss.backward(), ValueError);
  EXPECT_THROW(T1::ones({1}).backward(), ValueError);  // nothing requires grad
}

TEST(Graph, GradRemoveAndReplace) {
  auto x = T1::from_values<float>({1}, {1}).require_grad();
  auto g = (x * 2.0f).sum().backward();
  x.grad_replace(g, Tensor<Cpu, 1>::from_values<float>({9}, {1}));
  EXPECT_EQ(vec(x.grad(g)), (std::vector<float>{9}));
  EXPECT_TRUE(x.grad_remove(g));
  EXPECT_FALSE(x.grad(g).has_value());
}

TEST(Graph, NoGradScopeRecordsNothing) {
  auto x = T1::from_values<float>({1}, {1}).require_grad();
  autodiff::NoGradGuard guard;
  EXPECT_FALSE((x * 2.0f).is_require_grad());
}

TEST(Graph, InnerAndFromInner) {
  auto x = T2::ones({2, 2}).require_grad();
  Tensor<Cpu, 2> i = x.inner();
  EXPECT_EQ(i.sum().into_scalar(), 4.0f);
  EXPECT_FALSE(T2::from_inner(i).is_require_grad());
}

TEST(Graph, BroadcastAndViewsReduceGradientsToInputShapes) {
  auto a = T2::from_values<float>({1, 2, 3, 4, 5, 6}, {2, 3}).require_grad();
  auto b = T2::from_values<float>({10, 20, 30}, {1, 3}).require_grad();
  auto g = (a.transpose() * b.transpose()).sum().backward();  // [3, 2] * [3, 1]
  EXPECT_EQ(b.grad(g)->to_vec<float>(), (std::vector<float>{5, 7, 9}));
  EXPECT_EQ(a.grad(g)->to_vec<float>(), (std::vector<float>{10, 20, 30, 10, 20, 30}));
}

// A small MLP step, many times: neither graph nodes nor CPU buffers may accumulate.
TEST(Memory, NoGrowthOverThousandsOfSteps) {
  auto w1 = T2::random({8, 16}, Distribution::normal(0, 0.3)).require_grad();
  auto w2 = T2::random({16, 4}, Distribution::normal(0, 0.3)).require_grad();
  auto x = T2::random({32, 8}, Distribution::normal(0, 1));
  auto step = [&] {
    auto h = activation::relu(x.matmul(w1));
    auto loss = activation::log_softmax(h.matmul(w2), 1).mean().neg();
    auto g = loss.backward();
    return w1.grad(g)->sum().into_scalar() + w2.grad(g)->sum().into_scalar();
  };
  step();
  int64_t nodes = autodiff::live_nodes(), buffers = Cpu::live_buffers();
  for (int i = 0; i < 3000; ++i) step();
  EXPECT_EQ(autodiff::live_nodes(), nodes);
  EXPECT_EQ(Cpu::live_buffers(), buffers);
}

// Balanced checkpointing keeps far fewer bytes alive between forward and backward and gives
// the same gradients.
TEST(Checkpointing, BalancedRecomputesMemoryBoundOps) {
  auto w = T2::random({64, 64}, Distribution::normal(0, 0.1)).require_grad();
  auto x = T2::random({64, 64}, Distribution::normal(0, 1));
  auto run = [&](Checkpointing s, int64_t& kept) {
    autodiff::CheckpointScope scope(s);
    int64_t before = Cpu::live_bytes();
    auto h = x.matmul(w);
    for (int i = 0; i < 6; ++i) h = (h.tanh() * 1.5f).exp().sigmoid();
    auto loss = h.sum();
    kept = Cpu::live_bytes() - before;
    return loss.backward();
  };
  int64_t kept_none = 0, kept_balanced = 0;
  auto g_none = run(Checkpointing::None, kept_none);
  auto g_bal = run(Checkpointing::Balanced, kept_balanced);
  EXPECT_LT(kept_balanced * 3, kept_none);
  EXPECT_TRUE(w.grad(g_none)->all_close(*w.grad(g_bal), 1e-6, 1e-7));
}

// Second order through Autodiff<Autodiff<B>>.
using AA = Autodiff<AC>;

TEST(HigherOrder, SecondDerivativesOfKnownFunctions) {
  auto xin = Tensor<AC, 1>::from_values<float>({0.3f, -1.2f, 2.0f}, {3}).require_grad();
  auto x = Tensor<AA, 1>::from_inner(xin).require_grad();
  // f = sum(x^3 + sin x): f' = 3x^2 + cos x, f'' = 6x - sin x
  auto g1 = (x * x * x + x.sin()).sum().backward();
  auto d1 = *x.grad(g1);
  auto g2 = d1.sum().backward();
  auto d2 = xin.grad(g2)->to_vec<float>();
  std::vector<float> xv{0.3f, -1.2f, 2.0f};
  for (int i = 0; i < 3; ++i) {
    EXPECT_NEAR(d1.to_vec<float>()[i], 3 * xv[i] * xv[i] + std::cos(xv[i]), 1e-5);
    EXPECT_NEAR(d2[i], 6 * xv[i] - std::sin(xv[i]), 1e-5);
  }
}

// Hessian-vector product of f(x) = sum(tanh(A x)^2) / 2 against finite differences of the
// gradient, in f64.
TEST(HigherOrder, HessianVectorProductMatchesFiniteDifferences) {
  using TD = Tensor<Cpu, 2>;
  auto a = TD::random({5, 4}, Distribution::normal(0, 1), Device::cpu(), DType::F64);
  auto v = TD::random({4, 1}, Distribution::normal(0, 1), Device::cpu(), DType::F64);
  auto x0 = TD::random({4, 1}, Distribution::normal(0, 1), Device::cpu(), DType::F64);
  auto gradient = [&](const TD& xv) {  // first-order gradient with Autodiff<Cpu>
    auto x = Tensor<AC, 2>::from_inner(xv).require_grad();
    auto h = Tensor<AC, 2>::from_inner(a).matmul(x).tanh();
    auto g = ((h * h).sum() * 0.5).backward();
    return *x.grad(g);
  };
  // HVP: d/dx (grad f(x) . v) with Autodiff<Autodiff<Cpu>>
  auto xin = Tensor<AC, 2>::from_inner(x0).require_grad();
  auto x = Tensor<AA, 2>::from_inner(xin).require_grad();
  auto aa = Tensor<AA, 2>::from_inner(Tensor<AC, 2>::from_inner(a));
  auto h = aa.matmul(x).tanh();
  auto g1 = ((h * h).sum() * 0.5).backward();
  auto gx = *x.grad(g1);  // Tensor<AC, 2>, still on the inner graph
  auto g2 = (gx * Tensor<AC, 2>::from_inner(v)).sum().backward();
  auto hvp = xin.grad(g2)->to_vec<double>();
  double eps = 1e-6;
  auto plus = gradient(x0 + v * eps).to_vec<double>();
  auto minus = gradient(x0 - v * eps).to_vec<double>();
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(hvp[i], (plus[i] - minus[i]) / (2 * eps), 1e-6);
}

}  // namespace
}  // namespace ember
