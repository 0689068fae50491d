// Configs: plain structs with defaults that build modules, optimizers and schedules. One
// EMBER_CONFIG line after the fields gives `with_<field>` setters (returning a copy, so they
// chain on temporaries), JSON conversion (missing keys keep their defaults), and file I/O.
// The JSON text is made and read in the library (ember/core/json.h): a config header costs
// its users no JSON library. Field types: bool, integers, floating point, std::string, enums
// (by name with EMBER_CONFIG_ENUM, else as integers), std::vector, std::optional, std::array,
// std::pair and other configs (or structs with EMBER_CONFIG_FIELDS).
//
//   struct LinearConfig {
//     int64_t d_input = 0, d_output = 0;
//     bool bias = true;
//     EMBER_CONFIG(LinearConfig, d_input, d_output, bias)
//   };
//   auto c = LinearConfig{784, 256}.with_bias(false);
//   nn::save_config(c, "linear.json");
//   auto back = nn::load_config<LinearConfig>("linear.json");   // == c
//   std::string s = nn::config_json(c);                         // {"bias":false,...}
#pragma once
#include <array>
#include <filesystem>
#include <optional>
#include <string>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/export.h"
#include "ember/core/json.h"
#include "ember/nn/for_each.h"

#define EMBER_DETAIL_CONFIG_WITH(f)    \
  auto with_##f(decltype(f) v) const { \
    auto c = *this;                    \
    c.f = std::move(v);                \
    return c;                          \
  }
#define EMBER_DETAIL_CONFIG_VISIT(f) v(#f, f);

/// The field visitor alone, for value types inside configs that are not configs themselves.
#define EMBER_CONFIG_FIELDS(...)                           \
  template <class V>                                       \
  void for_each_config_field(V&& v) {                      \
    EMBER_FOR_EACH(EMBER_DETAIL_CONFIG_VISIT, __VA_ARGS__) \
  }                                                        \
  template <class V>                                       \
  void for_each_config_field(V&& v) const {                \
    EMBER_FOR_EACH(EMBER_DETAIL_CONFIG_VISIT, __VA_ARGS__) \
  }

#define EMBER_CONFIG(Type, ...)                                \
  EMBER_FOR_EACH(EMBER_DETAIL_CONFIG_WITH, __VA_ARGS__)        \
  static constexpr const char* config_name() { return #Type; } \
  bool operator==(const Type&) const = default;                \
  EMBER_CONFIG_FIELDS(__VA_ARGS__)

/// Names for an enum's values in configs (at namespace scope, next to the enum):
///   EMBER_CONFIG_ENUM(ClipKind, {ClipKind::None, "none"}, {ClipKind::Value, "value"})
#define EMBER_CONFIG_ENUM(Enum, ...)                                        \
  constexpr auto config_enum_names(Enum) {                                  \
    return std::to_array<std::pair<Enum, std::string_view>>({__VA_ARGS__}); \
  }

namespace ember {
EMBER_CONFIG_ENUM(DType, {DType::F64, "f64"}, {DType::F32, "f32"}, {DType::F16, "f16"},
                  {DType::BF16, "bf16"}, {DType::I64, "i64"}, {DType::I32, "i32"},
                  {DType::I16, "i16"}, {DType::I8, "i8"}, {DType::U8, "u8"}, {DType::Bool, "bool"})
}  // namespace ember

namespace ember::nn {

template <class C>
concept Config = requires {
  C::config_name();
};

namespace detail {

template <class T>
concept HasConfigFields = requires(const T& t) {
  t.for_each_config_field([](const char*, const auto&) {});
};
template <class E>
concept NamedEnum = std::is_enum_v<E> && requires(E e) {
  config_enum_names(e);
};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};
template <class T>
struct IsArray : std::false_type {};
template <class T, size_t N>
struct IsArray<std::array<T, N>> : std::true_type {};
template <class T>
struct IsPair : std::false_type {};
template <class A, class B>
struct IsPair<std::pair<A, B>> : std::true_type {};

/// Throws ValueError: "`what`: expected one of "a", "b", got <j>".
[[noreturn]] EMBER_API void bad_enum_name(std::string_view what,
                                          const std::vector<std::string>& names, const Json& j);
[[noreturn]] EMBER_API void bad_array_size(std::string_view what, size_t want, const Json& j);

template <class T>
Json to_config_json(const T& v) {
  if constexpr (std::is_same_v<T, bool>) {
    return Json(v);
  } else if constexpr (NamedEnum<T>) {
    for (const auto& [e, n] : config_enum_names(v))
      if (e == v) return Json(n);
    return Json(static_cast<int64_t>(v));
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    return Json(static_cast<int64_t>(v));
  } else if constexpr (std::is_floating_point_v<T>) {
    return Json(static_cast<double>(v));
  } else if constexpr (std::is_convertible_v<const T&, std::string_view>) {
    return Json(std::string_view(v));
  } else if constexpr (IsOptional<T>::value) {
    return v ? to_config_json(*v) : Json();
  } else if constexpr (IsVector<T>::value || IsArray<T>::value) {
    Json a = Json::array();
    for (const auto& x : v) a.push_back(to_config_json(x));
    return a;
  } else if constexpr (IsPair<T>::value) {
    Json a = Json::array();
    a.push_back(to_config_json(v.first));
    a.push_back(to_config_json(v.second));
    return a;
  } else {
    static_assert(HasConfigFields<T>, "a config field of a type configs cannot hold");
    Json o = Json::object();
    v.for_each_config_field(
        [&](const char* name, const auto& f) { o.set(name, to_config_json(f)); });
    return o;
  }
}

/// Reads `out` from `j`; `what` names the field in errors ("LinearConfig.d_input").
template <class T>
void from_config_json(const Json& j, T& out, const std::string& what) {
  if constexpr (std::is_same_v<T, bool>) {
    out = j.as_bool(what);
  } else if constexpr (NamedEnum<T>) {
    std::vector<std::string> names;
    for (const auto& [e, n] : config_enum_names(out)) {
      if (j.type() == Json::Type::String && j.as_string(what) == n) {
        out = e;
        return;
      }
      names.emplace_back(n);
    }
    bad_enum_name(what, names, j);
  } else if constexpr (std::is_enum_v<T> || std::is_integral_v<T>) {
    out = static_cast<T>(j.as_int(what));
  } else if constexpr (std::is_floating_point_v<T>) {
    out = static_cast<T>(j.as_double(what));
  } else if constexpr (std::is_same_v<T, std::string>) {
    out = j.as_string(what);
  } else if constexpr (IsOptional<T>::value) {
    if (j.is_null()) {
      out.reset();
    } else {
      typename T::value_type v = out.value_or(typename T::value_type{});
      from_config_json(j, v, what);
      out = std::move(v);
    }
  } else if constexpr (IsVector<T>::value) {
    if (j.type() != Json::Type::Array) bad_array_size(what, 0, j);
    T v(j.size());
    for (size_t i = 0; i < v.size(); ++i)
      from_config_json(j.at(i), v[i], what + "[" + std::to_string(i) + "]");
    out = std::move(v);
  } else if constexpr (IsArray<T>::value) {
    if (j.type() != Json::Type::Array || j.size() != out.size())
      bad_array_size(what, out.size(), j);
    for (size_t i = 0; i < out.size(); ++i)
      from_config_json(j.at(i), out[i], what + "[" + std::to_string(i) + "]");
  } else if constexpr (IsPair<T>::value) {
    if (j.type() != Json::Type::Array || j.size() != 2) bad_array_size(what, 2, j);
    from_config_json(j.at(0), out.first, what + "[0]");
    from_config_json(j.at(1), out.second, what + "[1]");
  } else {
    static_assert(HasConfigFields<T>, "a config field of a type configs cannot hold");
    if (j.type() != Json::Type::Object)
      throw ValueError(what + ": expected an object, got " + std::string(j.type_name()) + " " +
                       j.dump());
    out.for_each_config_field([&](const char* name, auto& f) {
      if (auto v = j.get(name)) from_config_json(*v, f, what + "." + name);  // missing: default
    });
  }
}

EMBER_API std::string read_config_file(const std::filesystem::path& path);
EMBER_API void write_config_file(const std::filesystem::path& path, const std::string& text);

}  // namespace detail

/// The config as a JSON value.
template <Config C>
Json config_to_json(const C& c) {
  return detail::to_config_json(c);
}
/// The config as a JSON string (compact, or indented when `indent` >= 0).
template <Config C>
std::string config_json(const C& c, int indent = -1) {
  return config_to_json(c).dump(indent);
}

/// A config from a JSON value; keys left out keep their defaults, unknown keys are ignored.
/// Throws ValueError on a value of the wrong type, naming the config and the field.
template <Config C>
C config_from_json(const Json& j) {
  C c{};
  detail::from_config_json(j, c, std::string("[config] ") + C::config_name());
  return c;
}
/// Parses a config from JSON text (see above); malformed text is a ValueError too.
template <Config C>
C config_from_json(const std::string& text) {
  return config_from_json<C>(Json::parse(text, std::string("[config] ") + C::config_name()));
}

template <Config C>
void save_config(const C& c, const std::filesystem::path& path) {
  detail::write_config_file(path, config_json(c, 2) + "\n");
}

template <Config C>
C load_config(const std::filesystem::path& path) {
  return config_from_json<C>(detail::read_config_file(path));
}

}  // namespace ember::nn
