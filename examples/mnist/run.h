// The part of the example that depends on the model: train it with the Learner, evaluate it on
// the test set, save it, and run it on images. Instantiated once per model, in mlp.cpp and
// cnn.cpp. Every model and loader runs on Dispatch, so `--backend` picks the device at run time.
#pragma once
#include <iostream>
#include <memory>

#include "app.h"
#include "ember/data/loader.h"
#include "ember/nn/record.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/train/learner.h"

namespace mnist {

using AD = ember::Autodiff<ember::Dispatch>;

template <template <class> class Model>
TrainResult train_model(const Args& a) {
  using namespace ember;
  const Device dev = Device::parse(a.backend);
  const auto dir = data::MnistDataset::default_dir();
  const size_t workers = static_cast<size_t>(a.workers);
  data::DataLoader train(data::MnistDataset(data::Split::Train, dir),
                         data::MnistBatcher<AD>(dev).normalize_fashion(),
                         {.batch_size = static_cast<size_t>(a.batch_size),
                          .shuffle = true,
                          .seed = static_cast<uint64_t>(a.seed),
                          .workers = workers});
  data::DataLoader test(data::MnistDataset(data::Split::Test, dir),
                        data::MnistBatcher<Dispatch>(dev).normalize_fashion(),
                        {.batch_size = 1000, .workers = workers});
  std::cout << "Fashion-MNIST: " << train.num_items() << " training and " << test.num_items()
            << " test images from " << dir.string() << "\n";

  ember::seed(static_cast<uint64_t>(a.seed));
  auto model = Model<AD>::init(dev);
  std::cout << nn::summary(model);
  train::Learner learner(train::LearnerConfig{.num_epochs = a.epochs,
                                              .dir = a.out,
                                              .best_metric = "accuracy",
                                              .seed = static_cast<uint64_t>(a.seed)},
                         model, optim::AdamConfig{}.init<AD>(),
                         optim::ConstantLrConfig{a.lr}.init());
  learner.with_metric(std::make_unique<train::Accuracy>())
      .with_renderer(
          train::make_renderer(a.plain ? train::RendererKind::Plain : train::RendererKind::Auto))
      .resume(a.resume);
  auto trained = learner.fit(train, test);
  TrainResult r;
  r.status = learner.status();
  r.history = learner.history();
  if (!r.status.finished()) return r;  // stopped or aborted: no final model

  auto eval = nn::valid(trained);
  train::Accuracy acc;
  train::ConfusionMatrix confusion;
  train::evaluate(eval, test, {&acc, &confusion});
  r.test_accuracy = acc.value();
  r.confusion = train::ConfusionCounts::from(confusion, {std::begin(kClasses), std::end(kClasses)});
  r.model_path = std::filesystem::path(a.out) / "model.safetensors";
  nn::save_module(eval, r.model_path, {.metadata = {{"mnist.model", a.model}}});
  return r;
}

template <template <class> class Model>
std::vector<std::vector<float>> predict_model(const std::filesystem::path& path,
                                              const std::vector<std::vector<float>>& images) {
  using namespace ember;
  auto model = Model<Dispatch>::init(Dispatch::default_device());
  nn::load_module(model, path);
  std::vector<std::vector<float>> out;
  for (const auto& px : images) {
    auto x = Tensor<Dispatch, 4>::from_values(px, {1, 1, 28, 28});
    out.push_back(activation::softmax(model.forward(x), 1).template to_vec<float>());
  }
  return out;
}

}  // namespace mnist
