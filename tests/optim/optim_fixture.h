// The golden problem of tools/gen_optim_goldens.py in ember: a tiny MLP with parameters of
// ranks 2, 1 and 0 and one the loss does not use, on fixed data, on the suite's device
// (support/suite.h).
#pragma once
#include <fstream>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "suite.h"

namespace ember::optim::test {

using AD = Autodiff<Dispatch>;

template <Backend B>
struct Net {
  nn::Linear<B> fc1, fc2;
  nn::Param<Tensor<B, 0>> temperature;
  nn::Param<Tensor<B, 1>> unused;  // no gradient ever reaches it
  EMBER_MODULE(Net, fc1, fc2, temperature, unused)

  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    auto out = fc2.forward(fc1.forward(x).tanh());
    return out * temperature.val().template reshape<2>({1, 1});
  }
};

inline const nlohmann::json& goldens() {
  static const nlohmann::json doc = [] {
    std::string path = ember::test::data_file(EMBER_OPTIM_GOLDENS);
    std::ifstream f(path);
    if (!f) throw std::runtime_error("cannot read " + path);
    return nlohmann::json::parse(f);
  }();
  return doc;
}

inline std::string param_path(size_t i) {
  return goldens()["problem"]["params"].at(i)["path"].get<std::string>();
}

template <int D>
Tensor<Dispatch, D> golden_tensor(const nlohmann::json& t, DType dt) {
  auto v = t["values"].get<std::vector<double>>();
  Shape s(t["shape"].get<std::vector<int64_t>>());
  return Tensor<Dispatch, D>::from_data(TensorData::from<double>(v, s).convert(dt));
}

/// The data, the initial parameters and the loss.
class Problem {
 public:
  explicit Problem(DType dt) : dt_(dt) {
    const auto& p = goldens()["problem"];
    x_ = golden_tensor<2>(p["x"], dt);
    y_ = golden_tensor<2>(p["y"], dt);
    for (const auto& b : p["micro_batches"]) batches_.emplace_back(b[0], b[1]);
  }
  /// A fresh Net with the golden initial values (new parameter ids every call).
  Net<AD> net() const {
    const auto& ps = goldens()["problem"]["params"];
    auto param = [&]<int D>(size_t i) {
      return nn::Param<Tensor<AD, D>>(Tensor<AD, D>::from_inner(golden_tensor<D>(ps.at(i), dt_)));
    };
    Net<AD> n;
    n.fc1.weight = param.template operator()<2>(0);
    n.fc1.bias = param.template operator()<1>(1);
    n.fc2.weight = param.template operator()<2>(2);
    n.fc2.bias = param.template operator()<1>(3);
    n.temperature = param.template operator()<0>(4);
    n.unused = param.template operator()<1>(5);
    return n;
  }
  /// mean((net(x) - y)^2) over all rows, or over micro-batch k's rows.
  Tensor<AD, 1> loss(const Net<AD>& n, int k = -1) const {
    auto x = x_, y = y_;
    if (k >= 0) {
      auto [lo, hi] = batches_.at(k);
      x = x.narrow(0, lo, hi - lo);
      y = y.narrow(0, lo, hi - lo);
    }
    auto d = n.forward(Tensor<AD, 2>::from_inner(x)) - Tensor<AD, 2>::from_inner(y);
    return d.square().mean();
  }
  int micro_batches() const { return static_cast<int>(batches_.size()); }
  DType dtype() const { return dt_; }

 private:
  DType dt_;
  Tensor<Dispatch, 2> x_{Tensor<Dispatch, 2>::zeros({1, 1})},
      y_{Tensor<Dispatch, 2>::zeros({1, 1})};
  std::vector<std::pair<int64_t, int64_t>> batches_;
};

/// Every parameter's values, in path order, as doubles.
template <class M>
std::vector<std::vector<double>> values(const M& m) {
  std::vector<std::vector<double>> out;
  nn::for_each_param(m, [&](const std::string&, const auto& p) {
    out.push_back(p.val().template to_vec<double>());
  });
  return out;
}

struct Trajectory {
  std::vector<std::vector<std::vector<double>>> steps;  // [step][param][element]
  std::vector<double> losses;                           // L-BFGS: what each step returned
};

}  // namespace ember::optim::test
