// The dashboard's "recently finished" list: the jobs that ended last, by end time, however many
// newer jobs are still active (an independent review found the 50 oldest shown, or none once 500
// newer jobs were active).
#include <gtest/gtest.h>

#include "daemon/store.h"
#include "daemon_harness.h"

namespace colo::daemon::testing {
namespace {

TEST(StoreRecentlyFinished, TheLatestEndsWhateverTheIdsAndTheActiveJobs) {
  TempDir dir;
  Store s(dir.path() + "/colo.db");
  JobRow j;
  j.user = "u";
  j.argv = {"true"};
  j.workdir = "/";
  j.fingerprint = "f";
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

}  // namespace
}  // namespace colo::daemon::testing
