// A program on the two stacks the library compiles once (Dispatch and Autodiff<Dispatch>):
// layers, losses, initializers, parameters, optimizers, gradients, records, the Fashion-MNIST
// batcher and loader, and step outputs. check_extern.cmake reads this object file and fails
// if it defines any of those instantiations (they must come from the library) or stops
// using them; running it checks that the library's copies link and work: a small model
// trained on a synthetic task gets better, and a saved model and optimizer state load back.
#include <cstdio>
#include <filesystem>

#include "ember/data/batcher.h"
#include "ember/ember.h"
#include "ember/nn/layers/linear.h"
#include "ember/nn/loss/cross_entropy.h"
#include "ember/nn/loss/regression.h"
#include "ember/nn/record.h"
#include "ember/optim/adam.h"
#include "ember/optim/sgd.h"
#include "ember/train/output.h"

using namespace ember;
using AD = Autodiff<Dispatch>;

template <Backend B>
struct Net {
  nn::Linear<B> fc1, fc2;
  EMBER_MODULE(Net, fc1, fc2)
  Tensor<B, 2> forward(const Tensor<B, 2>& x) const {
    return fc2.forward(activation::relu(fc1.forward(x)));
  }
};

template <Backend B>
Net<B> make_net() {
  return {nn::LinearConfig{4, 16}.init<B>(), nn::LinearConfig{16, 3}.init<B>()};
}

int fail(const char* what) {
  std::fprintf(stderr, "extern_stacks: %s\n", what);
  return 1;
}

int main() {
  ember::seed(3);
  Net<AD> net = make_net<AD>();
  auto adam = optim::AdamConfig{}.init<AD>();
  auto sgd = optim::SgdConfig{}.init<AD>();
  // Three classes: which of the first three inputs is largest.
  auto x = Tensor<AD, 2>::random({128, 4}, Distribution::normal(0, 1));
  auto y = x.slice({Slice::all(), Slice(0, 3)}).argmax(1).squeeze<1>(1);
  auto ce = nn::CrossEntropyLossConfig{}.init();
  float first = 0, last = 0;
  for (int step = 0; step < 150; ++step) {
    train::ClassificationOutput<AD> out{ce.forward(net.forward(x), y), net.forward(x), y};
    last = out.metric_input().loss;
    if (step == 0) first = last;
    auto grads = optim::GradientsParams<AD>::from_grads(out.loss.backward(), net);
    adam.step(1e-2, net, grads);
  }
  if (!(last < first / 2)) return fail("cross-entropy did not halve with Adam");

  auto target = Tensor<AD, 2>::zeros({128, 3});
  auto mse = nn::MseLossConfig{}.init();
  float m0 = mse.forward(net.forward(x), target).into_scalar();
  for (int step = 0; step < 50; ++step) {
    auto loss = mse.forward(net.forward(x), target);
    auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), net);
    sgd.step(0.05, net, grads);
  }
  float m1 = mse.forward(net.forward(x), target).into_scalar();
  if (!(m1 < m0)) return fail("mse did not fall with SGD");

  // Records: the model (through valid(), on Dispatch) and Adam's state, saved and loaded.
  const auto dir = std::filesystem::temp_directory_path() / "ember_extern_stacks";
  std::filesystem::create_directories(dir);
  auto eval = nn::valid(net);
  nn::save_module(eval, dir / "net.safetensors");
  optim::save(adam, net, dir / "adam.safetensors");
  Net<Dispatch> loaded = make_net<Dispatch>();
  nn::load_module(loaded, dir / "net.safetensors");
  auto adam2 = optim::AdamConfig{}.init<AD>();
  optim::load(adam2, net, dir / "adam.safetensors");
  auto xi = x.inner();
  if (!loaded.forward(xi).to_data().all_close(eval.forward(xi).to_data(), 0, 0))
    return fail("the loaded model differs");
  std::filesystem::remove_all(dir);

  // The Fashion-MNIST loader on both stacks, when the dataset is installed.
  const auto mnist = data::MnistDataset::default_dir();
  if (std::filesystem::exists(mnist)) {
    data::DataLoader train(data::MnistDataset(data::Split::Test, mnist),
                           data::MnistBatcher<AD>().normalize_fashion(), {.batch_size = 500});
    data::DataLoader test(data::MnistDataset(data::Split::Test, mnist),
                          data::MnistBatcher<Dispatch>(), {.batch_size = 500});
    auto a = train.next();
    auto b = test.next();
    if (!a || !b || a->images.dim(0) != 500 || b->targets.dim(0) != 500)
      return fail("the loaders gave no batch of 500");
  }
  // An initializer called directly: Xavier's bound is sqrt(6 / (fan_in + fan_out)).
  auto w = nn::Initializer::xavier_uniform().init<Dispatch, 2>({64, 64}, Device::cpu(), 64, 64);
  float bound = w.abs().max().into_scalar();
  if (!(bound > 0.2f && bound <= 0.30619f)) return fail("xavier values out of their bound");
  std::printf("extern_stacks: ce %.3f -> %.3f, mse %.3f -> %.3f\n", first, last, m0, m1);
  return 0;
}
