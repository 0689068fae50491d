// Configs: plain structs with defaults that build modules, optimizers and schedules. One
// EMBER_CONFIG line after the fields gives `with_<field>` setters (returning a copy, so they
// chain on temporaries), JSON conversion (missing keys keep their defaults), and file I/O.
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
#include <filesystem>
#include <fstream>
#include <string>

#include <nlohmann/json.hpp>

#include "ember/core/error.h"
#include "ember/nn/for_each.h"

#define EMBER_DETAIL_CONFIG_WITH(f)    \
  auto with_##f(decltype(f) v) const { \
    auto c = *this;                    \
    c.f = std::move(v);                \
    return c;                          \
  }

#define EMBER_CONFIG(Type, ...)                                \
  EMBER_FOR_EACH(EMBER_DETAIL_CONFIG_WITH, __VA_ARGS__)        \
  static constexpr const char* config_name() { return #Type; } \
  bool operator==(const Type&) const = default;                \
  NLOHMANN_DEFINE_TYPE_INTRUSIVE_WITH_DEFAULT(Type, __VA_ARGS__)

namespace ember::nn {

template <class C>
concept Config = requires {
  C::config_name();
};

/// The config as a JSON string (compact, or indented when `indent` >= 0).
template <Config C>
std::string config_json(const C& c, int indent = -1) {
  return nlohmann::json(c).dump(indent);
}

/// Parses a config from JSON text; keys left out keep their defaults. Throws ValueError on
/// malformed JSON or a value of the wrong type, naming the config.
template <Config C>
C config_from_json(const std::string& text) {
  try {
    return nlohmann::json::parse(text).get<C>();
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(std::string("[config] ") + C::config_name() + ": " + e.what());
  }
}

template <Config C>
void save_config(const C& c, const std::filesystem::path& path) {
  std::ofstream f(path);
  if (!f) throw ValueError("[config] cannot write " + path.string());
  f << config_json(c, 2) << '\n';
  if (!f) throw ValueError("[config] cannot write " + path.string());
}

template <Config C>
C load_config(const std::filesystem::path& path) {
  std::ifstream f(path);
  if (!f) throw ValueError("[config] cannot read " + path.string());
  std::string text((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
  return config_from_json<C>(text);
}

}  // namespace ember::nn
