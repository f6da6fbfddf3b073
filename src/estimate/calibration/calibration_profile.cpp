#include "estimate/calibration/calibration_profile.h"
#include "common/resource_path.h"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "common/unique_keys_json.h"
#include "core/error.h"
#include "core/one_line.h"

namespace colo::estimate {

std::string CalibrationProfile::to_json() const {
  nlohmann::ordered_json j;
  j["gpu"] = gpu;
  j["name"] = name;
  j["gpu_total_mib"] = gpu_total_mib;
  j["context_mib"] = context_mib;
  j["cudnn_context_mib"] = cudnn_context_mib;
  j["safety_margin"] = safety_margin;
  j["cudnn_safety_margin"] = cudnn_safety_margin;
  j["cublas_workspace_mib"] = cublas_workspace_mib;
  j["conv_workspace_mib"] = conv_workspace_mib;
  j["conv_workspace_ratio"] = conv_workspace_ratio;
  j["strided_conv_workspace_ratio"] = strided_conv_workspace_ratio;
  j["trace_conv_workspace_mib"] = trace_conv_workspace_mib;
  j["trace_conv_workspace_ratio"] = trace_conv_workspace_ratio;
  j["trace_strided_conv_workspace_ratio"] = trace_strided_conv_workspace_ratio;
  j["trace_safety_margin"] = trace_safety_margin;
  j["trace_cudnn_safety_margin"] = trace_cudnn_safety_margin;
  j["trace_context_offset_mib"] = trace_context_offset_mib;
  j["trace_cudnn_context_offset_mib"] = trace_cudnn_context_offset_mib;
  j["trace_fitted_on"] = trace_fitted_on;
  if (!conv_workspace_table.empty()) j["conv_workspace_table"] = conv_workspace_table;
  if (trace_conv_workspace_neighbours > 0) j["trace_conv_workspace_neighbours"] = trace_conv_workspace_neighbours;
  j["fitted_on"] = fitted_on;
  j["fit_command"] = fit_command;
  return j.dump(2) + "\n";
}

namespace {

// A file name in a calibration directory (a profile, a workspace table): no path, no hidden file.
bool plain_file_name(const std::string& f) {
  return !f.empty() && f.size() <= 100 && f.front() != '.' && std::all_of(f.begin(), f.end(), [](char c) {
           return std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.';
         });
}

// The line of a top-level field (its nth `"key":`), for errors; 1 where it is not found.
std::size_t line_of(const std::string& text, const std::string& key, int nth = 1) {
  const std::string quoted = "\"" + key + "\"";
  for (std::size_t at = text.find(quoted); at != std::string::npos; at = text.find(quoted, at + 1)) {
    const std::size_t colon = text.find_first_not_of(" \t\r\n", at + quoted.size());
    if (colon == std::string::npos || text[colon] != ':' || --nth > 0) continue;
    return 1 + static_cast<std::size_t>(std::count(text.begin(), text.begin() + static_cast<std::ptrdiff_t>(at), '\n'));
  }
  return 1;
}

}  // namespace

CalibrationProfile CalibrationProfile::from_json(const std::string& text, const std::string& source) {
  UniqueKeysJson parsed = parse_json_unique_keys(text);
  if (parsed.value.is_discarded()) {
    try {
      const nlohmann::json again = nlohmann::json::parse(text);  // for the parser's own words on where and why
      (void)again;
    } catch (const nlohmann::json::parse_error& e) {
      throw UserError(source + ":1: not valid JSON (" + std::string(e.what()) + ")");
    } catch (const nlohmann::json::exception& e) {
      // out_of_range 406: a number past a double (4e30860) is no profile value either.
      throw UserError(source + ":1: not a usable profile (" + one_line(e.what()) + ")");
    }
    throw UserError(source + ":1: not valid JSON (a NUL byte)");
  }
  if (parsed.duplicate)  // a second one would silently win
    throw UserError(fmt::format("{}:{}: field '{}' given twice", source, line_of(text, *parsed.duplicate, 2),
                                shown_json_key(*parsed.duplicate)));
  const nlohmann::json& j = parsed.value;
  if (!j.is_object()) throw UserError(source + ":1: a calibration profile is a JSON object");
  CalibrationProfile p;
  // The fields read below; any other is a misspelling, which would silently leave the constant it
  // meant at its default and change every estimate (checked once all are read).
  std::vector<std::string> known;
  auto has = [&](const std::string& key) {
    known.push_back(key);
    return j.contains(key);
  };
  // Every field has a range: the estimators cast MiB and byte counts to integers, so a huge value
  // would wrap around and change the answer instead of failing.
  auto num = [&](const char* key, double& out, bool required, double max) {
    if (!has(key)) {
      if (required) throw UserError(source + ": missing field '" + std::string(key) + "'");
      return;
    }
    if (!j[key].is_number()) throw UserError(fmt::format("{}:{}: field '{}' is not a number", source, line_of(text, key), key));
    out = j[key].get<double>();
    if (!(out >= 0 && out <= max))
      throw UserError(fmt::format("{}:{}: field '{}' must be in [0, {}], got {}", source, line_of(text, key), key, max, out));
  };
  constexpr double kMaxMiB = 1 << 20;  // 1 TiB: past any GPU's memory
  constexpr double kMaxMargin = 10;    // +1000 %
  constexpr double kMaxRatio = 1000;   // workspace per MiB of activation
  constexpr int kMaxNeighbours = 16;   // replays per estimate
  auto str = [&](const char* key, std::string& out) {
    if (!has(key)) return;
    if (!j[key].is_string()) throw UserError(fmt::format("{}:{}: field '{}' is not a string", source, line_of(text, key), key));
    out = j[key].get<std::string>();
  };
  str("gpu", p.gpu);
  str("name", p.name);
  str("fitted_on", p.fitted_on);
  str("fit_command", p.fit_command);
  double total = 0;
  num("gpu_total_mib", total, true, kMaxMiB);
  if (total < 1 || total != std::floor(total))
    throw UserError(fmt::format("{}:{}: field 'gpu_total_mib' must be a whole number of MiB ≥ 1, got {}", source,
                                line_of(text, "gpu_total_mib"), total));
  p.gpu_total_mib = static_cast<MiB>(total);
  num("context_mib", p.context_mib, true, kMaxMiB);
  if (p.context_mib >= total)
    throw UserError(fmt::format("{}:{}: field 'context_mib' ({} MiB) leaves nothing of the GPU's {} MiB (gpu_total_mib)",
                                source, line_of(text, "context_mib"), p.context_mib, total));
  num("cublas_workspace_mib", p.cublas_workspace_mib, false, kMaxMiB);
  num("cudnn_context_mib", p.cudnn_context_mib, false, kMaxMiB);
  num("safety_margin", p.safety_margin, false, kMaxMargin);
  num("cudnn_safety_margin", p.cudnn_safety_margin, false, kMaxMargin);
  num("conv_workspace_mib", p.conv_workspace_mib, false, kMaxMiB);
  num("conv_workspace_ratio", p.conv_workspace_ratio, false, kMaxRatio);
  p.strided_conv_workspace_ratio = p.conv_workspace_ratio;
  num("strided_conv_workspace_ratio", p.strided_conv_workspace_ratio, false, kMaxRatio);
  num("trace_conv_workspace_mib", p.trace_conv_workspace_mib, false, kMaxMiB);
  num("trace_conv_workspace_ratio", p.trace_conv_workspace_ratio, false, kMaxRatio);
  p.trace_strided_conv_workspace_ratio = p.trace_conv_workspace_ratio;
  num("trace_strided_conv_workspace_ratio", p.trace_strided_conv_workspace_ratio, false, kMaxRatio);
  num("trace_safety_margin", p.trace_safety_margin, false, kMaxMargin);
  num("trace_cudnn_safety_margin", p.trace_cudnn_safety_margin, false, kMaxMargin);
  // Offsets may be negative, but never take the context below zero.
  auto offset = [&](const char* key, double& out, double context) {
    if (!has(key)) return;
    if (!j[key].is_number()) throw UserError(fmt::format("{}:{}: field '{}' is not a number", source, line_of(text, key), key));
    out = j[key].get<double>();
    if (!std::isfinite(out) || out < -context || out > 1e6)
      throw UserError(fmt::format("{}:{}: field '{}' is out of range", source, line_of(text, key), key));
  };
  offset("trace_context_offset_mib", p.trace_context_offset_mib, p.context_mib);
  offset("trace_cudnn_context_offset_mib", p.trace_cudnn_context_offset_mib, p.context_mib + p.cudnn_context_mib);
  str("trace_fitted_on", p.trace_fitted_on);
  if (has("conv_workspace_table")) {
    if (!j["conv_workspace_table"].is_string())
      throw UserError(fmt::format("{}:{}: field 'conv_workspace_table' is not a string", source,
                                  line_of(text, "conv_workspace_table")));
    p.conv_workspace_table = j["conv_workspace_table"].get<std::string>();
    const auto& f = p.conv_workspace_table;
    if (!plain_file_name(f))
      throw UserError(fmt::format("{}:{}: field 'conv_workspace_table' must be a file name beside the profile "
                                  "(letters, digits, '-', '_', '.'; not starting with '.'), got '{}'",
                                  source, line_of(text, "conv_workspace_table"), one_line(f)));
  }
  if (has("trace_conv_workspace_neighbours")) {
    const auto& v = j["trace_conv_workspace_neighbours"];
    if (!v.is_number_integer() || v.get<std::int64_t>() < 0 || v.get<std::int64_t>() > kMaxNeighbours)
      throw UserError(fmt::format("{}:{}: field 'trace_conv_workspace_neighbours' must be a whole number in [0, {}]",
                                  source, line_of(text, "trace_conv_workspace_neighbours"), kMaxNeighbours));
    p.trace_conv_workspace_neighbours = static_cast<int>(v.get<std::int64_t>());
    if (p.trace_conv_workspace_neighbours > 0 && p.conv_workspace_table.empty())
      throw UserError(fmt::format("{}:{}: field 'trace_conv_workspace_neighbours' needs a 'conv_workspace_table' "
                                  "(the measured shapes the neighbours are taken from)",
                                  source, line_of(text, "trace_conv_workspace_neighbours")));
  }
  for (const auto& [key, value] : j.items())
    if (std::find(known.begin(), known.end(), key) == known.end())
      throw UserError(fmt::format("{}:{}: unknown field '{}'", source, line_of(text, key), one_line(key)));
  p.source = source;
  return p;
}

std::string profile_path(const std::string& gpu) {
  namespace fs = std::filesystem;
  std::vector<fs::path> dirs;
  if (const char* d = std::getenv("COLO_CALIBRATION_DIR")) dirs.emplace_back(d);
  dirs.emplace_back("calibration");
  dirs.emplace_back(resource_path(nullptr, "calibration", ""));
  for (const auto& d : dirs) {
    fs::path p = d / (gpu + ".json");
    std::error_code ec;
    if (fs::is_regular_file(p, ec)) return p.string();
  }
  return {};
}

void check_profile_name(const std::string& gpu) {
  if (!plain_file_name(gpu))
    throw UserError(fmt::format("bad GPU profile name '{}' (letters, digits, '-', '_', '.'; not starting with '.')",
                                one_line(gpu)));
}

CalibrationProfile load_profile(const std::string& gpu) {
  check_profile_name(gpu);
  const std::string path = profile_path(gpu);
  if (path.empty())
    throw UserError("no calibration profile for GPU '" + gpu + "' (looked for " + gpu +
                    ".json in $COLO_CALIBRATION_DIR, ./calibration, " + resource_search_text(nullptr, "calibration") + ")");
  std::ifstream f(path);
  std::stringstream ss;
  ss << f.rdbuf();
  return CalibrationProfile::from_json(ss.str(), path);
}

}  // namespace colo::estimate
