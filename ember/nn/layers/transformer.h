// Transformer blocks, batch first ([batch, seq, d_model]), matching PyTorch's
// nn.TransformerEncoderLayer / nn.TransformerDecoderLayer (batch_first=True) with norm_first
// false (post-norm) or true (pre-norm), and their stacks with an optional final LayerNorm.
//
//   auto enc = nn::TransformerEncoderConfig{6, 512, 8, 2048}.with_norm_first(true).init<B>(dev);
//   auto mem = enc.forward(src, {.key_padding_mask = src_pad});
//   auto dec = nn::TransformerDecoderConfig{6, 512, 8, 2048}.init<B>(dev);
//   auto y = dec.forward(tgt, mem, {.causal = true, .memory_key_padding_mask = src_pad});
//
//   auto cache = dec.new_cache();                  // autoregressive decoding, one step a call:
//   auto y_t = dec.forward(x_t, mem, {.causal = true}, &cache);   // x_t: [batch, 1, d_model]
//
// Post-norm:  x = norm1(x + sa(x));        x = norm2(x + ff(x))            (encoder)
// Pre-norm:   x = x + sa(norm1(x));        x = x + ff(norm2(x))
// The decoder has a cross-attention block (over `memory`) between the two, with norm2, and
// its feed-forward block uses norm3. sa/cross/ff are each followed by dropout.
//
// Parameters (paths): self_attn.{query,key,value,output}.{weight,bias} (see attention.h),
// cross_attn.* (decoder), ff.linear1 [d_model, d_ff], ff.linear2 [d_ff, d_model],
// norm1/norm2(/norm3).{gamma,beta}; stacks: layers.i.*, norm.* (the final norm).
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/layers/attention.h"
#include "ember/nn/layers/dropout.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/norm.h"
#include "ember/nn/module.h"
#include "ember/tensor/activation.h"

namespace ember::nn {

enum class FfActivation { Relu, Gelu };
EMBER_CONFIG_ENUM(FfActivation, {FfActivation::Relu, "relu"}, {FfActivation::Gelu, "gelu"})

// ---- PositionWiseFeedForward -------------------------------------------------------------

/// linear2(dropout(act(linear1(x)))) over the last dim.
template <Backend B>
struct PositionWiseFeedForward {
  Linear<B> linear1;  // [d_model, d_ff]
  Linear<B> linear2;  // [d_ff, d_model]
  double dropout = 0;
  FfActivation activation = FfActivation::Relu;
  EMBER_MODULE(PositionWiseFeedForward, linear1, linear2, dropout, activation)

  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    auto h = linear1.forward(x);
    h = activation == FfActivation::Gelu ? ember::activation::gelu(h) : ember::activation::relu(h);
    return linear2.forward(Dropout{dropout}.forward(h));
  }
};

struct PositionWiseFeedForwardConfig {
  int64_t d_model = 0;
  int64_t d_ff = 0;
  double dropout = 0.1;
  FfActivation activation = FfActivation::Relu;
  EMBER_CONFIG(PositionWiseFeedForwardConfig, d_model, d_ff, dropout, activation)

  template <Backend B>
  PositionWiseFeedForward<B> init(Device dev = B::default_device()) const {
    if (d_model <= 0 || d_ff <= 0)
      throw ValueError("[feed_forward] sizes must be positive, got d_model " +
                       std::to_string(d_model) + ", d_ff " + std::to_string(d_ff));
    DropoutConfig{dropout}.init();  // validates
    return {LinearConfig{d_model, d_ff}.init<B>(dev), LinearConfig{d_ff, d_model}.init<B>(dev),
            dropout, activation};
  }
};

// ---- masks and caches --------------------------------------------------------------------

template <Backend B>
struct EncoderMasks {
  std::optional<Tensor<B, 2, Bool>> mask = std::nullopt;  // [seq, seq]; true = masked
  std::optional<Tensor<B, 2, Bool>> key_padding_mask =
      std::nullopt;  // [batch, seq]; true = padding
  bool causal = false;
};

template <Backend B>
struct DecoderMasks {
  std::optional<Tensor<B, 2, Bool>> tgt_mask = std::nullopt;  // [seq_t, seq_t (+ cached)]
  std::optional<Tensor<B, 2, Bool>> tgt_key_padding_mask =
      std::nullopt;                                              // [batch, seq_t (+ cached)]
  bool causal = false;                                           // causal self-attention
  std::optional<Tensor<B, 2, Bool>> memory_mask = std::nullopt;  // [seq_t, seq_m]
  std::optional<Tensor<B, 2, Bool>> memory_key_padding_mask = std::nullopt;  // [batch, seq_m]
};

/// A decoder's state while decoding: per layer, the self-attention keys and values so far and
/// the projected memory (computed on the first step, then reused).
template <Backend B>
struct TransformerDecoderCache {
  std::vector<MhaCache<B>> self_attn, cross_attn;
  /// The number of target positions decoded so far.
  int64_t len() const { return self_attn.empty() ? 0 : self_attn[0].len(); }
};

namespace detail {
/// The sublayer configs a transformer layer is built from, after checking the sizes and
/// dropout of `c` (a TransformerEncoderLayerConfig or TransformerDecoderLayerConfig).
struct TransformerLayerParts {
  MultiHeadAttentionConfig attention;
  PositionWiseFeedForwardConfig ff;
  LayerNormConfig norm;
};
template <class C>
TransformerLayerParts transformer_layer_parts(const char* name, const C& c) {
  if (c.d_model <= 0 || c.n_heads <= 0 || c.d_ff <= 0 || c.d_model % c.n_heads != 0)
    throw ValueError(std::string("[") + name + "] needs positive sizes with n_heads dividing " +
                     "d_model, got d_model " + std::to_string(c.d_model) + ", n_heads " +
                     std::to_string(c.n_heads) + ", d_ff " + std::to_string(c.d_ff));
  if (!(c.dropout >= 0 && c.dropout <= 1))
    throw ValueError(std::string("[") + name + "] dropout must be in [0, 1], got " +
                     std::to_string(c.dropout));
  return {{c.d_model, c.n_heads, c.dropout},
          {c.d_model, c.d_ff, c.dropout, c.activation},
          {c.d_model, c.layer_norm_eps}};
}

/// A stack of n_layers layers built from `c` (a TransformerEncoderConfig or
/// TransformerDecoderConfig), with the final LayerNorm when c.final_norm.
template <class LayerConfig, class Stack, Backend B, class C>
Stack transformer_stack(const char* name, const C& c, Device dev) {
  if (c.n_layers < 1) throw ValueError(std::string("[") + name + "] n_layers must be at least 1");
  Stack m;
  auto layer = LayerConfig{c.d_model,    c.n_heads,    c.d_ff,          c.dropout,
                           c.activation, c.norm_first, c.layer_norm_eps};
  for (int64_t i = 0; i < c.n_layers; ++i) m.layers.push_back(layer.template init<B>(dev));
  if (c.final_norm) m.norm = LayerNormConfig{c.d_model, c.layer_norm_eps}.init<B>(dev);
  return m;
}

/// One residual sublayer f of `layer` with its dropout: x + drop(f(norm(x))) when
/// layer.norm_first (pre-norm), else norm(x + drop(f(x))) (post-norm).
template <class Layer, Backend B, class F>
Tensor<B, 3> residual(const Layer& layer, const LayerNorm<B>& norm, const Tensor<B, 3>& x, F&& f) {
  Dropout drop{layer.dropout};
  if (layer.norm_first) return x + drop.forward(f(norm.forward(x)));
  return norm.forward(x + drop.forward(f(x)));
}
}  // namespace detail

// ---- encoder -----------------------------------------------------------------------------

template <Backend B>
struct TransformerEncoderLayer {
  MultiHeadAttention<B> self_attn;
  PositionWiseFeedForward<B> ff;
  LayerNorm<B> norm1, norm2;
  double dropout = 0;
  bool norm_first = false;
  EMBER_MODULE(TransformerEncoderLayer, self_attn, ff, norm1, norm2, dropout, norm_first)

  /// x: [batch, seq, d_model].
  Tensor<B, 3> forward(const Tensor<B, 3>& x, const EncoderMasks<B>& masks = {}) const {
    auto sa = [&](const Tensor<B, 3>& h) {
      MhaOptions<B> o{masks.key_padding_mask, masks.mask, masks.causal};
      return self_attn.forward(h, h, h, o).output;
    };
    auto y = detail::residual(*this, norm1, x, sa);
    return detail::residual(*this, norm2, y, [&](const Tensor<B, 3>& h) { return ff.forward(h); });
  }
};

struct TransformerEncoderLayerConfig {
  int64_t d_model = 0;
  int64_t n_heads = 1;
  int64_t d_ff = 0;
  double dropout = 0.1;
  FfActivation activation = FfActivation::Relu;
  bool norm_first = false;
  double layer_norm_eps = 1e-5;
  EMBER_CONFIG(TransformerEncoderLayerConfig, d_model, n_heads, d_ff, dropout, activation,
               norm_first, layer_norm_eps)

  template <Backend B>
  TransformerEncoderLayer<B> init(Device dev = B::default_device()) const {
    auto p = detail::transformer_layer_parts("transformer_encoder", *this);
    return {p.attention.init<B>(dev), p.ff.init<B>(dev), p.norm.init<B>(dev),
            p.norm.init<B>(dev),      dropout,           norm_first};
  }
};

template <Backend B>
struct TransformerEncoder {
  std::vector<TransformerEncoderLayer<B>> layers;
  std::optional<LayerNorm<B>> norm;  // after the last layer
  EMBER_MODULE(TransformerEncoder, layers, norm)

  Tensor<B, 3> forward(const Tensor<B, 3>& x, const EncoderMasks<B>& masks = {}) const {
    Tensor<B, 3> y = x;
    for (const auto& l : layers) y = l.forward(y, masks);
    return norm ? norm->forward(y) : y;
  }
};

struct TransformerEncoderConfig {
  int64_t n_layers = 1;
  int64_t d_model = 0;
  int64_t n_heads = 1;
  int64_t d_ff = 0;
  double dropout = 0.1;
  FfActivation activation = FfActivation::Relu;
  bool norm_first = false;
  double layer_norm_eps = 1e-5;
  bool final_norm = false;  // a LayerNorm after the stack (usual with norm_first)
  EMBER_CONFIG(TransformerEncoderConfig, n_layers, d_model, n_heads, d_ff, dropout, activation,
               norm_first, layer_norm_eps, final_norm)

  template <Backend B>
  TransformerEncoder<B> init(Device dev = B::default_device()) const {
    return detail::transformer_stack<TransformerEncoderLayerConfig, TransformerEncoder<B>, B>(
        "transformer_encoder", *this, dev);
  }
};

// ---- decoder -----------------------------------------------------------------------------

template <Backend B>
struct TransformerDecoderLayer {
  MultiHeadAttention<B> self_attn, cross_attn;
  PositionWiseFeedForward<B> ff;
  LayerNorm<B> norm1, norm2, norm3;
  double dropout = 0;
  bool norm_first = false;
  EMBER_MODULE(TransformerDecoderLayer, self_attn, cross_attn, ff, norm1, norm2, norm3, dropout,
               norm_first)

  /// x: [batch, seq_t, d_model], memory: [batch, seq_m, d_model]. With caches, x holds only
  /// the new positions; their keys and values are appended to `self_cache`, and
  /// `cross_cache` (static_kv) keeps the projected memory.
  Tensor<B, 3> forward(const Tensor<B, 3>& x, const Tensor<B, 3>& memory,
                       const DecoderMasks<B>& masks = {}, MhaCache<B>* self_cache = nullptr,
                       MhaCache<B>* cross_cache = nullptr) const {
    auto sa = [&](const Tensor<B, 3>& h) {
      MhaOptions<B> o{masks.tgt_key_padding_mask, masks.tgt_mask, masks.causal, false, self_cache};
      return self_attn.forward(h, h, h, o).output;
    };
    auto ca = [&](const Tensor<B, 3>& h) {
      MhaOptions<B> o{masks.memory_key_padding_mask, masks.memory_mask, false, false, cross_cache};
      return cross_attn.forward(h, memory, memory, o).output;
    };
    auto y = detail::residual(*this, norm1, x, sa);
    y = detail::residual(*this, norm2, y, ca);
    return detail::residual(*this, norm3, y, [&](const Tensor<B, 3>& h) { return ff.forward(h); });
  }
};

struct TransformerDecoderLayerConfig {
  int64_t d_model = 0;
  int64_t n_heads = 1;
  int64_t d_ff = 0;
  double dropout = 0.1;
  FfActivation activation = FfActivation::Relu;
  bool norm_first = false;
  double layer_norm_eps = 1e-5;
  EMBER_CONFIG(TransformerDecoderLayerConfig, d_model, n_heads, d_ff, dropout, activation,
               norm_first, layer_norm_eps)

  template <Backend B>
  TransformerDecoderLayer<B> init(Device dev = B::default_device()) const {
    auto p = detail::transformer_layer_parts("transformer_decoder", *this);
    return {
        p.attention.init<B>(dev), p.attention.init<B>(dev), p.ff.init<B>(dev), p.norm.init<B>(dev),
        p.norm.init<B>(dev),      p.norm.init<B>(dev),      dropout,           norm_first};
  }
};

template <Backend B>
struct TransformerDecoder {
  std::vector<TransformerDecoderLayer<B>> layers;
  std::optional<LayerNorm<B>> norm;  // after the last layer
  EMBER_MODULE(TransformerDecoder, layers, norm)

  /// An empty cache for autoregressive decoding with forward(..., &cache).
  TransformerDecoderCache<B> new_cache() const {
    TransformerDecoderCache<B> c;
    c.self_attn.resize(layers.size());
    c.cross_attn.resize(layers.size());
    for (auto& x : c.cross_attn) x.static_kv = true;
    return c;
  }

  /// tgt: [batch, seq_t, d_model], memory: [batch, seq_m, d_model]. With a cache (from
  /// new_cache()), tgt holds only the new positions and masks.causal masks the future; a
  /// tgt_mask or tgt_key_padding_mask then covers the cached positions too.
  Tensor<B, 3> forward(const Tensor<B, 3>& tgt, const Tensor<B, 3>& memory,
                       const DecoderMasks<B>& masks = {},
                       TransformerDecoderCache<B>* cache = nullptr) const {
    if (cache &&
        (cache->self_attn.size() != layers.size() || cache->cross_attn.size() != layers.size()))
      throw ValueError("[transformer_decoder] the cache is for " +
                       std::to_string(cache->self_attn.size()) + " layers, the decoder has " +
                       std::to_string(layers.size()) + " (use new_cache())");
    Tensor<B, 3> y = tgt;
    for (size_t i = 0; i < layers.size(); ++i)
      y = layers[i].forward(y, memory, masks, cache ? &cache->self_attn[i] : nullptr,
                            cache ? &cache->cross_attn[i] : nullptr);
    return norm ? norm->forward(y) : y;
  }
};

struct TransformerDecoderConfig {
  int64_t n_layers = 1;
  int64_t d_model = 0;
  int64_t n_heads = 1;
  int64_t d_ff = 0;
  double dropout = 0.1;
  FfActivation activation = FfActivation::Relu;
  bool norm_first = false;
  double layer_norm_eps = 1e-5;
  bool final_norm = false;
  EMBER_CONFIG(TransformerDecoderConfig, n_layers, d_model, n_heads, d_ff, dropout, activation,
               norm_first, layer_norm_eps, final_norm)

  template <Backend B>
  TransformerDecoder<B> init(Device dev = B::default_device()) const {
    return detail::transformer_stack<TransformerDecoderLayerConfig, TransformerDecoder<B>, B>(
        "transformer_decoder", *this, dev);
  }
};

}  // namespace ember::nn
