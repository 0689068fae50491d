#include "ember/data/sqlite.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <random>

namespace ember::data {

namespace {

[[noreturn]] void fail(const std::string& where, sqlite3* db, const std::string& what) {
  std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  throw ValueError("[sqlite] " + where + ": " + what + ": " + msg);
}

void check_identifier(const std::string& s, const char* what) {
  bool ok = !s.empty() && !(s[0] >= '0' && s[0] <= '9');
  for (char c : s)
    ok = ok &&
         ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_');
  if (!ok)
    throw ValueError(std::string("[sqlite] ") + what + " '" + s +
                     "' is not an identifier ([A-Za-z_][A-Za-z0-9_]*)");
}

const char* sql_type(SqlType t) {
  switch (t) {
    case SqlType::Integer:
      return "INTEGER";
    case SqlType::Real:
      return "REAL";
    case SqlType::Text:
      return "TEXT";
    case SqlType::Blob:
      return "BLOB";
  }
  return "BLOB";
}

void exec(sqlite3* db, const std::string& sql, const std::string& where) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : "error";
    sqlite3_free(err);
    throw ValueError("[sqlite] " + where + ": " + msg + " (in: " + sql + ")");
  }
}

sqlite3* open_readonly(const std::filesystem::path& path) {
  sqlite3* db = nullptr;
  int rc = sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
    sqlite3_close(db);
    throw ValueError("[sqlite] cannot open " + path.string() + ": " + msg);
  }
  sqlite3_busy_timeout(db, 5000);
  return db;
}

/// "[a], [b]" (identifiers checked), or "*" for no columns.
std::string column_list(const std::vector<SqlColumn>& columns) {
  if (columns.empty()) return "*";
  std::string out;
  for (const SqlColumn& c : columns) {
    check_identifier(c.name, "column");
    if (!out.empty()) out += ", ";
    out += "[" + c.name + "]";
  }
  return out;
}

const char* type_name(const SqlValue& v) {
  switch (v.index()) {
    case 0:
      return "NULL";
    case 1:
      return "INTEGER";
    case 2:
      return "REAL";
    case 3:
      return "TEXT";
    default:
      return "BLOB";
  }
}

template <class T>
const T& typed(const SqlRow& r, size_t c, const char* want) {
  if (c >= r.values.size())
    throw IndexError("[sqlite] column " + std::to_string(c) + " out of range for " +
                     std::to_string(r.values.size()) + " columns");
  const T* p = std::get_if<T>(&r.values[c]);
  if (!p)
    throw ValueError("[sqlite] column " + std::to_string(c) + " holds " + type_name(r.values[c]) +
                     ", expected " + want);
  return *p;
}

}  // namespace

bool SqlRow::is_null(size_t c) const {
  if (c >= values.size())
    throw IndexError("[sqlite] column " + std::to_string(c) + " out of range for " +
                     std::to_string(values.size()) + " columns");
  return values[c].index() == 0;
}
int64_t SqlRow::integer(size_t c) const { return typed<int64_t>(*this, c, "INTEGER"); }
double SqlRow::real(size_t c) const {
  if (c < values.size())
    if (const int64_t* i = std::get_if<int64_t>(&values[c])) return static_cast<double>(*i);
  return typed<double>(*this, c, "REAL");
}
const std::string& SqlRow::text(size_t c) const { return typed<std::string>(*this, c, "TEXT"); }
const Blob& SqlRow::blob(size_t c) const { return typed<Blob>(*this, c, "BLOB"); }

std::vector<std::string> sqlite_tables(const std::filesystem::path& path) {
  sqlite3* db = open_readonly(path);
  std::vector<std::string> out;
  sqlite3_stmt* st = nullptr;
  const char* sql = "SELECT name FROM sqlite_master WHERE type = 'table' ORDER BY name";
  if (sqlite3_prepare_v2(db, sql, -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw ValueError("[sqlite] " + path.string() + ": not a readable database: " + msg);
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW)
    out.emplace_back(reinterpret_cast<const char*>(sqlite3_column_text(st, 0)));
  sqlite3_finalize(st);
  std::string msg = sqlite3_errmsg(db);
  sqlite3_close(db);
  if (rc != SQLITE_DONE)
    throw ValueError("[sqlite] " + path.string() + ": not a readable database: " + msg);
  return out;
}

// ---- reader ---------------------------------------------------------------------------

namespace detail {

struct SqliteReader::Impl {
  struct Conn {
    sqlite3* db = nullptr;
    sqlite3_stmt* select = nullptr;
  };
  std::filesystem::path path;
  std::string sql;
  std::mutex mu;
  std::vector<Conn> idle;

  Conn open() {
    Conn c;
    c.db = open_readonly(path);
    if (sqlite3_prepare_v2(c.db, sql.c_str(), -1, &c.select, nullptr) != SQLITE_OK) {
      std::string msg = sqlite3_errmsg(c.db);
      sqlite3_close(c.db);
      throw ValueError("[sqlite] " + path.string() + ": " + msg + " (in: " + sql + ")");
    }
    return c;
  }
  Conn take() {
    {
      std::lock_guard lk(mu);
      if (!idle.empty()) {
        Conn c = idle.back();
        idle.pop_back();
        return c;
      }
    }
    return open();
  }
  void give(Conn c) {
    std::lock_guard lk(mu);
    idle.push_back(c);
  }
  ~Impl() {
    for (Conn& c : idle) {
      sqlite3_finalize(c.select);
      sqlite3_close(c.db);
    }
  }
};

SqliteReader::SqliteReader(const std::filesystem::path& path, std::string table,
                           const std::vector<SqlColumn>& columns)
    : impl_(std::make_unique<Impl>()), table_(std::move(table)) {
  check_identifier(table_, "table");
  impl_->path = path;
  if (!std::filesystem::exists(path))
    throw ValueError("[sqlite] cannot open " + path.string() + ": no such file");
  std::vector<std::string> tables = sqlite_tables(path);
  if (std::find(tables.begin(), tables.end(), table_) == tables.end()) {
    std::string have;
    for (const auto& t : tables) have += (have.empty() ? "" : ", ") + t;
    throw ValueError("[sqlite] " + path.string() + " has no table '" + table_ +
                     "' (tables: " + (have.empty() ? "none" : have) + ")");
  }
  impl_->sql = "SELECT " + column_list(columns) + " FROM [" + table_ + "] WHERE rowid = ?";

  // The rowids in order: item i is the i-th row, whatever gaps the rowids have.
  sqlite3* db = open_readonly(path);
  sqlite3_stmt* st = nullptr;
  std::string q = "SELECT rowid FROM [" + table_ + "] ORDER BY rowid";
  if (sqlite3_prepare_v2(db, q.c_str(), -1, &st, nullptr) != SQLITE_OK) {
    std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw ValueError("[sqlite] " + path.string() + ": " + msg);
  }
  int rc;
  while ((rc = sqlite3_step(st)) == SQLITE_ROW) rowids_.push_back(sqlite3_column_int64(st, 0));
  sqlite3_finalize(st);
  if (rc != SQLITE_DONE) {
    std::string msg = sqlite3_errmsg(db);
    sqlite3_close(db);
    throw ValueError("[sqlite] " + path.string() + ": reading rowids: " + msg);
  }
  sqlite3_close(db);
  // Prepares once now, so a missing column is reported here and not at the first get().
  impl_->give(impl_->open());
}

SqliteReader::~SqliteReader() = default;

SqlRow SqliteReader::read(size_t i) const {
  Impl::Conn c = impl_->take();
  struct Return {
    Impl* impl;
    Impl::Conn c;
    ~Return() {
      sqlite3_reset(c.select);
      impl->give(c);
    }
  } ret{impl_.get(), c};
  sqlite3_stmt* st = c.select;
  sqlite3_bind_int64(st, 1, rowids_[i]);
  int rc = sqlite3_step(st);
  if (rc != SQLITE_ROW) {
    std::string msg = rc == SQLITE_DONE ? "row vanished" : sqlite3_errmsg(c.db);
    throw ValueError("[sqlite] " + impl_->path.string() + " table " + table_ + " item " +
                     std::to_string(i) + ": " + msg);
  }
  SqlRow row;
  int n = sqlite3_column_count(st);
  row.values.reserve(static_cast<size_t>(n));
  for (int k = 0; k < n; ++k) {
    switch (sqlite3_column_type(st, k)) {
      case SQLITE_INTEGER:
        row.values.emplace_back(int64_t{sqlite3_column_int64(st, k)});
        break;
      case SQLITE_FLOAT:
        row.values.emplace_back(sqlite3_column_double(st, k));
        break;
      case SQLITE_TEXT: {
        const char* p = reinterpret_cast<const char*>(sqlite3_column_text(st, k));
        row.values.emplace_back(std::string(p, static_cast<size_t>(sqlite3_column_bytes(st, k))));
        break;
      }
      case SQLITE_BLOB: {
        const uint8_t* p = static_cast<const uint8_t*>(sqlite3_column_blob(st, k));
        size_t len = static_cast<size_t>(sqlite3_column_bytes(st, k));
        row.values.emplace_back(Blob(p, p + len));
        break;
      }
      default:
        row.values.emplace_back(std::monostate{});
        break;
    }
  }
  return row;
}

// ---- writer ---------------------------------------------------------------------------

struct SqliteWriter::Impl {
  std::filesystem::path path, tmp;
  std::vector<SqlColumn> columns;
  sqlite3* db = nullptr;
  std::map<std::string, std::pair<sqlite3_stmt*, size_t>, std::less<>> tables;
  bool done = false;

  void close() {
    for (auto& [name, t] : tables) sqlite3_finalize(t.first);
    tables.clear();
    if (db) sqlite3_close(db);
    db = nullptr;
  }
  ~Impl() {
    if (!done) {
      close();
      std::error_code ec;
      std::filesystem::remove(tmp, ec);
      std::filesystem::remove(tmp.string() + "-journal", ec);
    }
  }
};

SqliteWriter::SqliteWriter(const std::filesystem::path& path, std::vector<SqlColumn> columns)
    : impl_(std::make_unique<Impl>()) {
  if (columns.empty()) throw ValueError("[sqlite] a writer needs at least one column");
  for (const SqlColumn& c : columns) check_identifier(c.name, "column");
  impl_->path = path;
  impl_->columns = std::move(columns);
  impl_->tmp = path;
  impl_->tmp += ".tmp-" + std::to_string(std::random_device{}());
  int rc =
      sqlite3_open_v2(impl_->tmp.c_str(), &impl_->db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) fail("cannot create " + impl_->tmp.string(), impl_->db, "open");
  exec(impl_->db, "BEGIN", impl_->tmp.string());
}

SqliteWriter::~SqliteWriter() = default;

void SqliteWriter::insert(const SqlRow& row, std::string_view table) {
  Impl& m = *impl_;
  if (m.done) throw ValueError("[sqlite] " + m.path.string() + ": push after finish()");
  if (row.values.size() != m.columns.size())
    throw ValueError("[sqlite] row has " + std::to_string(row.values.size()) +
                     " values, the table has " + std::to_string(m.columns.size()) + " columns");
  auto it = m.tables.find(table);
  if (it == m.tables.end()) {
    std::string name(table);
    check_identifier(name, "table");
    std::string cols, names, marks;
    for (const SqlColumn& c : m.columns) {
      cols += (cols.empty() ? "[" : ", [") + c.name + "] " + sql_type(c.type);
      names += (names.empty() ? "[" : ", [") + c.name + "]";
      marks += marks.empty() ? "?" : ", ?";
    }
    exec(m.db, "CREATE TABLE [" + name + "] (" + cols + ")", m.tmp.string());
    sqlite3_stmt* st = nullptr;
    std::string sql = "INSERT INTO [" + name + "] (" + names + ") VALUES (" + marks + ")";
    if (sqlite3_prepare_v2(m.db, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      fail(m.tmp.string(), m.db, "prepare insert");
    it = m.tables.emplace(name, std::make_pair(st, size_t{0})).first;
  }
  sqlite3_stmt* st = it->second.first;
  for (size_t k = 0; k < row.values.size(); ++k) {
    int col = static_cast<int>(k) + 1;
    const SqlValue& v = row.values[k];
    int rc = SQLITE_OK;
    if (const int64_t* i = std::get_if<int64_t>(&v)) {
      rc = sqlite3_bind_int64(st, col, *i);
    } else if (const double* d = std::get_if<double>(&v)) {
      rc = sqlite3_bind_double(st, col, *d);
    } else if (const std::string* s = std::get_if<std::string>(&v)) {
      rc = sqlite3_bind_text64(st, col, s->data(), s->size(), SQLITE_TRANSIENT, SQLITE_UTF8);
    } else if (const Blob* b = std::get_if<Blob>(&v)) {
      // A zero-length blob must not bind as NULL.
      rc = b->empty() ? sqlite3_bind_zeroblob(st, col, 0)
                      : sqlite3_bind_blob64(st, col, b->data(), b->size(), SQLITE_TRANSIENT);
    } else {
      rc = sqlite3_bind_null(st, col);
    }
    if (rc != SQLITE_OK) fail(m.tmp.string(), m.db, "bind");
  }
  int rc = sqlite3_step(st);
  sqlite3_reset(st);
  sqlite3_clear_bindings(st);
  if (rc != SQLITE_DONE) fail(m.tmp.string(), m.db, "insert");
  ++it->second.second;
}

size_t SqliteWriter::count(std::string_view table) const {
  auto it = impl_->tables.find(table);
  return it == impl_->tables.end() ? 0 : it->second.second;
}

void SqliteWriter::finish() {
  Impl& m = *impl_;
  if (m.done) throw ValueError("[sqlite] " + m.path.string() + ": finish() called twice");
  for (auto& [name, t] : m.tables) {
    sqlite3_finalize(t.first);
    t.first = nullptr;
  }
  exec(m.db, "COMMIT", m.tmp.string());
  if (sqlite3_close(m.db) != SQLITE_OK) fail(m.tmp.string(), m.db, "close");
  m.db = nullptr;
  std::error_code ec;
  std::filesystem::rename(m.tmp, m.path, ec);
  if (ec)
    throw ValueError("[sqlite] cannot rename " + m.tmp.string() + " onto " + m.path.string() +
                     ": " + ec.message());
  m.done = true;
}

bool SqliteWriter::finished() const { return impl_->done; }

}  // namespace detail

}  // namespace ember::data
