#include "daemon/client/job_request.h"

#include <algorithm>
#include <cctype>
#include <vector>

#include <fmt/format.h>

#include "common/unique_keys_json.h"
#include "core/error.h"
#include "core/limits.h"
#include "core/one_line.h"
#include "core/parse_number.h"

namespace colo::daemon {

using nlohmann::json;

namespace {

[[noreturn]] void bad(std::string_view field, std::string_view what) {
  throw UserError(fmt::format("field '{}': {}", field, what));
}

std::string get_string(const json& j, const char* field, size_t max_len = 4096) {
  const json& v = j.at(field);
  if (!v.is_string()) bad(field, "expected a string");
  std::string s = v.get<std::string>();
  if (s.size() > max_len) bad(field, fmt::format("longer than {} bytes", max_len));
  if (s.find('\0') != std::string::npos) bad(field, "contains a NUL character");
  return s;
}

// A string shown on one line (a name, a source, an explanation): no control characters.
std::string get_line(const json& j, const char* field, size_t max_len) {
  std::string s = get_string(j, field, max_len);
  if (const std::string c = control_char_in(s); !c.empty()) bad(field, fmt::format("contains a control character ({})", c));
  return s;
}

// "history" marks what colod measured itself: a client cannot claim it. A source is a short
// label (shown to anonymous dashboard visitors, a Prometheus label value), not free text.
void check_source(std::string_view field, std::string_view source) {
  if (source.empty()) return;  // not given
  const bool label = source.size() <= 64 && std::all_of(source.begin(), source.end(), [](char c) {
    return std::isalnum(static_cast<unsigned char>(c)) || std::string_view(":_.()+-").find(c) != std::string_view::npos;
  });
  if (!label) bad(field, "expected a short label (letters, digits and :_.()+-, at most 64), e.g. 'user' or 'allocsim'");
  if (source == "history") bad(field, "'history' is set by colod (measured runs), not by a client");
}

}  // namespace

bool json_nested_deeper_than(const json& root, std::size_t max_depth) {
  std::vector<std::pair<const json*, std::size_t>> pending{{&root, 1}};
  while (!pending.empty()) {
    const auto [v, depth] = pending.back();
    pending.pop_back();
    if (depth > max_depth) return true;
    if (v->is_structured())
      for (const json& child : *v) pending.emplace_back(&child, depth + 1);
  }
  return false;
}

bool is_reserved_env(std::string_view name) {
  return name == "CUDA_VISIBLE_DEVICES" || name.rfind("CUDA_MPS_", 0) == 0 || name.rfind("COLO_", 0) == 0;
}

void check_env_name(std::string_view name) {
  const bool ok = !name.empty() && !std::isdigit(static_cast<unsigned char>(name[0])) &&
                  std::all_of(name.begin(), name.end(), [](char c) {
                    return std::isalnum(static_cast<unsigned char>(c)) || c == '_';
                  });
  if (!ok) throw UserError(fmt::format("environment variable name '{}' is not [A-Za-z_][A-Za-z0-9_]*", name));
  if (is_reserved_env(name))
    throw UserError(fmt::format("environment variable '{}' is set by colo and cannot be overridden", name));
}

json to_json(const SubmitRequest& r) {
  json j;
  j["name"] = r.name;
  j["argv"] = r.argv;
  j["gpus"] = r.gpus;
  j["mem_mib"] = r.mem_mib ? json(*r.mem_mib) : json(nullptr);
  j["mem_source"] = r.mem_source;
  j["mem_explanation"] = r.mem_explanation;
  j["workdir"] = r.workdir;
  j["env"] = r.env;
  j["fingerprint_inputs"] = r.fingerprint_inputs;
  if (r.checkpoint) j["checkpoint"] = true;
  if (r.umask) j["umask"] = *r.umask;
  if (r.smact) {
    j["smact"] = *r.smact;
    j["smact_source"] = r.smact_source;
  }
  if (r.probe) {
    j["probe"] = r.probe->to_json();
    j["probe_estimator"] = r.probe_estimator;
  }
  return j;
}

SubmitRequest submit_request_from_json(const json& j) {
  if (!j.is_object()) throw UserError("request body: expected a JSON object");
  if (json_nested_deeper_than(j, kMaxJsonNesting))
    throw UserError(fmt::format("request body: JSON nested deeper than {} levels", kMaxJsonNesting));
  static const std::vector<std::string> known = {"name", "argv", "gpus", "mem_mib", "mem_source",
                                                 "mem_explanation", "workdir", "env", "fingerprint_inputs",
                                                 "probe", "probe_estimator", "checkpoint", "smact", "smact_source",
                                                 "umask"};
  for (const auto& [k, v] : j.items())
    if (std::find(known.begin(), known.end(), k) == known.end())
      throw UserError(fmt::format("unknown field '{}'", k));
  SubmitRequest r;
  if (!j.contains("argv")) bad("argv", "missing (the command to run)");
  const json& argv = j.at("argv");
  if (!argv.is_array() || argv.empty()) bad("argv", "expected a non-empty array of strings");
  if (argv.size() > 4096) bad("argv", "more than 4096 arguments");
  for (const json& a : argv) {
    if (!a.is_string()) bad("argv", "expected a non-empty array of strings");
    std::string s = a.get<std::string>();
    if (s.find('\0') != std::string::npos) bad("argv", "an argument contains a NUL character");
    r.argv.push_back(std::move(s));
  }
  if (r.argv[0].empty()) bad("argv", "the program name is empty");
  if (j.contains("name")) r.name = get_line(j, "name", 200);
  if (j.contains("gpus")) {
    const json& g = j.at("gpus");
    if (!g.is_number_integer() || g.get<std::int64_t>() < 1 || g.get<std::int64_t>() > 64)
      bad("gpus", "expected an integer in 1..64");
    r.gpus = g.get<int>();
  }
  if (j.contains("mem_mib") && !j.at("mem_mib").is_null()) {
    const json& m = j.at("mem_mib");
    if (!m.is_number_integer() || m.get<std::int64_t>() < 1 || m.get<std::int64_t>() > limits::kMaxGpuMiB)
      bad("mem_mib", fmt::format("expected an integer in 1..{} (MiB) or null", limits::kMaxGpuMiB));
    r.mem_mib = m.get<MiB>();
  }
  if (j.contains("mem_source")) {
    r.mem_source = get_line(j, "mem_source", 100);
    check_source("mem_source", r.mem_source);
  }
  if (j.contains("mem_explanation")) r.mem_explanation = get_line(j, "mem_explanation", 1000);
  if (j.contains("workdir")) {
    r.workdir = get_string(j, "workdir");
    if (!r.workdir.empty() && r.workdir[0] != '/') bad("workdir", "must be an absolute path");
  }
  if (j.contains("env")) {
    const json& e = j.at("env");
    if (!e.is_object()) bad("env", "expected an object of string values");
    if (e.size() > 1000) bad("env", "more than 1000 variables");
    for (const auto& [k, v] : e.items()) {
      if (!v.is_string()) bad("env", fmt::format("value of '{}' is not a string", k));
      check_env_name(k);
      std::string s = v.get<std::string>();
      if (s.find('\0') != std::string::npos) bad("env", fmt::format("value of '{}' contains a NUL character", k));
      r.env[k] = std::move(s);
    }
  }
  if (j.contains("fingerprint_inputs")) {
    if (!j.at("fingerprint_inputs").is_object()) bad("fingerprint_inputs", "expected an object");
    r.fingerprint_inputs = j.at("fingerprint_inputs");
  }
  if (j.contains("probe") && !j.at("probe").is_null()) r.probe = estimate::ProbeRequest::from_json(j.at("probe"), "field 'probe'");
  if (j.contains("probe_estimator")) {
    r.probe_estimator = get_line(j, "probe_estimator", 20);
    if (r.probe_estimator != "trace" && r.probe_estimator != "faketensor")
      bad("probe_estimator", "expected 'trace' or 'faketensor'");
    if (!r.probe) bad("probe_estimator", "given without 'probe'");
  }
  if (j.contains("checkpoint")) {
    if (!j.at("checkpoint").is_boolean()) bad("checkpoint", "expected true or false");
    r.checkpoint = j.at("checkpoint").get<bool>();
  }
  if (j.contains("umask")) {
    const json& m = j.at("umask");
    if (!m.is_number_integer() || m.get<std::int64_t>() < 0 || m.get<std::int64_t>() > 0777)
      bad("umask", "expected an integer in 0..511 (0..0777 octal)");
    r.umask = m.get<int>();
  }
  if (j.contains("smact") && !j.at("smact").is_null()) {
    const json& v = j.at("smact");
    if (!v.is_number() || !(v.get<double>() >= 0 && v.get<double>() <= 1)) bad("smact", "expected a number in [0, 1] or null");
    r.smact = v.get<double>();
    r.smact_source = "user";
  }
  if (j.contains("smact_source")) {
    if (!r.smact) bad("smact_source", "given without 'smact'");
    r.smact_source = get_line(j, "smact_source", 100);
    if (r.smact_source.empty()) bad("smact_source", "empty");
    check_source("smact_source", r.smact_source);
  }
  if (r.name.empty()) {
    // The default name (the program's file name) follows the rules a given name does: one line,
    // at most 200 bytes. Escaping shows control characters; the cut keeps whole UTF-8 characters.
    const std::string& p = r.argv[0];
    std::string n = one_line(p.substr(p.find_last_of('/') == std::string::npos ? 0 : p.find_last_of('/') + 1));
    if (n.size() > 200) {
      std::size_t cut = 200;
      while (cut > 0 && (static_cast<unsigned char>(n[cut]) & 0xC0) == 0x80) --cut;
      n.resize(cut);
    }
    r.name = n.empty() ? "job" : n;
  }
  return r;
}

nlohmann::json parse_request_body(std::string_view text) {
  if (const auto nul = text.find('\0'); nul != std::string_view::npos)
    throw UserError(fmt::format("request body: a NUL byte at offset {} (not JSON)", nul));
  UniqueKeysJson j = parse_json_unique_keys(text);
  if (!j.value.is_discarded() && j.duplicate)
    throw UserError(fmt::format("request body: duplicate key '{}'", shown_json_key(*j.duplicate)));
  return std::move(j.value);
}

MiB parse_memory(std::string_view text) {
  // The same sizes as --mem and the JSON field mem_mib accept: one GPU's worth at most.
  return parse_mib(text, "", 1, limits::kMaxGpuMiB);
}

std::string format_mib(MiB mib) {
  if (mib >= 1024) return fmt::format("{:.1f} GiB", static_cast<double>(mib) / 1024.0);
  return fmt::format("{} MiB", mib);
}

}  // namespace colo::daemon
