// Max pooling that returns the argmax indices, its inverse max-unpooling, and adaptive max
// pooling (torch.nn.functional.max_pool*d(return_indices=True), max_unpool*d,
// adaptive_max_pool*d), on [N, C, *spatial] float tensors with 1 to 3 spatial dims. They are
// built from table ops (the max_pool op, unfold, gathers, a scatter), so every backend runs
// them and gradients flow as PyTorch's do.
//
//   using T4 = ember::Tensor<ember::Cpu, 4>;
//   auto x = T4::random({2, 3, 8, 8}, ember::Distribution::normal(0, 1));
//   auto [y, idx] = ember::max_pool_with_indices(x, {2, 2});     // [2, 3, 4, 4] each
//   auto back = ember::max_unpool(y, idx, {8, 8});               // [2, 3, 8, 8], zeros elsewhere
//   auto a = ember::adaptive_max_pool(x, {3, 3});                // [2, 3, 3, 3]
//
// Indices are flat positions in each (n, c) plane of the input, as PyTorch's.
#pragma once
#include <algorithm>
#include <cmath>
#include <utility>

#include "ember/tensor/nn_ops.h"

namespace ember {

namespace detail {

/// Each plane's flat positions 0, 1, ... as f32, shaped [1, 1, *spatial] like x.
template <Backend B, int D>
Tensor<B, D> plane_positions(const Tensor<B, D>& x) {
  std::array<int64_t, D> s{};
  s[0] = s[1] = 1;
  int64_t n = 1;
  for (int i = 2; i < D; ++i) n *= (s[i] = x.dim(i));
  return Tensor<B, 1>::arange(0.0, static_cast<double>(n), 1.0, x.device(), DType::F32)
      .template reshape<D>(s);
}

/// Per dim of `sizes`, the value `o` gives; a single value is used for every dim.
inline int64_t per_dim(const Dims& v, size_t i, int64_t fallback) {
  if (v.empty()) return fallback;
  return v.size() == 1 ? v[0] : v[i];
}

}  // namespace detail

/// max_pool with the flat index (in each input plane) of every window's maximum (the first
/// one where several are equal); the values are the max_pool op's, with its gradient.
template <Backend B, int D>
std::pair<Tensor<B, D>, Tensor<B, D, Int>> max_pool_with_indices(const Tensor<B, D>& x, Dims kernel,
                                                                 const PoolOptions& o = {}) {
  detail::check_spatial_rank<D>();
  auto y = max_pool(x, kernel, o);
  constexpr int R = D - 2;
  // the input, padded on the right where ceil_mode lets the last window run over the edge,
  // with padding that never wins; positions + 1, so that 0 marks padding
  std::vector<int64_t> extra;  // F.pad order: last dim first
  for (int i = R - 1; i >= 0; --i) {
    const int64_t k = detail::per_dim(kernel, i, 1), s = detail::per_dim(o.stride, i, k),
                  p = detail::per_dim(o.padding, i, 0), d = detail::per_dim(o.dilation, i, 1);
    const int64_t need = (y.dim(2 + i) - 1) * s + d * (k - 1) + 1;
    extra.insert(extra.end(), {0, std::max<int64_t>(0, need - (x.dim(2 + i) + 2 * p))});
  }
  auto pos = detail::plane_positions(x) + 1.0;
  auto xp = x.pad(extra, -INFINITY);
  auto pp = pos.pad(extra, 0.0);
  UnfoldOptions u{o.dilation, o.padding,
                  o.stride.empty() ? kernel : o.stride};  // pool: stride = kernel
  const int64_t n = x.dim(0), c = x.dim(1), l = y.numel() / std::max<int64_t>(1, n * c);
  auto cols = unfold(xp, kernel, u).template reshape<4>({n, c, -1, l});  // [N, C, K, L]
  auto pcols = unfold(pp, kernel, u).template reshape<4>({1, 1, -1, l});
  cols = cols.mask_fill(pcols.equal_elem(0.0), -INFINITY);
  auto arg = cols.argmax(2);  // [N, C, 1, L]; padding (-inf) loses to any value, NaN wins
  auto picked =
      pcols.template expand<4>(std::array<int64_t, 4>{n, c, pcols.dim(2), l}).gather(2, arg);
  auto idx = (picked - 1.0).int_();
  return {y, idx.template reshape<D>(y.shape())};
}

/// The inverse of max_pool_with_indices: each value put back at its index in a zero plane of
/// `output_size` (the input's spatial size); the gradient gathers from those positions.
template <Backend B, int D>
Tensor<B, D> max_unpool(const Tensor<B, D>& x, const Tensor<B, D, Int>& indices, Dims output_size) {
  detail::check_spatial_rank<D>();
  if (x.shape() != indices.shape())
    throw ShapeError("[max_unpool] indices " + indices.shape().to_string() +
                     " must have the shape of the input " + x.shape().to_string());
  if (output_size.size() != static_cast<size_t>(D - 2))
    throw ShapeError("[max_unpool] output_size needs " + std::to_string(D - 2) + " sizes");
  const int64_t n = x.dim(0), c = x.dim(1);
  int64_t plane = 1;
  for (int64_t s : output_size) plane *= s;
  if (indices.numel() > 0) {
    const int64_t lo = indices.min().template into_scalar<int64_t>(),
                  hi = indices.max().template into_scalar<int64_t>();
    if (lo < 0 || hi >= plane)
      throw IndexError("[max_unpool] index " + std::to_string(lo < 0 ? lo : hi) +
                       " out of range for an output plane of " + std::to_string(plane));
  }
  auto zeros = Tensor<B, 3>::zeros({n, c, plane}, x.device(), x.dtype());
  auto out =
      zeros.scatter(2, indices.template reshape<3>({n, c, -1}), x.template reshape<3>({n, c, -1}));
  Dims s{n, c};
  for (int64_t d : output_size) s.push_back(d);
  return out.template reshape<D>(Shape(s));
}

/// Max over adaptive windows giving exactly `size` outputs per spatial dim (output o of m
/// covers inputs floor(o * in / m) to ceil((o + 1) * in / m)), with each maximum's flat index.
template <Backend B, int D>
std::pair<Tensor<B, D>, Tensor<B, D, Int>> adaptive_max_pool_with_indices(const Tensor<B, D>& x,
                                                                          Dims size) {
  detail::check_spatial_rank<D>();
  constexpr int R = D - 2;
  if (size.size() == 1) size = Dims(R, size[0]);
  if (size.size() != static_cast<size_t>(R))
    throw ShapeError("[adaptive_max_pool] needs " + std::to_string(R) + " output sizes for input " +
                     x.shape().to_string());
  // window k of dim i: the inputs start + j, j < kmax, clamped to the window's last one (which
  // repeats an element of the same window and so never changes its max)
  Tensor<B, D> v = x;
  Tensor<B, D> p = detail::plane_positions(x);
  Dims win(R);
  for (int i = 0; i < R; ++i) {
    const int64_t in = x.dim(2 + i), m = size[i];
    if (m <= 0 || in <= 0)
      throw ShapeError("[adaptive_max_pool] output size " + std::to_string(m) + " for input " +
                       x.shape().to_string());
    int64_t kmax = 0;
    std::vector<int64_t> at;
    for (int64_t o = 0; o < m; ++o)
      kmax = std::max(kmax, (o + 1) * in / m + ((o + 1) * in % m != 0) - o * in / m);
    for (int64_t o = 0; o < m; ++o) {
      const int64_t start = o * in / m, end = (o + 1) * in / m + ((o + 1) * in % m != 0);
      for (int64_t j = 0; j < kmax; ++j) at.push_back(std::min(start + j, end - 1));
    }
    win[i] = kmax;
    auto idx = Tensor<B, 1, Int>::template from_values<int64_t>(at, Shape{m * kmax}, x.device());
    v = v.select(2 + i, idx);  // dim 2 + i becomes m * kmax
    p = p.select(2 + i, idx);
  }
  // [N, C, m0 k0, m1 k1, ...] -> [N, C, m0, m1, ..., k0 k1 ...]
  auto split = [&](const auto& t, int64_t n, int64_t c) {
    Dims s{n, c};
    for (int i = 0; i < R; ++i) {
      s.push_back(size[i]);
      s.push_back(win[i]);
    }
    Dims order{0, 1};
    for (int i = 0; i < R; ++i) order.push_back(2 + 2 * i);
    for (int i = 0; i < R; ++i) order.push_back(3 + 2 * i);
    constexpr int W = 2 + 2 * R;
    std::array<int64_t, W> sa{}, oa{};
    std::copy(s.begin(), s.end(), sa.begin());
    std::copy(order.begin(), order.end(), oa.begin());
    std::array<int64_t, R + 3> flat{};
    flat[0] = n;
    flat[1] = c;
    for (int i = 0; i < R; ++i) flat[2 + i] = size[i];
    flat[R + 2] = -1;
    return t.template reshape<W>(sa).permute(oa).template reshape<R + 3>(flat);
  };
  auto vw = split(v, x.dim(0), x.dim(1));  // [N, C, *size, K]
  auto pw = split(p, 1, 1);
  auto arg = vw.argmax(R + 2);
  std::array<int64_t, R + 3> full{};
  for (int i = 0; i < R + 3; ++i) full[i] = vw.dim(i);
  auto values = vw.gather(R + 2, arg);
  auto idx = pw.template expand<R + 3>(full).gather(R + 2, arg).int_();
  return {values.template squeeze<D>(R + 2), idx.template squeeze<D>(R + 2)};
}

template <Backend B, int D>
Tensor<B, D> adaptive_max_pool(const Tensor<B, D>& x, Dims size) {
  return adaptive_max_pool_with_indices(x, std::move(size)).first;
}

}  // namespace ember
