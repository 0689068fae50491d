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
#ifdef EMBER_MNIST_DISTRIBUTED
#include "ember/distributed/data_parallel.h"
#endif

namespace mnist {

using AD = ember::Autodiff<ember::Dispatch>;
using TrainLoader =
    ember::data::DataLoader<ember::data::MnistDataset, ember::data::MnistBatcher<AD>>;
using TestLoader =
    ember::data::DataLoader<ember::data::MnistDataset, ember::data::MnistBatcher<ember::Dispatch>>;

/// The Fashion-MNIST splits as the command line asks (batch size, shuffle seed, workers); the
/// training split dealt out to `ranks` ranks, this one's shard (data-parallel training).
struct Data {
  TrainLoader train;
  TestLoader test;
};
Data open_data(const Args& a, int ranks = 1, int rank = 0);
/// The Learner's settings and renderer from the command line (in a data-parallel job only rank
/// 0 writes checkpoints and metrics; every rank resumes from them).
ember::train::LearnerConfig learner_config(const Args& a, int ranks = 1, int rank = 0);
std::unique_ptr<ember::train::Renderer> learner_renderer(const Args& a);
/// Fills in the test-set figures of a finished run and returns where to save the model.
std::filesystem::path test_results(TrainResult& r, const Args& a, const ember::train::Accuracy& acc,
                                   const ember::train::ConfusionMatrix& confusion);

template <template <class> class Model>
TrainResult train_model(const Args& a) {
  using namespace ember;
  const Device dev = Device::parse(a.backend);
#ifdef EMBER_MNIST_DISTRIBUTED
  // Started by ember-run: one replica per rank, each on its shard of every batch, gradients
  // averaged before each step (docs/distributed.md).
  std::optional<dist::ProcessGroup> pg;
  if (dist::ProcessGroup::in_env()) pg.emplace(dist::ProcessGroup::from_env());
  const int ranks = pg ? pg->world_size() : 1, rank = pg ? pg->rank() : 0;
#else
  const int ranks = 1, rank = 0;
#endif
  Data d = open_data(a, ranks, rank);
  ember::seed(static_cast<uint64_t>(a.seed));
  auto model = Model<AD>::init(dev);
  if (rank == 0) std::cout << nn::summary(model);
#ifdef EMBER_MNIST_DISTRIBUTED
  if (pg) dist::broadcast_params(*pg, model);
#endif
  train::Learner learner(learner_config(a, ranks, rank), model, optim::AdamConfig{}.init<AD>(),
                         optim::ConstantLrConfig{a.lr}.init());
  learner.with_metric(std::make_unique<train::Accuracy>())
      .with_renderer(rank == 0 ? learner_renderer(a)
                               : train::make_renderer(train::RendererKind::None))
      .resume(a.resume);
#ifdef EMBER_MNIST_DISTRIBUTED
  if (pg) {
    learner.with_grad_sync([&](auto& g) { dist::all_reduce_grads(*pg, g, model); });
    learner.with_metric_sync([&](double v) {  // every rank's shard is the same size
      pg->all_reduce(&v, 1, DType::F64, dist::Reduce::Mean);
      return v;
    });
  }
#endif
  auto trained = learner.fit(d.train, d.test);
  TrainResult r;
  r.status = learner.status();
  r.history = learner.history();
  r.rank = rank;
  if (!r.status.finished() || rank > 0) return r;  // no final model (rank > 0: rank 0 saves it)

  auto eval = nn::valid(trained);
  train::Accuracy acc;
  train::ConfusionMatrix confusion;
  train::evaluate(eval, d.test, {&acc, &confusion});
  r.model_path = test_results(r, a, acc, confusion);
  nn::save_module(eval, r.model_path, {.metadata = {{"mnist.model", a.model}}});
  return r;
}

}  // namespace mnist
