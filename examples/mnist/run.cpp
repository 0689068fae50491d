// What training a model needs that does not depend on the model (see run.h).
#include "run.h"

namespace mnist {

Data open_data(const Args& a, int ranks, int rank) {
  using namespace ember;
  const Device dev = Device::parse(a.backend);
  const auto dir = data::MnistDataset::default_dir();
  const size_t workers = static_cast<size_t>(a.workers);
  Data d{TrainLoader(data::MnistDataset(data::Split::Train, dir),
                     data::MnistBatcher<AD>(dev).normalize_fashion(),
                     {.batch_size = static_cast<size_t>(a.batch_size),
                      .shuffle = true,
                      .seed = static_cast<uint64_t>(a.seed),
                      .workers = workers,
                      .num_shards = static_cast<size_t>(ranks),
                      .shard = static_cast<size_t>(rank)}),
         TestLoader(data::MnistDataset(data::Split::Test, dir),
                    data::MnistBatcher<Dispatch>(dev).normalize_fashion(),
                    {.batch_size = 1000, .workers = workers})};
  if (rank > 0) return d;
  std::cout << "Fashion-MNIST: " << d.train.num_items() << " training and " << d.test.num_items()
            << " test images from " << dir.string();
  if (ranks > 1) std::cout << " (rank " << rank << " of " << ranks << ": its shard)";
  std::cout << "\n";
  return d;
}

ember::train::LearnerConfig learner_config(const Args& a, int ranks, int rank) {
  return {.num_epochs = a.epochs,
          .dir = a.out,
          .best_metric = "accuracy",
          .seed = static_cast<uint64_t>(a.seed),
          .world_size = ranks,
          .write = rank == 0};  // the other ranks read rank 0's checkpoints to resume
}

std::unique_ptr<ember::train::Renderer> learner_renderer(const Args& a) {
  using ember::train::RendererKind;
  return ember::train::make_renderer(a.plain ? RendererKind::Plain : RendererKind::Auto);
}

std::filesystem::path test_results(TrainResult& r, const Args& a, const ember::train::Accuracy& acc,
                                   const ember::train::ConfusionMatrix& confusion) {
  r.test_accuracy = acc.value();
  r.confusion =
      ember::train::ConfusionCounts::from(confusion, {std::begin(kClasses), std::end(kClasses)});
  return std::filesystem::path(a.out) / "model.safetensors";
}

}  // namespace mnist
