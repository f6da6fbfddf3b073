// Optional metrics (power, energy, utilisation, SMACT) that fail with a real error are unknown
// for that sample and named in DeviceSample::metric_errors; the sample itself succeeds. Only
// errors that mean the device is gone still throw. discover_device() re-probes one device.
#include "fake_gpu_fixture.h"

namespace colo::gpu::testing {
namespace {

TEST_F(FakeNvmlTest, FailingOptionalMetricsAreUnknownNotDeviceErrors) {
  GpuBackend& b = open("1x40GiB");
  ASSERT_NO_THROW(b.sample(0));
  add_fake_call_failure(dir_, 0, "nvmlDeviceGetPowerUsage", 999);               // UNKNOWN
  add_fake_call_failure(dir_, 0, "nvmlDeviceGetTotalEnergyConsumption", 10);    // TIMEOUT
  add_fake_call_failure(dir_, 0, "nvmlDeviceGetUtilizationRates", 999);
  add_fake_call_failure(dir_, 0, "nvmlGpmSampleGet", 999);
  DeviceSample s;
  ASSERT_NO_THROW(s = b.sample(0));
  EXPECT_EQ(s.memory.total_mib, 40960);
  EXPECT_FALSE(s.power_w.has_value());
  EXPECT_FALSE(s.energy_mj.has_value());
  EXPECT_FALSE(s.gpu_util.has_value());
  EXPECT_FALSE(s.smact.has_value());
  ASSERT_EQ(s.metric_errors.size(), 4u);
  EXPECT_NE(s.metric_errors.at("power").find("nvmlDeviceGetPowerUsage failed: Unknown Error (NVML error 999)"),
            std::string::npos)
      << s.metric_errors.at("power");
  EXPECT_NE(s.metric_errors.at("energy").find("Timeout"), std::string::npos);
  EXPECT_NE(s.metric_errors.at("utilization").find("nvmlDeviceGetUtilizationRates"), std::string::npos);
  EXPECT_NE(s.metric_errors.at("smact").find("nvmlGpmSampleGet"), std::string::npos);

  set_fake_gpu_failure(dir_, 0, false);
  s = b.sample(0);
  EXPECT_TRUE(s.metric_errors.empty());
  EXPECT_TRUE(s.power_w.has_value());
  EXPECT_FALSE(s.smact.has_value());  // GPM starts its rate over after the gap
  EXPECT_TRUE(b.sample(0).smact.has_value());
}

TEST_F(FakeNvmlTest, AnOptionalCallSayingTheGpuIsLostIsStillADeviceError) {
  GpuBackend& b = open("1x40GiB");
  add_fake_call_failure(dir_, 0, "nvmlGpmSampleGet", 15);  // GPU_IS_LOST
  try {
    b.sample(0);
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.call(), "nvmlGpmSampleGet");
    EXPECT_EQ(e.code(), 15);
  }
}

TEST_F(FakeNvmlTest, DiscoverDeviceReprobesOneGpuAndKeepsAUuidThatAnswered) {
  GpuBackend& b = open("2x40GiB");
  add_fake_call_failure(dir_, 1, "nvmlDeviceGetMemoryInfo", 999);
  const std::vector<DeviceInfo> all = b.discover();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_EQ(all[1].uuid, fake_gpu_uuid(1));  // the UUID call answered before memory failed
  EXPECT_NE(all[1].error.find("nvmlDeviceGetMemoryInfo"), std::string::npos) << all[1].error;
  DeviceInfo one = b.discover_device(1);
  EXPECT_FALSE(one.error.empty());
  set_fake_gpu_failure(dir_, 1, false);
  one = b.discover_device(1);
  EXPECT_TRUE(one.error.empty()) << one.error;
  EXPECT_EQ(one.uuid, fake_gpu_uuid(1));
  EXPECT_EQ(one.total_mib, 40960);
  EXPECT_THROW(b.discover_device(2), GpuError);
}

}  // namespace
}  // namespace colo::gpu::testing
