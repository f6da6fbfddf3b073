// Replays every fuzz finding (fuzz/regressions/<target>/*) and every seed (fuzz/corpus/<target>/*)
// through the same entry functions the libFuzzer targets use (fuzz/<target>_fuzz.cpp, compiled
// here with COLO_FUZZ_NO_MAIN), so the normal GCC + ASan build checks them without Clang. An
// entry aborts on a broken contract (an exception other than a one-line colo::UserError, a 5xx
// from the daemon); ASan/UBSan report memory errors. scripts/fuzz.sh does the actual fuzzing.
#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "fuzz_common.h"

namespace fs = std::filesystem;

namespace {

std::vector<fs::path> files_under(const fs::path& dir) {
  std::vector<fs::path> out;
  if (!fs::is_directory(dir)) return out;
  for (const auto& e : fs::directory_iterator(dir))
    if (e.is_regular_file() && e.path().extension() != ".md") out.push_back(e.path());
  std::sort(out.begin(), out.end());
  return out;
}

std::string slurp(const fs::path& p) {
  std::ifstream f(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(f), std::istreambuf_iterator<char>()};
}

void replay_tree(const std::string& tree, std::size_t* count) {
  const fs::path root = fs::path(COLO_SOURCE_DIR) / "fuzz" / tree;
  if (!fs::is_directory(root)) return;
  for (const auto& dir : fs::directory_iterator(root)) {
    if (!dir.is_directory()) continue;
    const std::string target = dir.path().filename().string();
    const auto it = colo::fuzz::registry().find(target);
    ASSERT_NE(it, colo::fuzz::registry().end()) << "fuzz/" << tree << "/" << target << " names no fuzz target";
    for (const fs::path& f : files_under(dir.path())) {
      SCOPED_TRACE(f.string());
      const std::string bytes = slurp(f);
      EXPECT_EQ(it->second(reinterpret_cast<const std::uint8_t*>(bytes.data()), bytes.size()), 0);
      ++*count;
    }
  }
}

}  // namespace

TEST(FuzzRegressions, EveryTargetIsRegistered) {
  for (const char* t : {"torchsummary", "module_repr", "keras", "load_summary", "gpumemnet_row", "dataset",
                        "sim_csv", "job_file", "rad_file", "api_request", "probe_trace", "conv_workspace_table",
                        "policy_file", "daemon_config", "sim_model", "calibration_profile", "gpumemnet_model",
                        "activity_model"})
    EXPECT_TRUE(colo::fuzz::registry().count(t)) << t;
}

TEST(FuzzRegressions, ReproducersNoLongerCrash) {
  std::size_t n = 0;
  replay_tree("regressions", &n);
  EXPECT_GT(n, 0u) << "fuzz/regressions/ holds no reproducers";
}

TEST(FuzzRegressions, SeedCorporaAreHandled) {
  std::size_t n = 0;
  replay_tree("corpus", &n);
  EXPECT_GT(n, 10u);
}
