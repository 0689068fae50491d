// Modules: plain struct templates over the backend whose fields are parameters (Param),
// running state (Buffer), submodules (also in std::vector, std::array, std::optional) and
// constants. One EMBER_MODULE line names the fields; everything else follows from it.
//
//   template <Backend B>
//   struct Mlp {
//     Linear<B> fc1, fc2;
//     double dropout = 0.1;                       // a constant: copied, never trained
//     EMBER_MODULE(Mlp, fc1, fc2, dropout)
//     Tensor<B, 2> forward(Tensor<B, 2> x) const { return fc2.forward(relu(fc1.forward(x))); }
//   };
//
//   nn::num_params(mlp);                      // parameters, counted without initializing them
//   nn::for_each_param(mlp, [](const std::string& path, auto& p) { /* ... */ });   // "fc1.weight"
//   auto eval = nn::valid(mlp);               // Mlp<Cpu> from Mlp<Autodiff<Cpu>>, same ids
//   auto train = nn::to_backend<Autodiff<Cpu>>(eval);
//   auto frozen = nn::freeze(mlp, "fc1");     // fc1's parameters stop training
//   std::cout << nn::summary(mlp);            // the tree with parameter counts
#pragma once
#include <array>
#include <sstream>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/nn/module_macro.h"
#include "ember/nn/param.h"

namespace ember::nn {

template <class M>
concept Module = requires(const std::remove_cvref_t<M>& m) {
  std::remove_cvref_t<M>::module_name();
};

namespace detail {
template <class T>
struct is_vector : std::false_type {};
template <class T, class A>
struct is_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_array : std::false_type {};
template <class T, size_t N>
struct is_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_optional : std::false_type {};
template <class T>
struct is_optional<std::optional<T>> : std::true_type {};

inline std::string join(const std::string& path, std::string_view name) {
  return path.empty() ? std::string(name) : path + "." + std::string(name);
}

/// Walks a field tree calling on_param(path, p) and on_buffer(path, b).
template <class T, class P, class Bf>
void walk(const std::string& path, T& x, P& on_param, Bf& on_buffer) {
  using U = std::remove_const_t<T>;
  if constexpr (ParamLike<U>) {
    on_param(path, x);
  } else if constexpr (BufferLike<U>) {
    on_buffer(path, x);
  } else if constexpr (Module<U>) {
    x.for_each_field(
        [&](const char* name, auto& f) { walk(join(path, name), f, on_param, on_buffer); });
  } else if constexpr (is_vector<U>::value || is_array<U>::value) {
    for (size_t i = 0; i < x.size(); ++i)
      walk(join(path, std::to_string(i)), x[i], on_param, on_buffer);
  } else if constexpr (is_optional<U>::value) {
    if (x) walk(path, *x, on_param, on_buffer);
  }
}
struct Ignore {
  void operator()(const std::string&, const auto&) const {}
};
}  // namespace detail

/// Calls fn(path, param) for every parameter, in declaration order. Mutable through a
/// non-const module: `for_each_param(m, [](auto&, auto& p) { p.set_trainable(false); })`.
template <class M, class Fn>
void for_each_param(M& m, Fn&& fn) {
  detail::Ignore ig;
  detail::walk(std::string(), m, fn, ig);
}
/// Calls fn(path, buffer) for every buffer (running state).
template <class M, class Fn>
void for_each_buffer(M& m, Fn&& fn) {
  detail::Ignore ig;
  detail::walk(std::string(), m, ig, fn);
}

/// The number of scalar parameters (lazy parameters are not initialized to count them).
template <Module M>
int64_t num_params(const M& m) {
  int64_t n = 0;
  for_each_param(m, [&](const std::string&, const auto& p) { n += p.numel(); });
  return n;
}

/// Paths of every parameter, in order.
template <Module M>
std::vector<std::string> param_paths(const M& m) {
  std::vector<std::string> out;
  for_each_param(m, [&](const std::string& path, const auto&) { out.push_back(path); });
  return out;
}

/// A copy with every parameter and buffer on `dev`.
template <Module M>
M to_device(M m, Device dev) {
  for_each_param(m, [&](const std::string&, auto& p) { p.to_device(dev); });
  for_each_buffer(m, [&](const std::string&, auto& b) {
    if (!b.empty()) b.set(b.val().to_device(dev));
  });
  return m;
}

namespace detail {
/// A layer's parameters and its input must have the same float type: the error names the
/// layer and both types.
template <Backend B, int D, int P>
void check_dtype(const char* layer, const Tensor<B, D>& x, const Tensor<B, P>& p) {
  if (x.dtype() != p.dtype())
    throw DTypeError(std::string("[") + layer + "] input " + x.shape().to_string() + " is " +
                     std::string(name(x.dtype())) + ", the layer's parameters are " +
                     std::string(name(p.dtype())) + " (convert the layer with nn::to_dtype)");
}
}  // namespace detail

/// A copy with every float parameter and buffer converted to `dtype` (f16, bf16, f32 or f64),
/// with the same parameter ids: a module built in f32 runs on f64 inputs after
/// `auto m64 = nn::to_dtype(m, DType::F64);`. Int and Bool tensors stay as they are.
template <Module M>
M to_dtype(M m, DType dtype) {
  if (!is_float(dtype))
    throw DTypeError("[to_dtype] " + std::string(name(dtype)) + " is not a float type");
  for_each_param(m, [&](const std::string&, auto& p) {
    using V = typename std::remove_cvref_t<decltype(p)>::Value;
    if constexpr (std::is_same_v<typename V::kind_type, Float>) p.set(p.val().cast(dtype));
  });
  for_each_buffer(m, [&](const std::string&, auto& b) {
    using V = std::remove_cvref_t<decltype(b.val())>;
    if constexpr (std::is_same_v<typename V::kind_type, Float>)
      if (!b.empty()) b.set(b.val().cast(dtype));
  });
  return m;
}

namespace detail {
/// What a config's init returns for its `dtype` field: the module as built (f32), or converted.
template <Module M>
M in_dtype(M m, DType dtype) {
  return dtype == DType::F32 ? m : to_dtype(std::move(m), dtype);
}
}  // namespace detail

/// A copy whose parameters under `prefix` (all, when empty) are frozen: they are detached
/// and optimizers skip them. `freeze(m, "encoder")` matches "encoder.*", not "encoder2.*".
template <Module M>
M freeze(M m, std::string_view prefix = {}, bool trainable = false) {
  for_each_param(m, [&](const std::string& path, auto& p) {
    bool under =
        prefix.empty() || path == prefix ||
        (path.size() > prefix.size() && path.starts_with(prefix) && path[prefix.size()] == '.');
    if (under) p.set_trainable(trainable);
  });
  return m;
}
/// The opposite of freeze.
template <Module M>
M unfreeze(M m, std::string_view prefix = {}) {
  return freeze(std::move(m), prefix, true);
}

// ---- moving a module between backends ---------------------------------------------------

/// M<B, ...> rebound to backend B2: rebind_t<Linear<Autodiff<Cpu>>, Cpu> is Linear<Cpu>.
/// A module whose template parameters are not (backend, values...) declares
/// `template <class B2> using rebind = ...;`.
/// A module that is not a template over the backend (Dropout, Relu) stays as it is.
template <class M, class B2>
struct rebind {
  using type = M;
};
template <class M, class B2>
requires requires { typename M::template rebind<B2>; }
struct rebind<M, B2> {
  using type = typename M::template rebind<B2>;
};
template <template <class, auto...> class M, class B, auto... Vs, class B2>
requires(Backend<B> &&
         !requires { typename M<B, Vs...>::template rebind<B2>; }) struct rebind<M<B, Vs...>, B2> {
  using type = M<B2, Vs...>;
};
template <class M, class B2>
using rebind_t = typename rebind<M, B2>::type;

/// The backend a module is built on (its first template argument, or M::backend_type).
template <class M>
struct backend_of;
template <class M>
requires requires { typename M::backend_type; }
struct backend_of<M> {
  using type = typename M::backend_type;
};
template <template <class, auto...> class M, class B, auto... Vs>
struct backend_of<M<B, Vs...>> {
  using type = B;
};
template <class M>
using backend_t = typename backend_of<M>::type;

namespace detail {
/// Whether A is Autodiff<I> with I = B.
template <class A, class B>
constexpr bool wraps() {
  if constexpr (AutodiffBackend<A>)
    return std::is_same_v<typename A::Inner, B>;
  else
    return false;
}
/// The same values as a tensor of backend B2 (no graph: a fresh value).
template <Backend B2, Backend B, int D, TensorKind K>
Tensor<B2, D, K> transfer(const Tensor<B, D, K>& t) {
  if constexpr (std::is_same_v<B, B2>) {
    return t;
  } else if constexpr (wraps<B, B2>()) {
    return t.inner();
  } else if constexpr (wraps<B2, B>()) {
    return Tensor<B2, D, K>::from_inner(t);
  } else {
    return Tensor<B2, D, K>::from_data(t.to_data(), t.device());
  }
}

template <class Dst, class Src>
void convert_field(Dst& dst, const Src& src);

template <class Dst, class Src>
void convert_module(Dst& dst, const Src& src) {
  src.for_each_field_with(dst, [](const char*, const auto& s, auto& d) { convert_field(d, s); });
}

template <class Dst, class Src>
void convert_field(Dst& dst, const Src& src) {
  if constexpr (ParamLike<Src>) {
    dst = Dst(transfer<typename Dst::Value::backend_type>(src.val()), src.trainable());
    dst.set_id(src.id());
  } else if constexpr (BufferLike<Src>) {
    dst = Dst();
    if (!src.empty()) dst.set(transfer<typename Dst::Value::backend_type>(src.val()));
  } else if constexpr (Module<Src>) {
    convert_module(dst, src);
  } else if constexpr (is_vector<Src>::value) {
    dst.resize(src.size());
    for (size_t i = 0; i < src.size(); ++i) convert_field(dst[i], src[i]);
  } else if constexpr (is_array<Src>::value) {
    for (size_t i = 0; i < src.size(); ++i) convert_field(dst[i], src[i]);
  } else if constexpr (is_optional<Src>::value) {
    if (src) {
      dst.emplace();
      convert_field(*dst, *src);
    } else {
      dst.reset();
    }
  } else if constexpr (::ember::detail::is_tensor<Src>::value) {
    dst = transfer<typename Dst::backend_type>(src);
  } else {
    dst = src;  // a constant
  }
}
}  // namespace detail

/// The module on backend B2, with the same values and parameter ids (so optimizer state
/// still applies after a round trip).
template <Backend B2, Module M>
rebind_t<M, B2> to_backend(const M& m) {
  rebind_t<M, B2> out{};
  detail::convert_module(out, m);
  return out;
}

/// The module on the inner backend of its Autodiff backend: for validation and inference.
/// `valid(Mlp<Autodiff<Cpu>>)` is an `Mlp<Cpu>` with the same parameters.
template <Module M>
auto valid(const M& m) {
  return to_backend<typename backend_t<M>::Inner>(m);
}

// ---- the printed tree --------------------------------------------------------------------

namespace detail {
template <class T>
int64_t count_params(const T& x) {
  int64_t n = 0;
  Ignore ig;
  auto count = [&](const std::string&, const auto& p) { n += p.numel(); };
  walk(std::string(), x, count, ig);
  return n;
}

template <class T>
void print_tree(std::ostringstream& os, std::string_view name, const T& x, int depth) {
  std::string indent(static_cast<size_t>(depth) * 2, ' ');
  if constexpr (ParamLike<T>) {
    os << indent << name << ": " << x.shape().to_string() << (x.trainable() ? "" : " (frozen)")
       << '\n';
  } else if constexpr (BufferLike<T>) {
    os << indent << name << ": buffer " << (x.empty() ? "[]" : x.shape().to_string()) << '\n';
  } else if constexpr (Module<T>) {
    os << indent << (name.empty() ? "" : std::string(name) + ": ") << T::module_name() << " ("
       << count_params(x) << " params)\n";
    x.for_each_field([&](const char* f, const auto& v) { print_tree(os, f, v, depth + 1); });
  } else if constexpr (is_vector<T>::value || is_array<T>::value) {
    for (size_t i = 0; i < x.size(); ++i)
      print_tree(os, std::string(name) + "." + std::to_string(i), x[i], depth);
  } else if constexpr (is_optional<T>::value) {
    if (x) print_tree(os, name, *x, depth);
  }
}
}  // namespace detail

/// The module tree with parameter counts and shapes:
///   Mlp (203530 params)
///     fc1: Linear (200960 params)
///       weight: [784, 256]
template <Module M>
std::string summary(const M& m) {
  std::ostringstream os;
  detail::print_tree(os, "", m, 0);
  return os.str();
}

}  // namespace ember::nn
