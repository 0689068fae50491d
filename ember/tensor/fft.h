// Discrete Fourier transforms and the short-time Fourier transform (ember::fft), as
// torch.fft's rfft, irfft, fft and ifft and torch.stft. ember has no complex dtype: a complex
// tensor is a pair {real, imaginary} of real tensors of one shape, as Burn's rfft returns.
//
//   using T2 = ember::Tensor<ember::Cpu, 2>;
//   auto x = T2::random({4, 64}, ember::Distribution::normal(0, 1));
//   auto [re, im] = ember::fft::rfft(x);                   // [4, 33] each
//   auto back = ember::fft::irfft(re, im, 64);             // [4, 64], x again
//   auto w = ember::signal::hann_window<ember::Cpu>(16);
//   auto [sr, si] = ember::fft::stft(x, 16, 4, w);         // [4, 9, 17]: bins x frames
//
// The transforms are matrix products with the DFT's cos and sin matrices (built on the host
// in f64, then in x's type): O(n^2) per transform, on the GPU's matrix units, with gradients
// from matmul. That suits the frame sizes of audio and spectral layers (up to a few thousand
// points); a fast transform per backend is still to come for long signals. Normalization is
// PyTorch's default ("backward"): forward unscaled, inverse divided by n.
#pragma once
#include <cmath>
#include <utility>
#include <vector>

#include "ember/tensor/nn_ops.h"
#include "ember/tensor/signal.h"
#include "ember/tensor/tensor.h"

namespace ember::fft {

template <Backend B, int D>
using Complex = std::pair<Tensor<B, D>, Tensor<B, D>>;

namespace detail {

/// [rows, cols] of f(k, t) in the type and on the device of `like`.
template <Backend B, int D, class F>
Tensor<B, 2> table(const Tensor<B, D>& like, int64_t rows, int64_t cols, F f) {
  std::vector<double> v(static_cast<size_t>(rows * cols));
  for (int64_t k = 0; k < rows; ++k)
    for (int64_t t = 0; t < cols; ++t) v[static_cast<size_t>(k * cols + t)] = f(k, t);
  return Tensor<B, 2>::template from_values<double>(v, Shape{rows, cols}, like.device())
      .cast(like.dtype());
}

/// x with `dim` moved last, a function applied, and the dim moved back.
template <Backend B, int D, class F>
auto along(const Tensor<B, D>& x, int64_t dim, F f) {
  dim = wrap_dim(dim, D, "fft");
  if (dim == D - 1) return f(x);
  auto r = f(x.swap_dims(dim, D - 1));
  return Complex<B, D>{r.first.swap_dims(dim, D - 1), r.second.swap_dims(dim, D - 1)};
}

/// v [..., n] times the matrix t [n, m], batched over v's leading dims.
template <Backend B, int D>
Tensor<B, D> mm(const Tensor<B, D>& v, const Tensor<B, 2>& t) {
  if constexpr (D == 1) {
    return v.template reshape<2>({1, v.dim(0)}).matmul(t).template reshape<1>({t.dim(1)});
  } else {
    return v.matmul(t.template unsqueeze<D>());
  }
}

inline double angle(int64_t k, int64_t t, int64_t n) {
  return 2.0 * M_PI * static_cast<double>((k * t) % n) / static_cast<double>(n);
}

}  // namespace detail

/// The one-sided spectrum of real x along `dim`: n / 2 + 1 bins (torch.fft.rfft).
template <Backend B, int D>
Complex<B, D> rfft(const Tensor<B, D>& x, int64_t dim = -1) {
  return detail::along(x, dim, [](const Tensor<B, D>& v) {
    const int64_t n = v.dim(D - 1), m = n / 2 + 1;
    if (n == 0) throw ValueError("[rfft] needs a non-empty dim, got " + v.shape().to_string());
    auto c = detail::table(v, n, m,
                           [n](int64_t t, int64_t k) { return std::cos(detail::angle(k, t, n)); });
    auto s = detail::table(v, n, m,
                           [n](int64_t t, int64_t k) { return -std::sin(detail::angle(k, t, n)); });
    return Complex<B, D>{detail::mm(v, c), detail::mm(v, s)};
  });
}

/// The real signal of n points (default 2 (bins - 1)) whose one-sided spectrum along `dim` is
/// {re, im}; the imaginary parts of the zero and Nyquist bins are ignored (torch.fft.irfft).
template <Backend B, int D>
Tensor<B, D> irfft(const Tensor<B, D>& re, const Tensor<B, D>& im, int64_t n = -1,
                   int64_t dim = -1) {
  if (re.shape() != im.shape())
    throw ShapeError("[irfft] real " + re.shape().to_string() + " and imaginary " +
                     im.shape().to_string() + " parts differ");
  dim = wrap_dim(dim, D, "irfft");
  const int64_t bins = re.dim(dim);
  if (n < 0) n = 2 * (bins - 1);
  if (n <= 0) throw ValueError("[irfft] needs a positive output length, got " + std::to_string(n));
  const int64_t used = std::min(bins, n / 2 + 1);  // bins past n / 2 do not contribute
  auto weight = [n](int64_t k) { return (k == 0 || (n % 2 == 0 && k == n / 2)) ? 1.0 : 2.0; };
  auto r = re.swap_dims(dim, D - 1).narrow(D - 1, 0, used);
  auto i = im.swap_dims(dim, D - 1).narrow(D - 1, 0, used);
  auto cr = detail::table(r, used, n, [&](int64_t k, int64_t t) {
    return weight(k) * std::cos(detail::angle(k, t, n)) / static_cast<double>(n);
  });
  auto ci = detail::table(r, used, n, [&](int64_t k, int64_t t) {
    const bool real_only = k == 0 || (n % 2 == 0 && k == n / 2);
    return real_only ? 0.0 : -weight(k) * std::sin(detail::angle(k, t, n)) / static_cast<double>(n);
  });
  auto out = detail::mm(r, cr) + detail::mm(i, ci);
  return out.swap_dims(dim, D - 1);
}

namespace detail {
/// The complex DFT of {re, im} along the last dim, with the exponent's sign and scale.
template <Backend B, int D>
Complex<B, D> dft(const Tensor<B, D>& re, const Tensor<B, D>& im, double sign, double scale) {
  const int64_t n = re.dim(D - 1);
  auto c = table(re, n, n, [&](int64_t t, int64_t k) { return scale * std::cos(angle(k, t, n)); });
  auto s = table(re, n, n,
                 [&](int64_t t, int64_t k) { return sign * scale * std::sin(angle(k, t, n)); });
  // (re + i im)(cos + i sign sin)
  return {mm(re, c) - mm(im, s), mm(im, c) + mm(re, s)};
}
}  // namespace detail

/// The complex DFT of {re, im} along `dim` (torch.fft.fft).
template <Backend B, int D>
Complex<B, D> fft(const Tensor<B, D>& re, const Tensor<B, D>& im, int64_t dim = -1) {
  if (re.shape() != im.shape())
    throw ShapeError("[fft] real " + re.shape().to_string() + " and imaginary " +
                     im.shape().to_string() + " parts differ");
  dim = wrap_dim(dim, D, "fft");
  auto r = detail::dft(re.swap_dims(dim, D - 1), im.swap_dims(dim, D - 1), -1.0, 1.0);
  return {r.first.swap_dims(dim, D - 1), r.second.swap_dims(dim, D - 1)};
}

/// The inverse complex DFT along `dim`, divided by n (torch.fft.ifft).
template <Backend B, int D>
Complex<B, D> ifft(const Tensor<B, D>& re, const Tensor<B, D>& im, int64_t dim = -1) {
  if (re.shape() != im.shape())
    throw ShapeError("[ifft] real " + re.shape().to_string() + " and imaginary " +
                     im.shape().to_string() + " parts differ");
  dim = wrap_dim(dim, D, "ifft");
  const double n = static_cast<double>(re.dim(dim));
  auto r = detail::dft(re.swap_dims(dim, D - 1), im.swap_dims(dim, D - 1), 1.0, 1.0 / n);
  return {r.first.swap_dims(dim, D - 1), r.second.swap_dims(dim, D - 1)};
}

/// The short-time Fourier transform of x [..., L] (D = 1 or 2) with frames of n_fft points
/// every `hop`, each multiplied by `window` [n_fft], as torch.stft(center=True,
/// pad_mode="reflect", onesided=True): {re, im} of [..., n_fft / 2 + 1, frames].
template <Backend B, int D>
Complex<B, D + 1> stft(const Tensor<B, D>& x, int64_t n_fft, int64_t hop,
                       const Tensor<B, 1>& window, bool center = true) {
  static_assert(D == 1 || D == 2, "stft takes [L] or [batch, L]");
  if (n_fft <= 0 || hop <= 0) throw ValueError("[stft] n_fft and hop must be positive");
  if (window.dim(0) != n_fft)
    throw ShapeError("[stft] the window has " + std::to_string(window.dim(0)) +
                     " points for n_fft " + std::to_string(n_fft));
  auto padded = center ? x.pad({n_fft / 2, n_fft / 2}, PadMode::Reflect) : x;
  auto frames = padded.template unfold<D + 1>(D - 1, n_fft, hop);  // [..., frames, n_fft]
  auto w = window.template unsqueeze<D + 1>();
  auto [re, im] = rfft(frames * w, D);  // [..., frames, bins]
  return {re.swap_dims(D - 1, D), im.swap_dims(D - 1, D)};
}

/// The inverse of stft (torch.istft with center = true): each frame's spectrum {re, im}
/// [..., n_fft / 2 + 1, frames] (D = 2 or 3) back to n_fft points, times `window`,
/// overlap-added every `hop` (a fold) and divided by the overlap-added squared window; the
/// centring padding is cut off again: [..., hop (frames - 1)].
template <Backend B, int D>
Tensor<B, D - 1> istft(const Tensor<B, D>& re, const Tensor<B, D>& im, int64_t n_fft, int64_t hop,
                       const Tensor<B, 1>& window) {
  static_assert(D == 2 || D == 3, "istft takes [bins, frames] or [batch, bins, frames]");
  if (re.dim(D - 2) != n_fft / 2 + 1)
    throw ShapeError("[istft] " + std::to_string(re.dim(D - 2)) + " bins for n_fft " +
                     std::to_string(n_fft) + " (needs n_fft / 2 + 1)");
  if (window.dim(0) != n_fft)
    throw ShapeError("[istft] the window has " + std::to_string(window.dim(0)) +
                     " points for n_fft " + std::to_string(n_fft));
  const int64_t frames = re.dim(D - 1), len = n_fft + hop * (frames - 1);
  auto w = window.template unsqueeze<D>();  // [1, ..., n_fft]
  auto t = irfft(re.swap_dims(D - 2, D - 1), im.swap_dims(D - 2, D - 1), n_fft) *
           w;                               // [..., frames, n_fft]
  auto cols = [&](const Tensor<B, D>& v) {  // [..., frames, n_fft] -> [N, n_fft, frames]
    if constexpr (D == 2)
      return v.transpose().template unsqueeze<3>();
    else
      return v.transpose();
  };
  UnfoldOptions o{{}, {}, {hop}};
  auto sum = ember::fold<3>(cols(t), {len}, {n_fft}, o);  // [N, 1, len]
  std::array<int64_t, D> s{};
  s.fill(1);
  s[D - 2] = frames;
  s[D - 1] = n_fft;
  auto w2 = (w * w).template expand<D>(s);
  auto env = ember::fold<3>(cols(w2), {len}, {n_fft}, o).narrow(0, 0, 1);  // [1, 1, len]
  auto y = (sum / env.clamp_min(1e-11)).narrow(2, n_fft / 2, len - 2 * (n_fft / 2));
  if constexpr (D == 2)
    return y.template reshape<1>({y.dim(2)});
  else
    return y.template reshape<2>({y.dim(0), y.dim(2)});
}

/// The frequency of each bin of an n-point DFT with sample spacing d: [0, 1, ..., -1] / (d n)
/// (torch.fft.fftfreq); rfftfreq gives the n / 2 + 1 non-negative ones.
template <Backend B>
Tensor<B, 1> fftfreq(int64_t n, double d = 1.0, Device dev = B::default_device(),
                     DType t = DType::F32) {
  std::vector<double> v(static_cast<size_t>(std::max<int64_t>(n, 0)));
  for (int64_t k = 0; k < n; ++k)
    v[static_cast<size_t>(k)] = static_cast<double>(k < (n + 1) / 2 ? k : k - n) / (d * double(n));
  return Tensor<B, 1>::template from_values<double>(v, Shape{n}, dev).cast(t);
}
template <Backend B>
Tensor<B, 1> rfftfreq(int64_t n, double d = 1.0, Device dev = B::default_device(),
                      DType t = DType::F32) {
  const int64_t m = n / 2 + 1;
  std::vector<double> v(static_cast<size_t>(m));
  for (int64_t k = 0; k < m; ++k)
    v[static_cast<size_t>(k)] = static_cast<double>(k) / (d * double(n));
  return Tensor<B, 1>::template from_values<double>(v, Shape{m}, dev).cast(t);
}

/// The zero-frequency bin moved to the centre of `dim` (torch.fft.fftshift), and back.
template <Backend B, int D, TensorKind K>
Tensor<B, D, K> fftshift(const Tensor<B, D, K>& x, int64_t dim = -1) {
  dim = wrap_dim(dim, D, "fftshift");
  return x.roll_dim(x.dim(dim) / 2, dim);
}
template <Backend B, int D, TensorKind K>
Tensor<B, D, K> ifftshift(const Tensor<B, D, K>& x, int64_t dim = -1) {
  dim = wrap_dim(dim, D, "ifftshift");
  return x.roll_dim(-(x.dim(dim) / 2), dim);
}

}  // namespace ember::fft
