#include "slurm/site_settings.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <vector>

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include "core/error.h"
#include "slurm/atomic_file.h"

namespace colo::slurm {
namespace {

using ::testing::HasSubstr;

class SiteSettingsTest : public ::testing::Test {
 protected:
  std::string write(const std::string& text) {
    std::ofstream(path_) << text;
    return path_;
  }
  std::string error_of(const std::string& text) {
    try {
      load_site_settings(write(text));
    } catch (const UserError& e) {
      return e.what();
    }
    return "";
  }
  void TearDown() override { std::filesystem::remove(path_); }
  std::string path_ = std::filesystem::temp_directory_path() / ("colo-site-" + std::to_string(::getpid()) + ".toml");
};

TEST_F(SiteSettingsTest, WhatConfWritesLoadsBack) {
  SiteSettings s;
  s.shards_per_gpu = 40;
  s.shard_mib = 2048;
  s.oversize = "reject";
  s.state_dir = "/srv/colo \"state\"";
  s.fake_gpus = "2x40GiB";
  s.fake_gpu_dir = "/tmp/fa\nke\tdir\x01\x7f";  // control characters: escaped, read back as they were
  s.mps = true;
  const SiteSettings b = load_site_settings(write(s.to_toml()));
  EXPECT_EQ(b.fake_gpu_dir, s.fake_gpu_dir);
  EXPECT_EQ(b.shards_per_gpu, 40);
  EXPECT_EQ(b.shard_mib, 2048);
  EXPECT_EQ(b.oversize, "reject");
  EXPECT_EQ(b.state_dir, s.state_dir);
  EXPECT_TRUE(b.mps);
  EXPECT_EQ(b.effective_default_shards(), 10);
}

TEST_F(SiteSettingsTest, BadSettingsNameTheFileAndTheProblem) {
  EXPECT_THAT(error_of("shard_mib = 1024\n"), HasSubstr("'shards_per_gpu' is missing"));
  EXPECT_THAT(error_of("shards_per_gpu = 40\nfoo = 1\n"), HasSubstr("unknown setting 'foo'"));
  EXPECT_THAT(error_of("shards_per_gpu = 40\noversize = \"queue\"\n"), HasSubstr("oversize"));
  EXPECT_THAT(error_of("shards_per_gpu = 40\nhold_exit_code = 300\n"), HasSubstr("hold_exit_code"));
  // Codes ordinary failures exit with would hold (and escalate) jobs that never ran out of memory.
  for (const char* code : {"1", "2", "126", "127", "130"})
    EXPECT_THAT(error_of(std::string("shards_per_gpu = 40\nhold_exit_code = ") + code + "\n"),
                HasSubstr("is what ordinary failures exit with")) << code;
  EXPECT_THAT(error_of("shards_per_gpu = 4000\n"), HasSubstr("shards_per_gpu"));
  EXPECT_THAT(error_of("shards_per_gpu = 40\ndefault_shards = 41\n"), HasSubstr("more than one GPU's 40"));
  EXPECT_THAT(error_of("shards_per_gpu = 40\nstate_dir = \"rel\"\n"), HasSubstr("absolute"));
  EXPECT_THAT(error_of("shards_per_gpu = 40\nfake_gpus = \"1x40GiB\"\n"), HasSubstr("fake_gpu_dir"));
  EXPECT_THAT(error_of("shards_per_gpu = [\n"), HasSubstr(path_));
  EXPECT_THAT(error_of("shards_per_gpu = 40\nmargin = -1\n"), HasSubstr("margin"));
  const std::string e = error_of("shards_per_gpu = 99999999999999999999\n");
  EXPECT_THAT(e, HasSubstr(path_));
  EXPECT_EQ(e.find('\n'), std::string::npos);
}

TEST_F(SiteSettingsTest, MissingFileSaysHowToMakeOne) {
  try {
    load_site_settings("/nonexistent/colo.toml");
    FAIL();
  } catch (const UserError& e) {
    EXPECT_THAT(e.what(), HasSubstr("colo slurm conf"));
  }
}

// A write that cannot finish leaves the old file (or none) and nothing beside it; two writers
// never share a temporary name.
TEST(AtomicFile, AFailedWriteLeavesNoTemporaryFile) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("colo-atomic-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir / "taken");
  EXPECT_THROW(write_file_atomically((dir / "taken").string(), "x", 0644), UserError);  // rename onto a directory
  write_file_atomically((dir / "f").string(), "one", 0600);
  write_file_atomically((dir / "f").string(), "two", 0640);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"f", "taken"}));
  std::string text;
  ASSERT_TRUE(read_small_file((dir / "f").string(), text));
  EXPECT_EQ(text, "two");
  EXPECT_EQ(std::filesystem::status(dir / "f").permissions() & std::filesystem::perms::all,
            std::filesystem::perms::owner_read | std::filesystem::perms::owner_write | std::filesystem::perms::group_read);
  std::filesystem::remove_all(dir);
}

// A writer killed mid-write (kill -9 between mkostemp and rename) leaves its temporary behind:
// the next write of the same file removes it once it is an hour old; a younger one (a writer
// perhaps still at work), another file's temporary and a lookalike name stay.
TEST(AtomicFile, AbandonedTemporariesGoWithTheNextWrite) {
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / ("colo-atomic-old-" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  const auto old = std::filesystem::file_time_type::clock::now() - std::chrono::hours(2);
  for (const char* n : {"f.tmp.AbC123", "g.tmp.AbC123", "f.tmp.AbC1234", "f.tmp.young1"}) std::ofstream(dir / n) << "half";
  for (const char* n : {"f.tmp.AbC123", "g.tmp.AbC123", "f.tmp.AbC1234"}) std::filesystem::last_write_time(dir / n, old);
  write_file_atomically((dir / "f").string(), "new", 0644);
  std::vector<std::string> names;
  for (const auto& e : std::filesystem::directory_iterator(dir)) names.push_back(e.path().filename().string());
  std::sort(names.begin(), names.end());
  EXPECT_EQ(names, (std::vector<std::string>{"f", "f.tmp.AbC1234", "f.tmp.young1", "g.tmp.AbC123"}));
  std::filesystem::remove_all(dir);
}

TEST(SiteSettingsPath, FlagThenEnvironmentThenEtc) {
  ::unsetenv("COLO_SLURM_SITE");
  EXPECT_EQ(site_settings_path(""), "/etc/colo/slurm.toml");
  ::setenv("COLO_SLURM_SITE", "/x.toml", 1);
  EXPECT_EQ(site_settings_path(""), "/x.toml");
  EXPECT_EQ(site_settings_path("/y.toml"), "/y.toml");
  ::unsetenv("COLO_SLURM_SITE");
}

}  // namespace
}  // namespace colo::slurm
