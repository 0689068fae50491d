// The "small user program" of `scripts/bench.sh build`: what a new user writes first. It
// includes the umbrella header, defines a two-layer model on Autodiff<Dispatch>, and trains
// it for a few steps on a synthetic regression. Its compile time is a build-time figure.
#include <cstdio>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss.h"
#include "ember/optim.h"

using namespace ember;
using B = Autodiff<Dispatch>;

struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)
  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
};

int main() {
  ember::seed(1);
  Device dev = B::default_device();
  Net net{nn::LinearConfig{8, 32}.init<B>(dev), nn::LinearConfig{32, 1}.init<B>(dev)};
  auto opt = optim::AdamConfig{}.init<B>();
  auto x = Tensor<B, 2>::random({64, 8}, Distribution::normal(0, 1));
  auto y = x.sum_dim(1);  // [64, 1]: learn the sum of the inputs
  float first = 0, last = 0;
  for (int step = 0; step < 200; ++step) {
    auto loss = nn::MseLossConfig{}.init().forward(net.forward(x), y);
    last = loss.into_scalar();
    if (step == 0) first = last;
    auto grads = optim::GradientsParams<B>::from_grads(loss.backward(), net);
    opt.step(1e-2, net, grads);
  }
  std::printf("mse %.4f -> %.4f\n", first, last);
  return last < first / 10 ? 0 : 1;
}
