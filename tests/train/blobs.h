// The training tests' synthetic task: three Gaussian blobs in 4-d as fixed batches of 16
// items (the same every epoch), and a loader over them that a Learner can walk.
#pragma once
#include <cstdint>
#include <vector>

#include "ember/ember.h"

namespace ember::test {

template <Backend B>
struct Batch {
  Tensor<B, 2> x;
  Tensor<B, 1, Int> y;
};

template <Backend B>
struct Loader {
  std::vector<Batch<B>> batches;
  int64_t epoch = 0;
  void set_epoch(int64_t e) { epoch = e; }
  size_t size() const { return batches.size(); }
  auto begin() const { return batches.begin(); }
  auto end() const { return batches.end(); }
};

/// `n_batches` batches of blobs centred on the first three axes at distance 2, with normal
/// noise of deviation `noise`.
template <Backend B>
Loader<B> blobs(int64_t n_batches, uint64_t seed, float noise = 0.5f) {
  Loader<B> l;
  const float centers[] = {2, 0, 0, 0, 0, 2, 0, 0, 0, 0, 2, 0};
  for (int64_t b = 0; b < n_batches; ++b) {
    std::vector<float> x;
    std::vector<int64_t> y;
    for (int i = 0; i < 16; ++i) {
      const auto c = static_cast<int64_t>(rng::bits(seed, 1000 * b + i) % 3);
      y.push_back(c);
      for (int d = 0; d < 4; ++d)
        x.push_back(centers[c * 4 + d] +
                    static_cast<float>(rng::normal(seed + 1, 4 * (1000 * b + i) + d)) * noise);
    }
    l.batches.push_back(
        {Tensor<B, 2>::from_values(x, {16, 4}), Tensor<B, 1, Int>::from_values(y, {16})});
  }
  return l;
}

}  // namespace ember::test
