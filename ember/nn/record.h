// Module records: a module's parameters and buffers as named tensors (their paths), saved to
// safetensors files, which other tools read too, and loaded from those or PyTorch's files.
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
//
// Files from PyTorch and other tools (.pt, .pth, .bin, .safetensors; the format is found from
// the content) load with ImportOptions: regex renames first, then adapters from PyTorch's
// names and layouts to ember's, chosen by the type of each layer of the module.
//
//   auto cnn = CnnConfig{}.init<B>(dev);
//   auto r = nn::load_module(cnn, "checkpoint.pth",
//                            {.remap = {{"^model\\.", ""}, {"^features\\.0\\.", "conv1."}},
//                             .mode = nn::LoadMode::Partial});
//   std::cout << r.to_string();       // applied, missing, unused (by the file's names), ...
//
// The adapters, for layers of these types (the module's own; renames run before them):
//   Linear                 weight [out, in] -> [in, out] (transposed)
//   BatchNorm, LayerNorm,  weight, bias -> gamma, beta; running_mean/var as they are;
//   GroupNorm, RmsNorm     num_batches_tracked is skipped (ember keeps no such count)
//   Rnn, Lstm, Gru         weight_ih_lK, bias_hh_lK, ..._reverse -> layers.K.fwd/rev.ih/hh.*
//   MultiHeadAttention     in_proj_weight/bias -> query, key, value; out_proj -> output;
//                          q/k/v_proj_weight -> query/key/value.weight
//   Transformer*Layer      linear1/2 -> ff.linear1/2; multihead_attn -> cross_attn
// Conv and Embedding weights are PyTorch's layout already. Anything else can be transposed
// with `transpose`. Floating-point tensors convert to the module's dtypes (an f64 or bf16
// file into f32 parameters); a remap to the empty name skips a tensor.
#pragma once
#include <filesystem>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "ember/core/export.h"
#include "ember/core/version.h"
#include "ember/nn/slot.h"
#include "ember/record/pytorch.h"
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
  std::vector<std::string> skipped;     // in the record, left out on purpose (by a remap to
                                        // "" or an adapter); never an error
  bool complete() const { return missing.empty() && unused.empty() && mismatched.empty(); }
  EMBER_API std::string to_string() const;
};

/// One rename of ImportOptions: std::regex_replace(name, pattern, replacement) (ECMAScript
/// syntax; `$1` is the first group). An empty result skips the tensor.
struct KeyRemap {
  std::string pattern;
  std::string replacement;
};

/// Whose names and weight layouts a record has.
enum class RecordLayout {
  Auto,     // PyTorch's for a .pt/.pth file and for safetensors not saved by ember; ember's for
            // ember's own safetensors files (their ember.version metadata)
  Ember,    // names and layouts as they are: renames only
  Pytorch,  // the adapters run
};

/// How load_module(module, path, options) and apply_record(module, tensors, options) map a
/// record's names onto the module.
struct ImportOptions {
  std::vector<KeyRemap> remap = {};  // in order, to every name of the record
  RecordLayout layout = RecordLayout::Auto;
  LoadMode mode = LoadMode::Strict;
  /// More 2-d tensors to transpose (by their final path and the record's shape), after the
  /// adapters: e.g. a raw weight matrix of a custom layer saved in PyTorch's [out, in].
  std::function<bool(const std::string& path, const Shape& shape)> transpose = {};
};

/// The type of every submodule by path ("" is the root; a vector of modules is ""): how the
/// adapters tell a Linear's weight from an Embedding's.
using ModuleTypes = std::vector<std::pair<std::string, std::string>>;

namespace detail {
/// What loading `tensors` into `slots` would do; `assign` is empty unless all are checked.
struct RecordPlan {
  LoadReport report;
  std::vector<std::pair<const Slot*, const TensorData*>> assign;
};
EMBER_API RecordPlan plan_record(const std::vector<Slot>& slots,
                                 const record::NamedTensors& tensors);

template <class T>
void collect_types(const std::string& path, const T& x, ModuleTypes& out) {
  using U = std::remove_cvref_t<T>;
  if constexpr (ParamLike<U> || BufferLike<U>) {
    return;
  } else if constexpr (Module<U>) {
    out.emplace_back(path, std::string(U::module_name()));
    x.for_each_field(
        [&](const char* name, const auto& f) { collect_types(join(path, name), f, out); });
  } else if constexpr (is_vector<U>::value || is_array<U>::value) {
    out.emplace_back(path, "");
    for (size_t i = 0; i < x.size(); ++i) collect_types(join(path, std::to_string(i)), x[i], out);
  } else if constexpr (is_optional<U>::value) {
    if (x) collect_types(path, *x, out);
  }
}
}  // namespace detail

/// The module's layer types by path.
template <Module M>
ModuleTypes module_types(const M& m) {
  ModuleTypes out;
  detail::collect_types("", m, out);
  return out;
}

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
/// Loads a record file into the slots, names as they are (see the module overload).
EMBER_API LoadReport load_module(const std::vector<Slot>& slots, const std::filesystem::path& path,
                                 LoadMode mode = LoadMode::Strict);
/// Loads named tensors with renames and adapters (see the module overloads); `pytorch` is
/// what RecordLayout::Auto stands for.
EMBER_API LoadReport apply_record(const std::vector<Slot>& slots, const ModuleTypes& types,
                                  const record::NamedTensors& tensors, const ImportOptions& opt,
                                  bool pytorch = true);
/// Loads any record file (safetensors, PyTorch zip or legacy) with renames and adapters.
EMBER_API LoadReport load_module(const std::vector<Slot>& slots, const ModuleTypes& types,
                                 const std::filesystem::path& path, const ImportOptions& opt);

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

/// Loads a file saved by save_module (or any record file with matching names and layouts:
/// safetensors or PyTorch's, by content).
template <Module M>
LoadReport load_module(M& m, const std::filesystem::path& path, LoadMode mode = LoadMode::Strict) {
  return load_module(slots(m), path, mode);
}

/// Loads a file from PyTorch or elsewhere: renames, then (for PyTorch layouts) the adapters,
/// then the checks of the LoadMode overload. The report names unused tensors as the file does.
template <Module M>
LoadReport load_module(M& m, const std::filesystem::path& path, const ImportOptions& opt) {
  return load_module(slots(m), module_types(m), path, opt);
}

/// Loads named tensors (e.g. record::load_pytorch's) with renames and adapters; Auto layout
/// means PyTorch's here.
template <Module M>
LoadReport apply_record(M& m, const record::NamedTensors& tensors, const ImportOptions& opt) {
  return apply_record(slots(m), module_types(m), tensors, opt);
}

}  // namespace ember::nn
