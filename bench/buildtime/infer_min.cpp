// The "minimal inference binary" of `scripts/bench.sh build`: loads an MLP's weights from a
// safetensors file (or initializes them) and classifies one input on Dispatch, no autodiff
// graph, no training code. Its stripped size is a footprint figure.
#include <cstdio>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/record.h"

using namespace ember;
using B = Dispatch;

struct Mlp {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Mlp, fc1, fc2)
  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
};

int main(int argc, char** argv) {
  Device dev = B::default_device();
  Mlp m{nn::LinearConfig{784, 256}.init<B>(dev), nn::LinearConfig{256, 10}.init<B>(dev)};
  try {
    if (argc > 1) nn::load_module(m, argv[1]);
    auto x = Tensor<B, 2>::random({1, 784}, Distribution::uniform(0, 1));
    std::printf("class %lld\n",
                static_cast<long long>(m.forward(x).argmax(1).into_scalar<int64_t>()));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
