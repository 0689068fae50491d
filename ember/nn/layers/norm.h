// Normalization layers: LayerNorm, RmsNorm, GroupNorm, InstanceNorm and BatchNorm.
//
//   auto ln = nn::LayerNormConfig{512}.init<B>(dev);          // over the last dim
//   auto bn = nn::BatchNormConfig{64}.init<B>(dev);           // [N, C, ...] per channel
//   auto y = bn.forward(x);   // training (Autodiff backend): batch statistics, and the running
//                             // statistics move; on the inner backend: running statistics
//
// All match PyTorch: biased variance for normalizing, unbiased for BatchNorm's running
// variance, eps inside the square root.
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/init.h"
#include "ember/nn/module.h"
#include "ember/tensor/nn_ops.h"

namespace ember::nn {

namespace detail {
template <Backend B>
Param<Tensor<B, 1>> affine(int64_t n, double v, Device dev) {
  return Param<Tensor<B, 1>>::lazy(
      {n}, dev, [v](const Shape& s, Device d) { return Tensor<B, 1>::full(s, v, d); });
}
/// A [C] vector shaped to broadcast against [N, C, ...] of rank D.
template <int D, Backend B>
Tensor<B, D> per_channel(const Tensor<B, 1>& v) {
  std::array<int64_t, D> s;
  s.fill(1);
  s[1] = v.dim(0);
  return v.template reshape<D>(s);
}
template <Backend B, int D>
void check_channels(const char* op, const Tensor<B, D>& x, int64_t c, int dim) {
  if (x.dim(dim) != c)
    throw ShapeError(std::string("[") + op + "] input " + x.shape().to_string() + " has " +
                     std::to_string(x.dim(dim)) + " channels at dim " + std::to_string(dim) +
                     ", the layer " + std::to_string(c));
}
}  // namespace detail

// ---- LayerNorm ---------------------------------------------------------------------------

template <Backend B>
struct LayerNorm {
  /// The scale and shift over the normalized dims, flattened; absent without
  /// elementwise_affine (both) or bias (beta).
  std::optional<Param<Tensor<B, 1>>> gamma, beta;
  /// The trailing dims normalized over (PyTorch's normalized_shape).
  Dims normalized_shape;
  double epsilon = 1e-5;
  EMBER_MODULE(LayerNorm, gamma, beta, normalized_shape, epsilon)

  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    const auto k = static_cast<int64_t>(normalized_shape.size());
    bool ok = D >= k;
    int64_t n = 1;
    for (int64_t i = 0; ok && i < k; ++i) {
      ok = x.shape()[D - k + i] == normalized_shape[i];
      n *= normalized_shape[i];
    }
    if (!ok)
      throw ShapeError("[layer_norm] input " + x.shape().to_string() +
                       " does not end in the layer's normalized shape " +
                       Shape(normalized_shape).to_string());
    if (gamma) detail::check_dtype("layer_norm", x, gamma->val());
    auto g = gamma ? gamma->val() : Tensor<B, 1>::ones({n}, x.device(), x.dtype());
    auto b = beta ? beta->val() : Tensor<B, 1>::zeros({n}, x.device(), x.dtype());
    if (k == 1) return ember::layer_norm(x, g, b, epsilon);  // one op: fused where supported
    if constexpr (D >= 2) {
      auto rows = x.template reshape<2>({-1, n});
      return ember::layer_norm(rows, g, b, epsilon).template reshape<D>(x.shape());
    }
    throw ShapeError("[layer_norm] unreachable");
  }
};

struct LayerNormConfig {
  /// The size of the last dim, normalized over (when normalized_shape is empty).
  int64_t d_model = 0;
  double epsilon = 1e-5;
  /// The trailing dims to normalize over, as PyTorch's normalized_shape (empty: {d_model}).
  std::vector<int64_t> normalized_shape = {};
  /// Learnable gamma and beta; without them the layer only normalizes.
  bool elementwise_affine = true;
  /// Learnable beta (with elementwise_affine).
  bool bias = true;
  /// The parameters' float type (f32, f64, f16, bf16).
  DType dtype = DType::F32;
  EMBER_CONFIG(LayerNormConfig, d_model, epsilon, normalized_shape, elementwise_affine, bias, dtype)
  template <Backend B>
  LayerNorm<B> init(Device dev = B::default_device()) const {
    Dims shape = normalized_shape.empty() ? Dims{d_model} : Dims(normalized_shape);
    int64_t n = 1;
    for (int64_t d : shape) {
      if (d <= 0)
        throw ValueError("[layer_norm] the normalized shape " + Shape(shape).to_string() +
                         " must be positive");
      n *= d;
    }
    LayerNorm<B> m;
    m.normalized_shape = shape;
    m.epsilon = epsilon;
    if (elementwise_affine) {
      m.gamma = detail::affine<B>(n, 1, dev);
      if (bias) m.beta = detail::affine<B>(n, 0, dev);
    }
    return detail::in_dtype(std::move(m), dtype);
  }
};

// ---- RmsNorm -----------------------------------------------------------------------------

template <Backend B>
struct RmsNorm {
  std::optional<Param<Tensor<B, 1>>> gamma;  // absent without elementwise_affine
  double epsilon = 1e-5;
  int64_t d_model = 0;
  EMBER_MODULE(RmsNorm, gamma, epsilon, d_model)

  /// x / sqrt(mean(x², last dim) + eps) · gamma, like torch.nn.RMSNorm.
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    detail::check_channels("rms_norm", x, d_model, D - 1);
    if (!gamma)
      return ember::rms_norm(x, Tensor<B, 1>::ones({d_model}, x.device(), x.dtype()), epsilon);
    detail::check_dtype("rms_norm", x, gamma->val());
    return ember::rms_norm(x, gamma->val(), epsilon);
  }
};

struct RmsNormConfig {
  int64_t d_model = 0;
  double epsilon = 1e-5;
  DType dtype = DType::F32;  // the parameters' float type
  /// A learnable gamma; without it the layer only normalizes.
  bool elementwise_affine = true;
  EMBER_CONFIG(RmsNormConfig, d_model, epsilon, dtype, elementwise_affine)
  template <Backend B>
  RmsNorm<B> init(Device dev = B::default_device()) const {
    if (d_model <= 0) throw ValueError("[rms_norm] d_model must be positive");
    RmsNorm<B> m;
    if (elementwise_affine) m.gamma = detail::affine<B>(d_model, 1, dev);
    m.epsilon = epsilon;
    m.d_model = d_model;
    return detail::in_dtype(std::move(m), dtype);
  }
};

// ---- GroupNorm and InstanceNorm ----------------------------------------------------------

template <Backend B>
struct GroupNorm {
  std::optional<Param<Tensor<B, 1>>> gamma, beta;
  int64_t num_groups = 1;
  int64_t num_channels = 0;
  double epsilon = 1e-5;
  EMBER_MODULE(GroupNorm, gamma, beta, num_groups, num_channels, epsilon)

  /// [N, C, ...] normalized over each group of C / num_groups channels and all positions.
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    static_assert(D >= 2, "group norm needs [N, C, ...]");
    detail::check_channels("group_norm", x, num_channels, 1);
    const int64_t n = x.dim(0);
    auto g = x.template reshape<3>({n, num_groups, -1});
    auto mean = g.mean_dim(2);
    auto c = g - mean;
    auto var = c.square().mean_dim(2);
    auto y = (c * (var + epsilon).rsqrt()).template reshape<D>(x.shape());
    if (gamma) {
      detail::check_dtype("group_norm", x, gamma->val());
      y = y * detail::per_channel<D>(gamma->val()) + detail::per_channel<D>(beta->val());
    }
    return y;
  }
};

struct GroupNormConfig {
  int64_t num_groups = 1;
  int64_t num_channels = 0;
  double epsilon = 1e-5;
  bool affine = true;
  DType dtype = DType::F32;  // the parameters' float type
  EMBER_CONFIG(GroupNormConfig, num_groups, num_channels, epsilon, affine, dtype)
  template <Backend B>
  GroupNorm<B> init(Device dev = B::default_device()) const {
    if (num_groups <= 0 || num_channels <= 0 || num_channels % num_groups != 0)
      throw ValueError("[group_norm] " + std::to_string(num_groups) + " groups must divide " +
                       std::to_string(num_channels) + " channels");
    GroupNorm<B> m;
    m.num_groups = num_groups;
    m.num_channels = num_channels;
    m.epsilon = epsilon;
    if (affine) {
      m.gamma = detail::affine<B>(num_channels, 1, dev);
      m.beta = detail::affine<B>(num_channels, 0, dev);
    }
    return detail::in_dtype(std::move(m), dtype);
  }
};

/// InstanceNorm: GroupNorm with one group per channel (PyTorch's affine=True variant).
struct InstanceNormConfig {
  int64_t num_channels = 0;
  double epsilon = 1e-5;
  bool affine = true;
  DType dtype = DType::F32;  // the parameters' float type
  EMBER_CONFIG(InstanceNormConfig, num_channels, epsilon, affine, dtype)
  template <Backend B>
  GroupNorm<B> init(Device dev = B::default_device()) const {
    return GroupNormConfig{num_channels, num_channels, epsilon, affine, dtype}.init<B>(dev);
  }
};
template <Backend B>
using InstanceNorm = GroupNorm<B>;

// ---- BatchNorm ---------------------------------------------------------------------------

template <Backend B>
struct BatchNorm {
  std::optional<Param<Tensor<B, 1>>> gamma, beta;          // absent without affine
  mutable Buffer<Tensor<B, 1>> running_mean, running_var;  // updated by training forwards
  double momentum = 0.1;
  double epsilon = 1e-5;
  EMBER_MODULE(BatchNorm, gamma, beta, running_mean, running_var, momentum, epsilon)

  /// [N, C, ...]. Training (an Autodiff backend with gradients on) normalizes with the batch
  /// statistics and moves the running ones; otherwise it uses the running statistics.
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    static_assert(D >= 2, "batch norm needs [N, C, ...]");
    const int64_t c = running_mean.val().dim(0);
    detail::check_channels("batch_norm", x, c, 1);
    detail::check_dtype("batch_norm", x, running_mean.val());
    bool training = false;
    if constexpr (AutodiffBackend<B>) training = autodiff::grad_enabled();
    Tensor<B, D> y = [&] {
      if (!training) {
        auto mean = detail::per_channel<D>(running_mean.val());
        auto var = detail::per_channel<D>(running_var.val());
        return (x - mean) * (var + epsilon).rsqrt();
      }
      // Channels first, everything else flattened: [C, N * ...].
      auto flat = x.swap_dims(0, 1).template reshape<2>({c, -1});
      const int64_t count = flat.dim(1);
      auto mean = flat.mean_dim(1);  // [C, 1]
      auto centered = flat - mean;
      auto var = centered.square().mean_dim(1);  // biased
      if constexpr (AutodiffBackend<B>) {
        autodiff::NoGradGuard ng;
        double unbias = count > 1 ? static_cast<double>(count) / static_cast<double>(count - 1) : 1;
        auto m1 = mean.template reshape<1>({c}).detach();
        auto v1 = var.template reshape<1>({c}).detach().mul_scalar(unbias);
        running_mean.set(running_mean.val().mul_scalar(1 - momentum) + m1.mul_scalar(momentum));
        running_var.set(running_var.val().mul_scalar(1 - momentum) + v1.mul_scalar(momentum));
      }
      auto m = detail::per_channel<D>(mean.template reshape<1>({c}));
      auto v = detail::per_channel<D>(var.template reshape<1>({c}));
      return (x - m) * (v + epsilon).rsqrt();
    }();
    if (!gamma) return y;
    return y * detail::per_channel<D>(gamma->val()) + detail::per_channel<D>(beta->val());
  }
};

struct BatchNormConfig {
  int64_t num_features = 0;
  double epsilon = 1e-5;
  double momentum = 0.1;
  /// Learnable gamma and beta per channel.
  bool affine = true;
  DType dtype = DType::F32;  // the parameters' and running statistics' float type
  EMBER_CONFIG(BatchNormConfig, num_features, epsilon, momentum, affine, dtype)
  template <Backend B>
  BatchNorm<B> init(Device dev = B::default_device()) const {
    if (num_features <= 0) throw ValueError("[batch_norm] num_features must be positive");
    BatchNorm<B> m;
    if (affine) {
      m.gamma = detail::affine<B>(num_features, 1, dev);
      m.beta = detail::affine<B>(num_features, 0, dev);
    }
    m.running_mean = Buffer<Tensor<B, 1>>(Tensor<B, 1>::zeros({num_features}, dev));
    m.running_var = Buffer<Tensor<B, 1>>(Tensor<B, 1>::ones({num_features}, dev));
    m.momentum = momentum;
    m.epsilon = epsilon;
    return detail::in_dtype(std::move(m), dtype);
  }
};

}  // namespace ember::nn
