// MultiHeadAttention: scaled dot-product attention over n_heads heads, with separate query,
// key, value and output Linear layers, masks, and a key/value cache for incremental decoding.
// Inputs are batch first: [batch, seq, d_model].
//
//   auto mha = nn::MultiHeadAttentionConfig{512, 8}.init<B>(dev);
//   auto y = mha.forward(x, x, x, {.causal = true}).output;             // self-attention
//   auto r = mha.forward(q, mem, mem, {.key_padding_mask = pad,         // [batch, seq_k]
//                                      .need_weights = true});
//   r.weights->mean_dim(1);     // [batch, 1, seq_q, seq_k]: PyTorch's averaged weights
//
//   nn::MhaCache<B> cache;      // incremental decoding: one step at a time
//   for (int t = 0; t < steps; ++t)
//     y_t = mha.forward(x_t, x_t, x_t, {.causal = true, .cache = &cache}).output;
//
// Masks are bool with true = masked (not attended), like PyTorch's bool masks:
// key_padding_mask [batch, seq_k], attn_mask [seq_q, seq_k], and `causal` masks key j for
// query i when j > i + (seq_k - seq_q) (so it stays right with a cache of earlier keys). They
// combine with "or". A query whose keys are all masked gets all-zero attention weights, so its
// attention output is zero (the output layer's bias after projection) and its gradients are
// zero; PyTorch returns NaN there, which ember never does.
//
// The attention itself is one op, scaled_dot_product_attention (ember/tensor/nn_ops.h; a fused
// kernel on the CPU), unless the weights are needed: with `need_weights` or dropout while
// training it is computed as matmul, softmax, dropout, matmul.
//
// Parameters: query/key/value/output.{weight [d_model, d_model], bias [d_model]} in ember's
// Linear layout. PyTorch's packed in_proj_weight [3 d_model, d_model] is, row-block by
// row-block, query.weight^T, key.weight^T, value.weight^T; in_proj_bias likewise. All weights
// start Xavier-uniform over the packed [3 d_model, d_model] shape (as PyTorch's in_proj) and
// the output weight as PyTorch's out_proj; biases start at zero.
#pragma once
#include <cmath>
#include <limits>

#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/layers/dropout.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/module.h"
#include "ember/tensor/activation.h"
#include "ember/tensor/nn_ops.h"

namespace ember::nn {

/// Projected keys and values of earlier steps, [batch, n_heads, seq, d_head] each, kept by the
/// caller between calls. A normal cache grows by the new keys and values on every call (self-
/// attention while decoding). A `static_kv` cache is filled on the first call and then reused,
/// ignoring later key and value inputs (cross-attention over a fixed memory).
template <Backend B>
struct MhaCache {
  std::optional<Tensor<B, 4>> key = std::nullopt, value = std::nullopt;
  bool static_kv = false;
  /// The number of cached positions.
  int64_t len() const { return key ? key->dim(2) : 0; }
  void clear() {
    key.reset();
    value.reset();
  }
};

template <Backend B>
struct MhaOptions {
  std::optional<Tensor<B, 2, Bool>> key_padding_mask =
      std::nullopt;                                            // [batch, seq_k]; true = padding
  std::optional<Tensor<B, 2, Bool>> attn_mask = std::nullopt;  // [seq_q, seq_k]; true = masked
  bool causal = false;
  bool need_weights = false;
  MhaCache<B>* cache = nullptr;  // seq_k counts the cached keys too
};

template <Backend B>
struct MhaOutput {
  Tensor<B, 3> output;  // [batch, seq_q, d_model]
  std::optional<Tensor<B, 4>> weights =
      std::nullopt;  // [batch, n_heads, seq_q, seq_k], after dropout
};

template <Backend B>
struct MultiHeadAttention {
  Linear<B> query, key, value, output;
  int64_t n_heads = 1;
  double dropout = 0;
  EMBER_MODULE(MultiHeadAttention, query, key, value, output, n_heads, dropout)

  int64_t d_model() const { return query.weight.shape()[0]; }

  MhaOutput<B> forward(const Tensor<B, 3>& q, const Tensor<B, 3>& k, const Tensor<B, 3>& v,
                       const MhaOptions<B>& opt = {}) const {
    const int64_t E = d_model();
    auto shapes = [&] {
      return "query " + q.shape().to_string() + ", key " + k.shape().to_string() + ", value " +
             v.shape().to_string();
    };
    if (q.dim(2) != E || k.dim(2) != E || v.dim(2) != E)
      throw ShapeError("[mha] inputs must end in d_model " + std::to_string(E) + ": " + shapes());
    if (k.dim(0) != q.dim(0) || v.dim(0) != q.dim(0) || k.dim(1) != v.dim(1))
      throw ShapeError(
          "[mha] query, key and value need one batch size and key and value one "
          "length: " +
          shapes());
    const int64_t N = q.dim(0), Lq = q.dim(1);
    Tensor<B, 4> qh = heads(query.forward(q));
    Tensor<B, 4> kh = qh, vh = qh;
    MhaCache<B>* cache = opt.cache;
    if (cache && cache->static_kv && cache->key) {
      kh = *cache->key;
      vh = *cache->value;
    } else {
      kh = heads(key.forward(k));
      vh = heads(value.forward(v));
      if (cache) {
        if (cache->key) {
          if (cache->key->dim(0) != N)
            throw ShapeError("[mha] the cache holds batch " + std::to_string(cache->key->dim(0)) +
                             ", the query " + q.shape().to_string());
          kh = cat<B, 4, Float>({*cache->key, kh}, 2);
          vh = cat<B, 4, Float>({*cache->value, vh}, 2);
        }
        cache->key = kh;
        cache->value = vh;
      }
    }
    const int64_t Lk = kh.dim(2);
    const double scale = 1.0 / std::sqrt(static_cast<double>(E / n_heads));
    if (!opt.need_weights && !dropout_active()) {  // one attention op: fused on the CPU
      auto ctx = scaled_dot_product_attention(
          qh, kh, vh,
          {.mask = combined_mask(opt, N, Lq, Lk, false), .causal = opt.causal, .scale = scale});
      return {output.forward(ctx.swap_dims(1, 2).template reshape<3>({N, Lq, E})), std::nullopt};
    }
    auto mask = combined_mask(opt, N, Lq, Lk, opt.causal);
    Tensor<B, 4> scores = qh.matmul(kh.transpose()) * scale;  // [N, h, Lq, Lk]
    Tensor<B, 4> w = [&] {
      if (!mask) return activation::softmax(scores, 3);
      // Rows with every key masked would be NaN: they get zero scores, then zero weights.
      auto empty = mask->all_dim(3);  // [N|1, 1, Lq, 1]
      auto s =
          scores.mask_fill(*mask, -std::numeric_limits<double>::infinity()).mask_fill(empty, 0.0);
      return activation::softmax(s, 3).mask_fill(empty, 0.0);
    }();
    if (dropout > 0) w = Dropout{dropout}.forward(w);
    auto ctx = w.matmul(vh).swap_dims(1, 2).template reshape<3>({N, Lq, E});
    MhaOutput<B> out{output.forward(ctx), std::nullopt};
    if (opt.need_weights) out.weights = w;
    return out;
  }

 private:
  /// [N, L, E] -> [N, h, L, E / h].
  Tensor<B, 4> heads(const Tensor<B, 3>& x) const {
    const int64_t N = x.dim(0), L = x.dim(1), E = x.dim(2);
    return x.template reshape<4>({N, L, n_heads, E / n_heads}).swap_dims(1, 2);
  }
  /// Whether dropout changes the weights: training (see Dropout) with a positive rate.
  bool dropout_active() const {
    if constexpr (AutodiffBackend<B>)
      return dropout > 0 && autodiff::grad_enabled();
    else
      return false;
  }
  /// The masks of `opt` (the causal one if `causal`) as one bool mask broadcastable to
  /// [N, h, Lq, Lk] (rank 4).
  std::optional<Tensor<B, 4, Bool>> combined_mask(const MhaOptions<B>& opt, int64_t N, int64_t Lq,
                                                  int64_t Lk, bool causal) const {
    std::optional<Tensor<B, 4, Bool>> m;
    auto add = [&](const Tensor<B, 4, Bool>& t) { m = m ? m->bool_or(t) : t; };
    if (opt.key_padding_mask) {
      const auto& p = *opt.key_padding_mask;
      if (p.dim(0) != N || p.dim(1) != Lk)
        throw ShapeError("[mha] key_padding_mask " + p.shape().to_string() +
                         " must be [batch, seq_k] = [" + std::to_string(N) + ", " +
                         std::to_string(Lk) + "]");
      add(p.template reshape<4>({N, 1, 1, Lk}));
    }
    if (opt.attn_mask) {
      const auto& a = *opt.attn_mask;
      if (a.dim(0) != Lq || a.dim(1) != Lk)
        throw ShapeError("[mha] attn_mask " + a.shape().to_string() +
                         " must be [seq_q, seq_k] = [" + std::to_string(Lq) + ", " +
                         std::to_string(Lk) + "]");
      add(a.template reshape<4>({1, 1, Lq, Lk}));
    }
    if (causal) {
      auto dev = query.weight.device();
      add(Tensor<B, 2, Bool>::tril_mask(Lq, Lk, Lk - Lq, dev).template reshape<4>({1, 1, Lq, Lk}));
    }
    return m;
  }
};

struct MultiHeadAttentionConfig {
  int64_t d_model = 0;
  int64_t n_heads = 1;
  double dropout = 0;
  bool bias = true;
  EMBER_CONFIG(MultiHeadAttentionConfig, d_model, n_heads, dropout, bias)

  template <Backend B>
  MultiHeadAttention<B> init(Device dev = B::default_device()) const {
    if (d_model <= 0 || n_heads <= 0 || d_model % n_heads != 0)
      throw ValueError("[mha] n_heads " + std::to_string(n_heads) + " must divide d_model " +
                       std::to_string(d_model));
    if (!(dropout >= 0 && dropout <= 1))
      throw ValueError("[mha] dropout must be in [0, 1], got " + std::to_string(dropout));
    // PyTorch: xavier_uniform over the packed [3E, E] in_proj (bound sqrt(6 / 4E)), the
    // output Linear's default (±1/sqrt(E)), zero biases.
    const double E = static_cast<double>(d_model);
    auto in_proj = Initializer::uniform(-std::sqrt(6.0 / (4 * E)), std::sqrt(6.0 / (4 * E)));
    auto out_proj = Initializer::uniform(-1 / std::sqrt(E), 1 / std::sqrt(E));
    auto lin = [&](Initializer ini) {
      Linear<B> l = LinearConfig{d_model, d_model, bias, ini}.template init<B>(dev);
      if (l.bias)
        *l.bias = Param<Tensor<B, 1>>::lazy(
            {d_model}, dev, [](const Shape& s, Device d) { return Tensor<B, 1>::zeros(s, d); });
      return l;
    };
    return {lin(in_proj), lin(in_proj), lin(in_proj), lin(out_proj), n_heads, dropout};
  }
};

}  // namespace ember::nn
