// Batchers for the DataLoader: a vector of items in, tensors on a device out.
//
//   DataLoader loader(MnistDataset(Split::Train), MnistBatcher<Cpu>().normalize_fashion(),
//                     {.batch_size = 64});
//   for (auto& b : loader) { b.images; /* [64, 1, 28, 28] f32 */  b.targets; /* [64] i64 */ }
#pragma once
#include <optional>
#include <vector>

#include "ember/backend/extern.h"
#include "ember/data/loader.h"
#include "ember/data/mnist.h"
#include "ember/tensor/tensor.h"

namespace ember::data {

template <Backend B>
struct MnistBatch {
  Tensor<B, 4> images;        // [N, 1, 28, 28], pixel / 255 (then normalized, if asked)
  Tensor<B, 1, Int> targets;  // [N], 0..9
};

template <Backend B>
class MnistBatcher {
 public:
  explicit MnistBatcher(Device device = B::default_device()) : device_(device) {}
  /// Also maps each pixel p (in [0, 1]) to (p - mean) / std.
  MnistBatcher& normalize(float mean, float std) {
    if (!(std > 0)) throw ValueError("[mnist_batcher] std must be positive");
    norm_ = {mean, std};
    return *this;
  }
  MnistBatcher& normalize_fashion() {
    return normalize(MnistDataset::kFashionMean, MnistDataset::kFashionStd);
  }
  MnistBatch<B> operator()(const std::vector<MnistItem>& items) const;

 private:
  Device device_;
  std::optional<std::pair<float, float>> norm_;
};

template <Backend B>
MnistBatch<B> MnistBatcher<B>::operator()(const std::vector<MnistItem>& items) const {
  constexpr size_t P = MnistItem::kPixels;
  const int64_t n = static_cast<int64_t>(items.size());
  std::vector<float> px(items.size() * P);
  std::vector<int64_t> labels(items.size());
  float scale = 1.0f / 255.0f, shift = 0.0f;
  if (norm_) {  // (p / 255 - mean) / std as one multiply-add
    scale /= norm_->second;
    shift = -norm_->first / norm_->second;
  }
  for (size_t i = 0; i < items.size(); ++i) {
    const uint8_t* src = items[i].image.data();
    float* dst = px.data() + i * P;
    for (size_t k = 0; k < P; ++k) dst[k] = static_cast<float>(src[k]) * scale + shift;
    labels[i] = items[i].label;
  }
  return {Tensor<B, 4>::from_values(px, {n, 1, MnistItem::kRows, MnistItem::kCols}, device_),
          Tensor<B, 1, Int>::from_values(labels, {n}, device_)};
}

// Compiled once in the library for the Dispatch stacks, with their loaders
// (ember/data/instantiate.cpp).
extern template class EMBER_API MnistBatcher<Dispatch>;
extern template class EMBER_API MnistBatcher<AutodiffDispatch>;
extern template class EMBER_API DataLoader<MnistDataset, MnistBatcher<Dispatch>>;
extern template class EMBER_API DataLoader<MnistDataset, MnistBatcher<AutodiffDispatch>>;

}  // namespace ember::data
