// A training loop written by hand, with no Learner: the whole of a training step is
// forward, backward, gradients by parameter, optimizer step. Trains the Fashion-MNIST MLP for
// one epoch and prints the loss every 200 steps and the test accuracy at the end.
//
//   build/examples/custom_loop [EPOCHS]
#include <iomanip>
#include <iostream>
#include <string>

#include "../mnist/mlp.h"
#include "ember/core/parse.h"
#include "ember/data/loader.h"
#include "ember/optim.h"

using namespace ember;
using AD = Autodiff<Cpu>;

int main(int argc, char** argv) try {
  const char* usage = "usage: custom_loop [EPOCHS]   (1 to 1000; default 1)\n";
  if (argc == 2 && (std::string(argv[1]) == "--help" || std::string(argv[1]) == "-h")) {
    std::cout << usage;
    return 0;
  }
  int64_t epochs = 1;
  try {
    if (argc > 2)
      throw ValueError("expected at most one argument, got " + std::to_string(argc - 1));
    if (argc == 2) epochs = parse_int(argv[1], "EPOCHS", 1, 1000);
  } catch (const ValueError& e) {
    std::cerr << "custom_loop: " << e.what() << "\n" << usage;
    return 2;
  }
  ember::seed(42);
  data::DataLoader train(data::MnistDataset(data::Split::Train),
                         data::MnistBatcher<AD>().normalize_fashion(),
                         {.batch_size = 64, .shuffle = true, .seed = 42, .workers = 1});
  data::DataLoader test(data::MnistDataset(data::Split::Test),
                        data::MnistBatcher<Cpu>().normalize_fashion(), {.batch_size = 1000});

  auto model = mnist::Mlp<AD>::init(Cpu::default_device());
  auto opt = optim::AdamConfig{}.init<AD>();
  auto sched = optim::CosineAnnealingLrConfig{.lr = 1e-3, .num_iters = 938 * epochs}.init();

  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    int64_t step = 0;
    for (auto& batch : train) {
      auto loss = model.step(batch).loss;  // forward
      auto grads = optim::GradientsParams<AD>::from_grads(loss.backward(), model);
      optim::clip_grad_global_norm(grads, 1.0);  // optional
      opt.step(sched.step(), model, grads);      // update
      if (++step % 200 == 0)
        std::cout << "epoch " << epoch << " step " << step << " loss " << std::setprecision(4)
                  << loss.into_scalar() << "\n";
    }
  }

  auto eval = nn::valid(model);  // the same parameters on Cpu: no graph
  int64_t correct = 0, total = 0;
  for (auto& batch : test) {
    auto pred = eval.forward(batch.images).argmax(1).template reshape<1>({-1});
    correct += pred.equal(batch.targets).int_().sum().template into_scalar<int64_t>();
    total += batch.targets.dim(0);
  }
  std::cout << "test accuracy: " << std::fixed << std::setprecision(4)
            << static_cast<double>(correct) / static_cast<double>(total) << "\n";
  return 0;
} catch (const std::exception& e) {
  std::cerr << "custom_loop: " << e.what() << "\n";
  return 1;
}
