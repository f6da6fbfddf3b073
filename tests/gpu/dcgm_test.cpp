// SMACT through DCGM on GPUs without NVML GPM: the sampler and the NVML backend against the
// in-tree fake libdcgm, loaded through the same dlopen path a real libdcgm.so.4 takes.
#include <cstdlib>

#include <gtest/gtest.h>

#include "gpu/dcgm_sampler.h"
#include "fake_gpu_fixture.h"

namespace colo::gpu::testing {
namespace {

class DcgmTest : public FakeNvmlTest {
 protected:
  void TearDown() override {
    ::unsetenv("COLO_FAKE_DCGM_HOSTENGINE");
    FakeNvmlTest::TearDown();
  }
};

TEST_F(DcgmTest, BackendTakesSmactFromDcgmWhereGpmIsMissing) {
  GpuBackend& b = open("1x40GiB:nogpm:dcgm+1x40GiB:nogpm+1x40GiB");
  const Capabilities dcgm = b.capabilities(0);
  EXPECT_EQ(dcgm.smact_path, SmactPath::Dcgm) << dcgm.smact_reason;
  EXPECT_NE(dcgm.smact_reason.find("embedded host engine"), std::string::npos) << dcgm.smact_reason;
  const Capabilities none = b.capabilities(1);  // DCGM has no profiling fields for it
  EXPECT_EQ(none.smact_path, SmactPath::Unavailable);
  EXPECT_NE(none.smact_reason.find("refused this GPU"), std::string::npos) << none.smact_reason;
  EXPECT_NE(none.smact_reason.find("memory-only"), std::string::npos) << none.smact_reason;
  EXPECT_EQ(b.capabilities(2).smact_path, SmactPath::NvmlGpm);  // GPM first where it exists

  EXPECT_EQ(b.sample(0).smact, 0.0);  // watched, nothing runs
  auto j = job(fake_gpu_uuid(0), {"--mem", "1GiB", "--hold", "inf", "--sm-activity", "0.35", "--sm-occupancy", "0.15"});
  ASSERT_TRUE(eventually([&] { return process_mib(0, j->pid()) == 1024; }));
  const DeviceSample s = b.sample(0);
  ASSERT_TRUE(s.smact.has_value());
  EXPECT_NEAR(*s.smact, 0.35, 1e-9);
  EXPECT_NEAR(*s.smocc, 0.15, 1e-9);
  EXPECT_FALSE(b.sample(1).smact.has_value());
}

TEST_F(DcgmTest, SamplerConnectsToARunningHostEngineOrSaysWhyNot) {
  open("1x40GiB:nogpm:dcgm");  // sets the fake NVML environment the fake libdcgm reads
  DcgmOptions o;
  o.library = fake_dcgm_library_path();
  o.mode = "127.0.0.1:5555";
  try {
    DcgmSampler s(o);
    ADD_FAILURE() << "connected without a host engine";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("nv-hostengine at 127.0.0.1:5555"), std::string::npos) << e.what();
  }
  ::setenv("COLO_FAKE_DCGM_HOSTENGINE", "127.0.0.1:5555", 1);
  DcgmSampler s(o);
  EXPECT_NE(s.describe().find("nv-hostengine at 127.0.0.1:5555"), std::string::npos);
  std::string why;
  EXPECT_TRUE(s.watch(0, why)) << why;
  EXPECT_FALSE(s.watch(3, why));  // no such GPU
  EXPECT_NE(why.find("dcgmGroupAddDevice"), std::string::npos) << why;
  EXPECT_EQ(s.read(0).smact, 0.0);
  EXPECT_FALSE(s.read(3).smact.has_value());  // not watched: nothing read
}

TEST_F(DcgmTest, OffOrMissingLibraryIsAReasonNotAFailure) {
  DcgmOptions off;
  off.mode = "off";
  EXPECT_THROW(DcgmSampler{off}, GpuError);
  DcgmOptions missing;
  missing.library = "/nonexistent/libdcgm.so.4";
  try {
    DcgmSampler s(missing);
    ADD_FAILURE() << "opened a library that does not exist";
  } catch (const GpuError& e) {
    EXPECT_NE(std::string(e.what()).find("DCGM is not installed"), std::string::npos) << e.what();
  }
  // The backend still opens, and says why SMACT is unavailable.
  dir_ = make_temp_dir();
  const FakeNvmlSetup setup = configure_fake_nvml_env("1x40GiB:nogpm:dcgm", dir_);
  NvmlOptions o;
  o.library = setup.library_path;
  o.dcgm_library = "/nonexistent/libdcgm.so.4";
  backend_ = open_nvml_backend(o);
  const Capabilities c = backend_->capabilities(0);
  EXPECT_EQ(c.smact_path, SmactPath::Unavailable);
  EXPECT_NE(c.smact_reason.find("DCGM is not installed"), std::string::npos) << c.smact_reason;
}

}  // namespace
}  // namespace colo::gpu::testing
