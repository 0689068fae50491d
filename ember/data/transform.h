// Dataset wrappers: each takes a dataset by value and is itself a dataset, so they nest.
//
//   auto d = map(mnist, [](MnistItem it) { return it.label; });   // Item = uint8_t
//   auto [train, valid] = split(shuffle(d, 42), 0.9);              // 90% / 10%
//   auto few = select(d, {0, 10, 20});  auto boot = sample(d, 1000, 7, Replacement::With);
//   auto all = concat(train, valid);     auto w = windows(d, 5);   // Item = vector of 5
//   auto aug = augment(images, 3, [](Image im, Rng& r) { return random_hflip(im, r, 0.5); });
//
// Wrappers index their inner dataset lazily; the index tables (permutations, samples) are
// computed once at construction and shared between copies.
#pragma once
#include <algorithm>
#include <atomic>
#include <cmath>
#include <functional>
#include <type_traits>

#include "ember/data/dataset.h"

namespace ember::data {

// ---- map ------------------------------------------------------------------------------

/// Item = f(inner item).
template <Dataset D, class F>
class MapDataset {
 public:
  using Item = std::decay_t<std::invoke_result_t<const F&, typename D::Item>>;
  MapDataset(D d, F f) : d_(std::move(d)), f_(std::move(f)) {}
  Item get(size_t i) const { return std::invoke(f_, d_.get(i)); }
  size_t len() const { return d_.len(); }
  void set_epoch(uint64_t e) const requires EpochAware<D> { d_.set_epoch(e); }
  const D& inner() const { return d_; }

 private:
  D d_;
  F f_;
};
template <Dataset D, class F>
MapDataset<D, F> map(D d, F f) {
  return MapDataset<D, F>(std::move(d), std::move(f));
}

// ---- index tables: shuffle, select, sample ---------------------------------------------

/// Item i = inner item indices[i].
template <Dataset D>
class IndexedDataset {
 public:
  using Item = typename D::Item;
  /// Throws IndexError if an index is out of range for the inner dataset.
  IndexedDataset(D d, std::vector<size_t> indices, std::string_view what = "select")
      : d_(std::move(d)) {
    size_t n = d_.len();
    for (size_t k = 0; k < indices.size(); ++k)
      if (indices[k] >= n)
        throw IndexError("[" + std::string(what) + "] index " + std::to_string(indices[k]) +
                         " (entry " + std::to_string(k) + ") out of range for length " +
                         std::to_string(n));
    idx_ = std::make_shared<const std::vector<size_t>>(std::move(indices));
  }
  Item get(size_t i) const {
    check_index(i, idx_->size());
    return d_.get((*idx_)[i]);
  }
  size_t len() const { return idx_->size(); }
  void set_epoch(uint64_t e) const requires EpochAware<D> { d_.set_epoch(e); }
  /// The inner index of each item.
  const std::vector<size_t>& indices() const { return *idx_; }
  const D& inner() const { return d_; }

 private:
  D d_;
  std::shared_ptr<const std::vector<size_t>> idx_;
};

/// The items in a seeded random order (the same seed gives the same order).
template <Dataset D>
IndexedDataset<D> shuffle(D d, uint64_t seed) {
  size_t n = d.len();
  return IndexedDataset<D>(std::move(d), permutation(n, seed), "shuffle");
}

/// The items at `indices`, in that order (repeats allowed).
template <Dataset D>
IndexedDataset<D> select(D d, std::vector<size_t> indices) {
  return IndexedDataset<D>(std::move(d), std::move(indices), "select");
}

enum class Replacement { With, Without };

/// `n` items drawn with a seed. With replacement: each draw is uniform over the dataset.
/// Without: no item repeats until all have been drawn, then a fresh permutation starts, so
/// `n` may exceed len() (every full pass is a permutation).
template <Dataset D>
IndexedDataset<D> sample(D d, size_t n, uint64_t seed, Replacement r = Replacement::Without) {
  size_t len = d.len();
  if (len == 0 && n > 0) throw ValueError("[sample] cannot draw from an empty dataset");
  std::vector<size_t> idx;
  idx.reserve(n);
  if (r == Replacement::With) {
    Rng g(seed);
    for (size_t k = 0; k < n; ++k) idx.push_back(static_cast<size_t>(g.below(len)));
  } else {
    for (uint64_t pass = 0; idx.size() < n; ++pass) {
      auto p = permutation(len, derive_seed(seed, pass));
      size_t take = std::min(len, n - idx.size());
      idx.insert(idx.end(), p.begin(), p.begin() + static_cast<std::ptrdiff_t>(take));
    }
  }
  return IndexedDataset<D>(std::move(d), std::move(idx), "sample");
}

// ---- partial and split ------------------------------------------------------------------

/// Items [begin, end) of the inner dataset.
template <Dataset D>
class PartialDataset {
 public:
  using Item = typename D::Item;
  PartialDataset(D d, size_t begin, size_t end) : d_(std::move(d)), begin_(begin), end_(end) {
    if (begin > end || end > d_.len())
      throw IndexError("[partial] range [" + std::to_string(begin) + ", " + std::to_string(end) +
                       ") out of range for length " + std::to_string(d_.len()));
  }
  Item get(size_t i) const {
    check_index(i, len(), "partial");
    return d_.get(begin_ + i);
  }
  size_t len() const { return end_ - begin_; }
  size_t begin_index() const { return begin_; }
  void set_epoch(uint64_t e) const requires EpochAware<D> { d_.set_epoch(e); }
  const D& inner() const { return d_; }

 private:
  D d_;
  size_t begin_, end_;
};
template <Dataset D>
PartialDataset<D> partial(D d, size_t begin, size_t end) {
  return PartialDataset<D>(std::move(d), begin, end);
}

/// Consecutive parts of the given fractions (each in [0, 1], summing to at most 1). Part
/// boundaries are round(n * running sum), so sizes are within one item of fraction * n and
/// fractions summing to 1 cover every item.
template <Dataset D>
std::vector<PartialDataset<D>> split(D d, const std::vector<double>& fractions) {
  size_t n = d.len();
  double sum = 0;
  for (double f : fractions) {
    if (!(f >= 0 && f <= 1)) throw ValueError("[split] fraction " + std::to_string(f));
    sum += f;
  }
  if (sum > 1 + 1e-9) throw ValueError("[split] fractions sum to " + std::to_string(sum));
  std::vector<PartialDataset<D>> parts;
  double run = 0;
  size_t begin = 0;
  for (size_t k = 0; k < fractions.size(); ++k) {
    run += fractions[k];
    size_t end = std::min(n, static_cast<size_t>(std::llround(static_cast<double>(n) * run)));
    if (k + 1 == fractions.size() && std::abs(sum - 1) < 1e-9) end = n;
    parts.emplace_back(d, begin, std::max(begin, end));
    begin = std::max(begin, end);
  }
  return parts;
}
/// {train, valid}: the first round(n * train_fraction) items and the rest.
template <Dataset D>
std::pair<PartialDataset<D>, PartialDataset<D>> split(D d, double train_fraction) {
  if (!(train_fraction >= 0 && train_fraction <= 1))
    throw ValueError("[split] fraction " + std::to_string(train_fraction));
  auto parts = split(std::move(d), std::vector<double>{train_fraction, 1 - train_fraction});
  return {parts[0], parts[1]};
}

// ---- concat -----------------------------------------------------------------------------

/// Several datasets one after another.
template <Dataset D>
class ConcatDataset {
 public:
  using Item = typename D::Item;
  explicit ConcatDataset(std::vector<D> parts) : parts_(std::move(parts)) {
    size_t total = 0;
    for (const D& p : parts_) offsets_.push_back(total += p.len());
  }
  Item get(size_t i) const {
    check_index(i, len(), "concat");
    size_t k = static_cast<size_t>(std::upper_bound(offsets_.begin(), offsets_.end(), i) -
                                   offsets_.begin());
    return parts_[k].get(k == 0 ? i : i - offsets_[k - 1]);
  }
  size_t len() const { return offsets_.empty() ? 0 : offsets_.back(); }
  void set_epoch(uint64_t e) const requires EpochAware<D> {
    for (const D& p : parts_) p.set_epoch(e);
  }

 private:
  std::vector<D> parts_;
  std::vector<size_t> offsets_;  // running totals of the part lengths
};
template <Dataset D>
ConcatDataset<D> concat(std::vector<D> parts) {
  return ConcatDataset<D>(std::move(parts));
}
/// Datasets of one type stay that type; of several types (with one Item) become AnyDataset.
template <Dataset D0, Dataset... Ds>
auto concat(D0 first, Ds... rest) {
  if constexpr ((std::same_as<D0, Ds> && ...)) {
    return ConcatDataset<D0>(std::vector<D0>{std::move(first), std::move(rest)...});
  } else {
    using T = typename D0::Item;
    static_assert((std::same_as<T, typename Ds::Item> && ...), "concat needs one Item type");
    return ConcatDataset<AnyDataset<T>>(
        std::vector<AnyDataset<T>>{AnyDataset<T>(std::move(first)), AnyDataset<T>(rest)...});
  }
}

// ---- windows ----------------------------------------------------------------------------

/// Sliding windows: item i is inner items [i * stride, i * stride + size). Windows that would
/// run past the end are not produced.
template <Dataset D>
class WindowsDataset {
 public:
  using Item = std::vector<typename D::Item>;
  WindowsDataset(D d, size_t size, size_t stride) : d_(std::move(d)), size_(size), stride_(stride) {
    if (size == 0 || stride == 0)
      throw ValueError("[windows] size and stride must be positive, got " + std::to_string(size) +
                       " and " + std::to_string(stride));
  }
  Item get(size_t i) const {
    check_index(i, len(), "windows");
    Item w;
    w.reserve(size_);
    for (size_t k = 0; k < size_; ++k) w.push_back(d_.get(i * stride_ + k));
    return w;
  }
  size_t len() const {
    size_t n = d_.len();
    return n < size_ ? 0 : (n - size_) / stride_ + 1;
  }
  void set_epoch(uint64_t e) const requires EpochAware<D> { d_.set_epoch(e); }

 private:
  D d_;
  size_t size_, stride_;
};
template <Dataset D>
WindowsDataset<D> windows(D d, size_t size, size_t stride = 1) {
  return WindowsDataset<D>(std::move(d), size, stride);
}

// ---- random maps (augmentations) ---------------------------------------------------------

/// Item i = f(inner item i, rng) where rng is seeded from (seed, epoch, i): the same item
/// gets the same randomness in every run and on every thread, and new randomness each epoch.
/// The epoch is shared by copies and set by the DataLoader (or `set_epoch`) between epochs.
template <Dataset D, class F>
class RandomMapDataset {
 public:
  using Item = std::decay_t<std::invoke_result_t<const F&, typename D::Item, Rng&>>;
  RandomMapDataset(D d, uint64_t seed, F f)
      : d_(std::move(d)),
        f_(std::move(f)),
        seed_(seed),
        epoch_(std::make_shared<std::atomic<uint64_t>>(0)) {}
  Item get(size_t i) const {
    Rng r(derive_seed(derive_seed(seed_, epoch_->load(std::memory_order_relaxed)), i));
    return std::invoke(f_, d_.get(i), r);
  }
  size_t len() const { return d_.len(); }
  void set_epoch(uint64_t e) const {
    epoch_->store(e, std::memory_order_relaxed);
    forward_epoch(d_, e);
  }
  uint64_t epoch() const { return epoch_->load(std::memory_order_relaxed); }

 private:
  D d_;
  F f_;
  uint64_t seed_;
  std::shared_ptr<std::atomic<uint64_t>> epoch_;
};
template <Dataset D, class F>
RandomMapDataset<D, F> augment(D d, uint64_t seed, F f) {
  return RandomMapDataset<D, F>(std::move(d), seed, std::move(f));
}

}  // namespace ember::data
