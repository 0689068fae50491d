// Param<Tensor<B, D>>: a trainable tensor of a module, with a stable id (optimizer state and
// gradients are keyed by it) and lazy initialization (a model about to be loaded from a file
// never pays for its random init). Buffer<Tensor<B, D>>: state saved with the module but not
// trained (BatchNorm's running statistics).
//
//   nn::Param<Tensor<B, 2>> w(Tensor<B, 2>::zeros({3, 4}));     // initialized now
//   auto lazy = nn::Param<Tensor<B, 2>>::lazy({3, 4}, dev, [](const Shape& s, Device d) {
//     return Tensor<B, 2>::random(s, Distribution::normal(0, 1), d);
//   });
//   lazy.shape();           // [3, 4], without initializing
//   lazy.val();             // initializes on first use
//
// On an Autodiff backend a trainable parameter's value is a leaf that requires a gradient;
// a frozen one (set_trainable(false)) is detached.
#pragma once
#include <atomic>
#include <functional>
#include <memory>
#include <optional>

#include "ember/backend/extern.h"
#include "ember/tensor/tensor.h"

namespace ember::nn {

/// Identifies a parameter across copies of a module and across backends (valid()).
using ParamId = uint64_t;
/// A process-unique id (never 0; 0 marks a default-constructed, empty parameter).
inline ParamId new_param_id() {
  static std::atomic<ParamId> next{1};
  return next.fetch_add(1, std::memory_order_relaxed);
}

template <class T>
class Param;

template <Backend B, int D, TensorKind K>
class Param<Tensor<B, D, K>> {
 public:
  using Value = Tensor<B, D, K>;
  using Init = std::function<Value(const Shape&, Device)>;

  /// An empty parameter (a slot to assign to).
  Param() = default;
  explicit Param(Value v, bool trainable = true) : id_(new_param_id()), trainable_(trainable) {
    set(std::move(v));
  }
  /// A parameter initialized by `init(shape, device)` on first use. Copies made before that
  /// share the initialization, so they see the same values.
  static Param lazy(Shape shape, Device dev, Init init, bool trainable = true) {
    Param p;
    p.id_ = new_param_id();
    p.trainable_ = trainable;
    p.shape_ = std::move(shape);
    p.device_ = dev;
    p.lazy_ = std::make_shared<LazyCell>(LazyCell{std::move(init), std::nullopt});
    return p;
  }

  /// The value (initializing it first if lazy).
  const Value& val() const {
    if (!value_) init_value();
    return *value_;
  }
  /// Replaces the value, keeping the id (what optimizers and loaders do). On an Autodiff
  /// backend the new value becomes a fresh leaf.
  void set(Value v);
  /// Same value and id on `dev` (a lazy parameter stays lazy, initialized there).
  void to_device(Device dev) {
    if (is_initialized())  // also a copy whose shared lazy cell another copy has filled
      set(val().to_device(dev));
    else
      device_ = dev;
  }

  ParamId id() const { return id_; }
  /// Copies the id of another parameter (used when a module is moved between backends).
  void set_id(ParamId id) { id_ = id; }
  bool empty() const { return id_ == 0; }
  bool is_initialized() const { return value_.has_value() || (lazy_ && lazy_->value); }
  const Shape& shape() const { return shape_; }
  Device device() const { return device_; }
  int64_t numel() const { return shape_.numel(); }
  bool trainable() const { return trainable_; }
  void set_trainable(bool t) {
    trainable_ = t;
    if (value_) value_ = track(*value_);
  }

 private:
  struct LazyCell {
    Init init;
    std::optional<Value> value;
  };
  void init_value() const;
  Value track(Value v) const {
    if constexpr (AutodiffBackend<B> && std::is_same_v<K, Float>)
      return trainable_ ? v.detach().require_grad() : v.detach();
    else
      return v;
  }

  ParamId id_ = 0;
  bool trainable_ = true;
  Shape shape_;
  Device device_ = B::default_device();
  mutable std::optional<Value> value_;
  std::shared_ptr<LazyCell> lazy_;
};

template <Backend B, int D, TensorKind K>
void Param<Tensor<B, D, K>>::init_value() const {
  if (!lazy_) throw ValueError("[param] use of an empty parameter");
  if (!lazy_->value) lazy_->value = lazy_->init(shape_, device_);
  value_ = track(*lazy_->value);
}

template <Backend B, int D, TensorKind K>
void Param<Tensor<B, D, K>>::set(Value v) {
  if (id_ == 0) id_ = new_param_id();
  shape_ = v.shape();
  device_ = v.device();
  value_ = track(std::move(v));
  lazy_.reset();
}

// Compiled once in the library for the Dispatch stacks, ranks 1 to 4 (ember/nn/instantiate.cpp).
#define EMBER_DETAIL_PARAM_INSTANCES(ext, B)                      \
  ext template class EMBER_INSTANCE_API(ext) Param<Tensor<B, 1>>; \
  ext template class EMBER_INSTANCE_API(ext) Param<Tensor<B, 2>>; \
  ext template class EMBER_INSTANCE_API(ext) Param<Tensor<B, 3>>; \
  ext template class EMBER_INSTANCE_API(ext) Param<Tensor<B, 4>>;
EMBER_DETAIL_PARAM_INSTANCES(extern, Dispatch)
EMBER_DETAIL_PARAM_INSTANCES(extern, AutodiffDispatch)

template <class T>
class Buffer;

template <Backend B, int D, TensorKind K>
class Buffer<Tensor<B, D, K>> {
 public:
  using Value = Tensor<B, D, K>;
  Buffer() = default;
  explicit Buffer(Value v) { set(std::move(v)); }
  const Value& val() const {
    if (!value_) throw ValueError("[buffer] use of an empty buffer");
    return *value_;
  }
  void set(Value v) {
    if constexpr (AutodiffBackend<B>)
      value_ = v.detach();
    else
      value_ = std::move(v);
  }
  bool empty() const { return !value_.has_value(); }
  const Shape& shape() const { return val().shape(); }

 private:
  std::optional<Value> value_;
};

namespace detail {
template <class T>
struct is_param : std::false_type {};
template <class T>
struct is_param<Param<T>> : std::true_type {};
template <class T>
struct is_buffer : std::false_type {};
template <class T>
struct is_buffer<Buffer<T>> : std::true_type {};
}  // namespace detail

template <class T>
concept ParamLike = detail::is_param<std::remove_const_t<T>>::value;
template <class T>
concept BufferLike = detail::is_buffer<std::remove_const_t<T>>::value;

}  // namespace ember::nn
