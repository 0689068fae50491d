// A model that uses every other freestanding layer (Gru, LayerNorm, Lstm, rank-3 Linear,
// Conv1d, BatchNorm, AvgPool2d, Embedding) and activation, so that the boards check each
// against the CPU backend: random parameters and inputs from the host (reference.cpp), one
// source for both. Only the embedding's lookup is called differently (host: an Int tensor;
// here: int32_t indices), so the programs call `emb` themselves.
#pragma once
#ifdef EMBER_FREESTANDING
#include "ember/micro/as_ember.h"
#else
#include "ember/nn/layers/conv.h"
#include "ember/nn/layers/embedding.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/norm.h"
#include "ember/nn/layers/pool.h"
#include "ember/nn/layers/rnn.h"
#include "ember/tensor/activation.h"
#endif

namespace layers {

using namespace ember;

template <Backend B>
struct LayersNet {
  nn::Gru<B> gru;
  nn::LayerNorm<B> norm;
  nn::Lstm<B> lstm;
  nn::Linear<B> head;
  nn::Conv1d<B> conv;
  nn::BatchNorm<B> bn;
  nn::AvgPool2d pool;
  nn::Linear<B> fc;
  nn::Embedding<B> emb;
  EMBER_MODULE(LayersNet, gru, norm, lstm, head, conv, bn, pool, fc, emb)

  static LayersNet init(Device dev) {
    return {nn::GruConfig{6, 12}.with_num_layers(2).init<B>(dev),
            nn::LayerNormConfig{12}.init<B>(dev),
            nn::LstmConfig{12, 8}.init<B>(dev),
            nn::LinearConfig{8, 3}.init<B>(dev),
            nn::Conv1dConfig{{4, 8}, {3}}.with_padding({1}).init<B>(dev),
            nn::BatchNormConfig{8}.init<B>(dev),
            nn::AvgPool2dConfig{{1, 2}}.init(),
            nn::LinearConfig{64, 5}.init<B>(dev),
            nn::EmbeddingConfig{20, 4}.init<B>(dev)};
  }
  /// [seq, 1, 6] -> [seq, 1, 3].
  Tensor<B, 3> forward_seq(const Tensor<B, 3>& x) const {
    auto h = gru.forward(x).output;
    auto l = lstm.forward(activation::gelu(norm.forward(h))).output;
    return activation::sigmoid(head.forward(l));
  }
  /// [1, 4, 16] -> [1, 5] log-probabilities.
  Tensor<B, 2> forward_conv(const Tensor<B, 3>& x) const {
    auto y = activation::silu(bn.forward(conv.forward(x)));       // [1, 8, 16]
    auto p = pool.forward(y.template reshape<4>({1, 8, 1, 16}));  // [1, 8, 1, 8]
    return activation::log_softmax(fc.forward(p.template reshape<2>({1, 64})), 1);
  }
};

}  // namespace layers
