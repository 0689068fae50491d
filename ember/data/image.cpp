#include "ember/data/image.h"

#include <algorithm>
#include <cctype>
#include <climits>
#include <cstring>

#include "ember/data/io.h"

// stb_image (decoding) and stb_image_write (PNG encoding) are compiled here, with internal
// linkage, so they cannot clash with another copy in the program.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#pragma GCC diagnostic ignored "-Wimplicit-fallthrough"
#pragma GCC diagnostic ignored "-Wdouble-promotion"
#pragma GCC diagnostic ignored "-Wcast-qual"
#define STB_IMAGE_STATIC
#define STB_IMAGE_IMPLEMENTATION
#define STBI_NO_STDIO
#define STBI_FAILURE_USERMSG
#include <stb/stb_image.h>
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#define STBI_WRITE_NO_STDIO
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

namespace ember::data {

Image::Image(int w, int h, int c) : width(w), height(h), channels(c) {
  if (w < 0 || h < 0 || c < 1 || c > 4)
    throw ValueError("[image] bad size " + std::to_string(w) + "x" + std::to_string(h) + "x" +
                     std::to_string(c));
  pixels.assign(static_cast<size_t>(w) * h * c, 0);
}

Image decode_image(std::span<const uint8_t> bytes, int channels, std::string_view source) {
  if (channels < 0 || channels > 4)
    throw ValueError("[image] channels must be 0..4, got " + std::to_string(channels));
  if (bytes.size() > static_cast<size_t>(INT_MAX))
    throw ValueError("[image] " + std::string(source) + ": file too large");
  int w = 0, h = 0, c = 0;
  stbi_uc* p =
      stbi_load_from_memory(bytes.data(), static_cast<int>(bytes.size()), &w, &h, &c, channels);
  if (!p)
    throw ValueError("[image] cannot decode " + std::string(source) + ": " +
                     (stbi_failure_reason() ? stbi_failure_reason() : "unknown error"));
  Image im;
  im.width = w;
  im.height = h;
  im.channels = channels == 0 ? c : channels;
  size_t n = static_cast<size_t>(w) * h * im.channels;
  im.pixels.assign(p, p + n);
  stbi_image_free(p);
  return im;
}

Image load_image(const std::filesystem::path& path, int channels) {
  return decode_image(read_file(path, "image"), channels, path.string());
}

std::vector<uint8_t> encode_png(const Image& im) {
  if (im.width <= 0 || im.height <= 0 || im.channels < 1 || im.channels > 4 ||
      im.pixels.size() != static_cast<size_t>(im.width) * im.height * im.channels)
    throw ValueError("[image] cannot encode a " + std::to_string(im.width) + "x" +
                     std::to_string(im.height) + "x" + std::to_string(im.channels) +
                     " image with " + std::to_string(im.pixels.size()) + " bytes");
  std::vector<uint8_t> out;
  auto sink = [](void* ctx, void* data, int size) {
    auto* o = static_cast<std::vector<uint8_t>*>(ctx);
    const uint8_t* d = static_cast<const uint8_t*>(data);
    o->insert(o->end(), d, d + size);
  };
  if (!stbi_write_png_to_func(sink, &out, im.width, im.height, im.channels, im.pixels.data(),
                              im.width * im.channels))
    throw ValueError("[image] PNG encoding failed");
  return out;
}

void write_png(const std::filesystem::path& path, const Image& image) {
  write_file_atomic(path, encode_png(image), "image");
}

// ---- image folder -----------------------------------------------------------------------

namespace {
std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}
}  // namespace

ImageFolderDataset::ImageFolderDataset(const std::filesystem::path& root, ImageFolderOptions opt)
    : channels_(opt.channels) {
  namespace fs = std::filesystem;
  if (opt.channels < 0 || opt.channels > 4)
    throw ValueError("[image_folder] channels must be 0..4, got " + std::to_string(opt.channels));
  std::error_code ec;
  if (!fs::is_directory(root, ec))
    throw ValueError("[image_folder] " + root.string() + " is not a directory");
  std::vector<std::string> exts;
  for (const auto& e : opt.extensions) exts.push_back(lower(e));

  std::vector<std::string> classes;
  for (const auto& e : fs::directory_iterator(root))
    if (e.is_directory()) classes.push_back(e.path().filename().string());
  std::sort(classes.begin(), classes.end());
  if (classes.empty())
    throw ValueError("[image_folder] " + root.string() + " has no class subfolders");

  std::vector<Entry> files;
  for (size_t k = 0; k < classes.size(); ++k) {
    std::vector<fs::path> found;
    for (const auto& e : fs::recursive_directory_iterator(
             root / classes[k], fs::directory_options::follow_directory_symlink)) {
      if (!e.is_regular_file()) continue;
      std::string ext = lower(e.path().extension().string());
      if (std::find(exts.begin(), exts.end(), ext) != exts.end()) found.push_back(e.path());
    }
    std::sort(found.begin(), found.end());
    for (auto& p : found) files.push_back({std::move(p), static_cast<int64_t>(k)});
  }
  files_ = std::make_shared<const std::vector<Entry>>(std::move(files));
  classes_ = std::make_shared<const std::vector<std::string>>(std::move(classes));
}

ImageItem ImageFolderDataset::get(size_t i) const {
  check_index(i, files_->size(), "image_folder");
  const Entry& e = (*files_)[i];
  return {load_image(e.path, channels_), e.label};
}

const std::filesystem::path& ImageFolderDataset::path(size_t i) const {
  check_index(i, files_->size(), "image_folder");
  return (*files_)[i].path;
}

int64_t ImageFolderDataset::label(size_t i) const {
  check_index(i, files_->size(), "image_folder");
  return (*files_)[i].label;
}

}  // namespace ember::data
