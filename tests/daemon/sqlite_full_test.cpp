// A full disk under the state database is told apart from every other store failure
// (StorageFull), and the transaction it stopped leaves nothing behind.
#include <filesystem>

#include <gtest/gtest.h>

#include "daemon/sqlite.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

std::int64_t count_blob_rows(Db& db) {
  Stmt s(db.handle(), "SELECT COUNT(*) FROM t");
  return s.step() ? s.i64(0) : -1;
}

void insert_blob_row(Db& db, std::size_t bytes) {
  Txn txn(db);
  Stmt(db.handle(), "INSERT INTO t(x) VALUES (?)").bind(1, std::string(bytes, 'x')).run();
  txn.commit();
}

TEST(SqliteStorageFull, AWriteToAFullDiskThrowsStorageFullAndChangesNothing) {
  TempDir dir;
  MountedTmpfs disk(dir.path() + "/disk", "1m");
  if (!disk.mounted()) GTEST_SKIP() << disk.error();
  Db db(dir.path() + "/disk/state.db");
  db.exec("CREATE TABLE t(x BLOB)");
  insert_blob_row(db, 100);
  const std::string filler = dir.path() + "/disk/filler";
  ASSERT_GT(fill_disk(filler), 0u);

  try {
    insert_blob_row(db, 256 << 10);
    ADD_FAILURE() << "a 256 KiB row was written to a full disk";
  } catch (const StorageFull& e) {
    EXPECT_NE(std::string(e.what()).find("database or disk is full"), std::string::npos) << e.what();
  }
  EXPECT_EQ(count_blob_rows(db), 1);

  // Room again: the same connection writes.
  std::filesystem::remove(filler);
  insert_blob_row(db, 256 << 10);
  EXPECT_EQ(count_blob_rows(db), 2);
}

// Other failures stay plain runtime errors: only a full disk is "try again once there is room".
TEST(SqliteStorageFull, AnotherFailureIsNotStorageFull) {
  TempDir dir;
  Db db(dir.path() + "/state.db");
  try {
    db.exec("INSERT INTO missing VALUES (1)");
    ADD_FAILURE() << "no error";
  } catch (const StorageFull&) {
    ADD_FAILURE() << "a missing table reported as a full disk";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("no such table"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace colo::daemon::testing
