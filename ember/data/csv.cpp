#include "ember/data/csv.h"

#include <algorithm>

#include "ember/data/io.h"

namespace ember::data {

namespace {

std::string_view trim(std::string_view s) {
  while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
  while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
  return s;
}

std::string quoted(std::string_view s) {
  constexpr size_t kMax = 40;
  return "'" + std::string(s.substr(0, kMax)) + (s.size() > kMax ? "...'" : "'");
}

}  // namespace

CsvTable parse_csv(std::string_view text, const CsvOptions& opt, std::string_view source) {
  auto fail = [&](size_t line, const std::string& why) -> ValueError {
    return ValueError("[csv] " + std::string(source) + " line " + std::to_string(line) + ": " +
                      why);
  };
  if (text.size() >= 3 && text.substr(0, 3) == "\xEF\xBB\xBF") text.remove_prefix(3);

  std::vector<std::vector<std::string>> records;
  std::vector<size_t> lines;
  std::vector<std::string> record;
  std::string field;
  size_t line = 1, record_line = 1;
  size_t i = 0, n = text.size();
  bool in_record = false;  // some character of the current record has been seen

  auto end_record = [&] {
    record.push_back(std::move(field));
    field.clear();
    records.push_back(std::move(record));
    lines.push_back(record_line);
    record.clear();
    in_record = false;
  };
  // Consumes a line break at i (\n, \r\n or \r); returns false if there is none.
  auto line_break = [&]() {
    if (text[i] == '\n') {
      ++i;
    } else if (text[i] == '\r') {
      ++i;
      if (i < n && text[i] == '\n') ++i;
    } else {
      return false;
    }
    ++line;
    return true;
  };

  while (i < n) {
    if (!in_record) {
      record_line = line;
      if (opt.skip_empty_lines && line_break()) continue;
      in_record = true;
    }
    char c = text[i];
    if (c == opt.quote && field.empty()) {
      // A quoted field: runs to the matching quote; "" is a literal quote.
      size_t open_line = line;
      ++i;
      bool closed = false;
      while (i < n) {
        char q = text[i];
        if (q == opt.quote) {
          if (i + 1 < n && text[i + 1] == opt.quote) {
            field += opt.quote;
            i += 2;
            continue;
          }
          ++i;
          closed = true;
          break;
        }
        if (q == '\n' || (q == '\r' && !(i + 1 < n && text[i + 1] == '\n'))) ++line;
        field += q;
        ++i;
      }
      if (!closed) throw fail(open_line, "unterminated quoted field");
      if (i < n && text[i] != opt.delimiter && text[i] != '\n' && text[i] != '\r')
        throw fail(line,
                   "unexpected character " + quoted(text.substr(i, 1)) + " after a closing quote");
      if (i == n) break;
      continue;
    }
    if (c == opt.delimiter) {
      record.push_back(std::move(field));
      field.clear();
      ++i;
      continue;
    }
    if (c == '\n' || c == '\r') {
      line_break();
      end_record();
      continue;
    }
    field += c;
    ++i;
  }
  if (in_record) end_record();

  CsvTable t;
  size_t first = 0;
  if (opt.header && !records.empty()) {
    t.header = std::move(records[0]);
    first = 1;
  }
  size_t width = opt.header ? t.header.size() : (records.empty() ? 0 : records[0].size());
  for (size_t r = first; r < records.size(); ++r) {
    if (!opt.allow_ragged && records[r].size() != width)
      throw fail(lines[r], "has " + std::to_string(records[r].size()) + " fields, expected " +
                               std::to_string(width));
    t.rows.push_back(std::move(records[r]));
    t.lines.push_back(lines[r]);
  }
  return t;
}

CsvTable read_csv(const std::filesystem::path& path, const CsvOptions& opt) {
  std::vector<uint8_t> bytes = read_maybe_gzip(path, "csv");
  return parse_csv(std::string_view(reinterpret_cast<const char*>(bytes.data()), bytes.size()), opt,
                   path.string());
}

double parse_double(std::string_view s, std::string_view context) {
  std::string_view t = trim(s);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  double v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    throw ValueError("[" + std::string(context) + "] not a number: " + quoted(s));
  return v;
}

int64_t parse_int(std::string_view s, std::string_view context) {
  std::string_view t = trim(s);
  if (!t.empty() && t.front() == '+') t.remove_prefix(1);
  int64_t v = 0;
  auto [p, ec] = std::from_chars(t.data(), t.data() + t.size(), v);
  if (t.empty() || ec != std::errc() || p != t.data() + t.size())
    throw ValueError("[" + std::string(context) + "] not an integer: " + quoted(s));
  return v;
}

const std::string& CsvRow::operator[](size_t i) const {
  if (i >= fields_->size())
    throw IndexError("[csv] line " + std::to_string(line_) + ": column " + std::to_string(i) +
                     " out of range for " + std::to_string(fields_->size()) + " fields");
  return (*fields_)[i];
}

const std::string& CsvRow::operator[](std::string_view name) const {
  auto it = std::find(header_->begin(), header_->end(), name);
  if (it == header_->end())
    throw ValueError("[csv] no column named " + quoted(name) +
                     (header_->empty() ? " (the file has no header)" : ""));
  return (*this)[static_cast<size_t>(it - header_->begin())];
}

InMemoryDataset<std::vector<std::string>> csv_rows(const std::filesystem::path& path,
                                                   const CsvOptions& opt) {
  return InMemoryDataset<std::vector<std::string>>(read_csv(path, opt).rows);
}

InMemoryDataset<std::vector<double>> csv_numeric(const std::filesystem::path& path,
                                                 const CsvOptions& opt) {
  CsvTable t = read_csv(path, opt);
  std::vector<std::vector<double>> rows;
  rows.reserve(t.rows.size());
  for (size_t r = 0; r < t.rows.size(); ++r) {
    std::vector<double> v;
    v.reserve(t.rows[r].size());
    for (size_t c = 0; c < t.rows[r].size(); ++c)
      v.push_back(parse_double(t.rows[r][c], "csv " + path.string() + " line " +
                                                 std::to_string(t.lines[r]) + " column " +
                                                 std::to_string(c)));
    rows.push_back(std::move(v));
  }
  return InMemoryDataset<std::vector<double>>(std::move(rows));
}

std::vector<nlohmann::json> read_jsonl(const std::filesystem::path& path,
                                       std::vector<size_t>* lines) {
  std::vector<uint8_t> bytes = read_maybe_gzip(path, "jsonl");
  std::string_view text(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  std::vector<nlohmann::json> out;
  size_t line = 0, pos = 0;
  while (pos < text.size()) {
    size_t nl = text.find('\n', pos);
    if (nl == std::string_view::npos) nl = text.size();
    std::string_view l = text.substr(pos, nl - pos);
    pos = nl + 1;
    ++line;
    if (!l.empty() && l.back() == '\r') l.remove_suffix(1);
    if (trim(l).empty()) continue;
    try {
      out.push_back(nlohmann::json::parse(l));
    } catch (const nlohmann::json::exception& e) {
      throw ValueError("[jsonl] " + path.string() + " line " + std::to_string(line) + ": " +
                       e.what());
    }
    if (lines) lines->push_back(line);
  }
  return out;
}

InMemoryDataset<nlohmann::json> jsonl_dataset(const std::filesystem::path& path) {
  return InMemoryDataset<nlohmann::json>(read_jsonl(path));
}

}  // namespace ember::data
