#include "slurm/job_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"

namespace colo::slurm {
namespace {

using ::testing::ElementsAre;

RunResult sh(const std::string& script) { return run_and_watch({"sh", "-c", script}, nullptr, {}, 0.1); }

TEST(JobRunner, AnOomInTheOutputExitsWithTheHoldCode) {
  const RunResult r = sh("echo step 1; echo 'RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB' >&2; exit 1");
  EXPECT_EQ(r.status, 1);
  ASSERT_TRUE(r.oom);
  EXPECT_EQ(r.oom->framework, "pytorch");
  EXPECT_EQ(exit_code_for(r, 75), 75);
}

TEST(JobRunner, OrdinaryExitsPassThroughButNeverMimicTheHoldCode) {
  EXPECT_EQ(exit_code_for(sh("exit 0"), 75), 0);
  EXPECT_EQ(exit_code_for(sh("exit 3"), 75), 3);
  const RunResult fake = sh("exit 75");  // no OOM: must not be requeued as one
  EXPECT_FALSE(fake.oom);
  EXPECT_EQ(exit_code_for(fake, 75), 1);
  EXPECT_EQ(sh("kill -TERM $$").status, 128 + 15);
}

TEST(JobRunner, AnOomLongBeforeTheEndStillCounts) {
  // The message scrolls by early and the job keeps printing: the tail still has it (256 KiB).
  const RunResult r = sh("echo 'torch.cuda.OutOfMemoryError: CUDA out of memory.'; seq 1 20000; exit 1");
  EXPECT_TRUE(r.oom);
}

TEST(JobRunner, ACommandThatCannotStartIsAClearError) {
  EXPECT_THROW(run_and_watch({"/nonexistent/train"}, nullptr, {}, 0.1), UserError);
  EXPECT_THROW(run_and_watch({}, nullptr, {}, 0.1), UserError);
}

TEST(JobRunner, GpuIndicesFromSlurmOrCuda) {
  EXPECT_THAT(job_gpu_indices("0,2", nullptr), ElementsAre(0, 2));
  EXPECT_THAT(job_gpu_indices(nullptr, "1"), ElementsAre(1));
  EXPECT_TRUE(job_gpu_indices(nullptr, "GPU-8f2a…").empty());
  EXPECT_TRUE(job_gpu_indices(nullptr, nullptr).empty());
  EXPECT_TRUE(job_gpu_indices("", "").empty());
}

}  // namespace
}  // namespace colo::slurm
