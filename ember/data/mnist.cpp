#include "ember/data/mnist.h"

#include <cstdio>
#include <cstdlib>
#include <cstring>

#include "ember/data/io.h"

namespace ember::data {

namespace {

size_t element_size(uint8_t type) {
  switch (type) {
    case 0x08:
    case 0x09:
      return 1;
    case 0x0B:
      return 2;
    case 0x0C:
    case 0x0D:
      return 4;
    case 0x0E:
      return 8;
    default:
      return 0;
  }
}

std::string hex32(uint32_t v) {
  char buf[16];
  std::snprintf(buf, sizeof(buf), "0x%08x", v);
  return buf;
}

uint32_t be32(const uint8_t* p) {
  return (uint32_t{p[0]} << 24) | (uint32_t{p[1]} << 16) | (uint32_t{p[2]} << 8) | uint32_t{p[3]};
}

std::string dims_string(const std::vector<uint32_t>& d) {
  std::string s = "[";
  for (size_t i = 0; i < d.size(); ++i) s += (i ? ", " : "") + std::to_string(d[i]);
  return s + "]";
}

}  // namespace

IdxArray parse_idx(std::span<const uint8_t> bytes, std::string_view source) {
  std::string where = "[idx] " + std::string(source) + ": ";
  if (bytes.size() < 4)
    throw ValueError(where + "truncated: " + std::to_string(bytes.size()) +
                     " bytes is too short for an IDX header");
  uint32_t magic = be32(bytes.data());
  IdxArray a;
  a.type = bytes[2];
  size_t rank = bytes[3];
  size_t esize = element_size(a.type);
  if (bytes[0] != 0 || bytes[1] != 0 || esize == 0 || rank == 0)
    throw ValueError(where + "bad magic number " + hex32(magic) +
                     " (an IDX file starts with 0x0000, a type code and a dim count)");
  size_t header = 4 + 4 * rank;
  if (bytes.size() < header)
    throw ValueError(where + "truncated: the header of " + std::to_string(rank) + " dims needs " +
                     std::to_string(header) + " bytes, the file has " +
                     std::to_string(bytes.size()));
  size_t numel = 1;
  for (size_t k = 0; k < rank; ++k) {
    uint32_t d = be32(bytes.data() + 4 + 4 * k);
    a.dims.push_back(d);
    if (d != 0 && numel > SIZE_MAX / esize / d)
      throw ValueError(where + "dims " + dims_string(a.dims) + " are too large");
    numel *= d;
  }
  size_t want = numel * esize, have = bytes.size() - header;
  if (have < want)
    throw ValueError(where + "truncated: dims " + dims_string(a.dims) + " need " +
                     std::to_string(want) + " bytes of data, the file has " + std::to_string(have));
  if (have > want)
    throw ValueError(where + std::to_string(have - want) + " bytes after the data of dims " +
                     dims_string(a.dims));
  a.data.assign(bytes.begin() + static_cast<std::ptrdiff_t>(header), bytes.end());
  return a;
}

IdxArray read_idx(const std::filesystem::path& path) {
  return parse_idx(read_maybe_gzip(path, "idx"), path.string());
}

std::vector<uint8_t> encode_idx(const IdxArray& a) {
  if (a.dims.empty() || a.dims.size() > 255 || element_size(a.type) == 0)
    throw ValueError("[idx] cannot encode type " + std::to_string(a.type) + " with " +
                     std::to_string(a.dims.size()) + " dims");
  std::vector<uint8_t> out = {0, 0, a.type, static_cast<uint8_t>(a.dims.size())};
  for (uint32_t d : a.dims)
    for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(d >> s));
  out.insert(out.end(), a.data.begin(), a.data.end());
  return out;
}

// ---- MNIST --------------------------------------------------------------------------------

namespace {

/// The first existing file among the accepted names of `kind` ("images" or "labels").
std::filesystem::path find_file(const std::filesystem::path& dir, Split split,
                                std::string_view kind, bool must) {
  std::string prefix = split == Split::Train ? "train" : "t10k";
  std::string idx = kind == "images" ? "idx3" : "idx1";
  std::vector<std::string> names;
  for (const char* sep : {"-", "."})
    for (const char* gz : {".gz", ""})
      names.push_back(prefix + "-" + std::string(kind) + sep + idx + "-ubyte" + gz);
  for (const auto& n : names)
    if (std::filesystem::exists(dir / n)) return dir / n;
  if (!must) return {};
  throw ValueError("[mnist] no " + prefix + " " + std::string(kind) + " file in " + dir.string() +
                   " (looked for " + names[0] + " and " + names[1] +
                   "; Debian's dataset-fashion-mnist package installs them in "
                   "/usr/share/datasets/fashion-mnist)");
}

std::string magic_of(const IdxArray& a) {
  return hex32((uint32_t{a.type} << 8) | static_cast<uint32_t>(a.dims.size()));
}

}  // namespace

std::filesystem::path MnistDataset::default_dir() {
  if (const char* e = std::getenv("EMBER_MNIST_DIR"); e && *e) return e;
  return "/usr/share/datasets/fashion-mnist";
}

bool MnistDataset::available(Split split, const std::filesystem::path& dir) {
  return !find_file(dir, split, "images", false).empty() &&
         !find_file(dir, split, "labels", false).empty();
}

MnistDataset::MnistDataset(Split split, const std::filesystem::path& dir) {
  std::filesystem::path images = find_file(dir, split, "images", true);
  std::filesystem::path labels = find_file(dir, split, "labels", true);
  *this = from_files(images, labels);
}

MnistDataset MnistDataset::from_files(const std::filesystem::path& images,
                                      const std::filesystem::path& labels) {
  IdxArray im = read_idx(images);
  IdxArray lb = read_idx(labels);
  constexpr int R = MnistItem::kRows, C = MnistItem::kCols;
  if (im.type != 0x08 || im.dims.size() != 3 || im.dims[1] != R || im.dims[2] != C)
    throw ValueError("[mnist] " + images.string() + ": expected u8 images of dims [N, 28, 28] " +
                     "(magic 0x00000803), got magic " + magic_of(im) + " dims " +
                     dims_string(im.dims));
  if (lb.type != 0x08 || lb.dims.size() != 1)
    throw ValueError("[mnist] " + labels.string() + ": expected u8 labels of dims [N] " +
                     "(magic 0x00000801), got magic " + magic_of(lb) + " dims " +
                     dims_string(lb.dims));
  if (im.dims[0] != lb.dims[0])
    throw ValueError("[mnist] " + std::to_string(im.dims[0]) + " images in " + images.string() +
                     " but " + std::to_string(lb.dims[0]) + " labels in " + labels.string());
  for (size_t i = 0; i < lb.data.size(); ++i)
    if (lb.data[i] > 9)
      throw ValueError("[mnist] " + labels.string() + ": label " + std::to_string(lb.data[i]) +
                       " of item " + std::to_string(i) + " is not in 0..9");
  MnistDataset d;
  auto data = std::make_shared<Data>();
  data->images = std::move(im.data);
  data->labels = std::move(lb.data);
  d.data_ = std::move(data);
  return d;
}

MnistItem MnistDataset::get(size_t i) const {
  check_index(i, len(), "mnist");
  MnistItem it;
  std::memcpy(it.image.data(), data_->images.data() + i * MnistItem::kPixels, MnistItem::kPixels);
  it.label = data_->labels[i];
  return it;
}

std::span<const uint8_t, MnistItem::kPixels> MnistDataset::pixels(size_t i) const {
  check_index(i, len(), "mnist");
  return std::span<const uint8_t, MnistItem::kPixels>(data_->images.data() + i * MnistItem::kPixels,
                                                      MnistItem::kPixels);
}

uint8_t MnistDataset::label(size_t i) const {
  check_index(i, len(), "mnist");
  return data_->labels[i];
}

}  // namespace ember::data
