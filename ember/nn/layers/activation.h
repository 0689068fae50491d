// Activation modules: the functions of ember/tensor/activation.h as modules, for models that
// hold their activation as a field (and for configs that name one).
//
//   nn::Gelu act;                  y = act.forward(x);
//   nn::LeakyRelu{0.2}.forward(x);
//   auto prelu = nn::PReluConfig{64}.init<B>(dev);   // one learned slope per channel
#pragma once
#include "ember/nn/config.h"
#include "ember/nn/module.h"
#include "ember/tensor/activation.h"

// A stateless activation module with constants `...` applying `expr` to x.
#define EMBER_DETAIL_ACTIVATION(Name, expr, ...)        \
  struct Name {                                         \
    __VA_OPT__(double __VA_ARGS__;)                     \
    EMBER_MODULE(Name __VA_OPT__(, ) __VA_ARGS__)       \
    template <Backend B, int D>                         \
    Tensor<B, D> forward(const Tensor<B, D>& x) const { \
      return expr;                                      \
    }                                                   \
  };

namespace ember::nn {

EMBER_DETAIL_ACTIVATION(Relu, activation::relu(x))
EMBER_DETAIL_ACTIVATION(Gelu, activation::gelu(x))
EMBER_DETAIL_ACTIVATION(GeluTanh, activation::gelu_tanh(x))
EMBER_DETAIL_ACTIVATION(Silu, activation::silu(x))
EMBER_DETAIL_ACTIVATION(Sigmoid, activation::sigmoid(x))
EMBER_DETAIL_ACTIVATION(Tanh, activation::tanh(x))
EMBER_DETAIL_ACTIVATION(Mish, activation::mish(x))
EMBER_DETAIL_ACTIVATION(Selu, activation::selu(x))
EMBER_DETAIL_ACTIVATION(HardSwish, activation::hard_swish(x))
EMBER_DETAIL_ACTIVATION(LogSigmoid, activation::log_sigmoid(x))
EMBER_DETAIL_ACTIVATION(Relu6, activation::relu6(x))
EMBER_DETAIL_ACTIVATION(Tanhshrink, activation::tanhshrink(x))
EMBER_DETAIL_ACTIVATION(Softsign, activation::softsign(x))

struct Hardtanh {
  double min = -1.0, max = 1.0;
  EMBER_MODULE(Hardtanh, min, max)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::hardtanh(x, min, max);
  }
};
/// x > threshold ? x : value.
struct Threshold {
  double threshold = 0.0, value = 0.0;
  EMBER_MODULE(Threshold, threshold, value)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::threshold(x, threshold, value);
  }
};
struct Hardshrink {
  double lambda = 0.5;
  EMBER_MODULE(Hardshrink, lambda)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::hardshrink(x, lambda);
  }
};
struct Softshrink {
  double lambda = 0.5;
  EMBER_MODULE(Softshrink, lambda)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::softshrink(x, lambda);
  }
};
/// The gated linear unit over `dim`.
struct Glu {
  int64_t dim = -1;
  EMBER_MODULE(Glu, dim)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::glu(x, dim);
  }
};

struct LeakyRelu {
  double negative_slope = 0.01;
  EMBER_MODULE(LeakyRelu, negative_slope)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::leaky_relu(x, negative_slope);
  }
};
struct Elu {
  double alpha = 1.0;
  EMBER_MODULE(Elu, alpha)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::elu(x, alpha);
  }
};
struct Celu {
  double alpha = 1.0;
  EMBER_MODULE(Celu, alpha)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::celu(x, alpha);
  }
};
struct Softplus {
  double beta = 1.0, threshold = 20.0;
  EMBER_MODULE(Softplus, beta, threshold)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::softplus(x, beta, threshold);
  }
};
struct HardSigmoid {
  double alpha = 1.0 / 6.0, beta = 0.5;
  EMBER_MODULE(HardSigmoid, alpha, beta)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::hard_sigmoid(x, alpha, beta);
  }
};
struct Softmax {
  int64_t dim = -1;
  EMBER_MODULE(Softmax, dim)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::softmax(x, dim);
  }
};
struct Softmin {
  int64_t dim = -1;
  EMBER_MODULE(Softmin, dim)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::softmin(x, dim);
  }
};
struct LogSoftmax {
  int64_t dim = -1;
  EMBER_MODULE(LogSoftmax, dim)
  template <Backend B, int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    return activation::log_softmax(x, dim);
  }
};

/// PReLU with one learned slope per channel (dim 1), or a single shared one.
template <Backend B>
struct PRelu {
  Param<Tensor<B, 1>> weight;
  EMBER_MODULE(PRelu, weight)
  template <int D>
  Tensor<B, D> forward(const Tensor<B, D>& x) const {
    const int64_t n = weight.shape()[0];
    std::array<int64_t, D> s;
    s.fill(1);
    if (n > 1) {
      if (D < 2 || x.dim(1) != n)
        throw ShapeError("[prelu] input " + x.shape().to_string() + " needs " + std::to_string(n) +
                         " channels at dim 1");
      s[1] = n;
    }
    return activation::prelu(x, weight.val().template reshape<D>(s));
  }
};
struct PReluConfig {
  int64_t num_parameters = 1;
  double init_value = 0.25;
  DType dtype = DType::F32;  // the parameters' float type
  EMBER_CONFIG(PReluConfig, num_parameters, init_value, dtype)
  template <Backend B>
  PRelu<B> init(Device dev = B::default_device()) const {
    if (num_parameters <= 0) throw ValueError("[prelu] num_parameters must be positive");
    double v = init_value;
    PRelu<B> m{Param<Tensor<B, 1>>::lazy({num_parameters}, dev, [v](const Shape& s, Device d) {
      return Tensor<B, 1>::full(s, v, d);
    })};
    return detail::in_dtype(std::move(m), dtype);
  }
};

}  // namespace ember::nn

#undef EMBER_DETAIL_ACTIVATION
