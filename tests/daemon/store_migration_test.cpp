// A state directory written by an older colod (before time slots) opens in place: the new
// columns are added, and the jobs already queued keep their order ahead of new ones.
#include <filesystem>
#include <fstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "daemon/history_report.h"
#include "daemon/sqlite.h"
#include "daemon/store.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

// The jobs/attempts/gpu_samples tables as colod wrote them before checkpoint, queue_seq,
// slot_notice, slot_stop and reserved_mib existed.
constexpr const char* kOldSchema = R"SQL(
CREATE TABLE jobs (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  uid INTEGER NOT NULL, gid INTEGER NOT NULL, user TEXT NOT NULL,
  name TEXT NOT NULL, argv TEXT NOT NULL, env TEXT NOT NULL, workdir TEXT NOT NULL,
  gpus INTEGER NOT NULL,
  need_mib INTEGER, need_source TEXT NOT NULL, need_explanation TEXT NOT NULL,
  requested_mib INTEGER, requested_source TEXT NOT NULL,
  fingerprint TEXT NOT NULL,
  state TEXT NOT NULL, submit_time REAL NOT NULL, end_time REAL,
  attempts INTEGER NOT NULL DEFAULT 0,
  recovery_need_mib INTEGER, recovery_idle_only INTEGER NOT NULL DEFAULT 0, recovery_seq INTEGER,
  cancel_requested INTEGER NOT NULL DEFAULT 0,
  exit_code INTEGER, reason TEXT NOT NULL DEFAULT ''
);
CREATE TABLE attempts (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  job_id INTEGER NOT NULL REFERENCES jobs(id),
  n INTEGER NOT NULL,
  state TEXT NOT NULL,
  slots TEXT NOT NULL, uuids TEXT NOT NULL,
  reserve_mib INTEGER NOT NULL, exclusive INTEGER NOT NULL, recovery INTEGER NOT NULL,
  dir TEXT NOT NULL,
  shim_pid INTEGER, shim_start INTEGER,
  launch_time REAL NOT NULL, start_time REAL, end_time REAL,
  exit_code INTEGER, signal INTEGER,
  outcome TEXT NOT NULL DEFAULT '', evidence TEXT NOT NULL DEFAULT '',
  peak_mib INTEGER,
  out_offset INTEGER NOT NULL DEFAULT 0, err_offset INTEGER NOT NULL DEFAULT 0
);
CREATE TABLE gpu_samples (
  time REAL NOT NULL, slot INTEGER NOT NULL, used_mib INTEGER NOT NULL, smact REAL, power_w REAL
);
)SQL";

TEST(StoreMigration, AnOlderStateDirectoryKeepsItsQueueOrder) {
  TempDir dir;
  const std::string path = dir.path() + "/colo.db";
  {
    Db old(path);
    old.exec(kOldSchema);
    for (int k = 0; k < 3; ++k)
      old.exec("INSERT INTO jobs (uid, gid, user, name, argv, env, workdir, gpus, need_source, need_explanation, "
               "requested_source, fingerprint, state, submit_time) VALUES (0, 0, 'root', 'old', '[\"true\"]', '{}', "
               "'/', 1, '', '', '', 'f', 'queued', 1.0)");
    old.exec("INSERT INTO attempts (job_id, n, state, slots, uuids, reserve_mib, exclusive, recovery, dir, "
             "launch_time) VALUES (1, 1, 'finished', '[0]', '[\"u\"]', 0, 0, 0, '/x', 1.0)");
  }
  Store s(path);
  JobRow j;
  j.user = "root";
  j.argv = {"true"};
  j.workdir = "/";
  j.fingerprint = "g";
  j.checkpoint = true;
  const JobId added = s.insert_job(j);
  std::vector<JobRow> q = s.jobs_in_state(JobState::Queued);
  ASSERT_EQ(q.size(), 4u);
  EXPECT_EQ(q[0].id, 1u);
  EXPECT_EQ(q[0].queue_seq, 1);
  EXPECT_FALSE(q[0].checkpoint);
  EXPECT_EQ(q[3].id, added);
  EXPECT_TRUE(q[3].checkpoint);
  // The first job's slot ended: it goes behind every other, the new one included.
  s.move_to_back(1);
  q = s.jobs_in_state(JobState::Queued);
  EXPECT_EQ(q.back().id, 1u);
  EXPECT_EQ(q.front().id, 2u);
  const auto attempts = s.attempts_of(1);
  ASSERT_EQ(attempts.size(), 1u);
  EXPECT_FALSE(attempts[0].slot_notice);
  s.add_sample(2.0, 0, 100, 0.5, 80.0, 200);  // the older table gained reserved_mib too
}

}  // namespace
}  // namespace colo::daemon::testing

namespace colo::daemon {
namespace {

// What `colo report --state-dir DIR` says: its error, or "(no error)".
std::string report_error(const std::string& dir) {
  try {
    history_report_run(dir);
  } catch (const colo::UserError& e) {
    return e.what();
  }
  return "(no error)";
}

// `colo report --state-dir`: a damaged database, or an SQLite file of something else, is a clear
// error naming the file, not an internal one.
TEST(HistoryReport, ADamagedOrForeignDatabaseIsAClearError) {
  const std::string dir = ::testing::TempDir() + "colo_report_bad_db";
  std::filesystem::create_directories(dir);
  auto error_for = [&] { return report_error(dir); };
  std::ofstream(dir + "/colo.db") << "garbage, not SQLite";
  EXPECT_THAT(error_for(), ::testing::HasSubstr("colo.db is not a readable colod database"));
  std::filesystem::remove(dir + "/colo.db");
  {
    Db db(dir + "/colo.db");
    db.exec("CREATE TABLE unrelated (a INTEGER)");
  }
  EXPECT_THAT(error_for(), ::testing::HasSubstr("no such table: jobs"));
  std::filesystem::remove_all(dir);
}

// Damaged rows (colod runs without foreign keys; a file edited or half-restored) are named, not
// turned into a report: a slot of 2^31-1 overflowed (UBSan) and 200 000 took 1.8 GB, an attempt
// of a job that is not there made a phantom job, a text time read as 0 (a makespan of 1.8e9 s).
TEST(HistoryReport, DamagedRowsAreNamedInsteadOfReported) {
  const std::string dir = ::testing::TempDir() + "colo_report_damaged_rows";
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/colo.db";
  {
    Store s(path);
    JobRow j;
    j.user = "root";
    j.name = "ok";
    j.argv = {"true"};
    j.workdir = "/";
    j.fingerprint = "f";
    j.submit_time = 1000;
    s.insert_job(j);
    s.add_sample(1001.0, 0, 100, 0.5, 80.0, 200);
  }
  Db db(path);
  db.exec("PRAGMA foreign_keys = OFF");  // as in a file edited by hand: nothing stops the damage below
  db.exec("INSERT INTO attempts (job_id, n, state, slots, uuids, reserve_mib, exclusive, recovery, dir, launch_time, "
          "start_time, end_time, outcome) VALUES (1, 1, 'finished', '[0]', '[\"u\"]', 0, 0, 0, '/x', 1000.5, 1001, 1002, 'done')");
  auto error_for = [&] { return report_error(dir); };
  ASSERT_EQ(error_for(), "(no error)");
  EXPECT_EQ(history_report_run(dir).at("gpus"), 1);
  const std::vector<std::pair<std::string, std::string>> damage = {
      {"UPDATE attempts SET slots = '[2147483647]'", "attempt 1: slot 2147483647 is outside 0…4095"},
      {"UPDATE attempts SET slots = '[18446744073709551615]'", "attempt 1: slot 18446744073709551615 is outside 0…4095"},
      {"UPDATE attempts SET slots = '[-1]'", "attempt 1: slot -1 is outside"},
      {"UPDATE attempts SET slots = '[0.5]'", "attempt 1: slots is not a list of GPU slots"},
      {"UPDATE attempts SET slots = '{}'", "attempt 1: slots is not a list of GPU slots"},
      {"UPDATE attempts SET job_id = 999", "attempt 1 belongs to job 999, which the jobs table does not hold"},
      {"UPDATE attempts SET start_time = 'abc'", "attempt 1: start_time is 'abc', not a time"},
      {"UPDATE attempts SET end_time = 1e300", "attempt 1: end_time is 1e+300, not a time"},
      {"UPDATE jobs SET submit_time = 'abc'", "job 1: submit_time is 'abc', not a time"},
      {"UPDATE gpu_samples SET slot = 1099511627776", "GPU sample 1: slot 1099511627776 is outside"},
      {"UPDATE gpu_samples SET time = 'later'", "GPU sample 1: time is 'later', not a time"},
  };
  for (const auto& [sql, why] : damage) {
    db.exec("SAVEPOINT damage");
    db.exec(sql);
    db.exec("RELEASE damage");
    const std::string e = error_for();
    EXPECT_THAT(e, ::testing::HasSubstr("is not a readable colod database")) << sql;
    EXPECT_THAT(e, ::testing::HasSubstr(why)) << sql;
    EXPECT_EQ(e.find('\n'), std::string::npos) << sql;
    // Undo: back to the good rows.
    db.exec("UPDATE attempts SET slots = '[0]', job_id = 1, start_time = 1001, end_time = 1002");
    db.exec("UPDATE jobs SET submit_time = 1000");
    db.exec("UPDATE gpu_samples SET slot = 0, time = 1001.0");
    ASSERT_EQ(error_for(), "(no error)") << sql;
  }
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace colo::daemon
