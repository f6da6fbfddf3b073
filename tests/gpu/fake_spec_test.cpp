// The fake GPU spec grammar and its one-line errors; configure_fake_nvml_env.
#include <gtest/gtest.h>

#include <filesystem>

#include "core/error.h"
#include "fake_gpu_fixture.h"
#include "gpu/fake_nvml_env.h"

namespace colo::gpu {
namespace {

std::string error_of(const std::string& spec) {
  try {
    parse_fake_gpu_spec(spec);
  } catch (const UserError& e) {
    return e.what();
  }
  return "(accepted)";
}

TEST(FakeGpuSpec, ParsesCountsSizesAndOptions) {
  auto g = parse_fake_gpu_spec("2x40GiB");
  ASSERT_EQ(g.size(), 2u);
  EXPECT_EQ(g[1].total_mib, 40960);
  EXPECT_TRUE(g[0].gpm);
  EXPECT_TRUE(g[0].mig.empty());

  EXPECT_EQ(parse_fake_gpu_spec("4x80GiB").size(), 4u);
  EXPECT_EQ(parse_fake_gpu_spec("1x24576MiB")[0].total_mib, 24576);

  auto m = parse_fake_gpu_spec("1x80GiB:mig=3g.40gb,3g.40gb+2x40GiB:nogpm");
  ASSERT_EQ(m.size(), 3u);
  ASSERT_EQ(m[0].mig.size(), 2u);
  EXPECT_EQ(m[0].mig[1].profile, "3g.40gb");
  EXPECT_EQ(m[0].mig[1].total_mib, 40960);
  EXPECT_TRUE(m[0].gpm);
  EXPECT_FALSE(m[2].gpm);
  EXPECT_TRUE(m[2].mig.empty());
}

TEST(FakeGpuSpec, BadSpecsGetOneLineErrorsNamingThePart) {
  EXPECT_EQ(error_of(""), "fake GPU spec is empty; expected e.g. 2x40GiB");
  EXPECT_EQ(error_of("2x40GB"), "fake GPU spec '2x40GB': size unit must be GiB or MiB in '40GB'");
  EXPECT_EQ(error_of("40GiB"), "fake GPU spec '40GiB': expected COUNTxSIZE such as 2x40GiB in '40GiB'");
  EXPECT_EQ(error_of("0x40GiB"), "fake GPU spec '0x40GiB': GPU count must be positive in '0x40GiB'");
  EXPECT_EQ(error_of("2x0GiB"), "fake GPU spec '2x0GiB': size must be positive in '0GiB'");
  EXPECT_EQ(error_of("2xGiB"), "fake GPU spec '2xGiB': size must start with a number in 'GiB'");
  EXPECT_EQ(error_of("2x40GiB+"), "fake GPU spec '2x40GiB+': empty group in ''");
  EXPECT_EQ(error_of("1x40GiB:fast"),
            "fake GPU spec '1x40GiB:fast': unknown option (known: mig=PROFILES, nogpm, dcgm) in 'fast'");
  EXPECT_EQ(error_of("1x40GiB:mig=3g.40"),
            "fake GPU spec '1x40GiB:mig=3g.40': MIG profile must look like 3g.40gb in '3g.40'");
  EXPECT_EQ(error_of("1x40GiB:mig=3g.40gb,3g.40gb"),
            "fake GPU spec '1x40GiB:mig=3g.40gb,3g.40gb': MIG instances exceed the GPU's memory "
            "in '1x40GiB:mig=3g.40gb,3g.40gb'");
  EXPECT_EQ(error_of("65x1GiB"), "fake GPU spec '65x1GiB': at most 64 GPUs in '65x1GiB'");
  EXPECT_EQ(error_of("1x99999999999999999999GiB"),
            "fake GPU spec '1x99999999999999999999GiB': number too large in "
            "'99999999999999999999GiB'");
  EXPECT_EQ(error_of("1x2000000GiB"), "fake GPU spec '1x2000000GiB': size too large in '2000000GiB'");
}

TEST(FakeGpuSpec, UuidsAreDistinctAndInNvidiaFormat) {
  EXPECT_EQ(fake_gpu_uuid(3), "GPU-fa4e0000-0000-4000-8000-000000000003");
  EXPECT_EQ(fake_mig_uuid(1, 2), "MIG-fa4e0000-0001-4000-8000-000000000002");
  EXPECT_EQ(fake_gpu_uuid(3).size(), std::string("GPU-").size() + 36);
}

TEST(FakeNvmlEnv, ConfigureWritesSpecAndSetsEnvironment) {
  std::string dir = testing::make_temp_dir() + "/state";  // created by configure
  FakeNvmlSetup s = configure_fake_nvml_env("2x40GiB", dir);
  EXPECT_EQ(s.library_path, fake_nvml_library_path());
  EXPECT_TRUE(std::filesystem::exists(s.library_path)) << s.library_path;
  EXPECT_TRUE(std::filesystem::exists(fake_job_path())) << fake_job_path();
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/procs"));
  auto perms = std::filesystem::status(dir + "/procs").permissions();
  EXPECT_EQ(perms, std::filesystem::perms::all | std::filesystem::perms::sticky_bit);
  EXPECT_EQ(testing::slurp(dir + "/gpus.spec"), "2x40GiB\n");
  EXPECT_STREQ(std::getenv("COLO_FAKE_NVML_GPUS"), "2x40GiB");
  EXPECT_STREQ(std::getenv("COLO_FAKE_NVML_DIR"), dir.c_str());
  ASSERT_EQ(s.job_env.size(), 2u);
  EXPECT_EQ(s.job_env[1], (std::pair<std::string, std::string>{"COLO_FAKE_NVML_DIR", dir}));
  std::filesystem::remove_all(std::filesystem::path(dir).parent_path());
}

TEST(FakeNvmlEnv, BadSpecOrDirectoryIsAUserError) {
  EXPECT_THROW(configure_fake_nvml_env("2x40", "/tmp/never-created-colo"), UserError);
  EXPECT_FALSE(std::filesystem::exists("/tmp/never-created-colo"));
  EXPECT_THROW(configure_fake_nvml_env("2x40GiB", "/proc/colo-cannot-be-here"), UserError);
  EXPECT_THROW(configure_fake_nvml_env("2x40GiB", ""), UserError);
}

}  // namespace
}  // namespace colo::gpu
