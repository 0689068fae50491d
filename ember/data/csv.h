// CSV files (RFC 4180: quoted fields with "" for a quote, delimiters and newlines inside
// quotes, CRLF or LF) and JSON-lines files, read into in-memory datasets.
//
//   // rows as strings or numbers
//   auto rows = ember::data::csv_rows("table.csv");         // Item = vector<string>
//   auto nums = ember::data::csv_numeric("numbers.csv");    // Item = vector<double>
//   // typed rows through a row parser; fields by header name or position
//   struct Pet { std::string name; double weight; };
//   auto pets = ember::data::csv_dataset("pets.csv", [](const CsvRow& r) {
//     return Pet{r["name"], r.get<double>("weight")};
//   });
//   // JSON lines: one JSON value per line
//   auto js = ember::data::jsonl_dataset("log.jsonl");      // Item = nlohmann::json
//   auto ps = ember::data::jsonl_dataset("pets.jsonl", [](const nlohmann::json& j) {
//     return Pet{j.at("name"), j.at("weight")};
//   });
#pragma once
#include <charconv>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <type_traits>
#include <vector>

#include "ember/core/export.h"
#include "ember/data/dataset.h"

namespace ember::data {

struct CsvOptions {
  char delimiter = ',';
  char quote = '"';
  /// The first record names the columns.
  bool header = true;
  /// Lines with no characters at all are skipped (outside quotes).
  bool skip_empty_lines = true;
  /// Rows may have a different number of fields than the header (or the first row).
  bool allow_ragged = false;
};

struct CsvTable {
  std::vector<std::string> header;  // empty without a header
  std::vector<std::vector<std::string>> rows;
  std::vector<size_t> lines;  // the 1-based line each row starts on
};

/// Parses CSV text; malformed input (an unterminated quote, text after a closing quote, a
/// ragged row) throws ValueError naming `source` and the line.
EMBER_API CsvTable parse_csv(std::string_view text, const CsvOptions& opt = {},
                             std::string_view source = "<text>");
/// Reads a CSV file (gzip-compressed or not).
EMBER_API CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& opt = {});

/// Parses a number (surrounding spaces allowed); throws ValueError naming `context`.
EMBER_API double parse_double(std::string_view s, std::string_view context = "csv");
EMBER_API int64_t parse_int(std::string_view s, std::string_view context = "csv");

/// One record, with access by position or by header name.
class EMBER_API CsvRow {
 public:
  CsvRow(const std::vector<std::string>& header, const std::vector<std::string>& fields,
         size_t line)
      : header_(&header), fields_(&fields), line_(line) {}
  size_t size() const { return fields_->size(); }
  size_t line() const { return line_; }
  const std::vector<std::string>& fields() const { return *fields_; }
  /// Throws IndexError if out of range.
  const std::string& operator[](size_t i) const;
  /// Throws ValueError if no header column has that name.
  const std::string& operator[](std::string_view name) const;
  const std::string& operator[](const char* name) const { return (*this)[std::string_view(name)]; }
  /// The field converted to T (an arithmetic type or std::string).
  template <class T, class Key>
  T get(const Key& key) const {
    const std::string& s = (*this)[key];
    if constexpr (std::is_same_v<T, std::string>) {
      return s;
    } else if constexpr (std::is_floating_point_v<T>) {
      return static_cast<T>(parse_double(s, context()));
    } else {
      static_assert(std::is_integral_v<T>, "CsvRow::get needs a number type or std::string");
      return static_cast<T>(parse_int(s, context()));
    }
  }

 private:
  std::string context() const { return "csv line " + std::to_string(line_); }
  const std::vector<std::string>* header_;
  const std::vector<std::string>* fields_;
  size_t line_;
};

/// Rows as strings (the header, if any, is not an item).
EMBER_API InMemoryDataset<std::vector<std::string>> csv_rows(const std::filesystem::path& path,
                                                             const CsvOptions& opt = {});
/// Rows as numbers; a field that is not a number throws ValueError naming line and column.
EMBER_API InMemoryDataset<std::vector<double>> csv_numeric(const std::filesystem::path& path,
                                                           const CsvOptions& opt = {});

/// Rows through `parse(const CsvRow&)`; an exception from the parser is rethrown as a
/// ValueError that names the file and line.
template <class F>
auto csv_dataset(const std::filesystem::path& path, F parse, const CsvOptions& opt = {}) {
  using T = std::decay_t<std::invoke_result_t<F&, const CsvRow&>>;
  CsvTable t = read_csv(path, opt);
  std::vector<T> items;
  items.reserve(t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    try {
      items.push_back(parse(CsvRow(t.header, t.rows[r], t.lines[r])));
    } catch (const std::exception& e) {
      throw ValueError("[csv] " + path.string() + " line " + std::to_string(t.lines[r]) + ": " +
                       e.what());
    }
  }
  return InMemoryDataset<T>(std::move(items));
}

/// Every non-blank line of a JSON-lines file, parsed; a bad line throws ValueError naming the
/// file and line. `lines`, if given, receives the 1-based line of each value.
EMBER_API std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path,
                                                 std::vector<size_t>* lines = nullptr);
EMBER_API InMemoryDataset<nlohmann::json> jsonl_dataset(const std::filesystem::path& path);
/// Lines through `parse(const nlohmann::json&)` (errors name the file and line).
template <class F>
auto jsonl_dataset(const std::filesystem::path& path, F parse) {
  using T = std::decay_t<std::invoke_result_t<F&, const nlohmann::json&>>;
  std::vector<size_t> where;
  std::vector<nlohmann::json> values = read_jsonl(path, &where);
  std::vector<T> items;
  items.reserve(values.size());
  for (size_t k = 0; k < values.size(); ++k) {
    try {
      items.push_back(parse(values[k]));
    } catch (const std::exception& e) {
      throw ValueError("[jsonl] " + path.string() + " line " + std::to_string(where[k]) + ": " +
                       e.what());
    }
  }
  return InMemoryDataset<T>(std::move(items));
}

}  // namespace ember::data
