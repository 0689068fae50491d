// What every per-parameter optimizer shares: the step loop over a module's parameters,
// parameter groups, per-parameter state, and records (state files).
//
//   auto opt = optim::AdamConfig{}.with_weight_decay(0.01).init<B>();
//   opt.set_group("encoder", {.lr_scale = 0.1, .weight_decay = 0});   // "encoder.*" params
//   auto grads = optim::GradientsParams<B>::from_grads(loss.backward(), model);
//   opt.step(1e-3, model, grads);
//   optim::save(opt, model, "adam.safetensors");       // state by parameter path
//   optim::load(opt2, model, "adam.safetensors");      // validated: one ValueError lists
//                                                       // every mismatch
//
// A step runs on the inner backend under NoGradGuard; each updated value is stored with
// Param::set, so the parameter keeps its id and becomes a fresh leaf. Frozen parameters and
// parameters without a gradient are skipped (their state and step count do not move).
//
// Records: tensors named "<parameter path>.<state>" (e.g. "fc1.weight.exp_avg"); metadata
// "<parameter path>.step" (the parameter's step count), "optimizer" (the optimizer's name),
// "format" and "config" (the config as JSON, for reference).
#pragma once
#include <algorithm>
#include <charconv>
#include <limits>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/backend/extern.h"
#include "ember/nn/config.h"
#include "ember/nn/slot.h"
#include "ember/optim/clipping.h"
#include "ember/record/safetensors.h"

namespace ember::optim {

/// An optimizer's state as named tensors and string metadata (what a safetensors file holds).
using Record = record::SafetensorsFile;

/// Settings for the parameters under one path prefix (`set_group`).
struct GroupSettings {
  double lr_scale = 1.0;               // the step's lr is multiplied by this
  std::optional<double> weight_decay;  // replaces the config's weight decay when set
};

/// One parameter's optimizer state: its step count and named tensors (same shape as the
/// parameter, on the inner backend).
template <Backend I>
class ParamState {
 public:
  using Handle = typename I::Handle;
  int64_t step = 0;

  template <int D>
  std::optional<Tensor<I, D>> get(std::string_view name) const {
    for (const auto& [n, h] : tensors_)
      if (n == name) return Tensor<I, D>(h);
    return std::nullopt;
  }
  template <int D>
  void set(std::string_view name, const Tensor<I, D>& t) {
    set_handle(std::string(name), t.handle());
  }
  void set_handle(std::string name, Handle h) {
    for (auto& [n, v] : tensors_)
      if (n == name) {
        v = std::move(h);
        return;
      }
    tensors_.emplace_back(std::move(name), std::move(h));
  }
  bool has(std::string_view name) const {
    for (const auto& [n, h] : tensors_)
      if (n == name) return true;
    return false;
  }
  const std::vector<std::pair<std::string, Handle>>& tensors() const { return tensors_; }

 private:
  std::vector<std::pair<std::string, Handle>> tensors_;
};

/// What an optimizer's update sees for one parameter besides its tensors.
struct ParamContext {
  double lr;            // the step's lr times the group's lr_scale
  double weight_decay;  // the group's, else the config's
  std::string_view path;
};

namespace detail {
/// Whether `path` is `prefix` or below it ("enc" matches "enc.w", not "encoder.w").
inline bool under_prefix(std::string_view path, std::string_view prefix) {
  return prefix.empty() || path == prefix ||
         (path.size() > prefix.size() && path.starts_with(prefix) && path[prefix.size()] == '.');
}
/// The shortest text that reads back as exactly `v`.
inline std::string format_double(double v) {
  char buf[64];
  auto r = std::to_chars(buf, buf + sizeof buf, v);
  return std::string(buf, r.ptr);
}
inline std::optional<double> parse_double(std::string_view s) {
  double v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}
inline std::optional<int64_t> parse_int(std::string_view s) {
  int64_t v = 0;
  auto r = std::from_chars(s.data(), s.data() + s.size(), v);
  if (r.ec != std::errc() || r.ptr != s.data() + s.size()) return std::nullopt;
  return v;
}
inline std::string join_problems(const std::vector<std::string>& p) {
  std::string s;
  for (const auto& x : p) s += "\n  " + x;
  return s;
}
/// Facts about one parameter of a module, for loading records.
struct ParamInfo {
  nn::ParamId id;
  Shape shape;
  DType dtype;
  Device device;
  bool is_float;
};
/// The parameters among `slots`, by path.
inline std::map<std::string, ParamInfo> param_infos(const std::vector<nn::Slot>& slots) {
  std::map<std::string, ParamInfo> out;
  for (const nn::Slot& p : slots) {
    if (!p.is_param() || p.empty()) continue;
    out.emplace(p.path(), ParamInfo{p.id(), p.shape(), p.dtype(), p.device(), p.float_kind()});
  }
  return out;
}
inline void check_lr(const char* who, double lr) {
  if (!(lr >= 0) || lr == std::numeric_limits<double>::infinity())
    throw ValueError(std::string("[") + who + "] the learning rate must be finite and >= 0, got " +
                     std::to_string(lr));
}
}  // namespace detail

/// The base of per-parameter optimizers (CRTP). Derived provides `kName`, `config()` (with
/// `weight_decay` and `grad_clipping` fields), `slots(shape, path)` (the state tensor names
/// a parameter has once stepped) and `update<D>(value, grad, state, context)` returning the
/// new value.
template <class Derived, Backend B>
class Optimizer {
  static_assert(AutodiffBackend<B>, "optimizers step modules on an Autodiff backend");

 public:
  using Inner = typename B::Inner;

  /// Parameters whose path is `prefix` or under it use `s` (the longest matching prefix
  /// wins; set_group with the same prefix replaces the settings).
  Derived& set_group(std::string prefix, GroupSettings s) {
    if (!(s.lr_scale >= 0))
      throw ValueError("[" + std::string(Derived::kName) + "] group '" + prefix +
                       "': lr_scale must be >= 0");
    for (auto& [p, g] : groups_)
      if (p == prefix) {
        g = s;
        return self();
      }
    groups_.emplace_back(std::move(prefix), s);
    return self();
  }
  /// The settings that apply to the parameter at `path`.
  GroupSettings group_for(std::string_view path) const {
    const GroupSettings* best = nullptr;
    size_t best_len = 0;
    for (const auto& [p, g] : groups_)
      if (detail::under_prefix(path, p) && (!best || p.size() >= best_len)) {
        best = &g;
        best_len = p.size();
      }
    return best ? *best : GroupSettings{};
  }

  /// One update of every trainable parameter of `model` that has a gradient in `grads`.
  /// Clips `grads` in place first when the config asks for it.
  template <nn::Module M>
  void step(double lr, M& model, GradientsParams<B>& grads) {
    step(lr, nn::slots<B>(model), grads);
  }
  /// The same over a module's slots (nn::slots): compiled once per optimizer, not per model.
  void step(double lr, const std::vector<nn::Slot>& params, GradientsParams<B>& grads);

  /// The state of every parameter of `model` that has some, keyed by path.
  template <nn::Module M>
  Record to_record(const M& model) const {
    return to_record(nn::slots<B>(model));
  }
  Record to_record(const std::vector<nn::Slot>& params) const;

  /// Replaces the state with a record's, after checking that it is this optimizer's and
  /// that every entry names a parameter of `model` with the right shape and dtype. Every
  /// problem found is listed in one ValueError; on error the state is unchanged.
  template <nn::Module M>
  void load_record(const M& model, const Record& r) {
    load_record(nn::slots<B>(model), r);
  }
  void load_record(const std::vector<nn::Slot>& params, const Record& r);

  /// Forgets all state (the next step starts like the first).
  void reset() { state_.clear(); }
  /// The state of one parameter (null when it was never stepped).
  const ParamState<Inner>* state(nn::ParamId id) const {
    auto it = state_.find(id);
    return it == state_.end() ? nullptr : &it->second;
  }

 protected:
  Derived& self() { return static_cast<Derived&>(*this); }
  const Derived& self() const { return static_cast<const Derived&>(*this); }

  std::map<nn::ParamId, ParamState<Inner>> state_;
  std::vector<std::pair<std::string, GroupSettings>> groups_;
};

// ---- the members that work on slots (explicitly instantiated for the library's stacks) -----

template <class Derived, Backend B>
void Optimizer<Derived, B>::step(double lr, const std::vector<nn::Slot>& params,
                                 GradientsParams<B>& grads) {
  detail::check_lr(Derived::kName, lr);
  self().config().grad_clipping.apply(grads);
  autodiff::NoGradGuard no_grad;
  for (const nn::Slot& p : params) {
    if (!p.is_param() || !p.float_kind() || p.empty() || !p.trainable()) continue;
    nn::visit_rank(p.rank(), [&]<int D>() {
      auto g = grads.template get<D>(p.id());
      if (!g) return;
      GroupSettings gs = group_for(p.path());
      ParamContext ctx{lr * gs.lr_scale, gs.weight_decay.value_or(self().config().weight_decay),
                       p.path()};
      ParamState<Inner>& st = state_[p.id()];
      ++st.step;
      Tensor<Inner, D> next =
          self().template update<D>(Tensor<B, D>(p.handle<B>()).inner(), *g, st, ctx);
      p.set_handle<B>(Tensor<B, D>::from_inner(next).handle());
    });
  }
}

template <class Derived, Backend B>
Record Optimizer<Derived, B>::to_record(const std::vector<nn::Slot>& params) const {
  Record r;
  r.metadata["format"] = "ember.optim";
  r.metadata["optimizer"] = Derived::kName;
  r.metadata["config"] = nn::config_json(self().config());
  for (const nn::Slot& p : params) {
    if (!p.is_param() || p.empty()) continue;
    auto it = state_.find(p.id());
    if (it == state_.end()) continue;
    r.metadata[p.path() + ".step"] = std::to_string(it->second.step);
    for (const auto& [name, h] : it->second.tensors())
      r.tensors.emplace_back(p.path() + "." + name, Inner::to_data(h));
  }
  return r;
}

template <class Derived, Backend B>
void Optimizer<Derived, B>::load_record(const std::vector<nn::Slot>& params, const Record& r) {
  const std::string who = std::string("[") + Derived::kName + "] cannot load the record:";
  std::vector<std::string> problems;
  auto meta = [&](const std::string& k) -> const std::string* {
    auto it = r.metadata.find(k);
    return it == r.metadata.end() ? nullptr : &it->second;
  };
  if (const std::string* o = meta("optimizer"); !o || *o != Derived::kName)
    problems.push_back("it is a record of optimizer '" + (o ? *o : std::string("?")) + "', not '" +
                       Derived::kName + "'");
  auto infos = detail::param_infos(params);
  std::map<std::string, ParamState<Inner>> loaded;
  for (const auto& [key, value] : r.metadata) {
    if (key == "format" || key == "optimizer" || key == "config") continue;
    if (!key.ends_with(".step")) {
      problems.push_back("unknown metadata key '" + key + "'");
      continue;
    }
    std::string path = key.substr(0, key.size() - 5);
    if (!infos.count(path)) {
      problems.push_back("'" + key + "': the model has no parameter '" + path + "'");
      continue;
    }
    auto n = detail::parse_int(value);
    if (!n || *n < 0) {
      problems.push_back("'" + key + "': bad step count '" + value + "'");
      continue;
    }
    loaded[path].step = *n;
  }
  for (const auto& [name, data] : r.tensors) {
    auto dot = name.rfind('.');
    std::string path = dot == std::string::npos ? name : name.substr(0, dot);
    std::string slot = dot == std::string::npos ? std::string() : name.substr(dot + 1);
    auto it = infos.find(path);
    if (dot == std::string::npos || it == infos.end()) {
      problems.push_back("'" + name + "': the model has no parameter '" + path + "'");
      continue;
    }
    const detail::ParamInfo& info = it->second;
    auto slots = self().slots(info.shape, path);
    if (std::find(slots.begin(), slots.end(), slot) == slots.end()) {
      problems.push_back("'" + name + "': " + Derived::kName + " keeps no state '" + slot +
                         "' for this parameter");
      continue;
    }
    if (data.shape() != info.shape) {
      problems.push_back("'" + name + "' has shape " + data.shape().to_string() +
                         ", the parameter " + info.shape.to_string());
      continue;
    }
    if (data.dtype() != info.dtype) {
      problems.push_back("'" + name + "' has dtype " + std::string(ember::name(data.dtype())) +
                         ", the parameter " + std::string(ember::name(info.dtype)));
      continue;
    }
    if (!r.metadata.count(path + ".step")) {
      problems.push_back("'" + name + "': no step count '" + path + ".step'");
      continue;
    }
    loaded[path].set_handle(slot, Inner::from_data(data, info.device));
  }
  for (const auto& [path, st] : loaded) {
    const detail::ParamInfo& info = infos.at(path);
    for (const std::string& slot : self().slots(info.shape, path))
      if (!st.has(slot)) problems.push_back("'" + path + "." + slot + "' is missing");
  }
  if (!problems.empty()) throw ValueError(who + detail::join_problems(problems));
  state_.clear();
  for (auto& [path, st] : loaded) state_[infos.at(path).id] = std::move(st);
}

/// Writes the optimizer's state for `model` to a safetensors file (atomically).
template <class Opt, class M>
void save(const Opt& opt, const M& model, const std::filesystem::path& path) {
  Record r = opt.to_record(model);
  record::save_safetensors(path, r.tensors, r.metadata);
}
/// Loads a state file written by save() into `opt` (validated; see load_record).
template <class Opt, class M>
void load(Opt& opt, const M& model, const std::filesystem::path& path) {
  opt.load_record(model, record::load_safetensors(path));
}

}  // namespace ember::optim
