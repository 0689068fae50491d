// The layer suite's harness: each case of a goldens file (written from PyTorch by
// tools/gen_nn_goldens.py) holds a layer's config, its parameters in ember's layout, inputs,
// the output, and the gradients of sum(output * grad_out) for the inputs and parameters.
// A test builds the layer from the config, loads the parameters through the record API,
// runs forward and backward on Autodiff<Dispatch> on the suite's device (support/suite.h:
// $EMBER_TEST_DEVICE) and compares everything.
#pragma once
#include <gtest/gtest.h>

#include <fstream>
#include <functional>
#include <map>
#include <string>

#include <nlohmann/json.hpp>

#include "../ops/golden.h"
#include "ember/ember.h"
#include "ember/nn/config.h"
#include "ember/nn/record.h"
#include "suite.h"

namespace ember::test {

using AD = Autodiff<Dispatch>;

/// A goldens file, by its source-tree path (or $EMBER_TEST_DATA's copy: support/suite.h).
inline nlohmann::json read_json(const std::string& source_path) {
  std::string path = data_file(source_path);
  std::ifstream f(path);
  if (!f) throw std::runtime_error("cannot open " + path);
  return nlohmann::json::parse(f);
}

/// The case's named tensors ("params" and "buffers") as a record.
inline record::NamedTensors case_record(const nlohmann::json& c) {
  record::NamedTensors r;
  for (const char* k : {"params", "buffers"})
    if (c.contains(k))
      for (auto& [name, t] : c.at(k).items()) r.emplace_back(name, golden_tensor(t));
  return r;
}

/// Input i of the case on backend B (float inputs require a gradient on Autodiff).
template <int D, TensorKind K = Float, Backend B = AD>
Tensor<B, D, K> case_input(const nlohmann::json& c, size_t i) {
  auto t = Tensor<B, D, K>::from_data(golden_tensor(c.at("inputs").at(i)));
  if constexpr (AutodiffBackend<B> && std::is_same_v<K, Float>) t = t.require_grad();
  return t;
}

inline void expect_close(const TensorData& got, const nlohmann::json& want, const std::string& what,
                         double rtol, double atol) {
  TensorData w = golden_tensor(want);
  EXPECT_EQ(got.shape(), w.shape()) << what;
  if (got.shape() != w.shape()) return;
  EXPECT_TRUE(got.all_close(w, rtol, atol))
      << what << "\n got:  " << format_tensor(got, "") << "\n want: " << format_tensor(w, "");
}

/// Compares the output, then backpropagates grad_out and compares the gradients of the
/// listed inputs ("input0", ...) and of every parameter ("params" paths), and the buffers
/// after the forward pass ("buffers_after").
template <class M, int D, class... In>
void check_case(const nlohmann::json& c, const M& m, const Tensor<AD, D>& out,
                const std::tuple<In...>& inputs) {
  const double rtol = c.value("rtol", 1e-4), atol = c.value("atol", 1e-5);
  expect_close(out.to_data(), c.at("output"), "output", rtol, atol);
  if (c.contains("buffers_after"))
    nn::for_each_buffer(m, [&](const std::string& path, const auto& b) {
      expect_close(b.val().to_data(), c.at("buffers_after").at(path), "buffer " + path, rtol, atol);
    });
  if (!c.contains("grads")) return;
  auto g = Tensor<AD, D>::from_data(golden_tensor(c.at("grad_out")));
  auto grads = (out * g).sum().backward();
  const auto& want = c.at("grads");
  size_t i = 0;
  std::apply(
      [&](const auto&... x) {
        auto one = [&](const auto& t) {
          std::string key = "input" + std::to_string(i++);
          using T = std::remove_cvref_t<decltype(t)>;
          if constexpr (std::is_same_v<typename T::kind_type, Float>) {
            if (!want.contains(key)) return;
            auto gx = t.grad(grads);
            ASSERT_TRUE(gx.has_value()) << key;
            expect_close(gx->to_data(), want.at(key), "grad " + key, rtol, atol);
          }
        };
        (one(x), ...);
      },
      inputs);
  nn::for_each_param(m, [&](const std::string& path, const auto& p) {
    if (!want.contains(path)) {
      ADD_FAILURE() << "no golden gradient for " << path;
      return;
    }
    auto gp = p.val().grad(grads);
    ASSERT_TRUE(gp.has_value()) << path;
    expect_close(gp->to_data(), want.at(path), "grad " + path, rtol, atol);
  });
}

/// Builds a layer from the case's config (JSON) and loads its parameters.
template <class Config>
auto build(const nlohmann::json& c) {
  auto m = nn::config_from_json<Config>(c.at("config").dump()).template init<AD>();
  nn::apply_record(m, case_record(c));
  return m;
}

using LayerFn = std::function<void(const nlohmann::json&)>;

}  // namespace ember::test
