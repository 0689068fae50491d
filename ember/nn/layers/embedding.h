// Embedding: a lookup table of n_embedding vectors of size d_model.
//
//   auto emb = nn::EmbeddingConfig{30000, 512}.init<B>(dev);
//   Tensor<B, 3> x = emb.forward(tokens);     // tokens: Tensor<B, 2, Int> [batch, seq]
//   auto pad = nn::EmbeddingConfig{100, 16}.with_padding_idx(0).with_max_norm(1.0).init<B>(dev);
//
// padding_idx (as torch.nn.Embedding): that row starts at zero and gets no gradient. max_norm:
// each looked-up vector longer than max_norm (in the max_norm_p norm) is scaled down to it,
// and the gradient passes to the table as if unscaled. PyTorch also writes the scaled rows back
// into the table; ember leaves the table as it is, so a later lookup scales again (the outputs
// agree; the parameters differ where the optimizer then moves an oversized row).
#pragma once
#include <optional>

#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/module.h"

namespace ember::nn {

template <Backend B>
struct Embedding {
  Param<Tensor<B, 2>> weight;  // [n_embedding, d_model]
  int64_t padding_idx = -1;    // the row that gets no gradient (-1: none)
  double max_norm = 0;         // the longest a looked-up vector may be (0: no limit)
  double max_norm_p = 2;
  EMBER_MODULE(Embedding, weight, padding_idx, max_norm, max_norm_p)

  /// [d0, ..., dk] indices -> [d0, ..., dk, d_model]. Out-of-range indices raise IndexError.
  template <int D>
  Tensor<B, D + 1> forward(const Tensor<B, D, Int>& indices) const {
    const Tensor<B, 2>& w = weight.val();
    auto flat = indices.template reshape<1>({-1});
    Dims out = indices.shape().dims();
    out.push_back(w.dim(1));
    auto rows = w.select(0, flat);  // [n, d_model]
    if (max_norm > 0) {
      auto a = rows.abs();
      auto norm = max_norm_p == 2 ? rows.square().sum_dim(1).sqrt()
                                  : a.pow_scalar(max_norm_p).sum_dim(1).pow_scalar(1 / max_norm_p);
      auto scale = (max_norm / (norm + 1e-7)).clamp_max(1.0);
      if constexpr (AutodiffBackend<B>) {
        rows = rows + (rows * scale - rows).detach();  // the values scaled, the gradient not
      } else {
        rows = rows * scale;
      }
    }
    if constexpr (AutodiffBackend<B>) {
      if (padding_idx >= 0)
        rows = rows.mask_where(flat.equal_elem(padding_idx).template unsqueeze_dim<2>(1),
                               rows.detach());
    }
    return rows.template reshape<D + 1>(Shape(out));
  }
};

struct EmbeddingConfig {
  int64_t n_embedding = 0;
  int64_t d_model = 0;
  /// PyTorch's default: standard normal.
  Initializer initializer = Initializer::normal(0, 1);
  /// A row that starts at zero and gets no gradient (a negative index counts from the end).
  std::optional<int64_t> padding_idx = {};
  /// Looked-up vectors longer than this (in the max_norm_p norm) are scaled down to it.
  std::optional<double> max_norm = {};
  double max_norm_p = 2;
  /// The table's float type (f32, f64, f16, bf16).
  DType dtype = DType::F32;
  EMBER_CONFIG(EmbeddingConfig, n_embedding, d_model, initializer, padding_idx, max_norm,
               max_norm_p, dtype)

  template <Backend B>
  Embedding<B> init(Device dev = B::default_device()) const {
    if (n_embedding <= 0 || d_model <= 0)
      throw ValueError("[embedding] sizes must be positive, got " + std::to_string(n_embedding) +
                       " x " + std::to_string(d_model));
    Embedding<B> m;
    auto ini = initializer;
    int64_t fi = n_embedding, fo = d_model, pad = -1;
    if (padding_idx) {
      pad = *padding_idx < 0 ? *padding_idx + n_embedding : *padding_idx;
      if (pad < 0 || pad >= n_embedding)
        throw ValueError("[embedding] padding_idx " + std::to_string(*padding_idx) +
                         " out of range for " + std::to_string(n_embedding) + " embeddings");
    }
    if (max_norm && !(*max_norm > 0))
      throw ValueError("[embedding] max_norm must be positive, got " + std::to_string(*max_norm));
    m.weight = Param<Tensor<B, 2>>::lazy(
        {n_embedding, d_model}, dev, [ini, fi, fo, pad](const Shape& s, Device d) {
          auto w = ini.template init<B, 2>(s, d, fi, fo);
          if (pad < 0) return w;
          auto row = Tensor<B, 1, Int>::arange(int64_t{0}, s[0], int64_t{1}, d).equal_elem(pad);
          return w.mask_fill(row.template unsqueeze_dim<2>(1), 0.0);
        });
    m.padding_idx = pad;
    m.max_norm = max_norm.value_or(0.0);
    m.max_norm_p = max_norm_p;
    return detail::in_dtype(std::move(m), dtype);
  }
};

}  // namespace ember::nn
