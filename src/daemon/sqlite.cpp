#include "daemon/sqlite.h"

#include <cerrno>
#include <stdexcept>

#include <fmt/format.h>
#include <sqlite3.h>

namespace colo::daemon {

namespace {
// SQLITE_FULL, or an I/O error from ENOSPC/EDQUOT: SQLite reports a write that runs out of room as
// either (the shared-memory index it grows on open as IOERR_SHMSIZE, with no errno kept).
bool disk_full(sqlite3* db) {
  const int rc = sqlite3_extended_errcode(db);
  const int sys = sqlite3_system_errno(db);
  return (rc & 0xff) == SQLITE_FULL || rc == SQLITE_IOERR_SHMSIZE ||
         ((rc & 0xff) == SQLITE_IOERR && (sys == ENOSPC || sys == EDQUOT));
}

[[noreturn]] void throw_error(sqlite3* db, std::string msg) {
  if (disk_full(db)) throw StorageFull(std::move(msg));
  throw std::runtime_error(std::move(msg));
}

[[noreturn]] void fail(sqlite3* db, std::string_view what) {
  throw_error(db, fmt::format("sqlite: {}: {}", what, sqlite3_errmsg(db)));
}
}  // namespace

Stmt::Stmt(sqlite3* db, std::string_view sql) : db_(db), sql_(sql) {
  if (sqlite3_prepare_v2(db_, sql_.c_str(), static_cast<int>(sql_.size()), &st_, nullptr) != SQLITE_OK)
    fail(db_, "prepare '" + sql_ + "'");
}

Stmt::~Stmt() { sqlite3_finalize(st_); }

Stmt& Stmt::bind(int i, std::int64_t v) {
  if (sqlite3_bind_int64(st_, i, v) != SQLITE_OK) fail(db_, "bind " + sql_);
  return *this;
}
Stmt& Stmt::bind(int i, double v) {
  if (sqlite3_bind_double(st_, i, v) != SQLITE_OK) fail(db_, "bind " + sql_);
  return *this;
}
Stmt& Stmt::bind(int i, const std::string& v) {
  if (sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT) != SQLITE_OK)
    fail(db_, "bind " + sql_);
  return *this;
}
Stmt& Stmt::bind_null(int i) {
  if (sqlite3_bind_null(st_, i) != SQLITE_OK) fail(db_, "bind " + sql_);
  return *this;
}

bool Stmt::step() {
  const int rc = sqlite3_step(st_);
  if (rc == SQLITE_ROW) return true;
  if (rc == SQLITE_DONE) return false;
  fail(db_, "step '" + sql_ + "'");
}

void Stmt::run() {
  while (step()) {
  }
}

bool Stmt::is_null(int col) const { return sqlite3_column_type(st_, col) == SQLITE_NULL; }
std::int64_t Stmt::i64(int col) const { return sqlite3_column_int64(st_, col); }
double Stmt::f64(int col) const { return sqlite3_column_double(st_, col); }
std::string Stmt::text(int col) const {
  const auto* p = sqlite3_column_text(st_, col);
  return p ? std::string(reinterpret_cast<const char*>(p), static_cast<size_t>(sqlite3_column_bytes(st_, col)))
           : std::string();
}
std::optional<std::int64_t> Stmt::opt_i64(int col) const {
  if (is_null(col)) return std::nullopt;
  return i64(col);
}
std::optional<double> Stmt::opt_f64(int col) const {
  if (is_null(col)) return std::nullopt;
  return f64(col);
}

Db::Db(const std::string& path) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX,
                      nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error(fmt::format("sqlite: cannot open {}: {}", path, msg));
  }
  sqlite3_busy_timeout(db_, 5000);
  exec("PRAGMA journal_mode=WAL");
  exec("PRAGMA synchronous=FULL");
  exec("PRAGMA foreign_keys=ON");
}

Db::Db(const std::string& path, ReadOnly) {
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK) {
    const std::string msg = db_ ? sqlite3_errmsg(db_) : "out of memory";
    sqlite3_close(db_);
    throw std::runtime_error(fmt::format("sqlite: cannot open {}: {}", path, msg));
  }
  sqlite3_busy_timeout(db_, 5000);
}

Db::~Db() { sqlite3_close(db_); }

void Db::exec(std::string_view sql) {
  const std::string s(sql);
  char* err = nullptr;
  if (sqlite3_exec(db_, s.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = fmt::format("sqlite: exec '{}': {}", s.substr(0, 80), err ? err : "unknown error");
    sqlite3_free(err);
    throw_error(db_, std::move(msg));
  }
}

std::int64_t Db::last_insert_id() const { return sqlite3_last_insert_rowid(db_); }
int Db::changes() const { return sqlite3_changes(db_); }

Txn::Txn(Db& db) : db_(db) { db_.exec("BEGIN IMMEDIATE"); }
Txn::~Txn() {
  if (!done_) {
    try {
      db_.exec("ROLLBACK");
    } catch (...) {
    }
  }
}
void Txn::commit() {
  db_.exec("COMMIT");
  done_ = true;
}

}  // namespace colo::daemon
