// The dashboard's "recently finished" list: the jobs that ended last, by end time, however many
// newer jobs are still active (an independent review found the 50 oldest shown, or none once 500
// newer jobs were active).
#include <gtest/gtest.h>

#include "daemon/store.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

JobRow store_finished_test_job() {
  JobRow j;
  j.user = "u";
  j.argv = {"true"};
  j.workdir = "/";
  j.fingerprint = "f";
  return j;
}

TEST(StoreRecentlyFinished, TheLatestEndsWhateverTheIdsAndTheActiveJobs) {
  TempDir dir;
  Store s(dir.path() + "/colo.db");
  const JobRow j = store_finished_test_job();
  std::vector<JobId> ids;
  for (int k = 0; k < 100; ++k) ids.push_back(s.insert_job(j));
  // Jobs 1..100 end in reverse order of their ids: job 1 last.
  for (int k = 0; k < 100; ++k) {
    JobRow r = *s.job(ids[static_cast<std::size_t>(k)]);
    r.state = JobState::Cancelled;
    r.end_time = 1000.0 - k;
    s.update_job(r);
  }
  for (int k = 0; k < 600; ++k) s.insert_job(j);  // newer jobs, all still queued
  const auto fin = s.recently_finished(50);
  ASSERT_EQ(fin.size(), 50u);
  EXPECT_EQ(fin.back().id, ids[0]);   // ended last (t = 1000)
  EXPECT_EQ(fin.front().id, ids[49]);  // the 50th latest (t = 951)
  for (std::size_t k = 1; k < fin.size(); ++k) EXPECT_LE(*fin[k - 1].end_time, *fin[k].end_time);
}

// jobs.keep_logs_days walks finished jobs by (end time, id) from a watermark, in batches.
TEST(StoreFinishedBetween, WalksFinishedJobsByEndTimeAndIdFromTheWatermark) {
  TempDir dir;
  Store s(dir.path() + "/colo.db");
  const JobRow j = store_finished_test_job();
  auto finished = [&](JobState st, double end) {
    JobRow r = *s.job(s.insert_job(j));
    r.state = st;
    r.end_time = end;
    s.update_job(r);
    return r.id;
  };
  const JobId a = finished(JobState::Done, 20), b = finished(JobState::Failed, 10), c = finished(JobState::Cancelled, 20);
  const JobId late = finished(JobState::Done, 50);
  JobRow queued = *s.job(s.insert_job(j));
  queued.end_time = 5;  // not finished: never listed, whatever its time says
  s.update_job(queued);
  using Row = std::pair<JobId, double>;
  EXPECT_EQ(s.finished_between({0, 0}, 30, 256), (std::vector<Row>{{b, 10}, {a, 20}, {c, 20}}));
  // Batches of two: the second starts after the first's last (a tie on the end time goes by id).
  const auto first = s.finished_between({0, 0}, 30, 2);
  EXPECT_EQ(first, (std::vector<Row>{{b, 10}, {a, 20}}));
  EXPECT_EQ(s.finished_between({20, a}, 30, 2), (std::vector<Row>{{c, 20}}));
  EXPECT_TRUE(s.finished_between({20, c}, 30, 2).empty());
  EXPECT_EQ(s.finished_between({20, c}, 50, 2), (std::vector<Row>{{late, 50}}));
}

}  // namespace
}  // namespace colo::daemon::testing
