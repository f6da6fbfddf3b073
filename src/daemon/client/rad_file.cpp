#include "daemon/client/rad_file.h"
#include "estimate/graph/summary_file.h"

#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <vector>

#include <fmt/format.h>

#include "core/error.h"
#include "core/limits.h"
#include "core/parse_number.h"
#include "estimate/input_file.h"

namespace colo::daemon {

namespace {

std::string trim(std::string s) {
  while (!s.empty() && (s.back() == '\r' || s.back() == ' ' || s.back() == '\t')) s.pop_back();
  size_t i = 0;
  while (i < s.size() && (s[i] == ' ' || s[i] == '\t')) ++i;
  return s.substr(i);
}

}  // namespace

RadJob parse_rad_file(const std::string& path) {
  estimate::check_input_size(path, limits::kMaxJobFileBytes, ".rad file");
  std::ifstream in(path);
  if (!in) throw UserError(fmt::format("{}: cannot open .rad file", path));
  std::vector<std::pair<int, std::string>> fields;  // (line number, text)
  std::string line;
  int lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    if (line.find('\0') != std::string::npos) throw UserError(fmt::format("{}:{}: binary data in .rad file", path, lineno));
    line = trim(line);
    if (line.empty() || line[0] == '#') continue;
    fields.emplace_back(lineno, line);
  }
  static const char* names[] = {"environment activation", "command", "model summary file", "dataset",
                                "batch size", "placement mode", "GPU count"};
  if (fields.size() < 7)
    throw UserError(fmt::format("{}:{}: missing field '{}' (a .rad file has 7 required lines)", path,
                                lineno + 1, names[fields.size()]));
  if (fields.size() > 11)
    throw UserError(fmt::format("{}:{}: unexpected extra line (a .rad file has at most 11 fields)", path,
                                fields[11].first));
  auto where = [&](size_t k, const char* what) { return fmt::format("{}:{}: {}", path, fields[k].first, what); };
  auto integer = [&](size_t k, const char* what, std::int64_t hi) {
    return static_cast<int>(parse_integer(fields[k].second, where(k, what), 1, hi));
  };
  auto mib = [&](size_t k, const char* what) -> std::optional<MiB> {
    if (k >= fields.size()) return std::nullopt;
    const double v = parse_real(fields[k].second, where(k, what), 0, static_cast<double>(limits::kMaxGpuMiB));
    if (v <= 0)
      throw UserError(fmt::format("{}: '{}' is not a positive number of MiB", where(k, what), fields[k].second));
    return static_cast<MiB>(std::ceil(v));  // in 1..kMaxGpuMiB: the range above makes the cast exact
  };
  RadJob r;
  r.path = path;
  r.activation = fields[0].second;
  r.command = fields[1].second;
  r.summary_file = fields[2].second;
  r.dataset = fields[3].second;
  r.batch = integer(4, "batch size", limits::kMaxBatch);
  r.mode = fields[5].second;
  if (r.mode != "exclusive" && r.mode != "shared")
    throw UserError(fmt::format("{}:{}: placement mode '{}' is not 'exclusive' or 'shared'", path, fields[5].first, r.mode));
  r.gpus = integer(6, "GPU count", limits::kMaxJobGpus);
  r.measured_mib = mib(7, "measured memory");
  r.horus_mib = mib(8, "Horus estimate");
  r.faketensor_mib = mib(9, "FakeTensor estimate");
  r.gpumemnet_mib = mib(10, "GPUMemNet estimate");

  namespace fs = std::filesystem;
  const fs::path dir = fs::path(path).parent_path();
  r.summary_path = (dir / r.summary_file).string();
  for (const fs::path& d : {dir.parent_path() / "summaries", dir}) {
    // a path (or . / ..): taken as written, beside the .rad
    if (r.summary_file.find('/') != std::string::npos || r.summary_file == "." || r.summary_file == "..") break;
    if (auto found = estimate::find_summary_file(d, r.summary_file)) {
      r.summary_path = found->string();
      break;
    }
  }
  return r;
}

}  // namespace colo::daemon
