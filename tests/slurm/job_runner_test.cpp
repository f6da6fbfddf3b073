#include "slurm/job_runner.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/error.h"
#include "gpu/fake_nvml_env.h"

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

// A process the job leaves in the background (a tensorboard &) keeps stdout/stderr open: colo
// run still returns when the job itself ends, with what the job printed (it waited for the
// background process, so the job never completed and no peak was recorded).
TEST(JobRunner, ABackgroundProcessHoldingTheOutputDoesNotKeepItRunning) {
  const std::string pid_file = ::testing::TempDir() + "colo-run-bg-" + std::to_string(::getpid());
  const RunResult r = sh("tail -f /dev/null & echo $! > " + pid_file + "; echo 'torch.cuda.OutOfMemoryError: CUDA out of memory.'; exit 1");
  EXPECT_EQ(r.status, 1);
  EXPECT_TRUE(r.oom) << "what the job wrote before it ended is read";
  pid_t bg = 0;
  std::ifstream(pid_file) >> bg;
  ASSERT_GT(bg, 0);
  ::kill(bg, SIGKILL);
  std::filesystem::remove(pid_file);
}

// No GPU of the job answered (a SLURM_JOB_GPUS naming a GPU the node lacks): no peak, not 0.
TEST(JobRunner, NoReadableGpuGivesNoPeak) {
  const std::string dir = ::testing::TempDir() + "colo-run-nvml-" + std::to_string(::getpid());
  auto backend = gpu::open_fake_nvml_backend("1x40GiB", dir);
  EXPECT_FALSE(run_and_watch({"true"}, backend.get(), {7}, 0.1).peak_mib);
  EXPECT_EQ(run_and_watch({"true"}, backend.get(), {0}, 0.1).peak_mib, 0);  // a GPU that answered: 0 is a reading
  std::filesystem::remove_all(dir);
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
