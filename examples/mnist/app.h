// What the example's command line (main.cpp) and its per-model translation units (mlp.cpp,
// cnn.cpp) share. main.cpp parses arguments, reads inputs and writes reports; the model files
// train and run their model. Editing a model recompiles only its own file, which includes
// little beyond its layers and the Learner.
#pragma once
#include <cstdint>
#include <filesystem>
#include <optional>
#include <string>
#include <vector>

#include "ember/train/learner_core.h"
#include "ember/train/report.h"

namespace mnist {

inline constexpr const char* kClasses[] = {"t-shirt/top", "trouser",   "pullover", "dress",
                                           "coat",        "sandal",    "shirt",    "sneaker",
                                           "bag",         "ankle boot"};

struct Args {
  std::string cmd, model = "cnn", backend = "cpu", out = "runs/mnist", model_dir;
  int64_t epochs = 3, batch_size = 64, workers = 2, seed = 42, top = 1;
  double lr = 1e-3;
  bool plain = false, resume = false;
  std::vector<std::string> inputs;
};

/// What a training run produced; the test-set figures only when it finished.
struct TrainResult {
  ember::train::FitStatus status;
  ember::train::History history;
  double test_accuracy = 0;
  std::optional<ember::train::ConfusionCounts> confusion;
  std::filesystem::path model_path;  // the final model (empty when not finished)
  int rank = 0;  // of a data-parallel job: only rank 0 writes the run's files
};

/// Trains, evaluates on the test set and saves the final model (see Args).
TrainResult train_mlp(const Args& a);
TrainResult train_cnn(const Args& a);

/// Class probabilities of normalized 28x28 images, with the model saved at `path`.
std::vector<std::vector<float>> predict_mlp(const std::filesystem::path& path,
                                            const std::vector<std::vector<float>>& images);
std::vector<std::vector<float>> predict_cnn(const std::filesystem::path& path,
                                            const std::vector<std::vector<float>>& images);

}  // namespace mnist
