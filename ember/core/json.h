// Json: a JSON value behind a small interface that is not a template, so the headers that read
// or write JSON (configs, the Learner's state, records' metadata) do not pull a JSON library
// into every translation unit: parsing and printing are compiled once, in the library.
//
//   ember::Json j = ember::Json::object();
//   j.set("epoch", ember::Json(int64_t{3}));
//   j.set("lr", ember::Json(1e-3));
//   std::string s = j.dump();                              // {"epoch":3,"lr":0.001}
//   ember::Json back = ember::Json::parse(s, "learner.json");
//   int64_t e = back.get("epoch")->as_int("epoch");         // 3
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>

#include "ember/core/export.h"

namespace ember {

class EMBER_API Json {
 public:
  enum class Type { Null, Bool, Int, Float, String, Array, Object };

  Json();  // null
  explicit Json(bool v);
  explicit Json(int64_t v);
  explicit Json(double v);
  explicit Json(std::string_view v);
  explicit Json(const char* v) : Json(std::string_view(v)) {}
  static Json object();
  static Json array();
  /// Parses JSON text; throws ValueError naming `what` (a file, a config) on malformed text.
  static Json parse(std::string_view text, std::string_view what);

  Json(const Json& o);
  Json(Json&& o) noexcept;
  Json& operator=(const Json& o);
  Json& operator=(Json&& o) noexcept;
  ~Json();

  Type type() const;
  bool is_null() const { return type() == Type::Null; }
  bool is_number() const { return type() == Type::Int || type() == Type::Float; }
  /// "null", "bool", "integer", "number", "string", "array" or "object".
  std::string_view type_name() const;
  /// Compact text, or indented by `indent` spaces when `indent` >= 0.
  std::string dump(int indent = -1) const;

  // Values: each throws ValueError "`what`: expected <type>, got <type>" on a mismatch.
  bool as_bool(std::string_view what) const;
  int64_t as_int(std::string_view what) const;  // integers only (3.0 is not one)
  double as_double(std::string_view what) const;
  std::string as_string(std::string_view what) const;

  // Objects.
  bool contains(std::string_view key) const;
  std::optional<Json> get(std::string_view key) const;
  void set(std::string_view key, Json value);

  // Arrays.
  size_t size() const;  // elements of an array, keys of an object, 0 otherwise
  Json at(size_t i) const;
  void push_back(Json value);

 private:
  struct Impl;
  std::unique_ptr<Impl> p_;
};

}  // namespace ember
