// The recovery agent against an in-memory Slurm that behaves as slurmctld does for the calls the
// agent makes (tests/slurm/test_slurm_e2e.py runs it against the real slurmctld).
#include "slurm/recover_agent.h"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "slurm/attempt_report.h"
#include "slurm/job_comment.h"
#include "slurm/peak_history.h"

namespace colo::slurm {
namespace {

using ::testing::HasSubstr;

class MemorySlurm : public SlurmControl {
 public:
  std::vector<SlurmJob> jobs() override { return list; }
  void set_request(std::uint64_t job, const std::string& tres) override {
    calls.push_back(fmt("update", job, tres));
    if (fail_updates > 0) {
      --fail_updates;
      throw UserError("scontrol: slurm_update error: Socket timed out");
    }
    find(job).tres_per_node = tres;
  }
  void release(std::uint64_t job) override {
    calls.push_back(fmt("release", job, ""));
    SlurmJob& j = find(job);
    j.state = "PENDING";
    j.state_reason = "None";
  }
  void set_admin_comment(std::uint64_t job, const std::string& text) override {
    calls.push_back(fmt("admin", job, text));
    if (fail_comments > 0) {
      --fail_comments;
      throw UserError("scontrol: slurm_update error: Socket timed out");
    }
  }
  SlurmJob& find(std::uint64_t id) {
    for (auto& j : list)
      if (j.job_id == id) return j;
    throw UserError("no such job");
  }
  static std::string fmt(const char* what, std::uint64_t job, const std::string& arg) {
    return std::string(what) + " " + std::to_string(job) + (arg.empty() ? "" : " " + arg);
  }

  std::vector<SlurmJob> list;
  std::vector<std::string> calls;
  int fail_updates = 0;
  int fail_comments = 0;
};

class RecoverAgentTest : public ::testing::Test {
 protected:
  void SetUp() override {
    site_.state_dir = std::filesystem::temp_directory_path() / ("colo-agent-" + std::to_string(::getpid()));
    std::filesystem::remove_all(site_.state_dir);
    site_.shards_per_gpu = 40;
    site_.max_retries = 2;
  }
  void TearDown() override { std::filesystem::remove_all(site_.state_dir); }

  // Slurm's view after `colo run` exited 75 on attempt `restart_cnt - 1`.
  SlurmJob held(std::uint64_t id, int restart_cnt, const std::string& tres) {
    SlurmJob j;
    j.job_id = id;
    j.user_id = ::getuid();
    j.state = "SPECIAL_EXIT";
    j.state_reason = "JobHeldUser";
    j.restart_cnt = restart_cnt;
    j.exit_code = 75;
    j.tres_per_node = tres;
    j.comment = format_comment(JobComment{4096, "user", "u" + std::to_string(::getuid()) + "-abc"});
    return j;
  }
  void report(std::uint64_t id, int restart, const std::string& outcome, std::optional<MiB> peak) {
    AttemptReport r;
    r.job_id = id;
    r.restart = restart;
    r.outcome = outcome;
    r.peak_mib = peak;
    std::filesystem::create_directories(reports_dir(site_.state_dir));  // as the agent makes it
    write_attempt_report(site_.state_dir, r);
  }

  SiteSettings site_;
  MemorySlurm slurm_;
  std::ostringstream log_;
};

TEST_F(RecoverAgentTest, EscalatesAHeldOomJobAndReleasesIt) {
  RecoverAgent agent(site_, slurm_, log_);
  slurm_.list = {held(7, 1, "gres:shard:5")};
  report(7, 0, "oom", 4000);
  agent.step();
  EXPECT_THAT(slurm_.calls, ::testing::ElementsAre("update 7 gres:shard:10", "release 7"));
  EXPECT_EQ(agent.jobs().at(7).phase, "released");
  // Slurm still shows the old state for a pass: nothing is done twice.
  slurm_.list[0].state = "SPECIAL_EXIT";
  agent.step();
  EXPECT_EQ(slurm_.calls.size(), 2u);
}

TEST_F(RecoverAgentTest, AnInterruptedPlanIsReappliedNotRaisedAgain) {
  slurm_.list = {held(7, 1, "gres:shard:5")};
  report(7, 0, "oom", std::nullopt);
  slurm_.fail_updates = 1;
  {
    RecoverAgent agent(site_, slurm_, log_);
    EXPECT_EQ(agent.step(), 1);  // plan saved, scontrol fails: one job not handled this pass
    EXPECT_EQ(agent.jobs().at(7).phase, "planned");
  }
  EXPECT_THAT(log_.str(), HasSubstr("retrying next pass"));
  RecoverAgent restarted(site_, slurm_, log_);  // as after kill -9
  EXPECT_EQ(restarted.jobs().at(7).tres, "gres:shard:10");
  EXPECT_EQ(restarted.step(), 0);
  EXPECT_EQ(slurm_.list[0].tres_per_node, "gres:shard:10");
  EXPECT_EQ(restarted.jobs().at(7).ooms, 1);
  EXPECT_EQ(slurm_.calls.back(), "release 7");
}

// A plan whose job vanished from Slurm (cancelled while the agent was down) cannot be applied:
// it is dropped after a few passes instead of staying in agent.json forever; a job that is still
// listed keeps its plan.
TEST_F(RecoverAgentTest, APlanForAJobSlurmForgotIsDropped) {
  slurm_.list = {held(7, 1, "gres:shard:5"), held(8, 1, "gres:shard:5")};
  report(7, 0, "oom", std::nullopt);
  report(8, 0, "oom", std::nullopt);
  slurm_.fail_updates = 2;
  {
    RecoverAgent agent(site_, slurm_, log_, /*report_min_age_s=*/0);  // no wall-clock grace here
    agent.step();  // both planned, both updates fail
    ASSERT_EQ(agent.jobs().at(7).phase, "planned");
    ASSERT_EQ(agent.jobs().at(8).phase, "planned");
    slurm_.list.erase(slurm_.list.begin());  // job 7 cancelled and purged
    slurm_.fail_updates = 1000;              // job 8's plan keeps failing: still in flight
    agent.step();
    agent.step();
    EXPECT_TRUE(agent.jobs().count(7));  // two passes: could still be a hiccup
    agent.step();
    EXPECT_FALSE(agent.jobs().count(7));
    EXPECT_EQ(agent.jobs().at(8).phase, "planned");
    EXPECT_THAT(log_.str(), HasSubstr("job 7: gone from Slurm"));
  }
  RecoverAgent restarted(site_, slurm_, log_);  // and it is gone from disk too
  EXPECT_FALSE(restarted.jobs().count(7));
  // With the default grace (an hour) three passes alone drop nothing.
  slurm_.list.clear();
  for (int k = 0; k < 5; ++k) restarted.step();
  EXPECT_EQ(restarted.jobs().at(8).phase, "planned");
}

TEST_F(RecoverAgentTest, GivesUpAfterMaxRetriesAndSaysWhy) {
  RecoverAgent agent(site_, slurm_, log_);
  slurm_.list = {held(7, 1, "gres:shard:5")};
  report(7, 0, "oom", std::nullopt);
  agent.step();
  slurm_.list[0] = held(7, 2, slurm_.list[0].tres_per_node);
  report(7, 1, "oom", std::nullopt);
  agent.step();
  EXPECT_EQ(slurm_.list[0].tres_per_node, "gres:shard:15");
  slurm_.list[0] = held(7, 3, slurm_.list[0].tres_per_node);
  report(7, 2, "oom", std::nullopt);
  agent.step();
  EXPECT_EQ(agent.jobs().at(7).phase, "gave_up");
  EXPECT_THAT(slurm_.calls.back(), HasSubstr("admin 7 colo: out of memory 3 times (max_retries 2)"));
  EXPECT_EQ(slurm_.list[0].state, "SPECIAL_EXIT");  // left held for a person
  EXPECT_FALSE(agent.jobs().at(7).comment_pending);
}

// The AdminComment that says why a job stays held is retried on later passes until Slurm takes
// it (and survives a restart of the agent in between).
TEST_F(RecoverAgentTest, AFailedAdminCommentIsRetried) {
  slurm_.list = {held(9, 1, "gres:gpu:1")};
  report(9, 0, "oom", std::nullopt);
  slurm_.fail_comments = 1;
  {
    RecoverAgent agent(site_, slurm_, log_);
    agent.step();
    EXPECT_TRUE(agent.jobs().at(9).comment_pending);
  }
  RecoverAgent restarted(site_, slurm_, log_);
  EXPECT_TRUE(restarted.jobs().at(9).comment_pending);
  restarted.step();
  EXPECT_FALSE(restarted.jobs().at(9).comment_pending);
  EXPECT_THAT(slurm_.calls, ::testing::ElementsAre(HasSubstr("admin 9 colo: out of memory on a whole GPU"),
                                                   HasSubstr("admin 9 colo: out of memory on a whole GPU")));
  restarted.step();  // set once it worked
  EXPECT_EQ(slurm_.calls.size(), 2u);
}

// Held with the hold code but no OOM in colo run's report (the script itself exited 75): not
// escalated, left held with the reason.
TEST_F(RecoverAgentTest, AHoldWithoutAnOomReportIsNotEscalated) {
  RecoverAgent agent(site_, slurm_, log_);
  slurm_.list = {held(5, 1, "gres:shard:5"), held(6, 1, "gres:shard:5")};
  report(6, 0, "failed", std::nullopt);
  agent.step();
  for (std::uint64_t id : {5u, 6u}) {
    EXPECT_EQ(agent.jobs().at(id).phase, "left_held") << id;
    EXPECT_THAT(agent.jobs().at(id).note, HasSubstr("colo run reported no out-of-memory")) << id;
  }
  EXPECT_THAT(agent.jobs().at(6).note, HasSubstr("outcome failed"));
  EXPECT_EQ(slurm_.list[0].tres_per_node, "gres:shard:5");
  for (const std::string& c : slurm_.calls) EXPECT_THAT(c, HasSubstr("admin ")) << c;
  agent.step();  // nothing new: still left held, nothing done again
  EXPECT_EQ(agent.jobs().at(6).phase, "left_held");
  for (const std::string& c : slurm_.calls) EXPECT_THAT(c, HasSubstr("admin ")) << c;
  // Another step's OOM report that shows up late (an NFS listing cached for a while): escalated
  // on the next pass, once.
  report(6, 0, "oom", 4000);
  agent.step();
  EXPECT_EQ(agent.jobs().at(6).phase, "released");
  EXPECT_EQ(agent.jobs().at(6).ooms, 1);
  EXPECT_EQ(slurm_.list[1].tres_per_node, "gres:shard:10");
  EXPECT_EQ(slurm_.calls.back(), "release 6");
  const std::size_t calls = slurm_.calls.size();
  slurm_.list[1].state = "SPECIAL_EXIT";
  agent.step();
  EXPECT_EQ(slurm_.calls.size(), calls);
}

TEST_F(RecoverAgentTest, OomOnAWholeGpuIsLeftHeld) {
  RecoverAgent agent(site_, slurm_, log_);
  slurm_.list = {held(9, 1, "gres:gpu:1")};
  report(9, 0, "oom", std::nullopt);
  agent.step();
  EXPECT_EQ(agent.jobs().at(9).phase, "gave_up");
  EXPECT_THAT(agent.jobs().at(9).note, HasSubstr("whole GPU"));
}

TEST_F(RecoverAgentTest, IgnoresJobsColoDoesNotRunAndOtherExitCodes) {
  RecoverAgent agent(site_, slurm_, log_);
  SlurmJob plain = held(3, 1, "gres:shard:5");
  plain.comment = "";
  SlurmJob other = held(4, 1, "gres:shard:5");
  other.exit_code = 1;
  slurm_.list = {plain, other};
  agent.step();
  EXPECT_TRUE(slurm_.calls.empty());
  EXPECT_TRUE(agent.jobs().empty());
}

TEST_F(RecoverAgentTest, RecordsThePeakOfAFinishedRunForItsOwnUserOnly) {
  RecoverAgent agent(site_, slurm_, log_);
  SlurmJob done = held(11, 0, "gres:shard:9");
  done.state = "COMPLETED";
  done.exit_code = 0;
  SlurmJob forged = done;
  forged.job_id = 12;
  forged.comment = format_comment(JobComment{1, "user", "u99999-abc"});
  slurm_.list = {done, forged};
  report(11, 0, "ok", 7000);
  report(12, 0, "ok", 1);
  agent.step();
  const auto h = PeakHistory::load(history_path(site_.state_dir));
  ASSERT_TRUE(h.find("u" + std::to_string(::getuid()) + "-abc"));
  EXPECT_EQ(h.find("u" + std::to_string(::getuid()) + "-abc")->peak_mib, 7000);
  EXPECT_FALSE(h.find("u99999-abc"));
  EXPECT_THAT(agent.jobs().at(12).note, HasSubstr("not user"));
  // A rerun that saw no GPU memory (0 MiB) does not replace the real peak.
  SlurmJob rerun = done;
  rerun.job_id = 13;
  slurm_.list.push_back(rerun);
  report(13, 0, "ok", 0);
  agent.step();
  EXPECT_EQ(PeakHistory::load(history_path(site_.state_dir)).find("u" + std::to_string(::getuid()) + "-abc")->peak_mib, 7000);
  EXPECT_THAT(agent.jobs().at(13).note, HasSubstr("peak 0 MiB (no GPU memory seen): not recorded"));
  // Jobs Slurm forgot are forgotten by the agent too.
  slurm_.list.clear();
  agent.step();
  EXPECT_TRUE(agent.jobs().empty());
}

// Job ids are predictable: another user may create a report under the name a job will use. The
// job's own report then takes a random name, the agent still finds it, and the squatter's file
// goes once Slurm no longer lists that job.
TEST_F(RecoverAgentTest, ASquattedReportNameNeitherHidesTheRealReportNorStays) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create a file as another user";
  RecoverAgent agent(site_, slurm_, log_, 0);
  const std::string squat = report_path(site_.state_dir, 11, 0);
  std::ofstream(squat) << R"({"job_id":11,"restart":0,"outcome":"ok","exit_code":0,"peak_mib":1})";
  ASSERT_EQ(::chown(squat.c_str(), 65534, 65534), 0);
  SlurmJob done = held(11, 0, "gres:shard:9");
  done.state = "COMPLETED";
  done.exit_code = 0;
  slurm_.list = {done};
  AttemptReport r;
  r.job_id = 11;
  r.outcome = "ok";
  r.peak_mib = 7000;
  const std::string real = write_attempt_report(site_.state_dir, r);
  EXPECT_NE(real, squat);
  agent.step();
  const auto h = PeakHistory::load(history_path(site_.state_dir));
  ASSERT_TRUE(h.find("u" + std::to_string(::getuid()) + "-abc")) << agent.jobs().at(11).note;
  EXPECT_EQ(h.find("u" + std::to_string(::getuid()) + "-abc")->peak_mib, 7000);
  EXPECT_TRUE(std::filesystem::exists(squat)) << "listed jobs keep their files";
  // A name squatted for a job id Slurm has not handed out yet, and the finished job's files, go
  // once Slurm no longer lists them; a directory in the drop box is left alone.
  std::ofstream(report_path(site_.state_dir, 99, 0)) << "{}";
  std::filesystem::create_directory(reports_dir(site_.state_dir) + "/12.0.d");
  slurm_.list.clear();
  agent.step();
  EXPECT_FALSE(std::filesystem::exists(squat));
  EXPECT_FALSE(std::filesystem::exists(real));
  EXPECT_FALSE(std::filesystem::exists(report_path(site_.state_dir, 99, 0)));
  EXPECT_TRUE(std::filesystem::exists(reports_dir(site_.state_dir) + "/12.0.d"));
  EXPECT_THAT(log_.str(), HasSubstr("removed 3 stale attempt report(s)"));
}

TEST_F(RecoverAgentTest, ReportsOfListedOrYoungJobsAreKept) {
  RecoverAgent agent(site_, slurm_, log_);  // the default age: an hour
  report(5, 0, "ok", 100);
  agent.step();  // job 5 is not listed, but its report was written just now
  EXPECT_TRUE(std::filesystem::exists(report_path(site_.state_dir, 5, 0)));
}

// The site's state_dir may be a symbolic link to a directory (an NFS layout); reports/ inside
// it may not.
TEST_F(RecoverAgentTest, AStateDirThatIsALinkToADirectoryIsUsed) {
  const std::string real = site_.state_dir + "-real";
  std::filesystem::create_directories(real);
  std::filesystem::create_symlink(real, site_.state_dir);
  {
    RecoverAgent agent(site_, slurm_, log_);
    EXPECT_TRUE(std::filesystem::is_directory(real + "/reports"));
  }
  std::filesystem::remove(site_.state_dir);
  std::filesystem::remove_all(real);
}

// A second agent on the same state directory (a cron job beside the service, two nodes sharing an
// NFS state_dir) would escalate the same OOM again: it is refused while the first one lives, and
// the lock goes with its holder.
TEST_F(RecoverAgentTest, OneAgentPerStateDirectory) {
  slurm_.list = {held(7, 1, "gres:shard:5")};
  report(7, 0, "oom", 4000);
  {
    RecoverAgent first(site_, slurm_, log_);
    try {
      RecoverAgent second(site_, slurm_, log_);
      FAIL() << "a second agent started";
    } catch (const UserError& e) {
      EXPECT_THAT(e.what(), HasSubstr("another colo slurm recover is running on " + site_.state_dir));
      EXPECT_THAT(e.what(), HasSubstr("agent.lock is locked"));
    }
    first.step();
    EXPECT_THAT(slurm_.calls, ::testing::ElementsAre("update 7 gres:shard:10", "release 7"));
  }
  RecoverAgent after(site_, slurm_, log_);  // the first one is gone: the lock is free again
  after.step();
  EXPECT_EQ(slurm_.calls.size(), 2u) << "the restarted agent does not escalate the same OOM again";
}

TEST_F(RecoverAgentTest, CorruptStateIsAClearError) {
  std::filesystem::create_directories(site_.state_dir);
  {
    std::ofstream(RecoverAgent::state_path(site_.state_dir)) << "{\"jobs\":{\"x\":1}}";
  }
  try {
    RecoverAgent agent(site_, slurm_, log_);
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("corrupt agent state"));
  }
}

}  // namespace
}  // namespace colo::slurm

namespace colo::slurm {
namespace {

// One user's many distinct jobs cannot grow history.json without bound; other users keep theirs.
TEST(PeakHistoryCap, AUsersOldestFingerprintGoesBeyondTheCap) {
  PeakHistory h;
  h.record("u2-other", PeakRecord{100, 1});
  for (std::uint64_t k = 0; k < PeakHistory::kMaxPerUser + 5; ++k)
    h.record("u1-" + std::to_string(k), PeakRecord{1000, 10 + k});
  EXPECT_EQ(h.size(), PeakHistory::kMaxPerUser + 1);
  EXPECT_FALSE(h.find("u1-0"));  // the oldest five went
  EXPECT_FALSE(h.find("u1-4"));
  EXPECT_TRUE(h.find("u1-5"));
  EXPECT_TRUE(h.find("u2-other"));
  h.record("u1-5", PeakRecord{2000, 99999});  // a re-run updates in place, evicts nothing
  EXPECT_EQ(h.size(), PeakHistory::kMaxPerUser + 1);
  EXPECT_EQ(h.find("u1-5")->peak_mib, 2000);
  // Job ids wrapped (or slurmctld's state was reset): the new entry stays, the oldest recorded goes.
  h.record("u1-new", PeakRecord{3000, 1});
  EXPECT_TRUE(h.find("u1-new"));
  EXPECT_FALSE(h.find("u1-6"));
  // The order survives a save and load.
  const std::string path = (std::filesystem::temp_directory_path() / ("colo-hist-" + std::to_string(::getpid()))).string();
  h.save(path);
  PeakHistory back = PeakHistory::load(path);
  back.record("u1-newer", PeakRecord{3000, 2});
  EXPECT_TRUE(back.find("u1-new"));
  EXPECT_TRUE(back.find("u1-5"));  // re-recorded after u1-7…, so not the oldest
  EXPECT_FALSE(back.find("u1-7"));
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace colo::slurm
