// Optimizer records (bit-exact round trips, resuming equals not stopping, validation errors),
// frozen parameters, parameter groups, clipping and accumulation helpers, schedule records.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>

#include "ember/optim.h"
#include "tests/optim/optim_fixture.h"

namespace ember::optim {
namespace {

namespace fs = std::filesystem;
using test::AD;
using test::Net;
using test::Problem;

fs::path temp_dir() {
  fs::path d = fs::temp_directory_path() / ("ember_optim_" + std::to_string(::getpid()));
  fs::create_directories(d);
  return d;
}

/// One optimizer step on the full batch (a closure for L-BFGS).
template <class Opt>
void train_step(Opt& opt, Net<AD>& net, const Problem& pb, double lr) {
  if constexpr (std::is_same_v<Opt, Lbfgs<AD>>) {
    opt.step(lr, net, [&](const Net<AD>& m) { return pb.loss(m); });
  } else {
    auto grads = GradientsParams<AD>::from_grads(pb.loss(net).backward(), net);
    opt.step(lr, net, grads);
  }
}

/// `to`'s parameters set to `from`'s values (by path), keeping `to`'s ids.
void copy_values(const Net<AD>& from, Net<AD>& to) {
  std::map<std::string, TensorData> vals;
  nn::for_each_param(
      from, [&](const std::string& path, const auto& p) { vals[path] = p.val().to_data(); });
  nn::for_each_param(to, [&](const std::string& path, auto& p) {
    using V = typename std::remove_cvref_t<decltype(p)>::Value;
    p.set(V::from_data(vals.at(path)));
  });
}

std::vector<TensorData> datas(const Net<AD>& net) {
  std::vector<TensorData> out;
  nn::for_each_param(net,
                     [&](const std::string&, const auto& p) { out.push_back(p.val().to_data()); });
  return out;
}

void expect_same_record(const Record& a, const Record& b) {
  EXPECT_EQ(a.metadata, b.metadata);
  ASSERT_EQ(a.tensors.size(), b.tensors.size());
  std::map<std::string, TensorData> bm(b.tensors.begin(), b.tensors.end());
  for (const auto& [name, data] : a.tensors) {
    ASSERT_TRUE(bm.count(name)) << name;
    EXPECT_TRUE(bm.at(name) == data) << name << " differs";  // dtype, shape and bytes
  }
}

/// Trains 3 steps, saves, "restarts" (a new module with new parameter ids holding the saved
/// values, a new optimizer loading the file), then trains both 4 more steps: the record must
/// read back bit for bit and the resumed run must equal the uninterrupted one exactly.
template <class Make>
void round_trip_and_resume(Make make, DType dt = DType::F32) {
  Problem pb(dt);
  Net<AD> net = pb.net();
  auto opt = make();
  const double lr = 0.05;
  for (int i = 0; i < 3; ++i) train_step(opt, net, pb, lr);

  fs::path file = temp_dir() / "opt.safetensors";
  save(opt, net, file);
  Net<AD> net2 = pb.net();
  ASSERT_NE(net2.fc1.weight.id(), net.fc1.weight.id());
  copy_values(net, net2);
  auto opt2 = make();
  load(opt2, net2, file);
  expect_same_record(opt.to_record(net), opt2.to_record(net2));

  for (int i = 0; i < 4; ++i) {
    train_step(opt, net, pb, lr);
    train_step(opt2, net2, pb, lr);
  }
  auto a = datas(net), b = datas(net2);
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i)
    EXPECT_TRUE(a[i] == b[i]) << test::param_path(i) << " differs after resuming";
  expect_same_record(opt.to_record(net), opt2.to_record(net2));
  fs::remove_all(temp_dir());
}

TEST(Record, RoundTripAndResumeSgd) {
  round_trip_and_resume(
      [] { return SgdConfig{}.with_momentum(0.9).with_nesterov(true).init<AD>(); });
}
TEST(Record, RoundTripAndResumeAdam) {
  round_trip_and_resume([] { return AdamConfig{}.with_amsgrad(true).init<AD>(); });
}
TEST(Record, RoundTripAndResumeAdamWWithGroupsAndClipping) {
  round_trip_and_resume([] {
    auto o = AdamWConfig{}.with_grad_clipping(GradientClipping::global_norm(0.3)).init<AD>();
    o.set_group("fc1", {.lr_scale = 0.5, .weight_decay = 0});
    return o;
  });
}
TEST(Record, RoundTripAndResumeRmsProp) {
  round_trip_and_resume(
      [] { return RmsPropConfig{}.with_centered(true).with_momentum(0.5).init<AD>(); });
}
TEST(Record, RoundTripAndResumeAdaGrad) {
  round_trip_and_resume([] { return AdaGradConfig{}.with_lr_decay(0.1).init<AD>(); });
}
TEST(Record, RoundTripAndResumeAdan) {
  round_trip_and_resume([] { return AdanConfig{}.with_weight_decay(0.02).init<AD>(); });
}
TEST(Record, RoundTripAndResumeMuon) {
  round_trip_and_resume([] { return MuonConfig{}.init<AD>(); }, DType::F64);
}
TEST(Record, RoundTripAndResumeLbfgs) {
  round_trip_and_resume(
      [] { return LbfgsConfig{}.with_max_iter(3).with_history_size(2).init<AD>(); });
  round_trip_and_resume([] {
    return LbfgsConfig{}.with_max_iter(3).with_line_search(LineSearch::StrongWolfe).init<AD>();
  });
}

TEST(Record, NamesStatesByParameterPath) {
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  auto opt = AdamConfig{}.init<AD>();
  for (int i = 0; i < 2; ++i) train_step(opt, net, pb, 0.01);
  Record r = opt.to_record(net);
  EXPECT_EQ(r.metadata.at("optimizer"), "Adam");
  EXPECT_EQ(r.metadata.at("fc1.weight.step"), "2");
  EXPECT_EQ(r.metadata.at("temperature.step"), "2");
  EXPECT_FALSE(r.metadata.count("unused.step")) << "a parameter without gradient has no state";
  EXPECT_TRUE(r.contains("fc1.weight.exp_avg"));
  EXPECT_TRUE(r.contains("fc2.bias.exp_avg_sq"));
  EXPECT_EQ(r.at("fc1.weight.exp_avg").shape(), Shape({3, 4}));
  EXPECT_EQ(r.at("temperature.exp_avg").shape(), Shape{});
  EXPECT_FALSE(r.contains("unused.exp_avg"));
  EXPECT_EQ(r.tensors.size(), 10u);
  auto cfg = nn::config_from_json<AdamConfig>(r.metadata.at("config"));
  EXPECT_EQ(cfg, opt.config());
}

/// The message of the ValueError `fn` throws ("" if none).
template <class Fn>
std::string error_of(Fn&& fn) {
  try {
    fn();
  } catch (const ValueError& e) {
    return e.what();
  }
  return "";
}

TEST(Record, MismatchesAreListedInOneError) {
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  auto opt = AdamConfig{}.init<AD>();
  for (int i = 0; i < 2; ++i) train_step(opt, net, pb, 0.01);
  Record good = opt.to_record(net);

  Record bad = good;
  for (auto& [name, data] : bad.tensors) {
    if (name == "fc1.weight.exp_avg")
      data = TensorData::from<float>(std::vector<float>(12), {4, 3});
    if (name == "fc2.bias.exp_avg") name = "fc9.bias.exp_avg";
    if (name == "temperature.exp_avg_sq") data = data.convert(DType::F64);
  }
  bad.tensors.emplace_back("fc1.bias.momentum_buffer", TensorData::from<float>({0, 0, 0, 0}, {4}));
  bad.metadata["fc2.weight.step"] = "seven";

  auto fresh = AdamConfig{}.init<AD>();
  train_step(fresh, net, pb, 0.01);
  Record before = fresh.to_record(net);
  std::string msg = error_of([&] { fresh.load_record(net, bad); });
  ASSERT_FALSE(msg.empty()) << "a bad record must not load";
  for (const char* part :
       {"'fc1.weight.exp_avg' has shape [4, 3], the parameter [3, 4]",
        "'fc9.bias.exp_avg': the model has no parameter 'fc9.bias'",
        "'temperature.exp_avg_sq' has dtype f64, the parameter f32",
        "'fc1.bias.momentum_buffer': Adam keeps no state 'momentum_buffer'",
        "'fc2.weight.step': bad step count 'seven'", "'fc2.bias.exp_avg' is missing"})
    EXPECT_NE(msg.find(part), std::string::npos) << "missing \"" << part << "\" in:\n" << msg;
  expect_same_record(before, fresh.to_record(net));  // unchanged on error

  // another optimizer's record, another configuration's slots
  auto sgd = SgdConfig{}.with_momentum(0.9).init<AD>();
  EXPECT_NE(error_of([&] { sgd.load_record(net, good); }).find("record of optimizer 'Adam'"),
            std::string::npos);
  auto ams = AdamConfig{}.with_amsgrad(true).init<AD>();
  EXPECT_NE(
      error_of([&] { ams.load_record(net, good); }).find("'fc1.weight.max_exp_avg_sq' is missing"),
      std::string::npos);
  // a model whose layer has another shape
  Net<AD> wide = pb.net();
  wide.fc2.bias = nn::Param<Tensor<AD, 1>>(Tensor<AD, 1>::zeros({3}));
  EXPECT_NE(error_of([&] {
              fresh.load_record(wide, good);
            }).find("'fc2.bias.exp_avg' has shape [2], the parameter [3]"),
            std::string::npos);
  // the good record still loads
  EXPECT_NO_THROW(fresh.load_record(net, good));
  expect_same_record(good, fresh.to_record(net));
}

TEST(Record, LbfgsRecordMustCoverTheSameParameters) {
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  auto opt = LbfgsConfig{}.with_max_iter(2).init<AD>();
  train_step(opt, net, pb, 0.1);
  Record r = opt.to_record(net);
  EXPECT_TRUE(r.contains("lbfgs/d"));
  EXPECT_EQ(r.at("lbfgs/d").shape(), Shape({12 + 4 + 8 + 2 + 1 + 3}));
  auto frozen = nn::freeze(net, "fc1");
  auto other = LbfgsConfig{}.init<AD>();
  std::string msg = error_of([&] { other.load_record(frozen, r); });
  EXPECT_NE(msg.find("it covers parameters [fc1.weight,fc1.bias,fc2.weight"), std::string::npos)
      << msg;
  EXPECT_NE(msg.find("'lbfgs/d' has shape [30], the parameters flatten to [14]"), std::string::npos)
      << msg;
  auto adam = AdamConfig{}.init<AD>();
  EXPECT_NE(error_of([&] { adam.load_record(net, r); }).find("unknown metadata key 'lbfgs/"),
            std::string::npos);
}

TEST(Record, BadFilesRaiseValueError) {
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  auto opt = AdamConfig{}.init<AD>();
  fs::path file = temp_dir() / "missing.safetensors";
  EXPECT_THROW(load(opt, net, file), ValueError);
  fs::remove_all(temp_dir());
}

// ---- what a step touches -------------------------------------------------------------------

TEST(Step, SkipsFrozenAndGradientlessParameters) {
  Problem pb(DType::F32);
  Net<AD> net = nn::freeze(pb.net(), "fc1");
  auto before = test::values(net);
  auto grads = GradientsParams<AD>::from_grads(pb.loss(net).backward(), net);
  EXPECT_FALSE(grads.contains(net.fc1.weight.id()));
  EXPECT_FALSE(grads.contains(net.unused.id()));
  EXPECT_EQ(grads.size(), 3u);
  auto opt = AdamConfig{}.init<AD>();
  opt.step(0.01, net, grads);
  auto after = test::values(net);
  EXPECT_EQ(after[0], before[0]) << "frozen fc1.weight moved";
  EXPECT_EQ(after[1], before[1]) << "frozen fc1.bias moved";
  EXPECT_NE(after[2], before[2]);
  EXPECT_EQ(after[5], before[5]) << "a parameter without gradient moved";
  EXPECT_EQ(opt.state(net.fc1.weight.id()), nullptr);
  EXPECT_EQ(opt.state(net.unused.id()), nullptr);
  ASSERT_NE(opt.state(net.fc2.weight.id()), nullptr);
  EXPECT_EQ(opt.state(net.fc2.weight.id())->step, 1);
  EXPECT_FALSE(net.fc1.weight.trainable());

  // even with a gradient supplied for it, a frozen parameter is not updated
  grads.set<2>(net.fc1.weight.id(), Tensor<Dispatch, 2>::ones({3, 4}));
  opt.step(0.01, net, grads);
  EXPECT_EQ(test::values(net)[0], before[0]);

  // L-BFGS moves only the trainable parameters too
  auto lb = LbfgsConfig{}.with_max_iter(3).init<AD>();
  train_step(lb, net, pb, 0.1);
  auto after_lb = test::values(net);
  EXPECT_EQ(after_lb[0], before[0]);
  EXPECT_EQ(after_lb[5], before[5]);
  EXPECT_NE(after_lb[3], after[3]);
}

TEST(Step, KeepsIdsAndMakesFreshLeaves) {
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  const nn::ParamId id = net.fc1.weight.id();
  auto opt = SgdConfig{}.init<AD>();
  for (int i = 0; i < 3; ++i) {
    train_step(opt, net, pb, 0.1);
    EXPECT_EQ(net.fc1.weight.id(), id);
    EXPECT_TRUE(net.fc1.weight.val().is_require_grad());
  }
  auto grads = GradientsParams<AD>::from_grads(pb.loss(net).backward(), net);
  EXPECT_TRUE(grads.contains(id));
  EXPECT_THROW(opt.step(-1.0, net, grads), ValueError);
}

TEST(Step, SameUpdatesAsTheCpuBackend) {
  // nothing in the optimizers is device-specific: the suite's device (through Dispatch) gives
  // the values Autodiff<Cpu> gives, to f32 rounding
  using DB = Autodiff<Cpu>;
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  Net<DB> dnet = nn::to_backend<DB>(net);
  const auto& p = test::goldens()["problem"];
  auto x = Tensor<DB, 2>::from_data(test::golden_tensor<2>(p["x"], DType::F32).to_data());
  auto y = Tensor<DB, 2>::from_data(test::golden_tensor<2>(p["y"], DType::F32).to_data());
  auto opt = MuonConfig{}.init<AD>();
  auto dopt = MuonConfig{}.init<DB>();
  for (int i = 0; i < 3; ++i) {
    train_step(opt, net, pb, 0.02);
    auto loss = (dnet.forward(x) - y).square().mean();
    auto grads = GradientsParams<DB>::from_grads(loss.backward(), dnet);
    dopt.step(0.02, dnet, grads);
  }
  auto a = test::values(net), b = test::values(dnet);
  for (size_t i = 0; i < a.size(); ++i)
    for (size_t j = 0; j < a[i].size(); ++j) EXPECT_NEAR(a[i][j], b[i][j], 1e-5);
}

TEST(Groups, LongestPrefixWinsAndPrefixesMatchWholeNames) {
  auto opt = SgdConfig{}.with_weight_decay(0.5).init<AD>();
  opt.set_group(
      "fc", {.lr_scale = 7, .weight_decay = {}});  // matches a module named "fc" only, not "fc1"
  opt.set_group("fc1", {.lr_scale = 0.1, .weight_decay = {}});
  opt.set_group("fc1.bias", {.lr_scale = 0.2, .weight_decay = 0});
  EXPECT_EQ(opt.group_for("fc1.weight").lr_scale, 0.1);
  EXPECT_FALSE(opt.group_for("fc1.weight").weight_decay.has_value());
  EXPECT_EQ(opt.group_for("fc1.bias").lr_scale, 0.2);
  EXPECT_EQ(opt.group_for("fc1.bias").weight_decay, 0.0);
  EXPECT_EQ(opt.group_for("fc2.weight").lr_scale, 1.0);
  EXPECT_EQ(opt.group_for("fc.weight").lr_scale, 7.0);
  opt.set_group("fc1", {.lr_scale = 0.3, .weight_decay = {}});  // replaces
  EXPECT_EQ(opt.group_for("fc1.weight").lr_scale, 0.3);

  // lr_scale 0 holds a group still (and weight decay 0 keeps it from shrinking)
  Problem pb(DType::F32);
  Net<AD> net = pb.net();
  auto before = test::values(net);
  auto sgd = SgdConfig{}.with_weight_decay(0.5).init<AD>();
  sgd.set_group("fc2", {.lr_scale = 0, .weight_decay = 0});
  train_step(sgd, net, pb, 0.1);
  auto after = test::values(net);
  EXPECT_EQ(after[2], before[2]);
  EXPECT_EQ(after[3], before[3]);
  EXPECT_NE(after[0], before[0]);

  auto lb = LbfgsConfig{}.init<AD>();
  EXPECT_THROW(lb.set_group("fc1", {}), ValueError);
}

// ---- gradients -----------------------------------------------------------------------------

GradientsParams<AD> sample_grads() {
  GradientsParams<AD> g;
  g.set<2>(1, Tensor<Dispatch, 2>::from_values<float>({3, -4, 0, 12}, {2, 2}));  // norm 13
  g.set<1>(2, Tensor<Dispatch, 1>::from_values<float>({0.3f, -0.4f}, {2}));      // norm 0.5
  g.set<0>(3, Tensor<Dispatch, 0>::from_values<float>({-2}, Shape{}));           // norm 2
  return g;
}

TEST(Clipping, ValueNormAndGlobalNorm) {
  auto g = sample_grads();
  clip_grad_value(g, 1.0);
  EXPECT_EQ(g.get<2>(1)->to_vec<float>(), (std::vector<float>{1, -1, 0, 1}));
  EXPECT_EQ(g.get<0>(3)->to_vec<float>(), (std::vector<float>{-1}));

  g = sample_grads();
  clip_grad_norm(g, 1.0);  // each tensor on its own: 13 -> 1, 0.5 stays, 2 -> 1
  EXPECT_NEAR(g.norm(1).into_scalar(), 1.0, 1e-5);
  EXPECT_NEAR(g.norm(2).into_scalar(), 0.5, 1e-7);
  EXPECT_NEAR(g.norm(3).into_scalar(), 1.0, 1e-5);

  g = sample_grads();
  const double total = std::sqrt(169 + 0.25 + 4);
  EXPECT_NEAR(g.global_norm().into_scalar(), total, 1e-5);
  auto before = clip_grad_global_norm(g, 2.0);
  EXPECT_NEAR(before.into_scalar(), total, 1e-5);
  EXPECT_NEAR(g.global_norm().into_scalar(), 2.0, 1e-5);
  // directions are kept: every gradient scaled by the same factor
  EXPECT_NEAR(g.get<1>(2)->to_vec<float>()[0], 0.3 * 2.0 / total, 1e-6);
  // below the threshold nothing changes
  auto small = sample_grads();
  clip_grad_global_norm(small, 100.0);
  EXPECT_EQ(small.get<2>(1)->to_vec<float>(), (std::vector<float>{3, -4, 0, 12}));

  EXPECT_THROW(clip_grad_value(g, -1.0), ValueError);
  EXPECT_THROW(clip_grad_global_norm(g, -1.0), ValueError);
  GradientsParams<AD> none;
  EXPECT_EQ(none.global_norm().into_scalar(), 0.0f);
  EXPECT_NO_THROW(clip_grad_global_norm(none, 1.0));
}

TEST(Clipping, IsAConfigField) {
  auto c = AdamWConfig{}.with_grad_clipping(GradientClipping::norm(0.5));
  auto back = nn::config_from_json<AdamWConfig>(nn::config_json(c));
  EXPECT_EQ(back, c);
  EXPECT_EQ(back.grad_clipping.kind, ClipKind::Norm);
  EXPECT_NE(nn::config_json(c).find("\"kind\":\"norm\""), std::string::npos);
  EXPECT_FALSE(AdamWConfig{}.grad_clipping.enabled());
}

TEST(Gradients, AccumulateAddScale) {
  GradientsAccumulator<AD> acc;
  acc.accumulate(sample_grads());
  acc.accumulate(sample_grads());
  GradientsParams<AD> extra;
  extra.set<1>(9, Tensor<Dispatch, 1>::ones({3}));
  acc.accumulate(extra);
  EXPECT_EQ(acc.count(), 3);
  auto sum = acc.grads();
  EXPECT_TRUE(acc.empty());
  EXPECT_EQ(sum.size(), 4u);
  EXPECT_EQ(sum.get<2>(1)->to_vec<float>(), (std::vector<float>{6, -8, 0, 24}));
  EXPECT_EQ(sum.get<1>(9)->to_vec<float>(), (std::vector<float>{1, 1, 1}));
  sum.scale(0.5);
  EXPECT_EQ(sum.get<2>(1)->to_vec<float>(), (std::vector<float>{3, -4, 0, 12}));
  EXPECT_EQ(sum.ids(), (std::vector<nn::ParamId>{1, 2, 3, 9}));
  EXPECT_THROW(sum.get<1>(1), ShapeError);  // stored with rank 2
  EXPECT_TRUE(sum.remove(9));
  EXPECT_FALSE(sum.get<1>(9).has_value());
}

TEST(Lbfgs, ClosureMayReturnLossAndGradients) {
  Problem pb(DType::F64);
  Net<AD> a = pb.net(), b = pb.net();
  auto oa = LbfgsConfig{}.with_max_iter(4).init<AD>();
  auto ob = LbfgsConfig{}.with_max_iter(4).init<AD>();
  for (int i = 0; i < 3; ++i) {
    double la = oa.step(0.5, a, [&] { return pb.loss(a); });
    double lb = ob.step(0.5, b, [&] {
      auto loss = pb.loss(b);
      double v = loss.into_scalar<double>();
      return LossAndGrads<AD>{v, GradientsParams<AD>::from_grads(loss.backward(), b)};
    });
    EXPECT_EQ(la, lb);
  }
  EXPECT_EQ(test::values(a), test::values(b));
  EXPECT_EQ(oa.iterations(), 12);
}

TEST(Configs, ValidateAndRoundTrip) {
  EXPECT_THROW(SgdConfig{}.with_nesterov(true).init<AD>(), ValueError);
  EXPECT_THROW(SgdConfig{}.with_momentum(0.9).with_dampening(0.1).with_nesterov(true).init<AD>(),
               ValueError);
  EXPECT_THROW(AdamConfig{}.with_beta1(1.0).init<AD>(), ValueError);
  EXPECT_THROW(LbfgsConfig{}.with_max_iter(0).init<AD>(), ValueError);
  EXPECT_THROW(MuonConfig{}.with_momentum(1.5).init<AD>(), ValueError);
  auto m = MuonConfig{}.with_adjust_lr(MuonLrAdjust::MatchRmsAdamW).with_adamw_params({"head"});
  EXPECT_EQ(nn::config_from_json<MuonConfig>(nn::config_json(m)), m);
  auto l = LbfgsConfig{}.with_line_search(LineSearch::StrongWolfe);
  EXPECT_EQ(nn::config_from_json<LbfgsConfig>(nn::config_json(l)), l);
  // PyTorch's defaults
  EXPECT_EQ(AdamWConfig{}.weight_decay, 0.01);
  EXPECT_EQ(RmsPropConfig{}.alpha, 0.99);
  EXPECT_EQ(AdaGradConfig{}.eps, 1e-10);
  EXPECT_EQ(LbfgsConfig{}.init<AD>().max_eval(), 25);
}

// ---- schedules -----------------------------------------------------------------------------

TEST(Schedules, RecordRestoresThePosition) {
  SequentialLr s({3}, LinearLrConfig{.lr = 0.1, .start_factor = 0.5, .total_iters = 3}.init(),
                 CosineAnnealingLrConfig{.lr = 0.1, .num_iters = 10}.init());
  for (int i = 0; i < 5; ++i) s.step();
  SchedulerRecord r = s.to_record();
  EXPECT_EQ(r.at("step"), "5");
  EXPECT_EQ(r.at("scheduler"), "Sequential[3](Linear,CosineAnnealing)");
  SequentialLr t({3}, LinearLrConfig{.lr = 0.1, .start_factor = 0.5, .total_iters = 3}.init(),
                 CosineAnnealingLrConfig{.lr = 0.1, .num_iters = 10}.init());
  t.load_record(r);
  for (int i = 0; i < 10; ++i) EXPECT_EQ(s.step(), t.step());

  auto lin = LinearLrConfig{}.init();
  EXPECT_THROW(lin.load_record(r), ValueError);
  SchedulerRecord bad{{"scheduler", "Linear"}, {"step", "-2"}};
  EXPECT_THROW(lin.load_record(bad), ValueError);
}

TEST(Schedules, CosineHoldsMinimumAfterItsLength) {
  auto c =
      CosineAnnealingLrConfig{
          .lr = 0.1, .num_iters = 8, .min_lr = 0.01, .warmup_iters = 2, .warmup_start_factor = 0}
          .init();
  EXPECT_EQ(c.lr_at(0), 0.0);
  EXPECT_DOUBLE_EQ(c.lr_at(1), 0.05);
  EXPECT_DOUBLE_EQ(c.lr_at(2), 0.1);
  EXPECT_DOUBLE_EQ(c.lr_at(5), 0.01 + 0.09 * 0.5);
  for (int i = 8; i < 20; ++i) EXPECT_EQ(c.lr_at(i), 0.01);
}

TEST(Schedules, ValidateConfigs) {
  EXPECT_THROW(LinearLrConfig{.total_iters = 0}.init(), ValueError);
  EXPECT_THROW((CosineAnnealingLrConfig{.num_iters = 5, .warmup_iters = 5}.init()), ValueError);
  EXPECT_THROW(SequentialLr({}, ConstantLrConfig{}.init(), ConstantLrConfig{}.init()), ValueError);
  EXPECT_THROW(SequentialLr({4, 2}, ConstantLrConfig{}.init(), ConstantLrConfig{}.init(),
                            ConstantLrConfig{}.init()),
               ValueError);
  EXPECT_THROW(StepLrConfig{.step_size = 0}.init(), ValueError);
  auto c = NoamLrConfig{.lr = 1, .warmup_steps = 4, .d_model = 16};
  EXPECT_EQ(nn::config_from_json<NoamLrConfig>(nn::config_json(c)), c);
}

}  // namespace
}  // namespace ember::optim
