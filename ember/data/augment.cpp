#include "ember/data/augment.h"

#include <cstring>

namespace ember::data {

Image hflip(const Image& im) {
  Image out = im;
  size_t c = static_cast<size_t>(im.channels);
  for (int y = 0; y < im.height; ++y)
    for (int x = 0; x < im.width; ++x)
      std::memcpy(out.pixel(y, x), im.pixel(y, im.width - 1 - x), c);
  return out;
}

Image pad(const Image& im, int padding, uint8_t fill) {
  if (padding < 0) throw ValueError("[pad] negative padding " + std::to_string(padding));
  Image out(im.width + 2 * padding, im.height + 2 * padding, im.channels);
  std::fill(out.pixels.begin(), out.pixels.end(), fill);
  size_t row = static_cast<size_t>(im.width) * im.channels;
  for (int y = 0; y < im.height; ++y)
    if (row) std::memcpy(out.pixel(y + padding, padding), im.pixel(y, 0), row);
  return out;
}

Image crop(const Image& im, int top, int left, int height, int width) {
  if (top < 0 || left < 0 || height < 0 || width < 0 || top + height > im.height ||
      left + width > im.width)
    throw IndexError("[crop] window " + std::to_string(height) + "x" + std::to_string(width) +
                     " at (" + std::to_string(top) + ", " + std::to_string(left) + ") leaves a " +
                     std::to_string(im.height) + "x" + std::to_string(im.width) + " image");
  Image out(width, height, im.channels);
  size_t row = static_cast<size_t>(width) * im.channels;
  for (int y = 0; y < height; ++y)
    if (row) std::memcpy(out.pixel(y, 0), im.pixel(top + y, left), row);
  return out;
}

Image random_crop(const Image& im, int height, int width, int padding, Rng& rng) {
  int h = im.height + 2 * padding, w = im.width + 2 * padding;
  if (padding < 0 || height <= 0 || width <= 0 || height > h || width > w)
    throw ValueError("[random_crop] a " + std::to_string(height) + "x" + std::to_string(width) +
                     " crop of a " + std::to_string(im.height) + "x" + std::to_string(im.width) +
                     " image padded by " + std::to_string(padding));
  int top = static_cast<int>(rng.between(0, h - height));
  int left = static_cast<int>(rng.between(0, w - width));
  return crop(padding > 0 ? pad(im, padding) : im, top, left, height, width);
}

Image random_hflip(const Image& im, Rng& rng, double p) {
  return rng.bernoulli(p) ? hflip(im) : im;
}

std::vector<float> to_chw_floats(const Image& im, float scale) {
  size_t hw = static_cast<size_t>(im.width) * im.height, c = static_cast<size_t>(im.channels);
  std::vector<float> out(hw * c);
  for (size_t p = 0; p < hw; ++p)
    for (size_t k = 0; k < c; ++k)
      out[k * hw + p] = static_cast<float>(im.pixels[p * c + k]) * scale;
  return out;
}

}  // namespace ember::data
