// Free tensor functions: cat, stack, where.
//
//   auto c = ember::cat(std::vector{a, b}, 0);       // along dim 0
//   auto s = ember::stack<3>(std::vector{a, b}, 0);  // new dim 0
//   auto w = ember::where(mask, a, b);
#pragma once
#include <array>
#include <utility>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/// Concatenates along `dim`; shapes must match elsewhere.
template <Backend B, int D, TensorKind K>
Tensor<B, D, K> cat(const std::vector<Tensor<B, D, K>>& parts, int64_t dim) {
  if (parts.empty()) throw ValueError("[cat] needs at least one tensor");
  std::vector<typename B::Handle> hs;
  for (const auto& p : parts) hs.push_back(p.handle());
  OpAttrs a;
  a.dim = dim;
  return Tensor<B, D, K>(apply<B>(Op{OpCode::Cat, a}, std::span<typename B::Handle>(hs)));
}

/// Stacks same-shape tensors along a new dim `dim` (rank D2 = D + 1).
template <int D2, Backend B, int D, TensorKind K>
Tensor<B, D2, K> stack(const std::vector<Tensor<B, D, K>>& parts, int64_t dim) {
  static_assert(D2 == D + 1, "stack adds one dim");
  if (parts.empty()) throw ValueError("[stack] needs at least one tensor");
  std::vector<Tensor<B, D2, K>> up;
  for (const auto& p : parts) {
    if (p.shape() != parts[0].shape())
      throw ShapeError("[stack] shapes differ: " + parts[0].shape().to_string() + " and " +
                       p.shape().to_string());
    up.push_back(p.template unsqueeze_dim<D2>(dim));
  }
  return cat(up, dim);
}

/// Elementwise `mask ? a : b` (broadcasting).
template <Backend B, int D, TensorKind K>
Tensor<B, D, K> where(const Tensor<B, D, Bool>& mask, const Tensor<B, D, K>& a,
                      const Tensor<B, D, K>& b) {
  return b.mask_where(mask, a);
}

/// Coordinate grids from vectors (torch.meshgrid): grid k holds xs[k] along dim k and is
/// repeated along the others, every grid [n0, n1, ...]. With xy = true (indexing "xy") the
/// first two dims swap: [n1, n0, ...].
///   auto [gx, gy] = meshgrid(std::array{x, y});     // [nx, ny] each
template <Backend B, TensorKind K, size_t N>
std::array<Tensor<B, static_cast<int>(N), K>, N> meshgrid(const std::array<Tensor<B, 1, K>, N>& xs,
                                                          bool xy = false) {
  constexpr int R = static_cast<int>(N);
  std::array<int64_t, N> shape{};
  std::array<int, N> at{};  // the dim grid k varies along
  for (int k = 0; k < R; ++k) at[k] = xy && R >= 2 && k < 2 ? 1 - k : k;
  for (int k = 0; k < R; ++k) shape[at[k]] = xs[k].dim(0);
  auto grid = [&](size_t k) {
    std::array<int64_t, N> s{};
    s.fill(1);
    s[at[k]] = xs[k].dim(0);
    return xs[k].template reshape<R>(s).template expand<R>(shape);
  };
  return [&]<size_t... I>(std::index_sequence<I...>) {
    return std::array<Tensor<B, R, K>, N>{grid(I)...};
  }
  (std::make_index_sequence<N>{});
}

}  // namespace ember
