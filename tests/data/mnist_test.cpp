// IDX files (plain and gzip) written by the test, corrupt and truncated variants, the real
// Fashion-MNIST files from Debian's dataset-fashion-mnist, and MnistBatcher.
#include <gtest/gtest.h>
#include <zlib.h>

#include "ember/backends/cpu/cpu.h"
#include "ember/data/batcher.h"
#include "ember/data/io.h"
#include "ember/data/mnist.h"
#include "tests/data/expect_message.h"
#include "tests/data/temp_dir.h"

using namespace ember;
using namespace ember::data;
using ember::test::message_of;
using ember::test::TempDir;
using ember::test::write_bytes;

namespace {

// IDX bytes written field by field (independently of encode_idx).
std::vector<uint8_t> idx_bytes(uint8_t type, std::vector<uint32_t> dims,
                               const std::vector<uint8_t>& data) {
  std::vector<uint8_t> out = {0, 0, type, static_cast<uint8_t>(dims.size())};
  for (uint32_t d : dims) {
    out.push_back(static_cast<uint8_t>(d >> 24));
    out.push_back(static_cast<uint8_t>(d >> 16));
    out.push_back(static_cast<uint8_t>(d >> 8));
    out.push_back(static_cast<uint8_t>(d));
  }
  out.insert(out.end(), data.begin(), data.end());
  return out;
}

// A gzip file written through zlib's own file interface.
void write_gz(const std::filesystem::path& p, const std::vector<uint8_t>& bytes) {
  gzFile f = gzopen(p.c_str(), "wb9");
  ASSERT_NE(f, nullptr);
  ASSERT_EQ(gzwrite(f, bytes.data(), static_cast<unsigned>(bytes.size())),
            static_cast<int>(bytes.size()));
  ASSERT_EQ(gzclose(f), Z_OK);
}

// n images whose pixel k of item i is (i * 3 + k) % 256; labels i % 10.
struct Fixture {
  std::vector<uint8_t> images, labels;
  explicit Fixture(uint32_t n) {
    std::vector<uint8_t> px(n * 784), lb(n);
    for (uint32_t i = 0; i < n; ++i) {
      for (uint32_t k = 0; k < 784; ++k) px[i * 784 + k] = static_cast<uint8_t>((i * 3 + k) % 256);
      lb[i] = static_cast<uint8_t>(i % 10);
    }
    images = idx_bytes(0x08, {n, 28, 28}, px);
    labels = idx_bytes(0x08, {n}, lb);
  }
};

void expect_fixture(const MnistDataset& d, uint32_t n) {
  ASSERT_EQ(d.len(), n);
  for (uint32_t i = 0; i < n; ++i) {
    MnistItem it = d.get(i);
    EXPECT_EQ(it.label, i % 10);
    EXPECT_EQ(it.image[0], (i * 3) % 256);
    EXPECT_EQ(it.image[783], (i * 3 + 783) % 256);
    EXPECT_EQ(d.pixels(i)[100], (i * 3 + 100) % 256);
  }
}

}  // namespace

TEST(Idx, ParseAndEncode) {
  IdxArray a = parse_idx(idx_bytes(0x0C, {2, 3}, std::vector<uint8_t>(24, 7)));
  EXPECT_EQ(a.type, 0x0C);
  EXPECT_EQ(a.dims, (std::vector<uint32_t>{2, 3}));
  EXPECT_EQ(a.data.size(), 24u);
  EXPECT_EQ(encode_idx(a), idx_bytes(0x0C, {2, 3}, std::vector<uint8_t>(24, 7)));
  EXPECT_EQ(parse_idx(idx_bytes(0x08, {0, 28, 28}, {})).dims[0], 0u);
}

TEST(Mnist, PlainAndGzipFilesFromADirectory) {
  TempDir dir;
  Fixture train(50), test(20);
  write_bytes(dir / "train-images-idx3-ubyte", train.images);
  write_bytes(dir / "train-labels-idx1-ubyte", train.labels);
  write_gz(dir / "t10k-images-idx3-ubyte.gz", test.images);
  write_gz(dir / "t10k-labels-idx1-ubyte.gz", test.labels);
  EXPECT_TRUE(MnistDataset::available(Split::Train, dir.path()));
  expect_fixture(MnistDataset(Split::Train, dir.path()), 50);
  expect_fixture(MnistDataset(Split::Test, dir.path()), 20);
  expect_fixture(MnistDataset::from_files(dir / "t10k-images-idx3-ubyte.gz",
                                          dir / "t10k-labels-idx1-ubyte.gz"),
                 20);
  EXPECT_THROW(MnistDataset(Split::Train, dir.path()).get(50), IndexError);

  TempDir empty;
  EXPECT_FALSE(MnistDataset::available(Split::Train, empty.path()));
  EXPECT_MESSAGE(MnistDataset(Split::Train, empty.path()), ValueError,
                 "no train images file in " + empty.path().string());
}

TEST(Mnist, CorruptFilesAreValueErrors) {
  TempDir dir;
  Fixture f(10);
  auto images = dir / "im", labels = dir / "lb";
  write_bytes(labels, f.labels);
  auto with_images = [&](const std::vector<uint8_t>& bytes) {
    write_bytes(images, bytes);
    return MnistDataset::from_files(images, labels);
  };
  auto cut = [](std::vector<uint8_t> v, size_t n) {
    v.resize(n);
    return v;
  };
  EXPECT_NO_THROW(with_images(f.images));
  EXPECT_MESSAGE(with_images(cut(f.images, f.images.size() - 1)), ValueError,
                 "truncated: dims [10, 28, 28] need 7840 bytes of data, the file has 7839");
  EXPECT_MESSAGE(with_images(cut(f.images, 9)), ValueError, "truncated: the header of 3 dims");
  EXPECT_MESSAGE(with_images(cut(f.images, 2)), ValueError, "too short for an IDX header");
  auto extra = f.images;
  extra.push_back(0);
  EXPECT_MESSAGE(with_images(extra), ValueError, "1 bytes after the data");
  auto magic = f.images;
  magic[0] = 0x12;
  EXPECT_MESSAGE(with_images(magic), ValueError, "bad magic number 0x12000803");
  auto type = f.images;
  type[2] = 0x07;
  EXPECT_MESSAGE(with_images(type), ValueError, "bad magic number");
  // Well-formed IDX, wrong content for MNIST.
  EXPECT_MESSAGE(with_images(f.labels), ValueError, "expected u8 images of dims [N, 28, 28]");
  EXPECT_MESSAGE(with_images(idx_bytes(0x08, {10, 28, 27}, std::vector<uint8_t>(7560))), ValueError,
                 "dims [10, 28, 27]");
  EXPECT_MESSAGE(with_images(idx_bytes(0x08, {9, 28, 28}, std::vector<uint8_t>(9 * 784))),
                 ValueError, "9 images in");
  EXPECT_MESSAGE(MnistDataset::from_files(labels, labels), ValueError, "got magic 0x00000801");
  write_bytes(images, f.images);
  write_bytes(dir / "badlabel", idx_bytes(0x08, {10}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 10}));
  EXPECT_MESSAGE(MnistDataset::from_files(images, dir / "badlabel"), ValueError,
                 "label 10 of item 9 is not in 0..9");
  // gzip: truncated and corrupt streams.
  write_gz(dir / "im.gz", f.images);
  auto gz = read_file(dir / "im.gz", "test");
  write_bytes(images, cut(gz, gz.size() / 2));
  EXPECT_MESSAGE(MnistDataset::from_files(images, labels), ValueError, "truncated gzip data");
  auto bad = gz;
  for (size_t k = 12; k < bad.size() - 8; ++k) bad[k] ^= 0x5a;
  write_bytes(images, bad);
  EXPECT_MESSAGE(MnistDataset::from_files(images, labels), ValueError, "corrupt gzip data");
  // A gzip stream holding a truncated IDX file.
  write_gz(images, cut(f.images, 500));
  EXPECT_MESSAGE(MnistDataset::from_files(images, labels), ValueError, "truncated");
  EXPECT_MESSAGE(MnistDataset::from_files(dir / "nope", labels), ValueError, "cannot open");
}

TEST(Mnist, GzipHelpersRoundTrip) {
  std::vector<uint8_t> data(100000);
  for (size_t i = 0; i < data.size(); ++i) data[i] = static_cast<uint8_t>(i * i % 251);
  auto z = gzip(data);
  EXPECT_TRUE(is_gzip(z));
  EXPECT_LT(z.size(), data.size());
  EXPECT_EQ(gunzip(z, "mem", "test"), data);
  // Two members concatenated read as one stream (as gzip(1) does).
  auto two = z;
  two.insert(two.end(), z.begin(), z.end());
  auto both = gunzip(two, "mem", "test");
  EXPECT_EQ(both.size(), 2 * data.size());
}

// ---- the real Fashion-MNIST ---------------------------------------------------------------

namespace {
bool have_fashion() {
  return MnistDataset::available(Split::Train) && MnistDataset::available(Split::Test);
}
}  // namespace

TEST(FashionMnist, SizesLabelsAndKnownPixels) {
  if (!have_fashion()) GTEST_SKIP() << "dataset-fashion-mnist is not installed";
  MnistDataset train(Split::Train), test(Split::Test);
  ASSERT_EQ(train.len(), 60000u);
  ASSERT_EQ(test.len(), 10000u);
  std::vector<int> tr(10), te(10);
  uint64_t sum = 0;
  for (size_t i = 0; i < train.len(); ++i) {
    ++tr[train.label(i)];
    for (uint8_t p : train.pixels(i)) sum += p;
  }
  for (size_t i = 0; i < test.len(); ++i) ++te[test.label(i)];
  EXPECT_EQ(tr, std::vector<int>(10, 6000));
  EXPECT_EQ(te, std::vector<int>(10, 1000));
  // Reference values from numpy reading the same files (tests/data/fashion_mnist_reference.py).
  EXPECT_EQ(sum, 3431114169u);
  struct Known {
    const MnistDataset* d;
    size_t i;
    int label, pixel_sum, p_14_14, p_10_5, p_27_27;
  };
  const Known known[] = {
      {&train, 0, 9, 76247, 217, 0, 0},       {&train, 1, 0, 84598, 204, 223, 0},
      {&train, 12345, 8, 97611, 193, 198, 0}, {&train, 59999, 5, 16684, 0, 0, 0},
      {&test, 0, 9, 33456, 110, 0, 0},        {&test, 4321, 1, 45623, 0, 0, 0},
      {&test, 9999, 5, 24390, 132, 5, 0},
  };
  for (const Known& k : known) {
    MnistItem it = k.d->get(k.i);
    int s = 0;
    for (uint8_t p : it.image) s += p;
    EXPECT_EQ(it.label, k.label) << k.i;
    EXPECT_EQ(s, k.pixel_sum) << k.i;
    EXPECT_EQ(it.image[14 * 28 + 14], k.p_14_14) << k.i;
    EXPECT_EQ(it.image[10 * 28 + 5], k.p_10_5) << k.i;
    EXPECT_EQ(it.image[27 * 28 + 27], k.p_27_27) << k.i;
  }
}

TEST(MnistBatcher, ImagesAndTargets) {
  MnistItem a{}, b{};
  a.image.fill(0);
  a.image[0] = 255;
  a.image[29] = 51;
  a.label = 3;
  b.image.fill(102);
  b.label = 9;
  auto batch = MnistBatcher<Cpu>()({a, b});
  EXPECT_EQ(batch.images.shape(), (Shape{2, 1, 28, 28}));
  EXPECT_EQ(batch.images.dtype(), DType::F32);
  EXPECT_EQ(batch.targets.shape(), (Shape{2}));
  EXPECT_EQ(batch.targets.to_vec<int64_t>(), (std::vector<int64_t>{3, 9}));
  auto v = batch.images.to_vec<float>();
  EXPECT_FLOAT_EQ(v[0], 1.0f);
  EXPECT_FLOAT_EQ(v[29], 0.2f);
  EXPECT_FLOAT_EQ(v[1], 0.0f);
  EXPECT_FLOAT_EQ(v[784 + 5], 0.4f);

  auto norm = MnistBatcher<Cpu>().normalize(0.5f, 0.25f)({a, b}).images.to_vec<float>();
  EXPECT_NEAR(norm[0], 2.0f, 1e-6);
  EXPECT_NEAR(norm[1], -2.0f, 1e-6);
  EXPECT_NEAR(norm[784], (0.4f - 0.5f) / 0.25f, 1e-6);
  EXPECT_THROW(MnistBatcher<Cpu>().normalize(0, 0), ValueError);

  if (!have_fashion()) return;
  // On the real data, normalized with the Fashion-MNIST statistics: mean near 0, std near 1.
  MnistDataset train(Split::Train);
  std::vector<MnistItem> items;
  for (size_t i = 0; i < 2000; ++i) items.push_back(train.get(i * 30));
  auto x = MnistBatcher<Cpu>().normalize_fashion()(items).images.to_vec<float>();
  double m = 0, s = 0;
  for (float f : x) m += f;
  m /= static_cast<double>(x.size());
  for (float f : x) s += (f - m) * (f - m);
  s = std::sqrt(s / static_cast<double>(x.size()));
  EXPECT_NEAR(m, 0.0, 0.05);
  EXPECT_NEAR(s, 1.0, 0.05);
}
