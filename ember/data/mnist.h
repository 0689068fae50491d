// MNIST and Fashion-MNIST: IDX files of 28x28 gray images and their labels, gzip-compressed
// or not. By default from Debian's dataset-fashion-mnist (/usr/share/datasets/fashion-mnist);
// EMBER_MNIST_DIR or a directory argument points elsewhere (e.g. at the original MNIST).
//
//   ember::data::MnistDataset train(ember::data::Split::Train);   // 60000 items
//   ember::data::MnistDataset test(ember::data::Split::Test);     // 10000 items
//   auto it = train.get(0);   // it.image: 784 bytes, row-major; it.label: 0..9
//
// The files are checked when opened: magic numbers, dims (N x 28 x 28 images, N labels, the
// same N), the data size against the header, and label values; anything wrong is a
// ValueError that names the file.
#pragma once
#include <array>
#include <cstdint>
#include <filesystem>
#include <memory>
#include <span>
#include <string_view>
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"

namespace ember::data {

/// An IDX array (the MNIST file format): element type code, dims and the element bytes as
/// stored (big-endian for multi-byte types).
struct IdxArray {
  uint8_t type = 0x08;  // 0x08 u8, 0x09 i8, 0x0B i16, 0x0C i32, 0x0D f32, 0x0E f64
  std::vector<uint32_t> dims;
  std::vector<uint8_t> data;
};
/// Parses and validates IDX bytes (already decompressed); errors name `source`.
EMBER_API IdxArray parse_idx(std::span<const uint8_t> bytes, std::string_view source = "<memory>");
/// Reads an IDX file, gzip-compressed or not.
EMBER_API IdxArray read_idx(const std::filesystem::path& path);
/// The file bytes of an IDX array (for writing test fixtures).
EMBER_API std::vector<uint8_t> encode_idx(const IdxArray& a);

enum class Split { Train, Test };

struct MnistItem {
  static constexpr int kRows = 28, kCols = 28, kPixels = kRows * kCols;
  std::array<uint8_t, kPixels> image;  // row-major, 0 (background) .. 255
  uint8_t label = 0;                   // 0..9
};

class EMBER_API MnistDataset {
 public:
  using Item = MnistItem;
  /// Fashion-MNIST (mean and std of the training pixels scaled to [0, 1]).
  static constexpr float kFashionMean = 0.2860f, kFashionStd = 0.3530f;
  /// The original MNIST.
  static constexpr float kMnistMean = 0.1307f, kMnistStd = 0.3081f;

  /// The split from `dir`, which holds {train,t10k}-{images-idx3,labels-idx1}-ubyte, each
  /// optionally with .gz (the names with '.' before idx are accepted too).
  explicit MnistDataset(Split split, const std::filesystem::path& dir = default_dir());
  /// From an images file and a labels file.
  static MnistDataset from_files(const std::filesystem::path& images,
                                 const std::filesystem::path& labels);
  /// $EMBER_MNIST_DIR if set, else /usr/share/datasets/fashion-mnist.
  static std::filesystem::path default_dir();
  /// True if both files of the split exist in `dir`.
  static bool available(Split split, const std::filesystem::path& dir = default_dir());

  MnistItem get(size_t i) const;
  size_t len() const { return data_->labels.size(); }
  /// The 784 pixels of item i, without copying.
  std::span<const uint8_t, MnistItem::kPixels> pixels(size_t i) const;
  uint8_t label(size_t i) const;

 private:
  struct Data {
    std::vector<uint8_t> images, labels;
  };
  MnistDataset() = default;
  std::shared_ptr<const Data> data_;
};

}  // namespace ember::data
