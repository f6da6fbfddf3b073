// Where the probe's Python package is found: $COLO_PROBE_PATH or the installed resources.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <optional>
#include <string>

#include "core/error.h"
#include "estimate/trace/probe_runner.h"

namespace colo::estimate {
namespace {

namespace fs = std::filesystem;

// Restores $COLO_PROBE_PATH as it was when the test started.
class ProbePathEnv {
 public:
  ProbePathEnv() {
    if (const char* p = std::getenv("COLO_PROBE_PATH")) saved_ = p;
  }
  ~ProbePathEnv() {
    if (saved_)
      ::setenv("COLO_PROBE_PATH", saved_->c_str(), 1);
    else
      ::unsetenv("COLO_PROBE_PATH");
  }
  ProbePathEnv(const ProbePathEnv&) = delete;
  ProbePathEnv& operator=(const ProbePathEnv&) = delete;

 private:
  std::optional<std::string> saved_;
};

TEST(ProbePackageDir, APathNamedRelativeToTheCallerIsMadeAbsolute) {
  ProbePathEnv restore;
  ::unsetenv("COLO_PROBE_PATH");
  const std::string installed = probe_package_dir();
  // The probe runs in the job's working directory, where a relative path would name another place.
  const std::string relative = fs::relative(installed, fs::current_path()).string() + "/";
  ASSERT_FALSE(fs::path(relative).is_absolute());
  ::setenv("COLO_PROBE_PATH", relative.c_str(), 1);
  const std::string named = probe_package_dir();
  EXPECT_TRUE(fs::path(named).is_absolute()) << named;
  EXPECT_NE(named.back(), '/') << named;
  EXPECT_TRUE(fs::equivalent(named, installed)) << named << " vs " << installed;
}

TEST(ProbePackageDir, APathWithoutThePackageIsRefusedByName) {
  ProbePathEnv restore;
  ::setenv("COLO_PROBE_PATH", "/nonexistent/colo", 1);
  try {
    probe_package_dir();
    FAIL() << "accepted a path with no package";
  } catch (const UserError& e) {
    EXPECT_STREQ(e.what(), "$COLO_PROBE_PATH (/nonexistent/colo) holds no colo_probe package (colo_probe/__main__.py)");
  }
}

}  // namespace
}  // namespace colo::estimate
