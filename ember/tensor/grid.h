// Sampling grids (torch.nn.functional.affine_grid and grid_sample, 2-d): the pieces of a
// spatial transformer, built from table ops (a matmul for the grid, gathers for the samples),
// so gradients reach the input, the grid and through it the affine parameters.
//
//   using T4 = ember::Tensor<ember::Cpu, 4>;
//   auto img = T4::random({2, 3, 8, 8}, ember::Distribution::normal(0, 1));
//   auto theta = ember::Tensor<ember::Cpu, 3>::from_values<float>(
//       {1, 0, 0, 0, 1, 0, 0.5, 0, 0.2, 0, 0.5, -0.1}, {2, 2, 3});
//   auto grid = ember::affine_grid(theta, {2, 3, 8, 8});          // [2, 8, 8, 2], (x, y)
//   auto out = ember::grid_sample(img, grid);                      // [2, 3, 8, 8]
//
// Grid coordinates are in [-1, 1]: -1 is the left (top) edge of the input with
// align_corners = false, the centre of the first pixel with align_corners = true.
#pragma once
#include <array>
#include <cmath>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

enum class GridMode { Bilinear, Nearest };
/// Where a sample falls outside the input: zeros, or the nearest edge value.
enum class GridPadding { Zeros, Border };

/// The sampling grid [N, H, W, 2] of the affine maps theta [N, 2, 3] for an output of size
/// {N, C, H, W} (torch.nn.functional.affine_grid).
template <Backend B>
Tensor<B, 4> affine_grid(const Tensor<B, 3>& theta, std::array<int64_t, 4> size,
                         bool align_corners = false) {
  const int64_t n = size[0], h = size[2], w = size[3];
  if (theta.dim(0) != n || theta.dim(1) != 2 || theta.dim(2) != 3)
    throw ShapeError("[affine_grid] theta " + theta.shape().to_string() + " must be [" +
                     std::to_string(n) + ", 2, 3]");
  auto coords = [&](int64_t m) {
    std::vector<double> v(static_cast<size_t>(m));
    for (int64_t i = 0; i < m; ++i)
      v[i] = align_corners ? (m > 1 ? -1.0 + 2.0 * double(i) / double(m - 1) : 0.0)
                           : (2.0 * double(i) + 1.0) / double(m) - 1.0;
    return v;
  };
  auto xs = coords(w), ys = coords(h);
  std::vector<double> base;
  base.reserve(static_cast<size_t>(h * w * 3));
  for (int64_t j = 0; j < h; ++j)
    for (int64_t i = 0; i < w; ++i) base.insert(base.end(), {xs[i], ys[j], 1.0});
  auto b = Tensor<B, 3>::template from_values<double>(base, Shape{1, h * w, 3}, theta.device())
               .cast(theta.dtype());
  return b.matmul(theta.transpose()).template reshape<4>({n, h, w, 2});  // [N, H W, 2]
}

/// Samples input [N, C, H, W] at grid [N, Ho, Wo, 2] ((x, y) in [-1, 1]): [N, C, Ho, Wo]
/// (torch.nn.functional.grid_sample, 2-d, modes bilinear and nearest, padding zeros and
/// border).
template <Backend B>
Tensor<B, 4> grid_sample(const Tensor<B, 4>& input, const Tensor<B, 4>& grid,
                         GridMode mode = GridMode::Bilinear,
                         GridPadding padding = GridPadding::Zeros, bool align_corners = false) {
  const int64_t n = input.dim(0), c = input.dim(1), h = input.dim(2), w = input.dim(3);
  const int64_t ho = grid.dim(1), wo = grid.dim(2);
  if (grid.dim(0) != n || grid.dim(3) != 2)
    throw ShapeError("[grid_sample] grid " + grid.shape().to_string() + " must be [" +
                     std::to_string(n) + ", Ho, Wo, 2] for input " + input.shape().to_string());
  auto g = grid.template reshape<3>({n, ho * wo, 2});
  auto unnormalize = [&](const Tensor<B, 3>& v, int64_t size) {  // [N, L, 1] -> pixels
    auto p = align_corners ? (v + 1.0) * (0.5 * double(size - 1))
                           : ((v + 1.0) * double(size) - 1.0) * 0.5;
    return padding == GridPadding::Border ? p.clamp(0.0, double(size - 1)) : p;
  };
  auto ix = unnormalize(g.narrow(2, 0, 1), w).template reshape<2>({n, ho * wo});
  auto iy = unnormalize(g.narrow(2, 1, 1), h).template reshape<2>({n, ho * wo});
  auto flat = input.template reshape<3>({n, c, h * w});
  // the input at integer pixel (x, y) [N, L] times weight, 0 outside the input
  auto corner = [&](const Tensor<B, 2>& x, const Tensor<B, 2>& y, const Tensor<B, 2>& weight) {
    auto inside = x.greater_equal_elem(0.0)
                      .bool_and(x.lower_equal_elem(double(w - 1)))
                      .bool_and(y.greater_equal_elem(0.0))
                      .bool_and(y.lower_equal_elem(double(h - 1)));
    auto idx = (y.clamp(0.0, double(h - 1)) * double(w) + x.clamp(0.0, double(w - 1))).int_();
    auto picked = flat.gather(2, idx.template unsqueeze_dim<3>(1).template expand<3>(
                                     std::array<int64_t, 3>{n, c, ho * wo}));
    auto wt = weight.mask_fill(inside.bool_not(), 0.0).template unsqueeze_dim<3>(1);
    return picked * wt;
  };
  Tensor<B, 3> out = [&] {
    if (mode == GridMode::Nearest) {
      auto ones = ix.ones_like();
      return corner(ix.round(), iy.round(), ones);  // round half to even, as PyTorch
    }
    auto x0 = ix.floor(), y0 = iy.floor();
    auto x1 = x0 + 1.0, y1 = y0 + 1.0;
    auto wx1 = ix - x0, wy1 = iy - y0;
    auto wx0 = 1.0 - wx1, wy0 = 1.0 - wy1;
    return corner(x0, y0, wx0 * wy0) + corner(x1, y0, wx1 * wy0) + corner(x0, y1, wx0 * wy1) +
           corner(x1, y1, wx1 * wy1);
  }();
  return out.template reshape<4>({n, c, ho, wo});
}

}  // namespace ember
