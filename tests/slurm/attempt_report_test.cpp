#include "slurm/attempt_report.h"

#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace colo::slurm {
namespace {

using ::testing::HasSubstr;

class AttemptReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() / ("colo-reports-" + std::to_string(::getpid()));
    std::filesystem::create_directories(reports_dir(dir_));
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  std::string dir_;
};

TEST_F(AttemptReportTest, WrittenOnceAndReadBackByTheOwner) {
  AttemptReport r;
  r.job_id = 42;
  r.restart = 1;
  r.outcome = "oom";
  r.exit_code = 75;
  r.peak_mib = 12288;
  r.oom_line = "CUDA out of memory";
  write_attempt_report(dir_, r);
  const auto back = read_attempt_report(dir_, 42, 1, ::getuid());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->outcome, "oom");
  EXPECT_EQ(back->peak_mib, 12288);
  EXPECT_EQ(back->oom_line, "CUDA out of memory");
}

// A script with several `colo run` steps in one attempt: the reader merges them — the larger
// peak, an OOM in any step (the agent must not learn the small step's peak, nor miss the OOM).
TEST_F(AttemptReportTest, StepsOfAnAttemptMergeIntoOneReport) {
  AttemptReport small;
  small.job_id = 17;
  small.outcome = "ok";
  small.peak_mib = 2048;
  small.gpus = "0";
  const std::string path = write_attempt_report(dir_, small);
  EXPECT_EQ(path, report_path(dir_, 17, 0)) << "the first step takes the plain name";
  AttemptReport big = small;
  big.peak_mib = 12288;
  EXPECT_NE(write_attempt_report(dir_, big), path) << "a step never replaces another's report";
  auto back = read_attempt_report(dir_, 17, 0, ::getuid());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->peak_mib, 12288);
  EXPECT_EQ(back->outcome, "ok");
  AttemptReport oom = small;
  oom.outcome = "oom";
  oom.exit_code = 75;
  oom.oom_line = "CUDA out of memory";
  oom.peak_mib = 4096;
  write_attempt_report(dir_, oom);
  AttemptReport after = small;  // a later step that ran fine does not hide the OOM
  after.peak_mib = std::nullopt;
  write_attempt_report(dir_, after);
  back = read_attempt_report(dir_, 17, 0, ::getuid());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->outcome, "oom");
  EXPECT_EQ(back->exit_code, 75);
  EXPECT_EQ(back->oom_line, "CUDA out of memory");
  EXPECT_EQ(back->peak_mib, 12288);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(reports_dir(dir_))) {
    EXPECT_EQ(e.path().extension(), ".json") << "no temporary file is left behind: " << e.path();
    files += e.is_regular_file();
  }
  EXPECT_EQ(files, 4);
  // Another attempt's reports are not mixed in.
  EXPECT_FALSE(read_attempt_report(dir_, 17, 1, ::getuid()));
}

// Steps started together (`srun colo run … &` twice, then `wait`) write at the same moment:
// every one of them reaches the reader, whatever the interleaving. The children are released at
// once through a pipe, not by timing.
TEST_F(AttemptReportTest, StepsWritingAtOnceAreAllRead) {
  int gate[2];
  ASSERT_EQ(::pipe(gate), 0);
  constexpr int kSteps = 8;
  std::vector<pid_t> kids;
  for (int k = 0; k < kSteps; ++k) {
    const pid_t pid = ::fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      ::close(gate[1]);
      char c;
      while (::read(gate[0], &c, 1) < 0 && errno == EINTR) {
      }
      AttemptReport r;
      r.job_id = 23;
      r.outcome = k == 3 ? "oom" : "ok";
      r.exit_code = k == 3 ? 75 : 0;
      r.peak_mib = 1000 + k;
      try {
        write_attempt_report(dir_, r);
      } catch (...) {
        ::_exit(1);
      }
      ::_exit(0);
    }
    kids.push_back(pid);
  }
  ::close(gate[0]);
  ::close(gate[1]);  // every child's read returns now
  for (const pid_t pid : kids) {
    int status = 0;
    ASSERT_EQ(::waitpid(pid, &status, 0), pid);
    EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  const auto back = read_attempt_report(dir_, 23, 0, ::getuid());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->outcome, "oom");
  EXPECT_EQ(back->exit_code, 75);
  EXPECT_EQ(back->peak_mib, 1000 + kSteps - 1);
  int files = 0;
  for (const auto& e : std::filesystem::directory_iterator(reports_dir(dir_))) files += e.path().extension() == ".json";
  EXPECT_EQ(files, kSteps);
}

// Job ids are predictable: another user can plant thousands of names for a job before it runs.
// They are skipped unopened and uncounted, so the bound on files read cannot be spent on them and
// the job user's own report (forced onto a random name) is still found.
TEST_F(AttemptReportTest, ThousandsOfOtherUsersFilesDoNotHideTheReport) {
  if (::geteuid() != 0) GTEST_SKIP() << "needs root to create files as another user";
  const std::string dir = reports_dir(dir_);
  std::ofstream(report_path(dir_, 31, 0)) << R"({"job_id":31,"restart":0,"outcome":"ok","exit_code":0})";
  ASSERT_EQ(::chown(report_path(dir_, 31, 0).c_str(), 65534, 65534), 0);
  for (std::size_t k = 0; k < kMaxReportsPerAttempt + 500; ++k) {
    const std::string p = dir + "/31.0.s" + std::to_string(k) + ".json";
    std::ofstream(p) << R"({"job_id":31,"restart":0,"outcome":"ok","exit_code":0})";
    ASSERT_EQ(::chown(p.c_str(), 65534, 65534), 0);
  }
  AttemptReport r;
  r.job_id = 31;
  r.outcome = "oom";
  r.exit_code = 75;
  const std::string mine = write_attempt_report(dir_, r);
  EXPECT_NE(mine, report_path(dir_, 31, 0));
  const auto back = read_attempt_report(dir_, 31, 0, ::getuid());
  ASSERT_TRUE(back);
  EXPECT_EQ(back->outcome, "oom");
}

TEST_F(AttemptReportTest, AnotherUsersFileIsIgnored) {
  AttemptReport r;
  r.job_id = 5;
  r.outcome = "ok";
  write_attempt_report(dir_, r);
  std::string why;
  EXPECT_FALSE(read_attempt_report(dir_, 5, 0, static_cast<std::int64_t>(::getuid()) + 1, &why));
  EXPECT_THAT(why, HasSubstr("not the job's user"));
}

TEST_F(AttemptReportTest, ForgedOrBrokenReportsAreIgnored) {
  std::string why;
  EXPECT_FALSE(read_attempt_report(dir_, 1, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("no report"));
  std::ofstream(report_path(dir_, 2, 0)) << R"({"job_id":3,"restart":0,"outcome":"ok","exit_code":0})";
  EXPECT_FALSE(read_attempt_report(dir_, 2, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("another attempt"));
  std::ofstream(report_path(dir_, 4, 0)) << R"({"job_id":4,"restart":0,"outcome":"ok","exit_code":0,"peak_mib":-1})";
  EXPECT_FALSE(read_attempt_report(dir_, 4, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("out of range"));
  std::ofstream(report_path(dir_, 6, 0)) << "{";
  EXPECT_FALSE(read_attempt_report(dir_, 6, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("not a report"));
  std::filesystem::create_symlink("/etc/passwd", report_path(dir_, 8, 0));
  EXPECT_FALSE(read_attempt_report(dir_, 8, 0, ::getuid(), &why));
  // Numbers that would narrow or are not integers at all.
  std::ofstream(report_path(dir_, 10, 0)) << R"({"job_id":10,"restart":4294967296,"outcome":"ok","exit_code":0})";
  EXPECT_FALSE(read_attempt_report(dir_, 10, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("not an integer in range"));
  std::ofstream(report_path(dir_, 11, 0)) << R"({"job_id":11,"restart":0,"outcome":"ok","exit_code":1e300})";
  EXPECT_FALSE(read_attempt_report(dir_, 11, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("not an integer in range"));
  std::ofstream(report_path(dir_, 12, 0)) << R"({"job_id":12,"restart":0,"outcome":"ok","exit_code":0,"peak_mib":2.5})";
  EXPECT_FALSE(read_attempt_report(dir_, 12, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("peak_mib"));
}

// A FIFO planted under a report's name (the reports folder is writable by every user) is refused
// at once: opening it must not wait for a writer, which would stall the agent for every job.
TEST_F(AttemptReportTest, AFifoIsRefusedWithoutBlocking) {
  ASSERT_EQ(::mkfifo(report_path(dir_, 9, 0).c_str(), 0644), 0);
  std::string why;
  EXPECT_FALSE(read_attempt_report(dir_, 9, 0, ::getuid(), &why));
  EXPECT_THAT(why, HasSubstr("not a regular file"));
}

}  // namespace
}  // namespace colo::slurm
