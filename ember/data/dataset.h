// Datasets: anything with an `Item` type, `get(i)` and `len()`. Items are read by index, so
// a dataset can be shuffled, split, sampled and loaded by several threads without copying it.
//
//   ember::data::InMemoryDataset<int> d({1, 2, 3});
//   d.get(2);   // 3
//   d.get(3);   // throws IndexError: "[dataset] index 3 out of range for length 3"
//
// Every dataset here is cheap to copy (its storage is shared), and `get` is const and safe to
// call from several threads at once; datasets written by users should be the same, because
// wrappers hold their inner dataset by value and the DataLoader calls `get` from its workers.
#pragma once
#include <concepts>
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "ember/core/error.h"
#include "ember/core/rng.h"

namespace ember::data {

template <class D>
concept Dataset = requires(const D& d, size_t i) {
  typename D::Item;
  { d.get(i) } -> std::convertible_to<typename D::Item>;
  { d.len() } -> std::convertible_to<size_t>;
};

/// A dataset whose random behaviour can follow the epoch (augmentations); the DataLoader calls
/// `set_epoch` before each epoch, and wrappers pass it on to the dataset they wrap.
template <class D>
concept EpochAware = requires(const D& d, uint64_t e) {
  d.set_epoch(e);
};

template <class D>
void forward_epoch(const D& d, uint64_t epoch) {
  if constexpr (EpochAware<D>) d.set_epoch(epoch);
}

/// Throws IndexError "[what] index i out of range for length n" unless i < n.
inline void check_index(size_t i, size_t n, std::string_view what = "dataset") {
  if (i >= n)
    throw IndexError("[" + std::string(what) + "] index " + std::to_string(i) +
                     " out of range for length " + std::to_string(n));
}

/// A seeded stream of random numbers: value k is a pure function of (seed, k), so the same
/// seed gives the same stream on every machine and thread.
class Rng {
 public:
  explicit Rng(uint64_t seed) : seed_(seed) {}
  uint64_t next() { return rng::bits(seed_, counter_++); }
  /// Uniform in [0, 1).
  double uniform() { return static_cast<double>(next() >> 11) * 0x1.0p-53; }
  /// Uniform in [0, n) without modulo bias; n > 0.
  uint64_t below(uint64_t n) {
    // Lemire's multiply-and-reject.
    unsigned __int128 m = static_cast<unsigned __int128>(next()) * n;
    uint64_t low = static_cast<uint64_t>(m);
    if (low < n) {
      uint64_t threshold = (0 - n) % n;
      while (low < threshold) {
        m = static_cast<unsigned __int128>(next()) * n;
        low = static_cast<uint64_t>(m);
      }
    }
    return static_cast<uint64_t>(m >> 64);
  }
  /// An integer in [lo, hi] (inclusive).
  int64_t between(int64_t lo, int64_t hi) {
    return lo + static_cast<int64_t>(below(static_cast<uint64_t>(hi - lo) + 1));
  }
  bool bernoulli(double p) { return uniform() < p; }

 private:
  uint64_t seed_;
  uint64_t counter_ = 0;
};

/// Two seeds combined into one (for per-epoch and per-item streams).
constexpr uint64_t derive_seed(uint64_t seed, uint64_t salt) { return rng::bits(seed, salt); }

/// A seeded permutation of 0..n-1 (Fisher-Yates).
inline std::vector<size_t> permutation(size_t n, uint64_t seed) {
  std::vector<size_t> p(n);
  for (size_t i = 0; i < n; ++i) p[i] = i;
  Rng r(seed);
  for (size_t i = n; i > 1; --i) std::swap(p[i - 1], p[r.below(i)]);
  return p;
}

/// Items held in memory, shared between copies.
template <class T>
class InMemoryDataset {
 public:
  using Item = T;
  InMemoryDataset() : items_(std::make_shared<const std::vector<T>>()) {}
  explicit InMemoryDataset(std::vector<T> items)
      : items_(std::make_shared<const std::vector<T>>(std::move(items))) {}
  T get(size_t i) const {
    check_index(i, items_->size());
    return (*items_)[i];
  }
  size_t len() const { return items_->size(); }
  const std::vector<T>& items() const { return *items_; }

 private:
  std::shared_ptr<const std::vector<T>> items_;
};

/// A type-erased dataset of `T`: holds any Dataset whose Item converts to T (for mixing
/// dataset types, e.g. in `concat`).
template <class T>
class AnyDataset {
 public:
  using Item = T;
  template <Dataset D>
  requires(!std::same_as<std::remove_cvref_t<D>, AnyDataset>) AnyDataset(D d)
      : impl_(std::make_shared<Model<D>>(std::move(d))) {}
  T get(size_t i) const { return impl_->get(i); }
  size_t len() const { return impl_->len(); }
  void set_epoch(uint64_t e) const { impl_->set_epoch(e); }

 private:
  struct Concept {
    virtual ~Concept() = default;
    virtual T get(size_t i) const = 0;
    virtual size_t len() const = 0;
    virtual void set_epoch(uint64_t e) const = 0;
  };
  template <class D>
  struct Model final : Concept {
    explicit Model(D d) : d(std::move(d)) {}
    T get(size_t i) const override { return d.get(i); }
    size_t len() const override { return d.len(); }
    void set_epoch(uint64_t e) const override { forward_epoch(d, e); }
    D d;
  };
  std::shared_ptr<const Concept> impl_;
};

}  // namespace ember::data
