#include "ember/train/checkpoint.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <fstream>
#include <span>
#include <sstream>

#include "ember/core/error.h"
#include "ember/core/parse.h"
#include "ember/record/safetensors.h"

namespace ember::train {

namespace fs = std::filesystem;

namespace {
constexpr const char* kPrefix = "epoch-";
constexpr const char* kTmpPrefix = ".partial-";

[[noreturn]] void fail(const std::string& what, const fs::path& p, const std::string& reason) {
  throw ValueError("[checkpoint] " + what + " " + p.string() + ": " + reason);
}

/// Flushes a file or a folder to the disk; EINVAL (a file system or special file without
/// syncing) is not an error, anything else is.
void fsync_path(const fs::path& p) {
  const int fd = ::open(p.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail("cannot open", p, std::strerror(errno));
  const int rc = ::fsync(fd);
  const int err = errno;
  ::close(fd);
  if (rc != 0 && err != EINVAL) fail("cannot flush", p, std::strerror(err));
}

void rename_or_fail(const fs::path& from, const fs::path& to) {
  if (::rename(from.c_str(), to.c_str()) != 0)
    fail("cannot rename " + from.string() + " to", to, std::strerror(errno));
}

void remove_or_fail(const fs::path& p) {
  std::error_code ec;
  fs::remove_all(p, ec);
  if (ec) fail("cannot remove", p, ec.message());
}
}  // namespace

CheckpointDir::CheckpointDir(fs::path root) : root_(std::move(root)) {
  std::error_code ec;
  fs::create_directories(root_, ec);
  if (ec) fail("cannot create", root_, ec.message());
}

fs::path CheckpointDir::path(int64_t id) const { return root_ / (kPrefix + std::to_string(id)); }

fs::path CheckpointDir::begin_write(int64_t id) const {
  fs::path tmp = root_ / (kTmpPrefix + std::to_string(id) + "-" + std::to_string(::getpid()));
  remove_or_fail(tmp);
  std::error_code ec;
  fs::create_directories(tmp, ec);
  if (ec) fail("cannot create", tmp, ec.message());
  return tmp;
}

fs::path CheckpointDir::commit(int64_t id) const {
  fs::path tmp = root_ / (kTmpPrefix + std::to_string(id) + "-" + std::to_string(::getpid()));
  std::error_code ec;
  for (fs::directory_iterator it(tmp, ec), end; !ec && it != end; it.increment(ec))
    fsync_path(it->path());
  if (ec) fail("cannot list", tmp, ec.message());
  fsync_path(tmp);
  fs::path dst = path(id);
  if (fs::exists(dst)) {  // replace: move the old one aside first, then drop it
    fs::path old = root_ / (kTmpPrefix + std::to_string(id) + "-old");
    remove_or_fail(old);
    rename_or_fail(dst, old);
    try {
      rename_or_fail(tmp, dst);
    } catch (const Error&) {
      ::rename(old.c_str(), dst.c_str());  // the old checkpoint stays what it was
      throw;
    }
    remove_or_fail(old);
  } else {
    rename_or_fail(tmp, dst);
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
    if (auto id = to_int(std::string_view(n).substr(std::char_traits<char>::length(kPrefix))))
      ids.push_back(*id);
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
    if (!keep || ids[i] != *keep) remove_or_fail(path(ids[i]));
}

void CheckpointDir::clean_partial() const {
  for (const auto& e : fs::directory_iterator(root_))
    if (e.path().filename().string().starts_with(kTmpPrefix)) remove_or_fail(e.path());
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

namespace {
/// "[what] " (appends: GCC 12 misreads "literal" + std::string at -O3 as an overlapping copy).
std::string tag_of(std::string_view what) {
  std::string s = "[";
  s.append(what).append("] ");
  return s;
}

/// Appends and fsyncs; 0 or the errno of the step that failed (after cutting the file back to
/// its old length: a file that ends in half a line would break its readers).
int append_synced(const fs::path& path, const std::string& text) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
  if (fd < 0) return errno;
  struct stat st {};
  const bool regular = ::fstat(fd, &st) == 0 && S_ISREG(st.st_mode);
  int err = 0;
  for (size_t done = 0; done < text.size() && err == 0;) {
    const ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0)
      err = n < 0 ? errno : ENOSPC;
    else
      done += static_cast<size_t>(n);
  }
  if (err == 0 && ::fsync(fd) != 0 && errno != EINVAL) err = errno;
  if (err != 0 && regular && ::ftruncate(fd, st.st_size) != 0) {
    // nothing more to do: the write error is the one to report
  }
  if (::close(fd) != 0 && err == 0) err = errno;
  return err;
}
}  // namespace

void append_text(const fs::path& path, const std::string& text, std::string_view what) {
  if (const int err = append_synced(path, text); err != 0)
    throw ValueError(tag_of(what) + "cannot write " + path.string() + ": " + std::strerror(err));
}

void prepare_run_dir(const fs::path& dir, std::string_view what) {
  const std::string tag = tag_of(what);
  if (dir.empty()) throw ValueError(tag + "the run folder is an empty path");
  std::error_code ec;
  if (fs::exists(dir, ec) && !fs::is_directory(dir, ec))
    throw ValueError(tag + "cannot use " + dir.string() +
                     " as the run folder: it exists and is not a folder");
  fs::create_directories(dir, ec);
  if (ec)
    throw ValueError(tag + "cannot create the run folder " + dir.string() + ": " + ec.message());
  // A probe file: permissions, a read-only mount or a full disk show now, not after an epoch.
  const fs::path probe = dir / (".probe-" + std::to_string(::getpid()));
  const int err = append_synced(probe, "probe\n");
  ::unlink(probe.c_str());
  if (err != 0)
    throw ValueError(tag + "cannot write in the run folder " + dir.string() + ": " +
                     std::strerror(err));
}

}  // namespace ember::train
