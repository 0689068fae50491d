// The ember call for the golden keys of the API-breadth ops: activations, arithmetic options,
// reductions over several dims, statistics, norms and distances, linear algebra, Fourier
// transforms, grids and searching (cases from tools/gen_goldens_breadth.py). A file of its own,
// so that the two halves of the op map compile side by side.
#include <cmath>

#include "ember/tensor/einsum.h"
#include "ember/tensor/fft.h"
#include "ember/tensor/grid.h"
#include "ember/tensor/linalg.h"
#include "ember/tensor/linalg_solve.h"
#include "ember/tensor/pool_indices.h"
#include "ember/tensor/search.h"
#include "ember/tensor/signal.h"
#include "golden_op.h"

namespace ember::test {

namespace act = ember::activation;

template <Backend B>
PadMode pad_mode_of(const Args<B>& a) {
  const std::string m = a.attrs->at("mode").template get<std::string>();
  if (m == "reflect") return PadMode::Reflect;
  if (m == "replicate") return PadMode::Replicate;
  if (m == "circular") return PadMode::Circular;
  return PadMode::Constant;
}

// f.template operator()<D>() with D the rank of input 0 (3, 4 or 5: 1 to 3 spatial dims).
template <Backend B, class F>
typename B::Handle by_spatial(const Args<B>& a, F f) {
  if (a.rank(0) == 3) return f.template operator()<3>().handle();
  if (a.rank(0) == 4) return f.template operator()<4>().handle();
  if (a.rank(0) == 5) return f.template operator()<5>().handle();
  throw ValueError("[golden] spatial rank not wired");
}

template <class K, Backend B>
Tensor<B, 1, K> boundaries_of(const Args<B>& a) {
  return a.template t<1, K>(1);
}

// var_mean_dims' two results side by side along dims[0].
template <Backend B, int D, class K>
Tensor<B, D, K> var_mean_side_by_side(const Tensor<B, D, K>& x, const Args<B>& a) {
  auto [v, m] = x.var_mean_dims(Dims(a.va("dims")), a.ia("correction"));
  return ember::cat(std::vector{v, m}, a.va("dims").at(0));
}

// f.template operator()<D>() with D the rank of input 0, 1 to 3.
template <Backend B, class F>
typename B::Handle by_rank123(const Args<B>& a, F f) {
  if (a.rank(0) == 1) return f.template operator()<1>().handle();
  if (a.rank(0) == 2) return f.template operator()<2>().handle();
  if (a.rank(0) == 3) return f.template operator()<3>().handle();
  throw ValueError("[golden] rank not wired");
}

// The same for a complex input [..., 2] of rank D + 1: D from 1 to 3.
template <Backend B, class F>
typename B::Handle by_complex_rank(const Args<B>& a, F f) {
  if (a.rank(0) == 2) return f.template operator()<1>().handle();
  if (a.rank(0) == 3) return f.template operator()<2>().handle();
  if (a.rank(0) == 4) return f.template operator()<3>().handle();
  throw ValueError("[golden] rank not wired");
}

/// Eigenvector columns with the sign that makes each column's largest entry positive.
template <Backend B, int D>
Tensor<B, D> signed_columns(const Tensor<B, D>& v) {
  auto at = v.abs().argmax(D - 2);  // [..., 1, n]
  return v * v.gather(D - 2, at).sign();
}

/// A complex result as PyTorch's view_as_real shows it: {re, im} along a new last dim.
template <Backend B, int D>
Tensor<B, D + 1> as_real(const fft::Complex<B, D>& c) {
  return ember::stack<D + 1>(std::vector{c.first, c.second}, D);
}

template <Backend B>
Dims dims_or_empty(const Args<B>& a, const char* k) {
  return a.attrs->contains(k) ? Dims(a.va(k)) : Dims{};
}

template <Backend B>
void add_breadth_ops(std::map<std::string, OpFn<B>>& ops) {
  using A = Args<B>;
  // padding modes, negative padding
  OP("pad_mode", NUM, x.pad(a.va("pads"), pad_mode_of(a), Scalar(a.fa("value"))));
  // activations
  OP("hardtanh", FLT, act::hardtanh(x, a.fa("min"), a.fa("max")));
  OP("relu6", FLT, act::relu6(x));
  OP("threshold", FLT, act::threshold(x, a.fa("threshold"), a.fa("value")));
  OP("tanhshrink", FLT, act::tanhshrink(x));
  OP("softsign", FLT, act::softsign(x));
  OP("hardshrink", FLT, act::hardshrink(x, a.fa("lambda")));
  OP("softshrink", FLT, act::softshrink(x, a.fa("lambda")));
  OP("glu", FLT, act::glu(x, a.ia("dim")));
  // arithmetic options
  OP("add_alpha", FLT, x.add(Y, a.fa("alpha")));
  OP("sub_alpha", FLT, x.sub(Y, a.fa("alpha")));
  OP("pow_base", FLT, pow(Scalar(a.fa("base")), x));
  OP("lerp", FLT, x.lerp(Y, Scalar(a.fa("weight"))));
  OP("lerp_tensor", FLT, x.lerp(Y, Z));
  OP("addcmul", FLT, x.addcmul(Y, Z, a.fa("value")));
  OP("addcmul_scaled", FLT, x.addcmul(Y, Z, a.fa("value"), a.fa("scale")));
  OP("adaptive_step", FLT, x.adaptive_step(Y, Z, a.fa("step"), a.fa("eps")));
  OP("addcdiv", FLT, x.addcdiv(Y, Z, a.fa("value")));
  OP("logaddexp", FLT, x.logaddexp(Y));
  OP("xlogy", FLT, x.xlogy(Y));
  OP("clamp_tensor", NUM, x.clamp(Y, Z));
  // reductions over several dims and statistics
  OP("prod_dims", NUM, x.prod_dims(Dims(a.va("dims"))));
  OP("max_dims", NUM, x.max_dims(Dims(a.va("dims"))));
  OP("min_dims", NUM, x.min_dims(Dims(a.va("dims"))));
  OP("logsumexp_dims", FLT, x.logsumexp_dims(Dims(a.va("dims"))));
  OP("var_dims", FLT, x.var_dims(Dims(a.va("dims")), a.ia("correction")));
  OP("std_dims", FLT, x.std_dims(Dims(a.va("dims")), a.ia("correction")));
  OP("var_mean_dims", FLT, var_mean_side_by_side(x, a));
  OP("std", FLT, x.std(a.ia("dim")));
  OP("median", NUM, x.median(a.ia("dim")));
  OP("median_indices", NUM, x.median_with_indices(a.ia("dim")).second);
  OP("quantile", FLT, x.quantile(a.fa("q"), a.ia("dim")));
  OP("topk_smallest", NUM, x.topk(a.ia("k"), a.ia("dim"), false));
  // norms and distances
  OP("vector_norm", FLT, linalg::vector_norm(x, a.fa("p"), Dims(a.va("dims"))));
  OP("vector_norm_inf", FLT, linalg::vector_norm(x, INFINITY, Dims(a.va("dims"))));
  OP("vector_norm_neginf", FLT, linalg::vector_norm(x, -INFINITY, Dims(a.va("dims"))));
  OP("normalize", FLT, linalg::normalize(x, a.fa("p"), a.ia("dim")));
  OP("cosine_similarity", FLT, linalg::cosine_similarity(x, Y, a.ia("dim")));
  OP("pairwise_distance", FLT, linalg::pairwise_distance(x, Y, a.fa("p")));
  // matrix norms and cdist on rank-2 and rank-3 inputs
  auto by_rank23 = [](const A& a, auto f) {
    if (a.rank(0) == 2) return f.template operator()<2>().handle();
    if (a.rank(0) == 3) return f.template operator()<3>().handle();
    throw ValueError("[golden] rank not wired");
  };
  ops["matrix_norm"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() {
      const std::string ord = a.attrs->at("ord").template get<std::string>();
      if (ord == "fro" || ord == "nuc") return linalg::matrix_norm(a.template f<D>(0), ord);
      const double o = ord == "inf" ? INFINITY : ord == "-inf" ? -INFINITY : std::stod(ord);
      return linalg::matrix_norm(a.template f<D>(0), o);
    });
  };
  // pooling with indices, unpooling, adaptive max pooling
  ops["max_pool_indices"] = [](const A& a) {
    return by_spatial(a, [&]<int D>() {
      PoolOptions o{dims_or_empty(a, "stride"), dims_or_empty(a, "padding"),
                    dims_or_empty(a, "dilation"), a.ba("ceil_mode")};
      return max_pool_with_indices(a.template f<D>(0), Dims(a.va("kernel")), o).second;
    });
  };
  ops["max_unpool"] = [](const A& a) {
    return by_spatial(a, [&]<int D>() {
      return max_unpool(a.template f<D>(0), a.template t<D, Int>(1), Dims(a.va("size")));
    });
  };
  ops["adaptive_max_pool"] = [](const A& a) {
    return by_spatial(
        a, [&]<int D>() { return adaptive_max_pool(a.template f<D>(0), Dims(a.va("size"))); });
  };
  ops["adaptive_max_pool_indices"] = [](const A& a) {
    return by_spatial(a, [&]<int D>() {
      return adaptive_max_pool_with_indices(a.template f<D>(0), Dims(a.va("size"))).second;
    });
  };
  // searching, counting, data-dependent selection
  ops["searchsorted"] = [](const A& a) -> typename B::Handle {
    const bool right = a.ba("right");
    if (a.rank(0) == 1) return searchsorted(a.template f<1>(0), a.template f<2>(1), right).handle();
    return searchsorted(a.template f<2>(0), a.template f<2>(1), right).handle();
  };
  OP("bucketize", NUM, bucketize(x, boundaries_of<K>(a), a.ba("right")));
  ops["bincount"] = [](const A& a) {
    return bincount(a.template t<1, Int>(0), a.ia("minlength")).handle();
  };
  ops["bincount_weighted"] = [](const A& a) {
    return bincount_weighted(a.template t<1, Int>(0), a.template f<1>(1), a.ia("minlength"))
        .handle();
  };
  OP("histc", FLT, histc(x, a.ia("bins"), a.fa("min"), a.fa("max")));
  OP("nonzero", ANY, nonzero(x));
  OP("unique_values", NUM, unique(x).values);
  OP("unique_inverse", NUM, unique(x).inverse);
  OP("unique_counts", NUM, unique(x).counts);
  // small linear algebra
  ops["outer"] = [](const A& a) {
    return linalg::outer(a.template f<1>(0), a.template f<1>(1)).handle();
  };
  ops["diagonal"] = [](const A& a) { return linalg::diagonal(a.template f<2>(0)).handle(); };
  ops["diag"] = [](const A& a) { return linalg::diag(a.template f<1>(0)).handle(); };
  ops["trace"] = [](const A& a) { return linalg::trace(a.template f<2>(0)).handle(); };
  ops["kron"] = [](const A& a) {
    return linalg::kron(a.template f<2>(0), a.template f<2>(1)).handle();
  };
  ops["einsum"] = [](const A& a) -> typename B::Handle {
    const std::string eq = a.attrs->at("equation").template get<std::string>();
    auto f1 = [&](size_t i) { return a.template f<1>(i); };
    auto f2 = [&](size_t i) { return a.template f<2>(i); };
    auto f3 = [&](size_t i) { return a.template f<3>(i); };
    if (eq == "ik,kj->ij") return einsum<2>(eq, f2(0), f2(1)).handle();
    if (eq == "bhd,bkd->bhk") return einsum<3>(eq, f3(0), f3(1)).handle();
    if (eq == "ij,ij->i") return einsum<1>(eq, f2(0), f2(1)).handle();
    if (eq == "i,i->") return einsum<0>(eq, f1(0), f1(1)).handle();
    if (eq == "i,j->ij") return einsum<2>(eq, f1(0), f1(1)).handle();
    if (eq == "ij->ji") return einsum<2>(eq, f2(0)).handle();
    if (eq == "ijk->j") return einsum<1>(eq, f3(0)).handle();
    if (eq == "ij,j->i") return einsum<1>(eq, f2(0), f1(1)).handle();
    if (eq == "bi,bj->bij") return einsum<3>(eq, f2(0), f2(1)).handle();
    if (eq == "bij,bjk,bkl->bil") return einsum<3>(eq, f3(0), f3(1), f3(2)).handle();
    if (eq == "abc,cd->dba") return einsum<3>(eq, f3(0), f2(1)).handle();
    if (eq == "ik,kj->ij/i64")
      return einsum<2>("ik,kj->ij", a.template t<2, Int>(0), a.template t<2, Int>(1)).handle();
    throw ValueError("[golden] einsum equation not wired: " + eq);
  };
  ops["meshgrid"] = [](const A& a) {  // the grids stacked along a new dim 0
    const bool xy = a.attrs->at("indexing").template get<std::string>() == "xy";
    auto g = meshgrid(std::array{a.template f<1>(0), a.template f<1>(1)}, xy);
    return ember::stack<3>(std::vector{g[0], g[1]}, 0).handle();
  };
  // windows
  ops["window"] = [](const A& a) {
    const std::string w = a.attrs->at("window").template get<std::string>();
    const int64_t n = a.ia("n");
    const bool periodic = a.ba("periodic");
    const Device dev = B::default_device();
    if (w == "hann") return signal::hann_window<B>(n, periodic, dev).handle();
    if (w == "hamming") return signal::hamming_window<B>(n, periodic, dev).handle();
    if (w == "blackman") return signal::blackman_window<B>(n, periodic, dev).handle();
    if (w == "bartlett") return signal::bartlett_window<B>(n, periodic, dev).handle();
    if (w == "kaiser") return signal::kaiser_window<B>(n, periodic, a.fa("beta"), dev).handle();
    throw ValueError("[golden] window not wired: " + w);
  };
  // Fourier transforms: complex inputs come as [..., n, 2] (view_as_real), results too
  ops["rfft"] = [](const A& a) {
    return by_rank123(
        a, [&]<int D>() { return as_real<B, D>(fft::rfft(a.template f<D>(0), a.ia("dim"))); });
  };
  ops["irfft"] = [](const A& a) {  // input [..., bins, 2]
    return by_complex_rank(a, [&]<int D>() {
      auto z = a.template f<D + 1>(0);
      auto re = z.narrow(D, 0, 1).template squeeze<D>(D),
           im = z.narrow(D, 1, 1).template squeeze<D>(D);
      return fft::irfft(re, im, a.ia("n"));
    });
  };
  ops["fft"] = [](const A& a) {
    return by_complex_rank(a, [&]<int D>() {
      auto z = a.template f<D + 1>(0);
      auto re = z.narrow(D, 0, 1).template squeeze<D>(D),
           im = z.narrow(D, 1, 1).template squeeze<D>(D);
      return as_real<B, D>(a.ba("inverse") ? fft::ifft(re, im) : fft::fft(re, im));
    });
  };
  ops["istft"] = [](const A& a) -> typename B::Handle {  // input [..., bins, frames, 2]
    auto w = a.template f<1>(1);
    const int64_t n_fft = a.ia("n_fft"), hop = a.ia("hop");
    if (a.rank(0) == 3) {
      auto z = a.template f<3>(0);
      return fft::istft(z.narrow(2, 0, 1).template squeeze<2>(2),
                        z.narrow(2, 1, 1).template squeeze<2>(2), n_fft, hop, w)
          .handle();
    }
    auto z = a.template f<4>(0);
    return fft::istft(z.narrow(3, 0, 1).template squeeze<3>(3),
                      z.narrow(3, 1, 1).template squeeze<3>(3), n_fft, hop, w)
        .handle();
  };
  ops["fftfreq"] = [](const A& a) {
    const int64_t n = a.ia("n");
    const double d = a.fa("d");
    return (a.ba("real") ? fft::rfftfreq<B>(n, d) : fft::fftfreq<B>(n, d)).handle();
  };
  OP("fftshift", FLT,
     a.ba("inverse") ? fft::ifftshift(x, a.ia("dim")) : fft::fftshift(x, a.ia("dim")));
  ops["stft"] = [](const A& a) -> typename B::Handle {
    auto w = a.template f<1>(1);
    if (a.rank(0) == 1)
      return as_real<B, 2>(fft::stft(a.template f<1>(0), a.ia("n_fft"), a.ia("hop"), w)).handle();
    return as_real<B, 3>(fft::stft(a.template f<2>(0), a.ia("n_fft"), a.ia("hop"), w)).handle();
  };
  // sampling grids
  ops["affine_grid"] = [](const A& a) {
    auto s = a.va("size");
    return affine_grid(a.template f<3>(0), {s[0], s[1], s[2], s[3]}, a.ba("align_corners"))
        .handle();
  };
  ops["grid_sample"] = [](const A& a) {
    const auto mode = a.attrs->at("mode").template get<std::string>() == "nearest"
                          ? GridMode::Nearest
                          : GridMode::Bilinear;
    const auto pad = a.attrs->at("padding_mode").template get<std::string>() == "border"
                         ? GridPadding::Border
                         : GridPadding::Zeros;
    return grid_sample(a.template f<4>(0), a.template f<4>(1), mode, pad, a.ba("align_corners"))
        .handle();
  };
  // factorizations and solves
  ops["cholesky"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return linalg::cholesky(a.template f<D>(0)); });
  };
  ops["solve"] = [by_rank23](const A& a) {
    return by_rank23(
        a, [&]<int D>() { return linalg::solve(a.template f<D>(0), a.template f<D>(1)); });
  };
  ops["inv"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return linalg::inv(a.template f<D>(0)); });
  };
  ops["det"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return linalg::det(a.template f<D>(0)); });
  };
  ops["solve_triangular"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() {
      return linalg::solve_triangular(a.template f<D>(0), a.template f<D>(1), a.ba("upper"));
    });
  };
  ops["qr"] = [by_rank23](const A& a) {  // Q [..., m, n] stacked over R [..., n, n]
    return by_rank23(a, [&]<int D>() {
      auto [q, r] = linalg::qr(a.template f<D>(0));
      return ember::cat(std::vector{q, r}, D - 2);
    });
  };
  ops["eigvalsh"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return linalg::eigh(a.template f<D>(0)).first; });
  };
  ops["eigh_vectors"] = [by_rank23](const A& a) {
    return by_rank23(
        a, [&]<int D>() { return signed_columns(linalg::eigh(a.template f<D>(0)).second); });
  };
  ops["svdvals"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return linalg::svdvals(a.template f<D>(0)); });
  };
  ops["svd_u"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return signed_columns(linalg::svd(a.template f<D>(0)).u); });
  };
  ops["svd_v"] = [by_rank23](const A& a) {
    return by_rank23(
        a, [&]<int D>() { return signed_columns(linalg::svd(a.template f<D>(0)).vh.transpose()); });
  };
  ops["pinv"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() { return linalg::pinv(a.template f<D>(0)); });
  };
  ops["lstsq"] = [by_rank23](const A& a) {
    return by_rank23(
        a, [&]<int D>() { return linalg::lstsq(a.template f<D>(0), a.template f<D>(1)); });
  };
  ops["cdist"] = [by_rank23](const A& a) {
    return by_rank23(a, [&]<int D>() {
      return linalg::cdist(a.template f<D>(0), a.template f<D>(1), a.fa("p"));
    });
  };
}

template void add_breadth_ops<Dispatch>(std::map<std::string, OpFn<Dispatch>>&);
template void add_breadth_ops<Autodiff<Dispatch>>(std::map<std::string, OpFn<Autodiff<Dispatch>>>&);

}  // namespace ember::test
