// The NVML backend driven through dlopen over the in-tree fake NVML, with real fake-job
// processes doing the "allocating".
#include <gtest/gtest.h>

#include <cmath>

#include "core/error.h"
#include "fake_gpu_fixture.h"
#include "gpu/mig.h"

namespace colo::gpu {
namespace {

using testing::eventually;
using testing::FakeNvmlTest;
using testing::slurp;

TEST(NvmlBackendOpen, MissingLibraryIsAClearError) {
  NvmlOptions opts;
  opts.library = "/nonexistent/libnvidia-ml.so.1";
  try {
    open_nvml_backend(opts);
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.device(), "library");
    EXPECT_EQ(e.call(), "dlopen");
    EXPECT_NE(std::string(e.what()).find("/nonexistent/libnvidia-ml.so.1 could not be loaded"),
              std::string::npos)
        << e.what();
  }
}

TEST(NvmlBackendOpen, LibraryWithoutNvmlSymbolsNamesTheSymbol) {
  NvmlOptions opts;
  opts.library = "libm.so.6";  // loads fine, is not NVML
  try {
    open_nvml_backend(opts);
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.call(), "dlsym");
    EXPECT_NE(std::string(e.what()).find("has no symbol nvmlInit_v2"), std::string::npos)
        << e.what();
  }
}

TEST(NvmlBackendOpen, FakeWithoutStateDirFailsInit) {
  const char* old = std::getenv("COLO_FAKE_NVML_DIR");
  std::string saved = old ? old : "";
  ::unsetenv("COLO_FAKE_NVML_DIR");
  NvmlOptions opts;
  opts.library = fake_nvml_library_path();
  try {
    open_nvml_backend(opts);
    ADD_FAILURE() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.call(), "nvmlInit_v2");
    EXPECT_NE(std::string(e.what()).find("Driver Not Loaded"), std::string::npos) << e.what();
  }
  if (old) ::setenv("COLO_FAKE_NVML_DIR", saved.c_str(), 1);
}

TEST_F(FakeNvmlTest, DiscoversDevicesWithUuidsMemoryAndGpm) {
  GpuBackend& b = open("2x40GiB");
  EXPECT_NE(b.describe().find(fake_nvml_library_path()), std::string::npos) << b.describe();
  EXPECT_NE(b.describe().find("driver fake-nvml-1"), std::string::npos) << b.describe();
  auto devs = b.discover();
  ASSERT_EQ(devs.size(), 2u);
  for (int i = 0; i < 2; ++i) {
    EXPECT_EQ(devs[i].index, i);
    EXPECT_EQ(devs[i].uuid, fake_gpu_uuid(i));
    EXPECT_EQ(devs[i].name, "Fake NVIDIA GPU 40GiB");
    EXPECT_EQ(devs[i].total_mib, 40 * 1024);
    EXPECT_FALSE(devs[i].mig_enabled);
    EXPECT_TRUE(devs[i].error.empty());
    EXPECT_EQ(devs[i].caps.smact_path, SmactPath::NvmlGpm);
    EXPECT_TRUE(devs[i].caps.power);
    EXPECT_TRUE(devs[i].caps.energy);
  }
  EXPECT_NE(fake_gpu_uuid(0), fake_gpu_uuid(1));
  auto s = b.sample(0);
  EXPECT_EQ(s.memory.total_mib, 40960);
  EXPECT_EQ(s.memory.used_mib, 0);
  EXPECT_TRUE(s.memory.process_mib.empty());
  EXPECT_DOUBLE_EQ(*s.gpu_util, 0.0);
  EXPECT_DOUBLE_EQ(*s.power_w, 60.0);  // idle
}

TEST_F(FakeNvmlTest, PerProcessMemoryOfARealJobProcess) {
  GpuBackend& b = open("2x40GiB");
  auto j = job(fake_gpu_uuid(1), {"--mem", "10GiB", "--hold", "inf"});
  ASSERT_TRUE(eventually([&] { return process_mib(1, j->pid()) == 10240; }));
  auto s1 = b.sample(1);
  EXPECT_EQ(s1.memory.used_mib, 10240);
  EXPECT_EQ(s1.memory.process_mib.size(), 1u);
  EXPECT_EQ(b.sample(0).memory.used_mib, 0);  // only the GPU it was given

  j->signal(SIGTERM);
  int status = j->wait();
  ASSERT_TRUE(WIFSIGNALED(status));
  EXPECT_EQ(WTERMSIG(status), SIGTERM);
  auto s2 = b.sample(1);
  EXPECT_EQ(s2.memory.used_mib, 0);
  EXPECT_TRUE(s2.memory.process_mib.empty());
}

TEST_F(FakeNvmlTest, CudaVisibleDevicesByIndexAndSeveralGpus) {
  GpuBackend& b = open("3x24576MiB");
  auto j = job("0,2", {"--mem", "1000MiB", "--hold", "inf"});
  ASSERT_TRUE(eventually([&] { return process_mib(2, j->pid()) == 1000; }));
  EXPECT_EQ(process_mib(0, j->pid()), 1000);
  EXPECT_EQ(process_mib(1, j->pid()), -1);
  EXPECT_EQ(b.sample(2).memory.total_mib, 24576);
}

TEST_F(FakeNvmlTest, ManyProcessesGrowTheProcessListBuffer) {
  GpuBackend& b = open("1x40GiB");
  expect_twenty_processes_listed(b);
}

// Drivers 535.43.02-535.86.x write 32-byte entries from nvmlDeviceGetComputeRunningProcesses_v3
// (nvitop PR #89, go-nvml issue #75): read with the 24-byte struct, every entry after the first
// was garbage, and from 13 processes on the driver wrote past the buffer (ASan: heap overflow).
TEST_F(FakeNvmlTest, ProcessListsOfThe535DriversWith32ByteEntries) {
  dir_ = testing::make_temp_dir();
  FakeNvmlSetup setup = configure_fake_nvml_env("1x40GiB", dir_);
  NvmlOptions opts;
  opts.library = COLO_FAKE_NVML_535_LIBRARY;
  opts.dcgm_library = setup.dcgm_library_path;
  backend_ = open_nvml_backend(opts);
  GpuBackend& b = *backend_;
  expect_twenty_processes_listed(b);
}

TEST_F(FakeNvmlTest, KilledJobDoesNotLeakMemoryEvenAsAZombie) {
  GpuBackend& b = open("1x40GiB");
  auto j = job(fake_gpu_uuid(0), {"--mem", "5GiB", "--hold", "inf"});
  ASSERT_TRUE(eventually([&] { return process_mib(0, j->pid()) == 5120; }));
  const std::string record = dir_ + "/procs/" + std::to_string(j->pid());
  ASSERT_TRUE(std::filesystem::exists(record));
  j->signal(SIGKILL);  // no chance to clean up; not reaped yet either (zombie)
  ASSERT_TRUE(eventually([&] { return b.sample(0).memory.used_mib == 0; }));
  EXPECT_FALSE(std::filesystem::exists(record));  // the fake dropped the dead entry
  j->wait();
}

TEST_F(FakeNvmlTest, OverCommitGivesPyTorchOutOfMemoryAndExit1) {
  GpuBackend& b = open("1x40GiB");
  auto big = job(fake_gpu_uuid(0), {"--mem", "30GiB", "--hold", "inf"}, "big");
  ASSERT_TRUE(eventually([&] { return process_mib(0, big->pid()) == 30720; }));
  auto second = job(fake_gpu_uuid(0), {"--mem", "20GiB", "--ramp", "0.5"}, "second");
  int status = second->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  std::string err = slurp(err_path("second"));
  EXPECT_NE(err.find("torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate "),
            std::string::npos)
      << err;
  EXPECT_NE(err.find("GPU 0 has a total capacity of 40.00 GiB"), std::string::npos) << err;
  // The failed job released what it had ramped up to; the first one is untouched.
  auto s = b.sample(0);
  EXPECT_EQ(s.memory.used_mib, 30720);
  EXPECT_EQ(s.memory.process_mib.size(), 1u);
}

TEST_F(FakeNvmlTest, RampUpIsVisibleStepByStep) {
  GpuBackend& b = open("1x40GiB");
  auto j = job(fake_gpu_uuid(0), {"--mem", "8GiB", "--ramp", "3", "--hold", "inf"});
  MiB last = 0;
  bool saw_partial = false;
  ASSERT_TRUE(eventually([&] {
    MiB now = b.sample(0).memory.used_mib;
    EXPECT_GE(now, last);  // never shrinks while ramping
    last = now;
    if (now > 0 && now < 8192) saw_partial = true;
    return now == 8192;
  }));
  EXPECT_TRUE(saw_partial);
}

TEST_F(FakeNvmlTest, SmactComesFromDeclaredActivityAndIsCapped) {
  GpuBackend& b = open("2x40GiB");
  auto a = job(fake_gpu_uuid(0), {"--mem", "1GiB", "--hold", "inf", "--sm-activity", "0.3"}, "a");
  auto c = job(fake_gpu_uuid(0), {"--mem", "1GiB", "--hold", "inf", "--sm-activity", "0.5",
                                  "--sm-occupancy", "0.1"}, "c");
  ASSERT_TRUE(eventually([&] { return b.sample(0).memory.process_mib.size() == 2; }));
  auto s = b.sample(0);  // GPM now has a previous sample with both jobs
  ASSERT_TRUE(s.smact.has_value());
  EXPECT_NEAR(*s.smact, 0.8, 1e-9);
  EXPECT_NEAR(*s.smocc, 0.15 + 0.1, 1e-9);  // default occupancy = activity / 2
  EXPECT_NEAR(*s.gpu_util, 0.8, 1e-9);
  EXPECT_NEAR(*s.power_w, 60 + 340 * 0.8, 1e-6);
  EXPECT_FALSE(b.sample(1).smact.value_or(0) > 0);  // the other GPU is idle

  auto d = job(fake_gpu_uuid(0), {"--mem", "1GiB", "--hold", "inf", "--sm-activity", "0.9"}, "d");
  ASSERT_TRUE(eventually([&] { return b.sample(0).memory.process_mib.size() == 3; }));
  EXPECT_DOUBLE_EQ(*b.sample(0).smact, 1.0);
}

TEST_F(FakeNvmlTest, FirstGpmSampleHasNoRateYet) {
  GpuBackend& b = open("1x40GiB");
  EXPECT_FALSE(b.sample(0).smact.has_value());
  EXPECT_TRUE(b.sample(0).smact.has_value());
}

TEST_F(FakeNvmlTest, WithoutGpmSmactIsUnavailableWithAReason) {
  GpuBackend& b = open("1x40GiB:nogpm");
  Capabilities c = b.capabilities(0);
  EXPECT_EQ(c.smact_path, SmactPath::Unavailable);
  EXPECT_NE(c.smact_reason.find("NVML GPM is not supported"), std::string::npos) << c.smact_reason;
  EXPECT_NE(c.smact_reason.find("memory-only"), std::string::npos) << c.smact_reason;
  auto j = job(fake_gpu_uuid(0), {"--mem", "1GiB", "--hold", "inf", "--sm-activity", "0.5"});
  ASSERT_TRUE(eventually([&] { return process_mib(0, j->pid()) == 1024; }));
  EXPECT_FALSE(b.sample(0).smact.has_value());
  EXPECT_FALSE(b.sample(0).smocc.has_value());
  EXPECT_NEAR(*b.sample(0).gpu_util, 0.5, 1e-9);  // utilisation is still measured
}

TEST_F(FakeNvmlTest, MigInstancesAreDiscoveredAndAccountedPerInstance) {
  GpuBackend& b = open("1x80GiB:mig=3g.40gb,2g.20gb+1x40GiB");
  auto devs = b.discover();
  ASSERT_EQ(devs.size(), 2u);
  ASSERT_TRUE(devs[0].mig_enabled);
  ASSERT_EQ(devs[0].mig_instances.size(), 2u);
  EXPECT_EQ(devs[0].mig_instances[0].uuid, fake_mig_uuid(0, 0));
  EXPECT_EQ(devs[0].mig_instances[0].total_mib, 40960);
  EXPECT_EQ(devs[0].mig_instances[0].name, "Fake NVIDIA GPU 80GiB MIG 3g.40gb");
  EXPECT_EQ(devs[0].mig_instances[1].uuid, fake_mig_uuid(0, 1));
  EXPECT_EQ(devs[0].mig_instances[1].total_mib, 20480);
  EXPECT_FALSE(devs[1].mig_enabled);
  EXPECT_TRUE(devs[1].mig_instances.empty());

  auto slots = mig_slots(devs);
  ASSERT_EQ(slots.size(), 2u);
  EXPECT_EQ(slots[1].parent_index, 0);
  EXPECT_EQ(slots[1].parent_uuid, fake_gpu_uuid(0));
  EXPECT_EQ(slots[1].mig_index, 1);
  EXPECT_EQ(slots[1].uuid, fake_mig_uuid(0, 1));
  EXPECT_TRUE(mig_warnings(devs).empty());

  auto j = job(fake_mig_uuid(0, 1), {"--mem", "4GiB", "--hold", "inf"});
  ASSERT_TRUE(eventually([&] {
    auto s = b.sample(0);
    return s.mig.size() == 2 && s.mig[1].memory.process_mib.count(j->pid()) == 1;
  }));
  auto s = b.sample(0);
  EXPECT_EQ(s.mig[1].memory.process_mib.at(j->pid()), 4096);
  EXPECT_EQ(s.mig[1].memory.used_mib, 4096);
  EXPECT_EQ(s.mig[0].memory.used_mib, 0);
  EXPECT_EQ(s.memory.used_mib, 4096);  // the parent sees all its instances
  EXPECT_FALSE(s.gpu_util.has_value());  // as real NVML: no utilisation in MIG mode

  // A slice is its own OOM domain: 20 GiB instance, 17 + 4 GiB does not fit.
  auto k = job(fake_mig_uuid(0, 1), {"--mem", "17GiB"}, "k");
  int status = k->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(slurp(err_path("k")).find("CUDA out of memory"), std::string::npos);
}

TEST_F(FakeNvmlTest, MigEnabledGpuWithoutInstancesWarns) {
  std::vector<DeviceInfo> devs(1);
  devs[0].uuid = "GPU-x";
  devs[0].mig_enabled = true;
  auto w = mig_warnings(devs);
  ASSERT_EQ(w.size(), 1u);
  EXPECT_NE(w[0].find("no MIG instances"), std::string::npos);
  EXPECT_TRUE(mig_slots(devs).empty());
}

TEST_F(FakeNvmlTest, InjectedErrorBecomesGpuErrorNamingDeviceAndCall) {
  GpuBackend& b = open("2x40GiB");
  b.discover();
  set_fake_gpu_failure(dir_, 1, true);
  try {
    b.sample(1);
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.index(), 1);
    EXPECT_EQ(e.call(), "nvmlDeviceGetUUID");
    EXPECT_NE(e.device().find("GPU 1 (" + fake_gpu_uuid(1) + ")"), std::string::npos)
        << e.device();
    EXPECT_NE(std::string(e.what()).find("GPU is lost (NVML error 15)"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(b.sample(0));  // the healthy GPU keeps working
  auto devs = b.discover();
  ASSERT_EQ(devs.size(), 2u);
  EXPECT_TRUE(devs[0].error.empty());
  EXPECT_NE(devs[1].error.find("GPU is lost"), std::string::npos) << devs[1].error;
  set_fake_gpu_failure(dir_, 1, false);
  EXPECT_NO_THROW(b.sample(1));
}

TEST_F(FakeNvmlTest, UnsupportedOrForbiddenMetricsAreMissingNotErrors) {
  GpuBackend& b = open("1x40GiB");
  auto j = job(fake_gpu_uuid(0), {"--mem", "3GiB", "--hold", "inf", "--sm-activity", "0.5"});
  ASSERT_TRUE(eventually([&] { return process_mib(0, j->pid()) == 3072; }));
  add_fake_call_failure(dir_, 0, "nvmlDeviceGetComputeRunningProcesses_v3", 4);  // NO_PERMISSION
  add_fake_call_failure(dir_, 0, "nvmlDeviceGetUtilizationRates", 3);            // NOT_SUPPORTED
  add_fake_call_failure(dir_, 0, "nvmlGpmSampleGet", 3);
  add_fake_call_failure(dir_, 0, "nvmlDeviceGetTotalEnergyConsumption", 3);
  DeviceSample s;
  for (int i = 0; i < 2; ++i) ASSERT_NO_THROW(s = b.sample(0));
  EXPECT_EQ(s.memory.used_mib, 3072);          // device memory is still known
  EXPECT_TRUE(s.memory.process_mib.empty());   // per-process view is not
  EXPECT_FALSE(s.gpu_util.has_value());
  EXPECT_FALSE(s.smact.has_value());
  EXPECT_FALSE(s.energy_mj.has_value());
  EXPECT_NEAR(*s.power_w, 60 + 340 * 0.5, 1e-6);
  EXPECT_FALSE(b.capabilities(0).energy);

  add_fake_call_failure(dir_, 0, "nvmlDeviceGetPowerUsage", 15);  // a real failure
  try {
    b.sample(0);
    FAIL() << "expected GpuError";
  } catch (const GpuError& e) {
    EXPECT_EQ(e.call(), "nvmlDeviceGetPowerUsage");
    EXPECT_EQ(e.index(), 0);
  }
  set_fake_gpu_failure(dir_, 0, false);
  s = b.sample(0);
  EXPECT_EQ(s.memory.process_mib.at(j->pid()), 3072);
  EXPECT_FALSE(s.smact.has_value());  // GPM starts over after the gap
  EXPECT_NEAR(*b.sample(0).smact, 0.5, 1e-9);
}

TEST_F(FakeNvmlTest, EnergyCounterIsMonotonic) {
  GpuBackend& b = open("1x40GiB");
  auto first = b.sample(0).energy_mj;
  ASSERT_TRUE(first.has_value());
  std::this_thread::sleep_for(std::chrono::milliseconds(20));
  auto second = b.sample(0).energy_mj;
  ASSERT_TRUE(second.has_value());
  EXPECT_GT(*second, *first);  // 60 W idle for >= 20 ms is >= 1200 mJ
  EXPECT_GE(*second - *first, 1000u);
  // A restarted daemon (a new backend on the same state directory) continues the counter.
  backend_.reset();
  backend_ = open_fake_nvml_backend("1x40GiB", dir_);
  auto third = backend_->sample(0).energy_mj;
  ASSERT_TRUE(third.has_value());
  EXPECT_GE(*third, *second);
}

TEST_F(FakeNvmlTest, FakeJobRejectsBadInputWithOneLine) {
  open("1x40GiB");
  auto bad = job(fake_gpu_uuid(0), {"--mem", "10GB"}, "bad");
  int status = bad->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 2);
  EXPECT_EQ(slurp(err_path("bad")), "colo-fake-job: error: --mem '10GB': unit must be GiB or MiB\n");

  auto nodev = job("GPU-00000000-dead-beef-0000-000000000000", {"--mem", "1GiB"}, "nodev");
  status = nodev->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 1);
  EXPECT_NE(slurp(err_path("nodev")).find("No CUDA GPUs are available"), std::string::npos);
}

TEST_F(FakeNvmlTest, FakeJobHelpExitsCleanlyAndHoldsNothing) {
  GpuBackend& b = open("1x40GiB");
  auto help = job(fake_gpu_uuid(0), {"--help"}, "help");
  const int status = help->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 0);
  EXPECT_EQ(slurp(err_path("help")), "");
  EXPECT_EQ(b.sample(0).memory.used_mib, 0);
}

TEST_F(FakeNvmlTest, FakeJobExitsWithRequestedCodeAndFreesMemory) {
  GpuBackend& b = open("1x40GiB");
  auto j = job(fake_gpu_uuid(0), {"--mem", "2GiB", "--hold", "0.2", "--exit-code", "3"});
  int status = j->wait();
  ASSERT_TRUE(WIFEXITED(status));
  EXPECT_EQ(WEXITSTATUS(status), 3);
  EXPECT_EQ(b.sample(0).memory.used_mib, 0);
}

}  // namespace
}  // namespace colo::gpu
