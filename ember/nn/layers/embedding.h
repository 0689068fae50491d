// Embedding: a lookup table of n_embedding vectors of size d_model.
//
//   auto emb = nn::EmbeddingConfig{30000, 512}.init<B>(dev);
//   Tensor<B, 3> x = emb.forward(tokens);     // tokens: Tensor<B, 2, Int> [batch, seq]
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/module.h"

namespace ember::nn {

template <Backend B>
struct Embedding {
  Param<Tensor<B, 2>> weight;  // [n_embedding, d_model]
  EMBER_MODULE(Embedding, weight)

  /// [d0, ..., dk] indices -> [d0, ..., dk, d_model]. Out-of-range indices raise IndexError.
  template <int D>
  Tensor<B, D + 1> forward(const Tensor<B, D, Int>& indices) const {
    const Tensor<B, 2>& w = weight.val();
    auto flat = indices.template reshape<1>({-1});
    Dims out = indices.shape().dims();
    out.push_back(w.dim(1));
    return w.select(0, flat).template reshape<D + 1>(Shape(out));
  }
};

struct EmbeddingConfig {
  int64_t n_embedding = 0;
  int64_t d_model = 0;
  /// PyTorch's default: standard normal.
  Initializer initializer = Initializer::normal(0, 1);
  EMBER_CONFIG(EmbeddingConfig, n_embedding, d_model, initializer)

  template <Backend B>
  Embedding<B> init(Device dev = B::default_device()) const {
    if (n_embedding <= 0 || d_model <= 0)
      throw ValueError("[embedding] sizes must be positive, got " + std::to_string(n_embedding) +
                       " x " + std::to_string(d_model));
    Embedding<B> m;
    auto ini = initializer;
    int64_t fi = n_embedding, fo = d_model;
    m.weight = Param<Tensor<B, 2>>::lazy(
        {n_embedding, d_model}, dev,
        [ini, fi, fo](const Shape& s, Device d) { return ini.template init<B, 2>(s, d, fi, fo); });
    return m;
  }
};

}  // namespace ember::nn
