// A test's whole-file read: the bytes of a fixture or a corpus input (empty when it cannot be
// read; the test's own assertions then fail on it).
#pragma once
#include <cstddef>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

namespace ember::test {

inline std::vector<std::byte> read_file_bytes(const std::filesystem::path& p) {
  std::ifstream f(p, std::ios::binary);
  std::vector<char> c((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  const auto* b = reinterpret_cast<const std::byte*>(c.data());
  return {b, b + c.size()};
}

}  // namespace ember::test
