// The entries of a zip archive (private to ember/record): what torch.save writes, stored
// (uncompressed) entries with or without ZIP64 records.
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <vector>

namespace ember::record::detail {

struct ZipEntry {
  std::string name;
  std::span<const std::byte> data;  // inside the archive's bytes; its CRC-32 is checked
};

/// Reads the central directory and checks every entry (bounds, local header, CRC-32);
/// anything malformed, compressed or encrypted raises ValueError naming `what`.
std::vector<ZipEntry> read_zip(std::span<const std::byte> bytes, const std::string& what);

}  // namespace ember::record::detail
