#include "ember/kernel/cache.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <fstream>

namespace ember::kernel {

namespace {

constexpr char kMagic[8] = {'E', 'M', 'B', 'K', 'C', 'A', 'C', '1'};

uint64_t fnv1a(const char* p, size_t n, uint64_t h = 0xcbf29ce484222325ull) {
  for (size_t i = 0; i < n; ++i) h = (h ^ static_cast<unsigned char>(p[i])) * 0x100000001b3ull;
  return h;
}

std::string hex(uint64_t v) {
  static const char* d = "0123456789abcdef";
  std::string s(16, '0');
  for (int i = 15; i >= 0; --i, v >>= 4) s[i] = d[v & 15];
  return s;
}

void put_u64(std::string& s, uint64_t v) {
  for (int i = 0; i < 8; ++i) s.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
uint64_t get_u64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i)
    v |= static_cast<uint64_t>(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

}  // namespace

KernelCache::KernelCache(std::filesystem::path dir) : dir_(std::move(dir)) {}

KernelCache& KernelCache::global() {
  static KernelCache cache(default_dir());
  return cache;
}

std::filesystem::path KernelCache::default_dir() {
  if (const char* e = std::getenv("EMBER_KERNEL_CACHE")) {
    std::string v = e;
    if (v == "off" || v == "0" || v.empty()) return {};
    return v;
  }
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x)
    return std::filesystem::path(x) / "ember" / "kernels";
  if (const char* h = std::getenv("HOME"); h && *h)
    return std::filesystem::path(h) / ".cache" / "ember" / "kernels";
  return {};
}

std::filesystem::path KernelCache::path_of(const std::string& key) const {
  uint64_t a = fnv1a(key.data(), key.size());
  uint64_t b = fnv1a(key.data(), key.size(), 0x84222325cbf29ce4ull);
  return dir_ / (hex(a) + hex(b) + ".bin");
}

std::optional<std::vector<char>> KernelCache::read_file(const std::string& key) {
  if (dir_.empty()) return std::nullopt;
  std::filesystem::path p = path_of(key);
  std::ifstream f(p, std::ios::binary);
  if (!f) return std::nullopt;
  std::string data((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  // magic | key size | value size | checksum of key and value | key | value
  bool ok = data.size() >= 32 && std::memcmp(data.data(), kMagic, 8) == 0;
  uint64_t ks = ok ? get_u64(data.data() + 8) : 0, vs = ok ? get_u64(data.data() + 16) : 0;
  ok = ok && ks == key.size() && data.size() == 32 + ks + vs && data.compare(32, ks, key) == 0 &&
       get_u64(data.data() + 24) == fnv1a(data.data() + 32, ks + vs);
  if (!ok) {
    ++stats_.corrupt;
    std::error_code ec;
    std::filesystem::remove(p, ec);
    return std::nullopt;
  }
  return std::vector<char>(data.begin() + 32 + static_cast<std::ptrdiff_t>(ks), data.end());
}

void KernelCache::write_file(const std::string& key, std::span<const char> value) {
  if (dir_.empty()) return;
  static std::atomic<uint64_t> counter{0};
  std::error_code ec;
  std::filesystem::create_directories(dir_, ec);
  std::filesystem::path p = path_of(key);
  std::filesystem::path tmp = p;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  std::string data(kMagic, 8);
  put_u64(data, key.size());
  put_u64(data, value.size());
  std::string body = key;
  body.append(value.data(), value.size());
  put_u64(data, fnv1a(body.data(), body.size()));
  data += body;
  {
    std::ofstream f(tmp, std::ios::binary | std::ios::trunc);
    f.write(data.data(), static_cast<std::streamsize>(data.size()));
    f.close();
    if (!f) {
      ++stats_.write_errors;
      std::filesystem::remove(tmp, ec);
      return;
    }
  }
  std::filesystem::rename(tmp, p, ec);
  if (ec) {
    ++stats_.write_errors;
    std::filesystem::remove(tmp, ec);
  }
}

std::optional<std::vector<char>> KernelCache::get(const std::string& key) {
  std::lock_guard<std::mutex> lock(mu_);
  if (auto it = memory_.find(key); it != memory_.end()) {
    ++stats_.memory_hits;
    return it->second;
  }
  if (auto v = read_file(key)) {
    ++stats_.disk_hits;
    memory_[key] = *v;
    return v;
  }
  return std::nullopt;
}

void KernelCache::put(const std::string& key, std::span<const char> value) {
  std::lock_guard<std::mutex> lock(mu_);
  memory_[key] = std::vector<char>(value.begin(), value.end());
  write_file(key, value);
}

std::vector<char> KernelCache::get_or_build(const std::string& key,
                                            const std::function<std::vector<char>()>& build,
                                            bool* hit) {
  if (auto v = get(key)) {
    if (hit) *hit = true;
    return *v;
  }
  {
    std::lock_guard<std::mutex> lock(mu_);
    ++stats_.misses;
  }
  std::vector<char> v = build();
  put(key, v);
  if (hit) *hit = false;
  return v;
}

KernelCache::Stats KernelCache::stats() const {
  std::lock_guard<std::mutex> lock(mu_);
  return stats_;
}

void KernelCache::clear_memory() {
  std::lock_guard<std::mutex> lock(mu_);
  memory_.clear();
}

}  // namespace ember::kernel
