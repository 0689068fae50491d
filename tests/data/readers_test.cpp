// Readers on real files written by the tests: CSV, JSON lines, SQLite (writer and reader),
// image folders of PNG/JPEG files, scikit-learn's CSV datasets.
#include <gtest/gtest.h>
#include <zlib.h>

#include <atomic>
#include <thread>

#include "ember/data/csv.h"
#include "ember/data/image.h"
#include "ember/data/io.h"
#include "ember/data/sqlite.h"
#include "ember/data/tabular.h"
#include "tests/data/expect_message.h"
#include "tests/data/temp_dir.h"

// The test's own PNG/JPEG writer (a private copy; the library's is separate).
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wsign-compare"
#pragma GCC diagnostic ignored "-Wunused-function"
#pragma GCC diagnostic ignored "-Wmissing-field-initializers"
#define STB_IMAGE_WRITE_STATIC
#define STB_IMAGE_WRITE_IMPLEMENTATION
#include <stb/stb_image_write.h>
#pragma GCC diagnostic pop

using namespace ember;
using namespace ember::data;
using ember::test::message_of;
using ember::test::TempDir;
using ember::test::write_text;

// ---- CSV --------------------------------------------------------------------------------

TEST(Csv, QuotedFieldsHeaderAndLineEndings) {
  TempDir dir;
  write_text(dir / "t.csv",
             "\xEF\xBB\xBFname,comment,value\r\n"
             "\"Smith, John\",\"He said \"\"hi\"\"\",1.5\r\n"
             "plain,\"two\nlines\",-2\r\n"
             "\n"
             "\"\",,3e2\n"
             "last,row,4");  // no final newline
  CsvTable t = read_csv(dir / "t.csv");
  EXPECT_EQ(t.header, (std::vector<std::string>{"name", "comment", "value"}));
  ASSERT_EQ(t.rows.size(), 4u);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"Smith, John", "He said \"hi\"", "1.5"}));
  EXPECT_EQ(t.rows[1], (std::vector<std::string>{"plain", "two\nlines", "-2"}));
  EXPECT_EQ(t.rows[2], (std::vector<std::string>{"", "", "3e2"}));
  EXPECT_EQ(t.rows[3], (std::vector<std::string>{"last", "row", "4"}));
  EXPECT_EQ(t.lines, (std::vector<size_t>{2, 3, 6, 7}));

  struct Row {
    std::string name, comment;
    double value;
  };
  auto d = csv_dataset(dir / "t.csv", [](const CsvRow& r) {
    return Row{r["name"], r[1], r.get<double>("value")};
  });
  ASSERT_EQ(d.len(), 4u);
  EXPECT_EQ(d.get(0).name, "Smith, John");
  EXPECT_EQ(d.get(1).comment, "two\nlines");
  EXPECT_EQ(d.get(2).value, 300.0);
  EXPECT_EQ(d.get(1).value, -2.0);

  // A parser error names the file and line.
  EXPECT_MESSAGE(csv_dataset(dir / "t.csv", [](const CsvRow& r) { return r.get<int>("value"); }),
                 ValueError, "line 2");
  EXPECT_MESSAGE(csv_dataset(dir / "t.csv", [](const CsvRow& r) { return r["nope"]; }), ValueError,
                 "no column named 'nope'");

  auto rows = csv_rows(dir / "t.csv");
  EXPECT_EQ(rows.len(), 4u);
  EXPECT_EQ(rows.get(0)[1], "He said \"hi\"");
}

TEST(Csv, NumericAndOptions) {
  TempDir dir;
  write_text(dir / "n.csv", "1, 2.5,-3\n4e1,+5,6\n");
  CsvOptions no_header;
  no_header.header = false;
  auto d = csv_numeric(dir / "n.csv", no_header);
  ASSERT_EQ(d.len(), 2u);
  EXPECT_EQ(d.get(0), (std::vector<double>{1, 2.5, -3}));
  EXPECT_EQ(d.get(1), (std::vector<double>{40, 5, 6}));

  write_text(dir / "s.tsv", "a\tb\n'x\ty'\t2\n");
  CsvOptions tsv;
  tsv.delimiter = '\t';
  tsv.quote = '\'';
  CsvTable t = read_csv(dir / "s.tsv", tsv);
  EXPECT_EQ(t.rows[0], (std::vector<std::string>{"x\ty", "2"}));

  write_text(dir / "bad.csv", "a,b\n1,x\n");
  EXPECT_MESSAGE(csv_numeric(dir / "bad.csv"), ValueError, "line 2 column 1");

  // gzip-compressed CSV is read by content.
  std::string text = "a,b\n1,2\n";
  auto gz =
      gzip(std::span<const uint8_t>(reinterpret_cast<const uint8_t*>(text.data()), text.size()));
  ember::test::write_bytes(dir / "z.csv.gz", gz);
  EXPECT_EQ(csv_numeric(dir / "z.csv.gz").get(0), (std::vector<double>{1, 2}));
}

TEST(Csv, MalformedInputIsAValueErrorWithTheLine) {
  EXPECT_MESSAGE(parse_csv("a,b\n1,\"open\n2,3\n"), ValueError,
                 "line 2: unterminated quoted field");
  EXPECT_MESSAGE(parse_csv("a,b\n1,2\n3\n"), ValueError, "line 3: has 1 fields, expected 2");
  EXPECT_MESSAGE(parse_csv("a,b\n\"x\"y,2\n"), ValueError, "line 2: unexpected character 'y'");
  CsvOptions ragged;
  ragged.allow_ragged = true;
  EXPECT_EQ(parse_csv("a,b\n1\n1,2,3\n", ragged).rows.size(), 2u);
  EXPECT_EQ(parse_csv("").rows.size(), 0u);
  EXPECT_EQ(parse_csv("a,b\n").rows.size(), 0u);
  EXPECT_MESSAGE(read_csv("/nonexistent/x.csv"), ValueError, "cannot open /nonexistent/x.csv");
  EXPECT_MESSAGE(parse_double("1.5x"), ValueError, "not a number: '1.5x'");
  EXPECT_EQ(parse_int(" 42 "), 42);
}

// ---- JSON lines -------------------------------------------------------------------------

TEST(Jsonl, ValuesAndTypedItems) {
  TempDir dir;
  write_text(dir / "d.jsonl",
             "{\"text\": \"a, \\\"quoted\\\"\", \"label\": 1, \"w\": [1, 2]}\n"
             "\n"
             "{\"text\": \"b\", \"label\": 0, \"w\": []}\r\n"
             "   \n"
             "{\"text\": \"c\", \"label\": 2, \"w\": [3]}");
  auto d = jsonl_dataset(dir / "d.jsonl");
  ASSERT_EQ(d.len(), 3u);
  EXPECT_EQ(d.get(0)["text"], "a, \"quoted\"");
  EXPECT_EQ(d.get(2)["w"][0], 3);

  struct Ex {
    std::string text;
    int label;
    std::vector<int> w;
  };
  auto t = jsonl_dataset(dir / "d.jsonl", [](const nlohmann::json& j) {
    return Ex{j.at("text"), j.at("label"), j.at("w").get<std::vector<int>>()};
  });
  EXPECT_EQ(t.get(1).text, "b");
  EXPECT_EQ(t.get(0).w, (std::vector<int>{1, 2}));
  EXPECT_EQ(t.get(2).label, 2);
  EXPECT_MESSAGE(jsonl_dataset(dir / "d.jsonl", [](const nlohmann::json& j) { return j.at("x"); }),
                 ValueError, "line 1");

  write_text(dir / "bad.jsonl", "{\"a\": 1}\n{\"a\": \n");
  EXPECT_MESSAGE(jsonl_dataset(dir / "bad.jsonl"), ValueError, "bad.jsonl line 2");
}

// ---- SQLite -----------------------------------------------------------------------------

namespace {
struct Sample {
  int64_t label = 0;
  std::vector<uint8_t> pixels;
  std::string name;
  double weight = 0;
  friend bool operator==(const Sample&, const Sample&) = default;
};
Sample make_sample(int i) {
  Sample s;
  s.label = i % 10;
  s.pixels.resize(static_cast<size_t>(i % 17));  // includes empty blobs
  for (size_t k = 0; k < s.pixels.size(); ++k) s.pixels[k] = static_cast<uint8_t>(i * 31 + k);
  s.name = "item \"" + std::to_string(i) + "\", with 'quotes'";
  s.weight = i * 0.25 - 3;
  return s;
}
}  // namespace

template <>
struct ember::data::RowCodec<Sample> {
  static std::vector<SqlColumn> columns() {
    return {{"label", SqlType::Integer},
            {"pixels", SqlType::Blob},
            {"name", SqlType::Text},
            {"weight", SqlType::Real}};
  }
  static SqlRow encode(const Sample& s) { return SqlRow{{s.label, s.pixels, s.name, s.weight}}; }
  static Sample decode(const SqlRow& r) { return {r.integer(0), r.blob(1), r.text(2), r.real(3)}; }
};

TEST(Sqlite, WriteThenReadBackEveryItem) {
  TempDir dir;
  auto path = dir / "samples.db";
  {
    SqliteDatasetWriter<Sample> w(path);
    for (int i = 0; i < 500; ++i) w.push(make_sample(i));
    for (int i = 0; i < 120; ++i) w.push(make_sample(1000 + i), "test");
    EXPECT_EQ(w.count(), 500u);
    EXPECT_EQ(w.count("test"), 120u);
    EXPECT_FALSE(std::filesystem::exists(path));  // not before finish()
    w.finish();
    EXPECT_THROW(w.push(make_sample(0)), ValueError);
  }
  ASSERT_TRUE(std::filesystem::exists(path));
  EXPECT_EQ(ember::test::file_names(dir.path()), std::vector<std::string>{"samples.db"});
  // A real SQLite file.
  auto head = read_file(path, "test");
  EXPECT_EQ(std::string(head.begin(), head.begin() + 15), "SQLite format 3");
  EXPECT_EQ(sqlite_tables(path), (std::vector<std::string>{"test", "train"}));

  SqliteDataset<Sample> train(path);  // "train" by default
  SqliteDataset<Sample> test(path, "test");
  ASSERT_EQ(train.len(), 500u);
  ASSERT_EQ(test.len(), 120u);
  for (int i = 0; i < 500; ++i) ASSERT_EQ(train.get(static_cast<size_t>(i)), make_sample(i)) << i;
  EXPECT_EQ(test.get(119), make_sample(1119));
  EXPECT_MESSAGE(train.get(500), IndexError, "index 500 out of range for length 500");

  // Rows as they are.
  SqliteDataset<SqlRow> raw(path, "test");
  SqlRow r = raw.get(3);
  ASSERT_EQ(r.size(), 4u);
  EXPECT_EQ(r.integer(0), 1003 % 10);
  EXPECT_EQ(r.text(2), make_sample(1003).name);
  EXPECT_MESSAGE(r.text(0), ValueError, "column 0 holds INTEGER, expected TEXT");
}

TEST(Sqlite, ConcurrentReads) {
  TempDir dir;
  auto path = dir / "c.db";
  SqliteDatasetWriter<Sample> w(path);
  for (int i = 0; i < 300; ++i) w.push(make_sample(i));
  w.finish();
  SqliteDataset<Sample> d(path);
  std::atomic<int> bad{0};
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&, t] {
      for (int k = 0; k < 300; ++k) {
        int i = (k * 7 + t * 13) % 300;
        if (!(d.get(static_cast<size_t>(i)) == make_sample(i))) ++bad;
      }
    });
  for (auto& t : ts) t.join();
  EXPECT_EQ(bad.load(), 0);
}

TEST(Sqlite, FinishIsAtomic) {
  TempDir dir;
  auto path = dir / "a.db";
  {
    SqliteDatasetWriter<Sample> w(path);
    w.push(make_sample(1));
    w.finish();
  }
  {
    // A writer dropped before finish() leaves the old file and no temporary files.
    SqliteDatasetWriter<Sample> w(path);
    for (int i = 0; i < 50; ++i) w.push(make_sample(i));
  }
  EXPECT_EQ(ember::test::file_names(dir.path()), std::vector<std::string>{"a.db"});
  EXPECT_EQ(SqliteDataset<Sample>(path).len(), 1u);
  {
    SqliteDatasetWriter<Sample> w(path);
    for (int i = 0; i < 50; ++i) w.push(make_sample(i));
    w.finish();
  }
  EXPECT_EQ(SqliteDataset<Sample>(path).len(), 50u);
}

TEST(Sqlite, Errors) {
  TempDir dir;
  auto path = dir / "e.db";
  SqliteDatasetWriter<Sample> w(path);
  w.push(make_sample(0));
  EXPECT_THROW(w.push(make_sample(0), "bad name"), ValueError);
  w.finish();
  EXPECT_MESSAGE(SqliteDataset<Sample>(path, "valid"), ValueError,
                 "has no table 'valid' (tables: train)");
  EXPECT_MESSAGE(SqliteDataset<Sample>(dir / "missing.db"), ValueError, "no such file");
  write_text(dir / "junk.db", std::string(4096, 'x'));
  EXPECT_THROW(SqliteDataset<Sample>(dir / "junk.db"), ValueError);
  // A codec that names a column the table lacks fails at open.
  struct Other {
    std::vector<SqlColumn> columns() const { return {{"missing", SqlType::Integer}}; }
    SqlRow encode(int64_t v) const { return SqlRow{{v}}; }
    int64_t decode(const SqlRow& r) const { return r.integer(0); }
  };
  EXPECT_MESSAGE((SqliteDataset<int64_t, Other>(path, "train")), ValueError, "missing");
  // And a codec object (not a specialization) works for writing and reading.
  struct Plain {
    std::vector<SqlColumn> columns() const { return {{"v", SqlType::Integer}}; }
    SqlRow encode(int64_t v) const { return SqlRow{{v}}; }
    int64_t decode(const SqlRow& r) const { return r.integer(0); }
  };
  SqliteDatasetWriter<int64_t, Plain> pw(dir / "p.db");
  for (int64_t v : {int64_t{5}, int64_t{-7}, int64_t{1} << 40}) pw.push(v);
  pw.finish();
  SqliteDataset<int64_t, Plain> pd(dir / "p.db");
  EXPECT_EQ(pd.get(2), int64_t{1} << 40);
  EXPECT_EQ(pd.get(1), -7);
}

// ---- images -------------------------------------------------------------------------------

namespace {

void put_be32(std::vector<uint8_t>& out, uint32_t v) {
  for (int s = 24; s >= 0; s -= 8) out.push_back(static_cast<uint8_t>(v >> s));
}
void put_chunk(std::vector<uint8_t>& out, const char* type, const std::vector<uint8_t>& data) {
  put_be32(out, static_cast<uint32_t>(data.size()));
  std::vector<uint8_t> body(type, type + 4);
  body.insert(body.end(), data.begin(), data.end());
  out.insert(out.end(), body.begin(), body.end());
  put_be32(out, static_cast<uint32_t>(crc32(0, body.data(), static_cast<uInt>(body.size()))));
}
/// A minimal PNG written by hand: 8-bit, no filtering, deflate "stored" (uncompressed) blocks.
std::vector<uint8_t> handmade_png(const Image& im) {
  static const uint8_t color_type[] = {0, 0, 4, 2, 6};  // by channel count
  std::vector<uint8_t> out = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  std::vector<uint8_t> ihdr;
  put_be32(ihdr, static_cast<uint32_t>(im.width));
  put_be32(ihdr, static_cast<uint32_t>(im.height));
  ihdr.insert(ihdr.end(), {8, color_type[im.channels], 0, 0, 0});
  put_chunk(out, "IHDR", ihdr);
  std::vector<uint8_t> raw;  // scanlines, each with filter type 0
  size_t row = static_cast<size_t>(im.width) * im.channels;
  for (int y = 0; y < im.height; ++y) {
    raw.push_back(0);
    raw.insert(raw.end(), im.pixels.begin() + static_cast<std::ptrdiff_t>(y * row),
               im.pixels.begin() + static_cast<std::ptrdiff_t>((y + 1) * row));
  }
  std::vector<uint8_t> z = {0x78, 0x01};
  for (size_t pos = 0; pos < raw.size() || pos == 0;) {
    size_t n = std::min<size_t>(65535, raw.size() - pos);
    bool last = pos + n == raw.size();
    z.push_back(last ? 1 : 0);
    z.insert(z.end(), {static_cast<uint8_t>(n), static_cast<uint8_t>(n >> 8),
                       static_cast<uint8_t>(~n), static_cast<uint8_t>(~n >> 8)});
    z.insert(z.end(), raw.begin() + static_cast<std::ptrdiff_t>(pos),
             raw.begin() + static_cast<std::ptrdiff_t>(pos + n));
    pos += n;
    if (last) break;
  }
  put_be32(z, static_cast<uint32_t>(adler32(1, raw.data(), static_cast<uInt>(raw.size()))));
  put_chunk(out, "IDAT", z);
  put_chunk(out, "IEND", {});
  return out;
}

Image pattern(int w, int h, int c, int seed) {
  Image im(w, h, c);
  for (size_t i = 0; i < im.pixels.size(); ++i)
    im.pixels[i] = static_cast<uint8_t>((i * 37 + static_cast<size_t>(seed) * 101) % 256);
  return im;
}

void stb_png(const std::filesystem::path& p, const Image& im) {
  std::filesystem::create_directories(p.parent_path());
  std::vector<uint8_t> bytes;
  auto sink = [](void* ctx, void* data, int size) {
    auto* o = static_cast<std::vector<uint8_t>*>(ctx);
    o->insert(o->end(), static_cast<uint8_t*>(data), static_cast<uint8_t*>(data) + size);
  };
  ASSERT_TRUE(stbi_write_png_to_func(sink, &bytes, im.width, im.height, im.channels,
                                     im.pixels.data(), im.width * im.channels));
  ember::test::write_bytes(p, bytes);
}

}  // namespace

TEST(Image, HandmadePngDecodesPixelExact) {
  for (int c : {1, 2, 3, 4}) {
    Image im = pattern(7, 5, c, c);
    Image back = decode_image(handmade_png(im));
    EXPECT_EQ(back, im) << c << " channels";
  }
  // Large enough for several stored blocks.
  Image big = pattern(300, 120, 3, 9);
  EXPECT_EQ(decode_image(handmade_png(big)), big);
}

TEST(Image, EncodePngRoundTripAndConversions) {
  TempDir dir;
  Image rgb = pattern(9, 4, 3, 2);
  write_png(dir / "x.png", rgb);
  EXPECT_EQ(load_image(dir / "x.png"), rgb);
  Image gray = load_image(dir / "x.png", 1);
  EXPECT_EQ(gray.channels, 1);
  EXPECT_EQ(gray.pixels.size(), 36u);
  Image rgba = load_image(dir / "x.png", 4);
  EXPECT_EQ(rgba.at(3, 8, 2), rgb.at(3, 8, 2));
  EXPECT_EQ(rgba.at(3, 8, 3), 255);
  EXPECT_MESSAGE(decode_image(std::vector<uint8_t>{1, 2, 3}, 0, "junk"), ValueError,
                 "cannot decode junk");
  EXPECT_THROW(encode_png(Image()), ValueError);
}

TEST(Image, FolderDatasetReadsPixelExact) {
  TempDir dir;
  auto root = dir / "root";
  Image a = pattern(6, 4, 3, 1), b = pattern(6, 4, 3, 2), y = pattern(3, 3, 1, 3);
  Image x = pattern(5, 2, 4, 4);
  stb_png(root / "cat" / "b.png", b);
  ember::test::write_bytes(root / "cat" / "a.PNG", handmade_png(a));  // case-insensitive ext
  stb_png(root / "dog" / "x.png", x);
  stb_png(root / "dog" / "sub" / "y.png", y);  // nested folders count for their class
  // A JPEG (lossy: checked approximately) made with a flat color.
  Image flat(8, 8, 3);
  for (size_t i = 0; i < flat.pixels.size(); ++i) flat.pixels[i] = i % 3 == 0 ? 200 : 40;
  ASSERT_TRUE(stbi_write_jpg((root / "cat" / "c.jpg").c_str(), 8, 8, 3, flat.pixels.data(), 95));
  write_text(root / "dog" / "notes.txt", "not an image");
  write_text(root / "readme.txt", "not a class");
  std::filesystem::create_directories(root / "bird");  // a class with no images

  ImageFolderDataset d(root);
  EXPECT_EQ(d.classes(), (std::vector<std::string>{"bird", "cat", "dog"}));
  ASSERT_EQ(d.len(), 5u);
  // cat: a.PNG, b.png, c.jpg; dog: sub/y.png, x.png (sorted by path).
  EXPECT_EQ(d.path(0).filename(), "a.PNG");
  EXPECT_EQ(d.get(0).image, a);
  EXPECT_EQ(d.get(0).label, 1);
  EXPECT_EQ(d.get(1).image, b);
  ImageItem jpg = d.get(2);
  EXPECT_EQ(jpg.label, 1);
  ASSERT_EQ(jpg.image.width, 8);
  ASSERT_EQ(jpg.image.channels, 3);
  for (size_t i = 0; i < jpg.image.pixels.size(); ++i)
    EXPECT_NEAR(jpg.image.pixels[i], flat.pixels[i], 6) << i;
  EXPECT_EQ(d.get(3).image, y);
  EXPECT_EQ(d.get(3).label, 2);
  EXPECT_EQ(d.get(3).image.channels, 1);
  EXPECT_EQ(d.get(4).image, x);
  EXPECT_EQ(d.label(4), 2);
  EXPECT_THROW(d.get(5), IndexError);

  // Forced channels: gray expands to RGB with equal channels.
  ImageFolderOptions rgb;
  rgb.channels = 3;
  ImageFolderDataset d3(root, rgb);
  Image y3 = d3.get(3).image;
  EXPECT_EQ(y3.channels, 3);
  EXPECT_EQ(y3.at(2, 1, 0), y.at(2, 1, 0));
  EXPECT_EQ(y3.at(2, 1, 2), y.at(2, 1, 0));

  // A broken file is found at get(), with its path in the message.
  write_text(root / "dog" / "z.png", "garbage");
  ImageFolderDataset broken(root);
  EXPECT_MESSAGE(broken.get(5), ValueError, "z.png");
  EXPECT_MESSAGE(ImageFolderDataset(dir / "nothing"), ValueError, "is not a directory");
  std::filesystem::create_directories(dir / "flat");
  EXPECT_MESSAGE(ImageFolderDataset(dir / "flat"), ValueError, "no class subfolders");
}

// ---- scikit-learn CSV datasets ------------------------------------------------------------

TEST(Sklearn, FormatWithNamesRowAndRegressionTarget) {
  TempDir dir;
  write_text(dir / "r.csv", "3,2,,,\n\"A\",\"B\",\"Y\"\n1,2,0.5\n3,4,1.5\n5,6,-2\n");
  auto d = load_sklearn_csv(dir / "r.csv");
  EXPECT_EQ(d.len(), 3u);
  EXPECT_FALSE(d.is_classification());
  EXPECT_EQ(d.feature_names(), (std::vector<std::string>{"A", "B"}));
  EXPECT_EQ(d.get(2).features, (std::vector<double>{5, 6}));
  EXPECT_EQ(d.get(2).target, -2.0);

  write_text(dir / "c.csv", "2,1,no,yes\n0.5,1\n0.25,0\n");
  auto c = load_sklearn_csv(dir / "c.csv");
  EXPECT_EQ(c.target_names(), (std::vector<std::string>{"no", "yes"}));
  EXPECT_EQ(c.get(0).label(), 1);
  EXPECT_EQ(c.num_features(), 1u);

  write_text(dir / "short.csv", "3,1,no,yes\n0.5,1\n0.25,0\n");
  EXPECT_MESSAGE(load_sklearn_csv(dir / "short.csv"), ValueError,
                 "the header says 3 samples, the file has 2");
  write_text(dir / "wide.csv", "1,1,no,yes\n0.5,1,7\n");
  EXPECT_MESSAGE(load_sklearn_csv(dir / "wide.csv"), ValueError, "line 2: has 3 fields");
  write_text(dir / "cls.csv", "1,1,no,yes\n0.5,2\n");
  EXPECT_MESSAGE(load_sklearn_csv(dir / "cls.csv"), ValueError, "class 2 is not in 0..1");
}

TEST(Sklearn, DebianFiles) {
  auto dir = sklearn_data_dir();
  if (!std::filesystem::exists(dir / "iris.csv"))
    GTEST_SKIP() << "python3-sklearn is not installed";
  auto iris = load_sklearn_csv(dir / "iris.csv");
  ASSERT_EQ(iris.len(), 150u);
  EXPECT_EQ(iris.num_features(), 4u);
  EXPECT_EQ(iris.target_names(), (std::vector<std::string>{"setosa", "versicolor", "virginica"}));
  EXPECT_EQ(iris.get(0).features, (std::vector<double>{5.1, 3.5, 1.4, 0.2}));
  EXPECT_EQ(iris.get(149).features, (std::vector<double>{5.9, 3.0, 5.1, 1.8}));
  EXPECT_EQ(iris.get(149).label(), 2);
  std::vector<int> counts(3);
  for (size_t i = 0; i < iris.len(); ++i) ++counts[static_cast<size_t>(iris.get(i).label())];
  EXPECT_EQ(counts, (std::vector<int>{50, 50, 50}));

  auto wine = load_sklearn_csv(dir / "wine_data.csv");
  ASSERT_EQ(wine.len(), 178u);
  EXPECT_EQ(wine.num_features(), 13u);
  EXPECT_EQ(wine.get(0).features[12], 1065.0);
  std::vector<int> wc(3);
  for (size_t i = 0; i < wine.len(); ++i) ++wc[static_cast<size_t>(wine.get(i).label())];
  EXPECT_EQ(wc, (std::vector<int>{59, 71, 48}));

  auto bc = load_sklearn_csv(dir / "breast_cancer.csv");
  ASSERT_EQ(bc.len(), 569u);
  EXPECT_EQ(bc.num_features(), 30u);
  EXPECT_EQ(bc.target_names(), (std::vector<std::string>{"malignant", "benign"}));

  if (std::filesystem::exists(dir / "boston_house_prices.csv")) {
    auto boston = load_sklearn_csv(dir / "boston_house_prices.csv");
    ASSERT_EQ(boston.len(), 506u);
    EXPECT_FALSE(boston.is_classification());
    EXPECT_EQ(boston.feature_names().front(), "CRIM");
    EXPECT_EQ(boston.feature_names().size(), 13u);
    EXPECT_EQ(boston.get(0).target, 24.0);
  }
}
