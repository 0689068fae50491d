// Datasets and wrappers: InMemoryDataset, map, shuffle, select, sample, partial, split,
// concat, windows, augment; image augmentations on bytes and on tensors.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

#include "ember/backends/cpu/cpu.h"
#include "ember/data/augment.h"
#include "ember/data/transform.h"

#include "tests/data/expect_message.h"

using namespace ember;
using namespace ember::data;
using ember::test::message_of;

namespace {

InMemoryDataset<int> range_dataset(int n) {
  std::vector<int> v(static_cast<size_t>(n));
  std::iota(v.begin(), v.end(), 0);
  return InMemoryDataset<int>(v);
}

template <Dataset D>
std::vector<typename D::Item> all(const D& d) {
  std::vector<typename D::Item> out;
  for (size_t i = 0; i < d.len(); ++i) out.push_back(d.get(i));
  return out;
}

// A dataset with no storage: item i is i * 10.
struct Tens {
  using Item = int;
  size_t n;
  int get(size_t i) const {
    check_index(i, n);
    return static_cast<int>(i) * 10;
  }
  size_t len() const { return n; }
};
static_assert(Dataset<Tens>);
static_assert(Dataset<InMemoryDataset<std::string>>);
static_assert(!Dataset<int>);

}  // namespace

TEST(Dataset, InMemoryGetLenAndIndexError) {
  InMemoryDataset<std::string> d({"a", "b", "c"});
  EXPECT_EQ(d.len(), 3u);
  EXPECT_EQ(d.get(1), "b");
  EXPECT_THROW(d.get(3), IndexError);
  EXPECT_EQ(message_of([&] { d.get(7); }), "[dataset] index 7 out of range for length 3");
  InMemoryDataset<int> empty;
  EXPECT_EQ(empty.len(), 0u);
  EXPECT_THROW(empty.get(0), IndexError);
}

TEST(Dataset, CopiesShareStorage) {
  auto d = range_dataset(1000);
  auto c = d;
  EXPECT_EQ(&d.items(), &c.items());
}

TEST(Dataset, AnyDatasetErasesType) {
  AnyDataset<int> a(Tens{4});
  AnyDataset<int> b(range_dataset(2));
  EXPECT_EQ(a.len(), 4u);
  EXPECT_EQ(a.get(3), 30);
  EXPECT_EQ(b.get(1), 1);
  EXPECT_THROW(a.get(4), IndexError);
}

TEST(Transform, Map) {
  auto d = map(range_dataset(5), [](int x) { return std::to_string(x * x); });
  static_assert(std::is_same_v<decltype(d)::Item, std::string>);
  EXPECT_EQ(all(d), (std::vector<std::string>{"0", "1", "4", "9", "16"}));
  EXPECT_THROW(d.get(5), IndexError);
}

TEST(Transform, ShuffleIsASeededPermutation) {
  auto base = range_dataset(1000);
  auto a = all(shuffle(base, 7)), b = all(shuffle(base, 7)), c = all(shuffle(base, 8));
  EXPECT_EQ(a, b);
  EXPECT_NE(a, c);
  EXPECT_NE(a, all(base));
  auto sorted = a;
  std::sort(sorted.begin(), sorted.end());
  EXPECT_EQ(sorted, all(base));
  // The shuffled positions are spread out: no more than a few fixed points.
  int fixed = 0;
  for (size_t i = 0; i < a.size(); ++i) fixed += a[i] == static_cast<int>(i);
  EXPECT_LT(fixed, 10);
  EXPECT_EQ(shuffle(range_dataset(0), 1).len(), 0u);
  EXPECT_EQ(all(shuffle(range_dataset(1), 1)), std::vector<int>{0});
}

TEST(Transform, PermutationIsUniformEnough) {
  // Over many seeds, each of the 6 orders of 3 items appears about 1/6 of the time.
  std::map<std::vector<size_t>, int> counts;
  const int trials = 6000;
  for (int s = 0; s < trials; ++s) ++counts[permutation(3, static_cast<uint64_t>(s))];
  EXPECT_EQ(counts.size(), 6u);
  for (const auto& [p, c] : counts) EXPECT_NEAR(c, trials / 6, 150);
}

TEST(Transform, SelectByIndexList) {
  auto d = select(Tens{5}, {4, 0, 4, 2});
  EXPECT_EQ(all(d), (std::vector<int>{40, 0, 40, 20}));
  EXPECT_EQ(d.indices(), (std::vector<size_t>{4, 0, 4, 2}));
  EXPECT_THROW(select(Tens{5}, {1, 5}), IndexError);
  EXPECT_NE(message_of([] {
              select(Tens{5}, {1, 5});
            }).find("index 5 (entry 1)"),
            std::string::npos);
}

TEST(Transform, SampleWithoutReplacement) {
  auto base = range_dataset(50);
  auto s = sample(base, 30, 3, Replacement::Without);
  auto v = all(s);
  EXPECT_EQ(v.size(), 30u);
  EXPECT_EQ(std::set<int>(v.begin(), v.end()).size(), 30u);  // no repeats
  EXPECT_EQ(v, all(sample(base, 30, 3)));                    // seeded
  EXPECT_NE(v, all(sample(base, 30, 4)));
  // More than len(): every full pass of 50 is a permutation.
  auto big = all(sample(base, 120, 9, Replacement::Without));
  ASSERT_EQ(big.size(), 120u);
  for (size_t pass = 0; pass < 2; ++pass) {
    std::set<int> seen(big.begin() + pass * 50, big.begin() + (pass + 1) * 50);
    EXPECT_EQ(seen.size(), 50u);
  }
  std::set<int> tail(big.begin() + 100, big.end());
  EXPECT_EQ(tail.size(), 20u);
  EXPECT_THROW(sample(range_dataset(0), 1, 0), ValueError);
  EXPECT_EQ(sample(range_dataset(0), 0, 0).len(), 0u);
}

TEST(Transform, SampleWithReplacement) {
  auto base = range_dataset(10);
  auto v = all(sample(base, 20000, 5, Replacement::With));
  EXPECT_EQ(v, all(sample(base, 20000, 5, Replacement::With)));
  std::vector<int> hist(10);
  for (int x : v) ++hist[static_cast<size_t>(x)];
  for (int h : hist) EXPECT_NEAR(h, 2000, 200);  // about uniform
  // Repeats happen: a sample of 10 from 10 with replacement is rarely a permutation.
  int with_repeats = 0;
  for (uint64_t s = 0; s < 20; ++s) {
    auto w = all(sample(base, 10, s, Replacement::With));
    with_repeats += std::set<int>(w.begin(), w.end()).size() < 10;
  }
  EXPECT_GE(with_repeats, 18);
}

TEST(Transform, PartialAndSplit) {
  auto base = range_dataset(10);
  auto p = partial(base, 3, 7);
  EXPECT_EQ(all(p), (std::vector<int>{3, 4, 5, 6}));
  EXPECT_THROW(p.get(4), IndexError);
  EXPECT_THROW(partial(base, 5, 11), IndexError);
  EXPECT_THROW(partial(base, 6, 5), IndexError);
  EXPECT_EQ(partial(base, 4, 4).len(), 0u);

  auto [train, valid] = split(base, 0.8);
  EXPECT_EQ(train.len(), 8u);
  EXPECT_EQ(valid.len(), 2u);
  EXPECT_EQ(all(valid), (std::vector<int>{8, 9}));

  auto three = split(range_dataset(1001), {0.7, 0.2, 0.1});
  ASSERT_EQ(three.size(), 3u);
  EXPECT_EQ(three[0].len(), 701u);  // round(700.7)
  EXPECT_EQ(three[1].len(), 200u);  // round(900.9) - 701
  EXPECT_EQ(three[2].len(), 100u);  // the rest: fractions summing to 1 cover every item
  EXPECT_EQ(three[1].get(0), 701);
  auto part = split(range_dataset(10), {0.5, 0.2});  // 30% left out
  EXPECT_EQ(part[0].len() + part[1].len(), 7u);
  EXPECT_THROW(split(base, {0.6, 0.6}), ValueError);
  EXPECT_THROW(split(base, 1.5), ValueError);
  EXPECT_THROW(split(base, {-0.1}), ValueError);
  auto [all_train, none] = split(base, 1.0);
  EXPECT_EQ(all_train.len(), 10u);
  EXPECT_EQ(none.len(), 0u);
}

TEST(Transform, ShuffleThenSplitIsDisjointAndCovering) {
  auto [train, valid] = split(shuffle(range_dataset(100), 11), 0.75);
  std::set<int> a;
  for (int x : all(train)) a.insert(x);
  for (int x : all(valid)) EXPECT_FALSE(a.count(x)) << x;
  EXPECT_EQ(a.size() + valid.len(), 100u);
}

TEST(Transform, Concat) {
  auto c = concat(range_dataset(3), range_dataset(0), range_dataset(2));
  static_assert(std::is_same_v<decltype(c), ConcatDataset<InMemoryDataset<int>>>);
  EXPECT_EQ(all(c), (std::vector<int>{0, 1, 2, 0, 1}));
  EXPECT_THROW(c.get(5), IndexError);
  // Mixed types become AnyDataset.
  auto m = concat(Tens{2}, range_dataset(2), map(range_dataset(1), [](int x) { return x - 1; }));
  EXPECT_EQ(all(m), (std::vector<int>{0, 10, 0, 1, -1}));
  EXPECT_EQ(concat(std::vector<Tens>{}).len(), 0u);
}

TEST(Transform, Windows) {
  auto w = windows(range_dataset(6), 3);
  ASSERT_EQ(w.len(), 4u);
  EXPECT_EQ(w.get(0), (std::vector<int>{0, 1, 2}));
  EXPECT_EQ(w.get(3), (std::vector<int>{3, 4, 5}));
  EXPECT_THROW(w.get(4), IndexError);
  auto s = windows(range_dataset(7), 3, 2);  // starts 0, 2, 4
  ASSERT_EQ(s.len(), 3u);
  EXPECT_EQ(s.get(2), (std::vector<int>{4, 5, 6}));
  EXPECT_EQ(windows(range_dataset(2), 3).len(), 0u);
  EXPECT_EQ(windows(range_dataset(3), 3).len(), 1u);
  EXPECT_THROW(windows(range_dataset(3), 0), ValueError);
  EXPECT_THROW(windows(range_dataset(3), 2, 0), ValueError);
}

TEST(Transform, Nesting) {
  // shuffle -> split -> map -> windows, all lazily over the same storage.
  auto [train, valid] = split(shuffle(range_dataset(20), 1), 0.5);
  auto w = windows(map(train, [](int x) { return x + 100; }), 2, 2);
  EXPECT_EQ(w.len(), 5u);
  for (size_t i = 0; i < w.len(); ++i) {
    auto v = w.get(i);
    EXPECT_EQ(v[0], train.get(2 * i) + 100);
    EXPECT_EQ(v[1], train.get(2 * i + 1) + 100);
  }
}

TEST(Transform, AugmentIsSeededPerItemAndEpoch) {
  auto d = augment(range_dataset(100), 5,
                   [](int x, Rng& r) { return x * 1000 + static_cast<int>(r.below(1000)); });
  auto copy = d;  // shares the epoch
  auto e0 = all(d);
  EXPECT_EQ(e0, all(d));  // reading twice gives the same items
  auto again = augment(range_dataset(100), 5,
                       [](int x, Rng& r) { return x * 1000 + static_cast<int>(r.below(1000)); });
  EXPECT_EQ(e0, all(again));  // and so does a fresh dataset with the seed
  copy.set_epoch(1);
  EXPECT_EQ(d.epoch(), 1u);
  auto e1 = all(d);
  EXPECT_NE(e0, e1);
  for (size_t i = 0; i < e1.size(); ++i) EXPECT_EQ(e1[i] / 1000, static_cast<int>(i));
  d.set_epoch(0);
  EXPECT_EQ(all(d), e0);
  // Wrappers pass the epoch through.
  auto wrapped = partial(map(d, [](int x) { return x; }), 0, 10);
  static_assert(EpochAware<decltype(wrapped)>);
  static_assert(!EpochAware<InMemoryDataset<int>>);
  wrapped.set_epoch(1);
  EXPECT_EQ(d.epoch(), 1u);
}

TEST(Rng, BelowAndBetween) {
  Rng r(3);
  std::vector<int> hist(7);
  for (int k = 0; k < 70000; ++k) ++hist[r.below(7)];
  for (int h : hist) EXPECT_NEAR(h, 10000, 400);
  for (int k = 0; k < 1000; ++k) {
    int64_t v = r.between(-2, 2);
    EXPECT_GE(v, -2);
    EXPECT_LE(v, 2);
  }
  Rng a(9), b(9);
  for (int k = 0; k < 10; ++k) EXPECT_EQ(a.next(), b.next());
}

// ---- image augmentations ----------------------------------------------------------------

namespace {
Image test_image(int w, int h, int c) {
  Image im(w, h, c);
  for (size_t i = 0; i < im.pixels.size(); ++i) im.pixels[i] = static_cast<uint8_t>(i * 7 + 3);
  return im;
}
}  // namespace

TEST(Augment, HflipBytes) {
  Image im = test_image(5, 3, 3);
  Image f = hflip(im);
  for (int y = 0; y < 3; ++y)
    for (int x = 0; x < 5; ++x)
      for (int c = 0; c < 3; ++c) EXPECT_EQ(f.at(y, x, c), im.at(y, 4 - x, c));
  EXPECT_EQ(hflip(f), im);
}

TEST(Augment, PadAndCropBytes) {
  Image im = test_image(4, 3, 2);
  Image p = pad(im, 2, 9);
  EXPECT_EQ(p.width, 8);
  EXPECT_EQ(p.height, 7);
  EXPECT_EQ(p.at(0, 0, 0), 9);
  EXPECT_EQ(p.at(2, 2, 1), im.at(0, 0, 1));
  EXPECT_EQ(crop(p, 2, 2, 3, 4), im);
  Image c = crop(im, 1, 1, 2, 2);
  EXPECT_EQ(c.width, 2);
  EXPECT_EQ(c.height, 2);
  EXPECT_EQ(c.at(1, 1, 0), im.at(2, 2, 0));
  EXPECT_THROW(crop(im, 2, 0, 2, 2), IndexError);
}

TEST(Augment, RandomCropBytes) {
  Image im = test_image(8, 8, 1);
  std::set<std::pair<int, int>> offsets;
  for (uint64_t s = 0; s < 200; ++s) {
    Rng r(s);
    Image c = random_crop(im, 8, 8, 2, r);
    ASSERT_EQ(c.width, 8);
    ASSERT_EQ(c.height, 8);
    // Find the offset: the crop is the padded image shifted; locate pixel (0,0) of im.
    Rng again(s);
    int top = static_cast<int>(again.between(0, 4)), left = static_cast<int>(again.between(0, 4));
    offsets.insert({top, left});
    EXPECT_EQ(c, crop(pad(im, 2), top, left, 8, 8));
  }
  EXPECT_EQ(offsets.size(), 25u);  // every offset of a 2-pixel padding shows up
  Rng r(0);
  EXPECT_EQ(random_crop(im, 8, 8, 0, r), im);
  EXPECT_THROW(random_crop(im, 13, 8, 2, r), ValueError);
}

TEST(Augment, RandomHflipBytes) {
  Image im = test_image(6, 2, 1);
  int flipped = 0;
  for (uint64_t s = 0; s < 1000; ++s) {
    Rng r(s);
    Image f = random_hflip(im, r);
    if (f != im) {
      EXPECT_EQ(f, hflip(im));
      ++flipped;
    }
  }
  EXPECT_NEAR(flipped, 500, 60);
  Rng r(1);
  EXPECT_EQ(random_hflip(im, r, 0.0), im);
  EXPECT_EQ(random_hflip(im, r, 1.0), hflip(im));
}

TEST(Augment, ToChw) {
  Image im(2, 1, 3);
  im.pixels = {0, 51, 255, 102, 153, 204};
  auto t = to_chw<Cpu>(im);
  EXPECT_EQ(t.shape(), (Shape{3, 1, 2}));
  auto v = t.to_vec<float>();
  std::vector<float> want = {0, 102, 51, 153, 255, 204};
  for (size_t i = 0; i < v.size(); ++i) EXPECT_FLOAT_EQ(v[i], want[i] / 255.0f);
}

TEST(Augment, TensorFlipCropNormalize) {
  using T3 = Tensor<Cpu, 3>;
  std::vector<float> vals(2 * 3 * 4);
  std::iota(vals.begin(), vals.end(), 0.0f);
  auto x = T3::from_values(vals, {2, 3, 4});
  auto f = hflip(x);
  EXPECT_EQ(f.to_vec<float>()[0], 3.0f);
  EXPECT_EQ(hflip(f).to_vec<float>(), vals);  // flip twice = identity

  for (uint64_t s = 0; s < 20; ++s) {
    Rng r(s);
    auto c = random_crop(x, 3, 4, 1, r);
    EXPECT_EQ(c.shape(), (Shape{2, 3, 4}));
    // Same offsets as the byte version with the same seed: compare on channel 0.
    Image im(4, 3, 1);
    for (int k = 0; k < 12; ++k) im.pixels[static_cast<size_t>(k)] = static_cast<uint8_t>(k);
    Rng r2(s);
    Image ci = random_crop(im, 3, 4, 1, r2);
    auto cv = c.to_vec<float>();
    for (int k = 0; k < 12; ++k)
      EXPECT_EQ(cv[static_cast<size_t>(k)], ci.pixels[static_cast<size_t>(k)]);
  }
  Rng r(0);
  EXPECT_EQ(random_crop(x, 2, 2, 0, r).shape(), (Shape{2, 2, 2}));
  EXPECT_THROW(random_crop(x, 6, 4, 1, r), ValueError);

  auto n = normalize(x, {1.0f, 12.0f}, {2.0f, 4.0f});
  auto nv = n.to_vec<float>();
  for (size_t i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(nv[i], (vals[i] - 1.0f) / 2.0f);
  for (size_t i = 12; i < 24; ++i) EXPECT_FLOAT_EQ(nv[i], (vals[i] - 12.0f) / 4.0f);
  // A batch [N, C, H, W].
  auto b = Tensor<Cpu, 4>::from_values(vals, {1, 2, 3, 4});
  EXPECT_EQ(normalize(b, {1.0f, 12.0f}, {2.0f, 4.0f}).to_vec<float>(), nv);
  EXPECT_THROW(normalize(x, {0.5f}, {0.5f}), ValueError);
  EXPECT_THROW(normalize(x, {0.5f, 0.5f}, {0.5f, 0.0f}), ValueError);
}

TEST(Augment, AugmentedImageDataset) {
  std::vector<Image> ims;
  for (int k = 0; k < 8; ++k) ims.push_back(test_image(6, 6, 3));
  auto d = augment(InMemoryDataset<Image>(ims), 17,
                   [](Image im, Rng& r) { return random_hflip(random_crop(im, 6, 6, 1, r), r); });
  auto e0 = all(d);
  EXPECT_EQ(e0, all(d));
  d.set_epoch(3);
  EXPECT_NE(e0, all(d));
  for (const Image& im : all(d)) {
    EXPECT_EQ(im.width, 6);
    EXPECT_EQ(im.channels, 3);
  }
}
