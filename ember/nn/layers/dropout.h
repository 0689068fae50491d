// Dropout and Identity. Dropout is active while training, i.e. on an Autodiff backend with
// gradients enabled; on the inner backend (`nn::valid(model)`) or under NoGradGuard it is the
// identity, so evaluation never needs a mode flag.
//
//   auto drop = nn::DropoutConfig{0.1}.init();
//   auto y = drop.forward(x);      // zeroes ~10% of x and scales the rest by 1/0.9
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/module.h"

namespace ember::nn {

struct Dropout {
  double prob = 0.5;
  EMBER_MODULE(Dropout, prob)

  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    if constexpr (AutodiffBackend<B>) {
      if (prob <= 0 || !autodiff::grad_enabled()) return x;
      if (prob >= 1) return x.zeros_like();
      auto keep = x.inner().random_like(Distribution::bernoulli(1 - prob));
      return x * Tensor<B, D>::from_inner(keep.mul_scalar(1.0 / (1.0 - prob)));
    } else {
      return x;
    }
  }
};

struct DropoutConfig {
  double prob = 0.5;
  EMBER_CONFIG(DropoutConfig, prob)
  Dropout init() const {
    if (!(prob >= 0 && prob <= 1))
      throw ValueError("[dropout] probability must be in [0, 1], got " + std::to_string(prob));
    return Dropout{prob};
  }
};

struct Identity {
  EMBER_MODULE(Identity)
  template <class T>
  T forward(T x) const {
    return x;
  }
};

}  // namespace ember::nn
