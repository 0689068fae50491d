// A vector of trivially copyable values stored inline up to N, on the heap beyond.
// Shapes, strides and op attributes use it so that a small op allocates nothing for them.
#pragma once
#include <algorithm>
#include <cstddef>
#include <cstring>
#include <initializer_list>
#include <memory>
#include <span>
#include <type_traits>

namespace ember {

// GCC 12 reports -Warray-bounds false positives on the inline buffer after deep inlining.
#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Warray-bounds"
#endif

template <class T, size_t N>
class SmallVec {
  static_assert(std::is_trivially_copyable_v<T>);

 public:
  using value_type = T;
  using iterator = T*;
  using const_iterator = const T*;

  SmallVec() = default;
  SmallVec(std::initializer_list<T> l) { assign(l.begin(), l.end()); }
  explicit SmallVec(size_t n, T v = T{}) {
    resize(n);
    std::fill(begin(), end(), v);
  }
  template <class It>
  requires(!std::is_integral_v<It>) SmallVec(It first, It last) { assign(first, last); }
  SmallVec(std::span<const T> s) { assign(s.begin(), s.end()); }  // NOLINT
  SmallVec(const SmallVec& o) { assign(o.begin(), o.end()); }
  SmallVec(SmallVec&& o) noexcept { *this = std::move(o); }
  SmallVec& operator=(const SmallVec& o) {
    if (this != &o) assign(o.begin(), o.end());
    return *this;
  }
  SmallVec& operator=(SmallVec&& o) noexcept {
    if (this == &o) return *this;
    if (o.heap_) {
      heap_ = std::move(o.heap_);
      cap_ = o.cap_;
      size_ = o.size_;
      o.cap_ = N;
      o.size_ = 0;
    } else {
      assign(o.begin(), o.end());
      o.size_ = 0;
    }
    return *this;
  }

  template <class It>
  void assign(It first, It last) {
    size_t n = static_cast<size_t>(std::distance(first, last));
    size_ = 0;
    reserve(n);
    std::copy(first, last, data());
    size_ = n;
  }
  void reserve(size_t n) {
    if (n <= cap_) return;
    size_t cap = std::max(n, cap_ * 2);
    auto h = std::make_unique<T[]>(cap);
    std::memcpy(h.get(), data(), size_ * sizeof(T));
    heap_ = std::move(h);
    cap_ = cap;
  }
  void resize(size_t n, T v = T{}) {
    reserve(n);
    for (size_t i = size_; i < n; ++i) data()[i] = v;
    size_ = n;
  }
  void push_back(T v) {
    reserve(size_ + 1);
    data()[size_++] = v;
  }
  void pop_back() { --size_; }
  void insert(size_t pos, T v) {
    reserve(size_ + 1);
    std::memmove(data() + pos + 1, data() + pos, (size_ - pos) * sizeof(T));
    data()[pos] = v;
    ++size_;
  }
  void erase(size_t pos) {
    std::memmove(data() + pos, data() + pos + 1, (size_ - pos - 1) * sizeof(T));
    --size_;
  }
  void clear() { size_ = 0; }

  T* data() { return heap_ ? heap_.get() : inline_; }
  const T* data() const { return heap_ ? heap_.get() : inline_; }
  size_t size() const { return size_; }
  bool empty() const { return size_ == 0; }
  T& operator[](size_t i) { return data()[i]; }
  const T& operator[](size_t i) const { return data()[i]; }
  T& back() { return data()[size_ - 1]; }
  const T& back() const { return data()[size_ - 1]; }
  T* begin() { return data(); }
  T* end() { return data() + size_; }
  const T* begin() const { return data(); }
  const T* end() const { return data() + size_; }
  operator std::span<const T>() const { return {data(), size_}; }  // NOLINT

  friend bool operator==(const SmallVec& a, const SmallVec& b) {
    return a.size_ == b.size_ && std::equal(a.begin(), a.end(), b.begin());
  }

 private:
  T inline_[N]{};
  std::unique_ptr<T[]> heap_;
  size_t size_ = 0;
  size_t cap_ = N;
};

#if defined(__GNUC__) && !defined(__clang__)
#pragma GCC diagnostic pop
#endif

}  // namespace ember
