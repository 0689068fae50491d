#include "ember/record/pytorch.h"

#include <cstring>
#include <set>
#include <unordered_map>

#include "ember/record/mapped_file.h"
#include "ember/record/pickle.h"
#include "ember/record/zip.h"

namespace ember::record {

namespace {

using Kind = PickleValue::Kind;

constexpr size_t kMaxRank = 64;
constexpr uint64_t kMaxElements = uint64_t{1} << 60;
constexpr int kMaxDepth = 64;  // nesting of containers in the pickle

[[noreturn]] void bad(const std::string& what, const std::string& why) {
  throw ValueError("[pytorch] " + what + ": " + why);
}

constexpr std::pair<const char*, DType> kStorages[] = {
    {"torch.FloatStorage", DType::F32},  {"torch.DoubleStorage", DType::F64},
    {"torch.HalfStorage", DType::F16},   {"torch.BFloat16Storage", DType::BF16},
    {"torch.LongStorage", DType::I64},   {"torch.IntStorage", DType::I32},
    {"torch.ShortStorage", DType::I16},  {"torch.CharStorage", DType::I8},
    {"torch.ByteStorage", DType::U8},    {"torch.BoolStorage", DType::Bool},
    {"torch.UntypedStorage", DType::U8}, {"torch.storage.UntypedStorage", DType::U8}};

struct Storage {
  DType dtype;
  uint64_t numel = 0;  // what the persistent id claims
  std::span<const std::byte> data;
  bool found = false;
};

/// A tensor of the pickle before its bytes are read.
struct TensorRef {
  std::string name;
  std::string key;  // of its storage
  uint64_t offset;
  Dims size, stride;
};

std::string kind_name(Kind k) {
  static const char* names[] = {"None",  "bool", "int",  "int",    "float",  "str",    "bytes",
                                "tuple", "list", "dict", "global", "object", "storage"};
  return names[static_cast<int>(k)];
}

// Walks the unpickled tree: finds the tensors and their storages, flattening containers.
class Walker {
 public:
  Walker(const std::string& what, bool legacy, size_t budget)
      : what_(what), legacy_(legacy), visits_left_(budget) {}

  std::vector<TensorRef> tensors;
  std::unordered_map<std::string, Storage> storages;

  void walk(const PickleValue& v, const std::string& name, int depth) {
    if (depth > kMaxDepth) bad(what_, "containers nested deeper than " + std::to_string(kMaxDepth));
    if (visits_left_-- == 0) bad(what_, "the pickle refers to its values too many times");
    auto join = [&](const std::string& k) { return name.empty() ? k : name + "." + k; };
    switch (v.kind) {
      case Kind::Dict:
        for (size_t k = 0; k + 1 < v.items.size(); k += 2) {
          const PickleValue& key = *v.items[k];
          std::string s;
          if (key.is(Kind::String))
            s = key.str;
          else if (key.is(Kind::Int))
            s = std::to_string(key.i);
          else
            bad(what_, "'" + name + "' has a key of type " + kind_name(key.kind));
          walk(*v.items[k + 1], join(s), depth + 1);
        }
        return;
      case Kind::List:
      case Kind::Tuple:
        for (size_t k = 0; k < v.items.size(); ++k)
          walk(*v.items[k], join(std::to_string(k)), depth + 1);
        return;
      case Kind::Call:
        call(v, name, depth);
        return;
      default:
        return;  // numbers, strings, None: not tensors
    }
  }

 private:
  void call(const PickleValue& c, const std::string& name, int depth) {
    const std::string& fn = c.items[0]->str;
    const auto& args = c.items[1]->items;
    auto where = [&] { return "'" + name + "' (" + fn + ")"; };
    if (fn == "torch._utils._rebuild_tensor_v2") {
      if (args.size() != 6 && args.size() != 7) bad(what_, where() + " needs 6 or 7 arguments");
      tensor(args, name);
    } else if (fn == "torch._utils._rebuild_parameter" ||
               fn == "torch._utils._rebuild_parameter_with_state") {
      if (args.empty()) bad(what_, where() + " has no arguments");
      walk(*args[0], name, depth + 1);
    } else if (fn == "torch._tensor._rebuild_from_type_v2") {
      // (func, new_type, args, state): func(*args) with the type only changed
      if (args.size() != 4 || !args[0]->is(Kind::Global) || !args[2]->is(Kind::Tuple))
        bad(what_, where() + " needs (function, type, arguments, state)");
      PickleValue inner;
      inner.kind = Kind::Call;
      inner.items = {args[0], args[2]};
      walk(inner, name, depth + 1);
    } else {
      bad(what_, "cannot read " + where() + ": not a tensor or a container");
    }
  }

  uint64_t non_negative(const PickleValue& v, const std::string& name, const char* field) {
    if (!v.is(Kind::Int) || v.i < 0)
      bad(what_, "tensor '" + name + "': " + field + " is not a non-negative integer");
    return static_cast<uint64_t>(v.i);
  }

  Dims dims(const PickleValue& v, const std::string& name, const char* field) {
    if (!v.is(Kind::Tuple)) bad(what_, "tensor '" + name + "': " + field + " is not a tuple");
    if (v.items.size() > kMaxRank)
      bad(what_, "tensor '" + name + "': " + std::to_string(v.items.size()) + " dims, more than " +
                     std::to_string(kMaxRank));
    Dims d;
    for (const PickleValue* x : v.items)
      d.push_back(static_cast<int64_t>(non_negative(*x, name, field)));
    return d;
  }

  void tensor(const std::vector<const PickleValue*>& args, const std::string& name) {
    if (!args[0]->is(Kind::Persistent)) bad(what_, "tensor '" + name + "' has no storage");
    TensorRef t{name, storage(*args[0]->items[0], name), non_negative(*args[1], name, "offset"),
                dims(*args[2], name, "size"), dims(*args[3], name, "stride")};
    if (t.size.size() != t.stride.size())
      bad(what_, "tensor '" + name + "': " + std::to_string(t.size.size()) + " sizes but " +
                     std::to_string(t.stride.size()) + " strides");
    tensors.push_back(std::move(t));
  }

  // ('storage', storage type, key, location, numel) and, in the legacy format, view metadata.
  std::string storage(const PickleValue& pid, const std::string& name) {
    const auto& p = pid.items;
    const size_t n = legacy_ ? 6 : 5;
    if (!pid.is(Kind::Tuple) || p.size() != n || !p[0]->is(Kind::String) ||
        p[0]->str != "storage" || !p[1]->is(Kind::Global) || !p[2]->is(Kind::String))
      bad(what_, "tensor '" + name + "': its storage is not ('storage', type, key, location, " +
                     "size" + (legacy_ ? ", view)" : ")"));
    if (legacy_ && !p[5]->is(Kind::None))
      bad(what_, "tensor '" + name + "': storage views (PyTorch before 0.4) are not supported");
    const std::string& type = p[1]->str;
    const DType* dt = nullptr;
    for (const auto& [s, d] : kStorages)
      if (type == s) dt = &d;
    if (!dt) bad(what_, "tensor '" + name + "': storage type " + type + " is not supported");
    Storage s{*dt, non_negative(*p[4], name, "storage size"), {}, false};
    auto [it, fresh] = storages.emplace(p[2]->str, s);
    if (!fresh && (it->second.dtype != s.dtype || it->second.numel != s.numel))
      bad(what_, "storage '" + p[2]->str + "' is declared twice with different types or sizes");
    return p[2]->str;
  }

  const std::string& what_;
  bool legacy_;
  size_t visits_left_;
};

bool is_bool_bytes(std::span<const std::byte> b) {
  for (std::byte x : b)
    if (static_cast<uint8_t>(x) > 1) return false;
  return true;
}

// Copies a (possibly strided) view of its storage into a contiguous TensorData.
NamedTensors materialize(const Walker& w, const std::string& what, size_t budget) {
  NamedTensors out;
  std::set<std::string> names;
  for (const TensorRef& t : w.tensors) {
    const Storage& s = w.storages.at(t.key);
    const std::string where = "tensor '" + t.name + "'";
    if (!names.insert(t.name).second) bad(what, where + " appears twice");
    const size_t es = static_cast<size_t>(size_of(s.dtype));
    uint64_t numel = 1;
    unsigned __int128 last = t.offset;  // the highest element index the view reaches
    for (size_t d = 0; d < t.size.size(); ++d) {
      const uint64_t n = static_cast<uint64_t>(t.size[d]);
      if (n == 0) {
        numel = 0;
        break;
      }
      if (numel > kMaxElements / n) bad(what, where + " has more than 2^60 elements");
      numel *= n;
      last += static_cast<unsigned __int128>(n - 1) * static_cast<uint64_t>(t.stride[d]);
    }
    if (t.offset > s.numel || (numel > 0 && last >= s.numel))
      bad(what, where + ": offset " + std::to_string(t.offset) + ", size " +
                    Shape(t.size).to_string() + " and stride " + Shape(t.stride).to_string() +
                    " reach past its storage of " + std::to_string(s.numel) + " elements");
    if (numel > budget / es)
      bad(what, where + ": " + std::to_string(numel) + " elements are more than the file can hold");
    budget -= numel * es;
    auto out_data = TensorData::uninitialized(Shape(t.size), s.dtype);
    std::span<std::byte> bytes = out_data.bytes();
    const int rank = static_cast<int>(t.size.size());
    if (numel > 0) {
      // Odometer over all dims but the last; the last is a run (contiguous or strided).
      Dims idx;
      idx.resize(static_cast<size_t>(rank), 0);
      const uint64_t inner = rank ? static_cast<uint64_t>(t.size[rank - 1]) : 1;
      const uint64_t inner_stride = rank ? static_cast<uint64_t>(t.stride[rank - 1]) : 1;
      const std::byte* src = s.data.data();
      std::byte* dst = bytes.data();
      while (true) {
        uint64_t base = t.offset;
        for (int d = 0; d + 1 < rank; ++d)
          base += static_cast<uint64_t>(idx[d]) * static_cast<uint64_t>(t.stride[d]);
        if (inner_stride == 1) {
          std::memcpy(dst, src + base * es, inner * es);
        } else {
          for (uint64_t k = 0; k < inner; ++k)
            std::memcpy(dst + k * es, src + (base + k * inner_stride) * es, es);
        }
        dst += inner * es;
        int d = rank - 2;
        for (; d >= 0; --d) {
          if (++idx[d] < t.size[d]) break;
          idx[d] = 0;
        }
        if (d < 0) break;
      }
    }
    if (s.dtype == DType::Bool && !is_bool_bytes(bytes))
      bad(what, where + " holds a bool byte that is not 0 or 1");
    out.emplace_back(t.name, std::move(out_data));
  }
  return out;
}

// The bytes a file of n bytes may expand to (views with stride 0 repeat elements).
size_t output_budget(size_t n) { return n * 8 + (size_t{64} << 20); }

void check_storage_sizes(Walker& w, const std::string& what) {
  for (auto& [key, s] : w.storages) {
    if (!s.found) bad(what, "storage '" + key + "' is missing");
    const uint64_t es = static_cast<uint64_t>(size_of(s.dtype));
    if (s.numel > s.data.size() / es)
      bad(what, "storage '" + key + "' of " + std::to_string(s.numel) + " " +
                    std::string(name(s.dtype)) + " elements has only " +
                    std::to_string(s.data.size()) + " bytes");
  }
}

NamedTensors parse_zip(std::span<const std::byte> bytes, const std::string& what) {
  auto entries = detail::read_zip(bytes, what);
  // NAME/data.pkl; the folder's name is whatever the file was first saved as.
  const detail::ZipEntry* pkl = nullptr;
  std::string prefix;
  for (const auto& e : entries) {
    const std::string tail = "data.pkl";
    if (e.name.size() < tail.size() ||
        e.name.compare(e.name.size() - tail.size(), tail.size(), tail))
      continue;
    std::string p = e.name.substr(0, e.name.size() - tail.size());
    if (!p.empty() && (p.back() != '/' || p.find('/') != p.size() - 1)) continue;
    if (pkl) bad(what, "two data.pkl entries ('" + pkl->name + "', '" + e.name + "')");
    pkl = &e;
    prefix = std::move(p);
  }
  if (!pkl) bad(what, "a zip archive without a data.pkl entry (not written by torch.save)");
  std::unordered_map<std::string, std::span<const std::byte>> by_name;
  for (const auto& e : entries) by_name.emplace(e.name, e.data);
  if (auto it = by_name.find(prefix + "byteorder"); it != by_name.end()) {
    std::string order(reinterpret_cast<const char*>(it->second.data()), it->second.size());
    if (order != "little") bad(what, "byte order '" + order + "' is not supported");
  }
  Pickle p = parse_pickle(pkl->data, what + " " + pkl->name);
  Walker w(what, false, p.node_count() * 4 + 1024);
  w.walk(p.root(), "", 0);
  for (auto& [key, s] : w.storages) {
    auto it = by_name.find(prefix + "data/" + key);
    if (it == by_name.end()) bad(what, "no entry " + prefix + "data/" + key + " for a storage");
    s.data = it->second;
    s.found = true;
  }
  check_storage_sizes(w, what);
  return materialize(w, what, output_budget(bytes.size()));
}

NamedTensors parse_legacy(std::span<const std::byte> bytes, const std::string& what) {
  size_t at = 0;
  auto next = [&](const char* part) {
    Pickle p = parse_pickle(bytes.subspan(at),
                            what + " (" + part + " at byte " + std::to_string(at) + ")");
    at += p.consumed();
    return p;
  };
  {
    // 0x1950a86a20f9469cfc6c, little endian
    static const uint8_t magic[] = {0x6c, 0xfc, 0x9c, 0x46, 0xf9, 0x20, 0x6a, 0xa8, 0x50, 0x19};
    Pickle m = next("magic number");
    if (!m.root().is(Kind::BigInt) || m.root().str.size() != sizeof magic ||
        std::memcmp(m.root().str.data(), magic, sizeof magic) != 0)
      bad(what, "not a PyTorch file (wrong magic number)");
  }
  {
    Pickle v = next("protocol version");
    if (!v.root().is(Kind::Int) || v.root().i != 1001)
      bad(what, "legacy protocol version is not 1001");
  }
  {
    Pickle info = next("system info");
    const PickleValue* le = info.root().get("little_endian");
    if (!le || !le->is(Kind::Bool) || !le->b) bad(what, "written on a big-endian machine");
  }
  Pickle main = next("main pickle");
  Walker w(what, true, main.node_count() * 4 + 1024);
  w.walk(main.root(), "", 0);
  Pickle keys = next("storage keys");
  if (!keys.root().is(Kind::List)) bad(what, "the storage keys are not a list");
  for (const PickleValue* k : keys.root().items) {
    if (!k->is(Kind::String)) bad(what, "a storage key is not a string");
    auto it = w.storages.find(k->str);
    if (it == w.storages.end()) bad(what, "storage '" + k->str + "' is not used by any tensor");
    Storage& s = it->second;
    if (s.found) bad(what, "storage '" + k->str + "' is listed twice");
    if (bytes.size() - at < 8) bad(what, "truncated before storage '" + k->str + "'");
    uint64_t n = 0;
    for (int b = 0; b < 8; ++b) n |= uint64_t{static_cast<uint8_t>(bytes[at + b])} << (8 * b);
    at += 8;
    const uint64_t es = static_cast<uint64_t>(size_of(s.dtype));
    if (n > (bytes.size() - at) / es)
      bad(what, "storage '" + k->str + "' of " + std::to_string(n) +
                    " elements runs past the end of the file");
    if (n != s.numel)
      bad(what, "storage '" + k->str + "' has " + std::to_string(n) + " elements, its tensors " +
                    std::to_string(s.numel));
    s.data = bytes.subspan(at, static_cast<size_t>(n * es));
    s.found = true;
    at += static_cast<size_t>(n * es);
  }
  check_storage_sizes(w, what);
  return materialize(w, what, output_budget(bytes.size()));
}

}  // namespace

std::optional<TensorFileFormat> detect_format(std::span<const std::byte> h) {
  auto at = [&](size_t k) { return static_cast<uint8_t>(h[k]); };
  if (h.size() >= 4 && at(0) == 'P' && at(1) == 'K' &&
      ((at(2) == 3 && at(3) == 4) || (at(2) == 5 && at(3) == 6)))
    return TensorFileFormat::PytorchZip;
  if (h.size() >= 3 && at(0) == 0x80 && at(1) >= 2 && at(1) <= 5 && at(2) == 0x8a)
    return TensorFileFormat::PytorchLegacy;
  if (h.size() >= 9 && at(8) == '{') return TensorFileFormat::Safetensors;  // JSON header
  return std::nullopt;
}

NamedTensors parse_pytorch(std::span<const std::byte> bytes, const std::string& what) {
  auto f = detect_format(bytes.first(std::min<size_t>(bytes.size(), 16)));
  if (f == TensorFileFormat::PytorchZip) return parse_zip(bytes, what);
  if (f == TensorFileFormat::PytorchLegacy) return parse_legacy(bytes, what);
  bad(what, "not a PyTorch file (neither a zip archive nor a legacy pickle stream)");
}

NamedTensors load_pytorch(const std::filesystem::path& path) {
  detail::MappedFile f(path, "pytorch");
  return parse_pytorch(f.bytes(), path.string());
}

TensorFile parse_tensor_file(std::span<const std::byte> bytes, const std::string& what) {
  auto f = detect_format(bytes);
  if (!f) throw ValueError("[record] " + what + ": not a safetensors or PyTorch file");
  TensorFile out;
  out.format = *f;
  if (*f == TensorFileFormat::Safetensors) {
    auto st = parse_safetensors(bytes, what);
    out.tensors = std::move(st.tensors);
    out.metadata = std::move(st.metadata);
  } else {
    out.tensors = parse_pytorch(bytes, what);
  }
  return out;
}

TensorFile load_tensor_file(const std::filesystem::path& path) {
  detail::MappedFile f(path, "record");
  return parse_tensor_file(f.bytes(), path.string());
}

}  // namespace ember::record
