// Searching, counting and selecting with data-dependent results, as PyTorch's searchsorted,
// bucketize, bincount, histc, nonzero / argwhere and unique. Built from table ops: every
// backend runs them. Where the result's size depends on the values (bincount, nonzero,
// unique), the size is read back to the host first, as in PyTorch.
//
//   using namespace ember;
//   auto edges = Tensor<Cpu, 1>::from_values<float>({1, 3, 5}, {3});
//   auto b = bucketize(x, edges);                 // Int, the shape of x
//   auto counts = bincount(labels);               // [max + 1]
//   auto where = nonzero(mask);                   // [count, rank] (Int)
//   auto u = unique(labels);                      // sorted: {values, inverse, counts}
#pragma once
#include <algorithm>
#include <vector>

#include "ember/tensor/tensor.h"

namespace ember {

/// For each value, the index in the sorted last dim of `sorted` where it would be inserted to
/// keep the order: the first position whose entry is >= the value (right = false) or > it
/// (right = true). `sorted` [..., M] and `values` [..., K] share their leading dims (or sorted
/// is 1-d); the result is shaped like `values` (torch.searchsorted).
template <Backend B, int DS, int DV, TensorKind K>
Tensor<B, DV, Int> searchsorted(const Tensor<B, DS, K>& sorted, const Tensor<B, DV, K>& values,
                                bool right = false) {
  static_assert(DS == 1 || DS == DV, "sorted is 1-d or has the rank of values");
  Tensor<B, DV, K> seq = [&] {
    if constexpr (DS == DV)
      return sorted;
    else
      return sorted.template unsqueeze<DV>();
  }();
  auto s = seq.template unsqueeze_dim<DV + 1>(DV - 1);  // [..., 1, M]
  auto v = values.template unsqueeze_dim<DV + 1>(DV);   // [..., K, 1]
  auto before = right ? s.lower_equal(v) : s.lower(v);  // [..., K, M]
  return before.int_().sum_dim(DV).template squeeze<DV>(DV);
}

/// The bucket of each value given sorted boundaries [M]: the number of boundaries below it
/// (right = false: boundaries[i - 1] < x <= boundaries[i]) or not above it (right = true)
/// (torch.bucketize).
template <Backend B, int D, TensorKind K>
Tensor<B, D, Int> bucketize(const Tensor<B, D, K>& x, const Tensor<B, 1, K>& boundaries,
                            bool right = false) {
  auto s = boundaries.template unsqueeze<D + 1>();  // [1, ..., 1, M]
  auto v = x.template unsqueeze_dim<D + 1>(D);      // [..., 1]
  auto below = right ? s.lower_equal(v) : s.lower(v);
  return below.int_().sum_dim(D).template squeeze<D>(D);
}

namespace detail {
/// bincount's length: max(max(x) + 1, minlength); x must be non-negative.
template <Backend B>
int64_t bincount_length(const Tensor<B, 1, Int>& x, int64_t minlength) {
  if (x.numel() == 0) return minlength;
  if (x.min().template into_scalar<int64_t>() < 0)
    throw ValueError("[bincount] needs non-negative values");
  return std::max(minlength, x.max().template into_scalar<int64_t>() + 1);
}
}  // namespace detail

/// How often each value 0, 1, ... occurs in x (non-negative integers), or the sum of their
/// `weights`: [max(max(x) + 1, minlength)] (torch.bincount).
template <Backend B>
Tensor<B, 1> bincount_weighted(const Tensor<B, 1, Int>& x, const Tensor<B, 1>& weights,
                               int64_t minlength = 0) {
  if (weights.shape() != x.shape())
    throw ShapeError("[bincount] weights " + weights.shape().to_string() +
                     " must have the shape of the input " + x.shape().to_string());
  const int64_t n = detail::bincount_length(x, minlength);
  return Tensor<B, 1>::zeros({n}, x.device(), weights.dtype()).scatter_add(0, x, weights);
}
template <Backend B>
Tensor<B, 1, Int> bincount(const Tensor<B, 1, Int>& x, int64_t minlength = 0) {
  auto ones = Tensor<B, 1, Int>::ones(x.shape(), x.device(), DType::I64);
  const int64_t n = detail::bincount_length(x, minlength);
  return Tensor<B, 1, Int>::zeros({n}, x.device(), DType::I64).scatter_add(0, x, ones);
}

/// A histogram of `bins` equal bins over [lo, hi] (values outside are left out; hi falls in
/// the last bin); lo = hi = 0 takes the data's min and max (torch.histc). Shaped [bins], in
/// x's type.
template <Backend B, int D>
Tensor<B, 1> histc(const Tensor<B, D>& x, int64_t bins = 100, double lo = 0, double hi = 0) {
  if (bins <= 0) throw ValueError("[histc] bins must be positive, got " + std::to_string(bins));
  auto flat = x.template reshape<1>({-1});
  if (lo == 0 && hi == 0 && flat.numel() > 0) {
    lo = flat.min().template into_scalar<double>();
    hi = flat.max().template into_scalar<double>();
  }
  if (lo == hi) {  // as PyTorch: widen an empty range by one on each side
    lo -= 1;
    hi += 1;
  }
  if (!(lo < hi)) throw ValueError("[histc] needs min < max");
  auto inside = flat.greater_equal_elem(lo).bool_and(flat.lower_equal_elem(hi));
  auto bin =
      ((flat - lo) * (static_cast<double>(bins) / (hi - lo))).floor().clamp(0.0, double(bins - 1));
  auto idx = bin.int_();
  auto w = inside.float_(x.dtype());
  return Tensor<B, 1>::zeros({bins}, x.device(), x.dtype()).scatter_add(0, idx, w);
}

/// The coordinates of the nonzero (true) elements, one row per element in row-major order:
/// [count, D] (torch.nonzero, torch.argwhere).
template <Backend B, int D, TensorKind K>
Tensor<B, 2, Int> nonzero(const Tensor<B, D, K>& x) {
  auto mask = [&] {
    if constexpr (std::is_same_v<K, Bool>)
      return x;
    else
      return x.not_equal_elem(0.0);
  }();
  const int64_t n = x.numel();
  auto positions =
      Tensor<B, 1, Int>::arange(int64_t{0}, std::max<int64_t>(n, 0), int64_t{1}, x.device())
          .template reshape<D>(x.shape());
  auto flat = positions.mask_select(mask);  // [count]
  const int64_t count = flat.dim(0);
  if constexpr (D == 0) {
    return Tensor<B, 2, Int>::zeros({count, 0}, x.device(), DType::I64);
  } else {
    std::vector<Tensor<B, 1, Int>> coords;
    int64_t stride = n;
    for (int d = 0; d < D; ++d) {
      const int64_t size = x.dim(d);
      stride = size == 0 ? 0 : stride / size;
      coords.push_back(stride == 0 ? flat : (flat / stride).remainder_scalar(size));
    }
    return ember::stack<2>(coords, 1);
  }
}
template <Backend B, int D, TensorKind K>
Tensor<B, 2, Int> argwhere(const Tensor<B, D, K>& x) {
  return nonzero(x);
}

/// unique's result: the sorted distinct values, for each input element the index of its value
/// in them (shaped like the input), and how often each value occurs.
template <Backend B, int D, TensorKind K>
struct Unique {
  Tensor<B, 1, K> values;
  Tensor<B, D, Int> inverse;
  Tensor<B, 1, Int> counts;
};

/// The distinct values of x in ascending order, with the inverse indices and the counts
/// (torch.unique(sorted=True, return_inverse=True, return_counts=True)).
template <Backend B, int D, TensorKind K>
Unique<B, D, K> unique(const Tensor<B, D, K>& x) requires Numeric<K> {
  auto flat = x.template reshape<1>({-1});
  const int64_t n = flat.dim(0);
  auto [sorted, perm] = flat.sort_with_indices(0);
  if (n == 0)
    return {sorted,
            Tensor<B, 1, Int>::zeros({0}, x.device(), DType::I64).template reshape<D>(x.shape()),
            Tensor<B, 1, Int>::zeros({0}, x.device(), DType::I64)};
  // first[i]: sorted[i] starts a new value
  auto differs = sorted.narrow(0, 1, n - 1).not_equal(sorted.narrow(0, 0, n - 1));
  auto first = cat(std::vector{Tensor<B, 1, Bool>::ones({1}, x.device(), DType::Bool), differs}, 0);
  auto values = sorted.mask_select(first);
  auto group = first.int_().cumsum(0) - int64_t{1};  // sorted order
  auto inverse = Tensor<B, 1, Int>::zeros({n}, x.device(), DType::I64).scatter(0, perm, group);
  const int64_t m = values.dim(0);
  auto counts = Tensor<B, 1, Int>::zeros({m}, x.device(), DType::I64)
                    .scatter_add(0, group, Tensor<B, 1, Int>::ones({n}, x.device(), DType::I64));
  return {values, inverse.template reshape<D>(x.shape()), counts};
}

}  // namespace ember
