// A read-only memory map of a whole file, for the record readers (private to ember/record).
#pragma once
#include <cstddef>
#include <filesystem>
#include <span>
#include <string>

namespace ember::record::detail {

class MappedFile {
 public:
  /// Maps `path`; errors are ValueErrors that start with `[tag]`.
  MappedFile(const std::filesystem::path& path, const char* tag);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;
  std::span<const std::byte> bytes() const { return {static_cast<const std::byte*>(p_), n_}; }

 private:
  void* p_ = nullptr;
  size_t n_ = 0;
};

}  // namespace ember::record::detail
