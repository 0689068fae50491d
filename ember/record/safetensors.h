// safetensors files: the ecosystem's format for named tensors (an 8-byte little-endian header
// length, a JSON header of names, dtypes, shapes and byte ranges, then the raw data).
//
//   record::save_safetensors("model.safetensors", {{"fc.weight", w.to_data()}},
//                            {{"format", "ember"}});
//   auto file = record::load_safetensors("model.safetensors");
//   const TensorData& fc = file.at("fc.weight");
//
// Writes are atomic: the data goes to a temporary file in the same folder, is flushed to disk
// and renamed over the target, so a crash never leaves a half-written file in its place.
// Reading maps the file and checks everything before trusting it: a truncated, malformed or
// hostile file raises ValueError naming the file and the problem, never crashes, and only
// allocates tensor data for byte ranges that lie inside the file.
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/export.h"
#include "ember/core/tensor_data.h"

namespace ember::record {

using NamedTensors = std::vector<std::pair<std::string, TensorData>>;

struct EMBER_API SafetensorsFile {
  std::map<std::string, std::string> metadata;
  NamedTensors tensors;  // in file order (by data offset)

  /// The tensor with this name; throws ValueError if there is none.
  const TensorData& at(const std::string& name) const;
  bool contains(const std::string& name) const;
};

EMBER_API void save_safetensors(const std::filesystem::path& path, const NamedTensors& tensors,
                                const std::map<std::string, std::string>& metadata = {});
EMBER_API SafetensorsFile load_safetensors(const std::filesystem::path& path);
/// Parses a whole file image (what load_safetensors reads through a memory map).
EMBER_API SafetensorsFile parse_safetensors(std::span<const std::byte> bytes,
                                            const std::string& what);

/// Writes `bytes` to `path` atomically (temporary file, fsync, rename, fsync of the folder).
EMBER_API void write_file_atomic(const std::filesystem::path& path,
                                 std::span<const std::byte> bytes);

}  // namespace ember::record
