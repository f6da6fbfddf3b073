// Reads a summary file and dispatches on its content to the right parser.
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/error.h"
#include "estimate/parsers.h"

namespace colo::estimate {

ModelGraph load_summary(const std::string& path, std::int64_t seq_len) {
  std::ifstream f(path);
  if (!f) throw UserError(path + ": cannot open model summary");
  std::stringstream ss;
  ss << f.rdbuf();
  const std::string text = ss.str();
  if (text.find_first_not_of(" \t\r\n") == std::string::npos) throw UserError(path + ":1: empty model summary");
  ModelGraph g;
  if (text.find("Layer (type)") != std::string::npos && text.find("(None") != std::string::npos) {
    g = parse_keras(text, path);
  } else if (text.find("Layer (type)") != std::string::npos) {
    g = parse_torchsummary(text, path);
  } else {
    g = parse_module_repr(text, path, seq_len);
  }
  g.name = std::filesystem::path(path).stem().string();
  return g;
}

}  // namespace colo::estimate
