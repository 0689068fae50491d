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
#include <unordered_map>
#include <vector>

#include "ember/core/version.h"
#include "ember/nn/module.h"
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
  std::string to_string() const;
};

namespace detail {
inline DType storage_dtype(DType t, Precision p) {
  if (!is_float(t) || p == Precision::Full) return t;
  return p == Precision::F16 ? DType::F16 : DType::BF16;
}
}  // namespace detail

/// The module's parameters and buffers by path (lazy parameters are initialized).
template <Module M>
record::NamedTensors to_record(const M& m, Precision p = Precision::Full) {
  record::NamedTensors out;
  auto add = [&](const std::string& path, const auto& x) {
    TensorData d = x.val().to_data();
    DType t = detail::storage_dtype(d.dtype(), p);
    out.emplace_back(path, t == d.dtype() ? std::move(d) : d.convert(t));
  };
  for_each_param(m, add);
  for_each_buffer(m, [&](const std::string& path, const auto& b) {
    if (!b.empty()) add(path, b);
  });
  return out;
}

/// Loads named tensors into the module. Strict: any missing, unused or mismatched name
/// throws one ValueError listing them all, and the module is left unchanged.
template <Module M>
LoadReport apply_record(M& m, const record::NamedTensors& tensors,
                        LoadMode mode = LoadMode::Strict) {
  std::unordered_map<std::string, const TensorData*> by_name;
  for (const auto& [n, d] : tensors) by_name.emplace(n, &d);
  LoadReport r;
  std::unordered_map<std::string, bool> seen;
  // First pass: check everything; second pass (only if allowed): assign.
  auto check = [&](const std::string& path, const Shape& shape, DType want) -> const TensorData* {
    auto it = by_name.find(path);
    if (it == by_name.end()) {
      r.missing.push_back(path);
      return nullptr;
    }
    seen[path] = true;
    const TensorData& d = *it->second;
    if (d.shape() != shape) {
      r.mismatched.push_back(path + ": shape " + d.shape().to_string() + " in the record, " +
                             shape.to_string() + " in the module");
      return nullptr;
    }
    if (is_float(d.dtype()) != is_float(want) ||
        (want == DType::Bool) != (d.dtype() == DType::Bool)) {
      r.mismatched.push_back(path + ": dtype " + std::string(name(d.dtype())) + " in the record, " +
                             std::string(name(want)) + " in the module");
      return nullptr;
    }
    r.applied.push_back(path);
    return &d;
  };
  // Gather the plan without touching the module.
  std::vector<std::pair<std::string, const TensorData*>> plan;
  for_each_param(m, [&](const std::string& path, const auto& p) {
    using V = typename std::remove_cvref_t<decltype(p)>::Value;
    DType want = p.is_initialized() ? p.val().dtype() : V::kind_type::kDefault;
    if (const TensorData* d = check(path, p.shape(), want)) plan.emplace_back(path, d);
  });
  for_each_buffer(m, [&](const std::string& path, const auto& b) {
    if (b.empty()) return;
    if (const TensorData* d = check(path, b.shape(), b.val().dtype())) plan.emplace_back(path, d);
  });
  for (const auto& [n, d] : tensors)
    if (!seen.count(n)) r.unused.push_back(n);
  if (mode == LoadMode::Strict && !r.complete())
    throw ValueError("[load] the record does not match the module:\n" + r.to_string());
  std::unordered_map<std::string, const TensorData*> todo(plan.begin(), plan.end());
  auto assign = [&](const std::string& path, auto& x) {
    auto it = todo.find(path);
    if (it == todo.end()) return;
    using V = typename std::remove_cvref_t<decltype(x)>::Value;
    DType want = V::kind_type::kDefault;
    if constexpr (ParamLike<std::remove_cvref_t<decltype(x)>>) {
      if (x.is_initialized()) want = x.val().dtype();
      Device dev = x.device();
      const TensorData& d = *it->second;
      x.set(V::from_data(d.dtype() == want ? d : d.convert(want), dev));
    } else {
      want = x.val().dtype();
      Device dev = x.val().device();
      const TensorData& d = *it->second;
      x.set(V::from_data(d.dtype() == want ? d : d.convert(want), dev));
    }
  };
  for_each_param(m, assign);
  for_each_buffer(m, assign);
  return r;
}

/// Saves the module atomically (temporary file, flush, rename) with metadata:
/// `ember.version`, `ember.module` (its type), `ember.precision` and the caller's entries.
template <Module M>
void save_module(const M& m, const std::filesystem::path& path, const SaveOptions& opt = {}) {
  std::map<std::string, std::string> meta = opt.metadata;
  meta["ember.version"] = std::string(kVersion);
  meta["ember.module"] = std::string(M::module_name());
  meta["ember.precision"] = opt.precision == Precision::Full  ? "full"
                            : opt.precision == Precision::F16 ? "f16"
                                                              : "bf16";
  record::save_safetensors(path, to_record(m, opt.precision), meta);
}

/// Loads a file saved by save_module (or any safetensors file with matching names).
template <Module M>
LoadReport load_module(M& m, const std::filesystem::path& path, LoadMode mode = LoadMode::Strict) {
  auto file = record::load_safetensors(path);
  try {
    return apply_record(m, file.tensors, mode);
  } catch (const ValueError& e) {
    throw ValueError(std::string(e.what()) + "(file " + path.string() + ")");
  }
}

inline std::string LoadReport::to_string() const {
  std::string s;
  auto list = [&](const char* what, const std::vector<std::string>& v) {
    if (v.empty()) return;
    s += std::string("  ") + what + " (" + std::to_string(v.size()) + "):\n";
    for (const auto& x : v) s += "    " + x + "\n";
  };
  list("missing from the record", missing);
  list("not in the module", unused);
  list("mismatched", mismatched);
  if (s.empty()) s = "  all " + std::to_string(applied.size()) + " tensors match\n";
  return s;
}

}  // namespace ember::nn
