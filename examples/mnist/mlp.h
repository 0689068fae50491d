// The MLP of the example (784-256-10), the same as the PyTorch peer's.
#pragma once
#ifdef EMBER_FREESTANDING  // a microcontroller build (examples/embedded, docs/embedded.md)
#include "freestanding.h"
#else
#include "ember/nn/layers/linear.h"
#include "model.h"
#endif

namespace mnist {

template <Backend B>
struct Mlp {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Mlp, fc1, fc2)

  static Mlp init(Device dev) {
    return {nn::LinearConfig{784, 256}.init<B>(dev), nn::LinearConfig{256, 10}.init<B>(dev)};
  }
  Tensor<B, 2> forward(const Tensor<B, 4>& images) const {
    auto x = images.template reshape<2>({images.dim(0), 784});
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
#ifndef EMBER_FREESTANDING  // training runs on the host only
  train::ClassificationOutput<B> step(const data::MnistBatch<B>& b) const {
    return classify(forward(b.images), b.targets);
  }
#endif
};

}  // namespace mnist
