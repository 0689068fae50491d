#include "ember/nn/record.h"

#include <unordered_map>

namespace ember::nn {

namespace {
DType storage_dtype(DType t, Precision p) {
  if (!is_float(t) || p == Precision::Full) return t;
  return p == Precision::F16 ? DType::F16 : DType::BF16;
}
}  // namespace

record::NamedTensors to_record(const std::vector<Slot>& slots, Precision p) {
  record::NamedTensors out;
  for (const Slot& s : slots) {
    if (s.empty()) continue;
    TensorData d = s.to_data();
    DType t = storage_dtype(d.dtype(), p);
    out.emplace_back(s.path(), t == d.dtype() ? std::move(d) : d.convert(t));
  }
  return out;
}

namespace detail {
RecordPlan plan_record(const std::vector<Slot>& slots, const record::NamedTensors& tensors) {
  std::unordered_map<std::string, const TensorData*> by_name;
  for (const auto& [n, d] : tensors) by_name.emplace(n, &d);
  RecordPlan plan;
  LoadReport& r = plan.report;
  std::unordered_map<std::string, bool> seen;
  for (const Slot& s : slots) {
    if (s.empty()) continue;  // an empty parameter or buffer is not saved either
    auto it = by_name.find(s.path());
    if (it == by_name.end()) {
      r.missing.push_back(s.path());
      continue;
    }
    seen[s.path()] = true;
    const TensorData& d = *it->second;
    const DType want = s.dtype();
    if (d.shape() != s.shape()) {
      r.mismatched.push_back(s.path() + ": shape " + d.shape().to_string() + " in the record, " +
                             s.shape().to_string() + " in the module");
      continue;
    }
    if (is_float(d.dtype()) != is_float(want) ||
        (want == DType::Bool) != (d.dtype() == DType::Bool)) {
      r.mismatched.push_back(s.path() + ": dtype " + std::string(name(d.dtype())) +
                             " in the record, " + std::string(name(want)) + " in the module");
      continue;
    }
    r.applied.push_back(s.path());
    plan.assign.emplace_back(&s, &d);
  }
  for (const auto& [n, d] : tensors)
    if (!seen.count(n)) r.unused.push_back(n);
  return plan;
}
}  // namespace detail

LoadReport apply_record(const std::vector<Slot>& slots, const record::NamedTensors& tensors,
                        LoadMode mode) {
  // First everything is checked; only then (if allowed) assigned.
  auto plan = detail::plan_record(slots, tensors);
  if (mode == LoadMode::Strict && !plan.report.complete())
    throw ValueError("[load] the record does not match the module:\n" + plan.report.to_string());
  for (const auto& [s, d] : plan.assign) s->set_data(*d);
  return plan.report;
}

void save_module(const std::vector<Slot>& slots, std::string_view module,
                 const std::filesystem::path& path, const SaveOptions& opt) {
  std::map<std::string, std::string> meta = opt.metadata;
  meta["ember.version"] = std::string(kVersion);
  meta["ember.module"] = std::string(module);
  meta["ember.precision"] = opt.precision == Precision::Full  ? "full"
                            : opt.precision == Precision::F16 ? "f16"
                                                              : "bf16";
  record::save_safetensors(path, to_record(slots, opt.precision), meta);
}

LoadReport load_module(const std::vector<Slot>& slots, const std::filesystem::path& path,
                       LoadMode mode) {
  auto file = record::load_tensor_file(path);
  try {
    return apply_record(slots, file.tensors, mode);
  } catch (const ValueError& e) {
    throw ValueError(std::string(e.what()) + "(file " + path.string() + ")");
  }
}

std::string LoadReport::to_string() const {
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
  list("skipped on purpose", skipped);
  return s;
}

}  // namespace ember::nn
