// DataLoader: a dataset cut into batches, in a seeded per-epoch order, loaded by worker
// threads ahead of the training loop (at most `prefetch` batches ahead), each batch made by a
// batcher (a callable from std::vector<Item> to the batch, e.g. tensors on a device).
//
//   DataLoader loader(MnistDataset(Split::Train), MnistBatcher<Cpu>(),
//                     {.batch_size = 64, .shuffle = true, .seed = 1, .workers = 2});
//   for (int epoch = 0; epoch < 3; ++epoch)
//     for (auto& batch : loader) {            // one range-for = the rest of one epoch
//       step(batch.images, batch.targets);
//       save_checkpoint(loader.position());   // {epoch, batches done}
//     }
//   // later, in a new process with the same dataset and options:
//   loader.restore(saved);                    // the same remaining batches, in the same order
//
// Order: without shuffle, items 0..n-1; with shuffle, a permutation that depends only on
// (seed, epoch), so results do not depend on the number of workers, and epoch e+1 differs
// from e. A batch is items [b * batch_size, (b + 1) * batch_size) of that order; the last may
// be short (or dropped, with drop_last).
//
// Errors: an exception while loading item i (or batching) reaches the caller, when it gets to
// that batch, as a LoaderError naming the item, batch and epoch, with the original exception
// nested (std::rethrow_if_nested). The position stays at that batch.
#pragma once
#include <algorithm>
#include <condition_variable>
#include <cstdint>
#include <exception>
#include <functional>
#include <iterator>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <type_traits>
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"

namespace ember::data {

struct LoaderOptions {
  size_t batch_size = 1;
  bool shuffle = false;
  uint64_t seed = 0;
  bool drop_last = false;
  /// Threads that load and batch; 0 loads in the caller's thread when a batch is asked for.
  size_t workers = 0;
  /// Most batches loaded (or being loaded) ahead of the one the caller holds; 0 means
  /// 2 * workers.
  size_t prefetch = 0;
  /// Run the batcher in the workers (default) or in the caller's thread (for batchers that
  /// must run on one thread, e.g. a device that is not thread-safe).
  bool batch_in_workers = true;
  /// Data-parallel sharding (docs/distributed.md): the epoch's order is dealt out to
  /// `num_shards` ranks in turn and this loader keeps shard `shard`'s items, n / num_shards of
  /// them (the remainder is left out, so every rank runs as many batches). Batch b of the
  /// shards together holds the items of batch b of one loader with num_shards times the batch
  /// size.
  size_t num_shards = 1;
  size_t shard = 0;
};

/// Where a loader stands: the epoch, and how many of its batches the caller has taken. After
/// the last batch of epoch e the position is {e + 1, 0}.
struct EMBER_API LoaderPosition {
  uint64_t epoch = 0;
  size_t batch = 0;
  friend bool operator==(const LoaderPosition&, const LoaderPosition&) = default;
  /// "epoch=3 batch=17", and back.
  std::string to_string() const;
  static LoaderPosition parse(std::string_view s);
};

struct LoaderProgress {
  uint64_t epoch = 0;
  size_t batches_done = 0, batches_total = 0;
  size_t items_done = 0, items_total = 0;
};

/// A failure while loading item `item()` (npos for a batcher failure) of batch `batch()` in
/// epoch `epoch()`; the original exception is nested.
class EMBER_API LoaderError : public Error, public std::nested_exception {
 public:
  static constexpr size_t npos = static_cast<size_t>(-1);
  /// Must be constructed inside a catch block (it nests the current exception).
  LoaderError(const std::string& msg, size_t item, size_t batch, uint64_t epoch)
      : Error(msg), item_(item), batch_(batch), epoch_(epoch) {}
  size_t item() const { return item_; }
  size_t batch() const { return batch_; }
  uint64_t epoch() const { return epoch_; }

 private:
  size_t item_, batch_;
  uint64_t epoch_;
};

/// The default batcher: the batch is the vector of items.
struct CollectBatcher {
  template <class T>
  std::vector<T> operator()(std::vector<T> items) const {
    return items;
  }
};

namespace detail {
EMBER_API std::string exception_text(std::exception_ptr e);
}

template <Dataset D, class Batcher = CollectBatcher>
class DataLoader {
 public:
  using Item = typename D::Item;
  using Batch = std::decay_t<std::invoke_result_t<const Batcher&, std::vector<Item>&&>>;

  DataLoader(D dataset, Batcher batcher, LoaderOptions opt = {})
      : ds_(std::make_shared<const D>(std::move(dataset))),
        batcher_(std::make_shared<const Batcher>(std::move(batcher))),
        opt_(opt) {
    if (opt_.batch_size == 0) throw ValueError("[data_loader] batch_size must be positive");
    if (opt_.num_shards == 0 || opt_.shard >= opt_.num_shards)
      throw ValueError("[data_loader] shard " + std::to_string(opt_.shard) + " of " +
                       std::to_string(opt_.num_shards) + " shards does not exist");
    if (opt_.workers > 0 && opt_.prefetch == 0) opt_.prefetch = 2 * opt_.workers;
  }
  DataLoader(D dataset, LoaderOptions opt) requires std::same_as<Batcher, CollectBatcher>
      : DataLoader(std::move(dataset), CollectBatcher{}, opt) {}
  DataLoader(DataLoader&&) noexcept = default;
  DataLoader& operator=(DataLoader&&) noexcept = default;
  ~DataLoader() = default;

  const D& dataset() const { return *ds_; }
  const LoaderOptions& options() const { return opt_; }
  /// Batches per epoch.
  size_t len() const {
    size_t n = shard_len(), b = opt_.batch_size;
    return opt_.drop_last ? n / b : (n + b - 1) / b;
  }
  /// Items per epoch (without the ones drop_last leaves out).
  size_t num_items() const { return opt_.drop_last ? len() * opt_.batch_size : shard_len(); }
  /// The dataset indices of epoch `epoch`, in load order (this shard's).
  std::vector<size_t> epoch_order(uint64_t epoch) const {
    size_t n = ds_->len();
    std::vector<size_t> p(n);
    if (opt_.shuffle)
      p = permutation(n, derive_seed(opt_.seed, epoch));
    else
      for (size_t i = 0; i < n; ++i) p[i] = i;
    if (opt_.num_shards <= 1) return p;
    std::vector<size_t> mine(shard_len());
    for (size_t i = 0; i < mine.size(); ++i) mine[i] = p[i * opt_.num_shards + opt_.shard];
    return mine;
  }

  LoaderPosition position() const { return pos_; }
  /// Continues from `p` (as saved by position()); batches prefetched for the old position are
  /// dropped. Throws ValueError if p.batch > len().
  void restore(LoaderPosition p) {
    if (p.batch > len())
      throw ValueError("[data_loader] position batch " + std::to_string(p.batch) + " is past the " +
                       std::to_string(len()) + " batches of an epoch");
    run_.reset();
    if (p.batch == len() && len() > 0) p = {p.epoch + 1, 0};
    pos_ = p;
    ended_ = false;
  }
  /// Starts epoch `e` from its first batch.
  void set_epoch(uint64_t e) { restore({e, 0}); }

  LoaderProgress progress() const {
    LoaderProgress p;
    p.epoch = pos_.epoch;
    p.batches_total = len();
    p.items_total = num_items();
    p.batches_done = pos_.batch;
    p.items_done = std::min(pos_.batch * opt_.batch_size, p.items_total);
    return p;
  }

  /// The next batch of the current epoch; at the end of an epoch, std::nullopt once (the
  /// position has already moved to the next epoch), then the next epoch's batches.
  std::optional<Batch> next();

  class Iterator {
   public:
    using value_type = Batch;
    using difference_type = std::ptrdiff_t;
    Iterator() = default;
    Batch& operator*() const { return *cur_; }
    Batch* operator->() const { return &*cur_; }
    Iterator& operator++() {
      cur_ = dl_->next();
      return *this;
    }
    void operator++(int) { ++*this; }
    friend bool operator==(const Iterator& it, std::default_sentinel_t) { return !it.cur_; }

   private:

    friend class DataLoader;
    explicit Iterator(DataLoader* dl) : dl_(dl) { cur_ = dl_->next(); }
    DataLoader* dl_ = nullptr;
    mutable std::optional<Batch> cur_;
  };
  /// The remaining batches of the current epoch (all of them at an epoch start).
  Iterator begin() {
    ended_ = false;
    return Iterator(this);
  }
  std::default_sentinel_t end() { return {}; }

 private:
  size_t shard_len() const {
    return opt_.num_shards <= 1 ? ds_->len() : ds_->len() / opt_.num_shards;
  }
  // One epoch being loaded, from a start batch: the order, the workers, and the batches
  // loaded ahead (keyed by batch index, at most `prefetch` of them past the caller's).
  class Run {
   public:
    Run(const DataLoader& dl, uint64_t epoch, size_t start)
        : ds_(dl.ds_),
          batcher_(dl.batcher_),
          opt_(dl.opt_),
          epoch_(epoch),
          order_(dl.epoch_order(epoch)),
          nb_(dl.len()),
          claim_(start),
          consumed_(start) {
      forward_epoch(*ds_, epoch);
      for (size_t w = 0; w < opt_.workers; ++w) threads_.emplace_back([this] { work(); });
    }
    ~Run();
    Run(const Run&) = delete;
    Run& operator=(const Run&) = delete;

    /// Batch j, the next one the caller takes; rethrows its loading error.
    Batch take(size_t j) {
      if (opt_.workers == 0) return batch_of(load(j), j);
      Slot s;
      {
        std::unique_lock lk(mu_);
        ready_.wait(lk, [&] { return slots_.count(j) > 0; });
        s = std::move(slots_.at(j));
        slots_.erase(j);
        consumed_ = j + 1;
      }
      space_.notify_all();
      if (s.error) std::rethrow_exception(s.error);
      if (s.batch) return std::move(*s.batch);
      return batch_of(std::move(*s.items), j);
    }

   private:
    struct Slot {
      std::optional<Batch> batch;
      std::optional<std::vector<Item>> items;
      std::exception_ptr error;
    };

    std::vector<Item> load(size_t j) const {
      size_t begin = j * opt_.batch_size, end = std::min(order_.size(), begin + opt_.batch_size);
      std::vector<Item> items;
      items.reserve(end - begin);
      for (size_t k = begin; k < end; ++k) {
        size_t i = order_[k];
        try {
          items.push_back(ds_->get(i));
        } catch (...) {
          throw LoaderError("[data_loader] loading item " + std::to_string(i) + " (batch " +
                                std::to_string(j) + " of epoch " + std::to_string(epoch_) +
                                "): " + detail::exception_text(std::current_exception()),
                            i, j, epoch_);
        }
      }
      return items;
    }
    Batch batch_of(std::vector<Item> items, size_t j) const {
      try {
        return std::invoke(*batcher_, std::move(items));
      } catch (...) {
        size_t begin = j * opt_.batch_size;
        size_t end = std::min(order_.size(), begin + opt_.batch_size);
        throw LoaderError("[data_loader] batching batch " + std::to_string(j) + " of epoch " +
                              std::to_string(epoch_) + " (positions " + std::to_string(begin) +
                              ".." + std::to_string(end) +
                              "): " + detail::exception_text(std::current_exception()),
                          LoaderError::npos, j, epoch_);
      }
    }

    void work() {
      for (;;) {
        size_t j;
        {
          std::unique_lock lk(mu_);
          space_.wait(lk,
                      [&] { return stop_ || claim_ >= nb_ || claim_ < consumed_ + opt_.prefetch; });
          if (stop_ || claim_ >= nb_) return;
          j = claim_++;
        }
        Slot s;
        try {
          if (opt_.batch_in_workers)
            s.batch.emplace(batch_of(load(j), j));
          else
            s.items.emplace(load(j));
        } catch (...) {
          s.error = std::current_exception();
        }
        {
          std::lock_guard lk(mu_);
          slots_.emplace(j, std::move(s));
        }
        ready_.notify_all();
      }
    }

    std::shared_ptr<const D> ds_;
    std::shared_ptr<const Batcher> batcher_;
    LoaderOptions opt_;
    uint64_t epoch_;
    std::vector<size_t> order_;
    size_t nb_;
    std::mutex mu_;
    std::condition_variable ready_, space_;
    std::map<size_t, Slot> slots_;
    size_t claim_, consumed_;
    bool stop_ = false;
    std::vector<std::thread> threads_;
  };

  std::shared_ptr<const D> ds_;
  std::shared_ptr<const Batcher> batcher_;
  LoaderOptions opt_;
  LoaderPosition pos_;
  bool ended_ = false;  // the last batch of an epoch was taken; next() owes one nullopt
  std::unique_ptr<Run> run_;
};

template <Dataset D, class Batcher>
auto DataLoader<D, Batcher>::next() -> std::optional<Batch> {
  if (ended_) {
    ended_ = false;
    return std::nullopt;
  }
  size_t nb = len();
  if (nb == 0) {  // an empty epoch
    pos_ = {pos_.epoch + 1, 0};
    return std::nullopt;
  }
  if (!run_) run_ = std::make_unique<Run>(*this, pos_.epoch, pos_.batch);
  std::optional<Batch> b;
  try {
    b.emplace(run_->take(pos_.batch));
  } catch (...) {
    run_.reset();  // the next call retries this batch
    throw;
  }
  if (++pos_.batch == nb) {
    run_.reset();
    pos_ = {pos_.epoch + 1, 0};
    ended_ = true;
  }
  return b;
}

template <Dataset D, class Batcher>
DataLoader<D, Batcher>::Run::~Run() {
  {
    std::lock_guard lk(mu_);
    stop_ = true;
  }
  space_.notify_all();
  for (auto& t : threads_) t.join();
}

template <Dataset D>
DataLoader(D, LoaderOptions) -> DataLoader<D, CollectBatcher>;

}  // namespace ember::data
