// Similarity and distance modules: the functions of ember/tensor/linalg.h as modules
// (torch.nn.CosineSimilarity, torch.nn.PairwiseDistance).
//
//   nn::CosineSimilarity cos{1};                   // along dim 1
//   auto s = cos.forward(a, b);                     // [N, 1]
//   auto d = nn::PairwiseDistance{2.0}.forward(a, b);
#pragma once
#include "ember/nn/module.h"
#include "ember/tensor/linalg.h"

namespace ember::nn {

struct CosineSimilarity {
  int64_t dim = 1;
  double eps = 1e-8;
  EMBER_MODULE(CosineSimilarity, dim, eps)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& a, const Tensor<B, D>& b) const {
    return linalg::cosine_similarity(a, b, dim, eps);
  }
};

struct PairwiseDistance {
  double p = 2.0;
  double eps = 1e-6;
  EMBER_MODULE(PairwiseDistance, p, eps)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& a, const Tensor<B, D>& b) const {
    return linalg::pairwise_distance(a, b, p, eps);
  }
};

}  // namespace ember::nn
