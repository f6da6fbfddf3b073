// MPS start/stop against a fake control script that records what it was asked.
#include <gtest/gtest.h>

#include <filesystem>

#include "fake_gpu_fixture.h"
#include "gpu/mps.h"

namespace colo::gpu {
namespace {

class MpsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    root_ = testing::make_temp_dir();
    opts_.control_binary = std::string(COLO_SOURCE_DIR) + "/tests/gpu/fake_mps_control.sh";
    opts_.root_dir = root_;
  }
  void TearDown() override { std::filesystem::remove_all(root_); }
  std::string root_;
  MpsOptions opts_;
};

TEST_F(MpsTest, StartsAndStopsOneDaemonPerGpuWithItsOwnDirectories) {
  const std::string uuid = "GPU-fa4e0000-0000-4000-8000-000000000001";
  MpsDaemon mps(opts_, uuid);
  EXPECT_EQ(mps.pipe_dir(), root_ + "/" + uuid + "/pipe");
  EXPECT_EQ(mps.log_dir(), root_ + "/" + uuid + "/log");
  EXPECT_FALSE(mps.running());
  mps.start();
  EXPECT_TRUE(mps.running());
  EXPECT_TRUE(std::filesystem::exists(mps.pipe_dir() + "/control"));
  mps.stop();
  EXPECT_FALSE(mps.running());
  EXPECT_FALSE(std::filesystem::exists(mps.pipe_dir() + "/control"));
  EXPECT_EQ(testing::slurp(mps.log_dir() + "/calls"),
            "start -d CUDA_VISIBLE_DEVICES=" + uuid + " pipe=" + mps.pipe_dir() + "\n" +
                "command quit CUDA_VISIBLE_DEVICES=" + uuid + " pipe=" + mps.pipe_dir() + "\n");
  auto env = mps.client_env();
  ASSERT_EQ(env.size(), 2u);
  EXPECT_EQ(env[0], (std::pair<std::string, std::string>{"CUDA_MPS_PIPE_DIRECTORY", mps.pipe_dir()}));
  EXPECT_EQ(env[1], (std::pair<std::string, std::string>{"CUDA_MPS_LOG_DIRECTORY", mps.log_dir()}));
}

TEST_F(MpsTest, TwoGpusDoNotShareADaemon) {
  MpsDaemon a(opts_, "GPU-a");
  MpsDaemon b(opts_, "GPU-b");
  a.start();
  b.start();  // would fail if they shared the pipe directory
  EXPECT_NE(a.pipe_dir(), b.pipe_dir());
  // Destructors stop both.
}

TEST_F(MpsTest, DestructorStopsARunningDaemon) {
  std::string pipe;
  {
    MpsDaemon mps(opts_, "GPU-c");
    mps.start();
    pipe = mps.pipe_dir();
  }
  EXPECT_FALSE(std::filesystem::exists(pipe + "/control"));
}

TEST_F(MpsTest, FailuresAreGpuErrorsNamingTheCommand) {
  MpsDaemon first(opts_, "GPU-d");
  first.start();
  MpsDaemon second(opts_, "GPU-d");  // same directories: the control binary refuses
  try {
    second.start();
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.device(), "MPS for GPU-d");
    EXPECT_NE(std::string(e.what()).find("-d failed: exit status 1"), std::string::npos) << e.what();
  }
  EXPECT_FALSE(second.running());
  EXPECT_NE(testing::slurp(first.log_dir() + "/colo-control.log").find("already running"),
            std::string::npos);
  first.stop();
  EXPECT_THROW(first.stop(), GpuError);  // nothing to quit any more

  MpsOptions missing = opts_;
  missing.control_binary = root_ + "/no-such-mps-control";
  MpsDaemon m(missing, "GPU-e");
  try {
    m.start();
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("cannot run"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace colo::gpu
