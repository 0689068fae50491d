// The small CNN of the example (conv 1->8, pool, conv 8->16, pool, linear 400->10), the same as
// the PyTorch peer's.
#pragma once
#ifdef EMBER_FREESTANDING  // a microcontroller build (examples/embedded, docs/embedded.md)
#include "freestanding.h"
#else
#include "ember/nn/layers/conv.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/pool.h"
#include "model.h"
#endif

namespace mnist {

template <Backend B>
struct Cnn {
  nn::Conv2d<B> conv1, conv2;
  nn::Linear<B> fc;
  nn::MaxPool2d pool;
  EMBER_MODULE(Cnn, conv1, conv2, fc, pool)

  static Cnn init(Device dev) {
    return {nn::Conv2dConfig{{1, 8}, {3, 3}}.init<B>(dev),
            nn::Conv2dConfig{{8, 16}, {3, 3}}.init<B>(dev), nn::LinearConfig{400, 10}.init<B>(dev),
            nn::MaxPool2dConfig{{2, 2}}.init()};
  }
  Tensor<B, 2> forward(const Tensor<B, 4>& images) const {
    auto x = pool.forward(activation::relu(conv1.forward(images)));  // [N, 8, 13, 13]
    x = pool.forward(activation::relu(conv2.forward(x)));            // [N, 16, 5, 5]
    return fc.forward(x.template reshape<2>({x.dim(0), 400}));
  }
#ifndef EMBER_FREESTANDING  // training runs on the host only
  train::ClassificationOutput<B> step(const data::MnistBatch<B>& b) const {
    return classify(forward(b.images), b.targets);
  }
#endif
};

}  // namespace mnist
