// The autodiff suite: forward + backward of an MLP (784-256-10, ReLU, cross-entropy) at
// batch 64 on Autodiff<Cpu> and Autodiff<Dispatch>, beside the forward pass alone; and
// forward + backward of a ResNet-sized 3x3 conv (input and weight gradients). Run through
// scripts/bench.sh autodiff, which times the same steps in PyTorch in the same run.
#include <benchmark/benchmark.h>

#include <string>

#include "ember/ember.h"

namespace {

using namespace ember;
using benchmark::State;

constexpr int64_t kBatch = 64, kIn = 784, kHidden = 256, kOut = 10;

template <Backend B>
Tensor<B, 2> init(int64_t fan_in, Shape s) {
  double k = 1.0 / std::sqrt(static_cast<double>(fan_in));
  return Tensor<B, 2>::random(std::move(s), Distribution::uniform(-k, k)).require_grad();
}

template <Backend B>
struct Mlp {
  Tensor<B, 2> w1 = init<B>(kIn, {kIn, kHidden}), b1 = init<B>(kIn, {1, kHidden});
  Tensor<B, 2> w2 = init<B>(kHidden, {kHidden, kOut}), b2 = init<B>(kHidden, {1, kOut});
  Tensor<B, 2> x = Tensor<B, 2>::random({kBatch, kIn}, Distribution::uniform(0, 1));
  Tensor<B, 2> target = Tensor<B, 1, Int>::random({kBatch}, Distribution::uniform(0, kOut))
                            .template one_hot<2, Float>(kOut);

  Tensor<B, 1> loss() const {
    auto h = activation::relu(x.matmul(w1) + b1);
    auto logits = h.matmul(w2) + b2;
    return (activation::log_softmax(logits, 1) * target).sum_dim(1).mean().neg();
  }
};

template <Backend B>
void bm_mlp_step(State& st) {
  Mlp<B> m;
  for (auto _ : st) {
    auto grads = m.loss().backward();
    benchmark::DoNotOptimize(grads);
  }
  st.counters["flop"] = 3.0 * 2 * kBatch * (kIn * kHidden + kHidden * kOut);
}

template <Backend B>
void bm_mlp_forward(State& st) {
  Mlp<B> m;
  autodiff::NoGradGuard no_grad;
  for (auto _ : st) {
    auto l = m.loss();
    benchmark::DoNotOptimize(l);
  }
  st.counters["flop"] = 2.0 * kBatch * (kIn * kHidden + kHidden * kOut);
}

// conv2d [8, 64, 56, 56] * [64, 64, 3, 3], padding 1: the loss is the output's sum, so
// backward runs the input gradient (conv_transpose) and the weight gradient.
constexpr int64_t kConvN = 8, kConvC = 64, kConvHW = 56;

void bm_conv2d_step(State& st) {
  using B = Autodiff<Cpu>;
  auto x = Tensor<B, 4>::random({kConvN, kConvC, kConvHW, kConvHW}, Distribution::uniform(-1, 1))
               .require_grad();
  auto w =
      Tensor<B, 4>::random({kConvC, kConvC, 3, 3}, Distribution::uniform(-0.1, 0.1)).require_grad();
  for (auto _ : st) {
    auto grads = conv2d(x, w, {.padding = {1}}).sum().backward();
    benchmark::DoNotOptimize(grads);
  }
  st.counters["flop"] = 3.0 * 2 * kConvN * kConvC * kConvHW * kConvHW * kConvC * 9;
}

// A depthwise 5x5 conv of an EfficientNet stage (stride 1, padding 2): the input gradient (the
// transposed conv) and the weight gradient of the output's sum.
constexpr int64_t kDwN = 8, kDwC = 96, kDwHW = 56, kDwK = 5;

void bm_depthwise_step(State& st) {
  using B = Autodiff<Cpu>;
  auto x =
      Tensor<B, 4>::random({kDwN, kDwC, kDwHW, kDwHW}, Distribution::uniform(-1, 1)).require_grad();
  auto w =
      Tensor<B, 4>::random({kDwC, 1, kDwK, kDwK}, Distribution::uniform(-0.2, 0.2)).require_grad();
  for (auto _ : st) {
    auto grads = conv2d(x, w, {.padding = {kDwK / 2}, .groups = kDwC}).sum().backward();
    benchmark::DoNotOptimize(grads);
  }
  st.counters["flop"] = 3.0 * 2 * kDwN * kDwC * kDwHW * kDwHW * kDwK * kDwK;
}

}  // namespace

// Names: "<backend>/<op>/<size>", paired by merge_bench.py with the peer's "<op>/<size>".
BENCHMARK(bm_mlp_step<Autodiff<Cpu>>)->Name("autodiff_cpu/mlp_step/64")->UseRealTime();
BENCHMARK(bm_mlp_step<Autodiff<Dispatch>>)->Name("autodiff_dispatch/mlp_step/64")->UseRealTime();
BENCHMARK(bm_mlp_forward<Autodiff<Cpu>>)->Name("autodiff_cpu/mlp_forward/64")->UseRealTime();
BENCHMARK(bm_conv2d_step)
    ->Name("autodiff_cpu/conv2d_step/resnet_3x3_8x64x56x56")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);
BENCHMARK(bm_depthwise_step)
    ->Name("autodiff_cpu/depthwise_step/5x5_8x96x56x56")
    ->UseRealTime()
    ->Unit(benchmark::kMillisecond);

int main(int argc, char** argv) {
  benchmark::AddCustomContext("ember_threads", std::to_string(ember::num_threads()));
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
