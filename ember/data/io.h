// File helpers for the data readers: whole-file reads and gzip (zlib), with errors that name
// the file.
//
//   auto bytes = ember::data::read_maybe_gzip("train-images-idx3-ubyte.gz", "mnist");
#pragma once
#include <cstdint>
#include <filesystem>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "ember/core/export.h"

namespace ember::data {

/// The whole file, read to its end. Throws ValueError naming the path: "[what] cannot open
/// <path>: <reason>" (missing, no permission), "[what] cannot read <path>: it is a folder, not a
/// file" (or not a regular file, or the read failed).
EMBER_API std::vector<uint8_t> read_file(const std::filesystem::path& path, std::string_view what);
/// Writes `bytes` to `path` through a temporary file and a rename, so readers never see a
/// partial file.
EMBER_API void write_file_atomic(const std::filesystem::path& path, std::span<const uint8_t> bytes,
                                 std::string_view what);

/// True if the bytes start with the gzip magic (1f 8b).
EMBER_API bool is_gzip(std::span<const uint8_t> bytes);
/// Decompresses gzip data (several members allowed); truncated or corrupt data throws
/// ValueError naming `source`.
EMBER_API std::vector<uint8_t> gunzip(std::span<const uint8_t> bytes, std::string_view source,
                                      std::string_view what);
/// Compresses to one gzip member (for tests and fixtures).
EMBER_API std::vector<uint8_t> gzip(std::span<const uint8_t> bytes, int level = 6);
/// The file's bytes, decompressed if it is gzip (by content, not by name).
EMBER_API std::vector<uint8_t> read_maybe_gzip(const std::filesystem::path& path,
                                               std::string_view what);

}  // namespace ember::data
