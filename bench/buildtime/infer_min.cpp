// The "minimal inference binary" of `scripts/bench.sh build`: loads an MLP's weights from a
// safetensors file (or initializes them) and classifies one input on Dispatch, no autodiff
// graph, no training code. Its stripped size is a footprint figure.
//
//   build_infer_min [--seed N] [RECORD | --save RECORD]
//
// --seed seeds the initialization and the input; --save writes the initialized weights.
// build_infer_min_lean is the same program for deployment: built with EMBER_CPU_ONLY (no GPU
// backend linked) and with EMBER_INFER_MIN_LEAN, which names the CPU kernels it runs below.
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/record.h"

#ifdef EMBER_INFER_MIN_LEAN
#include "ember/backends/cpu/kernel_table.h"
// What an MLP's inference runs on the CPU, all on f32: creation (initializers, the input),
// matmul, the bias add and relu (a maximum: the CPU backend runs relu as its decomposition),
// views, and argmax.
EMBER_CPU_KERNELS(ember::cpu::Families<ember::OpFamily::Create, ember::OpFamily::Binary,
                                       ember::OpFamily::Movement, ember::OpFamily::Matmul,
                                       ember::OpFamily::Reduce>,
                  ember::cpu::DTypes<float>)
#endif

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
  const char* load = nullptr;
  const char* save = nullptr;
  for (int i = 1; i < argc; ++i) {
    if (!std::strcmp(argv[i], "--seed") && i + 1 < argc)
      ember::seed(std::strtoull(argv[++i], nullptr, 10));
    else if (!std::strcmp(argv[i], "--save") && i + 1 < argc)
      save = argv[++i];
    else
      load = argv[i];
  }
  try {
    Device dev = B::default_device();
    Mlp m{nn::LinearConfig{784, 256}.init<B>(dev), nn::LinearConfig{256, 10}.init<B>(dev)};
    if (load) nn::load_module(m, load);
    if (save) nn::save_module(m, save);
    auto x = Tensor<B, 2>::random({1, 784}, Distribution::uniform(0, 1));
    std::printf("class %lld\n",
                static_cast<long long>(m.forward(x).argmax(1).into_scalar<int64_t>()));
  } catch (const Error& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
