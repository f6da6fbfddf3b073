#pragma once
// A thin RAII layer over SQLite: one connection, prepared statements with typed binds, and a
// transaction guard that rolls back unless committed. Errors throw std::runtime_error with
// SQLite's message and the statement, because a failing state store is a daemon bug or a
// broken disk, never the user's input.
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>

struct sqlite3;
struct sqlite3_stmt;

namespace colo::daemon {

// The disk under the database is full (SQLITE_FULL, ENOSPC, EDQUOT): the one store error that is
// neither a bug nor a broken disk, so colod tells its clients and its operator what to do about it.
class StorageFull : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

class Stmt {
 public:
  Stmt(sqlite3* db, std::string_view sql);
  ~Stmt();
  Stmt(const Stmt&) = delete;
  Stmt& operator=(const Stmt&) = delete;

  // Binds by 1-based position; returns *this to chain.
  Stmt& bind(int i, std::int64_t v);
  Stmt& bind(int i, int v) { return bind(i, static_cast<std::int64_t>(v)); }
  Stmt& bind(int i, double v);
  Stmt& bind(int i, const std::string& v);
  Stmt& bind(int i, const char* v) { return bind(i, std::string(v)); }
  Stmt& bind_null(int i);
  template <class T>
  Stmt& bind(int i, const std::optional<T>& v) {
    return v ? bind(i, *v) : bind_null(i);
  }

  // Advances; true while a row is available.
  bool step();
  // Runs a statement that returns no rows.
  void run();

  bool is_null(int col) const;
  std::int64_t i64(int col) const;
  double f64(int col) const;
  std::string text(int col) const;
  std::optional<std::int64_t> opt_i64(int col) const;
  std::optional<double> opt_f64(int col) const;

 private:
  sqlite3* db_;
  sqlite3_stmt* st_ = nullptr;
  std::string sql_;
};

class Db {
 public:
  // Opens (creating) the database in WAL mode with synchronous=FULL: a transaction that
  // returned from commit survives a crash of the process and of the machine.
  explicit Db(const std::string& path);
  // Read-only (colo report on a live daemon's state): no pragma that writes, no file created.
  struct ReadOnly {};
  Db(const std::string& path, ReadOnly);
  ~Db();
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  void exec(std::string_view sql);
  Stmt prepare(std::string_view sql) { return Stmt(db_, sql); }
  std::int64_t last_insert_id() const;
  int changes() const;
  sqlite3* handle() { return db_; }

 private:
  sqlite3* db_ = nullptr;
};

// BEGIN IMMEDIATE … COMMIT; the destructor rolls back an uncommitted transaction.
class Txn {
 public:
  explicit Txn(Db& db);
  ~Txn();
  Txn(const Txn&) = delete;
  Txn& operator=(const Txn&) = delete;
  void commit();

 private:
  Db& db_;
  bool done_ = false;
};

}  // namespace colo::daemon
