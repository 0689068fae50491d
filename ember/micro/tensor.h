// Tensors of the freestanding build (ember::micro): float32, static rank D, row-major, on
// the `Micro` backend: portable scalar loops, no threads, no exceptions, no heap. A tensor
// either borrows constant data (weights in flash, never copied) or owns a block of the
// arena (arena.h), shared between copies and freed with the last one; an op on a tensor
// nobody else holds writes in place.
//
//   using T2 = ember::micro::Tensor<ember::micro::Micro, 2>;
//   static const float w[] = {1, 2, 3, 4};                 // in flash
//   auto x = T2::from_const(w, {2, 2});                    // no copy
//   auto y = x.matmul(x).reshape<1>({-1});                 // [4] in the arena
//   float first = y.data()[0];
//
// The names and signatures are the host's (ember/tensor/tensor.h) for what inference needs,
// so model code written against `template <Backend B>` compiles on both; docs/embedded.md
// lists what the host has and this build does not.
#pragma once
#include <array>
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <type_traits>
#include <utility>

#include "ember/micro/arena.h"
#include "ember/micro/error.h"

namespace ember::micro {

/// The one device of a microcontroller.
struct Device {
  constexpr bool operator==(const Device&) const = default;
};

/// A tensor's storage: a borrowed constant buffer, or an arena block shared by its copies.
class Storage {
 public:
  Storage() = default;
  static Storage borrow(const float* p) { return Storage(const_cast<float*>(p), false); }
  static Storage allocate(int64_t n, const char* what) {
    // Checked before multiplying: size_t is 32 bits on the microcontroller.
    if (n < 0 || static_cast<uint64_t>(n) > SIZE_MAX / sizeof(float) / 2)
      fail("[%s] %lld elements do not fit in memory", what, static_cast<long long>(n));
    return Storage(static_cast<float*>(arena_alloc(size_t(n) * sizeof(float), what)), true);
  }
  Storage(const Storage& o) : p_(o.p_), owned_(o.owned_) {
    if (owned_) arena_retain(p_);
  }
  Storage(Storage&& o) noexcept : p_(std::exchange(o.p_, nullptr)), owned_(o.owned_) {}
  Storage& operator=(Storage o) noexcept {
    std::swap(p_, o.p_);
    std::swap(owned_, o.owned_);
    return *this;
  }
  ~Storage() {
    if (owned_ && p_) arena_release(p_);
  }
  const float* data() const { return p_; }
  /// Writable only when this is the only owner of an arena block.
  bool unique() const { return owned_ && p_ && arena_refs(p_) == 1; }
  /// Whether the data is an arena block (else borrowed constant data).
  bool owned() const { return owned_; }
  float* mutable_data() const { return p_; }

 private:
  Storage(float* p, bool owned) : p_(p), owned_(owned) {}
  float* p_ = nullptr;
  bool owned_ = false;
};

/// The freestanding backend: names its handle and device; the kernels are in kernels.h.
struct Micro {
  using Handle = Storage;
  static constexpr const char* name() { return "micro"; }
  static constexpr Device default_device() { return {}; }
};

/// What model code asks of a backend here: a handle type and a default device.
template <class B>
concept Backend = requires {
  typename B::Handle;
  { B::default_device() } -> std::same_as<Device>;
};

/// The kind of a tensor's elements; this build has float tensors only.
struct Float {};

namespace detail {
/// "[1, 28, 28]" into `buf` (for error messages).
const char* format_dims(char* buf, size_t size, const int64_t* dims, int rank);
}  // namespace detail

/// A shape: dims and rank, what `Tensor::shape()` returns.
struct Shape {
  std::array<int64_t, 6> d{};
  int n = 0;
  int64_t operator[](size_t i) const { return d[i]; }
  size_t rank() const { return static_cast<size_t>(n); }
  int64_t numel() const {
    int64_t r = 1;
    for (int i = 0; i < n; ++i) r *= d[i];
    return r;
  }
};

template <Backend B, int D, class K = Float>
class Tensor {
  static_assert(D >= 1 && D <= 6, "ember::micro tensors have rank 1 to 6");
  static_assert(std::is_same_v<K, Float>, "ember::micro has float tensors only");

 public:
  using backend_type = B;
  using kind_type = K;
  static constexpr int kRank = D;

  Tensor() = default;
  /// A view of constant data (weights in flash): nothing is copied.
  static Tensor from_const(const float* p, std::array<int64_t, D> dims) {
    return Tensor(Storage::borrow(p), dims);
  }
  /// A copy of `p` in the arena.
  static Tensor from_values(const float* p, std::array<int64_t, D> dims) {
    Tensor t = uninit(dims, "from_values");
    for (int64_t i = 0, n = t.numel(); i < n; ++i) t.mut()[i] = p[i];
    return t;
  }
  static Tensor full(std::array<int64_t, D> dims, float v, Device = B::default_device()) {
    Tensor t = uninit(dims, "full");
    for (int64_t i = 0, n = t.numel(); i < n; ++i) t.mut()[i] = v;
    return t;
  }
  static Tensor zeros(std::array<int64_t, D> dims, Device dev = B::default_device()) {
    return full(dims, 0.0f, dev);
  }
  /// Arena storage left as it is, for an op's output.
  static Tensor uninit(std::array<int64_t, D> dims, const char* op) {
    int64_t n = 1;
    for (auto v : dims) n *= v;
    return Tensor(Storage::allocate(n, op), dims);
  }

  int64_t dim(int64_t i) const {
    if (i < -D || i >= D) fail("[dim] dim %d out of range for rank %d", int(i), D);
    return dims_[static_cast<size_t>(i < 0 ? i + D : i)];
  }
  const std::array<int64_t, D>& dims() const { return dims_; }
  Shape shape() const {
    Shape s;
    s.n = D;
    for (int i = 0; i < D; ++i) s.d[i] = dims_[i];
    return s;
  }
  int64_t numel() const {
    int64_t n = 1;
    for (auto v : dims_) n *= v;
    return n;
  }
  static constexpr int rank() { return D; }
  Device device() const { return {}; }
  const float* data() const { return s_.data(); }
  const Storage& handle() const { return s_; }
  /// Whether an op may write this tensor's storage in place (sole owner of arena memory).
  bool writable() const { return s_.unique(); }
  /// The storage to write: an op's fresh output, or a tensor that is writable().
  float* mut() const {
    if (!s_.owned()) fail("[mut] the tensor's data is constant (from_const)");
    return s_.mutable_data();
  }

  /// The same data under another shape; one dim may be -1 (inferred).
  template <int D2>
  Tensor<B, D2> reshape(std::array<int64_t, D2> dims) const {
    int64_t known = 1;
    int infer = -1;
    for (int i = 0; i < D2; ++i) {
      if (dims[i] == -1 && infer < 0)
        infer = i;
      else
        known *= dims[i];
    }
    if (infer >= 0 && known > 0) dims[infer] = numel() / known;
    int64_t n = 1;
    for (auto v : dims) n *= v;
    if (n != numel()) {
      char a[64], b[64];
      fail("[reshape] %s has %d elements, not those of %s",
           detail::format_dims(a, sizeof a, dims_.data(), D), int(numel()),
           detail::format_dims(b, sizeof b, dims.data(), D2));
    }
    return Tensor<B, D2>(s_, dims);
  }
  /// [.., n] -> [1, .., n] and the like: a dim of size 1 inserted at `at`.
  template <int D2>
  Tensor<B, D2> unsqueeze_dim(int64_t at) const {
    static_assert(D2 == D + 1, "unsqueeze_dim adds one dim");
    std::array<int64_t, D2> d{};
    for (int i = 0, j = 0; i < D2; ++i) d[i] = i == at ? 1 : dims_[j++];
    return Tensor<B, D2>(s_, d);
  }
  Tensor<B, 2> matmul(const Tensor<B, 2>& rhs) const requires(D == 2);

  Tensor operator+(const Tensor& o) const {
    return zip(o, "add", [](float a, float b) { return a + b; });
  }
  Tensor operator-(const Tensor& o) const {
    return zip(o, "sub", [](float a, float b) { return a - b; });
  }
  Tensor operator*(const Tensor& o) const {
    return zip(o, "mul", [](float a, float b) { return a * b; });
  }
  Tensor operator+(float v) const {
    return map([v](float a) { return a + v; });
  }
  Tensor operator*(float v) const {
    return map([v](float a) { return a * v; });
  }

  /// f applied to every element; in place when this tensor is the only owner of its storage.
  template <class F>
  Tensor map(F f) const& {
    Tensor out = uninit(dims_, "map");
    for (int64_t i = 0, n = numel(); i < n; ++i) out.mut()[i] = f(data()[i]);
    return out;
  }
  template <class F>
  Tensor map(F f) && {
    if (!writable()) return static_cast<const Tensor&>(*this).map(f);
    for (int64_t i = 0, n = numel(); i < n; ++i) mut()[i] = f(data()[i]);
    return std::move(*this);
  }

 private:
  template <Backend, int, class>
  friend class Tensor;
  Tensor(Storage s, std::array<int64_t, D> dims) : dims_(dims), s_(std::move(s)) {}

  template <class F>
  Tensor zip(const Tensor& o, const char* op, F f) const {
    if (o.dims_ != dims_) {
      char a[64], b[64];
      fail("[%s] shapes differ: lhs %s, rhs %s", op,
           detail::format_dims(a, sizeof a, dims_.data(), D),
           detail::format_dims(b, sizeof b, o.dims_.data(), D));
    }
    Tensor out = uninit(dims_, op);
    for (int64_t i = 0, n = numel(); i < n; ++i) out.mut()[i] = f(data()[i], o.data()[i]);
    return out;
  }

  std::array<int64_t, D> dims_{};
  Storage s_;
};

}  // namespace ember::micro

#include "ember/micro/kernels.h"

namespace ember::micro {

template <Backend B, int D, class K>
Tensor<B, 2> Tensor<B, D, K>::matmul(const Tensor<B, 2>& rhs) const requires(D == 2) {
  if (dims_[1] != rhs.dims_[0]) {
    char a[64], b[64];
    fail("[matmul] inner dims differ: lhs %s, rhs %s",
         detail::format_dims(a, sizeof a, dims_.data(), 2),
         detail::format_dims(b, sizeof b, rhs.dims_.data(), 2));
  }
  auto out = Tensor<B, 2>::uninit({dims_[0], rhs.dims_[1]}, "matmul");
  kernels::linear(data(), rhs.data(), nullptr, out.mut(), int32_t(dims_[0]), int32_t(dims_[1]),
                  int32_t(rhs.dims_[1]));
  return out;
}

}  // namespace ember::micro
