// Sequence layers against PyTorch (tests/nn/seq_goldens.json, from tools/gen_seq_goldens.py):
// outputs, input and parameter gradients and parameter counts of Rnn/Lstm/Gru,
// MultiHeadAttention, the transformer blocks, positional encodings and SwiGlu; and the
// properties PyTorch cannot check for us: KV-cache decoding equals the full causal pass, fully
// masked queries stay finite, mask shape errors.
#include "layer_golden.h"

#include "ember/nn/layers/attention.h"
#include "ember/nn/layers/positional.h"
#include "ember/nn/layers/rnn.h"
#include "ember/nn/layers/transformer.h"

namespace ember::test {
namespace {

using nlohmann::json;
using Mask = Tensor<AD, 2, Bool>;

/// The case's options ("opts").
bool opt(const json& c, const char* k) { return c.at("opts").value(k, false); }

Tensor<AD, 1> flat(const Tensor<AD, 3>& t) { return t.reshape<1>({-1}); }

template <class Config>
void recurrent_case(const json& c) {
  auto m = build<Config>(c);
  EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
  auto x = case_input<3>(c, 0);
  if constexpr (std::is_same_v<Config, nn::LstmConfig>) {
    if (opt(c, "state")) {
      auto h0 = case_input<3>(c, 1), c0 = case_input<3>(c, 2);
      auto r = m.forward(x, nn::LstmState<AD>{h0, c0});
      check_case(c, m, cat<AD, 1, Float>({flat(r.output), flat(r.h_n), flat(r.c_n)}, 0),
                 std::tuple(x, h0, c0));
    } else {
      auto r = m.forward(x);
      check_case(c, m, cat<AD, 1, Float>({flat(r.output), flat(r.h_n), flat(r.c_n)}, 0),
                 std::tuple(x));
    }
  } else {
    if (opt(c, "state")) {
      auto h0 = case_input<3>(c, 1);
      auto r = m.forward(x, h0);
      check_case(c, m, cat<AD, 1, Float>({flat(r.output), flat(r.h_n)}, 0), std::tuple(x, h0));
    } else {
      auto r = m.forward(x);
      check_case(c, m, cat<AD, 1, Float>({flat(r.output), flat(r.h_n)}, 0), std::tuple(x));
    }
  }
}

void mha_case(const json& c) {
  auto m = build<nn::MultiHeadAttentionConfig>(c);
  EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
  const bool self = opt(c, "self");
  size_t i = 0;
  auto q = case_input<3>(c, i++);
  auto k = self ? q : case_input<3>(c, i++);
  auto v = self ? q : case_input<3>(c, i++);
  nn::MhaOptions<AD> o;
  if (opt(c, "kpm")) o.key_padding_mask = case_input<2, Bool>(c, i++);
  if (opt(c, "attn_mask")) o.attn_mask = case_input<2, Bool>(c, i++);
  o.causal = opt(c, "causal");
  o.need_weights = opt(c, "weights");
  auto r = m.forward(q, k, v, o);
  auto check = [&](const auto& out) {
    if (self)
      check_case(c, m, out, std::tuple(q));
    else
      check_case(c, m, out, std::tuple(q, k, v));
  };
  if (o.need_weights) {
    ASSERT_TRUE(r.weights.has_value());
    // PyTorch averages the heads; the output joins in for the value and output gradients.
    auto w = r.weights->mean_dim(1).reshape<1>({-1});
    check(cat<AD, 1, Float>({w, flat(r.output)}, 0));
  } else {
    EXPECT_FALSE(r.weights.has_value());
    check(r.output);
  }
}

const std::map<std::string, LayerFn>& layers() {
  static const std::map<std::string, LayerFn> map = {
      {"rnn", recurrent_case<nn::RnnConfig>},
      {"lstm", recurrent_case<nn::LstmConfig>},
      {"gru", recurrent_case<nn::GruConfig>},
      {"mha", mha_case},
      {"feed_forward",
       [](const json& c) {
         auto m = build<nn::PositionWiseFeedForwardConfig>(c);
         EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
         auto x = case_input<3>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
      {"swiglu",
       [](const json& c) {
         auto m = build<nn::SwiGluConfig>(c);
         EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
         auto x = case_input<3>(c, 0);
         check_case(c, m, m.forward(x), std::tuple(x));
       }},
      {"encoder_layer",
       [](const json& c) {
         auto m = build<nn::TransformerEncoderLayerConfig>(c);
         EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
         auto x = case_input<3>(c, 0);
         nn::EncoderMasks<AD> masks;
         if (opt(c, "kpm")) masks.key_padding_mask = case_input<2, Bool>(c, 1);
         if (opt(c, "mask")) masks.mask = case_input<2, Bool>(c, 2);
         check_case(c, m, m.forward(x, masks), std::tuple(x));
       }},
      {"encoder",
       [](const json& c) {
         auto m = build<nn::TransformerEncoderConfig>(c);
         EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
         auto x = case_input<3>(c, 0);
         check_case(c, m, m.forward(x, {.key_padding_mask = case_input<2, Bool>(c, 1)}),
                    std::tuple(x));
       }},
      {"decoder_layer",
       [](const json& c) {
         auto m = build<nn::TransformerDecoderLayerConfig>(c);
         EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
         auto t = case_input<3>(c, 0), mem = case_input<3>(c, 1);
         nn::DecoderMasks<AD> masks;
         masks.causal = opt(c, "causal");
         if (opt(c, "masks")) {
           masks.tgt_mask = case_input<2, Bool>(c, 2);
           masks.tgt_key_padding_mask = case_input<2, Bool>(c, 3);
           masks.memory_mask = case_input<2, Bool>(c, 4);
           masks.memory_key_padding_mask = case_input<2, Bool>(c, 5);
         }
         check_case(c, m, m.forward(t, mem, masks), std::tuple(t, mem));
       }},
      {"decoder",
       [](const json& c) {
         auto m = build<nn::TransformerDecoderConfig>(c);
         EXPECT_EQ(nn::num_params(m), c.at("torch_params").get<int64_t>());
         auto t = case_input<3>(c, 0), mem = case_input<3>(c, 1);
         nn::DecoderMasks<AD> masks{.causal = true,
                                    .memory_key_padding_mask = case_input<2, Bool>(c, 2)};
         check_case(c, m, m.forward(t, mem, masks), std::tuple(t, mem));
       }},
      {"positional",
       [](const json& c) {
         auto m = build<nn::PositionalEncodingConfig>(c);
         EXPECT_EQ(nn::num_params(m), 0);
         auto x = case_input<3>(c, 0);
         check_case(c, m, m.forward(x, c.at("opts").at("start").get<int64_t>()), std::tuple(x));
       }},
      {"rotary",
       [](const json& c) {
         auto m = build<nn::RotaryEncodingConfig>(c);
         EXPECT_EQ(nn::num_params(m), 0);
         const int64_t start = c.at("opts").at("start").get<int64_t>();
         if (c.at("inputs").at(0).at("shape").size() == 4) {
           auto x = case_input<4>(c, 0);
           check_case(c, m, m.forward(x, start), std::tuple(x));
         } else {
           auto x = case_input<3>(c, 0);
           check_case(c, m, m.forward(x, start), std::tuple(x));
         }
       }},
  };
  return map;
}

TEST(SeqGoldens, MatchPyTorch) {
  const json file = read_json(EMBER_SEQ_GOLDENS);
  std::map<std::string, int> per_key;
  for (const auto& c : file.at("cases")) {
    SCOPED_TRACE(c.at("id").get<std::string>());
    auto it = layers().find(c.at("key").get<std::string>());
    ASSERT_NE(it, layers().end()) << "no layer for key " << c.at("key");
    it->second(c);
    ++per_key[it->first];
  }
  for (const auto& [key, fn] : layers()) EXPECT_GE(per_key[key], 2) << key;
  EXPECT_GE(file.at("cases").size(), 50u);
}

// ---- KV cache ------------------------------------------------------------------------------

using T3 = Tensor<Dispatch, 3>;

T3 rand3(int64_t a, int64_t b, int64_t c) {
  return T3::random({a, b, c}, Distribution::uniform(-1, 1));
}

/// Runs x through `step(chunk)` in chunks of the given sizes and concatenates the outputs.
template <class Step>
T3 in_chunks(const T3& x, const std::vector<int64_t>& sizes, Step step) {
  std::vector<T3> outs;
  int64_t at = 0;
  for (int64_t n : sizes) {
    outs.push_back(step(x.narrow(1, at, n)));
    at += n;
  }
  EXPECT_EQ(at, x.dim(1));
  return cat(outs, 1);
}

TEST(MhaCache, IncrementalDecodingMatchesTheFullCausalPass) {
  auto m = nn::MultiHeadAttentionConfig{8, 2}.init<Dispatch>();
  auto x = rand3(2, 7, 8);
  auto full = m.forward(x, x, x, {.causal = true}).output;
  for (auto sizes : {std::vector<int64_t>{1, 1, 1, 1, 1, 1, 1}, std::vector<int64_t>{3, 1, 2, 1}}) {
    nn::MhaCache<Dispatch> cache;
    auto inc = in_chunks(x, sizes, [&](const T3& xt) {
      return m.forward(xt, xt, xt, {.causal = true, .cache = &cache}).output;
    });
    EXPECT_EQ(cache.len(), 7);
    EXPECT_TRUE(inc.all_close(full, 1e-5, 1e-6));
  }
  // A key padding mask covers the cached keys too.
  auto pad =
      Tensor<Dispatch, 2, Bool>::from_values<bool>({false, false, false, false, false, false, false,
                                                    false, true, false, false, false, true, true},
                                                   {2, 7});
  auto full_p = m.forward(x, x, x, {.key_padding_mask = pad, .causal = true}).output;
  nn::MhaCache<Dispatch> cache;
  int64_t len = 0;
  auto inc = in_chunks(x, {2, 2, 3}, [&](const T3& xt) {
    len += xt.dim(1);
    auto p = pad.narrow(1, 0, len);
    return m.forward(xt, xt, xt, {.key_padding_mask = p, .causal = true, .cache = &cache}).output;
  });
  EXPECT_TRUE(inc.all_close(full_p, 1e-5, 1e-6));
}

TEST(MhaCache, StaticCacheProjectsTheMemoryOnce) {
  auto m = nn::MultiHeadAttentionConfig{8, 4}.init<Dispatch>();
  auto q = rand3(2, 3, 8), mem = rand3(2, 5, 8);
  auto full = m.forward(q, mem, mem).output;
  nn::MhaCache<Dispatch> cache{.static_kv = true};
  auto inc = in_chunks(q, {1, 2}, [&](const T3& qt) {
    auto y = m.forward(qt, mem, mem, {.cache = &cache}).output;
    EXPECT_EQ(cache.len(), 5);  // never grows
    return y;
  });
  EXPECT_TRUE(inc.all_close(full, 1e-5, 1e-6));
}

TEST(DecoderCache, AutoregressiveDecodingMatchesTheFullPass) {
  for (bool norm_first : {false, true}) {
    SCOPED_TRACE(norm_first ? "pre-norm" : "post-norm");
    auto dec = nn::TransformerDecoderConfig{2, 8, 2, 16}
                   .with_dropout(0.1)  // inactive: Dispatch is not a training backend
                   .with_norm_first(norm_first)
                   .with_final_norm(norm_first)
                   .init<Dispatch>();
    auto tgt = rand3(2, 6, 8), mem = rand3(2, 4, 8);
    auto mem_pad = Tensor<Dispatch, 2, Bool>::from_values<bool>(
        {false, false, false, false, false, false, true, true}, {2, 4});
    nn::DecoderMasks<Dispatch> masks{.causal = true, .memory_key_padding_mask = mem_pad};
    auto full = dec.forward(tgt, mem, masks);
    auto cache = dec.new_cache();
    auto inc = in_chunks(tgt, {1, 1, 2, 1, 1},
                         [&](const T3& t) { return dec.forward(t, mem, masks, &cache); });
    EXPECT_EQ(cache.len(), 6);
    EXPECT_EQ(cache.cross_attn[1].len(), 4);
    EXPECT_TRUE(inc.all_close(full, 1e-5, 1e-5));
  }
}

// ---- masks -----------------------------------------------------------------------------------

TEST(Mha, FullyMaskedQueriesGetZeroWeightsNotNaN) {
  auto m = nn::MultiHeadAttentionConfig{8, 2}.init<AD>();
  auto x = Tensor<AD, 3>::random({2, 4, 8}, Distribution::uniform(-1, 1)).require_grad();
  // Batch 1 has every key padded; in batch 0 query 2 is masked out of every key.
  auto pad = Mask::from_values<bool>({false, false, false, false, true, true, true, true}, {2, 4});
  std::vector<bool> am(16, false);
  for (int j = 0; j < 4; ++j) am[2 * 4 + j] = true;
  auto attn = Mask::from_values<bool>(am, {4, 4});
  auto r = m.forward(x, x, x, {.key_padding_mask = pad, .attn_mask = attn, .need_weights = true});
  EXPECT_FALSE(r.output.inner().contains_nan().into_scalar());
  auto w = r.weights->inner();
  EXPECT_FALSE(w.contains_nan().into_scalar());
  // Zero rows: all of batch 1, query 2 of batch 0; the others sum to 1.
  auto sums = w.sum_dim(3).to_vec<float>();  // [2, 2, 4, 1]
  for (int b = 0; b < 2; ++b)
    for (int h = 0; h < 2; ++h)
      for (int i = 0; i < 4; ++i)
        EXPECT_NEAR(sums[static_cast<size_t>((b * 2 + h) * 4 + i)], b == 1 || i == 2 ? 0.0 : 1.0,
                    1e-6);
  // Their output is the output layer's bias.
  auto row = r.output.inner().narrow(0, 1, 1).reshape<2>({4, 8});
  auto bias = m.output.bias->val().inner().reshape<2>({1, 8}).expand<2>({4, 8});
  EXPECT_TRUE(row.all_close(bias, 1e-6, 1e-7));
  auto grads = r.output.sum().backward();
  EXPECT_FALSE(x.grad(grads)->contains_nan().into_scalar());
  EXPECT_FALSE(m.query.weight.val().grad(grads)->contains_nan().into_scalar());
}

template <class F>
void expect_error(F f, const std::string& what) {
  try {
    f();
    ADD_FAILURE() << "no error, expected " << what;
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find(what), std::string::npos) << e.what();
  }
}

TEST(Mha, MaskAndShapeErrorsNameTheLayerAndShapes) {
  auto m = nn::MultiHeadAttentionConfig{8, 2}.init<Dispatch>();
  auto q = rand3(2, 3, 8), kv = rand3(2, 5, 8);
  using M2 = Tensor<Dispatch, 2, Bool>;
  expect_error(
      [&] {
        m.forward(q, kv, kv, {.key_padding_mask = M2::zeros({2, 3})});
      },
      "[mha] key_padding_mask [2, 3] must be [batch, seq_k] = [2, 5]");
  expect_error(
      [&] {
        m.forward(q, kv, kv, {.key_padding_mask = M2::zeros({3, 5})});
      },
      "key_padding_mask [3, 5]");
  expect_error(
      [&] {
        m.forward(q, kv, kv, {.attn_mask = M2::zeros({5, 3})});
      },
      "[mha] attn_mask [5, 3] must be [seq_q, seq_k] = [3, 5]");
  expect_error([&] { m.forward(q, rand3(2, 5, 6), kv); }, "[mha] inputs must end in d_model 8");
  expect_error([&] { m.forward(q, kv, rand3(2, 4, 8)); }, "[mha] query, key and value");
  nn::MhaCache<Dispatch> cache;
  m.forward(q, q, q, {.cache = &cache});
  expect_error(
      [&] { m.forward(rand3(1, 1, 8), rand3(1, 1, 8), rand3(1, 1, 8), {.cache = &cache}); },
      "[mha] the cache holds batch 2");
  EXPECT_THROW((nn::MultiHeadAttentionConfig{8, 3}.init<Dispatch>()), ValueError);
  EXPECT_THROW((nn::TransformerEncoderLayerConfig{8, 3, 16}.init<Dispatch>()), ValueError);
  auto enc = nn::TransformerEncoderLayerConfig{8, 2, 16}.init<Dispatch>();
  expect_error([&] { enc.forward(q, {.mask = M2::zeros({3, 4})}); }, "[mha] attn_mask [3, 4]");
}

TEST(Recurrent, ShapeErrorsNameTheLayerAndShapes) {
  auto lstm = nn::LstmConfig{4, 5}.with_num_layers(2).init<Dispatch>();
  auto x = rand3(6, 3, 4);
  auto h = Tensor<Dispatch, 3>::zeros({1, 3, 5});
  expect_error(
      [&] {
        lstm.forward(x, nn::LstmState<Dispatch>{h, h});
      },
      "[lstm] h_0 [1, 3, 5] must be [num_layers * dirs, batch, d_hidden] = [2, 3, 5]");
  expect_error([&] { lstm.forward(rand3(6, 3, 5)); },
               "[lstm] input [6, 3, 5] does not end in "
               "d_input 4");
  auto gru = nn::GruConfig{4, 5}.with_bidirectional(true).init<Dispatch>();
  expect_error(
      [&] {
        gru.forward(x, Tensor<Dispatch, 3>::zeros({1, 3, 5}));
      },
      "[gru] h_0 [1, 3, 5]");
  EXPECT_THROW((nn::RnnConfig{4, 5}.with_num_layers(0).init<Dispatch>()), ValueError);
  auto pe = nn::PositionalEncodingConfig{8, 10}.init<Dispatch>();
  expect_error([&] { pe.forward(rand3(1, 6, 8), 5); }, "[positional_encoding] positions 5..11");
  EXPECT_THROW((nn::RotaryEncodingConfig{7}.init<Dispatch>()), ValueError);
}

// ---- the rest ----------------------------------------------------------------------------------

TEST(SeqLayers, ParamCountsAreLazyAndMatchPyTorch) {
  // torch.nn.LSTM(10, 20, num_layers=2, bidirectional=True): 15040 parameters.
  auto lstm = nn::LstmConfig{10, 20}.with_num_layers(2).with_bidirectional(true).init<Dispatch>();
  EXPECT_EQ(nn::num_params(lstm), 15040);
  bool any_init = false;
  nn::for_each_param(
      lstm, [&](const std::string&, const auto& p) { any_init = any_init || p.is_initialized(); });
  EXPECT_FALSE(any_init);
  EXPECT_EQ(nn::param_paths(lstm).front(), "layers.0.fwd.ih.weight");
  EXPECT_EQ(nn::param_paths(lstm).back(), "layers.1.rev.hh.bias");
  // torch.nn.GRU(10, 20): 3 * 20 * (10 + 20 + 2) = 1920; torch.nn.RNN(10, 20, bias=False): 600.
  EXPECT_EQ(nn::num_params(nn::GruConfig{10, 20}.init<Dispatch>()), 1920);
  EXPECT_EQ(nn::num_params(nn::RnnConfig{10, 20}.with_bias(false).init<Dispatch>()), 600);
  // torch.nn.TransformerEncoderLayer(512, 8, 2048): 3152384.
  EXPECT_EQ(nn::num_params(nn::TransformerEncoderLayerConfig{512, 8, 2048}.init<Dispatch>()),
            3152384);
  // torch.nn.TransformerDecoderLayer(512, 8, 2048): 4204032.
  EXPECT_EQ(nn::num_params(nn::TransformerDecoderLayerConfig{512, 8, 2048}.init<Dispatch>()),
            4204032);
}

TEST(SeqLayers, ConfigsRoundTripThroughJson) {
  auto c = nn::RnnConfig{3, 4}.with_nonlinearity(nn::RnnNonlinearity::Relu).with_num_layers(2);
  EXPECT_NE(nn::config_json(c).find("\"relu\""), std::string::npos);
  EXPECT_EQ(nn::config_from_json<nn::RnnConfig>(nn::config_json(c)), c);
  auto t = nn::TransformerDecoderConfig{2, 8, 2, 16}.with_activation(nn::FfActivation::Gelu);
  EXPECT_EQ(nn::config_from_json<nn::TransformerDecoderConfig>(nn::config_json(t)), t);
}

TEST(SeqLayers, InferenceBackendMatchesTheTrainingOne) {
  auto lstm = nn::LstmConfig{3, 4}.with_bidirectional(true).with_batch_first(true).init<AD>();
  auto x = Tensor<AD, 3>::random({2, 5, 3}, Distribution::uniform(-1, 1));
  auto a = lstm.forward(x);
  auto b = nn::valid(lstm).forward(x.inner());
  EXPECT_TRUE(a.output.inner().all_close(b.output, 1e-6, 1e-7));
  EXPECT_TRUE(a.c_n.inner().all_close(b.c_n, 1e-6, 1e-7));
  // The last output step of the forward direction is its final hidden state.
  auto last = b.output.narrow(1, 4, 1).narrow(2, 0, 4).reshape<2>({2, 4});
  EXPECT_TRUE(last.all_close(b.h_n.narrow(0, 0, 1).reshape<2>({2, 4}), 1e-6, 1e-7));
  // And the first step of the reverse direction is the reverse final state.
  auto first = b.output.narrow(1, 0, 1).narrow(2, 4, 4).reshape<2>({2, 4});
  EXPECT_TRUE(first.all_close(b.h_n.narrow(0, 1, 1).reshape<2>({2, 4}), 1e-6, 1e-7));
}

TEST(SeqLayers, DropoutActsOnlyWhileTraining) {
  auto enc = nn::TransformerEncoderConfig{2, 8, 2, 16}.with_dropout(0.5).init<AD>();
  auto gru = nn::GruConfig{8, 8}.with_num_layers(2).with_dropout(0.5).init<AD>();
  auto x = Tensor<AD, 3>::random({2, 5, 8}, Distribution::uniform(-1, 1));
  auto eval_enc = nn::valid(enc).forward(x.inner());
  auto eval_gru = nn::valid(gru).forward(x.inner()).output;
  EXPECT_FALSE(enc.forward(x).inner().all_close(eval_enc, 1e-4, 1e-5));
  EXPECT_FALSE(gru.forward(x).output.inner().all_close(eval_gru, 1e-4, 1e-5));
  autodiff::NoGradGuard ng;
  EXPECT_TRUE(enc.forward(x).inner().all_close(eval_enc, 1e-6, 1e-7));
  EXPECT_TRUE(gru.forward(x).output.inner().all_close(eval_gru, 1e-6, 1e-7));
}

TEST(Rotary, ScoresDependOnlyOnRelativePositions) {
  for (bool interleaved : {false, true}) {
    auto rope = nn::RotaryEncodingConfig{8}.with_interleaved(interleaved).init<Dispatch>();
    auto q = rand3(1, 1, 8), k = rand3(1, 1, 8);
    auto score = [&](int64_t m, int64_t n) {
      return rope.forward(q, m).mul(rope.forward(k, n)).sum().into_scalar();
    };
    EXPECT_NEAR(score(3, 1), score(12, 10), 1e-5);
    EXPECT_NEAR(score(0, 5), score(20, 25), 1e-5);
    // Position 0 is the identity.
    EXPECT_TRUE(rope.forward(q, 0).all_close(q, 1e-6, 1e-7));
  }
}

}  // namespace
}  // namespace ember::test
