// Tensor<B, D, K>: a tensor on backend B with static rank D and kind K (Float, Int, Bool).
// A value type over a reference-counted backend handle: copies are cheap and share data;
// ops on a temporary may reuse its buffer.
//
//   using T2 = ember::Tensor<ember::Cpu, 2>;
//   auto x = T2::from_data(ember::TensorData::from<float>({1, 2, 3, 4}, {2, 2}));
//   auto y = (x.matmul(x.transpose()) + 1.0f).exp().sum_dim(1);   // [2, 1]
//   std::cout << y;                                               // tensor([[...]], ...)
//
// The method families live in tensor_*.h next to this file; free functions (cat, stack,
// where, activations) in ops.h and activation.h.
#pragma once
#include <array>
#include <optional>
#include <ostream>
#include <vector>

#include "ember/autodiff/autodiff.h"
#include "ember/backend/apply.h"
#include "ember/core/rng.h"
#include "ember/ops/decompose.h"
#include "ember/tensor/kind.h"

namespace ember {

template <Backend B, int D, TensorKind K = Float>
class Tensor;

namespace detail {
template <class T>
struct is_tensor : std::false_type {};
template <Backend B, int D, class K>
struct is_tensor<Tensor<B, D, K>> : std::true_type {};
/// The errors of Tensor's constructor, out of line so that each Tensor type stays small.
[[noreturn]] EMBER_API void tensor_rank_error(int rank, const Shape& got);
[[noreturn]] EMBER_API void tensor_kind_error(DType got);
}  // namespace detail

template <Backend B, int D, TensorKind K>
class Tensor {
  static_assert(D >= 0, "rank must be >= 0");

 public:
  using backend_type = B;
  using kind_type = K;
  using Handle = typename B::Handle;
  static constexpr int kRank = D;

  /// Wraps a backend handle; throws if its rank is not D or its dtype not of kind K.
  explicit Tensor(Handle h) : h_(std::move(h)) {
    const TensorMeta& m = B::meta(h_);
    if (static_cast<int>(m.shape.rank()) != D) detail::tensor_rank_error(D, m.shape);
    if (!K::holds(m.dtype)) detail::tensor_kind_error(m.dtype);
  }

  // ---- creation ------------------------------------------------------------------------
  static Tensor from_data(const TensorData& d, Device dev = B::default_device()) {
    return Tensor(B::from_data(d, dev));
  }
  /// From values in row-major order: `Tensor<B, 2>::from_values<float>({1, 2, 3, 4}, {2, 2})`.
  template <class T>
  static Tensor from_values(const std::vector<T>& v, Shape s, Device dev = B::default_device()) {
    return from_data(TensorData::from<T>(v, std::move(s)), dev);
  }
  static Tensor full(Shape s, Scalar v, Device dev = B::default_device(), DType t = K::kDefault) {
    OpAttrs a;
    a.shape = s.dims();
    a.scalar = v;
    a.dtype = t;
    return create(OpCode::Full, std::move(a), dev);
  }
  static Tensor zeros(Shape s, Device dev = B::default_device(), DType t = K::kDefault) {
    return full(std::move(s), Scalar(int64_t{0}), dev, t);
  }
  static Tensor ones(Shape s, Device dev = B::default_device(), DType t = K::kDefault) {
    return full(std::move(s), Scalar(int64_t{1}), dev, t);
  }
  /// Uninitialized in spirit; ember fills it with zeros so results never depend on garbage.
  static Tensor empty(Shape s, Device dev = B::default_device(), DType t = K::kDefault) {
    return zeros(std::move(s), dev, t);
  }
  /// [start, end) by step (rank 1).
  static Tensor arange(Scalar start, Scalar end, Scalar step = Scalar(int64_t{1}),
                       Device dev = B::default_device(),
                       DType t = K::kDefault) requires(D == 1 && Numeric<K>) {
    double n = (end.f - start.f) / step.f;
    if (step.f == 0 || !(n == n))
      throw ValueError("[arange] bad range " + std::to_string(start.f) + ".." +
                       std::to_string(end.f) + " step " + std::to_string(step.f));
    OpAttrs a;
    a.shape = {static_cast<int64_t>(std::max(0.0, std::ceil(n)))};
    a.scalar = start;
    a.scalar2 = step;
    a.dtype = t;
    return create(OpCode::Arange, std::move(a), dev);
  }
  /// The n×n identity.
  static Tensor eye(int64_t n, Device dev = B::default_device(),
                    DType t = K::kDefault) requires(D == 2 && Numeric<K>) {
    auto i = Tensor<B, 1, Int>::arange(int64_t{0}, n, int64_t{1}, dev);
    auto eq = i.template unsqueeze_dim<2>(1).equal(i.template unsqueeze_dim<2>(0));
    return Tensor(eq.template cast_to<K>(t).handle());
  }
  static Tensor random(Shape s, Distribution dist, Device dev = B::default_device(),
                       DType t = K::kDefault) {
    OpAttrs a;
    a.shape = s.dims();
    a.dtype = t;
    a.seed = next_seed();
    OpCode c = OpCode::RandomUniform;
    switch (dist.kind) {
      case Distribution::Kind::Default:
        a.scalar = 0.0;
        a.scalar2 = 1.0;
        break;
      case Distribution::Kind::Uniform:
        a.scalar = dist.a;
        a.scalar2 = dist.b;
        break;
      case Distribution::Kind::Normal:
        c = OpCode::RandomNormal;
        a.scalar = dist.a;
        a.scalar2 = dist.b;
        break;
      case Distribution::Kind::Bernoulli:
        c = OpCode::RandomBernoulli;
        a.scalar = dist.a;
        break;
    }
    return create(c, std::move(a), dev);
  }
  Tensor zeros_like() const { return zeros(shape(), device(), dtype()); }
  Tensor ones_like() const { return ones(shape(), device(), dtype()); }
  Tensor full_like(Scalar v) const { return full(shape(), v, device(), dtype()); }
  Tensor random_like(Distribution d) const { return random(shape(), d, device(), dtype()); }

  // ---- information ---------------------------------------------------------------------
  const Shape& shape() const { return B::meta(h_).shape; }
  std::array<int64_t, D> dims() const {
    std::array<int64_t, D> a{};
    for (int i = 0; i < D; ++i) a[i] = shape()[i];
    return a;
  }
  int64_t dim(int64_t i) const { return shape()[wrap_dim(i, D, "dim")]; }
  DType dtype() const { return B::meta(h_).dtype; }
  Device device() const { return B::device(h_); }
  int64_t numel() const { return shape().numel(); }
  static constexpr int rank() { return D; }
  bool is_empty() const { return numel() == 0; }
  const Handle& handle() const& { return h_; }
  Handle handle() && { return std::move(h_); }

  TensorData to_data() const { return B::to_data(h_); }
  TensorData into_data() const { return B::to_data(h_); }
  template <class T>
  std::vector<T> to_vec() const {
    return to_data().template to_vec<T>();
  }
  /// The single element; throws if numel() != 1.
  template <class T = std::conditional_t<std::is_same_v<K, Float>, float,
                                         std::conditional_t<std::is_same_v<K, Int>, int64_t, bool>>>
  T into_scalar() const {
    if (numel() != 1)
      throw ShapeError("[into_scalar] needs one element, shape " + shape().to_string());
    return to_vec<T>()[0];
  }
  Tensor to_device(Device dev) const { return dev == device() ? *this : from_data(to_data(), dev); }
  std::string to_string() const { return format_tensor(to_data(), device().to_string()); }
  friend std::ostream& operator<<(std::ostream& os, const Tensor& t) { return os << t.to_string(); }

  // ---- casts ---------------------------------------------------------------------------
  /// Same kind, another element type: `x.cast(DType::F16)`.
  Tensor cast(DType t) const { return cast_to<K>(t); }
  /// The same values stored densely in row-major order (this tensor itself where it already
  /// is): what a view (permute, expand, slice, flip) becomes before code that wants plain
  /// memory, like torch.Tensor.contiguous.
  Tensor contiguous() const {
    OpAttrs a;
    a.dtype = dtype();
    a.flag = true;
    return run(OpCode::Cast, std::move(a), h_);
  }
  Tensor<B, D, Float> float_(DType t = DType::F32) const { return cast_to<Float>(t); }
  Tensor<B, D, Int> int_(DType t = DType::I64) const { return cast_to<Int>(t); }
  Tensor<B, D, Bool> bool_() const { return cast_to<Bool>(DType::Bool); }
  /// Reinterprets the kind without touching data; throws if the dtype does not fit.
  template <TensorKind K2>
  Tensor<B, D, K2> as_kind() const {
    return Tensor<B, D, K2>(h_);
  }

#include "ember/tensor/tensor_autodiff.inc"
#include "ember/tensor/tensor_index.inc"
#include "ember/tensor/tensor_math.inc"
#include "ember/tensor/tensor_reduce.inc"
#include "ember/tensor/tensor_shape.inc"

 private:
  template <Backend, int, TensorKind>
  friend class Tensor;

  template <int D2 = D, TensorKind K2 = K, class... Hs>
  static Tensor<B, D2, K2> run(Op op, Hs... hs) {
    std::array<Handle, sizeof...(Hs)> in{std::move(hs)...};
    return Tensor<B, D2, K2>(apply<B>(std::move(op), std::span<Handle>(in)));
  }
  template <int D2 = D, TensorKind K2 = K, class... Hs>
  static Tensor<B, D2, K2> run(OpCode c, OpAttrs a, Hs... hs) {
    return run<D2, K2>(Op{c, std::move(a)}, std::move(hs)...);
  }
  static Tensor create(OpCode c, OpAttrs a, Device dev) {
    return Tensor(apply<B>(Op{c, std::move(a)}, std::span<Handle>(), dev));
  }
  template <TensorKind K2>
  Tensor<B, D, K2> cast_to(DType t) const {
    if (!K2::holds(t))
      throw DTypeError("[cast] " + std::string(name(t)) + " does not fit the target kind");
    OpAttrs a;
    a.dtype = t;
    return run<D, K2>(OpCode::Cast, std::move(a), h_);
  }
  /// A rank-0 tensor of this tensor's dtype and device.
  Handle scalar_handle(Scalar v) const {
    OpAttrs a;
    a.scalar = v;
    a.dtype = dtype();
    return apply<B>(Op{OpCode::Full, std::move(a)}, std::span<Handle>(), device());
  }

  Handle h_;
};

}  // namespace ember

#include "ember/tensor/ops.h"
