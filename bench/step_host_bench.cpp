// step_host_bench: the host's cost of a training step: the main job's MLP shape of step
// (two linears, relu, cross-entropy, backward, Adam) with 16 inputs, 16 hidden and batch 1 on
// the CPU, where the arithmetic is tiny: Autodiff, Dispatch, Fusion (EMBER_FUSION=1),
// validation and allocation are what is timed. On a GPU the same work is what a small
// model's step waits on.
//   EMBER_FUSION=0|1 step_host_bench [width]
#include <chrono>
#include <cstdio>
#include "ember/ember.h"
#include "ember/fusion/fusion.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss/cross_entropy.h"
#include "ember/optim.h"
using namespace ember;
using AD = Autodiff<Dispatch>;

namespace {
struct Mlp {
  nn::Linear<AD> fc1, fc2;
  EMBER_MODULE(Mlp, fc1, fc2)
  Tensor<AD, 2> forward(const Tensor<AD, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
};
}  // namespace
int main(int argc, char** argv) {
  int width = argc > 1 ? atoi(argv[1]) : 16, batch = 1;
  Device dev = Device::cpu();
  Mlp m{nn::LinearConfig{width, width}.init<AD>(dev), nn::LinearConfig{width, 10}.init<AD>(dev)};
  auto opt = optim::AdamConfig{}.init<AD>();
  auto ce = nn::CrossEntropyLossConfig{}.init();
  auto x = Tensor<AD, 2>::random({batch, width}, Distribution::normal(0, 1), dev);
  auto y = Tensor<AD, 1, Int>::from_data(
      Tensor<Dispatch, 1>::random({batch}, Distribution::uniform(0, 10), dev).int_().to_data(),
      dev);
  auto step = [&] {
    auto loss = ce.forward(m.forward(x), y);
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), m);
    opt.step(1e-3, m, grads);
    flush(dev);
  };
  for (int i = 0; i < 50; ++i) step();
  int n = 2000;
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < n; ++i) step();
  double us =
      std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / n;
  fusion::Stats s = fusion::stats();
  std::printf("width %d: %.1f us/step; fusion: %lld recorded, %lld programs\n", width, us,
              (long long)s.recorded, (long long)s.programs);
  (void)batch;
}
