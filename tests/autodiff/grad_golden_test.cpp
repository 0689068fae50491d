// Gradients of every differentiable op in the golden file: against PyTorch's (computed by
// tools/gen_goldens.py) and against central finite differences in f64 (taken on the CPU
// backend), computed on the suite's device (support/suite.h).
#include <gtest/gtest.h>

#include "../ops/golden.h"
#include "suite.h"

namespace ember::test {
namespace {

using nlohmann::json;
using AD = Autodiff<Dispatch>;
using D = ember::detail::Dyn<AD>;

std::vector<size_t> grad_cases(bool fd_only) {
  std::vector<size_t> out;
  const auto& cases = golden_file().at("cases");
  for (size_t i = 0; i < cases.size(); ++i)
    if (cases[i].contains("grads") && (!fd_only || cases[i].value("fd", false))) out.push_back(i);
  return out;
}

std::string case_name(const ::testing::TestParamInfo<size_t>& info) {
  std::string s = golden_file().at("cases").at(info.param).at("id").get<std::string>();
  for (auto& ch : s)
    if (!std::isalnum(static_cast<unsigned char>(ch))) ch = '_';
  return s;
}

// Runs the case on Autodiff<Dispatch> with float inputs as leaves; returns each input's
// gradient of sum(out * grad_out) (zeros where none flowed; empty for non-float inputs).
std::vector<TensorData> autodiff_grads(const json& c, DType float_as) {
  Args<AD> args = load_inputs<AD>(c, suite_device(), float_as);
  for (auto& h : args.in)
    if (is_float(AD::meta(h).dtype)) h = AD::require_grad(h);
  D out(golden_ops<AD>().at(c.at("op").get<std::string>())(args));
  D gout(AD::from_data(golden_tensor(c.at("grad_out")).convert(out.dtype()), suite_device()));
  D loss = (out * gout).reduce(OpCode::Sum, {}, false);
  Gradients<Dispatch> grads = AD::backward(loss.handle());
  std::vector<TensorData> result;
  for (auto& h : args.in) {
    if (!is_float(AD::meta(h).dtype)) {
      result.emplace_back();
      continue;
    }
    const auto* g = AD::grad(grads, h);
    result.push_back(g ? Dispatch::to_data(*g) : TensorData(AD::meta(h).shape, AD::meta(h).dtype));
  }
  return result;
}

class GradGolden : public ::testing::TestWithParam<size_t> {};

TEST_P(GradGolden, MatchesPyTorch) {
  const json& c = golden_file().at("cases").at(GetParam());
  auto got = autodiff_grads(c, DType::F32);
  const auto& want = c.at("grads");
  for (size_t i = 0; i < want.size(); ++i) {
    if (want[i].is_null()) continue;
    TensorData w = golden_tensor(want[i]);
    std::string why;
    EXPECT_TRUE(got[i].all_close(w, 1e-4, 1e-5, &why))
        << c.at("id") << " input " << i << ": " << why << "\n got " << format_tensor(got[i])
        << "\nwant " << format_tensor(w);
  }
}

class GradFiniteDiff : public ::testing::TestWithParam<size_t> {};

// d/dx_k of sum(out * grad_out) by central differences, in f64: the suite device's gradients
// against differences taken on the CPU backend (the oracle's many forward passes cost little
// there; the device's forward ops are checked by the op goldens).
TEST_P(GradFiniteDiff, MatchesCentralDifferences) {
  const json& c = golden_file().at("cases").at(GetParam());
  auto got = autodiff_grads(c, DType::F64);
  const Device cpu = Device::cpu();
  Args<Dispatch> base = load_inputs<Dispatch>(c, cpu, DType::F64);
  auto& fn = golden_ops<Dispatch>().at(c.at("op").get<std::string>());
  TensorData gout = golden_tensor(c.at("grad_out")).convert(DType::F64);
  auto gv = gout.to_vec<double>();
  auto loss = [&](const Args<Dispatch>& a) {
    auto out = Dispatch::to_data(fn(a)).to_vec<double>();
    double s = 0;
    for (size_t k = 0; k < out.size(); ++k) s += out[k] * gv[k];
    return s;
  };
  for (size_t i = 0; i < base.in.size(); ++i) {
    if (!is_float(Dispatch::meta(base.in[i]).dtype)) continue;
    TensorData x = Dispatch::to_data(base.in[i]);
    auto xv = x.to_vec<double>();
    auto ad = got[i].to_vec<double>();
    for (size_t k = 0; k < xv.size(); ++k) {
      double eps = 1e-6 * std::max(1.0, std::abs(xv[k]));
      auto eval = [&](double v) {
        auto p = xv;
        p[k] = v;
        Args<Dispatch> a = base;
        a.in[i] = Dispatch::from_data(TensorData::from<double>(p, x.shape()), cpu);
        return loss(a);
      };
      double num = (eval(xv[k] + eps) - eval(xv[k] - eps)) / (2 * eps);
      EXPECT_NEAR(ad[k], num, 1e-5 + 1e-4 * std::abs(num))
          << c.at("id") << " input " << i << " element " << k;
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Ops, GradGolden, ::testing::ValuesIn(grad_cases(false)), case_name);
INSTANTIATE_TEST_SUITE_P(Ops, GradFiniteDiff, ::testing::ValuesIn(grad_cases(true)), case_name);

}  // namespace
}  // namespace ember::test
