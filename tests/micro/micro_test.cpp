// ember::micro on the host: each layer against the CPU backend's on random inputs and
// parameters (the host record bound in place by name), the arena's reuse and errors, and
// load_module's checks. The same code runs on the boards in embedded_qemu.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>

#include "ember/ember.h"
#include "ember/micro/micro.h"
#include "ember/nn/layers/conv.h"
#include "ember/nn/layers/embedding.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/layers/norm.h"
#include "ember/nn/layers/pool.h"
#include "ember/nn/layers/rnn.h"
#include "ember/nn/record.h"

namespace {

namespace mc = ember::micro;
using ember::Cpu;
using ember::Distribution;
using ember::Tensor;
using Micro = mc::Micro;

/// The handler of these tests: the error as an exception, so a test can expect it.
struct MicroError : std::runtime_error {
  using std::runtime_error::runtime_error;
};
void throw_error(const char* message) { throw MicroError(message); }

/// A host record turned into micro RecordEntries that point into its (kept) data.
struct HostRecord {
  ember::record::NamedTensors tensors;
  std::vector<std::vector<float>> data;
  std::vector<mc::RecordEntry> entries;
  mc::Record record() const { return {entries.data(), static_cast<int>(entries.size())}; }
};
template <class M>
HostRecord record_of(const M& host) {
  HostRecord r;
  r.tensors = ember::nn::to_record(host);
  r.data.reserve(r.tensors.size());
  for (const auto& [name, t] : r.tensors) {
    r.data.push_back(t.template to_vec<float>());
    mc::RecordEntry e{name.c_str(), static_cast<int>(t.shape().rank()), {}, r.data.back().data()};
    for (size_t i = 0; i < t.shape().rank(); ++i) e.dims[i] = t.shape()[i];
    r.entries.push_back(e);
  }
  return r;
}

template <int D>
Tensor<Cpu, D> random(ember::Shape s) {
  return Tensor<Cpu, D>::random(std::move(s), Distribution::normal(0, 1));
}
template <int D>
mc::Tensor<Micro, D> to_micro(const Tensor<Cpu, D>& t, std::vector<float>& keep) {
  keep = t.template to_vec<float>();
  std::array<int64_t, D> dims{};
  for (int i = 0; i < D; ++i) dims[i] = t.dim(i);
  return mc::Tensor<Micro, D>::from_const(keep.data(), dims);
}
template <int D>
void expect_close(const mc::Tensor<Micro, D>& got, const Tensor<Cpu, D>& want) {
  ASSERT_EQ(got.numel(), want.numel());
  for (int i = 0; i < D; ++i) ASSERT_EQ(got.dim(i), want.dim(i)) << "dim " << i;
  const auto w = want.template to_vec<float>();
  for (size_t i = 0; i < w.size(); ++i)
    ASSERT_NEAR(got.data()[i], w[i], 1e-5 + 1e-5 * std::abs(w[i])) << "element " << i;
}

class MicroTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ember::seed(11);
    previous_ = mc::set_error_handler(throw_error);
  }
  void TearDown() override { mc::set_error_handler(previous_); }
  mc::ErrorHandler previous_ = nullptr;
};

TEST_F(MicroTest, LinearMatchesTheCpuBackend) {
  auto host = ember::nn::LinearConfig{7, 5}.init<Cpu>();
  auto rec = record_of(host);
  auto micro = mc::nn::LinearConfig{7, 5}.init<Micro>();
  mc::nn::load_module(micro, rec.record());
  std::vector<float> keep;
  auto x = random<3>({2, 3, 7});
  expect_close(micro.forward(to_micro(x, keep)), host.forward(x));
  EXPECT_EQ(micro.weight.val().data(), rec.data[0].data()) << "the weights are read in place";
}

TEST_F(MicroTest, LinearWithInt8WeightsMatchesTheCpuBackendOnTheDequantizedWeights) {
  // q [5, 3] and one scale per column, as tools/micro_weights.py --int8 writes them.
  const std::vector<int8_t> q = {12, -127, 0, 5, 64, -3, 127, 1, -90, -40, 7, 33, 0, -8, 127};
  const std::vector<float> scale = {0.02f, 0.005f, 0.1f}, bias = {0.5f, -1.0f, 0.25f};
  std::vector<float> deq;
  for (size_t i = 0; i < q.size(); ++i) deq.push_back(static_cast<float>(q[i]) * scale[i % 3]);
  const mc::RecordEntry entries[] = {{"weight", 2, {5, 3}, nullptr, q.data(), scale.data()},
                                     {"bias", 1, {3}, bias.data()}};
  auto micro = mc::nn::LinearConfig{5, 3}.init<Micro>();
  mc::nn::load_module(micro, mc::Record{entries, 2});
  auto host = ember::nn::LinearConfig{5, 3}.init<Cpu>();
  host.weight.set(Tensor<Cpu, 2>::from_values(deq, {5, 3}));
  host.bias->set(Tensor<Cpu, 1>::from_values(bias, {3}));
  std::vector<float> keep;
  auto x = random<2>({4, 5});
  expect_close(micro.forward(to_micro(x, keep)), host.forward(x));
  EXPECT_THROW((void)micro.weight.val(), MicroError) << "int8 weights are Linear's alone";
}

TEST_F(MicroTest, Conv2dMatchesTheCpuBackend) {
  for (int64_t groups : {1, 2}) {
    auto cfg = ember::nn::Conv2dConfig{{4, 6}, {3, 2}}
                   .with_stride({2, 1})
                   .with_padding({1, 2})
                   .with_dilation({1, 2})
                   .with_groups(groups);
    auto host = cfg.init<Cpu>();
    auto rec = record_of(host);
    auto micro = mc::nn::Conv2dConfig{{4, 6}, {3, 2}}
                     .with_stride({2, 1})
                     .with_padding({1, 2})
                     .with_dilation({1, 2})
                     .with_groups(groups)
                     .init<Micro>();
    mc::nn::load_module(micro, rec.record());
    std::vector<float> keep;
    auto x = random<4>({2, 4, 9, 8});
    expect_close(micro.forward(to_micro(x, keep)), host.forward(x));
  }
}

TEST_F(MicroTest, Conv2dWithRowDilationMatchesTheCpuBackend) {
  // Three kernel rows two apart: the kernel's three-row step, and its fallback at the edges.
  auto host = ember::nn::Conv2dConfig{{2, 3}, {3, 3}}
                  .with_padding({2, 1})
                  .with_dilation({2, 1})
                  .init<Cpu>();
  auto rec = record_of(host);
  auto micro =
      mc::nn::Conv2dConfig{{2, 3}, {3, 3}}.with_padding({2, 1}).with_dilation({2, 1}).init<Micro>();
  mc::nn::load_module(micro, rec.record());
  std::vector<float> keep;
  auto x = random<4>({1, 2, 9, 7});
  expect_close(micro.forward(to_micro(x, keep)), host.forward(x));
}

TEST_F(MicroTest, Conv1dMatchesTheCpuBackend) {
  auto host = ember::nn::Conv1dConfig{{3, 5}, {4}}.with_padding({1}).init<Cpu>();
  auto rec = record_of(host);
  auto micro = mc::nn::Conv1dConfig{{3, 5}, {4}}.with_padding({1}).init<Micro>();
  mc::nn::load_module(micro, rec.record());
  std::vector<float> keep;
  auto x = random<3>({2, 3, 11});
  expect_close(micro.forward(to_micro(x, keep)), host.forward(x));
}

TEST_F(MicroTest, PoolingMatchesTheCpuBackend) {
  std::vector<float> keep;
  auto x = random<4>({2, 3, 7, 6});
  auto mx = to_micro(x, keep);
  expect_close(mc::nn::MaxPool2dConfig{{2, 2}}.init().forward(mx),
               ember::nn::MaxPool2dConfig{{2, 2}}.init().forward(x));
  expect_close(mc::nn::MaxPool2dConfig{{3, 3}, {2, 2}, {1, 1}}.init().forward(mx),
               ember::nn::MaxPool2dConfig{{3, 3}, {2, 2}, {1, 1}}.init().forward(x));
  expect_close(mc::nn::AvgPool2dConfig{{3, 2}, {1, 2}, {1, 0}}.init().forward(mx),
               ember::nn::AvgPool2dConfig{{3, 2}, {1, 2}, {1, 0}}.init().forward(x));
  auto x1 = random<3>({2, 3, 9});
  std::vector<float> keep1;
  auto mx1 = to_micro(x1, keep1);
  expect_close(mc::nn::MaxPool1dConfig{{3}, {2}, {1}}.init().forward(mx1),
               ember::nn::MaxPool1dConfig{{3}, {2}, {1}}.init().forward(x1));
  expect_close(mc::nn::AvgPool1dConfig{{2}}.init().forward(mx1),
               ember::nn::AvgPool1dConfig{{2}}.init().forward(x1));
}

TEST_F(MicroTest, LayerNormAndActivationsMatchTheCpuBackend) {
  auto host = ember::nn::LayerNormConfig{6}.init<Cpu>();
  // Non-trivial gamma and beta, so that the test sees them applied.
  host.gamma->set(random<1>({6}));
  host.beta->set(random<1>({6}));
  auto rec = record_of(host);
  auto micro = mc::nn::LayerNormConfig{6}.init<Micro>();
  mc::nn::load_module(micro, rec.record());
  std::vector<float> keep;
  auto x = random<2>({4, 6});
  auto mx = to_micro(x, keep);
  expect_close(micro.forward(mx), host.forward(x));
  namespace ha = ember::activation;
  namespace ma = mc::activation;
  expect_close(ma::relu(mx), ha::relu(x));
  expect_close(ma::sigmoid(mx), ha::sigmoid(x));
  expect_close(ma::tanh(mx), ha::tanh(x));
  expect_close(ma::silu(mx), ha::silu(x));
  expect_close(ma::gelu(mx), ha::gelu(x));
  expect_close(ma::leaky_relu(mx, 0.2), ha::leaky_relu(x, 0.2));
  expect_close(ma::softmax(mx, 1), ha::softmax(x, 1));
  expect_close(ma::log_softmax(mx, -1), ha::log_softmax(x, -1));
}

TEST_F(MicroTest, BatchNormAndEmbeddingMatchTheCpuBackend) {
  auto host = ember::nn::BatchNormConfig{3}.init<Cpu>();
  host.gamma->set(random<1>({3}));
  host.beta->set(random<1>({3}));
  host.running_mean.set(random<1>({3}));
  host.running_var.set(Tensor<Cpu, 1>::random({3}, Distribution::uniform(0.5, 2)));
  auto rec = record_of(host);
  auto micro = mc::nn::BatchNormConfig{3}.init<Micro>();
  mc::nn::load_module(micro, rec.record());
  std::vector<float> keep;
  auto x = random<4>({2, 3, 4, 5});
  expect_close(micro.forward(to_micro(x, keep)), host.forward(x));

  auto emb = ember::nn::EmbeddingConfig{10, 4}.init<Cpu>();
  auto erec = record_of(emb);
  auto memb = mc::nn::EmbeddingConfig{10, 4}.init<Micro>();
  mc::nn::load_module(memb, erec.record());
  const std::vector<int32_t> ids = {3, 0, 9, 3, 7, 1};
  auto hid =
      Tensor<Cpu, 2, ember::Int>::from_values(std::vector<int64_t>(ids.begin(), ids.end()), {2, 3});
  expect_close(memb.forward<2>(ids.data(), {2, 3}), emb.forward(hid));
  const int32_t bad = 10;
  EXPECT_THROW(memb.forward<1>(&bad, {1}), MicroError);
}

TEST_F(MicroTest, GruAndLstmMatchTheCpuBackend) {
  for (bool batch_first : {false, true}) {
    SCOPED_TRACE(batch_first ? "batch first" : "time first");
    std::vector<float> kx, kh, kc;
    auto x = random<3>({5, 2, 3});  // [seq, batch, 3] or [batch, seq, 3]
    auto h0 = random<3>({2, batch_first ? 5 : 2, 4});
    auto c0 = random<3>({2, batch_first ? 5 : 2, 4});
    auto gru =
        ember::nn::GruConfig{3, 4}.with_num_layers(2).with_batch_first(batch_first).init<Cpu>();
    auto grec = record_of(gru);
    auto mgru =
        mc::nn::GruConfig{3, 4}.with_num_layers(2).with_batch_first(batch_first).init<Micro>();
    mc::nn::load_module(mgru, grec.record());
    auto want = gru.forward(x, h0);
    auto got = mgru.forward(to_micro(x, kx), to_micro(h0, kh));
    expect_close(got.output, want.output);
    expect_close(got.h_n, want.h_n);

    auto lstm =
        ember::nn::LstmConfig{3, 4}.with_num_layers(2).with_batch_first(batch_first).init<Cpu>();
    auto lrec = record_of(lstm);
    auto mlstm =
        mc::nn::LstmConfig{3, 4}.with_num_layers(2).with_batch_first(batch_first).init<Micro>();
    mc::nn::load_module(mlstm, lrec.record());
    auto lw = lstm.forward(x, ember::nn::LstmState<Cpu>{h0, c0});
    auto lg = mlstm.forward(to_micro(x, kx),
                            mc::nn::LstmState<Micro>{to_micro(h0, kh), to_micro(c0, kc)});
    expect_close(lg.output, lw.output);
    expect_close(lg.h_n, lw.h_n);
    expect_close(lg.c_n, lw.c_n);
    auto zero_state = mlstm.forward(to_micro(x, kx));
    expect_close(zero_state.output, lstm.forward(x).output);
  }
}

TEST_F(MicroTest, ATemporaryIsReusedInPlaceAndTheArenaIsGivenBack) {
  const size_t before = mc::arena_stats().in_use;
  {
    auto t = mc::Tensor<Micro, 2>::full({16, 16}, -1.0f);
    const float* p = t.data();
    mc::arena_reset_high_water();
    auto r = mc::activation::relu(std::move(t));
    EXPECT_EQ(r.data(), p);
    EXPECT_EQ(r.data()[5], 0.0f);
    EXPECT_EQ(mc::arena_stats().high_water, mc::arena_stats().in_use) << "no new block";
    auto shared = r;  // two owners: the next op may not write in place
    auto s = mc::activation::sigmoid(shared);
    EXPECT_NE(s.data(), p);
    EXPECT_EQ(r.data()[0], 0.0f);
  }
  EXPECT_EQ(mc::arena_stats().in_use, before);
}

TEST_F(MicroTest, RunningOutOfArenaGoesToTheHandler) {
  const size_t capacity = mc::arena_stats().capacity;
  try {
    auto big = mc::Tensor<Micro, 1>::zeros({static_cast<int64_t>(capacity)});
    FAIL() << "allocated " << big.numel() << " floats from " << capacity << " bytes";
  } catch (const MicroError& e) {
    EXPECT_NE(std::string(e.what()).find("[full] out of memory: "), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("of " + std::to_string(capacity) + " in the arena"),
              std::string::npos)
        << e.what();
  }
}

TEST_F(MicroTest, SizesBeyondTheAddressSpaceAreErrorsNotOverflows) {
  using T2 = mc::Tensor<Micro, 2>;
  EXPECT_THROW((void)T2::zeros({int64_t{1} << 40, 4}), MicroError);
  EXPECT_THROW((void)mc::arena_alloc(SIZE_MAX - 3, "test"), MicroError);
  static const float w[] = {1, 2};
  auto c = mc::Tensor<Micro, 1>::from_const(w, {2});
  EXPECT_FALSE(c.writable());
  EXPECT_THROW((void)c.mut(), MicroError) << "constant data is never written";
}

TEST_F(MicroTest, LoadModuleChecksNamesAndShapes) {
  auto rec = record_of(ember::nn::LinearConfig{4, 3}.init<Cpu>());
  auto wrong = mc::nn::LinearConfig{3, 4}.init<Micro>();
  EXPECT_THROW(mc::nn::load_module(wrong, rec.record()), MicroError);
  auto no_bias = mc::nn::LinearConfig{4, 3, false}.init<Micro>();
  try {
    mc::nn::load_module(no_bias, rec.record());
    FAIL() << "an unused record tensor was accepted";
  } catch (const MicroError& e) {
    EXPECT_NE(std::string(e.what()).find("the record has 2 tensors, the module 1"),
              std::string::npos)
        << e.what();
  }
  auto unbound = mc::nn::LinearConfig{4, 3}.init<Micro>();
  std::vector<float> keep;
  EXPECT_THROW(unbound.forward(to_micro(random<2>({1, 4}), keep)), MicroError);
}

TEST_F(MicroTest, ShapeErrorsNameTheOpAndTheShapes) {
  auto a = mc::Tensor<Micro, 2>::zeros({2, 3});
  try {
    (void)a.matmul(mc::Tensor<Micro, 2>::zeros({2, 3}));
    FAIL();
  } catch (const MicroError& e) {
    EXPECT_STREQ(e.what(), "[matmul] inner dims differ: lhs [2, 3], rhs [2, 3]");
  }
  EXPECT_THROW((void)a.reshape<2>({4, -1}), MicroError);
  EXPECT_EQ(a.reshape<1>({-1}).dim(0), 6);
}

}  // namespace
