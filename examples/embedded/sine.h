// A small regressor of sin(x) on [-pi, pi]: 1-16-16-1 with tanh, trained on the host
// (reference.cpp) and run on the microcontroller (sine.cpp) from this one source.
#pragma once
#ifdef EMBER_FREESTANDING
#include "ember/micro/as_ember.h"
#else
#include "ember/nn/layers/linear.h"
#include "ember/tensor/activation.h"
#endif

namespace sine {

using namespace ember;

template <Backend B>
struct Sine {
  nn::Linear<B> fc1, fc2, fc3;
  EMBER_MODULE(Sine, fc1, fc2, fc3)

  static Sine init(Device dev) {
    return {nn::LinearConfig{1, 16}.init<B>(dev), nn::LinearConfig{16, 16}.init<B>(dev),
            nn::LinearConfig{16, 1}.init<B>(dev)};
  }
  /// [batch, 1] -> [batch, 1].
  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc3.forward(activation::tanh(fc2.forward(activation::tanh(fc1.forward(x)))));
  }
};

}  // namespace sine
