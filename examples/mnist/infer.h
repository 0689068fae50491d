// The model's inference: load a saved model and give class probabilities of images.
// Instantiated once per model, in mlp_infer.cpp and cnn_infer.cpp, apart from training.
#pragma once
#include <filesystem>
#include <vector>

#include "ember/nn/record.h"
#include "ember/tensor/activation.h"

namespace mnist {

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
