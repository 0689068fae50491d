// Tensor kinds: what a tensor's elements mean. The kind is part of the type, so a float op
// on an int tensor is a compile error; the exact element type is a runtime dtype.
//
//   Tensor<B, 2>              // Float: f32 by default (f64, f16, bf16 too)
//   Tensor<B, 1, Int>         // Int: i64 by default (i32, i16, i8, u8 too)
//   Tensor<B, 3, Bool>        // Bool
#pragma once
#include "ember/core/dtype.h"

namespace ember {

struct Float {
  static constexpr DType kDefault = DType::F32;
  static constexpr bool holds(DType t) { return is_float(t); }
};
struct Int {
  static constexpr DType kDefault = DType::I64;
  static constexpr bool holds(DType t) { return is_int(t); }
};
struct Bool {
  static constexpr DType kDefault = DType::Bool;
  static constexpr bool holds(DType t) { return t == DType::Bool; }
};

template <class K>
concept TensorKind = std::is_same_v<K, Float> || std::is_same_v<K, Int> || std::is_same_v<K, Bool>;
template <class K>
concept Numeric = std::is_same_v<K, Float> || std::is_same_v<K, Int>;

/// How `random` fills a tensor.
struct Distribution {
  enum class Kind { Default, Uniform, Normal, Bernoulli } kind = Kind::Default;
  double a = 0, b = 1;
  static Distribution uniform(double low, double high) { return {Kind::Uniform, low, high}; }
  static Distribution normal(double mean, double std) { return {Kind::Normal, mean, std}; }
  static Distribution bernoulli(double p) { return {Kind::Bernoulli, p, 0}; }
};

/// One dim of a slice: [start, end) every |step| elements, reversed when step < 0.
/// Negative start/end count from the end; `end` defaults to the dim's size.
struct Slice {
  int64_t start = 0;
  int64_t end = INT64_MAX;
  int64_t step = 1;
  Slice() = default;
  Slice(int64_t s, int64_t e, int64_t st = 1) : start(s), end(e), step(st) {}
  static Slice all() { return {}; }
  static Slice from(int64_t s) { return {s, INT64_MAX}; }
  static Slice to(int64_t e) { return {0, e}; }
  /// Exactly index i (the dim stays, with size 1).
  static Slice at(int64_t i) { return {i, i == -1 ? INT64_MAX : i + 1}; }
};

}  // namespace ember
