// Module records: a module's parameters and buffers as named tensors (their paths), saved to
// and loaded from safetensors files, which other tools read too.
//
//   nn::save_module(model, "model.safetensors",
//                   {.precision = nn::Precision::BF16, .metadata = {{"epoch", "3"}}});
//   auto fresh = ModelConfig{}.init<B>(dev);                  // lazy: no random init is run
//   nn::load_module(fresh, "model.safetensors");              // strict: every name must match
//   auto report = nn::load_module(fresh, "backbone.safetensors", nn::LoadMode::Partial);
//   report.missing;   // parameters the file lacks (kept as they were)
//
// Strict loading checks every name, shape and element kind and reports all mismatches in one
// ValueError. Floating-point precisions convert (a bf16 file loads into f32 parameters); a
// float tensor never loads into an integer one. The file also carries ember's version, the
// module's type and whatever metadata the caller adds (e.g. its config as JSON).
#pragma once
#include <filesystem>
#include <map>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/core/version.h"
#include "ember/nn/slot.h"
#include "ember/record/safetensors.h"

namespace ember::nn {

/// Storage precision of floating-point tensors in a saved record.
enum class Precision { Full, F16, BF16 };

struct SaveOptions {
  Precision precision = Precision::Full;
  std::map<std::string, std::string> metadata = {};
};

enum class LoadMode { Strict, Partial };

/// What a load did, by path.
struct LoadReport {
  std::vector<std::string> applied;     // loaded into the module
  std::vector<std::string> missing;     // in the module, not in the record
  std::vector<std::string> unused;      // in the record, not in the module
  std::vector<std::string> mismatched;  // present in both, wrong shape or kind: "path: why"
  bool complete() const { return missing.empty() && unused.empty() && mismatched.empty(); }
  EMBER_API std::string to_string() const;
};

/// The slots' values by path (lazy parameters are initialized; empty slots are skipped).
EMBER_API record::NamedTensors to_record(const std::vector<Slot>& slots,
                                         Precision p = Precision::Full);
/// Loads named tensors into the slots (see the module overload).
EMBER_API LoadReport apply_record(const std::vector<Slot>& slots,
                                  const record::NamedTensors& tensors,
                                  LoadMode mode = LoadMode::Strict);
/// Saves the slots atomically with the metadata of save_module; `module` names the type.
EMBER_API void save_module(const std::vector<Slot>& slots, std::string_view module,
                           const std::filesystem::path& path, const SaveOptions& opt = {});
/// Loads a safetensors file into the slots (see the module overload).
EMBER_API LoadReport load_module(const std::vector<Slot>& slots, const std::filesystem::path& path,
                                 LoadMode mode = LoadMode::Strict);

/// The module's parameters and buffers by path (lazy parameters are initialized).
template <Module M>
record::NamedTensors to_record(const M& m, Precision p = Precision::Full) {
  return to_record(slots(m), p);
}

/// Loads named tensors into the module. Strict: any missing, unused or mismatched name
/// throws one ValueError listing them all, and the module is left unchanged.
template <Module M>
LoadReport apply_record(M& m, const record::NamedTensors& tensors,
                        LoadMode mode = LoadMode::Strict) {
  return apply_record(slots(m), tensors, mode);
}

/// Saves the module atomically (temporary file, flush, rename) with metadata:
/// `ember.version`, `ember.module` (its type), `ember.precision` and the caller's entries.
template <Module M>
void save_module(const M& m, const std::filesystem::path& path, const SaveOptions& opt = {}) {
  save_module(slots(m), M::module_name(), path, opt);
}

/// Loads a file saved by save_module (or any safetensors file with matching names).
template <Module M>
LoadReport load_module(M& m, const std::filesystem::path& path, LoadMode mode = LoadMode::Strict) {
  return load_module(slots(m), path, mode);
}

}  // namespace ember::nn
