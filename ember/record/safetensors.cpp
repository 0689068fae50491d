#include "ember/record/safetensors.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cstring>
#include <nlohmann/json.hpp>

#include "ember/record/mapped_file.h"

namespace ember::record {

namespace {

using nlohmann::json;

// The header may not exceed this (the format's own readers use the same bound).
constexpr uint64_t kMaxHeader = uint64_t{100} << 20;
// Shapes may not describe more elements than this, even empty ones ([0, huge, ...]).
constexpr uint64_t kMaxElements = uint64_t{1} << 60;
// ...nor more dims than this (the op IR's bound).
constexpr size_t kMaxRank = 64;

constexpr std::pair<DType, const char*> kNames[] = {
    {DType::F64, "F64"}, {DType::F32, "F32"},  {DType::F16, "F16"}, {DType::BF16, "BF16"},
    {DType::I64, "I64"}, {DType::I32, "I32"},  {DType::I16, "I16"}, {DType::I8, "I8"},
    {DType::U8, "U8"},   {DType::Bool, "BOOL"}};

const char* st_name(DType t) {
  for (auto& [d, n] : kNames)
    if (d == t) return n;
  return "?";
}

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw ValueError("[safetensors] " + what + ": " + why);
}

DType st_dtype(const std::string& s, const std::string& what) {
  for (auto& [d, n] : kNames)
    if (s == n) return d;
  bad(what, "unsupported dtype '" + s + "'");
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

const TensorData& SafetensorsFile::at(const std::string& name) const {
  for (const auto& [n, t] : tensors)
    if (n == name) return t;
  throw ValueError("[safetensors] no tensor named '" + name + "'");
}

bool SafetensorsFile::contains(const std::string& name) const {
  return std::any_of(tensors.begin(), tensors.end(),
                     [&](const auto& p) { return p.first == name; });
}

void write_file_atomic(const std::filesystem::path& path, std::span<const std::byte> bytes) {
  std::filesystem::path tmp = path;
  tmp += ".tmp." + std::to_string(::getpid());
  Fd f{::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644)};
  if (f.fd < 0)
    throw ValueError("[record] cannot write " + tmp.string() + ": " + std::strerror(errno));
  size_t done = 0;
  while (done < bytes.size()) {
    ssize_t n = ::write(f.fd, bytes.data() + done, bytes.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      std::string err = std::strerror(errno);
      ::unlink(tmp.c_str());
      throw ValueError("[record] writing " + tmp.string() + " failed: " + err);
    }
    done += static_cast<size_t>(n);
  }
  if (::fsync(f.fd) != 0 || ::close(f.fd) != 0) {
    f.fd = -1;
    ::unlink(tmp.c_str());
    throw ValueError("[record] flushing " + tmp.string() + " failed: " + std::strerror(errno));
  }
  f.fd = -1;
  if (::rename(tmp.c_str(), path.c_str()) != 0) {
    std::string err = std::strerror(errno);
    ::unlink(tmp.c_str());
    throw ValueError("[record] renaming onto " + path.string() + " failed: " + err);
  }
  // the rename itself must reach the disk
  std::filesystem::path dir = path.has_parent_path() ? path.parent_path() : ".";
  Fd d{::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC)};
  if (d.fd >= 0) ::fsync(d.fd);
}

void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                      const std::map<std::string, std::string>& metadata) {
  json header = json::object();
  uint64_t offset = 0;
  for (const auto& [name, t] : tensors) {
    if (name == "__metadata__" || header.contains(name))
      throw ValueError("[safetensors] duplicate or reserved tensor name '" + name + "'");
    uint64_t n = t.bytes().size();
    header[name] = {{"dtype", st_name(t.dtype())},
                    {"shape", std::vector<int64_t>(t.shape().begin(), t.shape().end())},
                    {"data_offsets", {offset, offset + n}}};
    offset += n;
  }
  if (!metadata.empty()) header["__metadata__"] = metadata;
  std::string h = header.dump();
  h.append((8 - h.size() % 8) % 8, ' ');  // data starts 8-byte aligned
  std::vector<std::byte> out(8 + h.size() + offset);
  uint64_t hl = h.size();
  for (int i = 0; i < 8; ++i) out[i] = std::byte(static_cast<uint8_t>(hl >> (8 * i)));
  std::memcpy(out.data() + 8, h.data(), h.size());
  size_t at = 8 + h.size();
  for (const auto& [name, t] : tensors) {
    if (!t.bytes().empty()) std::memcpy(out.data() + at, t.bytes().data(), t.bytes().size());
    at += t.bytes().size();
  }
  write_file_atomic(path, out);
}

SafetensorsFile parse_safetensors(std::span<const std::byte> bytes, const std::string& what) {
  if (bytes.size() < 8)
    bad(what, "file of " + std::to_string(bytes.size()) + " bytes is too short");
  uint64_t hl = 0;
  for (int i = 0; i < 8; ++i) hl |= uint64_t{static_cast<uint8_t>(bytes[i])} << (8 * i);
  if (hl > kMaxHeader || hl > bytes.size() - 8)
    bad(what, "header length " + std::to_string(hl) + " does not fit a file of " +
                  std::to_string(bytes.size()) + " bytes");
  json header;
  try {
    header = json::parse(reinterpret_cast<const char*>(bytes.data()) + 8,
                         reinterpret_cast<const char*>(bytes.data()) + 8 + hl);
  } catch (const json::exception& e) {
    bad(what, std::string("header is not valid JSON: ") + e.what());
  }
  if (!header.is_object()) bad(what, "header is not a JSON object");
  std::span<const std::byte> data = bytes.subspan(8 + hl);
  SafetensorsFile file;
  struct Entry {
    uint64_t begin, end;
    std::string name;
    DType dtype;
    Shape shape;
  };
  std::vector<Entry> entries;
  for (const auto& [name, v] : header.items()) {
    if (name == "__metadata__") {
      if (!v.is_object()) bad(what, "__metadata__ is not an object");
      for (const auto& [k, mv] : v.items()) {
        if (!mv.is_string()) bad(what, "metadata value of '" + k + "' is not a string");
        file.metadata[k] = mv.get<std::string>();
      }
      continue;
    }
    std::string where = what + " tensor '" + name + "'";
    if (!v.is_object() || !v.contains("dtype") || !v.contains("shape") ||
        !v.contains("data_offsets") || !v["dtype"].is_string() || !v["shape"].is_array() ||
        !v["data_offsets"].is_array() || v["data_offsets"].size() != 2)
      bad(where, "needs dtype, shape and data_offsets [begin, end]");
    Entry e{0, 0, name, st_dtype(v["dtype"].get<std::string>(), where), Shape{}};
    if (v["shape"].size() > kMaxRank)
      bad(where, "shape has " + std::to_string(v["shape"].size()) + " dims, more than " +
                     std::to_string(kMaxRank));
    bool empty = false;  // a zero dim: no data, so the other dims are not bounded by the file
    for (const auto& d : v["shape"]) {
      if (!d.is_number_unsigned()) bad(where, "shape entries must be non-negative integers");
      empty = empty || d.get<uint64_t>() == 0;
    }
    uint64_t count = 1;  // the product of the non-zero dims, kept small enough that no product
                         // of dims (element counts, strides, byte sizes) overflows an int64
    for (const auto& d : v["shape"]) {
      uint64_t x = d.get<uint64_t>();
      if (!empty && x > data.size())
        bad(where, "dim " + std::to_string(x) + " is larger than the file");
      if (x != 0) {
        if (count > kMaxElements / x)
          bad(where, "shape " + v["shape"].dump() + " has more than 2^60 elements");
        count *= x;
      }
      e.shape.dims().push_back(static_cast<int64_t>(x));
    }
    if (empty) count = 0;
    for (int i = 0; i < 2; ++i)
      if (!v["data_offsets"][i].is_number_unsigned()) bad(where, "data_offsets must be integers");
    e.begin = v["data_offsets"][0].get<uint64_t>();
    e.end = v["data_offsets"][1].get<uint64_t>();
    if (e.begin > e.end || e.end > data.size())
      bad(where, "data_offsets [" + std::to_string(e.begin) + ", " + std::to_string(e.end) +
                     ") outside the " + std::to_string(data.size()) + " data bytes");
    if (count > data.size() || count * size_of(e.dtype) != e.end - e.begin)
      bad(where, "shape " + e.shape.to_string() + " of " + st_name(e.dtype) + " does not fill " +
                     std::to_string(e.end - e.begin) + " bytes");
    entries.push_back(std::move(e));
  }
  std::sort(entries.begin(), entries.end(),
            [](const Entry& a, const Entry& b) { return a.begin < b.begin; });
  uint64_t expect = 0;
  for (const Entry& e : entries) {  // the format requires tensors to tile the data exactly
    if (e.begin != expect) bad(what, "tensor '" + e.name + "' overlaps another or leaves a gap");
    expect = e.end;
  }
  if (expect != data.size())
    bad(what, "data section has " + std::to_string(data.size() - expect) + " stray bytes");
  for (const Entry& e : entries) {
    if (e.dtype == DType::Bool)  // any other byte is not a bool: reading it would be undefined
      for (uint64_t i = e.begin; i < e.end; ++i)
        if (static_cast<uint8_t>(data[i]) > 1)
          bad(what + " tensor '" + e.name + "'",
              "BOOL byte " + std::to_string(i - e.begin) + " is " +
                  std::to_string(static_cast<uint8_t>(data[i])) + ", not 0 or 1");
    file.tensors.emplace_back(e.name,
                              TensorData(data.subspan(e.begin, e.end - e.begin), e.shape, e.dtype));
  }
  return file;
}

SafetensorsFile load_safetensors(const std::filesystem::path& path) {
  detail::MappedFile f(path, "safetensors");
  return parse_safetensors(f.bytes(), path.string());
}

}  // namespace ember::record
