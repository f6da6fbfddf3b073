// Reads a summary file and dispatches on its content to the right parser.
#include <filesystem>
#include <string_view>

#include "core/error.h"
#include "core/limits.h"
#include "estimate/input_file.h"
#include "estimate/graph/parsers.h"

namespace colo::estimate {

ModelGraph load_summary(const std::string& path, std::int64_t seq_len) {
  // 0 = the parser's default; anything else outside 1..kMaxSeqLen is a mistake, not a default.
  if (seq_len < 0 || seq_len > limits::kMaxSeqLen)
    throw UserError(path + ": sequence length " + std::to_string(seq_len) + " is out of range (expected 1.." +
                    std::to_string(limits::kMaxSeqLen) + ")");
  const std::string text = read_input_file(path, limits::kMaxSummaryBytes, "model summary");
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw UserError(path + ":1: empty model summary");
  ModelGraph g;
  try {
    if (text.find("Layer (type)") != std::string::npos && text.find("(None") != std::string::npos) {
      g = parse_keras(text, path);
    } else if (text.find("Layer (type)") != std::string::npos) {
      g = parse_torchsummary(text, path);
    } else {
      g = parse_module_repr(text, path, seq_len);
    }
  } catch (const UserError& e) {
    // ModelGraph::finalize's size checks do not know the file; the parsers' errors already name it.
    if (std::string_view(e.what()).rfind(path, 0) == 0) throw;
    throw UserError(path + ": " + e.what());
  }
  g.name = std::filesystem::path(path).stem().string();
  return g;
}

}  // namespace colo::estimate
