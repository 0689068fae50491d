// What the example's two Fashion-MNIST models share: the loss and outputs of a step. The models
// are in mlp.h and cnn.h, one file each, so that editing one recompiles only its own
// translation unit (mlp.cpp or cnn.cpp).
#pragma once
#include "ember/data/batcher.h"
#include "ember/ember.h"
#include "ember/nn/loss/cross_entropy.h"
#include "ember/train/output.h"

namespace mnist {

using namespace ember;

template <Backend B>
train::ClassificationOutput<B> classify(const Tensor<B, 2>& logits, const Tensor<B, 1, Int>& y) {
  return {nn::CrossEntropyLossConfig{}.init().forward(logits, y), logits, y};
}

}  // namespace mnist
