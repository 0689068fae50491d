// Initializers: how a parameter's first values are drawn. Serializable, so configs carry
// them: `LinearConfig{784, 256}.with_initializer(Initializer::xavier_uniform())`.
//
//   auto w = Initializer::kaiming_normal().init<B, 2>({256, 784}, dev, /*fan_in=*/784,
//                                                       /*fan_out=*/256);
//
// Kaiming: std = gain / sqrt(fan) (fan_in, or fan_out with fan_out_only); uniform bounds are
// ±sqrt(3)·std. Xavier: std = gain · sqrt(2 / (fan_in + fan_out)). Orthogonal: the Q of a
// QR decomposition of a normal matrix (rows = shape[0], columns = the rest), times gain.
#pragma once
#include <cmath>
#include <optional>
#include <vector>

#include "ember/backend/extern.h"
#include "ember/core/export.h"
#include "ember/nn/config.h"
#include "ember/tensor/tensor.h"

namespace ember::nn {

enum class InitKind {
  Constant,
  Zeros,
  Ones,
  Uniform,
  Normal,
  KaimingUniform,
  KaimingNormal,
  XavierUniform,
  XavierNormal,
  Orthogonal
};

EMBER_CONFIG_ENUM(InitKind, {InitKind::Constant, "constant"}, {InitKind::Zeros, "zeros"},
                  {InitKind::Ones, "ones"}, {InitKind::Uniform, "uniform"},
                  {InitKind::Normal, "normal"}, {InitKind::KaimingUniform, "kaiming_uniform"},
                  {InitKind::KaimingNormal, "kaiming_normal"},
                  {InitKind::XavierUniform, "xavier_uniform"},
                  {InitKind::XavierNormal, "xavier_normal"}, {InitKind::Orthogonal, "orthogonal"})

struct Initializer {
  using Kind = InitKind;
  Kind kind = Kind::Zeros;
  double a = 0;     // constant value; uniform low; normal mean
  double b = 1;     // uniform high; normal std
  double gain = 1;  // Kaiming, Xavier, orthogonal
  bool fan_out_only = false;

  static Initializer constant(double v) { return {Kind::Constant, v}; }
  static Initializer zeros() { return {Kind::Zeros}; }
  static Initializer ones() { return {Kind::Ones}; }
  static Initializer uniform(double lo, double hi) { return {Kind::Uniform, lo, hi}; }
  static Initializer normal(double mean, double std) { return {Kind::Normal, mean, std}; }
  static Initializer kaiming_uniform(double gain = std::sqrt(2.0), bool fan_out_only = false) {
    return {Kind::KaimingUniform, 0, 1, gain, fan_out_only};
  }
  static Initializer kaiming_normal(double gain = std::sqrt(2.0), bool fan_out_only = false) {
    return {Kind::KaimingNormal, 0, 1, gain, fan_out_only};
  }
  static Initializer xavier_uniform(double gain = 1) { return {Kind::XavierUniform, 0, 1, gain}; }
  static Initializer xavier_normal(double gain = 1) { return {Kind::XavierNormal, 0, 1, gain}; }
  static Initializer orthogonal(double gain = 1) { return {Kind::Orthogonal, 0, 1, gain}; }

  /// Values for a tensor of `shape`; fan_in/fan_out are needed by Kaiming and Xavier (a
  /// ValueError names the initializer when they are missing).
  template <Backend B, int D>
  Tensor<B, D> init(const Shape& shape, Device dev, std::optional<int64_t> fan_in = {},
                    std::optional<int64_t> fan_out = {}, DType dt = DType::F32) const;

  /// The orthogonal initializer's values (f64), computed on the host: modified Gram-Schmidt
  /// on the columns of a normal matrix (of its transpose when it is wide), with the signs of
  /// R's diagonal folded in, so the result is uniformly distributed.
  EMBER_API static TensorData orthogonal_data(const Shape& shape, double gain);

  bool operator==(const Initializer&) const = default;
  EMBER_CONFIG_FIELDS(kind, a, b, gain, fan_out_only)
};

template <Backend B, int D>
Tensor<B, D> Initializer::init(const Shape& shape, Device dev, std::optional<int64_t> fan_in,
                               std::optional<int64_t> fan_out, DType dt) const {
  using T = Tensor<B, D>;
  auto need = [&](std::optional<int64_t> f, const char* which) {
    if (!f || *f <= 0)
      throw ValueError(std::string("[init] this initializer needs ") + which + " for shape " +
                       shape.to_string());
    return static_cast<double>(*f);
  };
  auto fan = [&] { return fan_out_only ? need(fan_out, "fan_out") : need(fan_in, "fan_in"); };
  switch (kind) {
    case Kind::Constant:
      return T::full(shape, a, dev, dt);
    case Kind::Zeros:
      return T::zeros(shape, dev, dt);
    case Kind::Ones:
      return T::ones(shape, dev, dt);
    case Kind::Uniform:
      return T::random(shape, Distribution::uniform(a, b), dev, dt);
    case Kind::Normal:
      return T::random(shape, Distribution::normal(a, b), dev, dt);
    case Kind::KaimingUniform: {
      double bound = std::sqrt(3.0) * gain / std::sqrt(fan());
      return T::random(shape, Distribution::uniform(-bound, bound), dev, dt);
    }
    case Kind::KaimingNormal:
      return T::random(shape, Distribution::normal(0, gain / std::sqrt(fan())), dev, dt);
    case Kind::XavierUniform: {
      double bound = gain * std::sqrt(6.0 / (need(fan_in, "fan_in") + need(fan_out, "fan_out")));
      return T::random(shape, Distribution::uniform(-bound, bound), dev, dt);
    }
    case Kind::XavierNormal: {
      double std = gain * std::sqrt(2.0 / (need(fan_in, "fan_in") + need(fan_out, "fan_out")));
      return T::random(shape, Distribution::normal(0, std), dev, dt);
    }
    case Kind::Orthogonal:
      return T::from_data(orthogonal_data(shape, gain).convert(dt), dev);
  }
  throw ValueError("[init] unknown initializer");
}

// Compiled once in the library for the Dispatch stacks (ember/nn/instantiate.cpp).
#define EMBER_DETAIL_INIT_INSTANCES(ext, B)                                               \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 1> Initializer::init<B, 1>(              \
      const Shape&, Device, std::optional<int64_t>, std::optional<int64_t>, DType) const; \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 2> Initializer::init<B, 2>(              \
      const Shape&, Device, std::optional<int64_t>, std::optional<int64_t>, DType) const; \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 3> Initializer::init<B, 3>(              \
      const Shape&, Device, std::optional<int64_t>, std::optional<int64_t>, DType) const; \
  ext template EMBER_INSTANCE_API(ext) Tensor<B, 4> Initializer::init<B, 4>(              \
      const Shape&, Device, std::optional<int64_t>, std::optional<int64_t>, DType) const;
EMBER_DETAIL_INIT_INSTANCES(extern, Dispatch)
EMBER_DETAIL_INIT_INSTANCES(extern, AutodiffDispatch)

}  // namespace ember::nn
