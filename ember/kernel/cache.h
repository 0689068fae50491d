// The compiled-kernel cache: in memory, and on disk so that a second process compiles
// nothing. Entries are keyed by the whole key text (target, compiler version, options,
// architecture, source); files are written to a temporary name and renamed (a reader never
// sees half a file), and a corrupt or mismatched file is ignored, removed and rebuilt.
//
// The directory: $EMBER_KERNEL_CACHE ("off" or "0": memory only), else
// $XDG_CACHE_HOME/ember/kernels, else ~/.cache/ember/kernels.
//
//   kernel::KernelCache cache(fs::temp_directory_path() / "ember-doc-cache");
//   bool hit = false;
//   std::vector<char> bin = cache.get_or_build("key", [] { return std::vector<char>{'x'}; }, &hit);
#pragma once
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <mutex>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "ember/core/export.h"

namespace ember::kernel {

class EMBER_API KernelCache {
 public:
  struct Stats {
    int64_t memory_hits = 0, disk_hits = 0, misses = 0, corrupt = 0, write_errors = 0;
  };

  /// A cache over `dir` (created when needed); an empty path keeps entries in memory only.
  explicit KernelCache(std::filesystem::path dir);
  /// The process-wide cache over default_dir().
  static KernelCache& global();
  /// The directory from the environment (see above); empty when the disk cache is off.
  static std::filesystem::path default_dir();

  std::optional<std::vector<char>> get(const std::string& key);
  void put(const std::string& key, std::span<const char> value);
  /// The cached value, or `build()`'s, stored. `hit` says whether it was found.
  std::vector<char> get_or_build(const std::string& key,
                                 const std::function<std::vector<char>()>& build,
                                 bool* hit = nullptr);
  /// The file that holds `key` (whether or not it exists).
  std::filesystem::path path_of(const std::string& key) const;
  const std::filesystem::path& dir() const { return dir_; }
  Stats stats() const;
  void clear_memory();

 private:
  std::optional<std::vector<char>> read_file(const std::string& key);
  void write_file(const std::string& key, std::span<const char> value);

  std::filesystem::path dir_;
  mutable std::mutex mu_;
  std::map<std::string, std::vector<char>> memory_;
  Stats stats_;
};

}  // namespace ember::kernel
