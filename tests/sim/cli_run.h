#pragma once
// Runs build/colo with a shell command line (stderr folded into stdout) for the CLI tests.
#include <sys/wait.h>

#include <array>
#include <cstdio>
#include <filesystem>
#include <string>

namespace colo::sim::test {

struct CliRun {
  int status = 0;
  std::string out;
};

// `args` is appended to COLO_BINARY_DIR/colo as shell words.
inline CliRun run_colo_args(const std::string& args) {
  const std::string cmd = std::string(COLO_BINARY_DIR) + "/colo " + args + " 2>&1";
  CliRun r;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return {-1, ""};
  std::array<char, 4096> buf{};
  size_t n = 0;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  r.status = WEXITSTATUS(pclose(p));
  return r;
}

inline bool have_colo_binary() { return std::filesystem::exists(std::string(COLO_BINARY_DIR) + "/colo"); }

}  // namespace colo::sim::test
