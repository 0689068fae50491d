// The part of the example that depends on the model: train it with the Learner, evaluate it on
// the test set and save it (its inference is in infer.h). Instantiated once per model, in mlp.cpp
// and cnn.cpp. Every model and loader runs on Dispatch, so `--backend` picks the device at run
// time. What does not depend on the model (the loaders, the Learner's settings, the test-set
// figures) is in run.cpp, compiled once: editing a model recompiles only the code below.
#pragma once
#include <iostream>
#include <memory>

#include "app.h"
#include "ember/data/batcher.h"
#include "ember/nn/record.h"
#include "ember/optim/adam.h"
#include "ember/optim/lr_scheduler.h"
#include "ember/train/learner.h"

namespace mnist {

using AD = ember::Autodiff<ember::Dispatch>;
using TrainLoader =
    ember::data::DataLoader<ember::data::MnistDataset, ember::data::MnistBatcher<AD>>;
using TestLoader =
    ember::data::DataLoader<ember::data::MnistDataset, ember::data::MnistBatcher<ember::Dispatch>>;

/// The Fashion-MNIST splits as the command line asks (batch size, shuffle seed, workers).
struct Data {
  TrainLoader train;
  TestLoader test;
};
Data open_data(const Args& a);
/// The Learner's settings and renderer from the command line.
ember::train::LearnerConfig learner_config(const Args& a);
std::unique_ptr<ember::train::Renderer> learner_renderer(const Args& a);
/// Fills in the test-set figures of a finished run and returns where to save the model.
std::filesystem::path test_results(TrainResult& r, const Args& a, const ember::train::Accuracy& acc,
                                   const ember::train::ConfusionMatrix& confusion);

template <template <class> class Model>
TrainResult train_model(const Args& a) {
  using namespace ember;
  const Device dev = Device::parse(a.backend);
  Data d = open_data(a);
  ember::seed(static_cast<uint64_t>(a.seed));
  auto model = Model<AD>::init(dev);
  std::cout << nn::summary(model);
  train::Learner learner(learner_config(a), model, optim::AdamConfig{}.init<AD>(),
                         optim::ConstantLrConfig{a.lr}.init());
  learner.with_metric(std::make_unique<train::Accuracy>())
      .with_renderer(learner_renderer(a))
      .resume(a.resume);
  auto trained = learner.fit(d.train, d.test);
  TrainResult r;
  r.status = learner.status();
  r.history = learner.history();
  if (!r.status.finished()) return r;  // stopped or aborted: no final model

  auto eval = nn::valid(trained);
  train::Accuracy acc;
  train::ConfusionMatrix confusion;
  train::evaluate(eval, d.test, {&acc, &confusion});
  r.model_path = test_results(r, a, acc, confusion);
  nn::save_module(eval, r.model_path, {.metadata = {{"mnist.model", a.model}}});
  return r;
}

}  // namespace mnist
