// Datasets in SQLite files: one table per split, one row per item, typed through a row codec.
// Items are read by index (a lookup by rowid), so a dataset larger than memory works, and
// several threads read at once (each through its own read-only connection).
//
//   struct Sample { int64_t label; std::vector<uint8_t> pixels; };
//   template <> struct ember::data::RowCodec<Sample> {
//     static std::vector<SqlColumn> columns() {
//       return {{"label", SqlType::Integer}, {"pixels", SqlType::Blob}};
//     }
//     static SqlRow encode(const Sample& s) { return SqlRow{{s.label, s.pixels}}; }
//     static Sample decode(const SqlRow& r) { return {r.integer(0), r.blob(1)}; }
//   };
//
//   SqliteDatasetWriter<Sample> w("samples.db");   // writes samples.db.tmp-..., in one
//   w.push(a, "train");  w.push(b, "test");         // transaction per file
//   w.finish();                                     // commit, then rename onto samples.db
//   SqliteDataset<Sample> train("samples.db", "train");
//   train.get(0).label;
//
// A writer dropped without finish() removes its temporary file: the target file is either the
// old one or the complete new one, never a partial file.
#pragma once
#include <cstdint>
#include <filesystem>
#include <memory>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"

namespace ember::data {

enum class SqlType { Integer, Real, Text, Blob };
struct SqlColumn {
  std::string name;  // [A-Za-z_][A-Za-z0-9_]*
  SqlType type;
};
using Blob = std::vector<uint8_t>;
using SqlValue = std::variant<std::monostate, int64_t, double, std::string, Blob>;

/// One row's values, in column order; the typed accessors throw ValueError on a type that does
/// not match (an Integer is accepted as a Real).
struct EMBER_API SqlRow {
  std::vector<SqlValue> values;
  size_t size() const { return values.size(); }
  bool is_null(size_t c) const;
  int64_t integer(size_t c) const;
  double real(size_t c) const;
  const std::string& text(size_t c) const;
  const Blob& blob(size_t c) const;
};

/// How an Item maps to a row: specialize for your type (see the top of this file), or pass a
/// codec object with the same three members. The primary template has no members.
template <class T>
struct RowCodec;
/// Rows as they are: every column of the table (reading only; a writer needs real columns).
template <>
struct RowCodec<SqlRow> {
  static std::vector<SqlColumn> columns() { return {}; }
  static SqlRow encode(const SqlRow& r) { return r; }
  static SqlRow decode(SqlRow r) { return r; }
};

namespace detail {
/// The untyped reader behind SqliteDataset (a pool of read-only connections).
class EMBER_API SqliteReader {
 public:
  SqliteReader(const std::filesystem::path& path, std::string table,
               const std::vector<SqlColumn>& columns);
  ~SqliteReader();
  size_t len() const { return rowids_.size(); }
  SqlRow read(size_t i) const;
  const std::string& table() const { return table_; }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::vector<int64_t> rowids_;
  std::string table_;
};

/// The untyped writer behind SqliteDatasetWriter.
class EMBER_API SqliteWriter {
 public:
  SqliteWriter(const std::filesystem::path& path, std::vector<SqlColumn> columns);
  ~SqliteWriter();
  SqliteWriter(const SqliteWriter&) = delete;
  SqliteWriter& operator=(const SqliteWriter&) = delete;
  void insert(const SqlRow& row, std::string_view table);
  size_t count(std::string_view table) const;
  void finish();
  bool finished() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};
}  // namespace detail

/// The table names (splits) of a SQLite file.
EMBER_API std::vector<std::string> sqlite_tables(const std::filesystem::path& path);

template <class T, class Codec = RowCodec<T>>
class SqliteDataset {
 public:
  using Item = T;
  /// Opens `table` of the file at `path`; throws ValueError if the file cannot be opened as
  /// SQLite, or the table or one of the codec's columns is missing.
  explicit SqliteDataset(const std::filesystem::path& path, std::string table = "train",
                         Codec codec = {})
      : codec_(std::move(codec)),
        reader_(std::make_shared<const detail::SqliteReader>(path, std::move(table),
                                                             codec_.columns())) {}
  T get(size_t i) const {
    if (i >= reader_->len()) check_index(i, reader_->len(), "sqlite " + reader_->table());
    return codec_.decode(reader_->read(i));
  }
  size_t len() const { return reader_->len(); }

 private:
  Codec codec_;
  std::shared_ptr<const detail::SqliteReader> reader_;
};

template <class T, class Codec = RowCodec<T>>
class SqliteDatasetWriter {
 public:
  /// Starts a new file that replaces `path` at finish().
  explicit SqliteDatasetWriter(const std::filesystem::path& path, Codec codec = {})
      : codec_(std::move(codec)), w_(path, codec_.columns()) {}
  /// Appends an item to the table `split` (created on first use).
  void push(const T& item, std::string_view split = "train") {
    w_.insert(codec_.encode(item), split);
  }
  template <class Range>
  void extend(const Range& items, std::string_view split = "train") {
    for (const auto& it : items) push(it, split);
  }
  size_t count(std::string_view split = "train") const { return w_.count(split); }
  /// Commits and renames the file into place; afterwards nothing more can be pushed.
  void finish() { w_.finish(); }

 private:
  Codec codec_;
  detail::SqliteWriter w_;
};

}  // namespace ember::data
