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

// `colo report --state-dir`: a damaged database, or an SQLite file of something else, is a clear
// error naming the file, not an internal one.
TEST(HistoryReport, ADamagedOrForeignDatabaseIsAClearError) {
  const std::string dir = ::testing::TempDir() + "colo_report_bad_db";
  std::filesystem::create_directories(dir);
  auto error_for = [&] {
    try {
      history_report_run(dir);
    } catch (const colo::UserError& e) {
      return std::string(e.what());
    }
    return std::string("(no error)");
  };
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

}  // namespace
}  // namespace colo::daemon
