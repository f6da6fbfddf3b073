#pragma once
// Recognises an out-of-memory crash on the GPU from what the job printed. The exit status alone
// cannot tell an OOM from any other Python exception (both exit 1), so colod reads the tail of
// the attempt's stdout and stderr for the frameworks' messages.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace colo::daemon {

struct OomEvidence {
  std::string framework;  // "pytorch", "cublas", "cudnn", "tensorflow/jax"
  std::string line;       // the matching line, trimmed to 200 characters
};

// First matching line in `text`, or nullopt.
std::optional<OomEvidence> find_oom(std::string_view text);
// Scans at most the last `max_bytes` of the file written since `offset`.
std::optional<OomEvidence> find_oom_in_file(const std::string& path, std::int64_t offset,
                                            std::int64_t max_bytes = 256 * 1024);

}  // namespace colo::daemon
