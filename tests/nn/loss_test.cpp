// Losses against PyTorch: every case of tests/nn/loss_goldens.json (written by
// tools/gen_loss_goldens.py) runs on Autodiff<Dispatch>, where the loss and the gradients of its
// float inputs must match PyTorch's, and on Dispatch (a plain backend) for the values, both on
// the suite's device (support/suite.h). Then argument errors, config JSON, and the CTC gradient
// against finite differences.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/nn/loss.h"
#include "suite.h"
#include "tests/ops/golden.h"

namespace ember::nn {
namespace {

using nlohmann::json;

const json& goldens() {
  static const json j = [] {
    std::string path = test::data_file(EMBER_LOSS_GOLDENS);
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot open " + path);
    return json::parse(f);
  }();
  return j;
}

const json& golden(size_t i) { return goldens().at("cases").at(i); }

template <Backend B>
struct Inputs {
  std::map<std::string, typename B::Handle> h;
  template <int D, TensorKind K = Float>
  Tensor<B, D, K> get(const std::string& k) const {
    return Tensor<B, D, K>(h.at(k));
  }
  size_t rank(const std::string& k) const { return B::meta(h.at(k)).shape.rank(); }
  bool is_int_(const std::string& k) const { return is_int(B::meta(h.at(k)).dtype); }
};

// f.template operator()<D>() for the D in Ds equal to `rank`.
template <int... Ds, class F>
auto by_rank(size_t rank, F&& f) {
  decltype(f.template operator()<std::get<0>(std::tuple{Ds...})>()) out;
  bool done = ((rank == Ds ? (out = f.template operator()<Ds>(), true) : false) || ...);
  if (!done) throw std::runtime_error("rank " + std::to_string(rank) + " not wired");
  return out;
}

// The loss of case `c` on inputs `in`: rank 0 for mean/sum, per element for none.
template <Backend B>
typename B::Handle run_loss(const json& c, const Inputs<B>& in) {
  using H = typename B::Handle;
  const std::string loss = c.at("loss");
  const std::string cfg = c.at("config").dump();
  const bool none = c.at("config").value("reduction", "mean") == "none";
  auto out = [&](const auto& l, const auto&... args) -> H {
    if (none) return l.forward_no_reduction(args...).handle();
    return l.forward(args...).handle();
  };
  if (loss == "cross_entropy") {
    auto l = config_from_json<CrossEntropyLossConfig>(cfg).init();
    return by_rank<2, 3, 4>(in.rank("input"), [&]<int D>() -> H {
      auto x = in.template get<D>("input");
      if (in.is_int_("target")) return out(l, x, in.template get<D - 1, Int>("target"));
      return out(l, x, in.template get<D>("target"));
    });
  }
  auto pair = [&](const auto& l) {
    return by_rank<0, 1, 2, 3>(in.rank("input"), [&]<int D>() -> H {
      return out(l, in.template get<D>("input"), in.template get<D>("target"));
    });
  };
  if (loss == "binary_cross_entropy")
    return pair(config_from_json<BinaryCrossEntropyLossConfig>(cfg).init());
  if (loss == "mse") return pair(config_from_json<MseLossConfig>(cfg).init());
  if (loss == "huber") return pair(config_from_json<HuberLossConfig>(cfg).init());
  if (loss == "smooth_l1") return pair(config_from_json<SmoothL1LossConfig>(cfg).init());
  if (loss == "kl_div") return pair(config_from_json<KLDivLossConfig>(cfg).init());
  if (loss == "cosine_embedding") {
    auto l = config_from_json<CosineEmbeddingLossConfig>(cfg).init();
    return by_rank<1, 2>(in.rank("input1"), [&]<int D>() -> H {
      return out(l, in.template get<D>("input1"), in.template get<D>("input2"),
                 in.template get<D - 1, Int>("target"));
    });
  }
  if (loss == "margin_ranking") {
    auto l = config_from_json<MarginRankingLossConfig>(cfg).init();
    return by_rank<1, 2>(in.rank("input1"), [&]<int D>() -> H {
      return out(l, in.template get<D>("input1"), in.template get<D>("input2"),
                 in.template get<D, Int>("target"));
    });
  }
  if (loss == "triplet_margin") {
    auto l = config_from_json<TripletMarginLossConfig>(cfg).init();
    return by_rank<1, 2>(in.rank("anchor"), [&]<int D>() -> H {
      return out(l, in.template get<D>("anchor"), in.template get<D>("positive"),
                 in.template get<D>("negative"));
    });
  }
  if (loss == "nll") {
    auto l = config_from_json<NllLossConfig>(cfg).init();
    return by_rank<2, 3>(in.rank("input"), [&]<int D>() -> H {
      return out(l, in.template get<D>("input"), in.template get<D - 1, Int>("target"));
    });
  }
  if (loss == "l1") return pair(config_from_json<L1LossConfig>(cfg).init());
  if (loss == "poisson_nll") return pair(config_from_json<PoissonNllLossConfig>(cfg).init());
  if (loss == "gaussian_nll") {
    auto l = config_from_json<GaussianNllLossConfig>(cfg).init();
    return by_rank<1, 2>(in.rank("input"), [&]<int D>() -> H {
      return out(l, in.template get<D>("input"), in.template get<D>("target"),
                 in.template get<D>("var"));
    });
  }
  if (loss == "hinge_embedding") {
    auto l = config_from_json<HingeEmbeddingLossConfig>(cfg).init();
    return by_rank<1, 2>(in.rank("input"), [&]<int D>() -> H {
      return out(l, in.template get<D>("input"), in.template get<D, Int>("target"));
    });
  }
  if (loss == "multi_margin")
    return out(config_from_json<MultiMarginLossConfig>(cfg).init(), in.template get<2>("input"),
               in.template get<1, Int>("target"));
  if (loss == "multilabel_soft_margin")
    return out(config_from_json<MultiLabelSoftMarginLossConfig>(cfg).init(),
               in.template get<2>("input"), in.template get<2>("target"));
  if (loss == "binary_cross_entropy_weighted")
    return out(config_from_json<BinaryCrossEntropyLossConfig>(cfg).init(),
               in.template get<2>("input"), in.template get<2>("target"),
               in.template get<2>("weight"));
  if (loss == "ctc") {
    auto l = config_from_json<CtcLossConfig>(cfg).init();
    auto lp = activation::log_softmax(in.template get<3>("logits"), 2);
    return out(l, lp, in.template get<2, Int>("targets"), in.template get<1, Int>("input_lengths"),
               in.template get<1, Int>("target_lengths"));
  }
  throw std::runtime_error("unknown loss " + loss);
}

template <Backend B>
Inputs<B> load(const json& c) {
  Inputs<B> in;
  for (const auto& [k, v] : c.at("inputs").items())
    in.h.emplace(k, B::from_data(test::golden_tensor(v), test::suite_device()));
  return in;
}

void expect_close(const TensorData& got, const TensorData& want, const json& c,
                  const std::string& what) {
  std::string why;
  EXPECT_TRUE(got.all_close(want, c.at("rtol").get<double>(), c.at("atol").get<double>(), &why))
      << c.at("id").get<std::string>() << " " << what << ": " << why << "\n got "
      << format_tensor(got) << "\nwant " << format_tensor(want);
}

std::vector<size_t> all_cases() {
  std::vector<size_t> v(goldens().at("cases").size());
  for (size_t i = 0; i < v.size(); ++i) v[i] = i;
  return v;
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = golden(info.param).at("id").get<std::string>();
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

class LossGolden : public ::testing::TestWithParam<size_t> {};

// Values and gradients on Autodiff<Dispatch>.
TEST_P(LossGolden, AutodiffValuesAndGradients) {
  using B = Autodiff<Dispatch>;
  const json& c = golden(GetParam());
  Inputs<B> in = load<B>(c);
  std::map<std::string, B::Handle> leaves;
  if (c.contains("grads"))
    for (const auto& [k, g] : c.at("grads").items()) in.h[k] = leaves[k] = B::require_grad(in.h[k]);
  B::Handle out = run_loss<B>(c, in);
  expect_close(B::to_data(out), test::golden_tensor(c.at("expected")), c, "value");
  if (!c.contains("grads")) return;
  B::Handle seed = out;
  if (B::meta(out).shape.rank() > 0) {  // d/dx of sum(out * grad_out)
    auto gout = B::from_data(test::golden_tensor(c.at("grad_out")), test::suite_device());
    auto prod = ember::detail::Dyn<B>(out) * ember::detail::Dyn<B>(gout);
    seed = prod.reduce(OpCode::Sum, {}, false).handle();
  }
  auto grads = B::backward(seed);
  for (const auto& [k, want] : c.at("grads").items()) {
    const Dispatch::Handle* g = B::grad(grads, leaves.at(k));
    ASSERT_NE(g, nullptr) << c.at("id") << ": no gradient for " << k;
    expect_close(Dispatch::to_data(*g), test::golden_tensor(want), c, "gradient of " + k);
  }
}

// Values on Dispatch, a backend with no autodiff.
TEST_P(LossGolden, DispatchValues) {
  const json& c = golden(GetParam());
  auto out = run_loss<Dispatch>(c, load<Dispatch>(c));
  expect_close(Dispatch::to_data(out), test::golden_tensor(c.at("expected")), c, "value");
}

INSTANTIATE_TEST_SUITE_P(PyTorch, LossGolden, ::testing::ValuesIn(all_cases()), case_name);

// ---- errors -------------------------------------------------------------------------------

template <class E, class F>
void expect_error(F f, const std::string& prefix, const std::vector<std::string>& needles) {
  try {
    f();
    ADD_FAILURE() << "no error; wanted " << prefix;
  } catch (const E& e) {
    std::string m = e.what();
    EXPECT_EQ(m.rfind(prefix, 0), 0u) << m;
    for (const auto& n : needles) EXPECT_NE(m.find(n), std::string::npos) << m << " lacks " << n;
  } catch (const std::exception& e) {
    ADD_FAILURE() << "wrong error type: " << e.what();
  }
}

using C2 = Tensor<Dispatch, 2>;
using C1 = Tensor<Dispatch, 1>;
using I1 = Tensor<Dispatch, 1, Int>;

// A bad class target is found by the gather and told in the loss's terms; the ignored index
// and class weights do not change that.
TEST(LossErrors, NllTargets) {
  auto logp = C2::zeros({3, 4});
  auto nll = NllLossConfig{}.with_weights({1, 2, 1, 1}).init();
  expect_error<IndexError>(
      [&] {
        nll.forward(logp, I1::from_values<int64_t>({0, 4, -100}, Shape{3}));
      },
      "[nll_loss]", {"class target 4", "4 classes"});
  EXPECT_NO_THROW(nll.forward(logp, I1::from_values<int64_t>({0, -100, 3}, Shape{3})));
}

TEST(LossErrors, CrossEntropy) {
  auto x = C2::zeros({4, 3});
  auto ce = CrossEntropyLossConfig{}.init();
  expect_error<ShapeError>([&] { ce.forward(x, I1::zeros({5})); }, "[cross_entropy]",
                           {"[4, 3]", "[5]"});
  expect_error<IndexError>(
      [&] {
        ce.forward(x, I1::from_values<int64_t>({0, 1, 3, 2}, Shape{4}));
      },
      "[cross_entropy]", {"class target 3", "[4, 3]"});
  expect_error<IndexError>(
      [&] {
        ce.forward(x, I1::from_values<int64_t>({0, -1, 1, 2}, Shape{4}));
      },
      "[cross_entropy]", {"class target -1"});
  expect_error<ValueError>([] { CrossEntropyLossConfig{}.with_smoothing(-0.1).init(); },
                           "[cross_entropy]", {"smoothing"});
  expect_error<ValueError>([] { CrossEntropyLossConfig{}.with_smoothing(1.5).init(); },
                           "[cross_entropy]", {"smoothing"});
  expect_error<ShapeError>(
      [&] {
        CrossEntropyLossConfig{}.with_weights({1, 2}).init().forward(x, I1::zeros({4}));
      },
      "[cross_entropy]", {"2 values", "3 classes", "[4, 3]"});
  expect_error<ShapeError>(
      [&] {
        ce.forward(x, C2::zeros({4, 2}));
      },
      "[cross_entropy]", {"[4, 3]", "[4, 2]"});
  expect_error<ValueError>(
      [&] {
        CrossEntropyLossConfig{}.with_reduction(Reduction::None).init().forward(x, I1::zeros({4}));
      },
      "[cross_entropy]", {"forward_no_reduction"});
}

TEST(LossErrors, ElementwiseLosses) {
  auto a = C2::zeros({2, 3}), b = C2::zeros({3, 2});
  expect_error<ShapeError>([&] { MseLossConfig{}.init().forward(a, b); }, "[mse_loss]",
                           {"[2, 3]", "[3, 2]"});
  expect_error<ShapeError>([&] { HuberLossConfig{}.init().forward(a, b); }, "[huber_loss]", {});
  expect_error<ShapeError>([&] { KLDivLossConfig{}.init().forward(a, b); }, "[kl_div]", {});
  expect_error<ValueError>([] { HuberLossConfig{}.with_delta(0).init(); }, "[huber_loss]",
                           {"delta"});
  expect_error<ValueError>([] { SmoothL1LossConfig{}.with_beta(-1).init(); }, "[smooth_l1_loss]",
                           {"beta"});
  auto bce = BinaryCrossEntropyLossConfig{}.init();
  expect_error<ValueError>([&] { bce.forward(a + 1.5f, a); }, "[binary_cross_entropy]",
                           {"[0, 1]", "logits"});
  expect_error<ValueError>([] { BinaryCrossEntropyLossConfig{}.with_pos_weights({2}).init(); },
                           "[binary_cross_entropy]", {"logits"});
  expect_error<ShapeError>(
      [&] {
        BinaryCrossEntropyLossConfig{}.with_logits(true).with_weights({1, 2}).init().forward(a, a);
      },
      "[binary_cross_entropy]", {"weights", "[2, 3]"});
}

TEST(LossErrors, MarginLosses) {
  auto a = C2::zeros({2, 3});
  auto cos = CosineEmbeddingLossConfig{}.init();
  expect_error<ValueError>(
      [&] {
        cos.forward(a, a, I1::from_values<int64_t>({1, 0}, Shape{2}));
      },
      "[cosine_embedding_loss]", {"-1 and 1"});
  expect_error<ShapeError>([&] { cos.forward(a, a, I1::ones({3})); }, "[cosine_embedding_loss]",
                           {"[2, 3]", "[3]"});
  expect_error<ShapeError>(
      [&] {
        MarginRankingLossConfig{}.init().forward(a, a, Tensor<Dispatch, 2, Int>::ones({2, 2}));
      },
      "[margin_ranking_loss]", {"[2, 3]", "[2, 2]"});
  expect_error<ShapeError>(
      [&] {
        TripletMarginLossConfig{}.init().forward(a, a, C2::zeros({2, 4}));
      },
      "[triplet_margin_loss]", {"[2, 3]", "[2, 4]"});
  expect_error<ValueError>([] { TripletMarginLossConfig{}.with_p(0).init(); },
                           "[triplet_margin_loss]", {"p"});
}

TEST(LossErrors, Ctc) {
  auto lp = activation::log_softmax(Tensor<Dispatch, 3>::zeros({5, 2, 4}), 2);
  auto tg = Tensor<Dispatch, 2, Int>::from_values<int64_t>({1, 2, 3, 0}, Shape{2, 2});
  auto ctc = CtcLossConfig{}.init();
  expect_error<ValueError>(
      [&] {
        ctc.forward(lp, tg, {6, 5}, {2, 1});
      },
      "[ctc_loss]", {"input length 6", "[5, 2, 4]"});
  expect_error<ValueError>(
      [&] {
        ctc.forward(lp, tg, {5, 5}, {2, 3});
      },
      "[ctc_loss]", {"target length 3"});
  expect_error<IndexError>(
      [&] {
        ctc.forward(lp, tg, {5, 5}, {2, 2});
      },
      "[ctc_loss]", {"target 0", "blank"});
  expect_error<ShapeError>([&] { ctc.forward(lp, tg, {5}, {2}); }, "[ctc_loss]",
                           {"1 input lengths", "2 samples"});
  expect_error<IndexError>(
      [&] {
        CtcLossConfig{}.with_blank(4).init().forward(lp, tg, {5, 5}, {2, 1});
      },
      "[ctc_loss]", {"blank 4"});
  expect_error<DTypeError>(
      [&] {
        ctc.forward(lp.cast(DType::F16), tg, {5, 5}, {2, 1});
      },
      "[ctc_loss]", {"f16"});
}

// ---- configs --------------------------------------------------------------------------------

TEST(LossConfig, JsonRoundTripAndStrictReduction) {
  auto c = CrossEntropyLossConfig{}.with_smoothing(0.1).with_weights({1, 2}).with_reduction(
      Reduction::Sum);
  auto s = config_json(c);
  EXPECT_NE(s.find("\"reduction\":\"sum\""), std::string::npos) << s;
  EXPECT_EQ(config_from_json<CrossEntropyLossConfig>(s), c);
  EXPECT_EQ(config_from_json<CrossEntropyLossConfig>("{}"), CrossEntropyLossConfig{});
  EXPECT_EQ(config_from_json<MseLossConfig>(R"({"reduction": "none"})").reduction, Reduction::None);
  EXPECT_THROW(config_from_json<MseLossConfig>(R"({"reduction": "avg"})"), ValueError);
  auto kl = config_from_json<KLDivLossConfig>(R"({"reduction": "batchmean", "log_target": true})");
  EXPECT_EQ(kl.reduction, KLDivReduction::BatchMean);
  EXPECT_NE(config_json(kl).find("\"batchmean\""), std::string::npos);
  EXPECT_THROW(config_from_json<KLDivLossConfig>(R"({"reduction": 1})"), ValueError);
  auto t = TripletMarginLossConfig{}.with_swap(true).with_p(1);
  EXPECT_EQ(config_from_json<TripletMarginLossConfig>(config_json(t)), t);
  EXPECT_EQ(CtcLossConfig{}.with_blank(3).init().config().blank, 3);
}

// ---- backends -------------------------------------------------------------------------------

// The same loss on a plain CPU tensor, through Dispatch and through Autodiff<Dispatch>.
TEST(LossBackends, SameValueOnEveryStack) {
  auto x = TensorData::from<float>({0.1f, -1.f, 2.f, 0.5f, 0.f, -0.3f}, Shape{2, 3});
  auto t = TensorData::from<int64_t>({2, 0}, Shape{2});
  auto ce = CrossEntropyLossConfig{}.with_smoothing(0.1).init();
  float cpu = ce.forward(C2::from_data(x), I1::from_data(t)).into_scalar();
  float dsp = ce.forward(Tensor<Dispatch, 2>::from_data(x), Tensor<Dispatch, 1, Int>::from_data(t))
                  .into_scalar();
  using AD = Autodiff<Dispatch>;
  auto xa = Tensor<AD, 2>::from_data(x).require_grad();
  auto l = ce.forward(xa, Tensor<AD, 1, Int>::from_data(t));
  EXPECT_FLOAT_EQ(cpu, dsp);
  EXPECT_FLOAT_EQ(cpu, l.into_scalar());
  auto grads = l.backward();
  auto g = xa.grad(grads)->to_vec<float>();
  float row = g[0] + g[1] + g[2];  // softmax gradients sum to 0 per row
  EXPECT_NEAR(row, 0.f, 1e-6f);
}

// The CTC gradient with respect to log_probs themselves (not the logits, which is what
// PyTorch's backward gives), against central differences in f64.
TEST(LossCtc, GradientOfLogProbsMatchesFiniteDifferences) {
  using B = Autodiff<Dispatch>;
  const int64_t t = 6, n = 2, c = 4;
  auto logits = Tensor<Dispatch, 3>::random({t, n, c}, Distribution::normal(0, 1),
                                            test::suite_device(), DType::F64);
  auto base = activation::log_softmax(logits, 2).to_vec<double>();
  auto tg = Tensor<Dispatch, 2, Int>::from_values<int64_t>({1, 1, 2, 3, 0, 0}, Shape{2, 3});
  std::vector<int64_t> il{6, 5}, tl{3, 1};
  auto ctc = CtcLossConfig{}.with_reduction(Reduction::Sum).init();
  auto lp = Tensor<B, 3>::from_values(base, Shape{t, n, c}, test::suite_device()).require_grad();
  auto grads = ctc.forward(lp, Tensor<B, 2, Int>::from_data(tg.to_data()), il, tl).backward();
  auto ad = lp.grad(grads)->to_vec<double>();
  auto f = [&](const std::vector<double>& v) {
    return ctc.forward(Tensor<Dispatch, 3>::from_values(v, Shape{t, n, c}), tg, il, tl)
        .into_scalar<double>();
  };
  for (size_t k = 0; k < base.size(); ++k) {
    auto up = base, down = base;
    up[k] += 1e-6;
    down[k] -= 1e-6;
    double num = (f(up) - f(down)) / 2e-6;
    EXPECT_NEAR(ad[k], num, 1e-6) << "element " << k;
  }
}

}  // namespace
}  // namespace ember::nn
