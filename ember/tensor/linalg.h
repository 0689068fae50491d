// Norms and distances on float tensors (ember::linalg), with PyTorch's semantics: every
// function is built from table ops, so it runs on every backend and has gradients.
//
//   using namespace ember;
//   auto x = Tensor<Cpu, 2>::from_values<float>({3, -4, 1, 2}, {2, 2});
//   auto n = linalg::vector_norm(x, 2.0, {1});               // [2, 1]: 5, sqrt(5)
//   auto m = linalg::vector_norm(x, INFINITY, {0, 1});       // [1, 1]: 4
//   auto u = linalg::normalize(x, 2.0, 1);                   // rows of unit length
//   auto c = linalg::cosine_similarity(x, u, 1);             // [2, 1]: 1, 1
//
// Reduced dims are kept (size 1), as everywhere in ember.
#pragma once
#include <cmath>
#include <string>

#include "ember/tensor/linalg_solve.h"
#include "ember/tensor/tensor.h"

namespace ember::linalg {

/// The p-norm over `dims` (empty: every dim) for any p: 0 counts the nonzero elements, 1 and 2
/// are the usual norms, +inf / -inf the largest / smallest |x|, any other p (fractional too)
/// sum(|x|^p)^(1/p) (torch.linalg.vector_norm).
template <Backend B, int D>
Tensor<B, D> vector_norm(const Tensor<B, D>& x, double p = 2.0, Dims dims = {}) {
  if (dims.empty())
    for (int64_t d = 0; d < D; ++d) dims.push_back(d);
  auto a = x.abs();
  if (p == INFINITY) return a.max_dims(dims);
  if (p == -INFINITY) return a.min_dims(dims);
  if (p == 0.0) return x.not_equal_elem(0.0).float_(x.dtype()).sum_dims(dims);
  if (p == 1.0) return a.sum_dims(dims);
  if (p == 2.0) return x.square().sum_dims(dims).sqrt();
  return a.pow_scalar(p).sum_dims(dims).pow_scalar(1.0 / p);
}

/// Matrix norms over the last two dims (kept), as torch.linalg.matrix_norm's `ord`: 1 / -1
/// (largest / smallest column sum of |x|), inf / -inf (largest / smallest row sum of |x|),
/// 2 / -2 (largest / smallest singular value).
template <Backend B, int D>
Tensor<B, D> matrix_norm(const Tensor<B, D>& x, double ord) requires(D >= 2) {
  auto a = x.abs();
  if (ord == 1.0) return a.sum_dim(D - 2).max_dim(D - 1);
  if (ord == -1.0) return a.sum_dim(D - 2).min_dim(D - 1);
  if (ord == INFINITY) return a.sum_dim(D - 1).max_dim(D - 2);
  if (ord == -INFINITY) return a.sum_dim(D - 1).min_dim(D - 2);
  if (ord == 2.0 || ord == -2.0) {  // the largest / smallest singular value
    auto s = svdvals(x);            // [..., k, 1], descending
    return ord == 2.0 ? s.narrow(D - 2, 0, 1) : s.narrow(D - 2, s.dim(D - 2) - 1, 1);
  }
  throw ValueError("[matrix_norm] ord " + std::to_string(ord) +
                   " is not supported (1, -1, 2, -2, inf, -inf, or \"fro\" / \"nuc\")");
}
/// "fro" (Frobenius) or "nuc" (the sum of the singular values).
template <Backend B, int D>
Tensor<B, D> matrix_norm(const Tensor<B, D>& x, const std::string& ord = "fro") requires(D >= 2) {
  if (ord == "nuc") return svdvals(x).sum_dim(D - 2);
  if (ord != "fro")
    throw ValueError("[matrix_norm] ord \"" + ord + "\" is not supported (\"fro\", \"nuc\")");
  return vector_norm(x, 2.0, {D - 2, D - 1});
}

/// x / max(||x||_p, eps) along `dim` (torch.nn.functional.normalize).
template <Backend B, int D>
Tensor<B, D> normalize(const Tensor<B, D>& x, double p = 2.0, int64_t dim = 1, double eps = 1e-12) {
  return x / vector_norm(x, p, {wrap_dim(dim, D, "normalize")}).clamp_min(eps);
}

/// sum(a b) / sqrt(max(|a|^2 |b|^2, eps^2)) along `dim`, a and b broadcast
/// (torch.nn.functional.cosine_similarity); the dim is kept.
template <Backend B, int D>
Tensor<B, D> cosine_similarity(const Tensor<B, D>& a, const Tensor<B, D>& b, int64_t dim = 1,
                               double eps = 1e-8) {
  dim = wrap_dim(dim, D, "cosine_similarity");
  auto w12 = (a * b).sum_dim(dim);
  auto w1 = a.square().sum_dim(dim), w2 = b.square().sum_dim(dim);
  return w12 / (w1 * w2).clamp_min(eps * eps).sqrt();
}

/// ||a - b + eps||_p along the last dim, a and b broadcast (torch.nn.functional.
/// pairwise_distance); the dim is kept.
template <Backend B, int D>
Tensor<B, D> pairwise_distance(const Tensor<B, D>& a, const Tensor<B, D>& b, double p = 2.0,
                               double eps = 1e-6) {
  return vector_norm(a - b + eps, p, {D - 1});
}

/// The p-distance between every row of x1 [..., P, M] and every row of x2 [..., R, M]:
/// [..., P, R] (torch.cdist), batch dims broadcast.
template <Backend B, int D>
Tensor<B, D> cdist(const Tensor<B, D>& x1, const Tensor<B, D>& x2,
                   double p = 2.0) requires(D >= 2) {
  if (x1.dim(D - 1) != x2.dim(D - 1))
    throw ShapeError("[cdist] x1 " + x1.shape().to_string() + " and x2 " + x2.shape().to_string() +
                     " must have the same last dim");
  auto diff = x1.template unsqueeze_dim<D + 1>(D - 1) - x2.template unsqueeze_dim<D + 1>(D - 2);
  return vector_norm(diff, p, {D}).template squeeze<D>(D);
}

/// The outer product of two vectors: [n] x [m] -> [n, m].
template <Backend B, TensorKind K>
Tensor<B, 2, K> outer(const Tensor<B, 1, K>& a, const Tensor<B, 1, K>& b) {
  return a.template unsqueeze_dim<2>(1) * b.template unsqueeze_dim<2>(0);
}

/// The main diagonal of a matrix [n, m] -> [min(n, m)] (torch.diagonal).
template <Backend B, TensorKind K>
Tensor<B, 1, K> diagonal(const Tensor<B, 2, K>& x) {
  const int64_t n = std::min(x.dim(0), x.dim(1));
  auto i = Tensor<B, 1, Int>::arange(int64_t{0}, n, int64_t{1}, x.device());
  auto rows = x.narrow(0, 0, n);
  return rows.gather(1, i.template unsqueeze_dim<2>(1)).template reshape<1>({n});
}

/// The square matrix with `v` on its diagonal: [n] -> [n, n] (torch.diag of a vector).
template <Backend B, TensorKind K>
Tensor<B, 2, K> diag(const Tensor<B, 1, K>& v) {
  const int64_t n = v.dim(0);
  auto eye = Tensor<B, 2, K>::eye(n, v.device(), v.dtype());
  return eye * v.template unsqueeze_dim<2>(0);
}

/// The sum of the main diagonal, as a one-element tensor (torch.trace).
template <Backend B, TensorKind K>
Tensor<B, 1, K> trace(const Tensor<B, 2, K>& x) {
  return diagonal(x).sum();
}

/// The Kronecker product of two matrices: [a, b] x [c, d] -> [a c, b d] (torch.kron).
template <Backend B, TensorKind K>
Tensor<B, 2, K> kron(const Tensor<B, 2, K>& x, const Tensor<B, 2, K>& y) {
  auto p = x.template reshape<4>({x.dim(0), 1, x.dim(1), 1}) *
           y.template reshape<4>({1, y.dim(0), 1, y.dim(1)});
  return p.template reshape<2>({x.dim(0) * y.dim(0), x.dim(1) * y.dim(1)});
}

}  // namespace ember::linalg
