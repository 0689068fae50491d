#include "ember/train/checkpoint.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <fstream>
#include <span>
#include <sstream>

#include "ember/core/error.h"
#include "ember/record/safetensors.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "epoch-";
constexpr const char* kTmpPrefix = ".partial-";

void fsync_path(const fs::path& p) {
  int fd = ::open(p.c_str(), O_RDONLY);
  if (fd < 0) return;
  ::fsync(fd);
  ::close(fd);
}
}  // namespace

CheckpointDir::CheckpointDir(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) throw ValueError("[checkpoint] cannot create " + root_.string() + ": " + ec.message());
}

fs::path CheckpointDir::path(int64_t id) const { return root_ / (kPrefix + std::to_string(id)); }

fs::path CheckpointDir::begin_write(int64_t id) const {
  fs::path tmp = root_ / (kTmpPrefix + std::to_string(id) + "-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp);
  return tmp;
}

fs::path CheckpointDir::commit(int64_t id) const {
  fs::path tmp = root_ / (kTmpPrefix + std::to_string(id) + "-" + std::to_string(::getpid()));
  for (const auto& e : fs::directory_iterator(tmp)) fsync_path(e.path());
  fsync_path(tmp);
  fs::path dst = path(id);
  if (fs::exists(dst)) {  // replace: move the old one aside first, then drop it
    fs::path old = root_ / (kTmpPrefix + std::to_string(id) + "-old");
    fs::remove_all(old);
    fs::rename(dst, old);
    fs::rename(tmp, dst);
    fs::remove_all(old);
  } else {
    fs::rename(tmp, dst);
  }
  fsync_path(root_);
  return dst;
}

std::vector<int64_t> CheckpointDir::list() const {
  std::vector<int64_t> ids;
  if (!fs::exists(root_)) return ids;
  for (const auto& e : fs::directory_iterator(root_)) {
    std::string n = e.path().filename().string();
    if (!e.is_directory() || !n.starts_with(kPrefix)) continue;
    try {
      size_t used = 0;
      int64_t id = std::stoll(n.substr(std::char_traits<char>::length(kPrefix)), &used);
      if (used + std::char_traits<char>::length(kPrefix) == n.size()) ids.push_back(id);
    } catch (const std::exception&) {
    }
  }
  std::sort(ids.begin(), ids.end());
  return ids;
}

std::optional<int64_t> CheckpointDir::latest() const {
  auto ids = list();
  if (ids.empty()) return std::nullopt;
  return ids.back();
}

void CheckpointDir::keep_last(int64_t n, std::optional<int64_t> keep) const {
  auto ids = list();
  for (size_t i = 0; i + static_cast<size_t>(std::max<int64_t>(n, 0)) < ids.size(); ++i)
    if (!keep || ids[i] != *keep) fs::remove_all(path(ids[i]));
}

void CheckpointDir::clean_partial() const {
  for (const auto& e : fs::directory_iterator(root_))
    if (e.path().filename().string().starts_with(kTmpPrefix)) fs::remove_all(e.path());
}

void write_text_atomic(const fs::path& path, const std::string& text) {
  record::write_file_atomic(
      path,
      std::span<const std::byte>(reinterpret_cast<const std::byte*>(text.data()), text.size()));
}

std::string read_text(const fs::path& path) {
  std::ifstream f(path);
  if (!f) throw ValueError("[checkpoint] cannot read " + path.string());
  std::stringstream ss;
  ss << f.rdbuf();
  return ss.str();
}

}  // namespace ember::train
