// Image augmentations for training, on HWC bytes (`Image`) or on float tensors [C, H, W]
// (normalize also takes batches [N, C, H, W]). The random ones draw from an `Rng`, so with
// `augment(dataset, seed, f)` every item gets the same randomness in every run and new
// randomness each epoch.
//
//   auto train = augment(folder, 42, [](ImageItem it, Rng& r) {
//     it.image = random_hflip(random_crop(it.image, 32, 32, 4, r), r);
//     return it;
//   });
//   auto x = normalize(to_chw<Cpu>(img), {0.5f, 0.5f, 0.5f}, {0.25f, 0.25f, 0.25f});
#pragma once
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"
#include "ember/data/image.h"
#include "ember/tensor/tensor.h"

namespace ember::data {

// ---- HWC bytes --------------------------------------------------------------------------

/// Mirrors left-right.
EMBER_API Image hflip(const Image& im);
/// Adds `padding` pixels of `fill` on every side.
EMBER_API Image pad(const Image& im, int padding, uint8_t fill = 0);
/// The height x width window at (top, left); throws IndexError if it leaves the image.
EMBER_API Image crop(const Image& im, int top, int left, int height, int width);
/// Pads by `padding` (zeros), then crops a height x width window at a random place.
EMBER_API Image random_crop(const Image& im, int height, int width, int padding, Rng& rng);
/// Mirrors with probability p.
EMBER_API Image random_hflip(const Image& im, Rng& rng, double p = 0.5);
/// Channel-major floats [C, H, W]: pixel * scale.
EMBER_API std::vector<float> to_chw_floats(const Image& im, float scale = 1.0f / 255.0f);

/// The image as a float tensor [C, H, W] in [0, 1].
template <Backend B>
Tensor<B, 3> to_chw(const Image& im, Device dev = B::default_device()) {
  return Tensor<B, 3>::from_values(to_chw_floats(im), {im.channels, im.height, im.width}, dev);
}

// ---- float tensors [C, H, W] ----------------------------------------------------------------

template <Backend B>
Tensor<B, 3> hflip(const Tensor<B, 3>& x) {
  return x.flip({2});
}
template <Backend B>
Tensor<B, 3> random_hflip(const Tensor<B, 3>& x, Rng& rng, double p = 0.5) {
  return rng.bernoulli(p) ? hflip(x) : x;
}
/// Pads H and W by `padding` zeros, then takes a height x width window at a random place.
template <Backend B>
Tensor<B, 3> random_crop(const Tensor<B, 3>& x, int64_t height, int64_t width, int64_t padding,
                         Rng& rng) {
  int64_t h = x.dim(1) + 2 * padding, w = x.dim(2) + 2 * padding;
  if (padding < 0 || height <= 0 || width <= 0 || height > h || width > w)
    throw ValueError("[random_crop] a " + std::to_string(height) + "x" + std::to_string(width) +
                     " crop of " + x.shape().to_string() + " padded by " + std::to_string(padding));
  int64_t top = rng.between(0, h - height), left = rng.between(0, w - width);
  Tensor<B, 3> p = padding > 0 ? x.pad({padding, padding, padding, padding}) : x;
  return p.narrow(1, top, height).narrow(2, left, width);
}
/// (x - mean[c]) / std[c] per channel, for [C, H, W] or [N, C, H, W].
template <Backend B, int D>
requires(D == 3 || D == 4) Tensor<B, D> normalize(const Tensor<B, D>& x,
                                                  const std::vector<float>& mean,
                                                  const std::vector<float>& std) {
  int64_t c = x.dim(D - 3);
  if (static_cast<int64_t>(mean.size()) != c || static_cast<int64_t>(std.size()) != c)
    throw ValueError("[normalize] " + std::to_string(mean.size()) + " means and " +
                     std::to_string(std.size()) + " stds for " + std::to_string(c) +
                     " channels of " + x.shape().to_string());
  for (float s : std)
    if (!(s > 0)) throw ValueError("[normalize] std must be positive, got " + std::to_string(s));
  Dims s(static_cast<size_t>(D), 1);
  s[D - 3] = c;
  auto m = Tensor<B, D>::from_values(mean, Shape(s), x.device()).cast(x.dtype());
  auto d = Tensor<B, D>::from_values(std, Shape(s), x.device()).cast(x.dtype());
  return (x - m) / d;
}

}  // namespace ember::data
