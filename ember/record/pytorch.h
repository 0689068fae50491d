// PyTorch files (.pt, .pth, .bin): what torch.save writes, read without Python and without
// running anything from the file.
//
//   record::NamedTensors sd = record::load_pytorch("resnet18.pth");
//   for (const auto& [name, t] : sd)
//     std::cout << name << " " << t.shape().to_string() << "\n";   // conv1.weight [64, 3, 7, 7]
//   record::TensorFile any = record::load_tensor_file("model.bin");  // by content
//
// Both formats of torch.save are read: the zip archive (PyTorch 1.6 and later: `NAME/data.pkl`
// and one entry `NAME/data/KEY` per storage, stored uncompressed) and the legacy stream
// (`_use_new_zipfile_serialization=False`: a magic number, the protocol and system pickles,
// the main pickle, the list of storage keys, then each storage's element count and bytes).
// The pickles go through parse_pickle (pickle.h), which accepts only the globals torch.save
// uses for tensors and containers: a file with any other global (a pickled module or
// function, an exploit) is refused with the global's name.
//
// Tensors come out contiguous in their own dtype (f64 f32 f16 bf16 i64 i32 i16 i8 u8 bool):
// strides and storage offsets are honoured, so views (`t.T`, slices) and tensors sharing one
// storage read as PyTorch shows them. Containers flatten to dotted names: a state dict's keys
// as they are, a checkpoint {"model": state_dict, "epoch": 3} to "model.fc.weight", ...,
// lists by index; values that are not tensors (numbers, strings) are skipped. A truncated,
// malformed or hostile file raises ValueError naming the file and the problem.
#pragma once
#include <filesystem>
#include <map>
#include <optional>
#include <span>
#include <string>

#include "ember/core/export.h"
#include "ember/record/safetensors.h"

namespace ember::record {

/// The tensors of a torch.save file, in the order they appear in its pickle.
EMBER_API NamedTensors load_pytorch(const std::filesystem::path& path);
/// Parses a whole torch.save file image (either format).
EMBER_API NamedTensors parse_pytorch(std::span<const std::byte> bytes, const std::string& what);

enum class TensorFileFormat { Safetensors, PytorchZip, PytorchLegacy };

/// The format of a file from its first bytes, or nullopt if it is none of them.
EMBER_API std::optional<TensorFileFormat> detect_format(std::span<const std::byte> head);

/// Named tensors from any file ember reads, whatever its name ends with.
struct TensorFile {
  TensorFileFormat format = TensorFileFormat::Safetensors;
  NamedTensors tensors;
  std::map<std::string, std::string> metadata;  // safetensors only
};
EMBER_API TensorFile load_tensor_file(const std::filesystem::path& path);
EMBER_API TensorFile parse_tensor_file(std::span<const std::byte> bytes, const std::string& what);

}  // namespace ember::record
