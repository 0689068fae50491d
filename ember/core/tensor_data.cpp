#include "ember/core/tensor_data.h"

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>

namespace ember {

void convert_elements(const void* src, DType from, void* dst, DType to, size_t n) {
  if (n == 0) return;
  if (from == to) {
    std::memcpy(dst, src, n * size_of(from));
    return;
  }
  dispatch_dtype(from, [&]<class S>() {
    dispatch_dtype(to, [&]<class D>() {
      const S* s = static_cast<const S*>(src);
      D* d = static_cast<D*>(dst);
      for (size_t i = 0; i < n; ++i) d[i] = cast_value<D>(s[i]);
    });
  });
}

namespace detail {
namespace {
constexpr size_t kHugeFrom = size_t{4} << 20;
constexpr size_t kHugePage = size_t{2} << 20;
}  // namespace

void* host_allocate(size_t bytes) {
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
  if (bytes >= kHugeFrom) {
    void* p = nullptr;
    if (posix_memalign(&p, kHugePage, bytes) != 0) throw std::bad_alloc();
    madvise(p, bytes, MADV_HUGEPAGE);  // advice: without THP it changes nothing
    return p;
  }
#endif
  return ::operator new(bytes);
}

void host_deallocate(void* p, size_t bytes) noexcept {
#if defined(__linux__) && !defined(__EMSCRIPTEN__)
  if (bytes >= kHugeFrom) {
    std::free(p);
    return;
  }
#endif
  ::operator delete(p);
}
}  // namespace detail

TensorData::TensorData(Shape shape, DType dtype)
    : bytes_(allocate(shape, dtype)), shape_(std::move(shape)), dtype_(dtype) {
  if (!bytes_.empty()) std::memset(bytes_.data(), 0, bytes_.size());
}

TensorData TensorData::uninitialized(Shape shape, DType dtype) {
  TensorData d;
  d.bytes_ = allocate(shape, dtype);
  d.shape_ = std::move(shape);
  d.dtype_ = dtype;
  return d;
}

TensorData::TensorData(std::span<const std::byte> bytes, Shape shape, DType dtype)
    : shape_(std::move(shape)), dtype_(dtype) {
  if (static_cast<int64_t>(bytes.size()) != byte_size(shape_, size_of(dtype_), "tensor_data"))
    throw ValueError("[tensor_data] " + std::to_string(bytes.size()) + " bytes do not hold " +
                     shape_.to_string() + " of " + std::string(name(dtype_)));
  bytes_ = allocate(shape_, dtype_);
  if (!bytes.empty()) std::memcpy(bytes_.data(), bytes.data(), bytes.size());
}

TensorData::Bytes TensorData::allocate(const Shape& s, DType t) {
  int64_t bytes = byte_size(s, size_of(t), "tensor_data");
  auto out_of_memory = [&] {
    return MemoryError("[tensor_data] out of memory: " + std::to_string(bytes) + " bytes for " +
                           s.to_string() + " of " + std::string(name(t)),
                       bytes);
  };
  // Large sizes are tried without throwing first: some allocators (AddressSanitizer's) abort
  // on a failed throwing new instead of throwing. The probe costs nothing next to the fill.
  if (bytes >= (int64_t{1} << 30)) {
    void* p = ::operator new(static_cast<size_t>(bytes), std::nothrow);
    if (!p) throw out_of_memory();
    ::operator delete(p);
  }
  try {
    return Bytes(static_cast<size_t>(bytes));
  } catch (const std::bad_alloc&) {
    throw out_of_memory();
  } catch (const std::length_error&) {
    throw MemoryError("[tensor_data] " + std::to_string(bytes) + " bytes for " + s.to_string() +
                          " of " + std::string(name(t)) + " exceed what the host can address",
                      bytes);
  }
}

void TensorData::check_count(size_t n, const Shape& s) {
  byte_size(s, 1, "tensor_data");  // negative dims and overflowing counts
  if (static_cast<int64_t>(n) != s.numel())
    throw ShapeError("[tensor_data] " + std::to_string(n) + " values do not fill shape " +
                     s.to_string());
}

void TensorData::check_dtype(DType t) const {
  if (t != dtype_)
    throw DTypeError("[tensor_data] data is " + std::string(name(dtype_)) + ", asked for " +
                     std::string(name(t)));
}

TensorData TensorData::convert(DType to) const {
  TensorData out = uninitialized(shape_, to);
  convert_elements(bytes_.data(), dtype_, out.bytes_.data(), to, numel());
  return out;
}

bool TensorData::all_close(const TensorData& other, double rtol, double atol,
                           std::string* why) const {
  if (shape_ != other.shape_) {
    if (why) *why = "shapes differ: " + shape_.to_string() + " vs " + other.shape_.to_string();
    return false;
  }
  auto a = to_vec<double>();
  auto b = other.to_vec<double>();
  for (size_t i = 0; i < a.size(); ++i) {
    if (std::isnan(a[i]) && std::isnan(b[i])) continue;
    if (a[i] == b[i]) continue;  // equal infinities
    if (!(std::abs(a[i] - b[i]) <= atol + rtol * std::abs(b[i]))) {
      if (why)
        *why = "element " + std::to_string(i) + ": " + std::to_string(a[i]) + " vs " +
               std::to_string(b[i]);
      return false;
    }
  }
  return true;
}

}  // namespace ember
