// Parameters and records of the freestanding build. A module's parameters are declared with
// their shapes by its config's init (like the host's lazy parameters) and bound in place to
// constant arrays in flash by load_module: nothing is copied to RAM. The arrays and the
// Record that names them are generated from a host safetensors record by
// tools/micro_weights.py, so the names are the host's parameter paths ("fc1.weight").
//
//   #include "mlp_weights.h"                       // generated: const float arrays + Record
//   auto model = mnist::Mlp<Micro>::init(Micro::default_device());
//   ember::micro::nn::load_module(model, mlp_weights::record);   // strict: names and shapes
//
// Strict loading fails through the error handler on the first parameter that the record
// lacks or whose shape differs, and on a record tensor the module does not have.
#pragma once
#include <cstring>
#include <optional>
#include <string_view>
#include <type_traits>

#include "ember/micro/tensor.h"
#include "ember/nn/module_macro.h"

namespace ember::micro {

/// One named constant tensor of a record (generated code fills these).
struct RecordEntry {
  const char* name;
  int rank;
  int64_t dims[6];
  const float* data;                // float32 values; null when the tensor is int8
  const int8_t* q8 = nullptr;       // int8 values (tools/micro_weights.py --int8) ...
  const float* q8_scale = nullptr;  // ... times one scale per output column (the last dim)
};
/// A module's parameters as constant data, by path.
struct Record {
  const RecordEntry* entries;
  int count;
};

namespace nn {

/// A trainable value on the host; here a declared shape and, once loaded, a view of flash.
template <class T>
class Param {
 public:
  using Value = T;
  static constexpr int kRank = T::kRank;
  Param() = default;
  explicit Param(std::array<int64_t, kRank> dims) : dims_(dims) {}
  /// The value; fails when load_module has not bound it.
  const T& val() const {
    if (!bound_) fail("[param] used before load_module bound it");
    if (q8_) fail("[param] holds int8 weights, which only Linear reads");
    return value_;
  }
  /// int8 weights and their per-column scales when the record stores them so, else null.
  const int8_t* q8() const { return q8_; }
  const float* q8_scale() const { return q8_scale_; }
  const std::array<int64_t, kRank>& dims() const { return dims_; }
  int64_t dim(int i) const { return dims_[static_cast<size_t>(i)]; }
  void bind(const RecordEntry& e) {
    if (e.q8) {
      q8_ = e.q8;
      q8_scale_ = e.q8_scale;
    } else {
      value_ = T::from_const(e.data, dims_);
    }
    bound_ = true;
  }

 private:
  std::array<int64_t, kRank> dims_{};
  T value_;
  const int8_t* q8_ = nullptr;
  const float* q8_scale_ = nullptr;
  bool bound_ = false;
};

/// Running state on the host (running_mean, ...); here constant data like a parameter.
template <class T>
using Buffer = Param<T>;

/// A list of up to N submodules: the host's std::vector of layers, without a heap.
template <class T, size_t N>
class StaticVec {
 public:
  size_t size() const { return n_; }
  T& operator[](size_t i) { return items_[i]; }
  const T& operator[](size_t i) const { return items_[i]; }
  void push_back(T v) {
    if (n_ == N) fail("[static_vec] more than %d items", int(N));
    items_[n_++] = static_cast<T&&>(v);
  }
  const T* begin() const { return items_.data(); }
  const T* end() const { return items_.data() + n_; }

 private:
  std::array<T, N> items_{};
  size_t n_ = 0;
};

namespace detail {
template <class T>
struct is_static_vec : std::false_type {};
template <class T, size_t N>
struct is_static_vec<StaticVec<T, N>> : std::true_type {};
template <class T>
struct is_param : std::false_type {};
template <class T>
struct is_param<Param<T>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};
template <class T>
struct is_array : std::false_type {};
template <class T, size_t N>
struct is_array<std::array<T, N>> : std::true_type {};
template <class T>
concept Module = requires {
  T::module_name();
};

/// A parameter path ("conv1.weight") built in a fixed buffer: no heap.
struct Path {
  char s[96] = {};
  size_t n = 0;
  Path child(std::string_view name) const {
    Path p = *this;
    if (p.n && p.n + 1 < sizeof p.s) p.s[p.n++] = '.';
    for (char c : name)
      if (p.n + 1 < sizeof p.s) p.s[p.n++] = c;
    p.s[p.n] = '\0';
    return p;
  }
  Path child(size_t i) const {
    char d[12];
    int nd = 0;
    do d[nd++] = static_cast<char>('0' + i % 10);
    while ((i /= 10) != 0);
    char r[12];
    for (int k = 0; k < nd; ++k) r[k] = d[nd - 1 - k];
    return child(std::string_view(r, static_cast<size_t>(nd)));
  }
};

/// Calls fn(path, param) for each parameter under x, in declaration order.
template <class T, class Fn>
void walk(const Path& path, T& x, Fn& fn) {
  if constexpr (is_param<T>::value) {
    fn(path, x);
  } else if constexpr (Module<T>) {
    x.for_each_field([&](const char* name, auto& f) { walk(path.child(name), f, fn); });
  } else if constexpr (is_optional<T>::value) {
    if (x) walk(path, *x, fn);
  } else if constexpr (is_array<T>::value || is_static_vec<T>::value) {
    for (size_t i = 0; i < x.size(); ++i) walk(path.child(i), x[i], fn);
  }
}
}  // namespace detail

/// Calls fn(path, param) for every parameter of `m` (path: a NUL-terminated "fc1.weight").
template <class M, class Fn>
void for_each_param(M& m, Fn&& fn) {
  auto call = [&](const detail::Path& p, auto& param) { fn(static_cast<const char*>(p.s), param); };
  detail::walk(detail::Path{}, m, call);
}

/// Binds every parameter of `m` to the record's constant data of the same path (strict).
template <class M>
void load_module(M& m, const Record& r) {
  int used = 0;
  for_each_param(m, [&](const char* path, auto& p) {
    const RecordEntry* e = nullptr;
    for (int i = 0; i < r.count && !e; ++i)
      if (std::strcmp(r.entries[i].name, path) == 0) e = &r.entries[i];
    if (!e) fail("[load_module] the record has no tensor '%s'", path);
    constexpr int rank = std::remove_reference_t<decltype(p)>::kRank;
    bool same = e->rank == rank;
    for (int i = 0; same && i < rank; ++i) same = e->dims[i] == p.dims()[i];
    if (!same) {
      char a[64], b[64];
      fail("[load_module] '%s' is %s in the record, %s in the module", path,
           ember::micro::detail::format_dims(a, sizeof a, e->dims, e->rank),
           ember::micro::detail::format_dims(b, sizeof b, p.dims().data(), rank));
    }
    p.bind(*e);
    ++used;
  });
  if (used != r.count)
    fail("[load_module] the record has %d tensors, the module %d parameters", r.count, used);
}

}  // namespace nn
}  // namespace ember::micro
