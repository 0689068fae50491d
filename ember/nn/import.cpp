// Records from elsewhere: renames, the PyTorch adapters (names and layouts by layer type) and
// the load of the result through plan_record (ember/nn/record.cpp).
#include <cstring>
#include <regex>
#include <set>
#include <unordered_map>

#include "ember/nn/record.h"

namespace ember::nn {

namespace {

[[noreturn]] void bad(const std::string& why) { throw ValueError("[import] " + why); }

/// A 2-d tensor transposed: PyTorch's [out, in] weights to ember's [in, out].
TensorData transpose2d(const TensorData& d) {
  const int64_t r = d.shape()[0], c = d.shape()[1];
  const size_t es = static_cast<size_t>(size_of(d.dtype()));
  auto out = TensorData::uninitialized(Shape{c, r}, d.dtype());
  const std::byte* src = d.bytes().data();
  std::byte* dst = out.bytes().data();
  for (int64_t i = 0; i < r; ++i)
    for (int64_t j = 0; j < c; ++j)
      std::memcpy(dst + static_cast<size_t>(j * r + i) * es,
                  src + static_cast<size_t>(i * c + j) * es, es);
  return out;
}

/// Rows [k * n / parts, (k + 1) * n / parts) of the first dim.
TensorData chunk(const TensorData& d, int k, int parts) {
  Dims dims = d.shape().dims();
  dims[0] /= parts;
  const size_t bytes = d.bytes().size() / static_cast<size_t>(parts);
  return TensorData(d.bytes().subspan(bytes * static_cast<size_t>(k), bytes), Shape(dims),
                    d.dtype());
}

struct Adapted {
  std::string path;
  TensorData data;
  std::string origin;  // the record's name
};

std::string join(const std::string& a, const std::string& b) { return a.empty() ? b : a + "." + b; }

bool is_norm(const std::string& t) {
  return t == "BatchNorm" || t == "LayerNorm" || t == "GroupNorm" || t == "RmsNorm";
}
bool is_recurrent(const std::string& t) { return t == "Lstm" || t == "Gru" || t == "Rnn"; }

// Maps one PyTorch name onto the module, walking the record's name and the module's tree
// together so that each adapter sees the type of the layer the name belongs to.
class PytorchAdapter {
 public:
  explicit PytorchAdapter(const ModuleTypes& types) {
    for (const auto& [p, t] : types) types_.emplace(p, t);
  }

  /// The tensors for the module (none when skipped), from one of the record's tensors.
  std::vector<std::pair<std::string, TensorData>> adapt(const std::string& name,
                                                        const TensorData& d) const {
    std::vector<std::string> tok;
    for (size_t a = 0;;) {
      size_t b = name.find('.', a);
      tok.push_back(name.substr(a, b == std::string::npos ? b : b - a));
      if (b == std::string::npos) break;
      a = b + 1;
    }
    std::string path;
    size_t i = 0;
    while (i < tok.size()) {
      auto it = types_.find(path);
      if (it == types_.end()) break;  // past the module's layers (or no types given)
      const std::string& type = it->second;
      const size_t left = tok.size() - i;
      if (left == 1)
        if (auto leaf = this->leaf(type, path, tok[i], d)) return *leaf;
      if (type == "MultiHeadAttention" && left == 2 && tok[i] == "out_proj") tok[i] = "output";
      if ((type == "TransformerEncoderLayer" || type == "TransformerDecoderLayer") &&
          (tok[i] == "linear1" || tok[i] == "linear2") && !types_.count(join(path, tok[i]))) {
        path = join(path, "ff");
        continue;
      }
      if (type == "TransformerDecoderLayer" && tok[i] == "multihead_attn") tok[i] = "cross_attn";
      path = join(path, tok[i++]);
    }
    for (; i < tok.size(); ++i) path = join(path, tok[i]);
    return {{path, d}};
  }

 private:
  using Out = std::optional<std::vector<std::pair<std::string, TensorData>>>;

  Out leaf(const std::string& type, const std::string& path, const std::string& t,
           const TensorData& d) const {
    using V = std::vector<std::pair<std::string, TensorData>>;
    const bool matrix = d.shape().rank() == 2;
    if (type == "Linear" && t == "weight" && matrix) return V{{join(path, t), transpose2d(d)}};
    if (is_norm(type)) {
      if (t == "weight") return V{{join(path, "gamma"), d}};
      if (t == "bias") return V{{join(path, "beta"), d}};
      if (t == "num_batches_tracked") return V{};
    }
    if (is_recurrent(type)) {
      static const std::regex re("(weight|bias)_(ih|hh)_l([0-9]+)(_reverse)?");
      std::smatch m;
      if (std::regex_match(t, m, re)) {
        std::string p = join(path, "layers." + m[3].str() + (m[4].matched ? ".rev." : ".fwd.") +
                                       m[2].str() + "." + m[1].str());
        if (m[1] == "weight" && matrix) return V{{p, transpose2d(d)}};
        return V{{p, d}};
      }
    }
    if (type == "MultiHeadAttention") {
      static const char* qkv[] = {"query", "key", "value"};
      const bool split = d.shape().rank() >= 1 && d.shape()[0] % 3 == 0;
      if ((t == "in_proj_weight" && matrix && split) ||
          (t == "in_proj_bias" && d.shape().rank() == 1 && split)) {
        V out;
        for (int k = 0; k < 3; ++k) {
          TensorData c = chunk(d, k, 3);
          out.emplace_back(join(path, std::string(qkv[k]) + (matrix ? ".weight" : ".bias")),
                           matrix ? transpose2d(c) : std::move(c));
        }
        return out;
      }
      for (int k = 0; k < 3; ++k)
        if (t == std::string(1, "qkv"[k]) + "_proj_weight" && matrix)
          return V{{join(path, std::string(qkv[k]) + ".weight"), transpose2d(d)}};
    }
    return std::nullopt;
  }

  std::unordered_map<std::string, std::string> types_;
};

}  // namespace

LoadReport apply_record(const std::vector<Slot>& slots, const ModuleTypes& types,
                        const record::NamedTensors& tensors, const ImportOptions& opt,
                        bool pytorch) {
  std::vector<std::pair<std::regex, std::string>> remaps;
  for (const KeyRemap& r : opt.remap) {
    try {
      remaps.emplace_back(std::regex(r.pattern), r.replacement);
    } catch (const std::regex_error& e) {
      bad("remap pattern '" + r.pattern + "' is not a valid regular expression: " + e.what());
    }
  }
  if (opt.layout == RecordLayout::Ember) pytorch = false;
  if (opt.layout == RecordLayout::Pytorch) pytorch = true;
  const PytorchAdapter adapter(types);
  std::vector<Adapted> adapted;
  LoadReport skipped;
  for (const auto& [origin, data] : tensors) {
    std::string name = origin;
    for (const auto& [re, to] : remaps) name = std::regex_replace(name, re, to);
    if (name.empty()) {
      skipped.skipped.push_back(origin);
      continue;
    }
    auto out = pytorch ? adapter.adapt(name, data)
                       : std::vector<std::pair<std::string, TensorData>>{{name, data}};
    if (out.empty()) skipped.skipped.push_back(origin);
    for (auto& [p, d] : out) {
      if (opt.transpose && d.shape().rank() == 2 && opt.transpose(p, d.shape())) d = transpose2d(d);
      adapted.push_back({std::move(p), std::move(d), origin});
    }
  }
  record::NamedTensors named;
  std::unordered_map<std::string, const std::string*> origin_of;
  for (Adapted& a : adapted) {
    auto [it, fresh] = origin_of.emplace(a.path, &a.origin);
    if (!fresh)
      bad("'" + *it->second + "' and '" + a.origin + "' of the record both map to '" + a.path +
          "'");
    named.emplace_back(a.path, std::move(a.data));
  }
  auto plan = detail::plan_record(slots, named);
  LoadReport& r = plan.report;
  // Unused tensors by the record's own names (each once: a split one may leave three).
  std::set<std::string> listed;
  std::vector<std::string> unused;
  for (const std::string& u : r.unused) {
    const std::string& o = *origin_of.at(u);
    if (listed.insert(o).second) unused.push_back(o == u ? u : o + " (as " + u + ")");
  }
  r.unused = std::move(unused);
  for (std::string& m : r.mismatched) {
    const std::string p = m.substr(0, m.find(": "));
    if (auto it = origin_of.find(p); it != origin_of.end() && *it->second != p)
      m += " (from '" + *it->second + "')";
  }
  r.skipped = std::move(skipped.skipped);
  if (opt.mode == LoadMode::Strict && !r.complete())
    throw ValueError("[load] the record does not match the module:\n" + r.to_string());
  for (const auto& [s, d] : plan.assign) s->set_data(*d);
  return r;
}

LoadReport load_module(const std::vector<Slot>& slots, const ModuleTypes& types,
                       const std::filesystem::path& path, const ImportOptions& opt) {
  auto file = record::load_tensor_file(path);
  const bool ember =
      file.format == record::TensorFileFormat::Safetensors && file.metadata.count("ember.version");
  try {
    return apply_record(slots, types, file.tensors, opt, !ember);
  } catch (const ValueError& e) {
    throw ValueError(std::string(e.what()) + "(file " + path.string() + ")");
  }
}

}  // namespace ember::nn
