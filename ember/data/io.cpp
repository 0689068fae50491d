#include "ember/data/io.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <random>

#include "ember/core/error.h"

namespace ember::data {

namespace {
std::string where(std::string_view what) {
  std::string s(1, '[');
  s.append(what);
  s.append("] ");
  return s;
}
}  // namespace

std::vector<uint8_t> read_file(const std::filesystem::path& path, std::string_view what) {
  // POSIX calls, not an ifstream: a folder opens as a stream and its "size" from tellg is
  // garbage, and /proc files say size 0. Read until the end instead of trusting a size.
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0)
    throw ValueError(where(what) + "cannot open " + path.string() + ": " + std::strerror(errno));
  struct Close {
    int fd;
    ~Close() { ::close(fd); }
  } close_at_exit{fd};
  auto cannot_read = [&](const std::string& why) {
    return ValueError(where(what) + "cannot read " + path.string() + ": " + why);
  };
  struct stat st {};
  if (::fstat(fd, &st) != 0) throw cannot_read(std::strerror(errno));
  if (S_ISDIR(st.st_mode)) throw cannot_read("it is a folder, not a file");
  if (!S_ISREG(st.st_mode) && !S_ISFIFO(st.st_mode)) throw cannot_read("it is not a regular file");
  std::vector<uint8_t> bytes(S_ISREG(st.st_mode) ? static_cast<size_t>(st.st_size) + 1 : 4096);
  size_t size = 0;
  for (;;) {
    if (size == bytes.size()) bytes.resize(bytes.size() * 2);
    const ssize_t n = ::read(fd, bytes.data() + size, bytes.size() - size);
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) throw cannot_read(std::strerror(errno));
    if (n == 0) break;
    size += static_cast<size_t>(n);
  }
  bytes.resize(size);
  return bytes;
}

void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes,
                       std::string_view what) {
  std::filesystem::path tmp = path;
  tmp += ".tmp-" + std::to_string(std::random_device{}());
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    if (!f)
      throw ValueError(where(what) + "cannot create " + tmp.string() + ": " + std::strerror(errno));
    f.write(reinterpret_cast<const char*>(bytes.data()),
            static_cast<std::streamsize>(bytes.size()));
    f.flush();
    if (!f) {
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      throw ValueError(where(what) + "cannot write " + tmp.string());
    }
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) {
    std::filesystem::remove(tmp, ec);
    throw ValueError(where(what) + "cannot rename onto " + path.string());
  }
}

bool is_gzip(std::span<const uint8_t> bytes) {
  return bytes.size() >= 2 && bytes[0] == 0x1f && bytes[1] == 0x8b;
}

std::vector<uint8_t> gunzip(std::span<const uint8_t> bytes, std::string_view source,
                            std::string_view what) {
  std::vector<uint8_t> out;
  out.reserve(bytes.size() * 4);
  size_t pos = 0;
  // One iteration per gzip member.
  while (pos < bytes.size()) {
    if (!is_gzip(bytes.subspan(pos))) {
      if (pos == 0) throw ValueError(where(what) + std::string(source) + ": not gzip data");
      break;  // trailing garbage after a complete member: ignored, as gzip(1) does
    }
    z_stream z{};
    if (inflateInit2(&z, 16 + MAX_WBITS) != Z_OK)
      throw ValueError(where(what) + "zlib init failed");
    z.next_in = const_cast<Bytef*>(bytes.data() + pos);
    z.avail_in = static_cast<uInt>(bytes.size() - pos);
    int rc = Z_OK;
    uint8_t buf[1 << 16];
    while (rc != Z_STREAM_END) {
      z.next_out = buf;
      z.avail_out = sizeof(buf);
      rc = inflate(&z, Z_NO_FLUSH);
      if (rc != Z_OK && rc != Z_STREAM_END) {
        std::string msg = z.msg ? z.msg : "";
        bool truncated = rc == Z_BUF_ERROR && z.avail_in == 0;
        inflateEnd(&z);
        throw ValueError(where(what) + std::string(source) +
                         (truncated ? ": truncated gzip data" : ": corrupt gzip data") +
                         (msg.empty() ? "" : " (" + msg + ")"));
      }
      out.insert(out.end(), buf, buf + (sizeof(buf) - z.avail_out));
      if (rc != Z_STREAM_END && z.avail_in == 0 && z.avail_out != 0) {
        inflateEnd(&z);
        throw ValueError(where(what) + std::string(source) + ": truncated gzip data");
      }
    }
    pos = bytes.size() - z.avail_in;
    inflateEnd(&z);
  }
  return out;
}

std::vector<uint8_t> gzip(std::span<const uint8_t> bytes, int level) {
  z_stream z{};
  if (deflateInit2(&z, level, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY) != Z_OK)
    throw ValueError("[gzip] zlib init failed");
  std::vector<uint8_t> out(deflateBound(&z, static_cast<uLong>(bytes.size())) + 32);
  z.next_in = const_cast<Bytef*>(bytes.data());
  z.avail_in = static_cast<uInt>(bytes.size());
  z.next_out = out.data();
  z.avail_out = static_cast<uInt>(out.size());
  int rc = deflate(&z, Z_FINISH);
  size_t n = out.size() - z.avail_out;
  deflateEnd(&z);
  if (rc != Z_STREAM_END) throw ValueError("[gzip] deflate failed");
  out.resize(n);
  return out;
}

std::vector<uint8_t> read_maybe_gzip(const std::filesystem::path& path, std::string_view what) {
  std::vector<uint8_t> raw = read_file(path, what);
  if (!is_gzip(raw)) return raw;
  return gunzip(raw, path.string(), what);
}

}  // namespace ember::data
