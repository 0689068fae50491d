// PixelShuffle and PixelUnshuffle: trade channels for spatial resolution, like PyTorch.
//
//   nn::PixelShuffle{2}.forward(x);     // [N, C·4, H, W] -> [N, C, 2H, 2W]
//   nn::PixelUnshuffle{2}.forward(y);   // and back
#pragma once
#include "ember/nn/module.h"

namespace ember::nn {

struct PixelShuffle {
  int64_t upscale_factor = 1;
  EMBER_MODULE(PixelShuffle, upscale_factor)

  template <Backend B>
  Tensor<B, 4> forward(const Tensor<B, 4>& x) const {
    const int64_t r = upscale_factor, n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (r <= 0 || c % (r * r) != 0)
      throw ShapeError("[pixel_shuffle] channels of " + x.shape().to_string() +
                       " not divisible by " + std::to_string(r) + "^2");
    const int64_t oc = c / (r * r);
    return x.template reshape<6>({n, oc, r, r, h, w})
        .permute({0, 1, 4, 2, 5, 3})
        .template reshape<4>({n, oc, h * r, w * r});
  }
};

struct PixelUnshuffle {
  int64_t downscale_factor = 1;
  EMBER_MODULE(PixelUnshuffle, downscale_factor)

  template <Backend B>
  Tensor<B, 4> forward(const Tensor<B, 4>& x) const {
    const int64_t r = downscale_factor, n = x.dim(0), c = x.dim(1), h = x.dim(2), w = x.dim(3);
    if (r <= 0 || h % r != 0 || w % r != 0)
      throw ShapeError("[pixel_unshuffle] spatial size of " + x.shape().to_string() +
                       " not divisible by " + std::to_string(r));
    return x.template reshape<6>({n, c, h / r, r, w / r, r})
        .permute({0, 1, 3, 5, 2, 4})
        .template reshape<4>({n, c * r * r, h / r, w / r});
  }
};

}  // namespace ember::nn
