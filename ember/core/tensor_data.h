// TensorData: a tensor's elements on the host (contiguous, row-major bytes) with its dtype
// and shape. It is how data enters and leaves every backend.
//
//   auto d = TensorData::from<float>({1, 2, 3, 4}, Shape{2, 2});
//   d.to_vec<int64_t>();          // {1, 2, 3, 4}
//   d.convert(DType::F16).dtype();  // DType::F16
#pragma once
#include <cstddef>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "ember/core/cast.h"
#include "ember/core/dtype.h"
#include "ember/core/error.h"
#include "ember/core/export.h"
#include "ember/core/shape.h"

namespace ember {

namespace detail {
/// Host memory for tensor bytes. Blocks of 4 MiB and more are aligned to 2 MiB and, on Linux,
/// marked for transparent huge pages, which halves what touching fresh memory costs.
EMBER_API void* host_allocate(size_t bytes);
EMBER_API void host_deallocate(void* p, size_t bytes) noexcept;

/// A std::allocator that leaves elements default-initialized (bytes: uninitialized), so a
/// buffer that is about to be overwritten is not zeroed first.
template <class T>
struct HostAllocator {
  using value_type = T;
  HostAllocator() = default;
  template <class U>
  HostAllocator(const HostAllocator<U>&) noexcept {}
  T* allocate(size_t n) { return static_cast<T*>(host_allocate(n * sizeof(T))); }
  void deallocate(T* p, size_t n) noexcept { host_deallocate(p, n * sizeof(T)); }
  template <class U>
  void construct(U* p) {
    ::new (static_cast<void*>(p)) U;
  }
  template <class U, class... A>
  void construct(U* p, A&&... a) {
    ::new (static_cast<void*>(p)) U(std::forward<A>(a)...);
  }
  friend bool operator==(HostAllocator, HostAllocator) { return true; }
};
}  // namespace detail

/// Converts `n` elements from `src` (of type `from`) into `dst` (of type `to`).
EMBER_API void convert_elements(const void* src, DType from, void* dst, DType to, size_t n);

class EMBER_API TensorData {
 public:
  TensorData() = default;
  /// Zero-filled data of the given shape and dtype.
  TensorData(Shape shape, DType dtype);
  /// A copy of `bytes`, which must hold exactly `shape` of `dtype`.
  TensorData(std::span<const std::byte> bytes, Shape shape, DType dtype);
  TensorData(const std::vector<std::byte>& bytes, Shape shape, DType dtype)
      : TensorData(std::span<const std::byte>(bytes), std::move(shape), dtype) {}
  /// Data whose bytes are left as they are, for a caller that writes every one of them
  /// (a download, a file read, a conversion): it saves zeroing memory that is overwritten.
  ///
  ///   auto d = TensorData::uninitialized(Shape{2}, DType::F32);
  ///   d.as_mut<float>()[0] = 1;  // ... and every other element
  static TensorData uninitialized(Shape shape, DType dtype);

  template <class T>
  static TensorData from(std::span<const T> values, Shape shape) {
    check_count(values.size(), shape);
    TensorData d = uninitialized(shape, dtype_of<T>());
    if (!values.empty()) std::memcpy(d.bytes_.data(), values.data(), values.size() * sizeof(T));
    return d;
  }
  template <class T>
  static TensorData from(const std::vector<T>& values, Shape shape) {
    if constexpr (std::is_same_v<T, bool>) {
      check_count(values.size(), shape);
      TensorData d(shape, DType::Bool);
      for (size_t i = 0; i < values.size(); ++i) d.bytes_[i] = std::byte{values[i]};
      return d;
    } else {
      return from(std::span<const T>(values), std::move(shape));
    }
  }
  template <class T>
  static TensorData from(std::initializer_list<T> values, Shape shape) {
    return from(std::vector<T>(values), std::move(shape));
  }
  /// A rank-0 tensor holding one value.
  template <class T>
  static TensorData scalar(T v) {
    return from(std::vector<T>{v}, Shape{});
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int64_t numel() const { return shape_.numel(); }
  std::span<const std::byte> bytes() const { return bytes_; }
  std::span<std::byte> bytes() { return bytes_; }

  /// The elements as T; throws DTypeError if T is not the stored dtype.
  template <class T>
  std::span<const T> as() const {
    check_dtype(dtype_of<T>());
    return {reinterpret_cast<const T*>(bytes_.data()), static_cast<size_t>(numel())};
  }
  template <class T>
  std::span<T> as_mut() {
    check_dtype(dtype_of<T>());
    return {reinterpret_cast<T*>(bytes_.data()), static_cast<size_t>(numel())};
  }
  /// The elements converted to T.
  template <class T>
  std::vector<T> to_vec() const {
    if constexpr (std::is_same_v<T, bool>) {
      auto c = convert(DType::Bool);
      std::vector<bool> out(numel());
      for (size_t i = 0; i < out.size(); ++i) out[i] = c.bytes_[i] != std::byte{0};
      return out;
    } else {
      std::vector<T> out(numel());
      convert_elements(bytes_.data(), dtype_, out.data(), dtype_of<T>(), out.size());
      return out;
    }
  }
  TensorData convert(DType to) const;
  /// Same shape and, after converting both to f64, every element within atol + rtol*|b|
  /// (NaNs equal NaNs). The message says where the first difference is.
  bool all_close(const TensorData& other, double rtol = 1e-5, double atol = 1e-8,
                 std::string* why = nullptr) const;
  friend bool operator==(const TensorData& a, const TensorData& b) {
    return a.dtype_ == b.dtype_ && a.shape_ == b.shape_ && a.bytes_ == b.bytes_;
  }

 private:
  static void check_count(size_t n, const Shape& s);
  using Bytes = std::vector<std::byte, detail::HostAllocator<std::byte>>;
  static Bytes allocate(const Shape& s, DType t);
  void check_dtype(DType t) const;
  Bytes bytes_;
  Shape shape_;
  DType dtype_ = DType::F32;
};

/// PyTorch-like text: "tensor([[1., 2.],\n        [3., 4.]], shape=[2, 2], dtype=f32)".
EMBER_API std::string format_tensor(const TensorData& d, std::string_view device = "cpu");

}  // namespace ember
