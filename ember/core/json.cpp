#include "ember/core/json.h"

#include <nlohmann/json.hpp>

#include "ember/core/error.h"

namespace ember {

struct Json::Impl {
  nlohmann::json v;
};

Json::Json() : p_(std::make_unique<Impl>()) {}
Json::Json(bool v) : p_(std::make_unique<Impl>(Impl{nlohmann::json(v)})) {}
Json::Json(int64_t v) : p_(std::make_unique<Impl>(Impl{nlohmann::json(v)})) {}
Json::Json(double v) : p_(std::make_unique<Impl>(Impl{nlohmann::json(v)})) {}
Json::Json(std::string_view v) : p_(std::make_unique<Impl>(Impl{nlohmann::json(std::string(v))})) {}
Json Json::object() {
  Json j;
  j.p_->v = nlohmann::json::object();
  return j;
}
Json Json::array() {
  Json j;
  j.p_->v = nlohmann::json::array();
  return j;
}
Json Json::parse(std::string_view text, std::string_view what) {
  Json j;
  try {
    j.p_->v = nlohmann::json::parse(text);
  } catch (const nlohmann::json::exception& e) {
    throw ValueError(std::string(what) + ": malformed JSON: " + e.what());
  }
  return j;
}

Json::Json(const Json& o) : p_(std::make_unique<Impl>(*o.p_)) {}
Json::Json(Json&& o) noexcept : p_(std::move(o.p_)) {}
Json& Json::operator=(const Json& o) {
  if (this != &o) p_ = std::make_unique<Impl>(*o.p_);
  return *this;
}
Json& Json::operator=(Json&& o) noexcept {
  p_ = std::move(o.p_);
  return *this;
}
Json::~Json() = default;

Json::Type Json::type() const {
  if (!p_) return Type::Null;  // moved from
  switch (p_->v.type()) {
    case nlohmann::json::value_t::boolean:
      return Type::Bool;
    case nlohmann::json::value_t::number_integer:
    case nlohmann::json::value_t::number_unsigned:
      return Type::Int;
    case nlohmann::json::value_t::number_float:
      return Type::Float;
    case nlohmann::json::value_t::string:
      return Type::String;
    case nlohmann::json::value_t::array:
      return Type::Array;
    case nlohmann::json::value_t::object:
      return Type::Object;
    default:
      return Type::Null;
  }
}

std::string_view Json::type_name() const {
  switch (type()) {
    case Type::Bool:
      return "bool";
    case Type::Int:
      return "integer";
    case Type::Float:
      return "number";
    case Type::String:
      return "string";
    case Type::Array:
      return "array";
    case Type::Object:
      return "object";
    default:
      return "null";
  }
}

std::string Json::dump(int indent) const { return p_ ? p_->v.dump(indent) : "null"; }

namespace {
[[noreturn]] void mismatch(std::string_view what, std::string_view want, const Json& j) {
  throw ValueError(std::string(what) + ": expected " + std::string(want) + ", got " +
                   std::string(j.type_name()) + " " + j.dump());
}
}  // namespace

bool Json::as_bool(std::string_view what) const {
  if (type() != Type::Bool) mismatch(what, "a bool", *this);
  return p_->v.get<bool>();
}
int64_t Json::as_int(std::string_view what) const {
  if (type() != Type::Int) mismatch(what, "an integer", *this);
  if (p_->v.is_number_unsigned() && p_->v.get<uint64_t>() > uint64_t(INT64_MAX))
    throw ValueError(std::string(what) + ": " + dump() + " does not fit int64");
  return p_->v.get<int64_t>();
}
double Json::as_double(std::string_view what) const {
  if (!is_number()) mismatch(what, "a number", *this);
  return p_->v.get<double>();
}
std::string Json::as_string(std::string_view what) const {
  if (type() != Type::String) mismatch(what, "a string", *this);
  return p_->v.get<std::string>();
}

bool Json::contains(std::string_view key) const {
  return type() == Type::Object && p_->v.contains(std::string(key));
}
std::optional<Json> Json::get(std::string_view key) const {
  if (!contains(key)) return std::nullopt;
  Json j;
  j.p_->v = p_->v.at(std::string(key));
  return j;
}
void Json::set(std::string_view key, Json value) {
  if (type() == Type::Null) p_->v = nlohmann::json::object();
  if (type() != Type::Object) throw ValueError("[json] set on a " + std::string(type_name()));
  p_->v[std::string(key)] = std::move(value.p_->v);
}

size_t Json::size() const {
  return type() == Type::Array || type() == Type::Object ? p_->v.size() : 0;
}
Json Json::at(size_t i) const {
  if (type() != Type::Array || i >= p_->v.size())
    throw IndexError("[json] index " + std::to_string(i) + " out of a " + std::string(type_name()) +
                     " of size " + std::to_string(size()));
  Json j;
  j.p_->v = p_->v[i];
  return j;
}
void Json::push_back(Json value) {
  if (type() == Type::Null) p_->v = nlohmann::json::array();
  if (type() != Type::Array) throw ValueError("[json] push_back on a " + std::string(type_name()));
  p_->v.push_back(std::move(value.p_->v));
}

}  // namespace ember
