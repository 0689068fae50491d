// Images as bytes (height x width x channels, row-major, 8 bits per channel), PNG/JPEG/BMP/
// GIF/TGA/PNM decoding and PNG encoding, and a dataset over a folder of class subfolders.
//
//   // root/cat/1.png, root/cat/2.jpg, root/dog/a.png  ->  classes {"cat", "dog"}
//   ember::data::ImageFolderDataset d("root");
//   auto [image, label] = d.get(2);     // image.width, image.height, image.channels, label 1
//   ember::data::write_png("copy.png", image);
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"

namespace ember::data {

/// An 8-bit image, HWC: pixel (y, x) channel c is pixels[(y * width + x) * channels + c].
struct EMBER_API Image {
  int width = 0, height = 0, channels = 0;
  std::vector<uint8_t> pixels;

  Image() = default;
  /// A zero-filled image; throws ValueError on a negative size or channels outside 1..4.
  Image(int width, int height, int channels);
  uint8_t& at(int y, int x, int c) {
    return pixels[(static_cast<size_t>(y) * width + x) * channels + c];
  }
  uint8_t at(int y, int x, int c) const {
    return pixels[(static_cast<size_t>(y) * width + x) * channels + c];
  }
  /// The first channel of pixel (y, x).
  uint8_t* pixel(int y, int x) {
    return pixels.data() + (static_cast<size_t>(y) * width + x) * channels;
  }
  const uint8_t* pixel(int y, int x) const {
    return pixels.data() + (static_cast<size_t>(y) * width + x) * channels;
  }
  friend bool operator==(const Image&, const Image&) = default;
};

/// Decodes an image file's bytes. `channels` 0 keeps the file's channels; 1..4 converts (1:
/// gray, 2: gray+alpha, 3: RGB, 4: RGBA). Undecodable data throws ValueError naming `source`.
EMBER_API Image decode_image(std::span<const uint8_t> bytes, int channels = 0,
                             std::string_view source = "<memory>");
EMBER_API Image load_image(const std::filesystem::path& path, int channels = 0);
/// PNG bytes of the image (lossless).
EMBER_API std::vector<uint8_t> encode_png(const Image& image);
/// Writes a PNG file atomically (temporary file, then rename).
EMBER_API void write_png(const std::filesystem::path& path, const Image& image);

struct ImageItem {
  Image image;
  int64_t label = 0;
};

struct ImageFolderOptions {
  /// File extensions taken as images (compared case-insensitively); other files are skipped.
  std::vector<std::string> extensions = {".png", ".jpg", ".jpeg", ".bmp",
                                         ".gif", ".tga", ".pgm",  ".ppm"};
  /// 0: as stored; 1..4: converted on load (see decode_image).
  int channels = 0;
};

/// A folder of class subfolders: labels are the subfolder names in sorted order (0, 1, ...),
/// items are the image files under each (subfolders included), sorted by path. The folder is
/// listed once at construction; images are decoded on every get().
class EMBER_API ImageFolderDataset {
 public:
  using Item = ImageItem;
  explicit ImageFolderDataset(const std::filesystem::path& root, ImageFolderOptions opt = {});
  ImageItem get(size_t i) const;
  size_t len() const { return files_->size(); }
  const std::vector<std::string>& classes() const { return *classes_; }
  const std::filesystem::path& path(size_t i) const;
  int64_t label(size_t i) const;

 private:
  struct Entry {
    std::filesystem::path path;
    int64_t label;
  };
  std::shared_ptr<const std::vector<Entry>> files_;
  std::shared_ptr<const std::vector<std::string>> classes_;
  int channels_ = 0;
};

}  // namespace ember::data
