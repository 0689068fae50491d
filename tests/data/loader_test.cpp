// DataLoader: order, batches, drop_last, seeded per-epoch shuffle, workers, bounded prefetch,
// errors with the item index, saved positions, progress.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <numeric>
#include <set>
#include <thread>

#include "ember/backends/cpu/cpu.h"
#include "ember/data/batcher.h"
#include "ember/data/loader.h"
#include "ember/data/transform.h"

using namespace ember;
using namespace ember::data;
using Batches = std::vector<std::vector<int>>;

namespace {

InMemoryDataset<int> range_dataset(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return InMemoryDataset<int>(v);
}

template <class L>
Batches one_epoch(L& loader) {
  Batches out;
  for (auto& b : loader) out.push_back(b);
  return out;
}

LoaderOptions opts(size_t batch, size_t workers = 0, bool shuffle = false, uint64_t seed = 0) {
  LoaderOptions o;
  o.batch_size = batch;
  o.workers = workers;
  o.shuffle = shuffle;
  o.seed = seed;
  return o;
}

// Counts get() calls; optionally sleeps per item and fails at one index.
struct Probe {
  using Item = int;
  size_t n;
  std::shared_ptr<std::atomic<size_t>> fetched = std::make_shared<std::atomic<size_t>>(0);
  size_t fail_at = static_cast<size_t>(-1);
  int sleep_us = 0;
  int get(size_t i) const {
    check_index(i, n);
    ++*fetched;
    if (sleep_us) std::this_thread::sleep_for(std::chrono::microseconds(sleep_us));
    if (i == fail_at) throw ValueError("[probe] item is broken");
    return static_cast<int>(i);
  }
  size_t len() const { return n; }
};

std::vector<int> flat(const Batches& bs) {
  std::vector<int> out;
  for (const auto& b : bs) out.insert(out.end(), b.begin(), b.end());
  return out;
}

}  // namespace

TEST(Loader, OrderWithoutShuffle) {
  DataLoader loader(range_dataset(10), opts(4));
  EXPECT_EQ(loader.len(), 3u);
  EXPECT_EQ(one_epoch(loader), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  EXPECT_EQ(loader.position(), (LoaderPosition{1, 0}));
  // The next range-for is the next epoch, in the same order.
  EXPECT_EQ(one_epoch(loader), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}}));
  for (size_t w : {1, 3}) {
    DataLoader lw(range_dataset(10), opts(4, w));
    EXPECT_EQ(one_epoch(lw), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}, {8, 9}})) << w;
  }
}

TEST(Loader, DropLast) {
  auto o = opts(4);
  o.drop_last = true;
  DataLoader loader(range_dataset(10), o);
  EXPECT_EQ(loader.len(), 2u);
  EXPECT_EQ(loader.num_items(), 8u);
  EXPECT_EQ(one_epoch(loader), (Batches{{0, 1, 2, 3}, {4, 5, 6, 7}}));
  DataLoader exact(range_dataset(8), o);
  EXPECT_EQ(exact.len(), 2u);
  DataLoader none(range_dataset(3), o);
  EXPECT_EQ(none.len(), 0u);
  EXPECT_TRUE(one_epoch(none).empty());
  EXPECT_EQ(none.position().epoch, 1u);
  EXPECT_THROW(DataLoader(range_dataset(3), opts(0)), ValueError);
}

TEST(Loader, ShardsDealTheOrderOutAndTogetherMakeTheWholeBatches) {
  // 3 shards of 11 items, batch 2 each: 3 items each (the 11th is left out), and batch b of
  // the shards together is batch b of one loader of batch 6 over the same order.
  auto o = opts(6);
  o.shuffle = true;
  o.seed = 9;
  DataLoader whole(range_dataset(11), o);
  Batches all = one_epoch(whole);
  std::vector<Batches> shards;
  for (size_t k = 0; k < 3; ++k) {
    auto so = opts(2);
    so.shuffle = true;
    so.seed = 9;
    so.num_shards = 3;
    so.shard = k;
    DataLoader s(range_dataset(11), so);
    EXPECT_EQ(s.num_items(), 3u);
    EXPECT_EQ(s.len(), 2u);
    shards.push_back(one_epoch(s));
  }
  for (size_t b = 0; b < 2; ++b) {
    std::vector<int> joined;
    for (size_t k = 0; k < 3; ++k)
      if (b < shards[k].size())
        joined.insert(joined.end(), shards[k][b].begin(), shards[k][b].end());
    std::vector<int> want(all[b].begin(), all[b].end());
    if (b == 1) want.resize(3);  // the whole loader's last batch: order[6..11); shards: [6..9)
    std::sort(joined.begin(), joined.end());
    std::sort(want.begin(), want.end());
    EXPECT_EQ(joined, want) << "batch " << b;
  }
  std::set<int> seen;
  for (const auto& sb : shards)
    for (int i : flat(sb)) EXPECT_TRUE(seen.insert(i).second) << i << " dealt twice";
  EXPECT_EQ(seen.size(), 9u);
  auto bad = opts(2);
  bad.num_shards = 2;
  bad.shard = 2;
  EXPECT_THROW(DataLoader(range_dataset(4), bad), ValueError);
}

TEST(Loader, SeededShuffleIsDeterministicAcrossRunsAndWorkerCounts) {
  auto run = [](size_t workers, uint64_t seed) {
    DataLoader loader(range_dataset(103), opts(8, workers, true, seed));
    std::vector<Batches> epochs;
    for (int e = 0; e < 3; ++e) epochs.push_back(one_epoch(loader));
    return epochs;
  };
  auto ref = run(0, 42);
  EXPECT_EQ(run(0, 42), ref);
  EXPECT_EQ(run(1, 42), ref);
  EXPECT_EQ(run(4, 42), ref);
  EXPECT_NE(run(4, 43), ref);
  // Each epoch is a permutation of the whole dataset; epochs differ.
  for (const auto& ep : ref) {
    auto v = flat(ep);
    std::sort(v.begin(), v.end());
    std::vector<int> want(103);
    std::iota(want.begin(), want.end(), 0);
    EXPECT_EQ(v, want);
    EXPECT_EQ(ep.size(), 13u);
    EXPECT_EQ(ep.back().size(), 7u);
  }
  EXPECT_NE(ref[0], ref[1]);
  EXPECT_NE(ref[1], ref[2]);
  // The order is a function of (seed, epoch) only.
  DataLoader l(range_dataset(103), opts(8, 0, true, 42));
  auto order = l.epoch_order(2);
  EXPECT_EQ(std::vector<int>(order.begin(), order.end()), flat(ref[2]));
}

TEST(Loader, TensorBatchesAreIdenticalAcrossWorkerCounts) {
  // Items from a deterministic generator, batched into tensors.
  std::vector<MnistItem> items(37);
  for (size_t i = 0; i < items.size(); ++i) {
    for (size_t k = 0; k < 784; ++k) items[i].image[k] = static_cast<uint8_t>((i * 7 + k) % 256);
    items[i].label = static_cast<uint8_t>(i % 10);
  }
  auto run = [&](size_t workers) {
    DataLoader loader(InMemoryDataset<MnistItem>(items), MnistBatcher<Cpu>(),
                      opts(5, workers, true, 7));
    std::vector<std::pair<std::vector<float>, std::vector<int64_t>>> out;
    for (auto& b : loader) out.emplace_back(b.images.to_vec<float>(), b.targets.to_vec<int64_t>());
    return out;
  };
  auto ref = run(0);
  ASSERT_EQ(ref.size(), 8u);
  EXPECT_EQ(ref.back().second.size(), 2u);
  EXPECT_EQ(run(1), ref);
  EXPECT_EQ(run(4), ref);
}

TEST(Loader, WorkerExceptionNamesTheItem) {
  for (size_t workers : {0, 1, 4}) {
    Probe p{100};
    p.fail_at = 37;
    DataLoader loader(p, opts(10, workers));
    size_t seen = 0;
    try {
      for (auto& b : loader) {
        (void)b;
        ++seen;
      }
      FAIL() << "no error";
    } catch (const LoaderError& e) {
      std::string msg = e.what();
      EXPECT_NE(msg.find("loading item 37 (batch 3 of epoch 0)"), std::string::npos) << msg;
      EXPECT_NE(msg.find("[probe] item is broken"), std::string::npos) << msg;
      EXPECT_EQ(e.item(), 37u);
      EXPECT_EQ(e.batch(), 3u);
      EXPECT_THROW(std::rethrow_if_nested(e), ValueError);  // the original, nested
    }
    EXPECT_EQ(seen, 3u) << workers;  // batches 0..2 arrived first, in order
    EXPECT_EQ(loader.position(), (LoaderPosition{0, 3}));
    // It is an ember::Error, and the loader retries the batch on the next call.
    EXPECT_THROW(loader.next(), Error);
  }
  // With shuffle, the reported index is the dataset index, not the position.
  Probe p{50};
  p.fail_at = 11;
  DataLoader loader(p, opts(50, 2, true, 3));
  try {
    loader.next();
    FAIL();
  } catch (const LoaderError& e) {
    EXPECT_EQ(e.item(), 11u);
  }
}

TEST(Loader, BatcherExceptionSurfaces) {
  auto bad = [](std::vector<int> v) -> int {
    if (v[0] == 4) throw std::runtime_error("no fours");
    return v[0];
  };
  for (size_t workers : {0, 2}) {
    DataLoader loader(range_dataset(10), bad, opts(2, workers));
    EXPECT_EQ(*loader.next(), 0);
    EXPECT_EQ(*loader.next(), 2);
    try {
      loader.next();
      FAIL();
    } catch (const LoaderError& e) {
      EXPECT_EQ(e.item(), LoaderError::npos);
      EXPECT_NE(std::string(e.what()).find("batching batch 2 of epoch 0"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("no fours"), std::string::npos);
    }
  }
}

TEST(Loader, ResumeFromASavedPositionGivesTheRemainingBatches) {
  for (size_t workers : {0, 3}) {
    auto o = opts(7, workers, true, 99);
    DataLoader full(range_dataset(60), o);
    std::vector<Batches> epochs = {one_epoch(full), one_epoch(full)};

    // Stop after 4 batches of epoch 1, save, resume in a new loader.
    DataLoader a(range_dataset(60), o);
    one_epoch(a);
    LoaderPosition saved;
    Batches first;
    for (auto& b : a) {
      first.push_back(b);
      saved = a.position();
      if (first.size() == 4) break;
    }
    EXPECT_EQ(saved, (LoaderPosition{1, 4}));
    std::string text = saved.to_string();
    EXPECT_EQ(text, "epoch=1 batch=4");

    DataLoader b(range_dataset(60), o);
    b.restore(LoaderPosition::parse(text));
    EXPECT_EQ(b.progress().batches_done, 4u);
    EXPECT_EQ(b.progress().items_done, 28u);
    Batches rest = one_epoch(b);
    Batches want(epochs[1].begin() + 4, epochs[1].end());
    EXPECT_EQ(rest, want) << workers;
    // And the interrupted loader itself continues where it stopped.
    EXPECT_EQ(one_epoch(a), want);
    // A position at the end of an epoch is the start of the next.
    DataLoader c(range_dataset(60), o);
    c.restore({0, c.len()});
    EXPECT_EQ(c.position(), (LoaderPosition{1, 0}));
    EXPECT_EQ(one_epoch(c), epochs[1]);
    EXPECT_THROW(c.restore({0, c.len() + 1}), ValueError);
  }
  EXPECT_THROW(LoaderPosition::parse("epoch=1"), ValueError);
  EXPECT_THROW(LoaderPosition::parse("epoch=-1 batch=2"), ValueError);
  EXPECT_EQ(LoaderPosition::parse("epoch=12 batch=0"), (LoaderPosition{12, 0}));
}

TEST(Loader, RestoreDropsPrefetchedBatches) {
  DataLoader loader(range_dataset(40), opts(4, 2));
  EXPECT_EQ(*loader.next(), (std::vector<int>{0, 1, 2, 3}));
  loader.restore({0, 7});
  EXPECT_EQ(*loader.next(), (std::vector<int>{28, 29, 30, 31}));
  loader.set_epoch(5);
  EXPECT_EQ(loader.position(), (LoaderPosition{5, 0}));
  EXPECT_EQ(*loader.next(), (std::vector<int>{0, 1, 2, 3}));
}

TEST(Loader, NextSignalsEachEpochEndOnce) {
  DataLoader loader(range_dataset(5), opts(2));
  int batches = 0, ends = 0;
  for (int k = 0; k < 8; ++k) {
    if (loader.next())
      ++batches;
    else
      ++ends;
  }
  EXPECT_EQ(batches, 6);  // 3 per epoch
  EXPECT_EQ(ends, 2);
  EXPECT_EQ(loader.position(), (LoaderPosition{2, 0}));
}

TEST(Loader, PrefetchIsBounded) {
  for (size_t prefetch : {1, 3}) {
    Probe p{400};
    auto o = opts(10, 2);
    o.prefetch = prefetch;
    DataLoader loader(p, o);
    auto first = loader.next();
    ASSERT_TRUE(first);
    // The caller holds batch 0; the workers may load batches 1..prefetch and no more.
    const size_t bound = (1 + prefetch) * 10;
    auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (p.fetched->load() < bound && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(p.fetched->load(), bound) << prefetch;
    // Taking one batch lets exactly one more batch load.
    loader.next();
    deadline = std::chrono::steady_clock::now() + std::chrono::seconds(5);
    while (p.fetched->load() < bound + 10 && std::chrono::steady_clock::now() < deadline)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_EQ(p.fetched->load(), bound + 10);
    // The whole epoch still arrives, each item fetched once.
    size_t n = 2;
    while (loader.next()) ++n;
    EXPECT_EQ(n, 40u);
    EXPECT_EQ(p.fetched->load(), 400u);
  }
}

TEST(Loader, WorkersLoadInParallel) {
  // Items that take 2 ms each: with 4 workers, several are loading at the same moment (and
  // never more than 4). Counted rather than timed: tests assert no speed figures.
  struct Overlap {
    using Item = int;
    std::shared_ptr<std::atomic<int>> now = std::make_shared<std::atomic<int>>(0);
    std::shared_ptr<std::atomic<int>> most = std::make_shared<std::atomic<int>>(0);
    int get(size_t i) const {
      int n = ++*now;
      int m = most->load();
      while (n > m && !most->compare_exchange_weak(m, n)) {
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(2));
      --*now;
      return static_cast<int>(i);
    }
    size_t len() const { return 80; }
  };
  Overlap d;
  DataLoader loader(d, opts(2, 4));
  EXPECT_EQ(flat(one_epoch(loader)).size(), 80u);
  EXPECT_GE(d.most->load(), 2);
  EXPECT_LE(d.most->load(), 4);
  Overlap single;
  DataLoader one(single, opts(2, 1));
  one_epoch(one);
  EXPECT_EQ(single.most->load(), 1);
}

TEST(Loader, ProgressCounts) {
  DataLoader loader(range_dataset(10), opts(4));
  auto p = loader.progress();
  EXPECT_EQ(p.batches_total, 3u);
  EXPECT_EQ(p.items_total, 10u);
  EXPECT_EQ(p.batches_done, 0u);
  std::vector<std::pair<size_t, size_t>> seen;
  for (auto& b : loader) {
    (void)b;
    if (loader.position().epoch == 0)
      seen.emplace_back(loader.progress().batches_done, loader.progress().items_done);
  }
  EXPECT_EQ(seen, (std::vector<std::pair<size_t, size_t>>{{1, 4}, {2, 8}}));
  EXPECT_EQ(loader.progress().epoch, 1u);
  EXPECT_EQ(loader.progress().items_done, 0u);
}

TEST(Loader, BatchingInTheCallersThread) {
  auto caller = std::this_thread::get_id();
  std::atomic<int> elsewhere{0};
  auto batcher = [&](std::vector<int> v) {
    if (std::this_thread::get_id() != caller) ++elsewhere;
    return std::accumulate(v.begin(), v.end(), 0);
  };
  auto o = opts(3, 2);
  o.batch_in_workers = false;
  DataLoader loader(range_dataset(9), batcher, o);
  std::vector<int> sums;
  for (int s : loader) sums.push_back(s);
  EXPECT_EQ(sums, (std::vector<int>{3, 12, 21}));
  EXPECT_EQ(elsewhere.load(), 0);
}

TEST(Loader, AugmentationsFollowTheEpochAndNotTheWorkers) {
  auto make = [] {
    return augment(range_dataset(30), 5,
                   [](int x, Rng& r) { return x * 1000 + static_cast<int>(r.below(1000)); });
  };
  auto run = [&](size_t workers) {
    DataLoader loader(make(), opts(4, workers, true, 1));
    return std::vector<Batches>{one_epoch(loader), one_epoch(loader)};
  };
  auto ref = run(0);
  EXPECT_EQ(run(3), ref);
  // Epoch 1 draws new augmentations for the same items.
  auto e0 = flat(ref[0]), e1 = flat(ref[1]);
  std::sort(e0.begin(), e0.end());
  std::sort(e1.begin(), e1.end());
  EXPECT_NE(e0, e1);
  for (size_t i = 0; i < e0.size(); ++i) EXPECT_EQ(e0[i] / 1000, e1[i] / 1000);
}

TEST(Loader, DestroyMidEpochJoinsWorkers) {
  Probe p{1000};
  p.sleep_us = 100;
  {
    DataLoader loader(p, opts(10, 4));
    loader.next();
  }  // must not hang or crash
  SUCCEED();
  // Moving a loader mid-epoch keeps its run.
  DataLoader a(range_dataset(20), opts(5, 2));
  a.next();
  DataLoader b = std::move(a);
  EXPECT_EQ(*b.next(), (std::vector<int>{5, 6, 7, 8, 9}));
}

TEST(Loader, DocExampleCompilesAndRuns) {
  // docs/data.md: designated options, a batcher built in place, progress during the loop.
  std::vector<MnistItem> items(100);
  for (size_t i = 0; i < items.size(); ++i) items[i].label = static_cast<uint8_t>(i % 10);
  DataLoader loader(InMemoryDataset<MnistItem>(items), MnistBatcher<Cpu>().normalize_fashion(),
                    {.batch_size = 64, .shuffle = true, .seed = 1, .workers = 2});
  size_t n = 0;
  for (auto& b : loader) {
    n += static_cast<size_t>(b.targets.numel());
    EXPECT_EQ(b.images.dim(1), 1);
    EXPECT_EQ(loader.progress().items_done, loader.position().epoch == 0 ? 64u : 0u);
  }
  EXPECT_EQ(n, 100u);
  EXPECT_EQ(loader.position(), (LoaderPosition{1, 0}));
}
