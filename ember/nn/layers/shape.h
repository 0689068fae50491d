// Shape modules: Flatten and Unflatten (torch.nn.Flatten, torch.nn.Unflatten), for models
// that hold a reshape as a field. The output's rank is a template argument, as everywhere in
// ember.
//
//   nn::Flatten<2> flat;                                   // [N, C, H, W] -> [N, C H W]
//   auto f = flat.forward(Tensor<Cpu, 4>::ones({2, 3, 4, 5}));
//   nn::Unflatten<4> unflat{1, {3, 4, 5}};                 // and back
//   auto u = unflat.forward(f);
#pragma once
#include <vector>

#include "ember/nn/module.h"

namespace ember::nn {

/// Dims [start, end] merged into one (end -1: the last); the result has rank DOut.
template <int DOut>
struct Flatten {
  int64_t start = 1, end = -1;
  EMBER_MODULE(Flatten, start, end)
  template <Backend B, int D, TensorKind K>
  Tensor<B, DOut, K> forward(const Tensor<B, D, K>& x) const {
    return x.template flatten<DOut>(start, end);
  }
};

/// Dim `dim` split into `sizes` (one may be -1); the result has rank DOut.
template <int DOut>
struct Unflatten {
  int64_t dim = 1;
  std::vector<int64_t> sizes;
  EMBER_MODULE(Unflatten, dim, sizes)
  template <Backend B, int D, TensorKind K>
  Tensor<B, DOut, K> forward(const Tensor<B, D, K>& x) const {
    const int64_t d = wrap_dim(dim, D, "unflatten");
    if (static_cast<int>(D - 1 + sizes.size()) != DOut)
      throw ShapeError("[unflatten] " + std::to_string(sizes.size()) + " sizes in place of dim " +
                       std::to_string(d) + " of " + x.shape().to_string() + " do not give rank " +
                       std::to_string(DOut));
    std::array<int64_t, DOut> s{};
    int64_t k = 0;
    for (int64_t i = 0; i < D; ++i) {
      if (i == d)
        for (int64_t v : sizes) s[k++] = v;
      else
        s[k++] = x.dim(i);
    }
    return x.template reshape<DOut>(s);
  }
};

}  // namespace ember::nn
