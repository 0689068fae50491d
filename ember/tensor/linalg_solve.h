// Factorizations and solves of square matrices (ember::linalg), batched over leading dims:
// Cholesky, triangular solves, LU with partial pivoting, solve, inv and det, as
// torch.linalg's. Each is written as its textbook algorithm over table ops (a column or a row
// per step), so every backend runs it and autodiff differentiates it; the cost is one step
// per row, which suits the small and medium matrices of models (covariances, attention
// corrections, normalizing flows) rather than large dense solves.
//
//   using T2 = ember::Tensor<ember::Cpu, 2>;
//   auto a = T2::from_values<float>({4, 2, 2, 3}, {2, 2});
//   auto l = ember::linalg::cholesky(a);                    // a = l l^T, l lower triangular
//   auto x = ember::linalg::solve(a, T2::ones({2, 1}));     // a x = b
//   auto d = ember::linalg::det(a);                         // [1, 1]: 8
//   auto ai = ember::linalg::inv(a);
#pragma once
#include <algorithm>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "ember/tensor/ops.h"
#include "ember/tensor/tensor.h"

namespace ember::linalg {

namespace detail {

template <Backend B, int D>
void check_square(const char* op, const Tensor<B, D>& a) {
  static_assert(D >= 2, "linalg ops take [..., n, n] matrices");
  if (a.dim(D - 1) != a.dim(D - 2))
    throw ShapeError(std::string("[") + op + "] needs square matrices, got " +
                     a.shape().to_string());
}

/// A [n, 1] column of x's float type: 1 for rows i >= from (or i > from when strict), else 0.
template <Backend B, int D>
Tensor<B, D> rows_from(const Tensor<B, D>& like, int64_t n, int64_t from, bool strict = false) {
  auto i = Tensor<B, 1, Int>::arange(int64_t{0}, n, int64_t{1}, like.device());
  auto m = strict ? i.greater_elem(from) : i.greater_equal_elem(from);
  std::array<int64_t, D> s{};
  s.fill(1);
  s[D - 2] = n;
  return m.float_(like.dtype()).template reshape<D>(s);
}

/// The rows of `a` reordered so that rows k and p (an Int [..., 1, 1] per batch) swap.
template <Backend B, int D, TensorKind K>
Tensor<B, D, K> swap_rows(const Tensor<B, D, K>& a, int64_t k, const Tensor<B, D, Int>& p) {
  const int64_t n = a.dim(D - 2);
  std::array<int64_t, D> col{};
  col.fill(1);
  col[D - 2] = n;
  auto r =
      Tensor<B, 1, Int>::arange(int64_t{0}, n, int64_t{1}, a.device()).template reshape<D>(col);
  auto at_k = r.equal_elem(k), at_p = r.equal(p);
  auto kk = Tensor<B, D, Int>::full(p.shape(), int64_t{k}, a.device(), DType::I64);
  auto src = r.mask_where(at_p, kk).mask_where(at_k, p);  // [..., n, 1]
  std::array<int64_t, D> full{};
  for (int d = 0; d < D; ++d) full[d] = a.dim(d);
  Dims s = src.shape().dims();
  for (int d = 0; d < D - 2; ++d) full[d] = std::max(full[d], s[d]);
  return a.template expand<D>(full).gather(D - 2, src.template expand<D>(full));
}

}  // namespace detail

/// The lower-triangular L with a = L L^T for symmetric positive-definite a [..., n, n]
/// (torch.linalg.cholesky); a matrix that is not positive-definite is a ValueError naming the
/// order of its first minor that is not. `a` is read as its symmetric part (a + a^T) / 2, so
/// the gradient is symmetric, as PyTorch's.
template <Backend B, int D>
Tensor<B, D> cholesky(const Tensor<B, D>& input) {
  detail::check_square("cholesky", input);
  const Tensor<B, D> a = (input + input.transpose()) * 0.5;
  const int64_t n = a.dim(D - 1);
  std::vector<Tensor<B, D>> cols;
  for (int64_t j = 0; j < n; ++j) {
    auto c = a.narrow(D - 1, j, 1);  // [..., n, 1]
    if (j > 0) {
      auto l = ember::cat(cols, D - 1);  // [..., n, j]
      c = c - l.matmul(l.narrow(D - 2, j, 1).transpose());
    }
    auto d = c.narrow(D - 2, j, 1);  // [..., 1, 1]
    if (d.numel() > 0 && !(d.min().template into_scalar<double>() > 0))
      throw ValueError(
          "[cholesky] the input is not positive-definite (the leading minor of order " +
          std::to_string(j + 1) + " is not)");
    cols.push_back(c / d.sqrt() * detail::rows_from(c, n, j));
  }
  if (n == 0) return a;
  return ember::cat(cols, D - 1);
}

/// x with t x = b for triangular t [..., n, n] (lower unless `upper`) and b [..., n, k]
/// (torch.linalg.solve_triangular with left = true); unitriangular takes the diagonal as 1.
template <Backend B, int D>
Tensor<B, D> solve_triangular(const Tensor<B, D>& t, const Tensor<B, D>& b, bool upper,
                              bool unitriangular = false) {
  detail::check_square("solve_triangular", t);
  const int64_t n = t.dim(D - 1);
  if (b.dim(D - 2) != n)
    throw ShapeError("[solve_triangular] b " + b.shape().to_string() + " needs " +
                     std::to_string(n) + " rows for " + t.shape().to_string());
  std::vector<Tensor<B, D>> rows(static_cast<size_t>(n), b.narrow(D - 2, 0, 0));
  for (int64_t s = 0; s < n; ++s) {
    const int64_t i = upper ? n - 1 - s : s;
    auto r = b.narrow(D - 2, i, 1);  // [..., 1, k]
    if (s > 0) {
      const int64_t lo = upper ? i + 1 : 0, len = upper ? n - 1 - i : i;
      std::vector<Tensor<B, D>> done(rows.begin() + lo, rows.begin() + lo + len);
      auto xs = ember::cat(done, D - 2);  // [..., len, k]
      r = r - t.narrow(D - 2, i, 1).narrow(D - 1, lo, len).matmul(xs);
    }
    rows[i] = unitriangular ? r : r / t.narrow(D - 2, i, 1).narrow(D - 1, i, 1);
  }
  if (n == 0) return b;
  return ember::cat(rows, D - 2);
}

/// The LU factorization with partial pivoting of a [..., n, n]: P a = L U with L unit lower
/// triangular (packed below U's diagonal in `lu`), the row order `perm` (P's rows as Int
/// [..., n, 1]) and the number of row swaps (its parity is det(P)'s sign) per matrix.
template <Backend B, int D>
struct LuResult {
  Tensor<B, D> lu;
  Tensor<B, D, Int> perm;
  Tensor<B, D, Int> swaps;  // [..., 1, 1]
};

template <Backend B, int D>
LuResult<B, D> lu_factor(const Tensor<B, D>& a) {
  detail::check_square("lu_factor", a);
  const int64_t n = a.dim(D - 1);
  std::array<int64_t, D> col{};
  col.fill(1);
  col[D - 2] = n;
  std::array<int64_t, D> one{};
  one.fill(1);
  std::array<int64_t, D> batch_col{};
  for (int d = 0; d < D - 2; ++d) batch_col[d] = a.dim(d);
  batch_col[D - 2] = n;
  batch_col[D - 1] = 1;
  auto perm = Tensor<B, 1, Int>::arange(int64_t{0}, n, int64_t{1}, a.device())
                  .template reshape<D>(col)
                  .template expand<D>(batch_col);
  std::array<int64_t, D> batch_one = batch_col;
  batch_one[D - 2] = 1;
  auto swaps = Tensor<B, D, Int>::zeros(Shape(Dims(batch_one.begin(), batch_one.end())), a.device(),
                                        DType::I64);
  Tensor<B, D> u = a;
  std::vector<Tensor<B, D>> lcols;  // the multipliers of each step, [..., n, 1]
  for (int64_t k = 0; k < n; ++k) {
    // the pivot: the largest |u[i, k]| for i >= k
    auto ck = u.narrow(D - 1, k, 1);  // [..., n, 1]
    auto cand = ck.abs().mask_fill(detail::rows_from(ck, n, k).equal_elem(0.0), -1.0);
    auto p = cand.argmax(D - 2);  // [..., 1, 1]
    swaps = swaps + p.not_equal_elem(k).int_();
    u = detail::swap_rows(u, k, p);
    perm = detail::swap_rows(perm, k, p);
    for (auto& l : lcols) l = detail::swap_rows(l, k, p);
    auto pivot = u.narrow(D - 2, k, 1).narrow(D - 1, k, 1);  // [..., 1, 1]
    auto below = detail::rows_from(ck, n, k, true);          // rows > k
    auto f = u.narrow(D - 1, k, 1) / pivot * below;          // [..., n, 1]
    u = u - f.matmul(u.narrow(D - 2, k, 1));                 // rows > k eliminated
    lcols.push_back(f);
  }
  if (n == 0) return {a, perm, swaps};
  auto l = ember::cat(lcols, D - 1);    // strictly lower
  return {u.triu(0) + l, perm, swaps};  // triu: the rounding left below the diagonal dropped
}

/// x with a x = b, for a [..., n, n] and b [..., n, k] (torch.linalg.solve).
template <Backend B, int D>
Tensor<B, D> solve(const Tensor<B, D>& a, const Tensor<B, D>& b) {
  detail::check_square("solve", a);
  if (b.dim(D - 2) != a.dim(D - 1))
    throw ShapeError("[solve] b " + b.shape().to_string() + " does not match " +
                     a.shape().to_string());
  auto f = lu_factor(a);
  std::array<int64_t, D> idx{};
  for (int d = 0; d < D; ++d) idx[d] = std::max(f.perm.dim(d), b.dim(d));
  idx[D - 1] = b.dim(D - 1);
  std::array<int64_t, D> bs = idx;
  bs[D - 2] = b.dim(D - 2);
  auto pb = b.template expand<D>(bs).gather(D - 2, f.perm.template expand<D>(idx));
  auto y = solve_triangular(f.lu, pb, false, true);
  return solve_triangular(f.lu, y, true);
}

/// The inverse of a [..., n, n] (torch.linalg.inv).
template <Backend B, int D>
Tensor<B, D> inv(const Tensor<B, D>& a) {
  detail::check_square("inv", a);
  const int64_t n = a.dim(D - 1);
  auto eye = Tensor<B, 2>::eye(n, a.device(), a.dtype()).template unsqueeze<D>();
  std::array<int64_t, D> s{};
  for (int d = 0; d < D; ++d) s[d] = a.dim(d);
  return solve(a, eye.template expand<D>(s));
}

/// The determinant of a [..., n, n], as [..., 1, 1] (torch.linalg.det keeps no dims).
template <Backend B, int D>
Tensor<B, D> det(const Tensor<B, D>& a) {
  detail::check_square("det", a);
  const int64_t n = a.dim(D - 1);
  if (n == 0)
    return Tensor<B, D>::ones(Shape([&] {
                                Dims s = a.shape().dims();
                                s[D - 2] = s[D - 1] = 1;
                                return s;
                              }()),
                              a.device(), a.dtype());
  auto f = lu_factor(a);
  auto diag =
      (f.lu * Tensor<B, 2>::eye(n, a.device(), a.dtype()).template unsqueeze<D>()).sum_dim(D - 1);
  auto sign = 1.0 - f.swaps.remainder_scalar(int64_t{2}).float_(a.dtype()) * 2.0;
  return diag.prod_dim(D - 2) * sign;
}

/// The reduced QR factorization of a [..., m, n] (m >= n): Q [..., m, n] with orthonormal
/// columns and R [..., n, n] upper triangular with a positive diagonal, a = Q R
/// (torch.linalg.qr up to the signs of Q's columns and R's rows, which it leaves to LAPACK).
/// Gram-Schmidt with each projection done twice, which keeps Q orthogonal to rounding.
template <Backend B, int D>
std::pair<Tensor<B, D>, Tensor<B, D>> qr(const Tensor<B, D>& a) {
  static_assert(D >= 2, "qr takes [..., m, n] matrices");
  const int64_t m = a.dim(D - 2), n = a.dim(D - 1);
  if (m < n || n == 0)
    throw ShapeError("[qr] needs m >= n > 0 (the reduced factorization), got " +
                     a.shape().to_string());
  std::vector<Tensor<B, D>> qs, rs;  // columns of Q [..., m, 1] and of R [..., n, 1]
  for (int64_t j = 0; j < n; ++j) {
    auto v = a.narrow(D - 1, j, 1);
    std::optional<Tensor<B, D>> h;
    if (j > 0) {
      auto q = ember::cat(qs, D - 1);  // [..., m, j]
      auto h1 = q.transpose().matmul(v);
      v = v - q.matmul(h1);
      auto h2 = q.transpose().matmul(v);
      v = v - q.matmul(h2);
      h = h1 + h2;  // [..., j, 1]
    }
    auto norm = v.square().sum_dim(D - 2).sqrt();  // [..., 1, 1]
    qs.push_back(v / norm);
    Dims below = norm.shape().dims();
    below[D - 2] = n - j - 1;
    std::vector<Tensor<B, D>> parts;
    if (h) parts.push_back(*h);
    parts.push_back(norm);
    if (n - j - 1 > 0) parts.push_back(Tensor<B, D>::zeros(Shape(below), a.device(), a.dtype()));
    rs.push_back(ember::cat(parts, D - 2));
  }
  return {ember::cat(qs, D - 1), ember::cat(rs, D - 1)};
}

/// The eigenvalues (ascending, [..., n, 1]) and eigenvectors (the columns of [..., n, n]) of
/// symmetric a [..., n, n] (torch.linalg.eigh; each eigenvector's sign is arbitrary, as
/// there). Cyclic Jacobi rotations until the off-diagonal part is below the rounding of the
/// type (at most 30 sweeps); `a` is read as (a + a^T) / 2.
template <Backend B, int D>
std::pair<Tensor<B, D>, Tensor<B, D>> eigh(const Tensor<B, D>& input) {
  detail::check_square("eigh", input);
  const int64_t n = input.dim(D - 1);
  Tensor<B, D> a = (input + input.transpose()) * 0.5;
  std::array<int64_t, D> full{};
  for (int d = 0; d < D; ++d) full[d] = a.dim(d);
  auto eye = Tensor<B, 2>::eye(n, a.device(), a.dtype()).template unsqueeze<D>();
  Tensor<B, D> v = eye.template expand<D>(full);
  auto unit = [&](int64_t r, int64_t c) {  // the [1.., n, n] matrix with a 1 at (r, c)
    std::vector<double> e(static_cast<size_t>(n * n), 0.0);
    e[static_cast<size_t>(r * n + c)] = 1.0;
    return Tensor<B, 2>::template from_values<double>(e, Shape{n, n}, a.device())
        .cast(a.dtype())
        .template unsqueeze<D>();
  };
  const double tol = a.dtype() == DType::F64 ? 1e-14 : 1e-7;
  auto off_norm = [&](const Tensor<B, D>& t) {
    return (t * (1.0 - eye)).square().sum().template into_scalar<double>();
  };
  const double scale = std::max(a.square().sum().template into_scalar<double>(), 1e-300);
  for (int sweep = 0; sweep < 30 && n > 1 && off_norm(a) > tol * tol * scale; ++sweep) {
    for (int64_t p = 0; p < n - 1; ++p)
      for (int64_t q = p + 1; q < n; ++q) {
        auto app = a.narrow(D - 2, p, 1).narrow(D - 1, p, 1);
        auto aqq = a.narrow(D - 2, q, 1).narrow(D - 1, q, 1);
        auto apq = a.narrow(D - 2, p, 1).narrow(D - 1, q, 1);  // [..., 1, 1]
        auto zero = apq.abs().lower_equal_elem(1e-300);
        auto safe = apq.mask_fill(zero, 1.0);
        auto tau = (aqq - app) / (safe * 2.0);
        auto t = tau.sign().mask_fill(tau.equal_elem(0.0), 1.0) /
                 (tau.abs() + (tau.square() + 1.0).sqrt());
        t = t.mask_fill(zero, 0.0);
        auto c = (t.square() + 1.0).rsqrt(), s = t * c;
        // J = I + (c - 1)(E_pp + E_qq) + s (E_pq - E_qp); a <- J^T a J, v <- v J
        auto j = eye + (c - 1.0) * (unit(p, p) + unit(q, q)) + s * (unit(p, q) - unit(q, p));
        a = j.transpose().matmul(a).matmul(j);
        v = v.matmul(j);
      }
  }
  auto w = (a * eye).sum_dim(D - 1);  // [..., n, 1]
  auto [sorted, order] = w.sort_with_indices(D - 2);
  std::array<int64_t, D> cols = full;
  auto idx = order.transpose().template expand<D>(cols);  // [..., n, n]: column order
  return {sorted, v.gather(D - 1, idx)};
}

/// The singular values of a [..., m, n], descending, as [..., min(m, n), 1]
/// (torch.linalg.svdvals): the square roots of the eigenvalues of a^T a (or a a^T).
template <Backend B, int D>
Tensor<B, D> svdvals(const Tensor<B, D>& a) {
  static_assert(D >= 2, "svdvals takes [..., m, n] matrices");
  const bool tall = a.dim(D - 2) >= a.dim(D - 1);
  auto g = tall ? a.transpose().matmul(a) : a.matmul(a.transpose());
  auto ev = eigh(g).first.clamp_min(0.0).sqrt();
  return ev.flip({D - 2});
}

/// The reduced singular value decomposition a = u diag(s) vh of a [..., m, n], k = min(m, n)
/// (torch.linalg.svd with full_matrices=false): u [..., m, k] and vh [..., k, n] with
/// orthonormal columns and rows, s [..., k, 1] descending. The right (for a tall a) or left
/// singular vectors are the eigenvectors of the Gram matrix, the others a v / s; a singular
/// vector's sign is arbitrary, as in PyTorch. The vectors of zero singular values are not
/// defined by a and come out zero.
template <Backend B, int D>
struct SvdResult {
  Tensor<B, D> u, s, vh;
};

template <Backend B, int D>
SvdResult<B, D> svd(const Tensor<B, D>& a) {
  static_assert(D >= 2, "svd takes [..., m, n] matrices");
  const bool tall = a.dim(D - 2) >= a.dim(D - 1);
  auto m = tall ? a : a.transpose();  // [..., p, k] with p >= k
  auto [w, v] = eigh(m.transpose().matmul(m));
  w = w.flip({D - 2});
  v = v.flip({D - 1});               // columns by descending eigenvalue
  auto s = w.clamp_min(0.0).sqrt();  // [..., k, 1]
  const double tiny = a.dtype() == DType::F64 ? 1e-300 : 1e-30;
  auto zero = s.lower_equal_elem(tiny);
  auto inv = (1.0 / s.mask_fill(zero, 1.0)).mask_fill(zero, 0.0);  // 1/s, 0 where s vanishes
  auto u = m.matmul(v) * inv.transpose();                          // [..., p, k]
  if (tall) return {u, s, v.transpose()};
  return {v, s, u.transpose()};
}

/// The Moore-Penrose pseudo-inverse of a [..., m, n] as [..., n, m] (torch.linalg.pinv):
/// singular values at most rtol times the largest count as zero (default: the type's
/// epsilon times max(m, n), as PyTorch).
template <Backend B, int D>
Tensor<B, D> pinv(const Tensor<B, D>& a, std::optional<double> rtol = std::nullopt) {
  static_assert(D >= 2, "pinv takes [..., m, n] matrices");
  const double eps = a.dtype() == DType::F64 ? 2.220446049250313e-16 : 1.1920928955078125e-07;
  const double r = rtol.value_or(eps * static_cast<double>(std::max(a.dim(D - 2), a.dim(D - 1))));
  auto [u, s, vh] = svd(a);
  auto largest = s.narrow(D - 2, 0, 1);    // [..., 1, 1]
  auto drop = s.lower_equal(largest * r);  // a mask: no gradient flows through it
  auto inv = (1.0 / s.mask_fill(drop, 1.0)).mask_fill(drop, 0.0);
  return (vh.transpose() * inv.transpose()).matmul(u.transpose());
}

/// The least-squares solution x [..., n, k] of a x = b for a [..., m, n], b [..., m, k]
/// (torch.linalg.lstsq's solution): the minimum-norm one, pinv(a) b.
template <Backend B, int D>
Tensor<B, D> lstsq(const Tensor<B, D>& a, const Tensor<B, D>& b) {
  if (a.dim(D - 2) != b.dim(D - 2))
    throw ShapeError("[lstsq] a " + a.shape().to_string() + " and b " + b.shape().to_string() +
                     " differ in their row count");
  return pinv(a).matmul(b);
}

}  // namespace ember::linalg
