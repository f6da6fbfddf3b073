#include "common/resource_path.h"

#include <cstdlib>
#include <filesystem>
#include <vector>

namespace colo {

namespace fs = std::filesystem;

namespace {

// <prefix>/share/colo beside the running binary's <prefix>/bin: an installed (or unpacked) package
// uses its own files even when the source tree it was built from still exists.
fs::path exe_share_dir() {
  static const fs::path dir = [] {
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (ec || !exe.has_parent_path()) return fs::path();
    return exe.parent_path().parent_path() / "share" / "colo";
  }();
  return dir;
}

std::vector<fs::path> candidates(const char* env_var, std::string_view tree_rel, std::string_view rel) {
  std::vector<fs::path> out;
  if (env_var) {
    if (const char* d = std::getenv(env_var); d && *d) out.push_back(fs::path(d) / rel);
  }
  if (const fs::path share = exe_share_dir(); !share.empty()) out.push_back(share / tree_rel / rel);
  out.push_back(fs::path(COLO_SOURCE_DIR) / tree_rel / rel);
  out.push_back(fs::path(COLO_SHARE_DIR) / tree_rel / rel);
  return out;
}

}  // namespace

std::string resource_path(const char* env_var, std::string_view tree_rel, std::string_view rel) {
  const std::vector<fs::path> c = candidates(env_var, tree_rel, rel);
  for (const fs::path& p : c) {
    std::error_code ec;
    if (fs::exists(p, ec)) return p.lexically_normal().string();
  }
  // Nothing exists: name the source-tree place (what a clone has), not the env override.
  return (fs::path(COLO_SOURCE_DIR) / tree_rel / rel).lexically_normal().string();
}

std::string data_path(std::string_view rel) { return resource_path("COLO_DATA", "data", rel); }

std::string resource_search_text(const char* env_var, std::string_view tree_rel) {
  std::string s;
  if (env_var) s += std::string("$") + env_var + ", ";
  if (const fs::path share = exe_share_dir(); !share.empty()) s += (share / tree_rel).string() + ", ";
  s += (fs::path(COLO_SOURCE_DIR) / tree_rel).string() + ", " + (fs::path(COLO_SHARE_DIR) / tree_rel).string();
  return s;
}

}  // namespace colo
